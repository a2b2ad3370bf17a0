"""pretrain-on-test's claims ledger (conf/claims/pretrain-on-test.yaml) and its report functions: the ledger
validates, every claim resolves against sidecars built from synthetic data or says why it cannot, the named
functions apply the one zero rule, and `testtask action=report` renders a page whose every figure loads."""

from __future__ import annotations

import json

import pytest

from tests.conftest import write_accuracies
from tests.test_report import check_page
from testtask.pipeline import compose, run
from testtask.pretrain_on_test import registry
from testtask.pretrain_on_test import report as functions
from testtask.report import evaluate, ledger
from testtask.report.main import ledger_file, load_ledger

FAST = ["sampler.draws=200", "sampler.tune=200", "sampler.chains=2", "sampler.progressbar=false", "seed=3"]
PAPER = "pretrain-on-test"


def test_ledger_validates_and_names_only_hook_functions():
    loaded = load_ledger(PAPER)
    assert loaded is not None and loaded.file == ledger_file(PAPER)
    ids = [c.id for c in loaded.claims]
    assert len(ids) == len(set(ids)) == 51
    assert loaded.functions() <= set(registry.PAPER.report)
    table_1 = [c for c in loaded.claims if c.id.startswith("pot.table1")]
    assert len(table_1) == 32  # (a) and (b): BERT and GPT-2, 4 n, boost and bias
    for claim in table_1:
        m = 50 if claim.id.startswith("pot.table1a") else 100
        assert claim.needs == (f"accuracies_from_paper/m{m}",)
        assert claim.rule.params["digits"] == (1 if claim.id.endswith("boost") else 2)


def _config(tmp_path, *extra):
    return compose(
        [
            f"data.dest={tmp_path / 'published'}",
            f"figures_dir={tmp_path / 'figures'}",
            f"cache_dir={tmp_path / 'cache'}",
            f"report.out_dir={tmp_path / 'report'}",
            f"paper={PAPER}",
            "pretrain_on_test.permutation_test.permutations=200",
            "pretrain_on_test.figure_8.permutations=3",
            *FAST,
            *extra,
        ]
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory, monkeypatch_module):
    """A synthetic release (few-shot m = 50 only, zero-shot padding, GPT-2 2 epochs; no m = 100, no packing),
    its tables and Figures 3, 6 and 8 built, and the report run on them."""
    tmp_path = tmp_path_factory.mktemp("claims")
    mirror = tmp_path / "mirror" / "pretrain_on_test"
    few = dict(m=50, n=50, lm_types=["bert", "gpt2"], datasets=3, subsamples=4)
    write_accuracies(mirror, "accuracies_from_paper", **few)
    write_accuracies(mirror, "accuracies_zero_shot", 100, 100, ["mistral-qlora-zero-shot"], 3, 4, seed=1)
    write_accuracies(mirror, "accuracies_gpt2_epochs_2", 50, 50, ["gpt2"], 3, 4, seed=2)
    monkeypatch_module.setenv("TESTTASK_DATA_MIRROR", str(tmp_path / "mirror"))
    run(_config(tmp_path, "action=data"))
    run(_config(tmp_path, "action=tables"))
    for number in (3, 6, 8):
        run(_config(tmp_path, "action=figure", f"figure={number}"))
    # synthetic data: its differences are not the paper's, so none has a category (listed, not raised)
    summary = run(_config(tmp_path, "action=report", "report.require_categories=false"))
    return tmp_path, summary


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_every_claim_resolves_or_says_why(built):
    tmp_path, summary = built
    claims = {c["id"]: c for c in summary["papers"][PAPER]["claims"]}
    assert len(claims) == 51
    for claim in claims.values():
        assert claim["status"] in evaluate.STATUSES
        if claim["status"] == evaluate.NOT_COMPUTABLE:
            assert claim["reason"], claim["id"]
        else:
            assert claim["ours"] is not None, claim["id"]
    # present inputs and built outputs: computed
    for cid in (
        "pot.table1a.bert.n50.boost",
        "pot.table1a.gpt2.n50.bias",
        "pot.s9.bias_signs",
        "pot.s9.p_values",
        "pot.s8.p_values",
        "pot.s9.fig6.padding.boost",
        "pot.s9.fig6.padding.bias",
    ):
        assert claims[cid]["status"] != evaluate.NOT_COMPUTABLE, claims[cid]
    # m = 100 and packing are absent: not computable, naming the input and how to get it
    for cid in ("pot.table1b.gpt2.n500.bias", "pot.s7.bias_signs", "pot.appf.fig8.null_spread"):
        assert claims[cid]["missing"] == ["accuracies_from_paper/m100"]
        assert "make data PAPER=pretrain-on-test" in claims[cid]["command"]
    assert claims["pot.appf.fig8.null_spread"]["ours"]  # still shown on the data present
    assert claims["pot.s91.p_values"]["missing"] == ["accuracies_zero_shot_packing"]
    # an output not built: named, with the command that builds it
    assert claims["pot.s8.boost_negative"]["missing"] == ["figure-5.json"]
    assert claims["pot.s8.boost_negative"]["command"] == "make figure-5 PAPER=pretrain-on-test"
    assert claims["pot.s10.fig7.zero_shot_share"]["missing"] == ["figure-7.json"]
    # a configuration the synthetic release lacks (n = 100): the path says which row is absent
    assert "0 items match" in claims["pot.table1a.bert.n100.boost"]["reason"]
    counts = summary["papers"][PAPER]["counts"]
    assert sum(counts.values()) == 51 and counts["matches"] + counts["differs"] >= 9


