"""Which models `assess-model` assesses: `assess.model_file`, else the user folder's models.yaml, which the
config has already merged into the registry (that merge is the user's own, not a clash with a published model)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testtask.assess.models import ModelFileError, read_models, with_models
from testtask.pipeline import compose

OWN = {
    "paper_name": "Student-7B",
    "train_date": "2024-06",
    "params_b": 7,
    "tokens_t": 2.0,
    "hf_repo": None,
    "family": "student",
    "language": "EN",
}


def _cfg(user_dir: Path, *overrides: str):
    return compose(["action=assess-model", "source=published+results", f"user_dir={user_dir}", *overrides])


def test_own_models_yaml_is_assessed_without_model_file(tmp_path):
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"base": {"student-7b": OWN}}))
    cfg = _cfg(tmp_path)
    assert "student-7b" in cfg.training_on_the_test_task.models.base  # merged where the config was composed
    entries = read_models(cfg)
    assert list(entries) == ["student-7b"]
    merged = with_models(cfg, entries, "training_on_the_test_task")  # raised "already in the registry" before
    assert merged.training_on_the_test_task.models.base["student-7b"].train_date == "2024-06"


def test_own_models_yaml_named_as_model_file(tmp_path):
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"base": {"student-7b": OWN}}))
    cfg = _cfg(tmp_path, f"assess.model_file={tmp_path / 'models.yaml'}")
    entries = read_models(cfg)
    assert with_models(cfg, entries, "training_on_the_test_task").training_on_the_test_task.models.base[
        "student-7b"
    ]


def test_published_name_in_model_file_is_still_refused(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "models.yaml").write_text(yaml.safe_dump({"base": {"student-7b": OWN}}))
    other = tmp_path / "mine.yaml"
    other.write_text(
        yaml.safe_dump({"base": {"llama-2-7b": {"train_date": "2024-06", "params_b": 7, "tokens_t": 2}}})
    )
    cfg = _cfg(own, f"assess.model_file={other}")
    with pytest.raises(ModelFileError, match="already in the model registry"):
        with_models(cfg, read_models(cfg), "training_on_the_test_task")


def test_no_model_anywhere_names_both_ways(tmp_path):
    with pytest.raises(ModelFileError, match=r"models\.yaml \(section base\) or pass assess\.model_file"):
        read_models(_cfg(tmp_path))
