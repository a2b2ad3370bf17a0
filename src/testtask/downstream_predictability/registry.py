"""Figures and tables of `downstream-predictability`, by number.

The paper released no per-sample logs, so every figure reads our runs (source=results: the families of
`downstream_predictability.families`); with source=published the builders raise InputsUnavailable.
"""

from __future__ import annotations

from collections.abc import Callable

from testtask.context import Context
from testtask.downstream_predictability import distribution_figures as dist
from testtask.downstream_predictability import mechanism_figures as mech
from testtask.downstream_predictability import report
from testtask.downstream_predictability.settings import Settings
from testtask.papers import Paper

Builder = Callable[[Context], dict]

FIGURES: dict[int | str, Builder] = {
    2: dist.figure_2,
    3: dist.figure_3,
    4: dist.figure_4,
    5: mech.figure_5,
    6: mech.figure_6,
}
TABLES: dict[int | str, Builder] = {}
CONFIG_KEY = "downstream_predictability"

PAPER = Paper(
    key="downstream-predictability",
    config_key=CONFIG_KEY,
    figures=FIGURES,
    tables=TABLES,
    settings=Settings,
    report=report.FUNCTIONS,
)