def test_report_page_and_markdown(built):
    tmp_path, summary = built
    out = tmp_path / "report" / "published" / PAPER  # paths.output_dir, then the paper's own folder
    images = check_page(out / "index.html")
    assert {i.name for i in images} == {"figure-3.png", "figure-6.png", "figure-8.png"}
    markdown = (out / "REPRODUCTION.md").read_text()
    assert (
        "`pot.table1b.bert.n50.boost`" in markdown and "missing input accuracies_from_paper/m100" in markdown
    )
    assert (
        json.loads((out / "report.json").read_text())["papers"][PAPER]["counts"]
        == summary["papers"][PAPER]["counts"]
    )
    releases = summary["provenance"]["releases"]
    assert releases[0]["paper"] == PAPER and "accuracies_zero_shot/m100" in releases[0]["subsets"]


@pytest.mark.slow
def test_report_page_in_a_headless_browser(built):
    """Every figure of index.html loads in a real browser (playwright's Chromium) when one can be had; without
    one (none is installed here, and its browsers do not come from PyPI) the page is parsed and each image is
    opened with PIL instead."""
    tmp_path, _ = built
    page_file = tmp_path / "report" / "published" / PAPER / "index.html"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        assert check_page(page_file)
        return
    with sync_playwright() as p:
        browser = p.chromium.launch()
        page = browser.new_page()
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        broken = page.evaluate(
            "Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).length"
        )
        total = page.evaluate("document.images.length")
        browser.close()
    assert total == 3 and broken == 0


