"""Figures and tables of `downstream-predictability`, by number.

The paper released no per-sample logs, so every figure reads our runs (source=results: the families of
`downstream_predictability.families`); with source=published the builders raise InputsUnavailable.
"""

from __future__ import annotations

from collections.abc import Callable

from testtask.context import Context
from testtask.downstream_predictability.settings import Settings
from testtask.papers import Lazy, LazyMapping, Paper

Builder = Callable[[Context], dict]


def _(target: str) -> Lazy:
    """A builder of this package, imported when it runs (checking a config imports no figure module)."""
    return Lazy(f"testtask.downstream_predictability.{target}")


FIGURES: dict[int | str, Builder] = {
    2: _("distribution_figures:figure_2"),
    3: _("distribution_figures:figure_3"),
    4: _("distribution_figures:figure_4"),
    5: _("mechanism_figures:figure_5"),
    6: _("mechanism_figures:figure_6"),
}
TABLES: dict[int | str, Builder] = {}
CONFIG_KEY = "downstream_predictability"

PAPER = Paper(
    key="downstream-predictability",
    config_key=CONFIG_KEY,
    figures=FIGURES,
    tables=TABLES,
    settings=Settings,
    report=LazyMapping("testtask.downstream_predictability.report:FUNCTIONS"),
)
