"""What a figure or table builder gets: where inputs are, where outputs go, and the typed settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testtask import provenance
from testtask.diagnostics import Thresholds, configured


class InputsUnavailable(RuntimeError):
    """The raw results a figure needs are not present (e.g. a folder the mirror does not hold)."""


@dataclass
class Context:
    paper: str  # paper key, e.g. "pretrain-on-test"
    source: str  # "published", "results" or "published+results" (testtask.sources)
    data_root: Path  # raw results of this paper for the chosen source (published+results: the release)
    out_dir: Path  # figures/<paper-key>/<source folder> (paths.output_dir)
    sampler: Any  # the typed sampler settings (testtask.settings.Sampler)
    seed: int
    cache_dir: Path | None = None  # posterior cache; None disables it
    settings: Any = None  # this paper's settings, typed and read once from `cfg` by its plug-in
    # The pipeline's way to another paper's context for the same source; None outside the pipeline.
    related: Callable[[str], Context] | None = None
    diagnostics: Thresholds | None = None  # the fits' limits as composed; None: conf/config.yaml's (`limits`)
    output: str | None = None  # what is being built ("figure 3"), to name it in messages
    run: str | None = None  # the results run read (results_run) with source=results; None for the release
    # source=published+results: our run, read on top of `data_root` by the loaders of papers with Paper.overlay
    overlay_root: Path | None = None
    # What a paper's loaders keep for the rest of this output's build (its inputs do not change during it), e.g.
    # the tidy results table that a figure reads once per benchmark and panel.
    memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def roots(self) -> tuple[Path, ...]:
        """Every root this context reads, the release first: (data_root,) or (data_root, overlay_root)."""
        return (self.data_root,) if self.overlay_root is None else (self.data_root, self.overlay_root)

    def limits(self) -> Thresholds:
        """The diagnostics limits every fit of this context is checked by."""
        return self.diagnostics if self.diagnostics is not None else configured()

    def collection_root(self, name: str) -> Path:
        """Folder of one collection of raw results (e.g. `accuracies_from_paper`), or InputsUnavailable."""
        path = self.data_root / name
        if not path.is_dir():
            raise InputsUnavailable(f"{path} does not exist (source={self.source})")
        return path

    def context_of(self, paper: str) -> Context:
        """The context of `paper` (its data root for this source, its config and settings), from the pipeline."""
        if paper == self.paper:
            return self
        if self.related is None:
            raise RuntimeError(
                f"{self.paper}'s context was not built by the pipeline; it cannot give {paper}'s"
            )
        other = self.related(paper)
        provenance.note_read(paper, other.data_root)  # the sidecars' provenance lists it among the data read
        return other

    def paper_root(self, paper: str) -> Path:
        """Raw results of another paper for the same source, by the same layout as this paper's `data_root`."""
        if paper == self.paper:
            return self.data_root
        parts = self.data_root.parts
        if self.paper not in parts:
            raise ValueError(f"{self.data_root} does not name paper {self.paper!r}")
        i = len(parts) - 1 - parts[::-1].index(self.paper)
        root = Path(*parts[:i], paper, *parts[i + 1 :])
        provenance.note_read(paper, root)
        return root
