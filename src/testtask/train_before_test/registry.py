"""Figures and tables of `train-before-test`, by number; its typed settings and its actions."""

from __future__ import annotations

from collections.abc import Callable

from testtask.context import Context
from testtask.papers import Paper, Runner
from testtask.train_before_test import agreement_figures as ag
from testtask.train_before_test import pca_figures as pf
from testtask.train_before_test import perplexity_figures as pp
from testtask.train_before_test import report, tables
from testtask.train_before_test.actions import ACTIONS
from testtask.train_before_test.runner import settings as runner_settings
from testtask.train_before_test.settings import Settings

Builder = Callable[[Context], dict]

# Figure 1 (the NQ-Open/ARC-Challenge bump chart aligned by the paper's Algorithm 3) is not built: the algorithm
# did not survive in our copy of the text.
FIGURES: dict[int | str, Builder] = {
    2: ag.figure_2,
    3: ag.figure_3,
    4: pp.figure_4,
    5: pp.figure_5,
    6: pf.figure_6,
    7: pf.figure_7,
    8: pf.figure_8,
    9: ag.figure_9,
    10: ag.figure_10,
    11: pf.figure_11,
    12: ag.figure_12,
    13: ag.figure_13,
    14: ag.figure_14,
    15: ag.figure_15,
}
TABLES: dict[int | str, Builder] = {1: tables.table_1, 3: tables.table_3, 4: tables.table_4}
CONFIG_KEY = "train_before_test"

PAPER = Paper(
    key="train-before-test",
    config_key=CONFIG_KEY,
    figures=FIGURES,
    tables=TABLES,
    settings=Settings,
    paper_text=("analysis", "runner"),
    actions=ACTIONS,
    report=report.FUNCTIONS,
    runner=Runner(
        "train_before_test_run",
        "testtask.train_before_test.runner.main:run",
        settings=runner_settings.Settings,
    ),
    overlay=True,  # inputs.results lays a run's all_results.json over the release's
)
