"""The user's models: registry entries (`base: {my-model-7b: {train_date: "2024-06", params_b: 7, tokens_t: 4.0}}`)
from `assess.model_file`, else the user folder's `models.yaml`.

`family` (the cluster of Eq. 1's standard errors) defaults to the model's own name, `language` to EN, `hf_repo` to
null and `paper_name` to the name: none changes a residual, and the user need not know the paper's conventions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from testtask import user_files
from testtask.errors import InputError
from testtask.lm.models import KINDS, ModelRegistry
from testtask.paths import resolve

SECTION = "base"  # the user's models are base models: Eq. 1 places them by N·D and train date


class ModelFileError(InputError, ValueError):
    """`assess.model_file` is absent or malformed; the message names the file and the field."""


def _defaults(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    return {"paper_name": name, "hf_repo": None, "family": name, "language": "EN", **entry}


def own_models_file(cfg: DictConfig) -> Path | None:
    """The user folder's `models.yaml` (merged into the registry where the config is composed), or None."""
    file = user_files.read(user_files.folder(cfg), "models.yaml")
    return None if file is None else file.path


def model_file(cfg: DictConfig) -> Path:
    """`assess.model_file`, else the user folder's `models.yaml`; an error saying how to give one."""
    value = cfg.assess.get("model_file")
    if not value:
        own = own_models_file(cfg)
        if own is None:
            folder = user_files.folder(cfg)
            raise ModelFileError(
                f"no model to assess: put its registry entry in {folder / 'models.yaml'} (section base) or "
                "pass assess.model_file=<path to your models YAML>"
            )
        return own
    path = resolve(str(value))
    if not Path(path).is_file():
        raise ModelFileError(f"assess.model_file: {path} does not exist")
    return Path(path)


def read_models(cfg: DictConfig) -> dict[str, dict[str, Any]]:
    """name -> registry entry of every base model of the model file, validated as the registry validates its own."""
    path = model_file(cfg)
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    sections = set(KINDS) if path == own_models_file(cfg) else {SECTION}
    if not isinstance(data, dict) or not set(data) <= sections or not isinstance(data.get(SECTION), dict):
        raise ModelFileError(f"{path}: expected one section '{SECTION}:' mapping a model name to its entry")
    entries = {str(name): _defaults(str(name), entry or {}) for name, entry in data[SECTION].items()}
    if not entries:
        raise ModelFileError(f"{path}: section '{SECTION}' lists no model")
    try:  # checked as a registry of these base models alone
        ModelRegistry.from_config({kind: entries if kind == SECTION else {} for kind in KINDS})
    except ValueError as err:
        raise ModelFileError(f"{path}: {err}") from None
    return entries


def own_names(cfg: DictConfig) -> set[str]:
    """The base models of the user folder's models.yaml: already in the registry, by the user's own hand."""
    path = own_models_file(cfg)
    if path is None:
        return set()
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    return {str(name) for name in ((data or {}).get(SECTION) or {})}


def with_models(cfg: DictConfig, entries: Mapping[str, Mapping[str, Any]], config_key: str) -> DictConfig:
    """A copy of `cfg` whose registry also holds `entries`; a name it already has (but from the user folder's
    models.yaml) is an error: the user's model would silently replace a published one."""
    out = cfg.copy()
    registry = out[config_key].models
    own = own_names(cfg)
    with open_dict(registry):
        taken = sorted(
            name
            for name in entries
            if name not in own and any(name in (registry.get(k) or {}) for k in registry)
        )
        if taken:
            raise ModelFileError(
                f"assess.model_file: {taken} already in the model registry; rename your model"
            )
        registry[SECTION] = OmegaConf.merge(registry.get(SECTION) or {}, dict(entries))
    return out
