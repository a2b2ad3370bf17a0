"""A fit that fails its diagnostics is refitted, and the healthiest of its attempts is kept.

Both t_j parameterisations sample the same posterior, and `model.noncentered_t: auto` picks one with a moment rule
(`hierarchical.choose_noncentered`) that a few fits prove wrong. Such a fit is refitted first in the other
parameterisation (only where the rule chose it), then with a higher target_accept in each one tried. The first
attempt that passes ends the ladder; else the one with the fewest and mildest failures is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Generic, TypeVar

from testtask import diagnostics
from testtask.pretrain_on_test.hierarchical import ModelData, ModelSpec, resolve_spec
from testtask.pretrain_on_test.settings import Auto, Backend, Refit

T = TypeVar("T")


@dataclass(frozen=True)
class Attempt:
    """One try at a fit: its t_j parameterisation (None: the model has no W term, or the bambi backend, so there
    is nothing to choose) and its sampler's target_accept."""

    noncentered_t: bool | None
    target_accept: float


def rule_chooses(spec: ModelSpec) -> bool:
    """Whether `spec` (as configured, unresolved) leaves the t_j parameterisation to the data-chosen rule."""
    return spec.backend == Backend.marginal and spec.interaction and spec.noncentered_t == Auto.auto


def plan(first: Attempt, rule_chose: bool, policy: Refit) -> list[Attempt]:
    """The attempts of one fit in order, `first` (the configured settings) first; the ones after it run only
    while every attempt before them failed."""
    out = [first]
    if policy.other_t and rule_chose and first.noncentered_t is not None:
        out.append(Attempt(not first.noncentered_t, first.target_accept))
    if policy.target_accept is not None and policy.target_accept > first.target_accept:
        out += [Attempt(a.noncentered_t, policy.target_accept) for a in list(out)]
    return out


def badness(found: Sequence[diagnostics.Failure]) -> tuple[bool, int, float, float]:
    """How unhealthy a fit is, to compare attempts: failed at all, how many statistics failed, its divergences,
    then its worst r̂ beyond the limit (a lower tuple is healthier)."""
    divergences = sum(f.value for f in found if f.statistic == "divergences")
    worst_r_hat = max((f.value for f in found if f.statistic == "r_hat"), default=0.0)
    return bool(found), len(found), float(divergences), float(worst_r_hat)


@dataclass
class Outcome(Generic[T]):
    """The kept result of a fit's attempts, which attempt it is, and every attempt with its result and failures."""

    results: list[T]
    index: int
    tried: list[tuple[Attempt, list[diagnostics.Failure]]]

    @property
    def kept(self) -> T:
        return self.results[self.index]

    @property
    def attempt(self) -> Attempt:
        return self.tried[self.index][0]

    @property
    def refitted(self) -> bool:
        return len(self.tried) > 1

    def record(self, extra: Callable[[T], dict[str, Any]] | None = None) -> dict[str, Any]:
        """What a sidecar keeps of it: whether the fit was refitted, which attempt was kept, and each attempt's
        settings, verdict and failures (with `extra` of its result, e.g. its seconds). The verdict is `passed`, not
        the sidecar's `diagnostics_ok`: that field is the kept fit's, and the report reads it anywhere in a sidecar
        (`diagnostics.any_failed`), so an attempt set aside must not mark the claims the kept fit feeds."""
        return {
            "refitted": self.refitted,
            "kept": self.index,
            "attempts": [
                {
                    **asdict(attempt),
                    "passed": not found,
                    "failures": [asdict(f) for f in found],
                    **(extra(result) if extra else {}),
                }
                for (attempt, found), result in zip(self.tried, self.results, strict=True)
            ],
        }


def healthiest(
    attempts: Sequence[Attempt],
    run: Callable[[Attempt], T],
    check: Callable[[T], list[diagnostics.Failure]],
) -> Outcome[T]:
    """Run `attempts` in order until one passes `check`; keep the passing one, or else the healthiest (the earlier
    on a tie)."""
    results: list[T] = []
    tried: list[tuple[Attempt, list[diagnostics.Failure]]] = []
    for attempt in attempts:
        result = run(attempt)
        found = check(result)
        results.append(result)
        tried.append((attempt, found))
        if not found:
            break
    index = min(range(len(tried)), key=lambda i: (badness(tried[i][1]), i))
    return Outcome(results, index, tried)


def first_attempt(resolved: ModelSpec, sampler: Mapping[str, Any]) -> Attempt:
    """The configured attempt of a fit of `resolved` (its parameterisation decided) under `sampler`."""
    has_t = resolved.backend == Backend.marginal and resolved.interaction
    return Attempt(bool(resolved.noncentered_t) if has_t else None, float(sampler["target_accept"]))


def ladder(data: ModelData, spec: ModelSpec, sampler: Mapping[str, Any], policy: Refit) -> list[Attempt]:
    """The attempts of a fit of `data` under `spec` (as configured) and `sampler`, the configured one first."""
    resolved = resolve_spec(data, spec) if spec.backend == Backend.marginal else spec
    return plan(first_attempt(resolved, sampler), rule_chooses(spec), policy)
