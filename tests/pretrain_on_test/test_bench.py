"""`make bench` and `make bench-vs-authors` end to end on small synthetic results."""

from __future__ import annotations

import json
import math

import pytest

from tests.conftest import built, tmp_config, write_accuracies
from testtask.pipeline import run

SMALL = [
    "sampler.draws=200",
    "sampler.tune=200",
    "sampler.chains=2",
    "sampler.progressbar=false",
    "seed=3",
    "pretrain_on_test.figure_7.slices=6",
    "pretrain_on_test.figure_7.draws=200",
    "pretrain_on_test.figure_7.tune=200",
    "pretrain_on_test.figure_7.m=50",
    "pretrain_on_test.figure_7.n=100",
]


@pytest.fixture
def config(tmp_path):
    root = tmp_path / "results" / "pretrain-on-test"
    write_accuracies(root, "accuracies_from_paper", 50, 100, ["bert", "gpt2"], datasets=5, subsamples=4)
    write_accuracies(
        root, "accuracies_zero_shot", 100, 100, ["mistral-qlora-zero-shot"], datasets=5, subsamples=4
    )
    return lambda *extra: tmp_config(tmp_path, *SMALL, "source=results", "paper=pretrain-on-test", *extra)


def test_bench_times_figures_3_and_7_and_says_what_came_from_the_cache(config, tmp_path, capsys):
    first = run(config("action=bench"))
    assert [row["from_cache"] for row in first["fits"]] == [False, False]
    assert [p["from_cache"] for p in first["figure_7"]["panels"]] == [False, False]
    assert first["figure_7"]["panels"][0]["slices"] == 6 and first["figure_7"]["total_seconds"] > 0
    second = run(config("action=bench"))
    assert all(row["from_cache"] for row in second["fits"])
    assert all(p["from_cache"] for p in second["figure_7"]["panels"])
    # The cached rows show the original fits' seconds, not this run's.
    assert [r["seconds"] for r in second["fits"]] == [r["seconds"] for r in first["fits"]]
    printed = capsys.readouterr().out
    assert "2 from the cache" in printed and "2 of 2 panels from the cache" in printed
    # each figure's sampling as it ran: Figure 3 the sampler's chains, Figure 7's slices figure_7.chains (1)
    assert "2 chains x 200 draws after 200 tuning steps" in printed
    assert "(200 draws after 200 tuning steps, 1 chain each;" in printed
    cold = run(
        config("action=bench", "pretrain_on_test.bench.cold=true", "pretrain_on_test.bench.figure_7=false")
    )
    assert not any(row["from_cache"] for row in cold["fits"]) and "figure_7" not in cold
    # m = 100 timed on a relabelled copy of m = 50; Figure 7 still finds the zero-shot collection beside it.
    proxy = ("pretrain_on_test.bench.proxy_missing_m=true", "pretrain_on_test.figure_7.m=100")
    proxied = run(config("action=bench", *proxy))
    assert [(row["m"], row["proxy"]) for row in proxied["fits"]] == [(50, False)] * 2 + [(100, True)] * 2
    assert [p["m"] for p in proxied["figure_7"]["panels"]] == [100, 100] and not proxied["figure_7"]["notes"]
    saved = json.loads((built(config(*proxy)) / "bench.json").read_text())
    assert saved["cold"] is False and saved["proxy_m"] == [100] and saved["machine"]


@pytest.mark.slow
def test_bench_vs_authors_fits_the_same_posterior_both_ways(config, tmp_path, capsys):
    """The authors' bambi + PyMC fit and ours agree on β and eq. 11 (same data and priors); the ratio is printed."""
    result = run(config("action=bench-vs-authors", "pretrain_on_test.bench.vs_authors.n=100"))
    authors, ours, *one_core = result["rows"]
    assert authors["method"].startswith("authors") and ours["method"].startswith("ours")
    assert ours["beta_mean"] == pytest.approx(authors["beta_mean"], abs=0.5 * authors["beta_sd"] + 0.01)
    assert ours["avg_diff_pts"] == pytest.approx(authors["avg_diff_pts"], abs=0.5)
    # eq. 11's 89% HDI, both ways: the same interval within Monte Carlo error (four standard errors of the
    # difference; 2 chains x 200 draws put each end's error near 0.15 points).
    for end in (0, 1):
        se = math.hypot(ours["avg_diff_hdi89_mcse_pts"][end], authors["avg_diff_hdi89_mcse_pts"][end])
        assert 0 < se < 0.5
        assert abs(ours["avg_diff_hdi89_pts"][end] - authors["avg_diff_hdi89_pts"][end]) <= 4 * se
    assert ours["avg_diff_hdi89_pts"][0] <= ours["avg_diff_pts"] <= ours["avg_diff_hdi89_pts"][1]
    seconds = authors["seconds"], ours["seconds"]
    assert result["speedup_total"] == pytest.approx(sum(seconds[0].values()) / sum(seconds[1].values()))
    assert result["speedup_fit"] == pytest.approx(seconds[0]["fit"] / seconds[1]["fit"])
    printed = capsys.readouterr().out
    assert "x faster per fit" in printed
    # which BLAS the authors' way ran with is recorded (pip gives PyTensor none: its Gemv runs in Python)
    import pytensor  # here, not at the top: collecting this module in `make test` should not import PyTensor

    assert result["pytensor_blas_ldflags"] == (pytensor.config.blas__ldflags or None)
    assert "PyTensor's BLAS: " + (result["pytensor_blas_ldflags"] or "none") in printed
    # With more than one core, ours also runs on the authors' one core: the same chains, so the same draws.
    assert [row["beta_mean"] for row in one_core] in ([], [ours["beta_mean"]])
    assert (built(config("pretrain_on_test.bench.vs_authors.n=100")) / "bench-vs-authors.json").is_file()
