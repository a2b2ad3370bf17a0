"""train-before-test: every figure and table through the CLI on synthetic results with known effects, from both
sources, and Figure 2 on the real published release."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from tests.conftest import stamp_release
from testtask.pipeline import NothingBuilt, compose, run

PAPER = "train-before-test"
CORPORA = ["arxiv_2025", "wiki_2025", "stackexchange_2025"]
CATEGORIES = {
    "LU": {"name": "Language understanding", "benchmarks": ["mnli", "qnli"]},
    "QA": {"name": "Question answering", "benchmarks": ["boolq", "arc_easy", "nq_open"]},
    "Math": {"name": "Math", "benchmarks": ["gsm8k"]},
}
MODELS = [
    "Qwen/Qwen1.5-0.5B",
    "Qwen/Qwen1.5-0.5B-Chat",
    "Qwen/Qwen1.5-7B",
    "Qwen/Qwen1.5-14B",
    "EleutherAI/pythia-70m-deduped",
    "EleutherAI/pythia-12b",
    "meta-llama/Meta-Llama-3-8B",
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "google/gemma-7b",
    "google/gemma-7b-it",
    "01-ai/Yi-6B",
    "01-ai/Yi-6B-Chat",
]


def synthetic_results(benchmarks: list[str], seed: int = 0) -> dict:
    """Score = 0.5 + 0.1 * ability + noise, ten times noisier under direct evaluation; bits per byte fall with
    ability. Gemma has no perplexity entries and perplexity standard errors are "N/A", as in the release."""
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.5, 1.5, len(MODELS))[rng.permutation(len(MODELS))]
    out: dict[str, dict] = {}
    for field, noise in (("direct_eval", 0.1), ("train_before_test", 0.01)):
        scores, errors = {}, {}
        for bench in benchmarks:
            values = 0.5 + 0.1 * ability + noise * rng.normal(size=len(MODELS))
            scores[bench] = dict(zip(MODELS, values.tolist(), strict=True))
            errors[bench] = dict.fromkeys(MODELS, 0.001)
        for corpus in CORPORA:
            bpb = 0.8 - 0.1 * ability + 0.01 * rng.normal(size=len(MODELS))
            scores[corpus] = {m: v for m, v in zip(MODELS, bpb.tolist(), strict=True) if "gemma" not in m}
            errors[corpus] = dict.fromkeys(MODELS, "N/A")
        out[field], out[f"{field}_stderr"] = scores, errors
    return out


def _config(tmp_path: Path, *extra: str):
    cfg = compose(
        [f"paper={PAPER}", f"data.dest={tmp_path / 'published'}", f"figures_dir={tmp_path / 'figs'}", *extra]
    )
    cfg.train_before_test.categories = OmegaConf.create(CATEGORIES)  # a small layout keeps drawing fast
    return cfg


def _folder(tmp_path: Path, folder: str = "published") -> Path:
    """The source folder `folder` (paths.source_folder) of the outputs: the preset's, or the variant folder of
    settings changed in Python (`_config`'s small layout)."""
    (found,) = [
        *(tmp_path / "figs").glob(f"{PAPER}/{folder}"),
        *(tmp_path / "figs").glob(f"variants/*/{PAPER}/{folder}"),
    ]
    return found


def _json(tmp_path: Path, name: str, folder: str = "published") -> dict:
    """A sidecar of the source folder `folder`."""
    return json.loads((_folder(tmp_path, folder) / f"{name}.json").read_text())


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    benchmarks = [b for spec in CATEGORIES.values() for b in spec["benchmarks"]]
    path = tmp_path / "published" / PAPER / "all_results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(synthetic_results(benchmarks)))
    stamp_release(path.parent)
    return tmp_path


FAST_FIGURES = [
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    12,
]  # the annotated 24x24 details (9, 10, 14, 15) and 11 only in the slow test


def test_main_figures_and_tables_on_synthetic_results(synthetic: Path):
    cfg = _config(synthetic)
    for number in FAST_FIGURES:
        assert run(OmegaConf.merge(cfg, {"action": "figure", "figure": number})), number
    built = run(OmegaConf.merge(cfg, {"action": "tables"}))
    assert sorted(b["table"] for b in built) == [1, 3, 4]
    table3 = _json(synthetic, "table-3")  # the Gemma models, without bits per byte (no Pythia-410M here)
    assert table3["models_without_bits_per_byte"] == ["google/gemma-7b", "google/gemma-7b-it"]
    assert table3["reference_model"] is None and len(table3["rows"]) == 4

    fig2 = _json(synthetic, "figure-2")
    # The corpora never enter the downstream analyses, even though they sit in the same file.
    assert fig2["benchmarks"] == ["mnli", "qnli", "boolq", "arc_easy", "nq_open", "gsm8k"]
    assert fig2["pairs_total"] == 15 and len(fig2["matrices"]["direct"]) == 6
    # Less noise after fine-tuning -> rankings agree more (the known effect of the simulation).
    assert fig2["mean_kendall_train_before_test"] > fig2["mean_kendall_direct"]
    assert fig2["mean_kendall_train_before_test"] > 0.9
    assert fig2["pairs_improved"] >= 13

    fig3 = _json(synthetic, "figure-3")
    assert fig3["intra_category"]["direct"]["Math"] is None  # one benchmark: no pair within
    assert (_folder(synthetic) / "figure-3.csv").is_file()

    fig4 = _json(synthetic, "figure-4")
    tbt = fig4["panels"]["train_before_test"]
    assert tbt["n_models_range"] == [10, 10]  # the two Gemma models have no perplexity
    assert tbt["mean_tau_with_downstream"] > 0.8  # lower bpb = better, oriented before tau
    assert tbt["mean_tau_between_corpora"] > 0.8

    fig5 = _json(synthetic, "figure-5")
    assert len(fig5["panels"]["base"]["models"]) == 7  # Gemma excluded; -Chat/-Instruct are instruction-tuned
    assert len(fig5["panels"]["instruction_tuned"]["models"]) == 3

    fig6, fig8 = _json(synthetic, "figure-6"), _json(synthetic, "figure-8")
    assert fig6["n_models"] == 12 and fig8["n_models"] == 4
    assert fig6["pc1_share"]["train_before_test"] > fig6["pc1_share"]["direct"]
    assert fig6["pc1_share"]["train_before_test"] > 0.95

    fig7 = _json(synthetic, "figure-7")
    assert fig7["panels"]["train_before_test"]["n_models"] == 12  # all synthetic ids are in Table 4

    fig12 = _json(synthetic, "figure-12")
    assert fig12["ties"]["rule"] == "pairwise" and fig12["ties"]["z"] == pytest.approx(1.96, abs=1e-3)
    table4 = _json(synthetic, "table-4")
    assert {"model", "flops_1e18", "pc1_direct", "pc1_train_before_test"} <= set(table4["rows"][0])


@pytest.mark.slow
def test_every_figure_builds_on_synthetic_results(synthetic: Path):
    built = run(OmegaConf.merge(_config(synthetic), {"action": "figures"}))
    assert sorted(b["figure"] for b in built) == list(range(2, 16))
    detail = _json(synthetic, "figure-10")
    assert detail["regime"] == "train_before_test" and len(detail["matrix"]) == 6
    scores = _json(synthetic, "figure-11")["scores"]
    assert len(scores["direct"]) == len(MODELS)


def test_source_results_reads_our_runs_layout(tmp_path: Path):
    benchmarks = [b for spec in CATEGORIES.values() for b in spec["benchmarks"]]
    path = tmp_path / "results" / PAPER / "run1" / "all_results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(synthetic_results(benchmarks, seed=1)))
    cfg = _config(tmp_path, "source=results", f"results_dir={tmp_path / 'results'}", "results_run=run1")
    assert run(OmegaConf.merge(cfg, {"action": "figure", "figure": 6}))
    assert _json(tmp_path, "figure-6", "results-run1")["source"] == "results"


def test_absent_results_skip_the_figure(tmp_path: Path):
    cfg = _config(tmp_path)
    with pytest.raises(NothingBuilt, match="figure 2 of train-before-test"):
        run(OmegaConf.merge(cfg, {"action": "figure", "figure": 2}))


def test_figure_2_on_the_published_release(tmp_path: Path, real_mirror: Path):
    dest = tmp_path / "published" / PAPER
    dest.mkdir(parents=True)
    shutil.copy(real_mirror / "train_before_test" / "all_results.json", dest / "all_results.json")
    stamp_release(dest)
    cfg = compose(
        [f"paper={PAPER}", f"data.dest={tmp_path / 'published'}", f"figures_dir={tmp_path / 'figs'}"]
    )
    assert run(OmegaConf.merge(cfg, {"action": "figure", "figure": 2}))
    numbers = _json(tmp_path, "figure-2")
    for key in (
        "mean_kendall_direct",
        "mean_kendall_train_before_test",
        "pairs_improved",
        "pairs_total",
        "matrices",
    ):
        assert key in numbers
    assert len(numbers["benchmarks"]) == 24 and not set(numbers["benchmarks"]) & set(CORPORA)
    assert numbers["models"]["direct"]["n_models_all"] == 61
    assert numbers["pairs_total"] == 276
    assert numbers["pairs_improved"] == 274  # the paper's count, reproduced exactly
    assert 0.45 < numbers["mean_kendall_direct"] < 0.6
    assert 0.7 < numbers["mean_kendall_train_before_test"] < 0.8
