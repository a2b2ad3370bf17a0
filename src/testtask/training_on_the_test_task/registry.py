"""Figures and tables of `training-on-the-test-task`, by number."""

from __future__ import annotations

from collections.abc import Callable

from testtask.context import Context
from testtask.papers import Paper, Runner
from testtask.training_on_the_test_task import cohort_figures as cf
from testtask.training_on_the_test_task import comparison_figures as cmp
from testtask.training_on_the_test_task import emergence_figures as em
from testtask.training_on_the_test_task import mini_figure, report, tables
from testtask.training_on_the_test_task.actions import ACTIONS
from testtask.training_on_the_test_task.runner import settings as runner_settings
from testtask.training_on_the_test_task.settings import Settings

Builder = Callable[[Context], dict]

FIGURES: dict[int | str, Builder] = {
    1: cf.figure_1,
    2: cmp.figure_2,
    3: cf.figure_3,
    4: cf.figure_4,
    5: cf.figure_5,
    6: cmp.figure_6,
    7: cmp.figure_7,
    8: em.figure_8,
    9: cf.figure_9,
    11: cf.figure_11,
    12: cf.figure_12,
    13: cf.figure_13,
    14: cf.figure_14,
    15: cf.figure_15,
    16: cf.figure_16,
    17: cmp.figure_17,
    18: cf.figure_18,
    19: em.figure_19,
    20: cf.figure_20,
    "mini": mini_figure.before_after,  # the CPU mini-replication (our runs only)
}
TABLES: dict[int, Builder] = {3: tables.table_3, 4: tables.table_4, 5: tables.table_5}
CONFIG_KEY = "training_on_the_test_task"

PAPER = Paper(
    key="training-on-the-test-task",
    config_key=CONFIG_KEY,
    figures=FIGURES,
    tables=TABLES,
    settings=Settings,
    paper_text=("analysis", "runner"),
    actions=ACTIONS,
    report=report.FUNCTIONS,
    overlay=True,  # lm.release.results lays a run's lm-eval files over the release's
    runner=Runner(
        "training_on_the_test_task_run",
        "testtask.training_on_the_test_task.runner.main:run",
        settings=runner_settings.Settings,
        user_files=runner_settings.USER_FILES,
        subcommands={"--train-job": "testtask.training_on_the_test_task.runner.main:train_job"},
    ),
)
