"""The comparison rules of a claim: a small closed set of kinds, each a function (ours, paper, params) -> Outcome.

| kind | params | matches when |
|---|---|---|
| `round` | `digits` | ours rounded to the paper's printed precision equals the paper's value (number, list or mapping) |
| `tolerance` | `abs` and/or `rel` | abs(ours − paper) ≤ abs + rel·abs(paper) (element-wise) |
| `sign` | — | every value of ours has the sign the paper states (`positive`, `negative`, `zero`) |
| `equal` | `as_set` (optional) | ours equals the paper's value (counts, names); for a mapping only the paper's keys count |
| `all` | `op`, `than` (for comparisons) | every item of ours satisfies the predicate |
| `count` | `op`, `than` | the number of items of ours satisfying the predicate equals the paper's count |
| `share` | `op`, `than`, `digits`, `scale` | that share (× scale), rounded to `digits`, equals the paper's |
| `significance` | `alpha`, `expect` | every p-value of ours is < alpha (`significant`) or ≥ alpha (`not_significant`) |
| `within_se` | `se`, `k` (default 2) | abs(ours − paper) ≤ k·se (element-wise): a Monte Carlo estimate judged against its standard error `se` (in ours' units, after `scale`), not by exact rounding |

Every kind uses one zero rule (testtask.signs). Rounding is half away from zero on the value's shortest decimal
form (`Decimal(repr(x))`): 0.125 → 0.13 and 2.675 → 2.68 at two digits, and −0.001 → 0.00.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from testtask.signs import ZERO_RULE, ZERO_TOLERANCE, is_zero, sign  # noqa: F401 - re-exported


class RuleError(ValueError):
    """A value of the wrong shape for the rule (a list where a number is wanted, lengths that differ, ...)."""


@dataclass(frozen=True)
class Outcome:
    matches: bool
    ours: str  # ours, as shown
    difference: str | None = None  # by how much it differs (None when it matches)


def round_half_away(x: float, digits: int) -> Decimal:
    """`x` rounded half away from zero at `digits` decimals, on its shortest decimal form; −0 becomes 0."""
    value = Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return value + 0  # Decimal('-0.00') + 0 == Decimal('0.00')


def fmt(value: Any, digits: int | None = None) -> str:
    """A value as the report shows it."""
    if isinstance(value, bool | int) or value is None:
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if digits is not None:
            return f"{value:.{digits}f}"
        return f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {fmt(v, digits)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        shown = [fmt(v, digits) for v in value[:12]]
        more = f", … ({len(value)} in all)" if len(value) > 12 else ""
        return "[" + ", ".join(shown) + more + "]"
    return str(value)


def _pairs(ours: Any, paper: Any) -> list[tuple[str, Any, Any]]:
    """(label, ours, paper) element pairs of two numbers, two equal-length lists or two mappings (paper's keys)."""
    if isinstance(paper, Mapping):
        if not isinstance(ours, Mapping):
            raise RuleError(f"the paper's value is a mapping, ours is {type(ours).__name__}")
        missing = [k for k in paper if k not in ours]
        if missing:
            raise RuleError(f"ours has no {', '.join(map(str, missing))}")
        return [(str(k), ours[k], paper[k]) for k in paper]
    if isinstance(paper, (list, tuple)):
        if not isinstance(ours, (list, tuple)) or len(ours) != len(paper):
            raise RuleError(f"the paper lists {len(paper)} values, ours is {fmt(ours)}")
        return [(str(i), o, p) for i, (o, p) in enumerate(zip(ours, paper, strict=True))]
    return [("", ours, paper)]


def _number(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise RuleError(f"{what} is not a number: {x!r}")
    return float(x)


def _differences(rows: list[tuple[str, float, float]], digits: int | None) -> str:
    spec = f"+.{digits}f" if digits is not None else "+.3g"
    return "; ".join(f"{label + ': ' if label else ''}{o - p:{spec}}" for label, o, p in rows)


def rule_round(ours: Any, paper: Any, digits: int) -> Outcome:
    bad = []
    for label, o, p in _pairs(ours, paper):
        o, p = _number(o, "ours"), _number(p, "the paper's value")
        if round_half_away(o, digits) != round_half_away(p, digits):
            bad.append((label, o, p))
    shown, exact = fmt(ours, digits), fmt(ours, digits + 2)
    # two more places than the paper prints: not the exact value (an output may itself be of rounded numbers)
    ours_text = shown if shown == exact else f"{shown} ({exact} before rounding)"
    return Outcome(not bad, ours_text, _differences(bad, digits + 2) if bad else None)


def rule_tolerance(ours: Any, paper: Any, **limits: float) -> Outcome:
    """`limits`: `abs` and/or `rel` (keywords named as in the ledger)."""
    absolute, relative = float(limits.get("abs", 0.0)), float(limits.get("rel", 0.0))
    bad = []
    for label, o, p in _pairs(ours, paper):
        o, p = _number(o, "ours"), _number(p, "the paper's value")
        if not abs(o - p) <= absolute + relative * abs(p):
            bad.append((label, o, p))
    return Outcome(not bad, fmt(ours), _differences(bad, None) if bad else None)


_SIGNS = {"positive": 1, "negative": -1, "zero": 0}


def _items(ours: Any) -> list[Any]:
    if isinstance(ours, Mapping):
        return list(ours.values())
    return list(ours) if isinstance(ours, (list, tuple)) else [ours]


def rule_sign(ours: Any, paper: Any) -> Outcome:
    if paper not in _SIGNS:
        raise RuleError(f"rule sign wants the paper's value positive, negative or zero, got {paper!r}")
    values = [_number(v, "ours") for v in _items(ours)]
    off = [v for v in values if sign(v) != _SIGNS[paper]]
    text = fmt(ours)
    if len(values) > 1:
        text = f"{len(values) - len(off)} of {len(values)} {paper}: {text}"
    return Outcome(not off, text, f"{len(off)} of {len(values)} not {paper}: {fmt(off)}" if off else None)


def _normalise(x: Any, as_set: bool) -> Any:
    if as_set and isinstance(x, (list, tuple, set)):
        return frozenset(x)
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def rule_equal(ours: Any, paper: Any, as_set: bool = False) -> Outcome:
    pairs = _pairs(ours, paper) if isinstance(paper, Mapping) else [("", ours, paper)]
    bad = [(label, o, p) for label, o, p in pairs if _normalise(o, as_set) != _normalise(p, as_set)]
    parts = []
    for label, o, p in bad:
        prefix = f"{label}: " if label else ""
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (o, p)):
            parts.append(f"{prefix}{o - p:+g}")
        elif as_set and isinstance(o, (list, tuple)) and isinstance(p, (list, tuple)):
            extra, lacking = sorted(set(o) - set(p)), sorted(set(p) - set(o))
            parts.append(f"{prefix}ours adds {fmt(extra)}, lacks {fmt(lacking)}")
        else:
            parts.append(f"{prefix}{fmt(o)} instead of {fmt(p)}")
    return Outcome(not bad, fmt(ours), "; ".join(parts) if bad else None)


_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}


