"""Figures and tables of `pretrain-on-test`, by number."""

from __future__ import annotations

from collections.abc import Callable

from testtask.context import Context
from testtask.papers import Paper, Runner
from testtask.pretrain_on_test import bench, descriptive, posterior_figures

Builder = Callable[[Context], dict]

FIGURES: dict[int, Builder] = {
    3: posterior_figures.figure_3,
    4: posterior_figures.figure_4,
    5: posterior_figures.figure_5,
    6: posterior_figures.figure_6,
    7: posterior_figures.figure_7,
    8: descriptive.figure_8,
    9: posterior_figures.figure_9,
    10: posterior_figures.figure_10,
    11: posterior_figures.figure_11,
    12: posterior_figures.figure_12,
    **{number: getattr(descriptive, f"figure_{number}") for number in range(13, 21)},
}
TABLES: dict[int, Builder] = {1: descriptive.table_1, 2: descriptive.table_2}
CONFIG_KEY = "pretrain_on_test"
# Actions beyond figures and tables: `testtask action=<name> paper=pretrain-on-test` (`make bench`).
ACTIONS = {"bench": bench.bench}

PAPER = Paper(
    key="pretrain-on-test",
    config_key=CONFIG_KEY,
    figures=FIGURES,
    tables=TABLES,
    actions=ACTIONS,
    runner=Runner("pretrain_on_test_run", "testtask.pretrain_on_test.runner.main:run"),
)
