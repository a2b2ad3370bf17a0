"""The §6.1 model: simulation recovery (Appendix E.1), padding, and agreement with the bambi formula."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytest

from tests.conftest import model_spec
from testtask import diagnostics
from testtask.pretrain_on_test import kernel, predictive
from testtask.pretrain_on_test.hierarchical import (
    SIGMA_U,
    SIGMA_V,
    SIGMA_W,
    TREATMENT,
    ModelData,
    Scales,
    build_marginal,
    identified_draws,
)
from testtask.pretrain_on_test.sampling import fit
from testtask.pretrain_on_test.simulate import TruePars, simulate_long


def _recover(beta: float, seed: int, sampler: dict) -> dict:
    long = simulate_long(
        TruePars(beta=beta, sigma_w=0.1), datasets=12, subsamples=10, n=200, lm_types=2, seed=seed
    )
    result = fit(ModelData.from_long(long), model_spec(), sampler, seed=seed)
    return result.diagnostics()[TREATMENT] | {"divergences": result.divergences}


def test_recovers_null_and_non_null_effects(fast_sampler):
    null = _recover(0.0, seed=3, sampler=fast_sampler)
    effect = _recover(0.4, seed=4, sampler=fast_sampler)
    lo, hi = null["hdi_89"]
    assert lo < 0.0 < hi, null
    lo, hi = effect["hdi_89"]
    assert lo < 0.4 < hi, effect
    assert lo > 0.0, "a non-null effect must be distinguished from 0"
    for d in (null, effect):
        assert d["r_hat"] < 1.02 and d["ess_bulk"] > 200 and d["divergences"] == 0


def test_model_data_pads_ragged_subsamples_with_zero_trials():
    long = simulate_long(TruePars(), datasets=3, subsamples=4, n=50, lm_types=1, seed=0)
    long = long[~((long.dataset == "task01") & (long.subsample >= 2))]
    data = ModelData.from_long(long)
    assert data.shape == (3, 4, 1, 2)
    assert data.n_subsamples.tolist() == [4, 2, 4]
    assert data.trials[1, 2:].sum() == 0 and data.trials[0].min() == 50
    assert data.observed.sum() == len(long) // 2
    back = data.to_long().sort_values(["dataset", "subsample", "treatment"], ignore_index=True)
    expect = long.sort_values(["dataset", "subsample", "treatment"], ignore_index=True)
    pd.testing.assert_series_equal(back["correct"], expect["correct"], check_dtype=False)


def test_padding_leaves_the_likelihood_unchanged():
    """A padded cell has zero trials: the model's log density differs only by the padded c's own prior."""
    long = simulate_long(TruePars(), datasets=2, subsamples=3, n=50, lm_types=2, seed=1)
    tight = ModelData.from_long(long)
    padded = ModelData.from_long(long)
    padded.correct = np.concatenate([tight.correct, np.zeros_like(tight.correct[:, :1])], axis=1)
    padded.trials = np.concatenate([tight.trials, np.zeros_like(tight.trials[:, :1])], axis=1)
    values = {}
    for name, data in (("tight", tight), ("padded", padded)):
        model = build_marginal(data.shape, model_spec())
        with model:
            pm.set_data({"correct": data.correct.astype(float), "trials": data.trials.astype(float)})
        point = model.initial_point()
        point["c"] = np.full(data.shape[:2], 0.3)
        (potential,) = model.replace_rvs_by_values(model.potentials)
        like = model.compile_fn(
            potential, inputs=model.value_vars, on_unused_input="ignore", mode="FAST_COMPILE"
        )(point)
        values[name] = float(like)
    assert values["tight"] == pytest.approx(values["padded"])


def test_unknown_backend_and_sampler_are_clear_errors(fast_sampler):
    data = ModelData.from_long(simulate_long(TruePars(), datasets=2, subsamples=2, n=10, lm_types=1))
    with pytest.raises(ValueError, match=r"backend\n  Input should be 'marginal' or 'bambi'"):
        model_spec(backend="stan")
    with pytest.raises(ValueError, match="sampler"):
        fit(data, model_spec(), {**fast_sampler, "name": "gibbs"}, seed=0)


@pytest.mark.slow
def test_marginal_backend_matches_the_bambi_formula(fast_sampler):
    """Same posterior for β and the σ's from the reparameterised model and from bambi's formula."""
    long = simulate_long(
        TruePars(beta=0.2, sigma_w=0.15), datasets=8, subsamples=6, n=200, lm_types=2, seed=7
    )
    data = ModelData.from_long(long)
    sampler = {**fast_sampler, "draws": 1000, "tune": 1000, "chains": 4}
    ours_fit = fit(data, model_spec(), sampler, seed=1)
    theirs_fit = fit(data, model_spec(backend="bambi"), sampler, seed=2)
    ours, theirs = ours_fit.summary(), theirs_fit.summary()
    # Eq. 11 from either posterior: the bambi draws map onto the identified coordinates (thinned as configured).
    avg_ours = predictive.simulate(ours_fit, seed=3).average
    avg_theirs = predictive.simulate(theirs_fit, seed=4, max_draws=2000).average
    assert avg_theirs.shape == (2000,)
    assert avg_ours.mean() == pytest.approx(avg_theirs.mean(), abs=0.1 * avg_ours.std())
    assert avg_ours.std() == pytest.approx(avg_theirs.std(), rel=0.15)
    for name in ours.index:
        se = np.hypot(ours.loc[name, "sd"], theirs.loc[name, "sd"]) / np.sqrt(200)
        assert abs(ours.loc[name, "mean"] - theirs.loc[name, "mean"]) < max(
            6 * se, 0.1 * ours.loc[name, "sd"]
        ), name
        assert ours.loc[name, "sd"] == pytest.approx(theirs.loc[name, "sd"], rel=0.2), name


def test_posterior_predictive_difference_tracks_the_data(fast_sampler):
    """Eq. 11 centres on the observed mean difference; eq. 12 per task on each task's observed mean."""
    long = simulate_long(
        TruePars(beta=0.3, sigma_w=0.2), datasets=6, subsamples=8, n=100, lm_types=2, seed=11
    )
    result = fit(ModelData.from_long(long), model_spec(), fast_sampler, seed=5)
    pp = predictive.simulate(result, seed=6)
    assert pp.average.shape == (fast_sampler["draws"] * fast_sampler["chains"],)
    assert abs(pp.average.mean() - pp.observed_average()) < 2 * pp.average.std()
    lo, hi = predictive.interval(pp.average)["hdi_89"]
    assert lo > 0, "a 0.3 logit effect is a clearly positive accuracy difference"
    per_task = pp.per_task.mean(axis=0)
    assert np.corrcoef(per_task.ravel(), pp.observed_per_task().ravel())[0, 1] > 0.8
    # Same seed, same draws: the predictive step is reproducible.
    np.testing.assert_array_equal(predictive.simulate(result, seed=6).average, pp.average)
    # Threaded blocks: reproducible for a given (seed, workers), the first block equal to a one-worker run on
    # those draws, and the same distribution as one worker.
    two = predictive.simulate(result, seed=6, workers=2)
    np.testing.assert_array_equal(predictive.simulate(result, seed=6, workers=2).per_task, two.per_task)
    half = len(two.average) // 2
    c, t, alpha = identified_draws(result)
    trials = result.data.trials.astype(np.int64)
    first_block = predictive._draw_block(c[:half], t[:half], alpha[:half], trials, 6)
    np.testing.assert_array_equal(first_block[0], two.average[:half])
    assert two.average.mean() == pytest.approx(pp.average.mean(), abs=0.2 * pp.average.std())


