"""Figures and tables of `downstream-predictability`, by number.

The paper released no per-sample logs, so every figure reads our runs (source=results: the families of
`downstream_predictability.families`); with source=published the builders raise InputsUnavailable.
"""

from __future__ import annotations

from testtask.downstream_predictability.settings import Settings
from testtask.papers import Builder, LazyMapping, Paper, lazy_in

_ = lazy_in("testtask.downstream_predictability")

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
