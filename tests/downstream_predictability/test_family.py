"""Families: stage discovery in the runner's layout, compute per member, and the CPU mini family's config."""

from __future__ import annotations

import json

import numpy as np
import pytest

from testtask.context import InputsUnavailable
from testtask.downstream_predictability.family import discover_stages, load_family, stage_compute, task_files
from testtask.downstream_predictability.settings import FamilySpec, Settings
from testtask.downstream_predictability.simulate import write_samples
from testtask.pipeline import compose
from testtask.schema import ConfigError, load

N, D = 1.35e8, 2.0e12


def _tree(root, stages, tasks=("arc", "mmlu_x"), model="tiny"):
    for stage in stages:
        for task in tasks:
            path = root / stage / f"{model}-{task}" / f"{task}.jsonl"
            write_samples(path, np.array([[-1.0, -2.0], [-3.0, -0.5]]), np.array([0, 1]), ["a", "b"])


def _spec(tmp_path, **finetuning):
    return load(FamilySpec, _entry(tmp_path, **finetuning), "downstream_predictability.families.f")


def _entry(tmp_path, **finetuning):
    """A family entry with every key of FamilySpec (no key has a default)."""
    return {
        "label": "f",
        "paper": "tott",
        "samples_dir": "samples",
        "model": "tiny",
        "members": "discover",
        "compute": {
            "pretraining": {"parameters": N, "tokens": D, "source": "model card"},
            "finetuning": {
                "parameters": N,
                "runner_config": None,
                "batch_size": 16,
                "max_length": 256,
                "checkpoints_dir": None,
                "tokens_field": "tokens_seen",
                "recorded_steps": {},
                **finetuning,
            },
        },
    }


def test_discovers_every_stage_of_the_runner_layout(tmp_path):
    root = tmp_path / "samples"
    stages = ["base", "e1/mcaux", "intermediate/mcaux/evals/tiny/step_10"]
    _tree(root, stages)
    _tree(root, ["base"], tasks=("arc",), model="other")  # another model's samples are not this family's
    assert discover_stages(root, "tiny") == sorted(stages)
    family = load_family(
        "f",
        _spec(tmp_path, recorded_steps={"e1/mcaux": 50}, checkpoints_dir=str(tmp_path / "ckpt")),
        lambda paper: tmp_path,
    )
    by_name = {m.name: m for m in family.members}
    assert [m.name for m in family.members] == ["base", "intermediate/mcaux/evals/tiny/step_10", "e1/mcaux"]
    assert by_name["base"].compute == pytest.approx(6 * N * D)
    assert by_name["intermediate/mcaux/evals/tiny/step_10"].compute == pytest.approx(
        6 * N * D + 6 * N * 10 * 16 * 256
    )
    e1 = by_name["e1/mcaux"].compute_detail
    assert e1["finetuning_flops"] == pytest.approx(6 * N * 50 * 16 * 256)
    assert (
        "upper bound" in e1["finetuning_tokens_basis"] and "recorded_steps" in e1["finetuning_steps_source"]
    )
    assert set(task_files(family.members[0], "tiny")) == {"arc", "mmlu_x"}


def test_the_runner_record_wins_and_its_token_count_is_used(tmp_path):
    record = tmp_path / "ckpt" / "mcaux" / "tiny" / "e1" / "finished.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"steps": 40, "tokens_seen": 123456}))
    detail = stage_compute(
        "e1/mcaux",
        "tiny",
        _spec(tmp_path, recorded_steps={"e1/mcaux": 50}, checkpoints_dir=str(tmp_path / "ckpt")).compute,
    )
    assert detail["finetuning_steps"] == 40
    assert detail["finetuning_tokens"] == 123456
    assert detail["finetuning_tokens_basis"].startswith("recorded")


def test_a_stage_without_steps_is_left_out_with_a_note(tmp_path):
    _tree(tmp_path / "samples", ["base", "e1/mcaux", "e3/mcaux"])
    family = load_family("f", _spec(tmp_path, recorded_steps={"e1/mcaux": 50}), lambda paper: tmp_path)
    assert [m.name for m in family.members] == ["base", "e1/mcaux"]
    assert any("e3/mcaux" in note for note in family.notes)
    with pytest.raises(InputsUnavailable, match="a correlation needs 2"):
        load_family("f", _spec(tmp_path), lambda paper: tmp_path)  # only base is left


def test_explicit_members_and_missing_inputs(tmp_path):
    _tree(tmp_path / "samples", ["small", "large"])
    spec = load(
        FamilySpec,
        {
            "label": "f",
            "paper": "p",
            "samples_dir": "samples",
            "model": "tiny",
            "members": [
                {"name": "large", "samples": "large", "compute": 1e21},
                {"name": "small", "samples": "small", "compute": 1e19},
            ],
            "compute": None,
        },
    )
    family = load_family("f", spec, lambda paper: tmp_path)
    assert [m.name for m in family.members] == ["small", "large"]
    with pytest.raises(InputsUnavailable, match="does not exist"):
        load_family("f", spec, lambda paper: tmp_path / "elsewhere")


def test_a_stage_past_base_without_a_finetuning_section_is_left_out(tmp_path):
    _tree(tmp_path / "samples", ["base", "e1/mcaux", "intermediate/mcaux/evals/tiny/step_10"])
    entry = _entry(tmp_path)
    entry["compute"]["finetuning"] = None
    with pytest.raises(InputsUnavailable, match="1 member"):
        load_family("f", load(FamilySpec, entry), lambda paper: tmp_path)


def test_a_malformed_family_entry_names_the_family_and_its_keys():
    where = "downstream_predictability.families.f"
    with pytest.raises(ConfigError) as err:
        load(FamilySpec, {"paper": "p", "label": "f", "samples_dir": "s", "members": "all"}, where)
    assert err.value.violations == [
        f"{where}.model: missing, expected a non-empty string",
        f"{where}.members = 'all': expected discover or a non-empty list of {{name, samples, compute}}",
        f"{where}.compute: missing, expected a mapping with the keys pretraining, finetuning (or null)",
    ]


def test_mini_family_compute_from_config():
    key = "downstream_predictability"
    settings = load(Settings, compose(["paper=downstream-predictability"])[key], key)
    compute = settings.families["smollm2-135m-cpu-mini"].compute
    base = stage_compute("base", "smollm2-135m", compute)
    assert base["flops"] == pytest.approx(6 * 1.35e8 * 2e12)
    tuned = stage_compute("e1/mcaux", "smollm2-135m", compute)
    # batch 16 and context 256 come from the runner's cpu_mini experiment config; 50 steps from the record.
    assert tuned["finetuning_flops"] == pytest.approx(6 * 1.35e8 * 50 * 16 * 256)
    assert tuned["flops"] > base["flops"]
