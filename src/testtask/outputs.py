"""Write figures and tables with the numbers behind them: `figures/<paper>/figure-N.{png,pdf,json}`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from testtask.io import atomic_save, atomic_write_json, atomic_write_text  # noqa: E402

log = logging.getLogger(__name__)


def save_figure(fig: plt.Figure, out_dir: Path, name: str, numbers: dict[str, Any]) -> dict[str, Path]:
    """Save `fig` as PNG and PDF and `numbers` as JSON beside it; close the figure."""
    out_dir = Path(out_dir)
    paths = {
        "png": atomic_save(
            out_dir / f"{name}.png", lambda p: fig.savefig(p, dpi=150, bbox_inches="tight", format="png")
        ),
        "pdf": atomic_save(
            out_dir / f"{name}.pdf", lambda p: fig.savefig(p, bbox_inches="tight", format="pdf")
        ),
        "json": atomic_write_json(out_dir / f"{name}.json", numbers),
    }
    plt.close(fig)
    log.info("wrote %s.{png,pdf,json} in %s", name, out_dir)
    return paths


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
