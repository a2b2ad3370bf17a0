"""The method's settings, read once from the `proxy_tasks` config (thresholds, Algorithm 1 parameters, modes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from testtask.proxy_tasks.correlation import METRICS
from testtask.proxy_tasks.normalise import MODES

ROBUSTNESS_MODES = ("none", "stderr_proxy", "ensembles")


@dataclass(frozen=True)
class Settings:
    normalisation: str  # two_step (the paper) | feature | none
    metrics: tuple[str, ...]  # correlation metrics compared by Algorithm 1
    metric: str  # auto (Algorithm 1 chooses) or one of `metrics`
    fallback_metric: str  # used when no metric dominates in Algorithm 1
    eps_c: float  # relevance threshold
    n_models: int  # Algorithm 1: models per subset (n)
    samples: int  # Algorithm 1: subsets (k)
    top_t: int  # Algorithm 1: top tasks of interest (t)
    min_top_frequency: float  # our extension: keep proxies in the sampled top t at least this often (0: off)
    robustness: str  # none | stderr_proxy | ensembles
    eps_r: float  # robustness threshold
    sigmoid_k: float  # k of f(x) = 1 / (1 + exp(-k x))
    max_proxies: int | None  # size of the final proxy set (None: top_t)
    if_none_selected: str  # best_single | error

    def __post_init__(self) -> None:
        if self.normalisation not in MODES:
            raise ValueError(f"proxy_tasks.normalisation must be one of {MODES}, got {self.normalisation!r}")
        unknown = [m for m in self.metrics if m not in METRICS]
        if unknown or not self.metrics:
            raise ValueError(f"proxy_tasks.relevance.metrics must be among {METRICS}, got {self.metrics}")
        if self.metric != "auto" and self.metric not in self.metrics:
            raise ValueError(
                f"proxy_tasks.relevance.metric must be auto or in {self.metrics}: {self.metric!r}"
            )
        if self.robustness not in ROBUSTNESS_MODES:
            raise ValueError(
                f"proxy_tasks.robustness.mode must be one of {ROBUSTNESS_MODES}: {self.robustness!r}"
            )
        if self.if_none_selected not in ("best_single", "error"):
            raise ValueError(f"proxy_tasks.combination.if_none_selected: {self.if_none_selected!r}")

    @property
    def proxies_cap(self) -> int:
        return self.top_t if self.max_proxies is None else int(self.max_proxies)

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Settings:
        """Settings of `cfg` (the proxy_tasks config), read once (the pipeline builds them: `ctx.settings`)."""
        rel, cons, rob, comb = cfg["relevance"], cfg["consistency"], cfg["robustness"], cfg["combination"]
        max_proxies = comb["max_proxies"]
        return cls(
            normalisation=str(cfg["normalisation"]),
            metrics=tuple(str(m) for m in rel["metrics"]),
            metric=str(rel["metric"]),
            fallback_metric=str(rel["fallback_metric"]),
            eps_c=float(rel["threshold"]),
            n_models=int(cons["n_models"]),
            samples=int(cons["samples"]),
            top_t=int(cons["top_t"]),
            min_top_frequency=float(cons["min_top_frequency"]),
            robustness=str(rob["mode"]),
            eps_r=float(rob["threshold"]),
            sigmoid_k=float(rob["sigmoid_k"]),
            max_proxies=None if max_proxies is None else int(max_proxies),
            if_none_selected=str(comb["if_none_selected"]),
        )

    def for_matrix(self, matrix: Mapping[str, Any]) -> Settings:
        """These settings with the overrides of one `proxy_tasks.matrices` entry (`top_t`, `n_models`,
        `robustness`)."""
        return self.with_(
            n_models=int(matrix.get("n_models", self.n_models)),
            top_t=int(matrix.get("top_t", self.top_t)),
            robustness=str(matrix.get("robustness", self.robustness)),
        )


def settings_from_cfg(cfg: Mapping[str, Any], matrix: Mapping[str, Any] | None = None) -> Settings:
    """Settings of `cfg` (the proxy_tasks config); a matrix entry may override `top_t`, `n_models` and
    `robustness`."""
    return Settings.from_config(cfg).for_matrix(matrix or {})
