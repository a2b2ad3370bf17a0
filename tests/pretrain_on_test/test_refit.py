"""A fit that fails its diagnostics is refitted (the other t_j parameterisation where the data-chosen rule picked
it, then a higher target_accept), the healthiest attempt is kept, and the sidecar records what ran."""

from __future__ import annotations

import json

import pytest

from tests.conftest import built, model_spec, tmp_config, write_accuracies
from testtask import diagnostics
from testtask.pipeline import run
from testtask.pretrain_on_test import meta_analysis_figures, refit
from testtask.pretrain_on_test.fits import fit_checked
from testtask.pretrain_on_test.hierarchical import ModelData
from testtask.pretrain_on_test.settings import Refit
from testtask.pretrain_on_test.simulate import TruePars, simulate_long

POLICY = Refit(other_t=True, target_accept=0.95)
# Only the divergences and gross r̂ / ESS failures count, so that the healthy attempt passes at test-sized draws.
LIMITS = diagnostics.Thresholds(max_r_hat=1.05, min_ess_bulk=100, max_divergences=0)
# A target_accept of 0.05 makes leapfrog steps far too long: the first attempts diverge and mix badly.
STARVED = {
    "name": "nutpie",
    "draws": 300,
    "tune": 300,
    "chains": 2,
    "target_accept": 0.05,
    "progressbar": False,
}


def _data(seed: int = 1, subsamples: int = 4) -> ModelData:
    long = simulate_long(TruePars(beta=0.0), datasets=8, subsamples=subsamples, n=100, lm_types=2, seed=seed)
    return ModelData.from_long(long)


def test_the_plan_switches_the_parameterisation_only_where_the_rule_chose_it():
    first = refit.Attempt(noncentered_t=True, target_accept=0.8)
    assert refit.plan(first, rule_chose=True, policy=POLICY) == [
        first,
        refit.Attempt(False, 0.8),
        refit.Attempt(True, 0.95),
        refit.Attempt(False, 0.95),
    ]
    # An explicit noncentered_t is the user's: only the sampler's step size changes.
    assert refit.plan(first, rule_chose=False, policy=POLICY) == [first, refit.Attempt(True, 0.95)]
    assert refit.plan(first, rule_chose=True, policy=Refit(other_t=False, target_accept=None)) == [first]
    # No W term: no t_j to choose.
    no_t = refit.Attempt(noncentered_t=None, target_accept=0.8)
    assert refit.plan(no_t, rule_chose=False, policy=POLICY) == [no_t, refit.Attempt(None, 0.95)]
    assert refit.rule_chooses(model_spec()) and not refit.rule_chooses(model_spec(noncentered_t=True))
    assert not refit.rule_chooses(model_spec(interaction=False))


def test_the_first_passing_attempt_ends_the_ladder_and_else_the_healthiest_is_kept():
    plan = [refit.Attempt(True, 0.8), refit.Attempt(False, 0.8), refit.Attempt(True, 0.95)]
    divergent = diagnostics.Failure("divergences", 3, 0)
    slow = diagnostics.Failure("r_hat", 1.02, 1.01, "treatment")
    ran = []

    def run_(attempt):
        ran.append(attempt)
        return attempt

    passes_second = refit.healthiest(plan, run_, lambda a: [] if a == plan[1] else [divergent])
    assert ran == plan[:2] and passes_second.kept == plan[1] and passes_second.refitted
    assert [a["passed"] for a in passes_second.record()["attempts"]] == [False, True]
    ran.clear()
    found = {plan[0]: [divergent, slow], plan[1]: [slow], plan[2]: [divergent]}
    none_passes = refit.healthiest(plan, run_, found.__getitem__)
    assert ran == plan and none_passes.index == 1  # one failing statistic, no divergence
    ran.clear()
    at_once = refit.healthiest(plan, run_, lambda a: [])
    assert ran == plan[:1] and not at_once.refitted  # a healthy fit costs nothing more


def test_a_failing_fit_is_refitted_and_the_kept_attempt_is_the_one_recorded(tmp_path):
    data, spec = _data(), model_spec()
    outcome = fit_checked(data, spec, STARVED, 1, tmp_path, LIMITS, POLICY)
    record = outcome.record()
    first, *_, kept = record["attempts"]
    assert outcome.refitted and record["kept"] == len(record["attempts"]) - 1
    assert not first["passed"] and first["target_accept"] == 0.05
    assert kept["passed"] and kept["target_accept"] == 0.95
    # the other parameterisation was tried at the configured settings before the sampler changed
    assert {a["noncentered_t"] for a in record["attempts"][:2]} == {True, False}
    fit = outcome.kept
    assert fit.spec.noncentered_t == kept["noncentered_t"]
    assert not diagnostics.failures(fit.diagnostics(), fit.divergences, LIMITS)
    # every attempt is cached under its own settings: the same call reads them all and keeps the same fit
    again = fit_checked(data, spec, STARVED, 1, tmp_path, LIMITS, POLICY)
    assert all(f.from_cache for f in again.results) and again.record() == record


def test_an_explicit_parameterisation_is_never_switched(tmp_path):
    spec = model_spec(noncentered_t=False)
    outcome = fit_checked(_data(), spec, STARVED, 1, tmp_path, LIMITS, POLICY)
    assert outcome.refitted
    assert {a["noncentered_t"] for a in outcome.record()["attempts"]} == {False}


def test_a_failing_slice_fit_is_refitted_and_recorded():
    spec = model_spec()  # the §6.1 model with W, as the paper_text slices
    slice_fit = meta_analysis_figures._fit_slice(_data(2, subsamples=1), spec, STARVED, 2, LIMITS, POLICY)
    assert slice_fit.refit is not None and slice_fit.refit["refitted"]
    kept = slice_fit.refit["attempts"][slice_fit.refit["kept"]]
    assert (slice_fit.noncentered_t, slice_fit.target_accept) == (
        kept["noncentered_t"],
        kept["target_accept"],
    )
    assert not slice_fit.refit["attempts"][0]["passed"]
    assert kept["passed"] and not meta_analysis_figures._slice_failures(slice_fit, LIMITS)


@pytest.mark.parametrize("figure", [3])
def test_the_sidecar_records_the_refit_and_the_kept_settings(tmp_path, figure):
    write_accuracies(
        tmp_path / "results" / "pretrain-on-test",
        "accuracies_from_paper",
        m=50,
        n=100,
        lm_types=["bert", "gpt2"],
        datasets=8,
        subsamples=4,
    )
    overrides = [f"sampler.{k}={v}" for k, v in STARVED.items() if k != "name"]
    overrides += [f"diagnostics.{k}={v}" for k, v in vars(LIMITS).items()]
    cfg = tmp_config(tmp_path, "action=figure", f"figure={figure}", "source=results", "seed=1", *overrides)
    run(cfg)
    numbers = json.loads((built(cfg) / f"figure-{figure}.json").read_text())
    # the failed attempts set aside do not mark the claims the sidecar feeds (the report reads any_failed)
    assert not diagnostics.any_failed(numbers)
    for panel in numbers["panels"]:
        record = panel["refit"]
        kept = record["attempts"][record["kept"]]
        assert record["refitted"] and not record["attempts"][0]["passed"]
        assert panel["diagnostics_ok"] and kept["passed"]
        assert (panel["noncentered_t"], panel["target_accept"]) == (kept["noncentered_t"], 0.95)
        assert panel["fit_seconds"] == pytest.approx(sum(a["seconds"] for a in record["attempts"]))
