"""Overrides of the `testtask` command are validated when the config is composed, before anything is written.

The hostile-user findings, each reproduced here: the analysis CLI's `sampler.draws=-10` gave an OverflowError,
`sampler.chains=0` an AttributeError, and a bad `pretrain_on_test.model.backend` was caught only at fit time. Then:
every analysis option composes to a config that passes, and the known sets of testtask.config_checks equal the
constants of the code that consumes them. (The runners' configs: tests/test_runner_settings.py.)
"""

from __future__ import annotations

import pytest

from testtask.paths import conf_dir


def checks():
    """The module under test, imported per test: the tests below fail on behaviour, not on a missing module."""
    from testtask import config_checks

    return config_checks


def analysis(*overrides: str):
    from testtask.pipeline import compose as cli_compose

    return cli_compose(list(overrides))


def violations(fn_name: str, cfg) -> list[str]:
    """The lines of the ConfigError `fn_name` raises on `cfg` ([] when it passes)."""
    cc = checks()
    try:
        getattr(cc, fn_name)(cfg)
    except cc.ConfigError as err:
        assert str(err).splitlines() == [f"invalid config: {v}" for v in err.violations]
        return err.violations
    return []


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("sampler.draws=-10", "sampler.draws = -10: expected a positive integer"),  # was an OverflowError
        ("sampler.chains=0", "sampler.chains = 0: expected a positive integer"),  # was an AttributeError
        (
            "pretrain_on_test.model.backend=foo",  # was caught only at fit time
            "pretrain_on_test.model.backend = 'foo': expected one of marginal, bambi",
        ),
    ],
)
def test_analysis_findings_are_config_errors_naming_the_key(override, line):
    assert violations("check_analysis_config", analysis(override)) == [line]
    with pytest.raises(
        checks().ConfigError, match=f"^invalid config: {line}$".replace("(", r"\(").replace(")", r"\)")
    ):
        checks().check_analysis_config(analysis(override))


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (["sampler.name=hmc"], "sampler.name = 'hmc': expected one of nutpie, pymc, numpyro"),
        (["sampler.tune=-1"], "sampler.tune = -1: expected an integer >= 0"),
        (["sampler.draws=1.5"], "sampler.draws = 1.5: expected a positive integer"),
        (["sampler.draws=true"], "sampler.draws = True: expected a positive integer"),
        (["sampler.target_accept=1.0"], "sampler.target_accept = 1.0: expected a number in (0, 1)"),
        (["sampler.cores=0"], "sampler.cores = 0: expected a positive integer"),
        (
            ["sampler=numpyro", "sampler.chain_method=fast"],
            "sampler.chain_method = 'fast': expected one of parallel, sequential, vectorized",
        ),
        (["seed=abc"], "seed = 'abc': expected an integer >= 0"),
        (["source=mirror"], "source = 'mirror': expected one of published, results, published+results"),
        (
            ["log_level=LOUD"],
            "log_level = 'LOUD': expected one of CRITICAL, FATAL, ERROR, WARN, WARNING, INFO, DEBUG, NOTSET",
        ),
        (
            ["pretrain_on_test.effects=[boost,bais]"],
            "pretrain_on_test.effects = ['boost', 'bais']: expected a list, each item one of boost, bias",
        ),
        (
            ["pretrain_on_test.figure_7.slices=0"],
            "pretrain_on_test.figure_7.slices = 0: expected a positive integer",
        ),
        (
            ["pretrain_on_test.predictive.hdi_prob=89"],
            "pretrain_on_test.predictive.hdi_prob = 89: expected a number in (0, 1)",
        ),
        (
            ["pretrain_on_test.model.priors.sigma_W=-1"],
            "pretrain_on_test.model.priors.sigma_W = -1: expected a number > 0",
        ),
        (
            ["training_on_the_test_task.regression.cov_type=HC9"],
            "training_on_the_test_task.regression.cov_type = 'HC9': expected one of cluster, nonrobust, HC0, HC1, HC2, HC3",
        ),
        (
            ["training_on_the_test_task.model_values=mine"],
            "training_on_the_test_task.model_values = 'mine': expected one of paper, authors",
        ),
        (
            ["training_on_the_test_task.benchmarks.gsm8k.aggregate=mean"],
            "training_on_the_test_task.benchmarks.gsm8k.aggregate = 'mean': expected one of own, entries_mean",
        ),
        (
            ["training_on_the_test_task.emergence.batch_size=-64"],
            "training_on_the_test_task.emergence.batch_size = -64: expected a positive integer",
        ),
        (
            ["train_before_test.ties.rule=strict"],
            "train_before_test.ties.rule = 'strict': expected one of pairwise, leader",
        ),
        (
            ["train_before_test.pca.n_components=0"],
            "train_before_test.pca.n_components = 0: expected a positive integer",
        ),
        (
            ["downstream_predictability.normalisation=tokens"],
            "downstream_predictability.normalisation = 'tokens': expected one of none, chars, bytes",
        ),
        (
            ["downstream_predictability.figure_6.incorrect=all"],
            "downstream_predictability.figure_6.incorrect = 'all': expected one of sum, each",
        ),
        (
            ["downstream_predictability.figure_2.bins=0"],
            "downstream_predictability.figure_2.bins = 0: expected a positive integer",
        ),
        (
            ["proxy_tasks.normalisation=zscore"],
            "proxy_tasks.normalisation = 'zscore': expected one of two_step, feature, none",
        ),
        (
            ["proxy_tasks.consistency.n_models=2"],
            "proxy_tasks.consistency.n_models = 2: expected an integer >= 3",
        ),
        (
            ["proxy_tasks.evaluation.bootstrap=0"],
            "proxy_tasks.evaluation.bootstrap = 0: expected a positive integer",
        ),
    ],
)
def test_analysis_overrides_are_checked(overrides, line):
    assert violations("check_analysis_config", analysis(*overrides)) == [line]


