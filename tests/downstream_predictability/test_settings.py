"""downstream-predictability's typed settings: the schema of the composed `downstream_predictability` section
(families included), every bad, missing or unknown key one line naming it."""

from __future__ import annotations

import dataclasses
import functools

import pytest

from tests.conftest import section_settings, section_violations
from testtask import papers
from testtask.downstream_predictability.settings import (
    Comparison,
    CorrelationMethod,
    FamilySpec,
    Focus,
    Members,
    MemberSpec,
    Quantity,
    Schematic,
    Settings,
)
from testtask.downstream_predictability.simulate import family_overrides, simulate_family
from testtask.pipeline import compose, make_context

PAPER = "downstream-predictability"
KEY = "downstream_predictability"
FAMILY = "smollm2-135m-cpu-mini"


_settings = functools.partial(section_settings, Settings, KEY)
_violations = functools.partial(section_violations, Settings, KEY)  # the lines of the ConfigError raised


def test_the_default_config_gives_typed_settings():
    s = _settings()
    assert s.families_used is None and s.tasks == []
    assert s.target_delimiter == " " and s.normalisation == "none" and s.compute_scale == "log10"
    assert s.negate == [Quantity.brier] and s.undefined == "drop"
    assert s.methods == ["pearson", "spearman", "kendall"]
    assert s.grid_points == 401
    assert s.focus == Focus("arc_challenge", CorrelationMethod.spearman)
    assert s.figure_2.quantity == "log_p_vocab" and s.figure_2.bins == 20
    assert s.figure_2.schematic[0] == Schematic("mostly correlated", 8.0, 1.2)
    assert s.figure_3.quantities == ["log_p_vocab", "p_choices", "brier", "accuracy"]
    assert s.figure_4.ordering[1] == (Quantity.p_vocab, Comparison.above, Quantity.p_choices)
    assert s.figure_4.ordering[0][1] == ">=" and s.figure_4.tolerance == 1e-9
    assert (
        s.figure_5.tasks == ["arc_challenge", "mmlu_marketing_cloze", "hellaswag"] and s.figure_5.bins == 10
    )
    assert (s.figure_6.incorrect, s.figure_6.bins) == ("sum", 8)
    family = s.families[FAMILY]
    assert (family.paper, family.samples_dir, family.model) == (
        "training-on-the-test-task",
        "samples",
        "smollm2-135m",
    )
    assert family.members == Members.discover
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
        f"{KEY}.methods=[spearman]", f"{KEY}.families_used=[{FAMILY}]", f"{KEY}.undefined=zero"
    )
    assert changed.methods == ["spearman"] and changed.families_used == [FAMILY]
    assert changed.undefined == "zero"


def test_the_pipeline_types_the_section_once_per_context():
    assert papers.get(PAPER).settings is Settings
    ctx = make_context(compose([f"paper={PAPER}", "source=results", f"{KEY}.grid_points=11"]), PAPER)
    assert isinstance(ctx.settings, Settings) and ctx.settings.grid_points == 11


def test_a_simulated_family_added_on_the_command_line_is_typed(tmp_path):
    family = simulate_family(tmp_path, PAPER, n_members=2, n_docs=3)
    spec = _settings(*family_overrides(family)).families[family.name]
    assert spec.members[0] == MemberSpec("m00", "m00", 1e18) and spec.compute is None
    assert isinstance(spec, FamilySpec) and spec.label == family.spec["label"]


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (
            [f"{KEY}.normalisation=tokens"],
            f"{KEY}.normalisation = 'tokens': expected one of none, chars, bytes",
        ),
        ([f"{KEY}.figure_6.incorrect=all"], f"{KEY}.figure_6.incorrect = 'all': expected one of sum, each"),
        ([f"{KEY}.figure_2.bins=0"], f"{KEY}.figure_2.bins = 0: expected a positive integer"),
        ([f"{KEY}.grid_points=1.5"], f"{KEY}.grid_points = 1.5: expected a positive integer"),
        ([f"{KEY}.compute_scale=log2"], f"{KEY}.compute_scale = 'log2': expected one of log10, linear"),
        ([f"{KEY}.undefined=keep"], f"{KEY}.undefined = 'keep': expected one of drop, zero"),
        (
            [f"{KEY}.figure_2.quantity=loss"],
            f"{KEY}.figure_2.quantity = 'loss': expected one of log_p_vocab, p_vocab, p_choices, brier, accuracy",
        ),
        (
            [f"{KEY}.negate=[brier,loss]"],
            f"{KEY}.negate = ['brier', 'loss']: expected a list, each item one of log_p_vocab, p_vocab, "
            "p_choices, brier, accuracy",
        ),
        (
            [f"{KEY}.figure_3.quantities=[]"],
            f"{KEY}.figure_3.quantities = []: expected a non-empty list, each item one of log_p_vocab, p_vocab, "
            "p_choices, brier, accuracy",
        ),
        (
            [f"{KEY}.figure_4.ordering=[[brier,'<',accuracy]]"],
            f"{KEY}.figure_4.ordering = [['brier', '<', 'accuracy']]: expected a list, each item a "
            "[quantity, > or >=, quantity] triple",
        ),
        ([f"{KEY}.figure_4.tolerance=-1"], f"{KEY}.figure_4.tolerance = -1: expected a number >= 0"),
        (
            [f"{KEY}.figure_2.schematic.0.a=0"],
            f"{KEY}.figure_2.schematic[0].a = 0: expected a number > 0",  # an item of a list is named by its keys
        ),
        (
            [f"{KEY}.methods=[]"],
            f"{KEY}.methods = []: expected a non-empty list, each item one of pearson, spearman, kendall",
        ),
        (
            [f"{KEY}.families.{FAMILY}.compute.finetuning.batch_size=0"],
            f"{KEY}.families.{FAMILY}.compute.finetuning.batch_size = 0: expected a positive integer (or null)",
        ),
        (
            [f"{KEY}.families.{FAMILY}.compute=null"],
            f"{KEY}.families.{FAMILY}.compute = None: expected a compute section with members: discover",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_its_key(overrides, line):
    assert _violations(*overrides) == [line]


def test_the_relations_between_keys():
    assert _violations(f"{KEY}.methods=[pearson]") == [
        f"{KEY}.focus.method = 'spearman': expected one of the computed {KEY}.methods (pearson)"
    ]
    assert _violations(f"{KEY}.families_used=[nope]") == [
        f"{KEY}.families_used = ['nope']: expected keys of {KEY}.families ({FAMILY})"
    ]


def test_a_family_entry_gives_every_key():
    entry = "{label: x, paper: p, model: m, members: discover}"
    lines = _violations(f"+{KEY}.families.x={entry}")
    assert lines == [
        f"{KEY}.families.x.samples_dir: missing, expected a non-empty string",
        f"{KEY}.families.x.compute: missing, expected a mapping with the keys pretraining, finetuning (or null)",
    ]