def _interval(x: Any) -> tuple[float, float]:
    if not isinstance(x, (list, tuple)) or len(x) != 2:
        raise RuleError(f"an interval [low, high] is wanted, got {x!r}")
    return _number(x[0], "interval low"), _number(x[1], "interval high")


_UNARY: dict[str, Callable[[Any], bool]] = {
    "zero": lambda x: is_zero(_number(x, "ours")),
    "nonzero": lambda x: not is_zero(_number(x, "ours")),
    "positive": lambda x: sign(_number(x, "ours")) > 0,
    "negative": lambda x: sign(_number(x, "ours")) < 0,
    "contains_zero": lambda x: sign(_interval(x)[0]) <= 0 <= sign(_interval(x)[1]),
    "excludes_zero": lambda x: not (sign(_interval(x)[0]) <= 0 <= sign(_interval(x)[1])),
}
PREDICATES = (*_COMPARE, *_UNARY)


def predicate(op: str, than: Any = None) -> Callable[[Any], bool]:
    if op in _UNARY:
        return _UNARY[op]
    if op in _COMPARE:
        if than is None:
            raise RuleError(f"predicate {op!r} needs `than`")
        limit = _number(than, "than")
        return lambda x: _COMPARE[op](_number(x, "ours"), limit)
    raise RuleError(f"unknown predicate {op!r}; choose {', '.join(PREDICATES)}")


def _describe(op: str, than: Any) -> str:
    return f"{op} {than}" if op in _COMPARE else op.replace("_", " ")


def rule_all(ours: Any, paper: Any, op: str, than: Any = None) -> Outcome:
    test, items = predicate(op, than), _items(ours)
    off = [x for x in items if not test(x)]
    text = f"{len(items) - len(off)} of {len(items)} {_describe(op, than)}"
    if 0 < len(items) <= 4:
        text += f": {fmt(items)}"
    return Outcome(bool(items) and not off, text, f"{len(off)} not: {fmt(off)}" if off else None)


def rule_count(ours: Any, paper: Any, op: str, than: Any = None) -> Outcome:
    test, items = predicate(op, than), _items(ours)
    count = sum(1 for x in items if test(x))
    wanted = int(_number(paper, "the paper's count"))
    text = f"{count} of {len(items)} {_describe(op, than)}"
    return Outcome(count == wanted, text, f"{count - wanted:+d}" if count != wanted else None)