def test_analysis_references_between_keys():
    assert violations(
        "check_analysis_config", analysis("training_on_the_test_task.figure_1.benchmarks=[mmlu,gsm8kk]")
    ) == [
        "training_on_the_test_task.figure_1.benchmarks = ['mmlu', 'gsm8kk']: expected keys of "
        "training_on_the_test_task.benchmarks ("
        + ", ".join(analysis().training_on_the_test_task.benchmarks)
        + ")"
    ]
    lines = violations(
        "check_analysis_config",
        analysis(
            "proxy_tasks.relevance.metrics=[pearson]", "proxy_tasks.table_loo.matrices=[tbt_direct,nope]"
        ),
    )
    assert lines == [
        "proxy_tasks.table_loo.matrices = ['tbt_direct', 'nope']: expected keys of proxy_tasks.matrices "
        "(tbt_direct, tbt_trained, tott_base, tott_adjusted)",
        "proxy_tasks.relevance.fallback_metric = 'kendall': expected one of proxy_tasks.relevance.metrics (pearson)",
    ]
    assert violations("check_analysis_config", analysis("downstream_predictability.methods=[pearson]")) == [
        "downstream_predictability.focus.method = 'spearman': expected one of the computed "
        "downstream_predictability.methods (pearson)"
    ]


def test_every_violation_is_listed_one_line_each():
    cc = checks()
    with pytest.raises(cc.ConfigError) as err:
        cc.check_analysis_config(
            analysis("sampler.draws=-10", "sampler.chains=0", "pretrain_on_test.model.backend=foo")
        )
    assert isinstance(err.value, ValueError)
    assert str(err.value).splitlines() == [
        "invalid config: sampler.draws = -10: expected a positive integer",
        "invalid config: sampler.chains = 0: expected a positive integer",
        "invalid config: pretrain_on_test.model.backend = 'foo': expected one of marginal, bambi",
    ]


def test_cli_compose_itself_does_not_check():
    """Notebooks and tests compose configs (even deliberately odd ones) and build from them: unchanged."""
    cfg = analysis("sampler.draws=-10")
    assert cfg.sampler.draws == -10
    cfg.sampler.draws = 10  # compose's config stays writable
    assert violations("check_analysis_config", cfg) == []


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (conf_dir() / group).glob("*.yaml"))


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        *([f"sampler={s}"] for s in _options("sampler")),
        ["source=results"],
        ["results_run=null", "cache_dir=null"],
        ["downstream_predictability.families_used=[smollm2-135m-cpu-mini]"],
    ],
)
def test_analysis_defaults_and_options_pass(overrides):
    assert violations("check_analysis_config", analysis(*overrides)) == []


# --- the known sets are the code's ---------------------------------------------------------------------------


def test_known_sets_equal_the_constants_of_the_code_that_reads_them():
    import typing

    from testtask.downstream_predictability import chain, correlations, statistics
    from testtask.lm import models, results
    from testtask.pretrain_on_test import accuracies, sampling
    from testtask.proxy_tasks import correlation, normalise, settings
    from testtask.train_before_test import ties
    from testtask.training_on_the_test_task import regression

    cc = checks()
    pairs = {
        "EFFECTS": tuple(accuracies.EFFECTS),
        "SAMPLERS": sampling.SAMPLERS,
        "BACKENDS": sampling.BACKENDS,
        "MODEL_KINDS": models.KINDS,
        "AGGREGATES": ("own", results.ENTRIES_MEAN),
        "COV_TYPES": typing.get_args(regression.CovType),
        "TIE_RULES": ties.RULES,
        "DP_NORMALISATIONS": chain.NORMALISATIONS,
        "DP_QUANTITIES": chain.QUANTITIES,
        "DP_METHODS": correlations.METHODS,
        "DP_UNDEFINED": statistics.UNDEFINED_POLICIES,
        "PROXY_METRICS": correlation.METRICS,
        "PROXY_NORMALISATIONS": normalise.MODES,
        "PROXY_ROBUSTNESS": settings.ROBUSTNESS_MODES,
    }
    assert {k: tuple(getattr(cc, k)) for k in pairs} == {k: tuple(v) for k, v in pairs.items()}
