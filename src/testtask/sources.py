"""The sources an analysis reads: the authors' release (data/published/<paper>), our own runs
(results/<paper>[/<results_run>]), or our run laid over the release (published+results, for papers with
`Paper.overlay`). A result in both roots is an `OverlayConflict`: which to read is the user's decision, never ours.
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
