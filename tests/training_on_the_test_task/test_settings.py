"""training-on-the-test-task's typed settings (read once from its config), and proxy-tasks reading that paper's
release through the context the pipeline builds with those settings (one source of truth)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.conftest import stamp_release
from tests.test_loader_validation import mmlu_payload
from testtask.lm.models import ModelRegistry
from testtask.lm.release import Release
from testtask.lm.results import AbsentResults
from testtask.lm.scores import BenchmarkSpec
from testtask.pipeline import compose, make_context
from testtask.training_on_the_test_task.settings import Settings

TOTT = "training-on-the-test-task"


def test_the_composed_default_config_gives_typed_settings():
    s = Settings.from_config(compose()["training_on_the_test_task"])
    assert s.cutoff == "2023-11" and s.robustness_cutoffs == ("2023-09", "2024-01")
    assert s.model_kinds == ("base",)
    assert s.adjustment.stage == "e3" and s.adjustment.use_max is True
    # the authors' released analysis code (docs/protocols/training-on-the-test-task-analysis.md)
    assert (s.regression.cov_type, s.regression.alpha_level, s.regression.c_e_search) == (
        "nonrobust",
        0.05,
        "local",
    )
    assert (s.benchmark("gpqa").chance, s.benchmark("bbh").chance) == (0.0, 0.3)
    assert isinstance(s.release, Release) and s.release.evaluations_dir == "evaluations"
    assert isinstance(s.release.registry, ModelRegistry) and "llama-2-7b" in s.release.registry
    assert isinstance(s.release.absent, AbsentResults) and len(s.release.absent) > 0
    mmlu = s.benchmark("mmlu")
    assert isinstance(mmlu, BenchmarkSpec)
    assert (mmlu.file, mmlu.metric, mmlu.aggregate, mmlu.chance) == ("mmlu", "acc,none", "entries_mean", 0.25)
    assert s.benchmark("mmlu_brier").higher_is_better is False
    assert s.benchmark("gpqa").suite == "v2"
    assert s.figure_1.benchmarks == ("mmlu", "gsm8k")
    assert s.figure_3.min_compute == 7.0e21 and isinstance(s.figure_3.min_compute, float)
    assert s.figure_3.seed == 42 and s.figure_3.arm("treatment").of("adjusted") == ("e1", "e3")
    assert len(s.figure_3.labels) == 2
    assert s.figure_4.reformulated == ("arc_challenge_mc", "hellaswag_mc")
    assert dict(s.figure_6.families) == {"Pythia": "pythia", "Llama 2": "llama-2", "Qwen 1.5": "qwen-1.5"}
    assert s.emergence.batch_size == 64 and s.emergence.max_compute == 1.0e24
    assert s.emergence.c_e_search == "pwlf"  # the authors' Figure 8/19 fit (plot_utils.py:158-168)
    assert (s.figure_8.benchmark, s.figure_8.steps) == ("mmlu", (0, 250, 500, 1000))
    assert s.figure_19.steps == (0, 250, 1000, 2500)
    assert s.figure_9.benchmark == "mmlu" and s.figure_17.benchmark == "mmlu"
    assert s.figure_14.step == 1000 and s.table_5.step == 1000 and dict(s.table_5.xgboost) == {}
    assert s.figure_20.kinds == ("instruct",)
    assert s.figure_mini.stage == "e1" and s.figure_mini.benchmarks["mmlu_mc"] == "acc,none"
    assert "mmlu_mc" in s.figure_mini.brier
    # the actions' sections: action=plan, action=mini-data
    assert s.plan.experiments[0] == "training_on_the_test_task/paper" and s.plan.models is None
    assert (
        s.plan.runner_overrides == () and s.plan.train_tflops == 300.0 and s.plan.tokens_per_example is None
    )
    assert s.plan.finetune_examples["mmluaux"] == 99842.0 and s.plan.eval_tokens["gsm8k"] == 1.5e6
    assert (s.plan.paper_gpu_hours.finetune, s.plan.paper_gpu_hours.evaluation) == (10000.0, 400.0)
    assert s.mini_data.assets == "assets/pypi" and s.mini_data.max_train_docs == 800
    assert s.mini_data.subjects[0] == "high_school_biology" and s.mini_data.seed == 0


def test_the_paper_text_preset_gives_the_texts_choices():
    s = Settings.from_config(compose(["analysis_protocol=paper_text"])["training_on_the_test_task"])
    assert (s.regression.cov_type, s.regression.c_e_search) == ("cluster", "profile")
    assert s.emergence.c_e_search == "profile"  # §5: Eq. 1 fitted by least squares
    assert (s.benchmark("gpqa").chance, s.benchmark("bbh").chance) == (0.25, 0.0)
    default = Settings.from_config(compose()["training_on_the_test_task"])
    gemma_paper, gemma_authors = s.release.registry.get("gemma-2b"), default.release.registry.get("gemma-2b")
    assert (gemma_paper.tokens_t, gemma_authors.tokens_t) == (3.0, 2.0)  # App. B.1 vs model2compute


def test_settings_are_frozen():
    s = Settings.from_config(compose()["training_on_the_test_task"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.cutoff = "2024-01"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.regression.c_e_search = "local"  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.benchmarks["mmlu"] = s.benchmarks["gsm8k"]  # type: ignore[index]
    with pytest.raises(TypeError):
        s.figure_6.families["Falcon"] = "falcon"  # type: ignore[index]
    with pytest.raises(KeyError, match="not configured"):
        s.benchmark("no_such_benchmark")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.plan.train_tflops = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.plan.eval_tokens["mmlu"] = 1.0  # type: ignore[index]


def test_the_pipeline_builds_them_once_with_overrides():
    cfg = compose(
        [
            f"paper={TOTT}",
            "training_on_the_test_task.cutoff=2024-01",
            "training_on_the_test_task.regression.c_e_search=profile",
        ]
    )
    ctx = make_context(cfg, TOTT)
    assert isinstance(ctx.settings, Settings)
    assert ctx.settings.cutoff == "2024-01" and ctx.settings.regression.c_e_search == "profile"


def test_a_bad_value_fails_when_the_settings_are_read():
    cfg = compose()
    cfg.training_on_the_test_task.figure_3.labels = ["only one"]
    with pytest.raises(ValueError, match="figure_3.labels needs 2 labels"):
        Settings.from_config(cfg.training_on_the_test_task)
    cfg = compose(["training_on_the_test_task.benchmarks.mmlu.aggregate=sum"])
    with pytest.raises(ValueError, match="aggregate must be"):
        Settings.from_config(cfg.training_on_the_test_task)
    cfg = compose(["training_on_the_test_task.regression.c_e_search=global"])
    with pytest.raises(ValueError, match="c_e_search must be one of"):
        Settings.from_config(cfg.training_on_the_test_task)
    cfg = compose(["training_on_the_test_task.regression.c_e_search=pwlf"])  # Eq. 1 with θ: no pwlf
    with pytest.raises(ValueError, match="regression.c_e_search must be one of"):
        Settings.from_config(cfg.training_on_the_test_task)
    cfg = compose(["training_on_the_test_task.emergence.c_e_search=global"])
    with pytest.raises(ValueError, match="emergence.c_e_search must be one of"):
        Settings.from_config(cfg.training_on_the_test_task)


# --- proxy-tasks reads that paper's release with that paper's settings ----------------------------------------


def _release(data: Path) -> list[str]:
    """A training-on-the-test-task release with MMLU before and after fine-tuning (e3/mmluaux) for every base
    model the authors' release has: fine-tuning lowers every second model's score."""
    models = [m for m in ModelRegistry.load().names("base") if not m.startswith("qwen2-")]
    evaluations = data / TOTT / "evaluations"
    for i, name in enumerate(models):
        acc = 0.3 + 0.005 * i
        after = acc - 0.03 if i % 2 == 0 else acc + 0.05
        for folder, value in ((evaluations / "base", acc), (evaluations / "e3" / "mmluaux", after)):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{name}-mmlu.json").write_text(json.dumps(mmlu_payload(value)))
    stamp_release(data / TOTT)
    return models


def _mmlu_matrix(data: Path, *overrides: str):
    from testtask.proxy_tasks.matrices import load_matrix

    cfg = compose(["paper=proxy-tasks", f"data.dest={data}", *overrides])
    cfg.proxy_tasks.matrices = {
        "tott_mmlu": {
            "label": "MMLU, adjusted",
            "reader": "training_on_the_test_task",
            "stage": "adjusted",
            "benchmarks": ["mmlu"],
        }
    }
    return load_matrix(make_context(cfg, "proxy-tasks"), "tott_mmlu")


def test_proxy_tasks_reads_training_on_the_test_task_through_that_papers_settings(tmp_path):
    """The matrix follows an override of `training_on_the_test_task.*`: proxy-tasks has no copy of that config."""
    data = tmp_path / "published"
    _release(data)
    kept = _mmlu_matrix(data).scores["mmlu"]
    after = _mmlu_matrix(data, "training_on_the_test_task.adjustment.use_max=false").scores["mmlu"]
    assert len(kept) == len(after) > 5
    assert (kept >= after - 1e-12).all() and (kept > after + 1e-6).any()
    # the use_max choice itself, and the benchmark's metric, come from that paper's settings
    brier = _mmlu_matrix(data, "training_on_the_test_task.benchmarks.mmlu.metric='brier_score,none'")
    brier = brier.scores["mmlu"]
    assert not kept.round(6).equals(brier.round(6))


def test_proxy_tasks_has_no_copy_of_that_papers_config():
    cfg = compose(["paper=proxy-tasks"])
    assert "tott_analysis" not in cfg.proxy_tasks
    ctx = make_context(cfg, "proxy-tasks")
    tott = ctx.context_of(TOTT)
    assert isinstance(tott.settings, Settings)
    assert tott.settings.benchmark("gsm8k").metric == "exact_match,flexible-extract"
    assert tott.data_root == ctx.paper_root(TOTT)
