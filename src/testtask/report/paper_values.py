"""The shape a claim's `paper` value must have for its rule, checked when the ledger is read (on evaluation a
mistake would show as "not computable on this data": a ledger error disguised as missing data).

| kind | paper |
|---|---|
| `round`, `tolerance`, `within_se` | a number, a non-empty list of numbers or a non-empty mapping of numbers |
| `sign` | `positive`, `negative` or `zero` |
| `equal` | any value |
| `count` | a non-negative whole number |
| `share` | a number |
| `all`, `significance` | the paper's words (a non-empty string); the rule reads only ours |

When `ours.path` is a list of k paths, ours is a list of k values: a `round`, `tolerance` or `equal` (without
`as_set`) claim's paper value must then be a list of k values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _numbers(paper: Any) -> str | None:
    """Why `paper` is not a number, a list of numbers or a mapping of numbers (None when it is)."""
    if _is_number(paper):
        return None
    if isinstance(paper, (list, tuple, Mapping)):
        values = list(paper.values()) if isinstance(paper, Mapping) else list(paper)
        if not values:
            return "is empty; a number, a list of numbers or a mapping of numbers is wanted"
        bad = [v for v in values if not _is_number(v)]
        return f"holds {bad[0]!r}, which is not a number" if bad else None
    return f"must be a number, a list of numbers or a mapping of numbers, got {paper!r}"


def problem(kind: str, paper: Any, params: Mapping[str, Any], n_paths: int | None) -> str | None:
    """Why `paper` does not fit rule `kind` (None when it does); `n_paths`: the length of a list `ours.path`."""
    if kind in ("round", "tolerance", "within_se"):
        why = _numbers(paper)
        if why:
            return f"rule {kind}: the paper's value {why}"
    elif kind == "sign" and paper not in ("positive", "negative", "zero"):
        return f"rule sign wants positive, negative or zero, got {paper!r}"
    elif kind == "count":
        whole = _is_number(paper) and float(paper).is_integer() and paper >= 0
        if not whole:
            return f"rule count wants the paper's count (a non-negative whole number), got {paper!r}"
    elif kind == "share" and not _is_number(paper):
        return f"rule share wants the paper's share (a number), got {paper!r}"
    elif kind in ("all", "significance") and (not isinstance(paper, str) or not paper.strip()):
        return f"rule {kind} compares ours with its parameters; paper holds the paper's words (a string), got {paper!r}"
    lists_compared = kind in ("round", "tolerance", "within_se") or (
        kind == "equal" and not params.get("as_set")
    )
    if n_paths is not None and lists_compared:
        if not isinstance(paper, (list, tuple)) or len(paper) != n_paths:
            return (
                f"ours.path lists {n_paths} paths, so ours is a list of {n_paths} values: the paper's value must "
                f"be a list of {n_paths}, got {paper!r}"
            )
    return None
