"""The named functions of downstream-predictability's claims ledger (conf/claims/downstream-predictability.yaml):
values a path into one sidecar cannot give. Each gets the paper's sidecars (file name -> JSON) and returns a small
mapping whose keys the ledger's `paper` value names (rule `equal`: only the paper's keys are judged, the rest is
shown).

The sidecars are built from our own families (source=results); the paper's families' per-sample logs are not
released, so these functions check the paper's mechanism qualitatively: signs and orderings, never its values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from testtask.report.rules import ZERO_TOLERANCE

RANK_METHODS = ("spearman", "kendall")
CHAIN = ("log_p_vocab", "p_vocab", "p_choices", "brier", "accuracy")
THRESHOLD = "fraction_above_0.75"  # a key with a dot: the path language cannot reach it


def rank_transform_unchanged(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§3, Figure 3A: for rank correlations, exp() (log p_vocab -> p_vocab) leaves every statistic unchanged."""
    figure = sidecars["figure-4.json"]
    statistics = list(figure["statistics"])
    index = {(r["family"], r["task"], r["method"], r["quantity"]): r for r in figure["rows"]}
    differences = []
    for (family, task, method, quantity), row in index.items():
        if method not in RANK_METHODS or quantity != "log_p_vocab":
            continue
        other = index.get((family, task, method, "p_vocab"))
        if other is None:
            continue
        differences += [abs(float(row[s]) - float(other[s])) for s in statistics if row[s] is not None]
    if not differences:
        raise LookupError("figure-4.json has no Spearman or Kendall rows of both log_p_vocab and p_vocab")
    largest = max(differences)
    return {
        "unchanged": largest <= ZERO_TOLERANCE,
        "max_abs_difference": largest,
        "cases": len(differences),
    }


def focus_share_above_075(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§3, Figure 3: Figure 3's benchmark, share of samples whose correlation exceeds 0.75, along the chain; does it
    fall from log p_vocab to p_choices in every family?"""
    figure = sidecars["figure-3.json"]
    panels = figure["panels"]
    families: dict[str, dict[str, float]] = {}
    for quantity in CHAIN:
        for family, panel in panels.get(quantity, {}).items():
            families.setdefault(family, {})[quantity] = round(float(panel["summary"][THRESHOLD]), 4)
    complete = {f: s for f, s in families.items() if "log_p_vocab" in s and "p_choices" in s}
    if not complete:
        raise LookupError("figure-3.json has no family with both log_p_vocab and p_choices panels")
    tasks = sorted({p["task"] for by_family in panels.values() for p in by_family.values()})
    return {
        "falls_to_p_choices": all(s["p_choices"] < s["log_p_vocab"] for s in complete.values()),
        "task": tasks[0] if len(tasks) == 1 else tasks,
        "method": figure.get("method"),
        "share": complete if len(complete) > 1 else next(iter(complete.values())),
    }


def _ordering(sidecars: Mapping[str, Any], step: str) -> dict[str, Any]:
    """Figure 4: of the (family, task, method, statistic) cases, in how many does `step` hold?"""
    ordering = sidecars["figure-4.json"]["ordering"]
    if step not in ordering:
        raise LookupError(f"figure-4.json has no ordering step {step!r} (it has {', '.join(ordering)})")
    cases = ordering[step]["cases"]
    if not cases:
        raise LookupError(f"figure-4.json: no case of {step!r} has both statistics defined")
    held = sum(bool(c["holds"]) for c in cases)
    total, per_method = Counter(c["method"] for c in cases), Counter(c["method"] for c in cases if c["holds"])
    return {
        "holds_in_most": held > len(cases) / 2,
        "held": held,
        "cases": len(cases),
        "by_method": {m: f"{per_method[m]} / {n}" for m, n in total.items()},
    }


ordering_log_p_vocab_p_vocab = partial(_ordering, step="log_p_vocab >= p_vocab")
ordering_p_vocab_p_choices = partial(_ordering, step="p_vocab > p_choices")
ordering_p_choices_brier = partial(_ordering, step="p_choices >= brier")
ordering_brier_accuracy = partial(_ordering, step="brier > accuracy")


def brier_more_predictable(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§4, Figure 5 (right): is the Brier score more predictable from p_choices than accuracy is (|Spearman| of the
    (question, member) points), on every task of the figure?"""
    panels = sidecars["figure-5.json"]["panels"]
    by_task: dict[str, dict[str, float]] = {}
    for panel in panels:
        if panel["x"] == "p_choices" and panel["y"] in ("brier", "accuracy"):
            by_task.setdefault(panel["task"], {})[panel["y"]] = round(abs(float(panel["spearman"])), 4)
    complete = {t: v for t, v in by_task.items() if {"brier", "accuracy"} <= set(v)}
    if not complete:
        raise LookupError("figure-5.json has no task with both p_choices -> brier and p_choices -> accuracy")
    return {
        "brier_more_predictable": all(v["brier"] > v["accuracy"] for v in complete.values()),
        "abs_spearman": complete,
    }


FUNCTIONS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "rank_transform_unchanged": rank_transform_unchanged,
    "focus_share_above_075": focus_share_above_075,
    "ordering_log_p_vocab_p_vocab": ordering_log_p_vocab_p_vocab,
    "ordering_p_vocab_p_choices": ordering_p_vocab_p_choices,
    "ordering_p_choices_brier": ordering_p_choices_brier,
    "ordering_brier_accuracy": ordering_brier_accuracy,
    "brier_more_predictable": brier_more_predictable,
}
