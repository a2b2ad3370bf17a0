"""pretrain-on-test's settings: one schema (`pretrain_on_test/settings.py`) types the composed `pretrain_on_test`
section once, frozen; every bad, missing or unknown key is an error line naming it, the value and what is allowed,
all at once."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from omegaconf import OmegaConf

from testtask import papers, schema
from testtask.pipeline import check, compose, configured
from testtask.pretrain_on_test.fits import fit_key, spec_from
from testtask.pretrain_on_test.hierarchical import ModelData
from testtask.pretrain_on_test.settings import Counts, ModelSpec, Priors, Settings, SliceDraw
from testtask.schema import ConfigError


@pytest.fixture(scope="module")
def section():
    return compose()["pretrain_on_test"]


@pytest.fixture(scope="module")
def settings() -> Settings:
    return configured("pretrain-on-test")


def test_default_config_gives_typed_settings(settings: Settings):
    assert settings.collections.names() == {
        "few_shot": "accuracies_from_paper",
        "overtrained": "accuracies_gpt2_epochs_2",
        "zero_shot": "accuracies_zero_shot",
        "zero_shot_packing": "accuracies_zero_shot_packing",
    }
    model = settings.model
    assert isinstance(model, ModelSpec) and isinstance(model.priors, Priors)
    assert (model.backend, model.interaction, model.noncentered_t) == ("marginal", True, "auto")
    assert model.formula.startswith("p(correct, trials) ~ 1 + lm_type + treatment")
    assert model.priors.sigma_W == pytest.approx(3.5355) and isinstance(model.priors.treatment_mu, float)
    assert settings.predictive.hdi_prob == pytest.approx(0.89) and settings.predictive.max_draws == 4000
    assert settings.effects == ["boost", "bias"]
    assert settings.counts is Counts.truncate
    assert settings.figure_4.threshold == pytest.approx(0.03)
    f7 = settings.figure_7
    assert (f7.slices, f7.m, f7.n, f7.draws, f7.tune) == (500, 100, 500, 4000, 500)
    assert (f7.band, f7.band_zero_shot) == (pytest.approx(0.04), pytest.approx(0.08))
    assert f7.draw is SliceDraw.per_lm_type
    assert settings.figure_8.permutations == 10
    assert (settings.figure_9.m, settings.figure_9.n) == (100, 200)
    assert (settings.figure_11.m, settings.figure_11.n, settings.figure_11.draws) == (100, 200, 500)
    f12 = settings.figure_12
    assert (f12.datasets, f12.subsamples, f12.n, f12.lm_types) == (25, 50, 200, 2)
    assert (f12.null_beta, f12.effect_beta) == (0.0, pytest.approx(0.1))
    assert isinstance(f12.null_beta, float) and isinstance(f12.n, int)
    assert settings.permutation_test.permutations == 10_000


def test_the_model_has_one_value_for_the_subsample_effect_and_it_is_the_yamls(settings: Settings):
    """The §6.1 model carries V_jk unless a setting says otherwise: the YAML's value, not a default in code (an
    object built without the settings no longer gets the paper-text behaviour of Figure 7's slices)."""
    assert settings.model.subsample_effect is True
    assert settings.figure_7.subsample_effect is False
    assert schema.defaults_in_code(Settings) == []
    with pytest.raises(ValueError, match="subsample_effect"):
        ModelSpec(  # type: ignore[call-arg]
            backend="marginal",
            interaction=True,
            noncentered_t="auto",
            collapse_s="auto",
            priors=settings.model.priors,
            formula="y ~ 1",
        )


def test_settings_are_frozen(settings: Settings):
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.figure_7 = settings.figure_8  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.figure_7.slices = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.model.priors.sigma_W = 1.0  # type: ignore[misc]


def test_the_plugin_names_the_schema(section, settings: Settings):
    plugin = papers.get("pretrain-on-test")
    assert plugin.settings is Settings
    assert schema.load(Settings, section, "pretrain_on_test") == settings
    assert schema.load(Settings, OmegaConf.to_container(section, resolve=True)) == settings


def _with(section, path: str, value) -> dict:
    plain = OmegaConf.to_container(section, resolve=True)
    node = plain
    *parents, last = path.split(".")
    for key in parents:
        node = node[key]
    if value is _MISSING:
        del node[last]
    else:
        node[last] = value
    return plain


