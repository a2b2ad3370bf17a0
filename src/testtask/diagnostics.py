"""The one rule every MCMC fit is checked by: r̂, bulk ESS and divergences against the `diagnostics` limits. A
failing fit is logged, and recorded in its sidecar (`diagnostics_ok`), which the report reads to mark claims."""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

SECTION = "diagnostics"  # of conf/config.yaml
OK, FAILURES = "diagnostics_ok", "diagnostics_failures"  # the sidecar fields


@dataclass(frozen=True)
class Thresholds:
    """A fit passes when every checked parameter has r̂ ≤ max_r_hat and bulk ESS ≥ min_ess_bulk, and the fit has
    at most max_divergences divergent transitions."""

    max_r_hat: float
    min_ess_bulk: float
    max_divergences: int

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> Thresholds:
        return cls(
            max_r_hat=float(section["max_r_hat"]),
            min_ess_bulk=float(section["min_ess_bulk"]),
            max_divergences=int(section["max_divergences"]),
        )


@functools.cache
def configured() -> Thresholds:
    """The limits in conf/config.yaml, for fits made outside the pipeline (whose contexts carry the composed ones)."""
    from omegaconf import OmegaConf

    from testtask.paths import conf_dir

    return Thresholds.from_config(OmegaConf.load(conf_dir() / "config.yaml")[SECTION])


@dataclass(frozen=True)
class Failure:
    """One statistic of one fit outside its limit; `parameter` is None for the fit's divergences."""

    statistic: str  # r_hat | ess_bulk | divergences
    value: float
    limit: float
    parameter: str | None = None

    def text(self) -> str:
        side = "<" if self.statistic == "ess_bulk" else ">"
        where = f"{self.parameter} " if self.parameter else ""
        return f"{where}{self.statistic} {self.value:.4g} {side} {self.limit:g}"


def failures(
    parameters: Mapping[str, Mapping[str, float]], divergences: int, limits: Thresholds
) -> list[Failure]:
    """The statistics of one fit outside `limits` (`parameters`: name -> r_hat and ess_bulk); a value that is not
    finite fails (r̂ of a stuck chain is NaN, and NaN passes every comparison)."""
    out = []
    for name, stats in parameters.items():
        r_hat, ess = float(stats["r_hat"]), float(stats["ess_bulk"])
        if not (math.isfinite(r_hat) and r_hat <= limits.max_r_hat):
            out.append(Failure("r_hat", r_hat, limits.max_r_hat, name))
        if not (math.isfinite(ess) and ess >= limits.min_ess_bulk):
            out.append(Failure("ess_bulk", ess, limits.min_ess_bulk, name))
    if divergences > limits.max_divergences:
        out.append(Failure("divergences", divergences, limits.max_divergences))
    return out


def record(found: Sequence[Failure]) -> dict[str, Any]:
    """The sidecar fields of one fit."""
    return {OK: not found, FAILURES: [dataclasses.asdict(f) for f in found]}


def assess(
    cell: str, parameters: Mapping[str, Mapping[str, float]], divergences: int, limits: Thresholds
) -> dict[str, Any]:
    """Check one fit, warn naming `cell` when it fails, and return its sidecar fields."""
    found = failures(parameters, divergences, limits)
    if found:
        log.warning("fit diagnostics failed for %s: %s", cell, "; ".join(f.text() for f in found))
    return record(found)


def any_failed(document: Any) -> bool:
    """Whether a sidecar records a fit that failed its diagnostics, anywhere in it."""
    if isinstance(document, Mapping):
        return document.get(OK) is False or any(any_failed(v) for v in document.values())
    if isinstance(document, list):
        return any(any_failed(v) for v in document)
    return False
