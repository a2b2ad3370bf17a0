"""train-before-test: every figure and table through the CLI on synthetic results with known effects, from both
sources, and Figure 2 on the real published release."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.conftest import stamp_release, write_json
from tests.train_before_test.conftest import (
    CORPORA,
    MODELS,
    PAPER,
    SMALL_BENCHMARKS,
    output_folder,
    sidecar,
    small_config,
    synthetic_results,
    write_release,
)
from testtask.pipeline import NothingBuilt, compose, run


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    return write_release(tmp_path, synthetic_results(SMALL_BENCHMARKS))


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


def test_a_category_whose_benchmarks_the_results_lack_is_recorded_as_drawn_without(synthetic: Path):
    """A configured benchmark the results do not score: every sidecar lists it, and a figure drawn without it
    says so in its notes (which the report quotes where a claim reads the missing value)."""
    cfg = small_config(synthetic)
    cfg.train_before_test.categories["Code"] = {"name": "Code", "benchmarks": ["humaneval"]}
    assert run(OmegaConf.merge(cfg, {"action": "figure", "figure": 3}))
    fig3 = sidecar(synthetic, "figure-3")
    assert fig3["missing_benchmarks"] == ["humaneval"]
    assert fig3["drawn_without"] == ["not in the data, so not drawn: humaneval"]
    assert fig3["intra_category"]["train_before_test"]["Code"] is None


def test_main_figures_and_tables_on_synthetic_results(synthetic: Path):
    cfg = small_config(synthetic)
    for number in FAST_FIGURES:
        assert run(OmegaConf.merge(cfg, {"action": "figure", "figure": number})), number
    built = run(OmegaConf.merge(cfg, {"action": "tables"}))
    assert sorted(b["table"] for b in built) == [1, 3, 4]
    table3 = sidecar(synthetic, "table-3")  # the Gemma models, without bits per byte (no Pythia-410M here)
    assert table3["models_without_bits_per_byte"] == ["google/gemma-7b", "google/gemma-7b-it"]
    assert table3["reference_model"] is None and len(table3["rows"]) == 4

    fig2 = sidecar(synthetic, "figure-2")
    # The corpora never enter the downstream analyses, even though they sit in the same file.
    assert fig2["benchmarks"] == ["mnli", "qnli", "boolq", "arc_easy", "nq_open", "gsm8k"]
    assert fig2["pairs_total"] == 15 and len(fig2["matrices"]["direct"]) == 6
    # Less noise after fine-tuning -> rankings agree more (the known effect of the simulation).
    assert fig2["mean_kendall_train_before_test"] > fig2["mean_kendall_direct"]
    assert fig2["mean_kendall_train_before_test"] > 0.9
    assert fig2["pairs_improved"] >= 13

    fig3 = sidecar(synthetic, "figure-3")
    assert fig3["intra_category"]["direct"]["Math"] is None  # one benchmark: no pair within
    assert fig3["missing_benchmarks"] == [] and "drawn_without" not in fig3
    assert (output_folder(synthetic) / "figure-3.csv").is_file()

    fig4 = sidecar(synthetic, "figure-4")
    tbt = fig4["panels"]["train_before_test"]
    assert tbt["n_models_range"] == [10, 10]  # the two Gemma models have no perplexity
    assert tbt["mean_tau_with_downstream"] > 0.8  # lower bpb = better, oriented before tau
    assert tbt["mean_tau_between_corpora"] > 0.8

    fig5 = sidecar(synthetic, "figure-5")
    assert len(fig5["panels"]["base"]["models"]) == 7  # Gemma excluded; -Chat/-Instruct are instruction-tuned
    assert len(fig5["panels"]["instruction_tuned"]["models"]) == 3

    fig6, fig8 = sidecar(synthetic, "figure-6"), sidecar(synthetic, "figure-8")
    assert fig6["n_models"] == 12 and fig8["n_models"] == 4
    assert fig6["pc1_share"]["train_before_test"] > fig6["pc1_share"]["direct"]
    assert fig6["pc1_share"]["train_before_test"] > 0.95

    fig7 = sidecar(synthetic, "figure-7")
    assert fig7["panels"]["train_before_test"]["n_models"] == 12  # all synthetic ids are in Table 4

    fig12 = sidecar(synthetic, "figure-12")
    assert fig12["ties"]["rule"] == "pairwise" and fig12["ties"]["z"] == pytest.approx(1.96, abs=1e-3)
    table4 = sidecar(synthetic, "table-4")
    assert {"model", "flops_1e18", "pc1_direct", "pc1_train_before_test"} <= set(table4["rows"][0])


@pytest.mark.slow
def test_every_figure_builds_on_synthetic_results(synthetic: Path):
    built = run(OmegaConf.merge(small_config(synthetic), {"action": "figures"}))
    assert sorted(b["figure"] for b in built) == list(range(2, 16))
    detail = sidecar(synthetic, "figure-10")
    assert detail["regime"] == "train_before_test" and len(detail["matrix"]) == 6
    scores = sidecar(synthetic, "figure-11")["scores"]
    assert len(scores["direct"]) == len(MODELS)


def test_source_results_reads_our_runs_layout(tmp_path: Path):
    write_json(
        tmp_path / "results" / PAPER / "run1" / "all_results.json",
        synthetic_results(SMALL_BENCHMARKS, seed=1),
    )
    cfg = small_config(tmp_path, "source=results", f"results_dir={tmp_path / 'results'}", "results_run=run1")
    assert run(OmegaConf.merge(cfg, {"action": "figure", "figure": 6}))
    assert sidecar(tmp_path, "figure-6", "results-run1")["source"] == "results"


def test_absent_results_skip_the_figure(tmp_path: Path):
    cfg = small_config(tmp_path)
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
    numbers = sidecar(tmp_path, "figure-2")
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
