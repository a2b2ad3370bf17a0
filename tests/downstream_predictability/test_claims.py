"""downstream-predictability's claims ledger (conf/claims/downstream-predictability.yaml) and its report functions:
the ledger validates and every note says its data are our CPU-mini family, the named functions give known answers
on small synthetic sidecars, and the report on the real sidecars (`make figures PAPER=downstream-predictability
SOURCE=results`, skipped when absent) has no claim failing on a path or a rule."""

from __future__ import annotations

import pytest

from testtask.downstream_predictability import registry
from testtask.downstream_predictability import report as functions
from testtask.paths import resolve
from testtask.pipeline import compose, run
from testtask.report import evaluate
from testtask.report.main import ledger_file, load_ledger

PAPER = "downstream-predictability"
STATISTICS = ["mean", "median", "auc_ccdf", "neg_wasserstein"]


def test_ledger_validates_and_every_note_names_our_family():
    loaded = load_ledger(PAPER)
    assert loaded is not None and loaded.file == ledger_file(PAPER)
    ids = [c.id for c in loaded.claims]
    assert len(ids) == len(set(ids)) == 10
    assert loaded.functions() == set(registry.PAPER.report) == set(functions.FUNCTIONS)
    for claim in loaded.claims:
        assert claim.note and "CPU-mini family" in claim.note and "not the paper's" in claim.note, claim.id
        assert claim.rule.kind in ("equal", "sign", "all") and not claim.needs  # qualitative, on our runs
    # the three that differ on our family carry a category: the paper's per-sample scores are not released
    kinds = {c.id: c.category.kind for c in loaded.claims if c.category}
    assert kinds == {
        "dp.s3.fig3.share_above_075_falls": "release-gap",
        "dp.s3.fig4.p_choices_ge_brier": "release-gap",
        "dp.s5.fig6.incorrect_mass_increases": "release-gap",
    }


def _row(task, method, quantity, value, **extra):
    return (
        {"family": "f", "task": task, "method": method, "quantity": quantity}
        | {s: value for s in STATISTICS}
        | extra
    )


def test_rank_transform_unchanged():
    rows = [
        _row("a", "spearman", "log_p_vocab", 0.3),
        _row("a", "spearman", "p_vocab", 0.3),
        _row("a", "kendall", "log_p_vocab", 0.2),
        _row("a", "kendall", "p_vocab", 0.2 + 1e-15),  # rounding, not a change
        _row("a", "pearson", "log_p_vocab", 0.5),
        _row("a", "pearson", "p_vocab", 0.4),  # exp changes Pearson: not a rank method, not counted
    ]
    figure = {"statistics": STATISTICS, "rows": rows}
    result = functions.rank_transform_unchanged({"figure-4.json": figure})
    assert result["unchanged"] and result["cases"] == 8 and result["max_abs_difference"] < 1e-14
    rows[3] = _row("a", "kendall", "p_vocab", 0.25)
    assert not functions.rank_transform_unchanged({"figure-4.json": figure})["unchanged"]
    with pytest.raises(LookupError, match="no Spearman or Kendall rows"):
        functions.rank_transform_unchanged({"figure-4.json": {"statistics": STATISTICS, "rows": rows[4:]}})


def _panel(share):
    return {"task": "arc_challenge", "summary": {"fraction_above_0.75": share}}


def test_focus_share_above_075():
    panels = {
        "log_p_vocab": {"f": _panel(0.9), "g": _panel(0.8)},
        "p_vocab": {"f": _panel(0.9), "g": _panel(0.8)},
        "p_choices": {"f": _panel(0.4), "g": _panel(0.85)},
    }
    figure = {"method": "spearman", "panels": panels}
    result = functions.focus_share_above_075({"figure-3.json": figure})
    assert not result["falls_to_p_choices"]  # g rises
    assert result["share"]["f"] == {"log_p_vocab": 0.9, "p_vocab": 0.9, "p_choices": 0.4}
    del panels["log_p_vocab"]["g"]
    result = functions.focus_share_above_075({"figure-3.json": figure})
    assert result["falls_to_p_choices"] and result["task"] == "arc_challenge"
    with pytest.raises(LookupError, match="no family"):
        functions.focus_share_above_075({"figure-3.json": {"panels": {"p_choices": {"f": _panel(0.4)}}}})


