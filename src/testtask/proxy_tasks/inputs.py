"""What the builders share: the settings (`ctx.settings`), a matrix with the method's settings for it, ensemble
tables, plain-JSON settings."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pandas as pd
import yaml
from omegaconf import DictConfig, OmegaConf

from testtask.context import Context
from testtask.paths import conf_dir, resolve
from testtask.proxy_tasks.matrices import ScoreMatrix, load_matrix
from testtask.proxy_tasks.robustness import ensembles_from_wide, read_ensembles
from testtask.proxy_tasks.settings import Method, RobustnessMode, Settings


def plain(cfg: Any) -> Any:
    """A config node as plain Python (for JSON sidecars)."""
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg


def analysis(ctx: Context) -> Settings:
    """proxy-tasks' settings, read once by the pipeline (`PAPER.settings`)."""
    return ctx.settings


def settings_of(ctx: Context) -> Method:
    """The method's settings (without a matrix's overrides)."""
    return analysis(ctx).method


def labels(ctx: Context) -> dict[str, str]:
    """robustness.ensemble_labels as a plain dict (it goes to worker processes)."""
    return dict(analysis(ctx).robustness.ensemble_labels)


def matrix_and_settings(ctx: Context, key: str) -> tuple[ScoreMatrix, Method]:
    """Matrix `key` and the method's settings with that matrix's overrides (`top_t`, `n_models`, `robustness`)."""
    matrix = load_matrix(ctx, key)
    return matrix, analysis(ctx).method_for(key)


def ensembles_for(ctx: Context, settings: Method) -> pd.DataFrame | None:
    """The ensemble score table when robustness.mode=ensembles (robustness.ensembles_file), else None."""
    if settings.robustness != RobustnessMode.ensembles:
        return None
    path = analysis(ctx).robustness.ensembles_file
    if not path:  # a matrix's own robustness: ensembles, with no file (the schema checks robustness.mode's)
        raise ValueError("proxy_tasks.robustness.mode=ensembles needs proxy_tasks.robustness.ensembles_file")
    return read_ensembles(resolve(path), labels(ctx))


def paper_ensembles(ctx: Context, relpath: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The paper's Table 4 ensembles (YAML below conf/) as the long table, and the whole YAML document."""
    path = conf_dir() / relpath
    if not path.is_file():
        raise FileNotFoundError(f"{path} (proxy_tasks.table_5.ensembles) does not exist")
    spec = yaml.safe_load(path.read_text())
    for field in ("ensembles", "scores"):
        if field not in spec:
            raise ValueError(f"{path}: field {field!r} is missing")
    return ensembles_from_wide(spec, str(path)), spec


def settings_dict(settings: Method) -> dict[str, Any]:
    out = asdict(settings)
    out["max_proxies_effective"] = settings.proxies_cap
    return out
