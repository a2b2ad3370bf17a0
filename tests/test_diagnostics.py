"""Diagnostics are loud: a fit outside the r̂, ESS or divergence limits is warned about by
cell, flagged in its sidecar, and the report marks the claims resting on it."""

from __future__ import annotations

import json
import logging

import arviz as az
import numpy as np
import pytest

from tests.conftest import model_spec, tmp_config, write_accuracies
from testtask import diagnostics
from testtask.pipeline import make_context, run
from testtask.pretrain_on_test import fits, posterior_panels
from testtask.pretrain_on_test.hierarchical import (
    LM_TYPE,
    SIGMA_U,
    SIGMA_V,
    SIGMA_W,
    TREATMENT,
    Fit,
    ModelData,
    resolve_spec,
)
from testtask.report import evaluate, ledger, render

LIMITS = diagnostics.Thresholds(max_r_hat=1.01, min_ess_bulk=400, max_divergences=0)
CHAINS, DRAWS = 2, 500
DIVERGENT = 3


def handmade_fit(data: ModelData, bad: bool, seed: int = 0) -> Fit:
    """A posterior of independent draws (healthy: r̂ ≈ 1, ESS ≈ chains × draws); `bad` puts β's second chain one
    unit away from the first (r̂ ≫ 1) and marks `DIVERGENT` transitions divergent."""
    rng = np.random.default_rng(seed)
    n_j, n_k, n_i, _ = data.shape

    def draws(*shape: int) -> np.ndarray:
        return rng.normal(0.0, 0.05, (CHAINS, DRAWS, *shape))

    beta = draws()
    if bad:
        beta[1] += 1.0
    posterior = {
        TREATMENT: beta,
        SIGMA_U: np.abs(draws()) + 0.1,
        SIGMA_V: np.abs(draws()) + 0.1,
        SIGMA_W: np.abs(draws()) + 0.1,
        "c": draws(n_j, n_k),
        "t": beta[..., None] + draws(n_j),
        LM_TYPE: draws(n_i - 1),
    }
    diverging = np.zeros((CHAINS, DRAWS), dtype=bool)
    if bad:
        diverging[0, :DIVERGENT] = True
    idata = az.from_dict(posterior=posterior, sample_stats={"diverging": diverging})
    return Fit(idata, data, resolve_spec(data, model_spec()), seconds=0.0, sampler="handmade")


