"""The settings one cell runs with: the LM config with the dataset's per-task overrides applied.

The authors set some hyperparameters per task (kddubey/pretrain-on-test@80fd183:experiment.sh and
cloud_scripts/gcp/experiments/zero-shot*/n100/mistral_*.sh); `lm.per_task.<dataset>` holds them as a partial LM
config that is merged over the LM's defaults. An override may only change keys the LM config has, so a typo
fails loudly instead of being ignored.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf

from testtask.errors import InputError


class SettingsError(InputError, KeyError):
    pass


def _plain(config: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(config, DictConfig):
        return OmegaConf.to_container(config, resolve=True)  # type: ignore[return-value]
    return copy.deepcopy(dict(config))


def _merge(base: dict[str, Any], override: Mapping[str, Any], where: str) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if key not in base:
            raise SettingsError(f"{where}.{key} is not a key of the LM config; known: {sorted(base)}")
        if isinstance(value, Mapping) and isinstance(base[key], Mapping):
            out[key] = _merge(dict(base[key]), value, f"{where}.{key}")
        else:
            out[key] = value
    return out


def effective_lm(lm: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """`lm` without its `per_task` map, with `per_task[dataset]` (if any) merged in."""
    plain = _plain(lm)
    per_task = plain.pop("per_task", None) or {}
    override = per_task.get(dataset) or {}
    return _merge(plain, override, f"lm.per_task.{dataset}")
