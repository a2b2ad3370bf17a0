"""proxy-tasks' typed settings: the schema of the composed `proxy_tasks` section (the matrices, the method, every
output's settings), every bad, missing or unknown key one line naming it, and the relations between keys."""

from __future__ import annotations

import dataclasses
import functools

import pytest

from tests.conftest import section_settings, section_violations
from testtask import papers
from testtask.pipeline import compose, typed
from testtask.proxy_tasks.settings import (
    AllTargets,
    Method,
    Metric,
    Normalisation,
    Perplexity,
    Reader,
    RobustnessMode,
    Settings,
    Stage,
    TrainBeforeTestReader,
)

PAPER = "proxy-tasks"
KEY = "proxy_tasks"
MATRICES = "tbt_direct, tbt_trained, tott_base, tott_adjusted"


_settings = functools.partial(section_settings, Settings, KEY)
_violations = functools.partial(section_violations, Settings, KEY)  # the lines of the ConfigError raised


def test_the_default_config_gives_typed_settings():
    s = _settings()
    assert isinstance(s.method, Method)
    assert s.method.eps_c == 0.3 and s.method.top_t == 10 and s.method.metric == "auto"
    assert (
        s.method.normalisation == Normalisation.two_step
        and s.method.robustness == RobustnessMode.stderr_proxy
    )
    assert s.method.metrics == (Metric.pearson, Metric.spearman, Metric.kendall)
    assert s.train_before_test == TrainBeforeTestReader(
        "all_results.json", ["arxiv_2025", "wiki_2025", "stackexchange_2025"], Perplexity.exclude
    )
    assert list(s.matrices) == MATRICES.split(", ")
    tott = s.matrix("tott_base")
    assert (tott.reader, tott.stage, tott.regime) == (Reader.training_on_the_test_task, Stage.base, None)
    assert tott.benchmarks[:2] == ["mmlu", "mmlu_cloze"]
    assert s.matrix("tbt_direct").regime == "direct_eval"
    assert s.method_for("tott_adjusted").top_t == 4 and s.method_for("tbt_direct").top_t == 10
    assert s.method_for("tbt_direct").n_models == 10  # the matrix keeps consistency.n_models (null)
    assert s.robustness.ensemble_labels == {"data": "data_variability", "noise": "random_noise"}
    assert s.robustness.ensembles_file is None and s.evaluation.bootstrap == 2000
    assert s.table_3.configs[0] == (6, 25) and s.table_5.ensembles.endswith("paper_table4.yaml")
    assert s.figure_loo.panels[0].matrix == "tbt_direct" and s.table_loo.targets == AllTargets.all
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.table_3.repeats = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.matrix("tbt_direct").top_t = 3  # type: ignore[misc]
    with pytest.raises(KeyError, match="known: tbt_direct"):
        s.matrix("nope")


def test_a_matrix_overrides_the_method_where_it_sets_a_value():
    s = _settings(f"{KEY}.matrices.tbt_direct.n_models=6", f"{KEY}.matrices.tbt_direct.robustness=none")
    method = s.method_for("tbt_direct")
    assert (method.n_models, method.robustness, method.top_t) == (6, RobustnessMode.none, 10)
    assert s.method_for("tbt_trained") == dataclasses.replace(s.method, top_t=10)


