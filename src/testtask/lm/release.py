"""A release of lm-eval results, read through an analysis config, once per process: the model registry, the results
the source lacks, and the tidy table of results.

`ctx.cfg` is training-on-the-test-task's analysis config (`models`, `model_values`, `absent_results`,
`evaluations_dir`), and `ctx.data_root` the folder of a source of that paper: its analyses read their inputs here,
and proxy-tasks reads that paper's release the same way (a Context with that paper's config).
"""

from __future__ import annotations

import json
import logging
import os
from functools import lru_cache

import pandas as pd
from omegaconf import DictConfig, ListConfig, OmegaConf

from testtask.context import Context, InputsUnavailable
from testtask.lm.models import ModelRegistry
from testtask.lm.results import AbsentResults, load_results
from testtask.lm.results_layout import discover

log = logging.getLogger(__name__)


@lru_cache(maxsize=8)
def _registry(models_json: str, values: str) -> ModelRegistry:
    reg = ModelRegistry.from_config(json.loads(models_json))
    if values == "authors":
        return reg.with_authors_values()
    if values != "paper":
        raise ValueError(
            f"training_on_the_test_task.model_values must be 'paper' or 'authors', got {values!r}"
        )
    return reg


def registry(ctx: Context) -> ModelRegistry:
    """The model registry of `ctx`'s config (built once per distinct registry config).

    `model_values=paper` takes D and train dates from Appendix B.1; `authors` from the authors' analysis code.
    """
    return _registry(
        json.dumps(_models_config(ctx), sort_keys=True), str(ctx.cfg.get("model_values", "paper"))
    )


_CACHE: dict[tuple[str, float, str, str], pd.DataFrame] = {}


def _models_config(ctx: Context) -> dict:
    models = ctx.cfg["models"]
    return OmegaConf.to_container(models, resolve=True) if isinstance(models, DictConfig) else dict(models)


def _absent_config(ctx: Context) -> list | None:
    node = ctx.cfg.get("absent_results")
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig | ListConfig) else node


def absent(ctx: Context) -> AbsentResults:
    """The results `ctx`'s config lists as genuinely missing from the source (`absent_results`), checked."""
    reg = registry(ctx)
    return AbsentResults.from_config(
        _absent_config(ctx),
        known_model=lambda name: name in reg,
        where="training_on_the_test_task.absent_results",
    )


def results(ctx: Context) -> pd.DataFrame:
    """The tidy results table of `ctx`'s source; InputsUnavailable when the evaluations folder is absent.

    Every value is checked (results.load_results); a value missing or NaN is an error unless `absent_results`
    lists that result."""
    root = ctx.data_root / str(ctx.cfg["evaluations_dir"])
    if not root.is_dir():
        raise InputsUnavailable(f"{root} does not exist (source={ctx.source})")
    reg = registry(ctx)
    # Figures built in one process share the table; a changed registry, or a file added, removed or replaced
    # (results are written atomically, by rename) reloads it: that changes a folder's mtime, cheaper to scan
    # than every file's.
    stamp = max(os.stat(folder).st_mtime for folder, _, _ in os.walk(root))
    listed = absent(ctx)
    key = (
        str(root),
        stamp,
        json.dumps(_models_config(ctx), sort_keys=True),
        json.dumps(_absent_config(ctx), sort_keys=True),
    )
    if key not in _CACHE:
        files = discover(root)
        if files and not any(f.model in reg for f in files):
            # e.g. the CPU mini-replication: its model is not one of the paper's, so only figure-mini uses it.
            raise InputsUnavailable(f"{root}: no result file names a model of the paper's registry")
        _CACHE.clear()
        _CACHE[key] = load_results(root, known_model=lambda name: name in reg, progress=False, absent=listed)
    return _CACHE[key]