def test_ordering_steps_hold_in_most_cases():
    def case(method, holds):
        return {"family": "f", "task": "a", "method": method, "statistic": "mean", "holds": holds}

    ordering = {
        "p_vocab > p_choices": {
            "cases": [case("pearson", True), case("kendall", True), case("kendall", False)]
        },
        "p_choices >= brier": {"cases": [case("pearson", True), case("kendall", False)]},  # half is not most
        "brier > accuracy": {"cases": []},
    }
    sidecars = {"figure-4.json": {"ordering": ordering}}
    result = functions.ordering_p_vocab_p_choices(sidecars)
    assert result == {
        "holds_in_most": True,
        "held": 2,
        "cases": 3,
        "by_method": {"pearson": "1 / 1", "kendall": "1 / 2"},
    }
    assert not functions.ordering_p_choices_brier(sidecars)["holds_in_most"]
    with pytest.raises(LookupError, match="no case"):
        functions.ordering_brier_accuracy(sidecars)
    with pytest.raises(LookupError, match="no ordering step 'log_p_vocab >= p_vocab'"):
        functions.ordering_log_p_vocab_p_vocab(sidecars)


def test_brier_more_predictable():
    panels = [
        {"task": "a", "x": "p_vocab", "y": "p_choices", "spearman": 0.99},
        {"task": "a", "x": "p_choices", "y": "accuracy", "spearman": 0.68},
        {"task": "a", "x": "p_choices", "y": "brier", "spearman": -0.89},  # Brier falls as p_choices rises
        {"task": "b", "x": "p_choices", "y": "brier", "spearman": -0.1},  # no accuracy panel: left out
    ]
    result = functions.brier_more_predictable({"figure-5.json": {"panels": panels}})
    assert result == {
        "brier_more_predictable": True,
        "abs_spearman": {"a": {"accuracy": 0.68, "brier": 0.89}},
    }
    panels[1]["spearman"] = 0.95
    assert not functions.brier_more_predictable({"figure-5.json": {"panels": panels}})[
        "brier_more_predictable"
    ]
    with pytest.raises(LookupError, match="no task"):
        functions.brier_more_predictable({"figure-5.json": {"panels": panels[:1]}})


def test_report_on_the_real_sidecars(tmp_path):
    """On the figures built from our runs under figures/ (skipped when absent): every claim is computed, none
    fails on a path or a rule, through `testtask action=report`."""
    figures = resolve(compose([f"paper={PAPER}"]).figures_dir)
    folder = figures / PAPER / "results-cpu-mini"  # paths.output_dir of source=results, the default run
    if not all((folder / f"figure-{n}.json").is_file() for n in (3, 4, 5, 6)):
        pytest.skip(f"{folder} lacks figures 3-6 (make figures PAPER={PAPER} SOURCE=results)")
    summary = run(
        compose(
            [
                f"paper={PAPER}",
                "action=report",
                "source=results",
                f"figures_dir={figures}",
                f"report.out_dir={tmp_path / 'report'}",
            ]
        )
    )
    claims = summary["papers"][PAPER]["claims"]
    assert len(claims) == 10
    for claim in claims:
        assert claim["status"] in (evaluate.MATCHES, evaluate.DIFFERS), claim
    by_id = {c["id"]: c for c in claims}
    assert by_id["dp.s3.fig3a.rank_unchanged"]["status"] == evaluate.MATCHES  # exp is monotone: any family
    assert by_id["dp.s4.fig5.accuracy_above_half"]["status"] == evaluate.MATCHES  # an identity of the chain
