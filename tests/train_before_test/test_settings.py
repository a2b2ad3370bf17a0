"""train-before-test's typed settings: the schema of the composed `train_before_test` section (every bad, missing
or unknown key one line naming it), own benchmark categories typed with them, and the `tiny-data` action."""

from __future__ import annotations

import dataclasses
import functools

import pytest
import yaml

from tests.conftest import section_settings, section_violations
from testtask import papers
from testtask.pipeline import compose, make_context, run
from testtask.schema import ConfigError, load
from testtask.train_before_test.settings import (
    CaseStudy,
    Category,
    Heatmap,
    ModelCompute,
    PretrainingCompute,
    Regime,
    Settings,
    TieRule,
    Ties,
)

PAPER = "train-before-test"
KEY = "train_before_test"


_settings = functools.partial(section_settings, Settings, KEY)
_violations = functools.partial(section_violations, Settings, KEY)  # the lines of the ConfigError raised


def test_the_default_config_gives_typed_settings():
    s = _settings()
    assert s.results_file == "all_results.json"
    assert s.regimes == {
        "direct": Regime("direct_eval", "direct_eval_stderr", "Direct evaluation"),
        "train_before_test": Regime("train_before_test", "train_before_test_stderr", "Train-before-test"),
    }
    assert list(s.regimes) == ["direct", "train_before_test"]  # the first is the baseline
    assert list(s.categories) == ["LU", "CR", "QA", "PBC", "Math", "Med"]
    assert s.categories["Math"] == Category("Math", ["mathqa", "gsm8k"])
    assert sum(len(c.benchmarks) for c in s.categories.values()) == 24
    assert s.perplexity.corpora == ["arxiv_2025", "wiki_2025", "stackexchange_2025"]
    assert s.perplexity.higher_is_better is False
    assert s.perplexity.exclude_model_prefixes == ["google/gemma"]
    assert s.instruction_tuned_suffixes == ["-Chat", "-Instruct", "-it"]
    assert s.labels["sst2"] == "SST-2" and all(isinstance(v, str) for v in s.labels.values())
    assert s.ties == Ties(0.95, TieRule.pairwise) and s.ties.rule == "pairwise"
    assert s.pca.standardize is True and s.pca.n_components == 5
    assert s.pca.case_study == CaseStudy("Qwen", "Qwen/", max_with_baseline=True)
    assert s.kendall_decimals == 3
    assert s.heatmap == Heatmap("RdYlBu_r", 1.0) and isinstance(s.heatmap.vmax, float)
    assert "Table 4" in s.pretraining_compute.source
    assert len(s.pretraining_compute.models) == 37
    assert s.pretraining_compute.models["EleutherAI/pythia-12b"] == ModelCompute(
        "Pythia-12B", 12.0, 300.0, 21600.0
    )
    assert s.tiny_data.out == "data/mini/train-before-test/tiny"


def test_settings_are_frozen_and_overrides_and_the_text_preset_reach_them():
    s = _settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.results_file = "other.json"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.ties.rule = "leader"  # type: ignore[misc]
    changed = _settings(f"{KEY}.ties.rule=leader", f"{KEY}.pca.standardize=false")
    assert changed.ties.rule == TieRule.leader and changed.pca.standardize is False
    text = _settings("protocol=paper_text", f"{KEY}.kendall_decimals=null")
    assert text.pca.case_study.max_with_baseline is False and text.kendall_decimals is None


def test_the_pipeline_types_the_section_once_per_context():
    assert papers.get(PAPER).settings is Settings
    ctx = make_context(compose([f"paper={PAPER}", f"{KEY}.heatmap.vmax=0.5"]), PAPER)
    assert isinstance(ctx.settings, Settings) and ctx.settings.heatmap.vmax == 0.5


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        ([f"{KEY}.ties.rule=strict"], f"{KEY}.ties.rule = 'strict': expected one of pairwise, leader"),
        ([f"{KEY}.ties.confidence=1.0"], f"{KEY}.ties.confidence = 1.0: expected a number in (0, 1)"),
        ([f"{KEY}.pca.n_components=0"], f"{KEY}.pca.n_components = 0: expected a positive integer"),
        ([f"{KEY}.pca.standardize=yes"], f"{KEY}.pca.standardize = 'yes': expected true or false"),
        ([f"{KEY}.heatmap.vmax=high"], f"{KEY}.heatmap.vmax = 'high': expected a number"),
        ([f"{KEY}.heatmap.cmap=''"], f"{KEY}.heatmap.cmap = '': expected a non-empty string"),
        ([f"{KEY}.results_file=''"], f"{KEY}.results_file = '': expected a non-empty string"),
        ([f"{KEY}.kendall_decimals=-1"], f"{KEY}.kendall_decimals = -1: expected an integer >= 0 (or null)"),
        (
            [f"{KEY}.perplexity.higher_is_better=1"],
            f"{KEY}.perplexity.higher_is_better = 1: expected true or false",
        ),
        (
            [f"{KEY}.regimes.direct.field=''"],
            f"{KEY}.regimes.direct.field = '': expected a non-empty string",
        ),
        (
            [f"{KEY}.categories.Math.benchmarks=[]"],
            f"{KEY}.categories.Math.benchmarks = []: expected a non-empty list, each item a non-empty string",
        ),
        ([f"~{KEY}.tiny_data.out"], f"{KEY}.tiny_data.out: missing, expected a non-empty string"),
    ],
)
def test_a_bad_or_missing_value_is_one_line_naming_its_key(overrides, line):
    assert _violations(*overrides) == [line]


