"""Whether a claim's category holds against the value the report computed: the kinds whose evidence is arithmetic
on our value (`within-error`, `misrounded`); the ledger's validation checks the others for form."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from testtask.report import paths
from testtask.report.ledger import MISROUNDED, MONTE_CARLO, ROUNDING, WITHIN_ERROR, Category, thaw
from testtask.report.rules import round_half_away

_SLACK = 1e-9  # relative: a value exactly on half a unit (0.765 against 0.76) is within rounding


def _decimals(printed: str) -> int:
    return len(printed.split(".")[1]) if "." in printed else 0


def half_unit(printed: str) -> float:
    """Half a unit of the last digit of `printed` ('0.19' -> 0.005, '6' -> 0.5)."""
    return 0.5 * 10.0 ** -_decimals(printed)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} is {value!r}, not a number")
    return float(value)


def _within(x: float, target: float, limit: float) -> bool:
    return abs(x - target) <= limit * (1 + _SLACK) + _SLACK * max(1.0, abs(target))


def _ours(category: Category, value: Any) -> Any:
    of = category.get("of")
    return paths.resolve(value, of) if of else value


def _rounding(category: Category, value: Any) -> str | None:
    printed = thaw(category.get("printed"))
    ours = _ours(category, value)
    pairs = (
        list(zip(ours, printed, strict=True))
        if isinstance(printed, list) and isinstance(ours, list) and len(ours) == len(printed)
        else [(ours, printed)]
    )
    if isinstance(printed, list) and len(pairs) == 1:
        return f"printed lists {len(printed)} values, ours is {ours!r}"
    for x, p in pairs:
        if p is None:
            continue
        x = _number(x, "ours")
        if not _within(x, float(p), half_unit(p)):
            return (
                f"within-error (rounding): ours {x:.6g} is {abs(x - float(p)):.4g} from the printed {p}, more than "
                f"half a unit of its last digit ({half_unit(p):g})"
            )
    return None


def _monte_carlo(category: Category, value: Any, paper: Any) -> str | None:
    x = _number(_ours(category, value), "ours")
    against = category.get("against")
    if isinstance(against, str):
        target, named = _number(paths.resolve(value, against), against), f"ours' {against}"
    elif against is not None:
        target, named = float(against), str(against)
    else:
        target = _number(thaw(paper), "the paper's value (name a number or path in `against`)")
        named = "the paper's"
    se = float(category.get("se"))
    if not _within(x, target, 2 * se):
        return (
            f"within-error (Monte Carlo): ours {x:.6g} is {abs(x - target):.4g} from {named} {target:.6g}, more "
            f"than 2 standard errors (2 × {se:g})"
        )
    return None


def _misrounded(category: Category, value: Any) -> str | None:
    x = _number(_ours(category, value), "ours")
    printed = str(category.get("printed"))
    rounded: Decimal = Decimal(repr(x))
    for digits in category.get("steps"):
        rounded = round_half_away(float(rounded), int(digits))
    final = round_half_away(float(rounded), _decimals(printed))
    if final != Decimal(printed):
        steps = ", ".join(str(d) for d in category.get("steps"))
        return (
            f"misrounded: ours {x:.6g} rounded to {steps} decimals gives {final}, not the printed {printed}"
        )
    if _within(x, float(printed), half_unit(printed)):
        return (
            f"misrounded: ours {x:.6g} is within half a unit of the printed {printed}: plain rounding "
            "(within-error), not a misrounding"
        )
    return None


def problem(category: Category, value: Any, paper: Any) -> str | None:
    """Why `category`'s evidence does not hold for our `value` (None: it holds, or is not arithmetic on it)."""
    try:
        if category.kind == MISROUNDED:
            return _misrounded(category, value)
        if category.kind == WITHIN_ERROR and category.get("basis") == ROUNDING:
            return _rounding(category, value)
        if category.kind == WITHIN_ERROR and category.get("basis") == MONTE_CARLO:
            return _monte_carlo(category, value, paper)
    except (ValueError, LookupError) as err:  # a path ours does not hold, a value that is not a number
        return f"{category.kind}: cannot check against ours: {err}"
    return None
