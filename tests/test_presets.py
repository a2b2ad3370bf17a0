"""presets.with_preset (the report's paper_text column) equals what Hydra composes with analysis_protocol=paper_text."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from testtask.errors import InputError
from testtask.pipeline import compose
from testtask.presets import layers, with_preset


def test_laying_the_preset_over_the_default_equals_hydra_composition():
    default = compose([])
    composed = compose(["analysis_protocol=paper_text"])
    laid = with_preset(default, "paper_text")
    assert OmegaConf.to_container(laid, resolve=False) == OmegaConf.to_container(composed, resolve=False)
    assert laid.analysis_preset == "paper_text" and default.analysis_preset == "authors"
    # the test can fail: the default differs from the preset
    assert OmegaConf.to_container(default) != OmegaConf.to_container(composed)


def test_the_authors_preset_lays_nothing_but_its_name():
    assert layers("authors") == [{"analysis_preset": "authors"}]


def test_a_config_under_the_text_preset_is_refused_and_unknown_presets_too():
    with pytest.raises(InputError, match="run it without analysis_protocol"):
        with_preset(compose(["analysis_protocol=paper_text"]), "paper_text")
    with pytest.raises(InputError, match="choose authors, paper_text"):
        layers("mine")
