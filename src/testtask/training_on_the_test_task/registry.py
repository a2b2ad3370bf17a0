"""Figures and tables of `training-on-the-test-task`, by number."""

from __future__ import annotations

from testtask.papers import Builder, LazyMapping, Paper, Runner, lazy_in
from testtask.training_on_the_test_task.runner import settings as runner_settings
from testtask.training_on_the_test_task.settings import Settings

_ = lazy_in("testtask.training_on_the_test_task")

FIGURES: dict[int | str, Builder] = {
    1: _("cohort_figures:figure_1"),
    2: _("comparison_figures:figure_2"),
    3: _("cohort_figures:figure_3"),
    4: _("cohort_figures:figure_4"),
    5: _("cohort_figures:figure_5"),
    6: _("comparison_figures:figure_6"),
    7: _("comparison_figures:figure_7"),
    8: _("emergence_figures:figure_8"),
    9: _("cohort_figures:figure_9"),
    11: _("cohort_figures:figure_11"),
    12: _("cohort_figures:figure_12"),
    13: _("cohort_figures:figure_13"),
    14: _("cohort_figures:figure_14"),
    15: _("cohort_figures:figure_15"),
    16: _("cohort_figures:figure_16"),
    17: _("comparison_figures:figure_17"),
    18: _("cohort_figures:figure_18"),
    19: _("emergence_figures:figure_19"),
    20: _("cohort_figures:figure_20"),
    "mini": _("mini_figure:before_after"),  # the CPU mini-replication (our runs only)
}
TABLES: dict[int, Builder] = {3: _("tables:table_3"), 4: _("tables:table_4"), 5: _("tables:table_5")}
CONFIG_KEY = "training_on_the_test_task"

PAPER = Paper(
    key="training-on-the-test-task",
    config_key=CONFIG_KEY,
    figures=FIGURES,
    tables=TABLES,
    settings=Settings,
    paper_text=("analysis", "runner"),
    actions=LazyMapping("testtask.training_on_the_test_task.actions:ACTIONS"),
    report=LazyMapping("testtask.training_on_the_test_task.report:FUNCTIONS"),
    overlay=True,  # lm.release.results lays a run's lm-eval files over the release's
    runner=Runner(
        "training_on_the_test_task_run",
        "testtask.training_on_the_test_task.runner.main:run",
        settings=runner_settings.Settings,
        user_files=runner_settings.USER_FILES,
        subcommands={"--train-job": "testtask.training_on_the_test_task.runner.main:train_job"},
    ),
)
