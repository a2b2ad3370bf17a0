"""Where the repository's inputs and outputs live."""

from __future__ import annotations

import os
from pathlib import Path

PAPER_KEYS = (
    "training-on-the-test-task",
    "pretrain-on-test",
    "train-before-test",
    "downstream-predictability",
    "proxy-tasks",
)


def repo_root() -> Path:
    """The checkout root: TESTTASK_ROOT if set, else the folder holding `conf/` above this package."""
    if env := os.environ.get("TESTTASK_ROOT"):
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "conf" / "config.yaml").is_file():
            return parent
    return Path.cwd().resolve()


def conf_dir() -> Path:
    return repo_root() / "conf"


def resolve(path: str | os.PathLike) -> Path:
    """A path from config: absolute as given, relative to the repository root otherwise."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else repo_root() / p
