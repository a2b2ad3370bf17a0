"""End to end through the CLI: data from a mirror, figures with JSON sidecars, missing inputs skipped."""

from __future__ import annotations

import json

import pytest

from tests.conftest import write_accuracies
from testtask.cli import UsageError, compose, run

FAST = ["sampler.draws=300", "sampler.tune=300", "sampler.chains=2", "sampler.progressbar=false", "seed=5"]


def _config(tmp_path, *extra):
    return compose(
        [
            f"data.dest={tmp_path / 'published'}",
            f"figures_dir={tmp_path / 'figures'}",
            f"cache_dir={tmp_path / 'cache'}",
            f"results_dir={tmp_path / 'results'}",
            "results_run=null",
            "paper=pretrain-on-test",
            *FAST,
            *extra,
        ]
    )


def test_mirror_with_only_zero_shot_builds_what_it_can(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    write_accuracies(
        mirror / "pretrain_on_test",
        "accuracies_zero_shot",
        m=100,
        n=100,
        lm_types=["mistral-qlora-zero-shot"],
        datasets=4,
        subsamples=5,
    )
    monkeypatch.setenv("TESTTASK_DATA_MIRROR", str(mirror))
    report = run(_config(tmp_path, "action=data"))
    assert report["pretrain-on-test"]["files"] == 4
    assert run(_config(tmp_path, "action=figure", "figure=3")) == []  # few-shot absent: skipped, not an error
    assert run(_config(tmp_path, "action=table", "table=1")) == []
    built = run(_config(tmp_path, "action=figure", "figure=6"))
    assert [b["figure"] for b in built] == [6]
    numbers = json.loads((tmp_path / "figures" / "pretrain-on-test" / "figure-6.json").read_text())
    assert {p["variant"] for p in numbers["panels"]} == {"padding"}
    assert numbers["panels"][0]["lm_types"] == ["mistral-qlora-zero-shot"]
    assert any("packing" in note for note in numbers["missing"])


def test_figure_3_sidecar_from_our_own_results(tmp_path):
    """SOURCE=results reads runs in the published layout; the sidecar holds what the issue names."""
    results = tmp_path / "results" / "pretrain-on-test"
    for n in (50, 100):
        write_accuracies(
            results,
            "accuracies_from_paper",
            m=50,
            n=n,
            lm_types=["bert", "gpt2"],
            datasets=4,
            subsamples=6,
            seed=n,
        )
    run(_config(tmp_path, "action=figure", "figure=3", "source=results"))
    out = tmp_path / "figures" / "pretrain-on-test"
    assert (out / "figure-3.png").stat().st_size > 10_000 and (out / "figure-3.pdf").is_file()
    numbers = json.loads((out / "figure-3.json").read_text())
    assert numbers["source"] == "results" and numbers["total_seconds"] > 0
    assert {(p["m"], p["n"], p["effect"]) for p in numbers["panels"]} == {
        (50, 50, "boost"),
        (50, 50, "bias"),
        (50, 100, "boost"),
        (50, 100, "bias"),
    }
    for panel in numbers["panels"]:
        assert panel["lm_types"] == ["bert", "gpt2"]
        assert set(panel["average_difference"]) == {"mean", "hdi_89"}
        assert {"mean", "sd", "r_hat", "ess_bulk"} <= set(panel["beta"])
        assert {"raw_mean_difference", "divergences", "fit_seconds"} <= set(panel)
        lo, hi = panel["average_difference"]["hdi_89"]
        assert lo <= panel["average_difference"]["mean"] <= hi
    boost = [p for p in numbers["panels"] if p["effect"] == "boost"]
    assert all(p["beta"]["mean"] > 0 for p in boost), "the simulated boost (+0.3 logit) must show"
    # A second run reuses the cached posteriors (same numbers, far less time).
    again = run(_config(tmp_path, "action=figure", "figure=3", "source=results"))
    assert again[0]["seconds"] < numbers["total_seconds"]


def test_unknown_figure_and_paper_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="figure"):
        run(_config(tmp_path, "action=figure", "figure=99"))
    with pytest.raises(UsageError, match="unknown paper"):
        run(_config(tmp_path, "action=figure", "paper=nope"))


def test_figure_3_from_the_committed_cpu_mini_results(tmp_path):
    """`make figure-3 SOURCE=results` on a fresh clone: the committed CPU mini-replication is a valid input."""
    import pandas as pd

    from testtask.paths import repo_root

    mini = repo_root() / "results" / "pretrain-on-test" / "cpu-mini"
    files = sorted(mini.rglob("accuracies.csv"))
    assert len(files) >= 4, f"the committed mini-replication results are missing under {mini}"
    cfg = _config(tmp_path, "action=figure", "figure=3", "source=results")
    cfg.results_dir = str(repo_root() / "results")
    cfg.results_run = "cpu-mini"  # the default of conf/config.yaml
    run(cfg)
    numbers = json.loads((tmp_path / "figures" / "pretrain-on-test" / "figure-3.json").read_text())
    panels = {(p["m"], p["n"], p["effect"]): p for p in numbers["panels"]}
    assert set(panels) == {(50, 50, "boost"), (50, 50, "bias")}
    frames = pd.concat([pd.read_csv(f) for f in files])
    counts = (frames[["base", "extra", "test"]] * 50).round()
    assert panels[(50, 50, "boost")]["lm_types"] == ["minilm"]
    expected = {
        "boost": (counts.extra - counts.base).mean() / 50,
        "bias": (counts.test - counts.extra).mean() / 50,
    }
    for effect, value in expected.items():
        assert panels[(50, 50, effect)]["raw_mean_difference"] == pytest.approx(value, abs=1e-9)


@pytest.mark.parametrize(
    ("source", "run_level", "expected"),
    [
        ("published", None, "data/published/train-before-test"),
        ("results", "cpu-mini", "results/training-on-the-test-task/cpu-mini"),
        ("results", None, "results/training-on-the-test-task"),
    ],
)
def test_other_papers_roots_follow_the_source(tmp_path, source, run_level, expected):
    """An analysis reading another paper's release or run (proxy-tasks, downstream-predictability)."""
    from testtask.cli import make_context

    cfg = compose(
        [f"source={source}", f"results_run={run_level or 'null'}", f"data.dest={tmp_path}/data/published"]
    )
    cfg.results_dir = str(tmp_path / "results")
    ctx = make_context(cfg, "proxy-tasks")
    other = expected.split("/")[-2 if run_level else -1]
    assert ctx.paper_root(other) == tmp_path / expected
    assert ctx.paper_root("proxy-tasks") == ctx.data_root