def _data() -> ModelData:
    trials = np.full((3, 2, 2, 2), 50)
    return ModelData(trials // 2, trials, ["a", "b", "c"], ["bert", "gpt2"], np.array([2, 2, 2]))


def test_a_fit_with_bad_chains_and_divergences_is_warned_about_and_flagged(caplog):
    fit = handmade_fit(_data(), bad=True)
    with caplog.at_level(logging.WARNING, logger="testtask"):
        record = diagnostics.assess(
            "paper-x figure 9, m=5 n=7 bias", fit.diagnostics(), fit.divergences, LIMITS
        )
    assert "fit diagnostics failed for paper-x figure 9, m=5 n=7 bias" in caplog.text
    assert f"{TREATMENT} r_hat" in caplog.text and f"divergences {DIVERGENT} > 0" in caplog.text
    assert SIGMA_U not in caplog.text
    assert record[diagnostics.OK] is False
    failed = {(f["parameter"], f["statistic"]) for f in record[diagnostics.FAILURES]}
    # Chains apart also leave few effective draws; the σ's, healthy, are not named.
    assert failed == {(TREATMENT, "r_hat"), (TREATMENT, "ess_bulk"), (None, "divergences")}
    r_hat = next(f for f in record[diagnostics.FAILURES] if f["statistic"] == "r_hat")
    assert r_hat["value"] > 1.5 and r_hat["limit"] == 1.01


def test_a_healthy_fit_passes_silently(caplog):
    fit = handmade_fit(_data(), bad=False)
    with caplog.at_level(logging.WARNING, logger="testtask"):
        record = diagnostics.assess("cell", fit.diagnostics(), fit.divergences, LIMITS)
    assert record == {diagnostics.OK: True, diagnostics.FAILURES: []} and not caplog.text


def test_low_ess_and_a_nan_r_hat_fail():
    found = diagnostics.failures({"b": {"r_hat": float("nan"), "ess_bulk": 120.0}}, 0, LIMITS)
    assert [(f.statistic, f.parameter) for f in found] == [("r_hat", "b"), ("ess_bulk", "b")]
    assert found[1].text() == "b ess_bulk 120 < 400"


def test_the_limits_are_read_from_the_config(tmp_path):
    ctx = make_context(tmp_config(tmp_path, "diagnostics.max_r_hat=1.05"), "pretrain-on-test")
    assert ctx.limits() == diagnostics.Thresholds(1.05, diagnostics.configured().min_ess_bulk, 0)
    assert diagnostics.configured().max_r_hat == 1.01  # conf/config.yaml, the one place they live


@pytest.fixture
def figure_3_with_a_bad_bias_fit(tmp_path, monkeypatch, caplog):
    """Figure 3 built through the pipeline on a small results tree, the m=50, n=50 bias fit replaced by one with
    known bad diagnostics (the boost's by a healthy one). Gives the figures folder and the warnings logged."""
    return _build_with_a_bad_bias_fit(tmp_path, monkeypatch, caplog, 3)


def _build_with_a_bad_bias_fit(tmp_path, monkeypatch, caplog, figure: int):
    write_accuracies(
        tmp_path / "results" / "pretrain-on-test",
        "accuracies_from_paper",
        m=50,
        n=50,
        lm_types=["bert", "gpt2"],
        datasets=3,
        subsamples=2,
    )
    effect_of: dict[int, str] = {}
    original = posterior_panels.configuration_data

    def recording(frame, effect, counts):
        data = original(frame, effect, counts)
        effect_of[id(data)] = effect
        return data

    monkeypatch.setattr(posterior_panels, "configuration_data", recording)
    monkeypatch.setattr(
        fits, "fit_cached", lambda data, *_: handmade_fit(data, bad=effect_of[id(data)] == "bias")
    )
    with caplog.at_level(logging.WARNING, logger="testtask"):
        run(tmp_config(tmp_path, "action=figure", f"figure={figure}", "source=results"))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    return tmp_path / "figures" / "pretrain-on-test" / "results", warnings


def test_figure_3_names_the_cell_and_flags_the_fit_in_its_sidecar(figure_3_with_a_bad_bias_fit):
    out, logged = figure_3_with_a_bad_bias_fit
    warnings = [m for m in logged if "fit diagnostics failed" in m]
    assert len(warnings) == 1, warnings
    assert "pretrain-on-test figure 3, few_shot m=50 n=50 bias (LM types bert, gpt2)" in warnings[0]
    assert f"{TREATMENT} r_hat" in warnings[0] and f"divergences {DIVERGENT} > 0" in warnings[0]
    numbers = json.loads((out / "figure-3.json").read_text())
    panels = {p["effect"]: p for p in numbers["panels"]}
    assert panels["boost"][diagnostics.OK] is True and panels["boost"][diagnostics.FAILURES] == []
    assert panels["bias"][diagnostics.OK] is False
    assert {f["statistic"] for f in panels["bias"][diagnostics.FAILURES]} == {
        "r_hat",
        "ess_bulk",
        "divergences",
    }


def test_figure_4_records_the_bias_fits_it_draws_on(tmp_path, monkeypatch, caplog):
    """Figure 4 draws eq. 12 from Figure 3's bias fits: its sidecar records their verdicts, so the report marks
    the claims it feeds when one failed."""
    out, _ = _build_with_a_bad_bias_fit(tmp_path, monkeypatch, caplog, 4)
    numbers = json.loads((out / "figure-4.json").read_text())
    assert [(f["m"], f["n"], f["effect"]) for f in numbers["fits"]] == [(50, 50, "bias")]
    assert numbers["fits"][0][diagnostics.OK] is False and numbers["fits"][0]["divergences"] == DIVERGENT
    assert diagnostics.any_failed(numbers)


def test_the_report_marks_claims_resting_on_the_failed_fit(figure_3_with_a_bad_bias_fit, tmp_path):
    out, _ = figure_3_with_a_bad_bias_fit
    claims = [
        {
            "id": "t.bias",
            "where": "Figure 3",
            "statement": "the bias is small",
            "paper": 0.0,
            "ours": {"output": "figure-3", "path": "panels[effect=bias].beta.mean"},
            "rule": {"kind": "round", "digits": 0},
        },
        {
            "id": "t.other",
            "where": "Table 9",
            "statement": "a claim on another output",
            "paper": 1,
            "ours": {"output": "table-9", "path": "x"},
            "rule": {"kind": "equal"},
        },
    ]
    import yaml

    file = tmp_path / "toy.yaml"
    file.write_text(yaml.safe_dump({"paper": "toy", "claims": claims}, sort_keys=False))
    (out / "table-9.json").write_text('{"x": 1}')
    loaded = ledger.load(file)
    verdicts = {v.claim.id: v for v in evaluate.evaluate(loaded, out, tmp_path)}
    assert verdicts["t.bias"].failed_fits == ("figure-3.json",)
    assert verdicts["t.other"].failed_fits == ()  # read after figure-3.json, but does not rest on it
    report = render.PaperReport("toy", list(verdicts.values()), out, file)
    markdown = render.markdown([report], _provenance(tmp_path))
    bias_row = next(line for line in markdown.splitlines() if "`t.bias`" in line)
    other_row = next(line for line in markdown.splitlines() if "`t.other`" in line)
    assert render.FIT_WARNING in bias_row and "figure-3.json" in bias_row
    assert render.FIT_WARNING not in other_row
    # A fit that failed only under protocol=paper_text is named too, as the paper's text's.
    import dataclasses

    from testtask.report.paper_report import detail

    clean = dataclasses.replace(verdicts["t.bias"], failed_fits=())
    assert render.FIT_WARNING not in detail(clean)
    assert "(paper's text): figure-3.json" in detail(clean, verdicts["t.bias"])
    page = render.html_page([report], _provenance(tmp_path), tmp_path / "report")
    assert render.FIT_WARNING in page


def _provenance(tmp_path):
    from testtask.report import provenance

    return provenance.Provenance("abc", False, "testtask action=report", "now", tmp_path)


def test_figure_7_warns_once_per_panel_naming_the_failing_slices(caplog):
    from testtask.pretrain_on_test.meta_analysis_figures import SHOWN_SLICES, SliceFit, _check_slices

    settings = {"noncentered_t": False, "target_accept": 0.8, "refit": None}
    good = SliceFit(
        mean=0.0, hdi_low=-0.1, hdi_high=0.1, r_hat=1.0, ess_bulk=1000.0, divergences=0, **settings
    )
    bad = SliceFit(
        mean=0.0, hdi_low=-0.1, hdi_high=0.1, r_hat=1.3, ess_bulk=1000.0, divergences=2, **settings
    )
    fits = [good, bad] + [bad] * (SHOWN_SLICES + 1)
    with caplog.at_level(logging.WARNING, logger="testtask"):
        checked = _check_slices("pretrain-on-test figure 7, meta m=100 n=500 bias", fits, LIMITS)
    assert [bool(found) for found in checked] == [False] + [True] * (SHOWN_SLICES + 2)
    (message,) = [r.getMessage() for r in caplog.records]
    assert message.startswith("fit diagnostics failed for pretrain-on-test figure 7, meta m=100 n=500 bias")
    assert f"{SHOWN_SLICES + 2} of {SHOWN_SLICES + 3} slice fits" in message
    assert f"slice 1: {TREATMENT} r_hat 1.3 > 1.01, divergences 2 > 0" in message and "and 2 more" in message