def test_predictive_draws_are_thinned_evenly_over_every_chain(fast_sampler):
    """`max_draws` keeps evenly spaced draws of every chain (half of them: every second draw of each), not the
    first chains alone."""
    long = simulate_long(TruePars(beta=0.2), datasets=4, subsamples=3, n=50, lm_types=2, seed=2)
    result = fit(ModelData.from_long(long), model_spec(), fast_sampler, seed=1)
    chains, draws = fast_sampler["chains"], fast_sampler["draws"]
    c, t, alpha = identified_draws(result)
    half_c, half_t, half_alpha = identified_draws(result, max_draws=chains * draws // 2)
    np.testing.assert_array_equal(half_c, c[::2])
    np.testing.assert_array_equal(half_t, t[::2])
    np.testing.assert_array_equal(half_alpha, alpha[::2])
    # each chain gives its share: the last chain's last kept draw is its second to last
    np.testing.assert_array_equal(half_t[-1], t[-2])
    assert identified_draws(result, max_draws=10 * chains * draws)[1].shape == t.shape
    assert predictive.simulate(result, seed=3, max_draws=chains * draws // 2).average.shape == (len(half_t),)


@pytest.mark.parametrize("sampler_name", ["pymc", "numpyro"])
def test_other_samplers_run_the_same_model(sampler_name, fast_sampler):
    """The PyMC model behind `sampler=pymc|numpyro` agrees with the nutpie kernel on a small problem."""
    pytest.importorskip("numpyro" if sampler_name == "numpyro" else "pymc")
    long = simulate_long(
        TruePars(beta=0.5, sigma_w=0.1), datasets=4, subsamples=3, n=200, lm_types=2, seed=21
    )
    data = ModelData.from_long(long)
    other = fit(data, model_spec(), {**fast_sampler, "name": sampler_name, "chains": 2, "cores": 1}, seed=1)
    ours = fit(data, model_spec(), fast_sampler, seed=1)
    a, b = other.diagnostics()[TREATMENT], ours.diagnostics()[TREATMENT]
    assert a["mean"] == pytest.approx(b["mean"], abs=0.5 * b["sd"])
    assert a["sd"] == pytest.approx(b["sd"], rel=0.35)


def test_one_subsample_per_task_collapses_s_and_keeps_the_posterior(fast_sampler):
    """Figure 7's slice shape (one subsample per task): `collapse_s=auto` integrates s_j out, and β's and the σ's
    posterior is the one of the model that samples s_j (within Monte Carlo error), with far fewer divergences."""
    long = simulate_long(
        TruePars(beta=0.1, sigma_w=0.05), datasets=25, subsamples=1, n=500, lm_types=2, seed=31
    )
    data = ModelData.from_long(long)
    sampler = {**fast_sampler, "draws": 1000, "tune": 500, "chains": 4, "cores": 2}
    collapsed = fit(data, model_spec(), sampler, seed=3)
    sampled_s = fit(data, model_spec(collapse_s=False), sampler, seed=3)
    assert collapsed.spec.collapse_s is True and sampled_s.spec.collapse_s is False
    assert "s" not in collapsed.idata.posterior and "s" in sampled_s.idata.posterior
    a, b = collapsed.diagnostics(), sampled_s.diagnostics()
    for name in (TREATMENT, "1|dataset:treatment_sigma"):
        mc_error = np.hypot(
            a[name]["sd"] / np.sqrt(a[name]["ess_bulk"]), b[name]["sd"] / np.sqrt(b[name]["ess_bulk"])
        )
        assert a[name]["mean"] == pytest.approx(b[name]["mean"], abs=5 * mc_error), name
        assert a[name]["sd"] == pytest.approx(b[name]["sd"], rel=0.15), name
    assert a[TREATMENT]["r_hat"] < 1.01
    steps = [float(f.idata.sample_stats["n_steps"].mean()) for f in (collapsed, sampled_s)]
    assert steps[0] < steps[1], steps


def _old_scales(monkeypatch) -> None:
    """Sample σ_U and σ_V as log σ's whatever the shape: the parameterisation before `Scales`."""
    monkeypatch.setattr(kernel, "scale_coordinates", lambda *_: Scales.LOG)


def test_polar_scales_recover_known_effects_and_keep_the_posterior(monkeypatch):
    """Figure 7's slice model under protocol=paper_text (one subsample per task, U_j + V_jk, W): on simulated data
    with β = 0.3, the polar scales pass every diagnostic at the preset's target acceptance and recover β; the log
    σ coordinates diverge there (and the diagnostics say so), and where they are healthy (target acceptance 0.99)
    their posterior is the polar one within Monte Carlo error."""
    long = simulate_long(
        TruePars(beta=0.3, sigma_w=0.05), datasets=25, subsamples=1, n=500, lm_types=2, seed=31
    )
    data = ModelData.from_long(long)
    spec = model_spec()
    sampler = {"name": "nutpie", "draws": 1000, "tune": 1000, "chains": 4, "cores": 1, "target_accept": 0.8}
    limits = diagnostics.configured()
    polar = fit(data, spec, sampler, seed=3)
    assert kernel.Layout(data.shape, polar.spec, False, True).scales is Scales.POLAR
    assert diagnostics.failures(polar.diagnostics(), polar.divergences, limits) == []
    lo, hi = polar.diagnostics()[TREATMENT]["hdi_89"]
    assert 0.0 < lo < 0.3 < hi
    _old_scales(monkeypatch)
    unhealthy = fit(data, spec, sampler, seed=3)
    found = diagnostics.failures(unhealthy.diagnostics(), unhealthy.divergences, limits)
    assert "divergences" in {f.statistic for f in found}, found
    # twice the draws: at 1,000 this control's σ_U bulk ESS sits at the 400 limit (390 with one set of chain starts)
    healthy = fit(data, spec, {**sampler, "target_accept": 0.99, "draws": 2000}, seed=3)
    assert diagnostics.failures(healthy.diagnostics(), healthy.divergences, limits) == []
    a, b = polar.diagnostics(), healthy.diagnostics()
    for name in (TREATMENT, SIGMA_U, SIGMA_V, SIGMA_W):
        mc_error = np.hypot(
            a[name]["sd"] / np.sqrt(a[name]["ess_bulk"]), b[name]["sd"] / np.sqrt(b[name]["ess_bulk"])
        )
        assert a[name]["mean"] == pytest.approx(b[name]["mean"], abs=4 * mc_error), name
        assert a[name]["sd"] == pytest.approx(b[name]["sd"], rel=0.1), name


def test_a_scale_in_its_prior_alone_is_its_half_normal_and_leaves_the_posterior(monkeypatch):
    """The authors' slice model (no V term): σ_V, sampled as h_V·|B|, keeps its HalfNormal(h_V) prior, and β and
    σ_U are those of the log σ_V coordinate within Monte Carlo error."""
    long = simulate_long(TruePars(beta=0.3), datasets=25, subsamples=1, n=500, lm_types=2, seed=31)
    data = ModelData.from_long(long)
    spec = model_spec(interaction=False, subsample_effect=False)
    sampler = {"name": "nutpie", "draws": 1000, "tune": 500, "chains": 4, "cores": 1, "target_accept": 0.8}
    new = fit(data, spec, sampler, seed=3)
    assert kernel.Layout(data.shape, new.spec, False, True).scales is Scales.PRIOR_ONLY_V
    assert new.divergences == 0
    sigma_v = new.diagnostics()[SIGMA_V]
    h_v = spec.priors.sigma_V
    assert sigma_v["mean"] == pytest.approx(
        h_v * np.sqrt(2 / np.pi), abs=4 * sigma_v["sd"] / np.sqrt(sigma_v["ess_bulk"])
    )
    _old_scales(monkeypatch)
    old = fit(data, spec, sampler, seed=3)
    a, b = new.diagnostics(), old.diagnostics()
    for name in (TREATMENT, SIGMA_U):
        mc_error = np.hypot(
            a[name]["sd"] / np.sqrt(a[name]["ess_bulk"]), b[name]["sd"] / np.sqrt(b[name]["ess_bulk"])
        )
        assert a[name]["mean"] == pytest.approx(b[name]["mean"], abs=4 * mc_error), name
