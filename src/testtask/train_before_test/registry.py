"""Figures and tables of `train-before-test`, by number; its typed settings and its actions."""

from __future__ import annotations

from testtask.papers import Builder, LazyMapping, Paper, Runner, lazy_in
from testtask.train_before_test.runner import settings as runner_settings
from testtask.train_before_test.settings import Settings

_ = lazy_in("testtask.train_before_test")

# Figure 1 (the NQ-Open/ARC-Challenge bump chart aligned by the paper's Algorithm 3) is not built: the algorithm
# did not survive in our copy of the text.
FIGURES: dict[int | str, Builder] = {
    2: _("agreement_figures:figure_2"),
    3: _("agreement_figures:figure_3"),
    4: _("perplexity_figures:figure_4"),
    5: _("perplexity_figures:figure_5"),
    6: _("pca_figures:figure_6"),
    7: _("pca_figures:figure_7"),
    8: _("pca_figures:figure_8"),
    9: _("agreement_figures:figure_9"),
    10: _("agreement_figures:figure_10"),
    11: _("pca_figures:figure_11"),
    12: _("agreement_figures:figure_12"),
    13: _("agreement_figures:figure_13"),
    14: _("agreement_figures:figure_14"),
    15: _("agreement_figures:figure_15"),
}
TABLES: dict[int | str, Builder] = {1: _("tables:table_1"), 3: _("tables:table_3"), 4: _("tables:table_4")}
CONFIG_KEY = "train_before_test"

PAPER = Paper(
    key="train-before-test",
    config_key=CONFIG_KEY,
    figures=FIGURES,
    tables=TABLES,
    settings=Settings,
    paper_text=("analysis", "runner"),
    actions=LazyMapping("testtask.train_before_test.actions:ACTIONS"),
    report=LazyMapping("testtask.train_before_test.report:FUNCTIONS"),
    runner=Runner(
        "train_before_test_run",
        "testtask.train_before_test.runner.main:run",
        settings=runner_settings.Settings,
    ),
    overlay=True,  # inputs.results lays a run's all_results.json over the release's
)
