"""What the figure builders share: the JSON header, the focus task of a family, the CCDF grid, colours."""

from __future__ import annotations

import logging
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from testtask.context import Context
from testtask.downstream_predictability.analysis import Analysis, FamilyData, family_summary

log = logging.getLogger(__name__)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def header(ctx: Context, analysis: Analysis, figure: int) -> dict[str, Any]:
    """Paper, figure, source, analysis settings, every family's members and compute, and the warnings."""
    return {
        "paper": ctx.paper,
        "figure": figure,
        "source": ctx.source,
        "settings": analysis.settings,
        "families": {f.family.name: family_summary(f) for f in analysis.families},
        "skipped_families": analysis.skipped_families,
        "warnings": list(analysis.warnings),
    }


def missing_notes(analysis: Analysis) -> list[str]:
    """What a figure says on itself about the families it was drawn without (`skipped_families` in its JSON)."""
    return [f"family {name} not drawn: {why}" for name, why in analysis.skipped_families.items()]


def focus_task(data: FamilyData, wanted: str | None) -> str:
    """`wanted` if the family has it, else its first task (alphabetically), with a logged note."""
    if wanted in data.tasks:
        return str(wanted)
    chosen = sorted(data.tasks)[0]
    log.warning("family %s has no task %r; using %s", data.family.name, wanted, chosen)
    return chosen


def chosen_tasks(analysis: Analysis, wanted: list[str], at_most: int = 3) -> list[str]:
    """The configured tasks that some family has; if none, the first `at_most` tasks there are."""
    present = analysis.tasks()
    chosen = [t for t in wanted if t in present]
    return chosen or present[:at_most]


def ccdf_grid(points: int) -> np.ndarray:
    """`points` evenly spaced correlations on [-1, 1], where the JSON gives the complementary CDFs."""
    return np.linspace(-1.0, 1.0, points)


def family_colours(n: int) -> list:
    return [plt.get_cmap("tab10")(i % 10) for i in range(n)]


def step_ccdf(ax: plt.Axes, values: np.ndarray, **style: Any) -> None:
    """Draw Ŝ(c) as the exact step function on [-1, 1] (values strictly greater than c)."""
    values = np.sort(np.asarray(values, dtype=float))
    if values.size == 0:
        return
    xs = np.concatenate([[-1.0], values, [1.0]])
    ys = np.concatenate([[np.mean(values > -1.0)], 1.0 - np.arange(1, values.size + 1) / values.size, [0.0]])
    ax.step(xs, ys, where="post", **style)


def member_styles(analysis: Analysis) -> dict[str, list[tuple[Any, str]]]:
    """Per family, one (colour, legend label) per member in compute order: viridis by rank, so members whose
    compute differs by a hair (a fine-tuned checkpoint) still get distinct colours."""
    out = {}
    for data in analysis.families:
        members = data.family.members
        colours = plt.get_cmap("viridis")(np.linspace(0.0, 0.9, len(members)))
        prefix = f"{data.family.name}: " if len(analysis.families) > 1 else ""
        out[data.family.name] = [
            (colours[k], f"{prefix}{m.name} ({_flops(m)})") for k, m in enumerate(members)
        ]
    return out


def _flops(member: Any) -> str:
    """Compute as a label; pretraining + fine-tuning when both, since the sum hides a small fine-tuning share."""
    fine = float(member.compute_detail.get("finetuning_flops") or 0.0)
    if fine > 0 and "pretraining_flops" in member.compute_detail:
        return f"{member.compute_detail['pretraining_flops']:.3g} + {fine:.3g} FLOPs"
    return f"{member.compute:.3g} FLOPs"


def fixed_layout(
    fig: plt.Figure,
    *,
    left: float,
    right: float,
    top: float,
    bottom: float,
    hspace: float = 0.3,
    wspace: float = 0.25,
) -> None:
    """Margins in inches. A fixed layout rather than tight/constrained ones, which measure every tick label
    again and cost seconds per figure."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        top=1 - top / height,
        bottom=bottom / height,
        hspace=hspace,
        wspace=wspace,
    )
