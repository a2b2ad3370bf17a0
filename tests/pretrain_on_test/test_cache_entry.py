"""A cached posterior proves what it holds: its key and the model code's version are stored
inside the file, and an entry that does not match them is named in a warning and refitted."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SMALL_SAMPLER, model_spec, small_model_data
from testtask.pretrain_on_test import cache_entry
from testtask.pretrain_on_test.fits import fit_cached, fit_key
from testtask.pretrain_on_test.hierarchical import TREATMENT, Fit
from testtask.pretrain_on_test.meta_analysis_figures import _read_panel

SPEC = model_spec(backend="marginal")
SEED = 3


def _beta(fit: Fit) -> np.ndarray:
    return fit.idata.posterior[TREATMENT].values


@pytest.fixture
def cache(tmp_path: Path) -> dict:
    """Two real fits in one cache, as Figure 3 leaves them: a large 'boost' and a null 'bias'."""
    folder = tmp_path / "cache"
    out = {"folder": folder}
    for name, effect in (("boost", 0.3), ("bias", 0.0)):
        data = small_model_data(effect, seed=len(name))
        out[name] = {
            "data": data,
            "fit": fit_cached(data, SPEC, SMALL_SAMPLER, SEED, folder),
            "path": folder / f"{fit_key(data, SPEC, SMALL_SAMPLER, SEED)}.nc",
        }
    return out


def test_a_posterior_copied_over_another_is_named_and_refitted(cache: dict, caplog) -> None:
    boost, bias = cache["boost"], cache["bias"]
    assert _beta(boost["fit"]).mean() > _beta(bias["fit"]).mean() + 0.5  # the two are told apart
    shutil.copyfile(boost["path"], bias["path"])
    with caplog.at_level(logging.WARNING, logger="testtask"):
        again = fit_cached(bias["data"], SPEC, SMALL_SAMPLER, SEED, cache["folder"])
    assert not again.from_cache
    assert str(bias["path"]) in caplog.text and cache_entry.KEY in caplog.text
    assert np.allclose(_beta(again), _beta(bias["fit"]))  # the bias's posterior, not the boost's
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="testtask"):
        third = fit_cached(bias["data"], SPEC, SMALL_SAMPLER, SEED, cache["folder"])
    assert third.from_cache and not caplog.text  # the cache was rewritten with the right entry
    assert np.allclose(_beta(third), _beta(bias["fit"]))


def test_a_change_of_the_model_code_is_refitted(cache: dict, caplog, monkeypatch) -> None:
    bias = cache["bias"]
    monkeypatch.setattr(cache_entry, "model_code_version", lambda: "edited-likelihood")
    with caplog.at_level(logging.WARNING, logger="testtask"):
        again = fit_cached(bias["data"], SPEC, SMALL_SAMPLER, SEED, cache["folder"])
    assert not again.from_cache
    assert str(bias["path"]) in caplog.text and cache_entry.VERSION in caplog.text
    assert "edited-likelihood" in caplog.text


def test_an_intact_entry_is_reused(cache: dict, caplog) -> None:
    bias = cache["bias"]
    with caplog.at_level(logging.WARNING, logger="testtask"):
        again = fit_cached(bias["data"], SPEC, SMALL_SAMPLER, SEED, cache["folder"])
    assert again.from_cache and not caplog.text
    assert np.array_equal(_beta(again), _beta(bias["fit"]))


def test_the_code_version_is_computed_from_the_model_code(monkeypatch) -> None:
    full = cache_entry.model_code_version()
    fewer = cache_entry._model_code()[1:]  # without the compiled likelihood
    cache_entry.model_code_version.cache_clear()
    monkeypatch.setattr(cache_entry, "_model_code", lambda: fewer)
    try:
        assert cache_entry.model_code_version() != full
    finally:
        cache_entry.model_code_version.cache_clear()


def test_figure_7_panel_cache_proves_what_it_holds(tmp_path: Path, caplog) -> None:
    panel = {"seconds": 1.0, "fits": []}
    path = tmp_path / "figure-7-slices-b.json"
    path.write_text(json.dumps({**cache_entry.stamp("key-a"), **panel}))  # panel a copied over b
    with caplog.at_level(logging.WARNING, logger="testtask"):
        assert _read_panel(path, "key-b") is None
    assert str(path) in caplog.text and cache_entry.KEY in caplog.text and not path.exists()
    path.write_text(json.dumps(panel))  # written before entries carried their stamp
    assert _read_panel(path, "key-b") is None and cache_entry.VERSION in caplog.text
    path.write_text('{"seconds": 1.0, "fi')  # cut short
    assert _read_panel(path, "key-b") is None and "unreadable" in caplog.text
    path.write_text(json.dumps({**cache_entry.stamp("key-b"), **panel}))
    assert _read_panel(path, "key-b") == {**cache_entry.stamp("key-b"), **panel}


def test_posterior_predictive_draws_are_cached_beside_their_fit(cache: dict, monkeypatch) -> None:
    """The predictive draws of a cached fit are computed once: a second call (another figure, the other preset)
    reads them, equal to fresh ones; other settings, another fit or a damaged file draw again."""
    from testtask.pretrain_on_test import predictive

    folder, boost = cache["folder"], cache["boost"]["fit"]
    first = predictive.simulate_cached(boost, seed=5, max_draws=None, workers=2, cache_dir=folder)
    fresh = predictive.simulate(boost, seed=5, workers=2)
    for field in predictive.FIELDS:
        np.testing.assert_array_equal(getattr(first, field), getattr(fresh, field))
    (stored,) = folder.glob("*.predictive.npz")

    calls = []
    real = predictive.simulate
    monkeypatch.setattr(predictive, "simulate", lambda *a, **k: calls.append(a) or real(*a, **k))
    again = predictive.simulate_cached(boost, seed=5, max_draws=None, workers=2, cache_dir=folder)
    assert calls == [] and again.data is boost.data
    np.testing.assert_array_equal(again.per_task, first.per_task)

    predictive.simulate_cached(boost, seed=6, max_draws=None, workers=2, cache_dir=folder)
    predictive.simulate_cached(cache["bias"]["fit"], seed=5, max_draws=None, workers=2, cache_dir=folder)
    assert len(calls) == 2 and len(list(folder.glob("*.predictive.npz"))) == 3

    stored.write_bytes(stored.read_bytes()[:100])  # cut short
    redrawn = predictive.simulate_cached(boost, seed=5, max_draws=None, workers=2, cache_dir=folder)
    assert len(calls) == 3
    np.testing.assert_array_equal(redrawn.average, first.average)
