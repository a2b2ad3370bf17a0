"""Figures and tables of `proxy-tasks`, by number (as in the paper) or by name (our additions)."""

from __future__ import annotations

from collections.abc import Callable

from testtask.context import Context
from testtask.papers import Paper
from testtask.proxy_tasks import consistency_table, loo_outputs, relevance_figure, report, robustness_tables
from testtask.proxy_tasks.settings import Settings

Builder = Callable[[Context], dict]

FIGURES: dict[int | str, Builder] = {
    1: relevance_figure.figure_1,  # relevance of every candidate to the target, three metrics
    "loo": loo_outputs.figure_loo,  # leave-one-model-out predictions vs actual, beside the baselines
}
TABLES: dict[int | str, Builder] = {
    3: consistency_table.table_3,  # Algorithm 1's s / r per metric
    5: robustness_tables.table_5,  # variance ratios from the paper's own small-model ensembles (Table 4)
    "robustness": robustness_tables.table_robustness,  # stderr proxy of R on the published matrices
    "loo": loo_outputs.table_loo,  # every task as the target in turn
}
CONFIG_KEY = "proxy_tasks"

PAPER = Paper(
    key="proxy-tasks",
    config_key=CONFIG_KEY,
    figures=FIGURES,
    tables=TABLES,
    settings=Settings,
    uses=("train-before-test", "training-on-the-test-task"),
    report=report.FUNCTIONS,
)
