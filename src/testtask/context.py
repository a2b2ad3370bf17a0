"""What a figure or table builder gets: where inputs are, where outputs go, and the config."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


class InputsUnavailable(RuntimeError):
    """The raw results a figure needs are not present (e.g. a folder the mirror does not hold)."""


@dataclass
class Context:
    paper: str  # paper key, e.g. "pretrain-on-test"
    source: str  # "published" or "results"
    data_root: Path  # raw results of this paper for the chosen source
    out_dir: Path  # figures/<paper-key>
    cfg: Any  # this paper's analysis config (DictConfig or dict)
    sampler: Any  # sampler config
    seed: int
    cache_dir: Path | None = None  # posterior cache; None disables it

    def collection_root(self, name: str) -> Path:
        """Folder of one collection of raw results (e.g. `accuracies_from_paper`), or InputsUnavailable."""
        path = self.data_root / name
        if not path.is_dir():
            raise InputsUnavailable(f"{path} does not exist (source={self.source})")
        return path
