"""Figure 7 (§10) end to end: slice fits with their diagnostics in the sidecar, a cached rerun, a known share."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import built, model_spec, tmp_config, write_accuracies
from testtask.pipeline import run
from testtask.pretrain_on_test import kernel_sampler, meta_analysis_figures, refit
from testtask.pretrain_on_test.hierarchical import ModelData
from testtask.pretrain_on_test.simulate import TruePars, simulate_long

SLICES = ["pretrain_on_test.figure_7.slices=12", "pretrain_on_test.figure_7.draws=300"]
SLICES += [
    "pretrain_on_test.figure_7.tune=300",
    "pretrain_on_test.figure_7.m=50",
    "pretrain_on_test.figure_7.n=100",
]


def _config(tmp_path, *extra):
    return tmp_config(tmp_path, "sampler.chains=2", "sampler.progressbar=false", "seed=5", *SLICES, *extra)


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results" / "pretrain-on-test"
    write_accuracies(
        root, "accuracies_from_paper", 50, 100, ["bert", "gpt2"], datasets=6, subsamples=4, bias=0.8
    )
    write_accuracies(
        root, "accuracies_zero_shot", 100, 100, ["mistral-qlora-zero-shot"], datasets=6, subsamples=4, seed=1
    )
    return root


def test_figure_7_records_every_slice_fit_and_reuses_them(tmp_path, results, monkeypatch):
    cfg = _config(tmp_path, "action=figure", "figure=7", "source=results")
    run(cfg)
    out = built(cfg)
    numbers = json.loads((out / "figure-7.json").read_text())
    few, zero = numbers["panels"]
    assert (few["m"], few["n"], few["slices"]) == (50, 100, 12) and zero["lm_types"] == [
        "mistral-qlora-zero-shot"
    ]
    for panel in (few, zero):
        diagnostics = panel["diagnostics"]
        assert len(diagnostics["per_slice"]["r_hat"]) == 12 == len(panel["posterior_means"])
        assert diagnostics["worst_r_hat"] == max(diagnostics["per_slice"]["r_hat"])
        assert diagnostics["min_ess_bulk"] == min(diagnostics["per_slice"]["ess_bulk"])
        assert diagnostics["worst_r_hat"] < 1.1 and diagnostics["min_ess_bulk"] > 50
        # Each slice checked by the one diagnostics rule; the panel's flag is false when any slice fails.
        assert len(diagnostics["per_slice"]["diagnostics_ok"]) == 12
        assert panel["diagnostics_ok"] == all(diagnostics["per_slice"]["diagnostics_ok"])
        assert len({f["slice"] for f in panel["diagnostics_failures"]}) == 12 - sum(
            diagnostics["per_slice"]["diagnostics_ok"]
        )
        assert panel["sampler"]["draws"] == 300 and not panel["from_cache"]
    # The simulated bias (+0.8 logit on the test arm) is far outside ±0.04 in every slice; no bias is inside.
    assert few["share_outside_band"] == 1.0 and few["share_hdi_excludes_zero"] == 1.0
    assert np.mean(np.abs(zero["posterior_means"]) < 0.3) > 0.5

    def no_fitting(*args, **kwargs):
        raise AssertionError("the second run fitted a slice instead of reading the cache")

    monkeypatch.setattr(kernel_sampler, "sample_hyper", no_fitting)
    monkeypatch.setattr(meta_analysis_figures, "fit_model", no_fitting)
    run(_config(tmp_path, "action=figure", "figure=7", "source=results"))
    again = json.loads((out / "figure-7.json").read_text())
    for before, after in zip(numbers["panels"], again["panels"], strict=True):
        assert after["from_cache"] and after["posterior_means"] == before["posterior_means"]
        assert after["seconds"] == before["seconds"]


@pytest.mark.parametrize("spec", [model_spec(), model_spec(interaction=False, subsample_effect=False)])
def test_slice_fit_through_the_general_sampler_is_the_same_summary(spec):
    """The kernel's trace-only path and the general `fit` (InferenceData) summarise the same draws alike, for the
    §6.1 model and for the authors' slice model (no W, one intercept per task)."""
    long = simulate_long(TruePars(beta=0.1), datasets=8, subsamples=1, n=300, lm_types=2, seed=9)
    data = ModelData.from_long(long)
    sampler = {"name": "nutpie", "draws": 300, "tune": 300, "chains": 2, "target_accept": 0.8}
    fast = meta_analysis_figures._sample_slice(data, spec, sampler, seed=4)
    general = meta_analysis_figures.fit_model(data, spec, {**sampler, "cores": 1}, 4)
    attempt = refit.first_attempt(general.spec, sampler)
    summary = meta_analysis_figures._summarise(
        general.idata.posterior["treatment"].values, general.divergences, attempt
    )
    assert fast == summary