def test_functions_apply_the_zero_rule():
    rows = [
        {"collection": "zs", "m": 100, "n": 100, "dataset": "a", "mean_difference": -2.8e-18},
        {"collection": "zs", "m": 100, "n": 100, "dataset": "b", "mean_difference": 0.02},
        {"collection": "zs", "m": 100, "n": 100, "dataset": "c", "mean_difference": -0.003},
        {"collection": "fs", "m": 50, "n": 50, "dataset": "a", "mean_difference": 0.004},
        {"collection": "fs", "m": 50, "n": 100, "dataset": "a", "mean_difference": -0.004},  # averages to 0
    ]
    table = {
        "collections": {"few_shot": "fs", "zero_shot": "zs"},
        "absent_collections": {"overtrained": "ot"},
        "counts": {
            "fs": {
                "negative_boost": {
                    "tasks": ["x", "y", "z"],
                    "values": [-0.02, -0.004, -1.8e-19],
                }
            }
        },
    }
    sidecars = {"table-2.csv": rows, "table-2.json": table}
    zero = functions.zero_shot_bias_signs(sidecars)
    assert (zero["positive"], zero["negative"], zero["zero"], zero["zero_tasks"]) == (1, 1, 1, ["a"])
    assert zero["max_abs_bias_task"] == "b" and not zero["all_abs_below_1pct"]
    few = functions.few_shot_bias_signs(sidecars)
    assert (few["positive"], few["negative"], few["zero"]) == (0, 0, 1)
    boost = functions.few_shot_negative_boost(sidecars)
    assert boost["count"] == 2 and boost["tasks"] == ["x", "y"] and not boost["all_greater_than_minus_1pct"]
    with pytest.raises(LookupError, match="no rows of ot"):
        functions.task_bias_averages(sidecars, "overtrained")
    with pytest.raises(LookupError, match="names no zero_shot_packing"):
        functions.task_bias_averages(sidecars, "zero_shot_packing")


def test_model_checks_and_correlation_spread():
    panel = {"divergences": 1, "beta": {"r_hat": 1.004, "ess_bulk": 900.0}}
    failed = {
        "statistic": "ess_bulk",
        "value": 366.19,
        "limit": 400.0,
        "parameter": "1|dataset:subsample_sigma",
    }
    refitted = {
        **panel,
        "m": 100,
        "n": 50,
        "effect": "boost",
        "lm_types": ["gpt2-epochs-2"],
        "refit": {
            "refitted": True,
            "kept": 2,
            "attempts": [
                {"failures": [failed]},
                {"failures": [{**failed, "statistic": "r_hat"}]},
                {"failures": []},
            ],
        },
    }
    diverged = {
        **refitted,
        "n": 100,
        "effect": "bias",
        "refit": {
            "refitted": True,
            "kept": 1,
            "attempts": [
                {"failures": [{"statistic": "divergences", "value": 1, "limit": 0, "parameter": None}]},
                {"failures": []},
            ],
        },
    }
    checks = functions.model_checks(
        {
            "figure-3.json": {"panels": [panel, panel]},
            "figure-6.json": {"panels": [panel, refitted, diverged]},
        }
    )
    assert (
        checks["divergences"] == 5 and checks["fits"] == 5 and checks["outputs"] == ["figure-3", "figure-6"]
    )
    # a refitted fit names its first attempt's failures (as the diagnostics warning words them) and the attempt
    # kept; the others are not listed
    assert checks["refits"] == [
        "figure-6 gpt2-epochs-2 m=100 n=50 boost: 1|dataset:subsample_sigma ess_bulk 366.2 < 400; "
        "kept attempt 3 of 3",
        "figure-6 gpt2-epochs-2 m=100 n=100 bias: divergences 1 > 0; kept attempt 2 of 2",
    ]
    with pytest.raises(KeyError):
        functions.model_checks({})
    figure_8 = {
        "panels": {
            "a": {"bias": {"sd": 0.164, "n": 200}},
            "b": {"permutations": [{"sd": 0.141}, {"sd": 0.161}]},
        }
    }
    spread = functions.correlation_spread({"figure-8.json": figure_8})
    assert spread == {
        "within_null_range": False,
        "observed_sd": 0.164,
        "null_sd_range": [0.141, 0.161],
        "cells": 200,
        "nulls": 2,
    }


def test_a_claim_naming_a_missing_function_is_refused(tmp_path):
    text = ledger_file(PAPER).read_text().replace("function: model_checks", "function: model_check")
    (tmp_path / "pot.yaml").write_text(text)
    loaded = ledger.load(tmp_path / "pot.yaml", PAPER)
    with pytest.raises(ledger.LedgerError, match="claim pot.appe1.divergences, field 'ours.function'"):
        ledger.check_functions(loaded, registry.PAPER.report)
