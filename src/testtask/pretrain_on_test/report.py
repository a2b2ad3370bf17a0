"""The named functions of pretrain-on-test's claims ledger (conf/claims/pretrain-on-test.yaml): values a path into
one sidecar cannot give. Each gets the paper's sidecars and applies the report's one rule for zero
(`testtask.report.rules.sign`). Task averages weight the configurations equally, as `permutation.task_averages`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from testtask import diagnostics
from testtask.report.rules import sign


class NoRows(LookupError):
    """table-2.csv has no rows of the collection asked for."""


def _collection(sidecars: Mapping[str, Any], role: str) -> str:
    """The release folder of collection `role` (few_shot, zero_shot, ...) as table-2.json records it."""
    table = sidecars["table-2.json"]
    names = {**table.get("absent_collections", {}), **table.get("collections", {})}
    if role not in names:
        raise NoRows(f"table-2.json names no {role} collection")
    return str(names[role])


def task_bias_averages(sidecars: Mapping[str, Any], role: str) -> dict[str, float]:
    """Per task of collection `role`: the average bias over every (m, n, LM type) present."""
    collection = _collection(sidecars, role)
    per_task: dict[str, list[float]] = defaultdict(list)
    for row in sidecars["table-2.csv"]:
        if row["collection"] == collection:
            per_task[str(row["dataset"])].append(float(row["mean_difference"]))
    if not per_task:
        raise NoRows(f"table-2.csv has no rows of {collection}")
    return {task: sum(values) / len(values) for task, values in sorted(per_task.items())}


def _bias_signs(sidecars: Mapping[str, Any], role: str) -> dict[str, Any]:
    averages = task_bias_averages(sidecars, role)
    signs = [sign(v) for v in averages.values()]
    worst = max(averages, key=lambda t: abs(averages[t]))
    return {
        "positive": signs.count(1),
        "negative": signs.count(-1),
        "zero": signs.count(0),
        "zero_tasks": [t for t, s in zip(averages, signs, strict=True) if s == 0],
        "all_abs_below_1pct": all(abs(v) < 0.01 for v in averages.values()),
        "max_abs_bias_pct": round(100 * abs(averages[worst]), 4),
        "max_abs_bias_task": worst,
    }


def few_shot_bias_signs(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§7: tasks with a positive / negative / zero average bias (BERT and GPT-2, every m and n present)."""
    return _bias_signs(sidecars, "few_shot")


def zero_shot_bias_signs(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§9: the same for zero-shot Mistral-7B (padding)."""
    return _bias_signs(sidecars, "zero_shot")


def few_shot_negative_boost(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§7: tasks whose average boost is negative (zero rule applied to table-2.json's values)."""
    table = sidecars["table-2.json"]
    collection = _collection(sidecars, "few_shot")
    if collection not in table.get("counts", {}):
        raise NoRows(f"table-2.json has no counts of {collection}")
    negative = table["counts"][collection]["negative_boost"]
    pairs = [(t, v) for t, v in zip(negative["tasks"], negative["values"], strict=True) if sign(v) < 0]
    return {
        "count": len(pairs),
        "tasks": [t for t, _ in pairs],
        "all_greater_than_minus_1pct": all(v > -0.01 for _, v in pairs),
        "min_pct": round(100 * min((v for _, v in pairs), default=0.0), 4),
    }


def _refit_reason(output: str, panel: Mapping[str, Any]) -> str:
    """What made a fit refit and which attempt was kept, e.g. "figure-5 gpt2-epochs-2 m=100 n=50 boost:
    1|dataset:subsample_sigma ess_bulk 366.2 < 400; kept attempt 3 of 3"."""
    refit = panel["refit"]
    why = "; ".join(diagnostics.Failure(**f).text() for f in refit["attempts"][0]["failures"])
    where = f"{output} {'+'.join(panel['lm_types'])} m={panel['m']} n={panel['n']} {panel['effect']}"
    return f"{where}: {why}; kept attempt {refit['kept'] + 1} of {len(refit['attempts'])}"


def model_checks(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. E.1: divergences and chain diagnostics of every hierarchical fit built (Figures 3, 5 and 6), and why
    each refitted fit was refitted (`pretrain_on_test.refit`)."""
    panels, outputs, refits = [], [], []
    for name in ("figure-3.json", "figure-5.json", "figure-6.json"):
        if name in sidecars:
            output = name.removesuffix(".json")
            panels += sidecars[name]["panels"]
            outputs.append(output)
            refits += [
                _refit_reason(output, p)
                for p in sidecars[name]["panels"]
                if p.get("refit", {}).get("refitted")
            ]
    if not panels:
        sidecars["figure-3.json"]  # raises MissingOutput naming it
    return {
        "divergences": sum(int(p["divergences"]) for p in panels),
        "fits": len(panels),
        "max_r_hat_beta": round(max(p["beta"]["r_hat"] for p in panels), 4),
        "min_ess_bulk_beta": round(min(p["beta"]["ess_bulk"] for p in panels)),
        "outputs": outputs,
        "refits": refits,
    }


def correlation_spread(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. F: is the observed spread (sd) of BERT–GPT-2 bias correlations within the permuted nulls' range?"""
    figure = sidecars["figure-8.json"]
    observed = figure["panels"]["a"]["bias"]
    null_sd = [p["sd"] for p in figure["panels"]["b"]["permutations"]]
    return {
        "within_null_range": min(null_sd) <= observed["sd"] <= max(null_sd),
        "observed_sd": round(observed["sd"], 3),
        "null_sd_range": [round(min(null_sd), 3), round(max(null_sd), 3)],
        "cells": observed["n"],
        "nulls": len(null_sd),
    }


FUNCTIONS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "few_shot_bias_signs": few_shot_bias_signs,
    "zero_shot_bias_signs": zero_shot_bias_signs,
    "few_shot_negative_boost": few_shot_negative_boost,
    "model_checks": model_checks,
    "correlation_spread": correlation_spread,
}