def test_slices_are_the_frame_slices_of_the_same_draws(tmp_path):
    """`slice_data` (array indexing) gives, draw for draw, the data the earlier data frame per slice gave."""
    from testtask.pretrain_on_test.fits import configuration_data

    frame = simulate_long(TruePars(beta=0.1), datasets=5, subsamples=4, n=50, lm_types=2, seed=2)
    frame = _as_accuracies(frame)
    frame = frame[~((frame.dataset == "task01") & (frame.subsample == 3))]  # a task with fewer subsamples
    fast = meta_analysis_figures.slice_data(frame, 30, np.random.default_rng(7), "round")
    rng = np.random.default_rng(7)
    for one in fast:
        slow = configuration_data(_slice_frame(frame, rng), "bias", "round")
        np.testing.assert_array_equal(one.correct, slow.correct)
        np.testing.assert_array_equal(one.trials, slow.trials)
        assert (one.datasets, one.lm_types) == (slow.datasets, slow.lm_types)
    assert len({tuple(d.correct.ravel()) for d in fast}) > 1


def _as_accuracies(long):
    """Paired counts (simulate_long) as the loaded-accuracies frame the figures read (bias: extra vs test)."""
    keys = ["lm_type", "dataset", "subsample"]
    control = long[long.treatment == 0].set_index(keys)
    treated = long[long.treatment == 1].set_index(keys)
    frame = control[["trials"]].rename(columns={"trials": "n"})
    frame["extra_correct"] = control["correct"]
    frame["test_correct"] = treated["correct"]
    frame["extra"] = frame.extra_correct / frame.n
    frame["test"] = frame.test_correct / frame.n
    frame["m"] = 50
    return frame.reset_index()


def _slice_frame(frame, rng):
    """The reference: Figure 7's earlier slicing, one subsample per task picked from a data frame."""
    import pandas as pd

    picks = []
    for _, part in frame.groupby("dataset"):
        k = rng.choice(part.subsample.unique())
        chosen = part[part.subsample == k].copy()
        chosen["subsample"] = 0
        picks.append(chosen)
    return pd.concat(picks, ignore_index=True)


def test_slices_per_lm_type_pick_each_lm_types_subsample_independently():
    """The authors' `_down_sample` (meta.py:26-38): one subsample per (LM type, task), drawn independently, so
    the two LM types of a task come from different subsamples in some slices; each pick is one of that LM type's
    own rows."""
    frame = simulate_long(TruePars(beta=0.1), datasets=5, subsamples=4, n=50, lm_types=2, seed=2)
    frame = _as_accuracies(frame)
    full = meta_analysis_figures.configuration_data(frame, "bias", "round")
    slices = meta_analysis_figures.slice_data(frame, 40, np.random.default_rng(3), "round", per_lm_type=True)
    mixed = 0
    for one in slices:
        assert one.correct.shape == (5, 1, 2, 2) and one.lm_types == full.lm_types
        for j in range(5):
            picks = [
                next(k for k in range(4) if np.array_equal(full.correct[j, k, lm], one.correct[j, 0, lm]))
                for lm in range(2)
            ]
            mixed += picks[0] != picks[1]
    assert mixed > 0
    same = meta_analysis_figures.slice_data(frame, 40, np.random.default_rng(3), "round")
    assert all(
        any(np.array_equal(full.correct[j, k], one.correct[j, 0]) for k in range(4))
        for one in same
        for j in range(5)
    )


def test_one_chain_gets_a_split_r_hat():
    """A one-chain slice fit (the authors' meta.py) is checked with r̂ over its two halves, not left undefined."""
    rng = np.random.default_rng(0)
    attempt = refit.Attempt(noncentered_t=None, target_accept=0.8)
    mixed = meta_analysis_figures._summarise(rng.normal(size=(1, 1000)), 0, attempt)
    drifting = meta_analysis_figures._summarise(np.linspace(0, 5, 1000)[None, :], 0, attempt)
    assert np.isfinite(mixed.r_hat) and mixed.r_hat < 1.01
    assert drifting.r_hat > 1.1


def test_the_default_slice_model_is_the_authors():
    """meta.py fits `method + lm_type + (1|pair)`: no W, and one random intercept per task (no V beside U); the
    paper_text preset fits §6.1's (W, U and V)."""
    from testtask.pipeline import configured

    default = configured("pretrain-on-test").figure_7
    preset = configured("pretrain-on-test", ("protocol=paper_text",)).figure_7
    assert (default.interaction, default.subsample_effect, default.chains) == (False, False, 1)
    assert (preset.interaction, preset.subsample_effect, preset.chains) == (True, True, 4)
    # The authors' one chain draws App. E's 4 x 1,000 in a row, so that its split r̂ is not noise (~7% of slice fits
    # exceed 1.01 at 1,000 draws); the paper_text preset's four chains draw App. E's 1,000 each.
    assert (default.draws, preset.draws) == (4000, 1000)
    assert default.draws * default.chains == preset.draws * preset.chains
