"""pretrain-on-test's typed settings: read once from the composed `pretrain_on_test` section, frozen, and a bad or
missing value is an error naming its field."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from omegaconf import OmegaConf

from testtask import papers
from testtask.pipeline import compose
from testtask.pretrain_on_test.fits import fit_key, spec_from
from testtask.pretrain_on_test.hierarchical import ModelData, ModelSpec, Priors
from testtask.pretrain_on_test.settings import Settings, SettingsError


@pytest.fixture(scope="module")
def section():
    return compose()["pretrain_on_test"]


@pytest.fixture(scope="module")
def settings(section) -> Settings:
    return Settings.from_config(section)


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
    assert settings.predictive.hdi_prob == pytest.approx(0.89) and settings.predictive.max_draws is None
    assert settings.effects == ("boost", "bias")
    assert settings.figure_4.threshold == pytest.approx(0.03)
    f7 = settings.figure_7
    assert (f7.slices, f7.m, f7.n, f7.draws, f7.tune) == (500, 100, 500, 1000, 500)
    assert (f7.band, f7.band_zero_shot) == (pytest.approx(0.04), pytest.approx(0.08))
    assert settings.figure_8.permutations == 10
    assert (settings.figure_9.m, settings.figure_9.n) == (100, 200)
    assert (settings.figure_10.m, settings.figure_10.n) == (100, 200)
    assert (settings.figure_11.m, settings.figure_11.n, settings.figure_11.draws) == (100, 200, 500)
    f12 = settings.figure_12
    assert (f12.datasets, f12.subsamples, f12.n, f12.lm_types) == (25, 50, 200, 2)
    assert (f12.null_beta, f12.effect_beta) == (0.0, pytest.approx(0.1))
    assert isinstance(f12.null_beta, float) and isinstance(f12.n, int)
    assert settings.permutation_test.permutations == 10_000
    assert settings.permutation_test.alpha == pytest.approx(0.05)


def test_settings_are_frozen(settings: Settings):
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.figure_7 = settings.figure_8  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.figure_7.slices = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.model.priors.sigma_W = 1.0  # type: ignore[misc]


def test_the_plugin_builds_them(section):
    plugin = papers.get("pretrain-on-test")
    assert plugin.settings(section) == Settings.from_config(section)


def test_plain_mapping_reads_the_same(section, settings: Settings):
    assert Settings.from_config(OmegaConf.to_container(section, resolve=True)) == settings


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
    ("path", "value"),
    [
        ("figure_7.slices", 0),
        ("figure_7.slices", "many"),
        ("figure_7.tune", -1),
        ("figure_7.band", -0.1),
        ("figure_12.n", 2.5),
        ("figure_4.threshold", "high"),
        ("model.backend", "foo"),
        ("model.interaction", "yes"),
        ("model.noncentered_t", 1),
        ("model.priors.sigma_W", 0.0),
        ("predictive.hdi_prob", 1.5),
        ("predictive.max_draws", 0),
        ("permutation_test.alpha", 0),
        ("collections.few_shot", ""),
    ],
)
def test_a_bad_value_names_its_field(section, path: str, value):
    with pytest.raises(SettingsError, match=rf"pretrain_on_test\.{path} = "):
        Settings.from_config(_with(section, path, value))


@pytest.mark.parametrize(
    "path", ["figure_11.draws", "collections.zero_shot", "model.priors.sigma_V", "effects"]
)
def test_a_missing_value_is_an_error_not_a_default(section, path: str):
    with pytest.raises(SettingsError, match=rf"pretrain_on_test\.{path} is missing"):
        Settings.from_config(_with(section, path, _MISSING))


def test_unknown_effect_is_refused(section):
    with pytest.raises(SettingsError, match=r"pretrain_on_test\.effects"):
        Settings.from_config(_with(section, "effects", ["boost", "other"]))


def test_model_spec_and_fit_cache_key_are_those_of_the_config(section, settings: Settings):
    """The spec, and so the posterior cache key, is the one the raw `model` section gave before the settings were
    typed: existing caches stay valid (keys pinned from that code, `spec_from(cfg)` on the same config)."""
    model = OmegaConf.to_container(section["model"], resolve=True)
    expected = ModelSpec(
        backend=model["backend"],
        interaction=model["interaction"],
        noncentered_t=model["noncentered_t"],
        collapse_s=model["collapse_s"],
        formula=model["formula"],
        priors=Priors(**model["priors"]),
    )
    assert spec_from(settings) == expected
    assert spec_from(settings, interaction=False) == dataclasses.replace(expected, interaction=False)
    data = ModelData(
        np.ones((1, 1, 1, 2), dtype=np.int64), np.full((1, 1, 1, 2), 2), ["d"], ["a"], np.array([1])
    )
    sampler = {"name": "nutpie", "draws": 10, "tune": 10, "chains": 1}
    assert fit_key(data, spec_from(settings), sampler, 0) == "845958030ab4362f117f"
    assert fit_key(data, spec_from(settings, interaction=False), sampler, 0) == "cb536f4d073b8f9b8289"
    assert fit_key(data, spec_from(settings, collapse_s=True), sampler, 0) == "845958030ab4362f117f"