_MISSING = object()


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("figure_7.slices", 0, "a positive integer"),
        ("figure_7.slices", "many", "a positive integer"),
        ("figure_7.tune", -1, "an integer >= 0"),
        ("figure_7.band", -0.1, "a number >= 0"),
        ("figure_7.chains", 0, "a positive integer"),
        ("figure_7.draws", 1.5, "a positive integer"),
        ("figure_7.interaction", "yes", "true or false"),
        ("figure_7.subsample_effect", 1, "true or false"),
        ("figure_7.draw", "per_dataset", "one of per_lm_type, per_task"),
        ("counts", "floor", "one of truncate, round"),
        ("figure_12.n", 2.5, "a positive integer"),
        ("figure_4.threshold", "high", "a number"),
        ("figure_4.strict", "no", "true or false"),
        ("model.backend", "foo", "one of marginal, bambi"),
        ("model.interaction", "yes", "true or false"),
        ("model.noncentered_t", 1, "true, false or auto"),
        ("model.priors.sigma_W", 0.0, "a number > 0"),
        ("model.priors.sigma_W", -1, "a number > 0"),
        ("predictive.hdi_prob", 1.5, "a number in (0, 1)"),
        ("predictive.hdi_prob", 89, "a number in (0, 1)"),
        ("predictive.max_draws", 0, "a positive integer (or null)"),
        ("permutation_test.alpha", 0, "a number in (0, 1)"),
        ("collections.few_shot", "", "a non-empty string"),
        ("effects", ["boost", "bais"], "a non-empty list, each item one of boost, bias"),
        ("effects", [], "a non-empty list, each item one of boost, bias"),
        ("bench.vs_authors.effect", "both", "one of boost, bias"),
    ],
)
def test_a_bad_value_is_one_line_naming_key_value_and_what_is_allowed(section, path, value, expected):
    with pytest.raises(ConfigError) as err:
        schema.load(Settings, _with(section, path, value), "pretrain_on_test")
    assert err.value.violations == [f"pretrain_on_test.{path} = {value!r}: expected {expected}"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("figure_11.draws", "a positive integer"),
        ("collections.zero_shot", "a non-empty string"),
        ("model.priors.sigma_V", "a number > 0"),
        ("model.subsample_effect", "true or false"),
        ("effects", "a non-empty list, each item one of boost, bias"),
        ("counts", "one of truncate, round"),
    ],
)
def test_a_missing_value_is_an_error_not_a_default(section, path, expected):
    with pytest.raises(ConfigError) as err:
        schema.load(Settings, _with(section, path, _MISSING), "pretrain_on_test")
    assert err.value.violations == [f"pretrain_on_test.{path}: missing, expected {expected}"]


def test_a_misspelled_key_names_the_key_it_resembles(section):
    plain = _with(section, "figure_7.chians", 3)
    with pytest.raises(ConfigError) as err:
        schema.load(Settings, plain, "pretrain_on_test")
    (line,) = err.value.violations
    assert line.startswith("pretrain_on_test.figure_7.chians: unknown key (did you mean chains?)")


def test_every_bad_key_of_the_composed_config_is_listed_at_once():
    cfg = compose(
        [
            "sampler.draws=-10",
            "pretrain_on_test.counts=floor",
            "pretrain_on_test.figure_7.chains=0",
            "+pretrain_on_test.figure_7.chians=2",
        ]
    )
    with pytest.raises(ConfigError) as err:
        check(cfg)
    assert err.value.violations[:3] == [
        "sampler.draws = -10: expected a positive integer",
        "pretrain_on_test.counts = 'floor': expected one of truncate, round",
        "pretrain_on_test.figure_7.chains = 0: expected a positive integer",
    ]
    assert err.value.violations[3].startswith(
        "pretrain_on_test.figure_7.chians: unknown key (did you mean chains?)"
    )
    assert (
        str(err.value).splitlines()[0] == "invalid config: sampler.draws = -10: expected a positive integer"
    )


def test_model_spec_and_fit_cache_key_are_those_of_the_config(settings: Settings):
    """The spec, and so the posterior cache key, is the one the old settings reader gave for the same config:
    existing caches stay valid (keys pinned from that code)."""
    assert spec_from(settings) == settings.model
    assert spec_from(settings, interaction=False) == dataclasses.replace(settings.model, interaction=False)
    data = ModelData(
        np.ones((1, 1, 1, 2), dtype=np.int64), np.full((1, 1, 1, 2), 2), ["d"], ["a"], np.array([1])
    )
    sampler = {"name": "nutpie", "draws": 10, "tune": 10, "chains": 1}
    assert fit_key(data, spec_from(settings), sampler, 0) == "845958030ab4362f117f"
    assert fit_key(data, spec_from(settings, interaction=False), sampler, 0) == "cb536f4d073b8f9b8289"
    assert fit_key(data, spec_from(settings, collapse_s=True), sampler, 0) == "845958030ab4362f117f"