def test_the_pipeline_types_the_section_once_per_context():
    """The builders read `ctx.settings`: the section as the pipeline types it."""
    assert papers.get(PAPER).settings is Settings
    config = typed(compose([f"paper={PAPER}", f"{KEY}.evaluation.bootstrap=200"]))
    assert isinstance(config.proxy_tasks, Settings) and config.proxy_tasks.evaluation.bootstrap == 200
    assert _settings(f"{KEY}.table_loo.targets=[gsm8k]").table_loo.targets == ["gsm8k"]


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (
            [f"{KEY}.normalisation=zscore"],
            f"{KEY}.normalisation = 'zscore': expected one of two_step, feature, none",
        ),
        ([f"{KEY}.consistency.n_models=2"], f"{KEY}.consistency.n_models = 2: expected an integer >= 3"),
        ([f"{KEY}.consistency.samples=1"], f"{KEY}.consistency.samples = 1: expected an integer >= 2"),
        (
            [f"{KEY}.consistency.min_top_frequency=1.5"],
            f"{KEY}.consistency.min_top_frequency = 1.5: expected a number in [0, 1]",
        ),
        ([f"{KEY}.evaluation.bootstrap=0"], f"{KEY}.evaluation.bootstrap = 0: expected a positive integer"),
        ([f"{KEY}.evaluation.ci_level=95"], f"{KEY}.evaluation.ci_level = 95: expected a number in (0, 1)"),
        (
            [f"{KEY}.relevance.metrics=[pearson,tau]"],
            f"{KEY}.relevance.metrics = ['pearson', 'tau']: expected a non-empty list, each item one of pearson, "
            "spearman, kendall",
        ),
        (
            [f"{KEY}.relevance.metric=best"],
            f"{KEY}.relevance.metric = 'best': expected auto or one of pearson, spearman, kendall",
        ),
        (
            [f"{KEY}.robustness.mode=variance"],
            f"{KEY}.robustness.mode = 'variance': expected one of none, stderr_proxy, ensembles",
        ),
        (
            [f"{KEY}.combination.if_none_selected=skip"],
            f"{KEY}.combination.if_none_selected = 'skip': expected one of best_single, error",
        ),
        (
            [f"{KEY}.combination.max_proxies=0"],
            f"{KEY}.combination.max_proxies = 0: expected a positive integer (or null)",
        ),
        (
            [f"{KEY}.train_before_test.perplexity=keep"],
            f"{KEY}.train_before_test.perplexity = 'keep': expected one of exclude, flip",
        ),
        (
            [f"{KEY}.matrices.tott_base.stage=final"],
            f"{KEY}.matrices.tott_base.stage = 'final': expected one of base, adjusted (or null)",
        ),
        (
            [f"{KEY}.matrices.tbt_direct.reader=other"],
            f"{KEY}.matrices.tbt_direct.reader = 'other': expected one of train_before_test, "
            "training_on_the_test_task, csv",
        ),
        (
            [f"{KEY}.matrices.tbt_direct.n_models=2"],
            f"{KEY}.matrices.tbt_direct.n_models = 2: expected an integer >= 3 (or null)",
        ),
        (
            [f"{KEY}.table_3.configs=[[2,25]]"],
            f"{KEY}.table_3.configs = [[2, 25]]: expected a list, each item a pair [n, k] of integers, "
            "n >= 3 and k >= 2",
        ),
        ([f"{KEY}.table_loo.workers=0"], f"{KEY}.table_loo.workers = 0: expected a positive integer"),
        (
            [f"{KEY}.table_loo.targets=some"],
            f"{KEY}.table_loo.targets = 'some': expected all or a list of task names",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_its_key(overrides, line):
    assert _violations(*overrides) == [line]


def test_an_unknown_key_of_a_matrix_names_the_keys_there_are():
    (line,) = _violations(f"+{KEY}.matrices.tbt_direct.top-t=3")
    assert line == (
        f"{KEY}.matrices.tbt_direct.top-t: unknown key (did you mean top_t?); the keys here are label, reader, "
        "regime, stage, benchmarks, file, stderr_file, top_t, n_models, robustness"
    )


def test_a_matrix_has_what_its_reader_needs():
    assert _violations(f"{KEY}.matrices.tbt_direct.regime=null") == [
        f"{KEY}.matrices.tbt_direct.regime = None: expected a value with reader train_before_test"
    ]
    assert _violations(
        f"{KEY}.matrices.tott_base.stage=null", f"{KEY}.matrices.tott_base.benchmarks=null"
    ) == [
        f"{KEY}.matrices.tott_base.stage = None: expected a value with reader training_on_the_test_task",
        f"{KEY}.matrices.tott_base.benchmarks = None: expected a value with reader training_on_the_test_task",
    ]


def test_a_matrix_leaves_the_keys_of_other_readers_null():
    assert _violations(
        f"{KEY}.matrices.tbt_direct.file=scores.csv", f"{KEY}.matrices.tott_base.regime=x"
    ) == [
        f"{KEY}.matrices.tbt_direct.file = 'scores.csv': expected null with reader train_before_test",
        f"{KEY}.matrices.tott_base.regime = 'x': expected null with reader training_on_the_test_task",
    ]
    csv = f"{KEY}.matrices.tbt_direct"
    assert _violations(f"{csv}.reader=csv") == [
        f"{csv}.file = None: expected a value with reader csv",
        f"{csv}.regime = 'direct_eval': expected null with reader csv",
    ]
    own = _settings(f"{csv}.reader=csv", f"{csv}.regime=null", f"{csv}.file=s.csv").matrix("tbt_direct")
    assert (own.reader, own.file, own.stderr_file, own.tasks()) == (Reader.csv, "s.csv", None, None)


def test_a_target_is_a_benchmark_of_the_matrices_whose_tasks_the_config_lists():
    """A training-on-the-test-task matrix lists its benchmarks: a target outside them stops before anything runs
    (the other readers' tasks are in their data, checked when it is read)."""
    tott = f"{KEY}.matrices.tott_base.benchmarks"
    lines = _violations(f"{KEY}.figure_loo.panels.2.target=ifeval", f"{KEY}.figure_1.target=ifeval")
    assert (
        lines[0]
        == f"{KEY}.figure_loo.panels[2].target = 'ifeval': expected one of {tott} (mmlu, mmlu_cloze, "
        + (", ".join(_settings().matrix("tott_base").benchmarks[2:]))
        + ")"
    )
    assert [line.split(" (")[0] for line in lines[1:]] == [
        f"{KEY}.figure_1.target = 'ifeval': expected one of {tott}"
    ]
    assert (
        _settings(f"{KEY}.figure_loo.panels.0.target=ifeval").figure_loo.panels[0].target == "ifeval"
    )  # tbt


def test_the_lists_of_matrices_are_keys_of_matrices():
    assert _violations(f"{KEY}.table_loo.matrices=[tbt_direct,nope]", f"{KEY}.figure_1.matrices=[nada]") == [
        f"{KEY}.figure_1.matrices = ['nada']: expected keys of {KEY}.matrices ({MATRICES})",
        f"{KEY}.table_loo.matrices = ['tbt_direct', 'nope']: expected keys of {KEY}.matrices ({MATRICES})",
    ]
    assert _violations(f"{KEY}.table_3.matrices=[x]", f"{KEY}.table_robustness.matrices=[y]") == [
        f"{KEY}.table_3.matrices = ['x']: expected keys of {KEY}.matrices ({MATRICES})",
        f"{KEY}.table_robustness.matrices = ['y']: expected keys of {KEY}.matrices ({MATRICES})",
    ]
    assert _violations(f"{KEY}.figure_loo.panels.1.matrix=tbt") == [
        f"{KEY}.figure_loo.panels[1].matrix = 'tbt': expected a key of {KEY}.matrices ({MATRICES})"
    ]


def test_the_relevance_metrics_are_among_the_compared_ones():
    assert _violations(f"{KEY}.relevance.metrics=[pearson]") == [
        f"{KEY}.relevance.fallback_metric = 'kendall': expected one of {KEY}.relevance.metrics (pearson)"
    ]
    assert _violations(f"{KEY}.relevance.metrics=[pearson]", f"{KEY}.relevance.metric=spearman") == [
        f"{KEY}.relevance.metric = 'spearman': expected auto or one of {KEY}.relevance.metrics (pearson)",
        f"{KEY}.relevance.fallback_metric = 'kendall': expected one of {KEY}.relevance.metrics (pearson)",
    ]


def test_ensembles_need_their_file():
    assert _violations(f"{KEY}.robustness.mode=ensembles") == [
        f"{KEY}.robustness.ensembles_file = None: expected a file with {KEY}.robustness.mode=ensembles"
    ]
    assert _settings(
        f"{KEY}.robustness.mode=ensembles", f"{KEY}.robustness.ensembles_file=e.csv"
    ).method.robustness == (RobustnessMode.ensembles)
