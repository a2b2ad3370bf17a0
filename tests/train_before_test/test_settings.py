"""train-before-test's typed settings, read once from the composed config, and its `tiny-data` action."""

from __future__ import annotations

import dataclasses

import pytest

from testtask import papers
from testtask.pipeline import compose, make_context, run
from testtask.train_before_test.inputs import Regime
from testtask.train_before_test.settings import (
    CaseStudy,
    Category,
    Heatmap,
    ModelCompute,
    Settings,
    Ties,
    pretraining_compute,
)

PAPER = "train-before-test"


def _settings(*overrides: str) -> Settings:
    return Settings.from_config(compose(list(overrides))["train_before_test"])


def test_the_default_config_gives_typed_settings():
    s = _settings()
    assert s.results_file == "all_results.json"
    assert s.regimes == {
        "direct": Regime("direct", "direct_eval", "direct_eval_stderr", "Direct evaluation"),
        "train_before_test": Regime(
            "train_before_test", "train_before_test", "train_before_test_stderr", "Train-before-test"
        ),
    }
    assert list(s.categories) == ["LU", "CR", "QA", "PBC", "Math", "Med"]
    assert s.categories["Math"] == Category("Math", ("mathqa", "gsm8k"))
    assert sum(len(c.benchmarks) for c in s.categories.values()) == 24
    assert s.perplexity.corpora == ("arxiv_2025", "wiki_2025", "stackexchange_2025")
    assert s.perplexity.higher_is_better is False
    assert s.perplexity.exclude_model_prefixes == ("google/gemma",)
    assert s.instruction_tuned_suffixes == ("-Chat", "-Instruct", "-it")
    assert s.labels["sst2"] == "SST-2" and all(isinstance(v, str) for v in s.labels.values())
    assert s.ties == Ties(0.95, "pairwise")
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


def test_settings_are_frozen_and_overrides_reach_them():
    s = _settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.results_file = "other.json"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.ties.rule = "leader"  # type: ignore[misc]
    changed = _settings("train_before_test.ties.rule=leader", "train_before_test.pca.standardize=false")
    assert changed.ties.rule == "leader" and changed.pca.standardize is False
    text = _settings("analysis_protocol=paper_text", "train_before_test.kendall_decimals=null")
    assert text.pca.case_study.max_with_baseline is False and text.kendall_decimals is None


def test_the_pipeline_builds_the_settings_once_per_context():
    assert papers.get(PAPER).settings == Settings.from_config
    ctx = make_context(compose([f"paper={PAPER}", "train_before_test.heatmap.vmax=0.5"]), PAPER)
    assert isinstance(ctx.settings, Settings) and ctx.settings.heatmap.vmax == 0.5


def test_bad_entries_are_refused_when_read():
    with pytest.raises(ValueError, match="ties.rule must be pairwise or leader"):
        _settings("train_before_test.ties.rule=other")
    bad = {"source": "s", "models": {"m": {"name": "M", "params_b": 1.0, "tokens_b": 1.0, "flops_1e18": 0.0}}}
    with pytest.raises(ValueError, match=r"pretraining_compute.models.m.flops_1e18 must be > 0"):
        pretraining_compute(bad)


def test_tiny_data_action_writes_what_the_fixture_builder_writes(tmp_path):
    """`testtask action=tiny-data paper=train-before-test` replaces `python -m ...runner.tiny --out <folder>`,
    which called `tiny.build(<folder>)`: the same files, byte for byte (the fixture is deterministic)."""
    from testtask.train_before_test.runner import tiny

    out = tmp_path / "action"
    paths = run(compose(["action=tiny-data", f"paper={PAPER}", f"train_before_test.tiny_data.out={out}"]))
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
