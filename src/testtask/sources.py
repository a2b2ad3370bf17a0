"""The sources an analysis reads: the authors' release, our own runs, or our run laid over the release.

- `published`: data/published/<paper> (the authors' release, fetched by `make data`);
- `results`: results/<paper>[/<results_run>] (our runs);
- `published+results`: both, the run read on top of the release without copying it (`make figure-1
  SOURCE=published+results RUN=<run>`). A result present in both roots is an `OverlayConflict` naming both files:
  which of two values an analysis should read is the user's decision, never ours.

Only papers whose loaders merge two roots (`Paper.overlay`) accept the third source; the others refuse it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testtask.errors import InputError
from testtask.paths import OVERLAY, PUBLISHED, RESULTS, resolve

SOURCES = (PUBLISHED, RESULTS, OVERLAY)  # testtask.settings.Source


def run_root(cfg: Any, paper: str) -> Path:
    """Our runs of `paper` (source=results, and the run of published+results): results/<paper>[/<results_run>]."""
    root = resolve(cfg.results_dir) / paper
    return root / str(cfg.results_run) if cfg.results_run else root


class OverlayConflict(InputError, ValueError):
    """One result is in both the release and the run laid over it; the message names both files."""

    def __init__(self, what: str, published: Path | str, results: Path | str) -> None:
        super().__init__(
            f"source={OVERLAY}: {what} is in both the release ({published}) and the run ({results}); "
            "remove one of them (a run laid over the release may only add results)"
        )
