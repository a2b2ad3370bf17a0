"""The named functions of proxy-tasks' claims ledger (conf/claims/proxy-tasks.yaml): values a path into one sidecar
cannot give. Each gets the paper's sidecars (file name -> JSON) and returns a small mapping whose keys the ledger's
`paper` value names (rule `equal`: only the paper's keys are judged, the rest is shown).

§4.2's reading of Table 5 is checked on table-5.json's `rows`: R recomputed with the paper's formula from the small
models' scores it prints in Table 4. §4.1's reading of Table 3 is checked on table-3.json: Algorithm 1 on our
matrices (the paper's OpenCompass matrix is not released), with Kendall dominating when its mean s is ≥ and its
mean r is > those of Pearson and Spearman, the paper's criterion (§3.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from testtask.proxy_tasks.settings import Metric

NLI_TASKS = ("CMNLI", "OCNLI", "RTE")  # §4.2: "the language inference tasks"


def _ratios(sidecars: Mapping[str, Any]) -> dict[str, float]:
    return {task: float(row["ratio"]) for task, row in sidecars["table-5.json"]["rows"].items()}


def _by_ratio(ratios: Mapping[str, float]) -> list[str]:
    return sorted(ratios, key=lambda task: -ratios[task])


def most_robust_tasks(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§4.2: the two tasks with the highest R (from Table 4), and every task's rank."""
    ratios = _ratios(sidecars)
    order = _by_ratio(ratios)
    return {
        "highest_two": order[:2],
        "ranking": order,
        "ratio": {task: round(ratios[task], 2) for task in order},
    }


def most_robust_nli_task(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§4.2: the language inference task (CMNLI, OCNLI, RTE) with the highest R (from Table 4)."""
    ratios = {task: r for task, r in _ratios(sidecars).items() if task in NLI_TASKS}
    if not ratios:
        raise LookupError(f"table-5.json has none of the language inference tasks {', '.join(NLI_TASKS)}")
    order = _by_ratio(ratios)
    return {"best": order[0], "ratio": {task: round(ratios[task], 2) for task in order}}


def kendall_dominates(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§4.1, Table 3: is Kendall's (mean s, mean r) ≥ / > Pearson's and Spearman's in every configuration?"""
    rows = sidecars["table-3.json"]["rows"]
    if not rows:
        raise LookupError("table-3.json has no rows")
    failing = []
    for row in rows:
        metrics = row["metrics"]
        kendall = metrics[Metric.kendall]
        others = [metrics[m] for m in Metric if m != Metric.kendall]
        if not all(kendall["s_mean"] >= o["s_mean"] and kendall["r_mean"] > o["r_mean"] for o in others):
            failing.append(f"{row['matrix']} n={row['n']} k={row['k']}")
    return {
        "every_configuration": not failing,
        "dominates": len(rows) - len(failing),
        "configurations": len(rows),
        "matrices": sorted({str(row["matrix"]) for row in rows}),
        "failing": failing,
    }


FUNCTIONS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "most_robust_tasks": most_robust_tasks,
    "most_robust_nli_task": most_robust_nli_task,
    "kendall_dominates": kendall_dominates,
}
