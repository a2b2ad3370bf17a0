"""Pretrain-on-test dataset specs under `datasets` >= 4, which runs no loading scripts: a script-free source where
the spec names one (the Hub's Parquet export at a pinned commit), a DatasetError naming the dataset otherwise."""

from __future__ import annotations

import datasets
import pytest
from omegaconf import OmegaConf

from testtask.paths import conf_dir
from testtask.pretrain_on_test.runner import datasets as pot_datasets
from testtask.pretrain_on_test.runner.datasets import (
    DatasetError,
    DatasetSpec,
    load_dataset,
    registry,
    spec_of,
)
from testtask.schema import ConfigError

FAKE = {"path": "someone/fake-dataset", "classes": ["no", "yes"], "description": "A fake task."}
ROWS = {"text": ["a", "b", "c"], "label": [0, 1, 0]}


def _spec(**fields) -> DatasetSpec:
    return spec_of("fake", {**FAKE, **fields})


def _record(monkeypatch, result=None, error=None) -> list:
    calls = []

    def fake_load(*args, **kwargs):
        calls.append((args, kwargs))
        if error is not None:
            raise error
        return datasets.Dataset.from_dict(result or ROWS)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    return calls


def test_a_loading_script_is_a_clear_error_naming_the_dataset(monkeypatch):
    """What current `datasets` raises for a script repository becomes a DatasetError with the way out."""
    calls = _record(
        monkeypatch, error=RuntimeError("Dataset scripts are no longer supported, but found fake-dataset.py")
    )
    with pytest.raises(
        DatasetError, match=r"'fake' \(someone/fake-dataset\).*loading script.*parquet_export"
    ):
        load_dataset(_spec(loading_script=True))
    # trust_remote_code is not passed to datasets >= 4 (it ignores it and logs an error)
    assert calls and "trust_remote_code" not in calls[0][1]


def test_the_old_trust_remote_code_spelling_means_a_loading_script(monkeypatch):
    spec = _spec(trust_remote_code=True)
    assert spec.loading_script
    monkeypatch.setattr(pot_datasets, "_datasets_major", lambda: 3)  # datasets 3.x still runs the script
    calls = _record(monkeypatch)
    load_dataset(spec)
    assert calls[0][1]["trust_remote_code"] is True


def test_parquet_export_reads_the_hubs_conversion_at_the_pinned_commit(monkeypatch):
    calls = _record(monkeypatch)
    spec = _spec(
        parquet_export="default", revision="0123456789abcdef0123456789abcdef01234567", loading_script=True
    )
    frame = load_dataset(spec)
    assert list(frame["label"]) == [0, 1, 0]
    (args, kwargs) = calls[0]
    assert args == ("parquet",) and kwargs["split"] == "train"
    assert kwargs["data_files"] == {
        "train": "hf://datasets/someone/fake-dataset@0123456789abcdef0123456789abcdef01234567/default/train/*.parquet"
    }
    unpinned = pot_datasets.parquet_export_files(_spec(parquet_export="cfg"), "test")
    assert unpinned == "hf://datasets/someone/fake-dataset@refs%2Fconvert%2Fparquet/cfg/test/*.parquet"


def test_parquet_export_falls_back_to_the_test_split(monkeypatch):
    calls = []

    def fake_load(*args, **kwargs):
        calls.append(kwargs["split"])
        if kwargs["split"] == "train":
            raise FileNotFoundError("Unable to find 'hf://datasets/.../train/*.parquet'")
        return datasets.Dataset.from_dict(ROWS)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    load_dataset(_spec(parquet_export="default"))
    assert calls == ["train", "test"]


def test_revision_is_passed_and_a_branch_is_not_a_pin(monkeypatch):
    calls = _record(monkeypatch)
    load_dataset(_spec(revision="abcdef0"))
    assert calls[0][1]["revision"] == "abcdef0"
    with pytest.raises(ConfigError, match="datasets.fake.revision = 'main': expected a commit hash"):
        _spec(revision="main")


def test_shipped_specs_name_a_source_or_a_reason():
    """No spec relies on trust_remote_code; every Hub spec is pinned or says why not; the script repositories
    with a known script-free source use it."""
    specs = registry(
        OmegaConf.to_container(OmegaConf.load(conf_dir() / "datasets" / "pretrain_on_test.yaml"))
    )
    assert len(specs) == 25
    scripts = {k for k, s in specs.items() if s.loading_script}
    assert len(scripts) == 15
    for key, spec in specs.items():
        assert spec.revision or spec.revision_note, key
        if spec.parquet_export:
            assert "/" in spec.path, f"{key}: hf:// paths need the namespaced repository"
    assert {k for k in scripts if specs[k].parquet_export} == {"blog_authorship_corpus", "FRENK-hate-en"}
    converted = {
        "disaster_response_messages",
        "tweets_hate_speech_detection",
        "yahoo_answers_topics",
        "emotion",
    }
    assert all("/" in specs[k].path for k in converted)
    assert specs["emotion"].config == "split"
