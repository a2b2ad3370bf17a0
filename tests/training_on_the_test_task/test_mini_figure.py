"""`figure-mini`: the before/after panel of the CPU mini-replication, from lm-eval JSONs in the published layout."""

from __future__ import annotations

import json

import pytest

from testtask.pipeline import NothingBuilt, build, compose, output_key

BEFORE = {"arc_challenge_mc": 0.26, "hellaswag": 0.31, "mmlu_mc": 0.24}
AFTER = {"arc_challenge_mc": 0.41, "hellaswag": 0.30, "mmlu_mc": 0.33}


def _write(path, benchmark, value, metric):
    entry = {f"{metric},none": value, f"{metric}_stderr,none": 0.02, "alias": benchmark}
    if benchmark.endswith("_mc"):
        entry |= {"brier_score,none": 1 - value, "brier_score_stderr,none": 0.01}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"results": {benchmark: entry}, "versions": {benchmark: 1}, "n-shot": {benchmark: 0}})
    )


def test_output_keys():
    assert output_key("3") == 3 and output_key(3) == 3 and output_key("mini") == "mini"


def test_before_after_panel(tmp_path):
    root = tmp_path / "results" / "training-on-the-test-task" / "cpu-mini" / "evaluations"
    for benchmark in BEFORE:
        metric = "acc_norm" if benchmark == "hellaswag" else "acc"
        _write(root / "base" / f"smollm2-135m-{benchmark}.json", benchmark, BEFORE[benchmark], metric)
        _write(root / "e1" / "mcaux" / f"smollm2-135m-{benchmark}.json", benchmark, AFTER[benchmark], metric)
    cfg = compose(
        [
            "paper=training-on-the-test-task",
            "source=results",
            f"results_dir={tmp_path / 'results'}",
            f"figures_dir={tmp_path / 'figures'}",
        ]
    )
    built = build(cfg, "figure", ["mini"])
    assert [b["figure"] for b in built] == ["mini"]
    numbers = json.loads(
        (
            tmp_path / "figures" / "training-on-the-test-task" / "results-cpu-mini" / "figure-mini.json"
        ).read_text()
    )
    scores = {p["benchmark"]: p for p in numbers["panels"] if p["kind"] == "score"}
    assert set(scores) == set(BEFORE)
    for benchmark in BEFORE:
        assert scores[benchmark]["difference"] == pytest.approx(AFTER[benchmark] - BEFORE[benchmark])
    briers = {p["benchmark"] for p in numbers["panels"] if p["kind"] == "brier"}
    assert briers == {"arc_challenge_mc", "mmlu_mc"}
    assert (
        tmp_path / "figures" / "training-on-the-test-task" / "results-cpu-mini" / "figure-mini.png"
    ).stat().st_size > 10_000
    # The paper's own figures and tables need registry models: with only the mini run they are skipped; building
    # none of the tables is an error (exit 1), not a silent success.
    assert [b["figure"] for b in build(cfg, "figure", None)] == ["mini"]
    with pytest.raises(NothingBuilt, match="nothing was built"):
        build(cfg, "table", None)


def test_mini_panel_is_an_error_without_fine_tuned_runs(tmp_path):
    root = tmp_path / "results" / "training-on-the-test-task" / "cpu-mini" / "evaluations"
    _write(root / "base" / "smollm2-135m-mmlu_mc.json", "mmlu_mc", 0.25, "acc")
    cfg = compose(
        ["paper=training-on-the-test-task", "source=results", f"results_dir={tmp_path / 'results'}"]
    )
    with pytest.raises(NothingBuilt, match="no e1/mcaux results"):
        build(cfg, "figure", ["mini"])


def test_mmlu_subjects_are_pooled(tmp_path):
    root = tmp_path / "results" / "training-on-the-test-task" / "cpu-mini" / "evaluations"
    for stage, values in (("base", (0.2, 0.3)), ("e1/mcaux", (0.4, 0.6))):
        for subject, value in zip(("marketing", "world_religions"), values, strict=True):
            name = f"mmlu_{subject}_mc"
            _write(root / stage / f"smollm2-135m-{name}.json", name, value, "acc")
    cfg = compose(
        [
            "paper=training-on-the-test-task",
            "source=results",
            f"results_dir={tmp_path / 'results'}",
            f"figures_dir={tmp_path / 'figures'}",
        ]
    )
    build(cfg, "figure", ["mini"])
    numbers = json.loads(
        (
            tmp_path / "figures" / "training-on-the-test-task" / "results-cpu-mini" / "figure-mini.json"
        ).read_text()
    )
    (mmlu,) = [p for p in numbers["panels"] if p["benchmark"] == "mmlu_mc" and p["kind"] == "score"]
    assert mmlu["before"]["value"] == pytest.approx(0.25) and mmlu["after"]["value"] == pytest.approx(0.5)
    assert mmlu["before"]["subjects"] == ["mmlu_marketing_mc", "mmlu_world_religions_mc"]


def test_figure_mini_from_the_committed_cpu_mini_results(tmp_path):
    """`make figure-mini SOURCE=results PAPER=training-on-the-test-task` on a fresh clone."""
    from testtask.paths import repo_root

    root = repo_root() / "results" / "training-on-the-test-task" / "cpu-mini" / "evaluations"
    # base and e1: 12 benchmarks each; the checkpoint family adds 4 steps × 6 benchmarks under intermediate/
    found = [p.relative_to(root).parts[0] for p in root.rglob("*.json")]
    assert (found.count("base"), found.count("e1"), found.count("intermediate")) == (12, 12, 24), (
        f"the committed mini-replication results are missing under {root}"
    )
    cfg = compose(
        [
            "paper=training-on-the-test-task",
            "source=results",
            f"results_dir={repo_root() / 'results'}",
            "results_run=cpu-mini",
            f"figures_dir={tmp_path / 'figures'}",
        ]
    )
    build(cfg, "figure", ["mini"])
    numbers = json.loads(
        (
            tmp_path / "figures" / "training-on-the-test-task" / "results-cpu-mini" / "figure-mini.json"
        ).read_text()
    )
    scores = {p["benchmark"] for p in numbers["panels"] if p["kind"] == "score"}
    assert scores == {
        "arc_challenge",
        "arc_challenge_mc",
        "hellaswag",
        "hellaswag_mc",
        "mmlu_cloze",
        "mmlu_mc",
    }
    assert all(len(p["before"].get("subjects", [None] * 4)) == 4 for p in numbers["panels"])
