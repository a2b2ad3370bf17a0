"""Students' own extension files (models, datasets, benchmark categories, score matrices, claims) in `user_dir`
(default `$TESTTASK_USER_DIR`, else `conf/user`), never a paper's own files; docs/extending.md documents them.

Each file is optional, read once where the config is composed (`apply`), and validated by the module that owns
the kind; every error names the file and the field (`UserFileError`).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf, open_dict

from testtask.errors import InputError
from testtask.paths import in_repo, resolve

log = logging.getLogger("testtask.user_files")

ENV = "TESTTASK_USER_DIR"
DEFAULT = "conf/user"

# The merges of the `testtask` command's config (conf/config.yaml): file -> "module:function(cfg, UserFile)".
# Named as strings, imported only when the file exists (this module sits below the papers).
ANALYSIS = {
    "models.yaml": "testtask.lm.models:merge_user_models_into_analysis",
    "benchmarks.yaml": "testtask.train_before_test.user_benchmarks:merge",
    "matrices.yaml": "testtask.proxy_tasks.user_matrices:merge",
    "families.yaml": "testtask.downstream_predictability.user_families:merge",
}


class UserFileError(InputError, ValueError):
    """An own extension file that cannot be used; the message starts `<file>: <field>: `."""


@dataclass(frozen=True)
class UserFile:
    path: Path  # absolute
    data: dict[str, Any]  # the parsed YAML mapping

    @property
    def shown(self) -> str:
        """The path as messages show it: relative to the repository root when inside it."""
        return in_repo(self.path)

    def error(self, field: str, message: str) -> UserFileError:
        return UserFileError(f"{self.shown}: {field}: {message}")

    def check_fields(
        self, where: str, entry: Any, required: Iterable[str], allowed: Iterable[str]
    ) -> Mapping[str, Any]:
        """`entry` as a mapping; an error naming `where.<field>` for a missing or an unknown field."""
        if not isinstance(entry, Mapping):
            raise self.error(where, f"expected a mapping of fields, got {entry!r}")
        allowed = set(allowed) | set(required)
        for key in required:
            if key not in entry:
                raise self.error(f"{where}.{key}", "missing (required)")
        unknown = sorted(str(k) for k in entry if k not in allowed)
        if unknown:
            raise self.error(f"{where}.{unknown[0]}", f"unknown field (fields: {', '.join(sorted(allowed))})")
        return entry


def folder(cfg: Any = None) -> Path:
    """The user folder: `cfg.user_dir` when the config has one, else $TESTTASK_USER_DIR, else conf/user."""
    configured = (
        cfg.get("user_dir") if isinstance(cfg, DictConfig | Mapping) else getattr(cfg, "user_dir", None)
    )
    return resolve(configured or os.environ.get(ENV) or DEFAULT)


def digest(directory: Path, names: Iterable[str]) -> dict[str, str]:
    """File name -> SHA-256 of its bytes, for each of `names` present in `directory` (what a build read)."""
    present = [name for name in names if (directory / name).is_file()]
    return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest() for name in present}


def read(directory: Path, name: str) -> UserFile | None:
    """`directory/name` parsed, or None when absent or empty; an error naming it when it is not a YAML mapping."""
    path = (directory / name).resolve()
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise UserFileError(f"{path}: not valid YAML ({err})") from err
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise UserFileError(f"{path}: expected a mapping at the top, got {type(data).__name__}")
    return UserFile(path, dict(data))


def apply(cfg: DictConfig, merges: Mapping[str, str]) -> list[Path]:
    """Merge every present user file of `merges` (file name -> "module:function") into `cfg`, in place (twice
    gives the same config: merges assign whole entries by key); the files merged."""
    directory = folder(cfg)
    merged: list[Path] = []
    for name, target in merges.items():
        file = read(directory, name)
        if file is None:
            continue
        module, _, function = target.partition(":")
        merge: Callable[[DictConfig, UserFile], None] = getattr(importlib.import_module(module), function)
        with open_dict(cfg):  # Hydra's configs are in struct mode: new keys (an own model) need this
            merge(cfg, file)
        log.info("own extensions: merged %s", file.shown)
        merged.append(file.path)
    return merged


def plain(node: Any) -> Any:
    """A config node as plain containers (for merging copies of user entries)."""
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