def test_an_unknown_key_names_the_keys_there_are():
    (line,) = _violations(f"+{KEY}.ties.rules=leader")
    assert line.startswith(f"{KEY}.ties.rules: unknown key (did you mean rule?)")


def test_every_bad_key_is_listed_at_once():
    assert _violations(f"{KEY}.ties.rule=strict", f"{KEY}.pca.n_components=0") == [
        f"{KEY}.ties.rule = 'strict': expected one of pairwise, leader",
        f"{KEY}.pca.n_components = 0: expected a positive integer",
    ]


def test_the_two_regimes_are_a_relation():
    assert _violations(f"~{KEY}.regimes.train_before_test") == [
        f"{KEY}.regimes = ['direct']: expected two regimes"
    ]
    extra = "{field: x, stderr_field: x_stderr, label: X}"
    assert _violations(f"+{KEY}.regimes.third={extra}") == [
        f"{KEY}.regimes = ['direct', 'train_before_test', 'third']: expected two regimes"
    ]


def test_a_bad_compute_entry_names_the_model_and_the_column():
    """Table 4's models are keyed by HF id (no override reaches a key with `/`): changed in the composed config."""
    section = compose([])[KEY]
    models = section.pretraining_compute.models
    models["EleutherAI/pythia-12b"].flops_1e18 = 0
    del models["EleutherAI/pythia-6.9b-deduped"]["tokens_b"]
    with pytest.raises(ConfigError) as err:
        load(Settings, section, KEY)
    where = f"{KEY}.pretraining_compute.models"
    assert err.value.violations == [
        f"{where}.EleutherAI/pythia-6.9b-deduped.tokens_b: missing, expected a number > 0",
        f"{where}.EleutherAI/pythia-12b.flops_1e18 = 0: expected a number > 0",
    ]


def test_pretraining_compute_is_typed_on_its_own():
    models = {"m": {"name": "M", "params_b": 1.0, "tokens_b": 1.0, "flops_1e18": 0.0}}
    with pytest.raises(
        ConfigError, match=r"^invalid config: c\.models\.m\.flops_1e18 = 0\.0: expected a number > 0$"
    ):
        load(PretrainingCompute, {"source": "s", "models": models}, "c")


def test_own_benchmark_categories_are_typed_with_the_settings(tmp_path):
    """conf/user/benchmarks.yaml's categories and labels are merged before the section is typed: they pass the
    schema, and the schema still names a bad merged value."""
    user = tmp_path / "user"
    user.mkdir()
    own = {
        "categories": {"Code": {"name": "Code", "benchmarks": ["humaneval", "mbpp"]}},
        "labels": {"mbpp": "MBPP"},
    }
    (user / "benchmarks.yaml").write_text(yaml.safe_dump(own))
    s = _settings(f"user_dir={user}")
    assert s.categories["Code"] == Category("Code", ["humaneval", "mbpp"])
    assert list(s.categories)[:6] == ["LU", "CR", "QA", "PBC", "Math", "Med"] and s.labels["mbpp"] == "MBPP"
    (user / "benchmarks.yaml").write_text(yaml.safe_dump({**own, "labels": {"mbpp": ""}}))
    assert _violations(f"user_dir={user}") == [f"{KEY}.labels.mbpp = '': expected a non-empty string"]


def test_tiny_data_action_writes_what_the_fixture_builder_writes(tmp_path):
    """`testtask action=tiny-data paper=train-before-test` replaces `python -m ...runner.tiny --out <folder>`,
    which called `tiny.build(<folder>)`: the same files, byte for byte (the fixture is deterministic)."""
    from testtask.train_before_test.runner import tiny

    out = tmp_path / "action"
    paths = run(compose(["action=tiny-data", f"paper={PAPER}", f"{KEY}.tiny_data.out={out}"]))
    assert paths == {
        "data": out / "data" / "tbt_tiny",
        "corpus": out / "data" / "tiny_corpus",
        "tasks": out / "tasks",
        "model": out / "model",
    }
    reference = tmp_path / "reference"
    tiny.build(reference)
    files = sorted(p.relative_to(reference) for p in reference.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert {"tasks/tbt_tiny.yaml", "model/model.safetensors", "data/tbt_tiny/train/state.json"} <= {
        f.as_posix() for f in files
    }
    for name in files:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name
