"""Write figures and tables with the numbers behind them: `figures/<paper>/figure-N.{png,pdf,json}`."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from testtask.io import atomic_save, atomic_write_json, atomic_write_text  # noqa: E402
from testtask.provenance import stamped  # noqa: E402
from testtask.sidecars import DRAWN_WITHOUT  # noqa: E402

log = logging.getLogger(__name__)


NOTE_GID = "missing-inputs-note"  # the gid of the text `note_missing` draws (tests find it by this)


def note_missing(fig: plt.Figure, notes: Sequence[str]) -> None:
    """Say on `fig` itself, small at its bottom, what it was drawn without (e.g. "m = 100 not in the data")."""
    if notes:
        fig.text(0.5, 0.0, "\n".join(notes), ha="center", va="top", fontsize=7, color="0.3", gid=NOTE_GID)


def save_figure(
    fig: plt.Figure, out_dir: Path, name: str, numbers: dict[str, Any], notes: Sequence[str] = ()
) -> dict[str, Path]:
    """Save `fig` as PNG and PDF and `numbers` as JSON beside it (stamped), then close it; `notes` (the inputs it
    was drawn without) are written below its panels and, as `drawn_without`, into the JSON."""
    out_dir = Path(out_dir)
    note_missing(fig, notes)
    if notes:
        numbers = {**numbers, DRAWN_WITHOUT: list(notes)}
    paths = {
        "png": atomic_save(
            out_dir / f"{name}.png", lambda p: fig.savefig(p, dpi=150, bbox_inches="tight", format="png")
        ),
        "pdf": atomic_save(
            out_dir / f"{name}.pdf", lambda p: fig.savefig(p, bbox_inches="tight", format="pdf")
        ),
        "json": atomic_write_json(out_dir / f"{name}.json", stamped(numbers)),
    }
    plt.close(fig)
    log.info("wrote %s.{png,pdf,json} in %s", name, out_dir)
    return paths


def save_numbers(path: Path, numbers: dict[str, Any]) -> Path:
    """Write an output's JSON sidecar `numbers`, with the build's `provenance` block when there is one."""
    path = atomic_write_json(Path(path), stamped(numbers))
    log.info("wrote %s", path)
    return path


def save_table(table: pd.DataFrame, out_dir: Path, name: str, floatfmt: str = ".4f") -> dict[str, Path]:
    """Save a table as CSV (full precision) and Markdown (rounded for reading)."""
    out_dir = Path(out_dir)
    paths = {
        "csv": atomic_save(out_dir / f"{name}.csv", lambda p: table.to_csv(p, index=False)),
        "md": atomic_write_text(
            out_dir / f"{name}.md", table.to_markdown(index=False, floatfmt=floatfmt) + "\n"
        ),
    }
    log.info("wrote %s.{csv,md} in %s", name, out_dir)
    return paths