def rule_share(
    ours: Any, paper: Any, op: str, than: Any = None, digits: int = 0, scale: float = 100.0
) -> Outcome:
    test, items = predicate(op, than), _items(ours)
    if not items:
        raise RuleError("a share of no items")
    share = scale * sum(1 for x in items if test(x)) / len(items)
    wanted = _number(paper, "the paper's share")
    same = round_half_away(share, digits) == round_half_away(wanted, digits)
    text = f"{share:.{digits}f} ({len(items)} items {_describe(op, than)})"
    return Outcome(same, text, f"{share - wanted:+.{digits + 1}f}" if not same else None)


def rule_significance(ours: Any, paper: Any, alpha: float, expect: str = "not_significant") -> Outcome:
    if expect not in ("significant", "not_significant"):
        raise RuleError(f"expect must be significant or not_significant, got {expect!r}")
    p_values = [_number(p, "a p-value") for p in _items(ours)]
    significant = [p for p in p_values if p < alpha]
    text = f"{len(significant)} of {len(p_values)} p < {alpha:g}"
    if p_values:
        text += f" (min p {min(p_values):.3g})"
    ok = not significant if expect == "not_significant" else len(significant) == len(p_values)
    return Outcome(bool(p_values) and ok, text, None if ok else text)


def rule_within_se(ours: Any, paper: Any, se: float, k: float = 2.0) -> Outcome:
    """A Monte Carlo estimate: within `k` standard errors `se` of the paper's value."""
    se_value, k_value = _number(se, "se"), _number(k, "k")
    if se_value <= 0 or k_value <= 0:
        raise RuleError(f"se and k must be positive, got se={se!r}, k={k!r}")
    rows = [
        (label, _number(o, "ours"), _number(p, "the paper's value")) for label, o, p in _pairs(ours, paper)
    ]
    bad = [(label, o, p) for label, o, p in rows if abs(o - p) > k_value * se_value]
    shown = ", ".join(f"{label + ': ' if label else ''}{fmt(o)}" for label, o, _ in rows)
    text = f"{shown} (± {fmt(k_value)}·{fmt(se_value)})"
    if not bad:
        return Outcome(True, text)
    worst = max(abs(o - p) / se_value for _, o, p in bad)
    return Outcome(False, text, f"{_differences(bad, None)}; {worst:.1f} standard errors")


@dataclass(frozen=True)
class Kind:
    function: Callable[..., Outcome]
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()


KINDS: dict[str, Kind] = {
    "round": Kind(rule_round, ("digits",)),
    "tolerance": Kind(rule_tolerance, (), ("abs", "rel")),
    "sign": Kind(rule_sign),
    "equal": Kind(rule_equal, (), ("as_set",)),
    "all": Kind(rule_all, ("op",), ("than",)),
    "count": Kind(rule_count, ("op",), ("than",)),
    "share": Kind(rule_share, ("op",), ("than", "digits", "scale")),
    "significance": Kind(rule_significance, ("alpha",), ("expect",)),
    "within_se": Kind(rule_within_se, ("se",), ("k",)),
}


def check_params(kind: str, params: Mapping[str, Any]) -> str | None:
    """Why `params` do not fit rule `kind` (None when they do)."""
    if kind not in KINDS:
        return f"unknown rule kind {kind!r}; choose {', '.join(KINDS)}"
    spec = KINDS[kind]
    missing = [p for p in spec.required if p not in params]
    if missing:
        return f"rule {kind} needs {', '.join(missing)}"
    unknown = [p for p in params if p not in spec.required + spec.optional]
    if unknown:
        return f"rule {kind} takes no {', '.join(unknown)} (takes {', '.join(spec.required + spec.optional) or 'nothing'})"
    if kind == "tolerance" and not params:
        return "rule tolerance needs abs and/or rel"
    if "op" in params:
        if params["op"] not in PREDICATES:
            return f"unknown predicate op {params['op']!r}; choose {', '.join(PREDICATES)}"
        if params["op"] in _COMPARE and "than" not in params:
            return f"predicate {params['op']!r} needs than"
    for name in ("se", "k"):
        if kind == "within_se" and name in params:
            value = params[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                return f"{name} must be a positive number, got {value!r}"
    if "digits" in params and (not isinstance(params["digits"], int) or params["digits"] < 0):
        return f"digits must be a non-negative integer, got {params['digits']!r}"
    return None


def apply(kind: str, ours: Any, paper: Any, params: Mapping[str, Any]) -> Outcome:
    return KINDS[kind].function(ours, paper, **params)
