"""downstream-predictability's typed settings, read once from the composed config (families included)."""

from __future__ import annotations

import dataclasses

import pytest

from testtask import papers
from testtask.downstream_predictability.settings import FamilySpec, Focus, MemberSpec, Schematic, Settings
from testtask.pipeline import compose, make_context

PAPER = "downstream-predictability"
FAMILY = "smollm2-135m-cpu-mini"


def _settings(*overrides: str) -> Settings:
    return Settings.from_config(compose(list(overrides))["downstream_predictability"])


def test_the_default_config_gives_typed_settings():
    s = _settings()
    assert s.families_used is None and s.tasks == ()
    assert s.target_delimiter == " " and s.normalisation == "none" and s.compute_scale == "log10"
    assert s.negate == ("brier",) and s.undefined == "drop"
    assert s.methods == ("pearson", "spearman", "kendall")
    assert s.grid_points == 401
    assert s.focus == Focus("arc_challenge", "spearman")
    assert s.figure_2.quantity == "log_p_vocab" and s.figure_2.bins == 20
    assert s.figure_2.schematic[0] == Schematic("mostly correlated", 8.0, 1.2)
    assert s.figure_3.quantities == ("log_p_vocab", "p_choices", "brier", "accuracy")
    assert s.figure_4.ordering[1] == ("p_vocab", ">", "p_choices") and s.figure_4.tolerance == 1e-9
    assert (
        s.figure_5.tasks == ("arc_challenge", "mmlu_marketing_cloze", "hellaswag") and s.figure_5.bins == 10
    )
    assert (s.figure_6.incorrect, s.figure_6.bins) == ("sum", 8)
    family = s.families[FAMILY]
    assert (family.paper, family.samples_dir, family.model) == (
        "training-on-the-test-task",
        "samples",
        "smollm2-135m",
    )
    assert family.members is None  # discover
    assert family.compute.pretraining.parameters == 1.35e8 and family.compute.pretraining.tokens == 2.0e12
    ft = family.compute.finetuning
    assert ft.runner_config == "conf/experiment/training_on_the_test_task/cpu_mini.yaml"
    assert (
        ft.parameters == 1.35e8 and ft.tokens_field == "tokens_seen" and ft.recorded_steps == {"e1/mcaux": 50}
    )
    assert ft.batch_size is None and ft.max_length is None  # from the runner config


def test_settings_are_frozen_and_overrides_reach_them():
    s = _settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.normalisation = "chars"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.focus.method = "pearson"  # type: ignore[misc]
    changed = _settings(
        "downstream_predictability.methods=[spearman]",
        f"downstream_predictability.families_used=[{FAMILY}]",
        "downstream_predictability.undefined=zero",
    )
    assert (
        changed.methods == ("spearman",)
        and changed.families_used == (FAMILY,)
        and changed.undefined == "zero"
    )
    assert _settings("downstream_predictability.methods=[]").methods == ("pearson", "spearman", "kendall")


def test_the_pipeline_builds_the_settings_once_per_context():
    assert papers.get(PAPER).settings == Settings.from_config
    ctx = make_context(
        compose([f"paper={PAPER}", "source=results", "downstream_predictability.grid_points=11"]), PAPER
    )
    assert isinstance(ctx.settings, Settings) and ctx.settings.grid_points == 11


def test_listed_members_and_bad_entries():
    spec = FamilySpec.from_config(
        "sim", {"paper": "p", "model": "sim", "members": [{"name": "m0", "samples": "m0", "compute": 1e18}]}
    )
    assert spec.label == "sim" and spec.samples_dir == "samples" and spec.compute is None
    assert spec.members == (MemberSpec("m0", "m0", 1e18),)
    with pytest.raises(ValueError, match="figure_6.incorrect must be sum or each"):
        _settings("downstream_predictability.figure_6.incorrect=all")
    with pytest.raises(ValueError, match="families_used names unknown families"):
        _settings("downstream_predictability.families_used=[nope]")
