"""Figures and tables of `proxy-tasks`, by number (as in the paper) or by name (our additions)."""

from __future__ import annotations

from testtask.papers import Builder, LazyMapping, Paper, lazy_in
from testtask.proxy_tasks.settings import Settings

_ = lazy_in("testtask.proxy_tasks")

FIGURES: dict[int | str, Builder] = {
    1: _("relevance_figure:figure_1"),  # relevance of every candidate to the target, three metrics
    "loo": _("loo_outputs:figure_loo"),  # leave-one-model-out predictions vs actual, beside the baselines
}
TABLES: dict[int | str, Builder] = {
    3: _("consistency_table:table_3"),  # Algorithm 1's s / r per metric
    5: _("robustness_tables:table_5"),  # variance ratios from the paper's own small-model ensembles (Table 4)
    "robustness": _("robustness_tables:table_robustness"),  # stderr proxy of R on the published matrices
    "loo": _("loo_outputs:table_loo"),  # every task as the target in turn
}
CONFIG_KEY = "proxy_tasks"

PAPER = Paper(
    key="proxy-tasks",
    config_key=CONFIG_KEY,
    figures=FIGURES,
    tables=TABLES,
    settings=Settings,
    uses=("train-before-test", "training-on-the-test-task"),
    report=LazyMapping("testtask.proxy_tasks.report:FUNCTIONS"),
)
