"""Figures and tables of `pretrain-on-test`, by number."""

from __future__ import annotations

from testtask.papers import Builder, LazyMapping, Paper, Runner, lazy_in
from testtask.pretrain_on_test.runner import settings as runner_settings
from testtask.pretrain_on_test.settings import Settings

_ = lazy_in("testtask.pretrain_on_test")

FIGURES: dict[int, Builder] = {
    3: _("boost_bias_figures:figure_3"),
    4: _("boost_bias_figures:figure_4"),
    5: _("boost_bias_figures:figure_5"),
    6: _("boost_bias_figures:figure_6"),
    7: _("meta_analysis_figures:figure_7"),
    8: _("correlation_figure:figure_8"),
    9: _("model_check_figures:figure_9"),
    10: _("model_check_figures:figure_10"),
    11: _("model_check_figures:figure_11"),
    12: _("recovery:figure_12"),
    **{number: _(f"difference_figures:figure_{number}") for number in range(13, 21)},
}
TABLES: dict[int | str, Builder] = {
    1: _("tables:table_1"),
    2: _("tables:table_2"),
    "contamination": _("contamination_table:table_contamination"),  # §9.2 (our runs only)
}
CONFIG_KEY = "pretrain_on_test"
# Actions beyond figures and tables: `testtask action=<name> paper=pretrain-on-test` (`make bench`, `make bench-vs-authors`).
ACTIONS = {"bench": _("bench:bench"), "bench-vs-authors": _("bench_vs_authors:bench_vs_authors")}

PAPER = Paper(
    key="pretrain-on-test",
    config_key=CONFIG_KEY,
    figures=FIGURES,
    tables=TABLES,
    settings=Settings,
    paper_text=("analysis", "runner"),
    overlay=True,  # inputs.load_collection lays a run's accuracies files over the release's
    actions=ACTIONS,
    report=LazyMapping("testtask.pretrain_on_test.report:FUNCTIONS"),
    runner=Runner(
        "pretrain_on_test_run",
        "testtask.pretrain_on_test.runner.main:run",
        settings=runner_settings.Settings,
        user_files=runner_settings.USER_FILES,
    ),
)
