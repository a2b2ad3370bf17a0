"""training-on-the-test-task's typed settings (the schema of its config section, read once by the pipeline), the
one-line errors of a bad value, and proxy-tasks reading that paper's release through the context the pipeline
builds with those settings (one source of truth)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import stamp_release
from tests.test_loader_validation import mmlu_payload
from testtask import schema
from testtask.lm.models import ModelRegistry, Models
from testtask.lm.release import Release
from testtask.lm.results import AbsentResults
from testtask.lm.scores import BenchmarkSpec
from testtask.paths import conf_dir
from testtask.pipeline import compose, config_schema, make_context, typed
from testtask.schema import ConfigError
from testtask.training_on_the_test_task.settings import Settings

TOTT = "training-on-the-test-task"
KEY = "training_on_the_test_task"


def settings(*overrides: str) -> Settings:
    return typed(compose(list(overrides))).training_on_the_test_task


def test_the_composed_default_config_gives_typed_settings():
    s = settings()
    assert isinstance(s, Settings)
    assert s.cutoff == "2023-11" and s.robustness_cutoffs == ["2023-09", "2024-01"]
    assert s.model_kinds == ["base"]
    assert s.adjustment.stage == "e3" and s.adjustment.use_max is True
    # the authors' released analysis code (docs/protocols/training-on-the-test-task-analysis.md)
    assert (s.regression.cov_type, s.regression.alpha_level, s.regression.c_e_search) == (
        "nonrobust",
        0.05,
        "local",
    )
    assert (s.benchmark("gpqa").chance, s.benchmark("bbh").chance) == (0.0, 0.3)
    assert isinstance(s.release, Release) and s.release.evaluations_dir == "evaluations"
    assert s.release is s.release  # built once per settings object
    assert isinstance(s.release.registry, ModelRegistry) and "llama-2-7b" in s.release.registry
    assert isinstance(s.release.absent, AbsentResults) and len(s.release.absent) > 0
    mmlu = s.benchmark("mmlu")
    assert isinstance(mmlu, BenchmarkSpec) and mmlu.key == "mmlu"
    assert (mmlu.file, mmlu.metric, mmlu.aggregate, mmlu.chance) == ("mmlu", "acc,none", "entries_mean", 0.25)
    assert (
        mmlu.metric_key == "acc,none|entries_mean"
        and s.benchmark("gsm8k").metric_key == "exact_match,flexible-extract"
    )
    assert s.benchmark("mmlu_brier").higher_is_better is False
    assert s.benchmark("gpqa").suite == "v2" and s.benchmark("mmlu").suite == "v1"
    assert s.figure_1.benchmarks == ["mmlu", "gsm8k"]
    assert s.figure_3.min_compute == 7.0e21 and isinstance(s.figure_3.min_compute, float)
    assert s.figure_3.seed == 42 and s.figure_3.arm("treatment").of("adjusted") == ["e1", "e3"]
    assert len(s.figure_3.labels) == 2
    assert s.figure_4.reformulated == ["arc_challenge_mc", "hellaswag_mc"]
    assert dict(s.figure_6.families) == {"Pythia": "pythia", "Llama 2": "llama-2", "Qwen 1.5": "qwen-1.5"}
    assert s.emergence.batch_size == 64 and s.emergence.max_compute == 1.0e24
    assert s.emergence.c_e_search == "pwlf"  # the authors' Figure 8/19 fit (plot_utils.py:158-168)
    assert (s.figure_8.benchmark, s.figure_8.steps) == ("mmlu", [0, 250, 500, 1000])
    assert s.figure_19.steps == [0, 250, 1000, 2500]
    assert s.figure_9.benchmark == "mmlu" and s.figure_17.benchmark == "mmlu"
    assert s.figure_14.step == 1000 and s.table_5.step == 1000 and dict(s.table_5.xgboost) == {}
    assert s.figure_20.kinds == ["instruct"]
    assert s.figure_mini.stage == "e1" and s.figure_mini.benchmarks["mmlu_mc"] == "acc,none"
    assert "mmlu_mc" in s.figure_mini.brier
    # the actions' sections: action=plan, action=mini-data
    assert s.plan.experiments[0] == "training_on_the_test_task/paper" and s.plan.models is None
    assert (
        s.plan.runner_overrides == [] and s.plan.train_tflops == 300.0 and s.plan.tokens_per_example is None
    )
    assert s.plan.finetune_examples["mmluaux"] == 99842.0 and s.plan.eval_tokens["gsm8k"] == 1.5e6
    assert (s.plan.paper_gpu_hours.finetune, s.plan.paper_gpu_hours.evaluation) == (10000.0, 400.0)
    assert s.mini_data.assets == "assets/pypi" and s.mini_data.max_train_docs == 800
    assert s.mini_data.subjects[0] == "high_school_biology" and s.mini_data.seed == 0


def test_the_paper_text_preset_gives_the_texts_choices():
    s = settings("protocol=paper_text")
    assert (s.regression.cov_type, s.regression.c_e_search) == ("cluster", "profile")
    assert s.emergence.c_e_search == "profile"  # §5: Eq. 1 fitted by least squares
    assert (s.benchmark("gpqa").chance, s.benchmark("bbh").chance) == (0.25, 0.0)
    gemma_paper, gemma_authors = (
        s.release.registry.get("gemma-2b"),
        settings().release.registry.get("gemma-2b"),
    )
    assert (gemma_paper.tokens_t, gemma_authors.tokens_t) == (3.0, 2.0)  # App. B.1 vs model2compute


def _copy_user_models(tmp_path: Path) -> Path:
    user = tmp_path / "user"
    user.mkdir()
    shutil.copy(conf_dir() / "user" / "models.example.yaml", user / "models.yaml")
    return user


@pytest.mark.parametrize("overrides", [[], ["protocol=paper_text"], ["user_dir=<user>"]])
def test_the_schema_types_every_leaf_of_the_composed_section(tmp_path, overrides):
    """Every key of the composed section (the registry's entries, the user's own models merged in, included) is a
    field of the schema: nothing is read untyped."""
    overrides = [o.replace("<user>", str(_copy_user_models(tmp_path))) for o in overrides]
    section = schema.plain(compose(overrides)[KEY])
    leaves = schema.leaves(config_schema(), {KEY: section})
    assert len(leaves) > 900 and [key for key, declared in leaves.items() if declared is None] == []
    if overrides and overrides[0].startswith("user_dir="):
        assert f"{KEY}.models.base.student-model-7b.revision_note" in leaves


def test_no_setting_has_a_default_in_code_only_the_registry_records_optional_fields():
    """A value of the section is in the YAML; only the registry, a data record, has fields that may be absent: an
    entry's (absent from most entries and from the user's own models, docs/extending.md), and `Models.own`, which
    models a user file added (filled by the merge of the user's models.yaml, never written in YAML)."""
    assert schema.defaults_in_code(Settings) == []
    found = schema.record_fields(Settings)
    assert "Models.own" in found
    assert all(name.split(".")[0].endswith("ModelEntry") for name in found if name != "Models.own")


def test_settings_are_frozen():
    s = settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.cutoff = "2024-01"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.regression.c_e_search = "local"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.plan.train_tflops = 1.0  # type: ignore[misc]
    with pytest.raises(KeyError, match="not configured"):
        s.benchmark("no_such_benchmark")


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


# --- a bad value: one line naming the key, the value and what is allowed ------------------------------------------

BENCHMARK_KEYS = (
    "mmlu, mmlu_cloze, mmlu_brier, gsm8k, arc_challenge, arc_challenge_mc, arc_challenge_mc_brier, hellaswag, "
    "hellaswag_mc, hellaswag_mc_brier, winogrande, winogrande_mc, truthfulqa_mc2, truthfulqa_mc2_mc, minerva_math, "
    "mmlu_pro, mmlu_pro_four, gpqa, musr, bbh, math_hard"
)


def lines(*overrides: str) -> list[str]:
    """The lines of the ConfigError the typed config of `overrides` raises ([] when it passes)."""
    try:
        typed(compose(list(overrides)))
    except ConfigError as err:
        assert str(err).splitlines() == [f"invalid config: {line}" for line in err.violations]
        return err.violations
    return []


@pytest.mark.parametrize(
    ("override", "line"),
    [
        (
            "regression.cov_type=HC9",
            "regression.cov_type = 'HC9': expected one of cluster, nonrobust, HC0, HC1, HC2, HC3",
        ),
        ("regression.c_e_search=global", "regression.c_e_search = 'global': expected one of profile, local"),
        # Eq. 1 with θ: pwlf is the emergence fit's only
        ("regression.c_e_search=pwlf", "regression.c_e_search = 'pwlf': expected one of profile, local"),
        ("regression.alpha_level=1.5", "regression.alpha_level = 1.5: expected a number in (0, 1)"),
        (
            "emergence.c_e_search=global",
            "emergence.c_e_search = 'global': expected one of pwlf, profile, local",
        ),
        ("emergence.batch_size=-64", "emergence.batch_size = -64: expected a positive integer"),
        ("model_values=mine", "model_values = 'mine': expected one of paper, authors"),
        (
            "benchmarks.gsm8k.aggregate=mean",
            "benchmarks.gsm8k.aggregate = 'mean': expected one of own, entries_mean",
        ),
        ("benchmarks.gpqa.chance=1.5", "benchmarks.gpqa.chance = 1.5: expected a number in [0, 1]"),
        ("benchmarks.gpqa.suite=v3", "benchmarks.gpqa.suite = 'v3': expected one of v1, v2"),
        (
            "figure_3.labels=[only one]",
            "figure_3.labels = ['only one']: expected a list of two non-empty strings",
        ),
        (
            "robustness_cutoffs=[2023-09]",
            "robustness_cutoffs = ['2023-09']: expected a list of two 'YYYY-MM' months",
        ),
        ("cutoff=November", "cutoff = 'November': expected a 'YYYY-MM' month (quoted)"),
        (
            "model_kinds=[base,chat]",
            "model_kinds = ['base', 'chat']: expected a non-empty list, each item one of base, instruct, extra",
        ),
        (
            "figure_20.kinds=[]",
            "figure_20.kinds = []: expected a non-empty list, each item one of base, instruct, extra",
        ),
        ("figure_8.steps=[0,-250]", "figure_8.steps = [0, -250]: expected a list, each item an integer >= 0"),
        ("table_5.step=0", "table_5.step = 0: expected a positive integer"),
        ("adjustment.use_max=yes", "adjustment.use_max = 'yes': expected true or false"),
        ("plan.train_tflops=0", "plan.train_tflops = 0: expected a number > 0"),
        (
            "plan.tokens_per_example=many",
            "plan.tokens_per_example = 'many': expected a number > 0, a mapping finetune dataset -> a number > 0, "
            "or null",
        ),
        ("mini_data.docs_per_task=0", "mini_data.docs_per_task = 0: expected a positive integer"),
        (
            "mini_data.max_train_docs=-1",
            "mini_data.max_train_docs = -1: expected a positive integer (or null)",
        ),
        (
            "figure_1.benchmarks=[mmlu,gsm8kk]",
            "figure_1.benchmarks = ['mmlu', 'gsm8kk']: expected keys of training_on_the_test_task.benchmarks "
            f"({BENCHMARK_KEYS})",
        ),
        (
            "figure_8.benchmark=mmlu_mc",
            "figure_8.benchmark = 'mmlu_mc': expected a key of training_on_the_test_task.benchmarks "
            f"({BENCHMARK_KEYS})",
        ),
        (
            "absent_results.0.model=[qwen2-0.5b,qwen9]",
            "absent_results[0].model = ['qwen2-0.5b', 'qwen9']: expected models of the registry "
            "training_on_the_test_task.models (qwen9 not in it)",
        ),
        (
            "absent_results.3.stage=e4",
            "absent_results[3].stage = 'e4': expected one of base, e1, e2, e1+2, e3, intermediate, lr_sweep, *",
        ),
        (
            "models.base.gemma-2b.train_date=2024-13",
            "models.base.gemma-2b.train_date = '2024-13': expected a 'YYYY-MM' month (quoted)",
        ),
        ("models.base.gemma-2b.params_b=0", "models.base.gemma-2b.params_b = 0: expected a number > 0"),
        (
            "models.base.gemma-2b.language=CN",
            "models.base.gemma-2b.language = 'CN': expected one of EN, EN+CN",
        ),
        (
            "models.base.gemma-2b.hf_repo=gemma",
            "models.base.gemma-2b.hf_repo = 'gemma': expected 'owner/name' on the Hub, or null",
        ),
        (
            "models.base.gemma-2b.revision=main",
            "models.base.gemma-2b.revision = 'main': expected a commit hash or null (a branch is not a pin; null "
            "with a revision_note saying why none is pinned)",
        ),
        (
            "models.instruct.gemma-2b-instruct.base_model=gemma-3b",
            "models.instruct.gemma-2b-instruct.base_model = 'gemma-3b': expected a model of "
            "training_on_the_test_task.models.base",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_its_key(override, line):
    assert lines(f"{KEY}.{override}") == [f"{KEY}.{line}"]


def test_a_bad_value_is_named_also_where_it_is_interpolated():
    assert lines(f"{KEY}.mmlu_aggregate=sum") == [
        f"{KEY}.mmlu_aggregate = 'sum': expected one of own, entries_mean",
        f"{KEY}.benchmarks.mmlu.aggregate = 'sum': expected one of own, entries_mean",
        f"{KEY}.benchmarks.mmlu_cloze.aggregate = 'sum': expected one of own, entries_mean",
    ]


def test_an_unknown_or_missing_key_is_named():
    assert lines(f"+{KEY}.figure_3.sead=1") == [
        f"{KEY}.figure_3.sead: unknown key (did you mean seed?); the keys here are benchmarks, min_compute, seed, "
        "control, treatment, labels"
    ]
    cfg = compose()
    del cfg[KEY].emergence["batch_size"]
    del cfg[KEY].models.base["gemma-2b"]["family"]
    with pytest.raises(ConfigError) as err:
        typed(cfg)
    assert err.value.violations == [
        f"{KEY}.models.base.gemma-2b.family: missing, expected a non-empty string",
        f"{KEY}.emergence.batch_size: missing, expected a positive integer",
    ]


def test_every_bad_value_is_listed_at_once():
    found = lines(f"{KEY}.regression.cov_type=HC9", f"{KEY}.emergence.batch_size=0", f"{KEY}.cutoff=2023")
    assert len(found) == 3 and {line.split(" = ")[0] for line in found} == {
        f"{KEY}.regression.cov_type",
        f"{KEY}.emergence.batch_size",
        f"{KEY}.cutoff",
    }


def test_a_name_in_two_registry_sections_is_refused():
    cfg = compose()
    cfg[KEY].models.extra["gemma-2b"] = {**schema.plain(cfg[KEY].models.base["gemma-2b"]), "source": "x"}
    with pytest.raises(ConfigError) as err:
        typed(cfg)
    assert err.value.violations == [
        f"{KEY}.models.extra.gemma-2b = 'gemma-2b': expected a name in one section only (also in {KEY}.models.base)"
    ]


def test_the_registry_yaml_is_one_schema_for_the_analysis_and_the_runner():
    """conf/training_on_the_test_task/models/paper.yaml, read alone, is a `Models` (the runner composes it too)."""
    models = schema.load(
        Models, yaml.safe_load((conf_dir() / KEY / "models" / "paper.yaml").read_text()), "models"
    )
    assert len(models.base) == 56 and len(models.instruct) == 35 and len(models.extra) == 2
    assert models == settings().models


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
    cfg.proxy_tasks.matrices["tott_mmlu"] = {
        "label": "MMLU, adjusted",
        "reader": "training_on_the_test_task",
        "regime": None,
        "stage": "adjusted",
        "benchmarks": ["mmlu"],
        "top_t": None,
        "n_models": None,
        "robustness": None,
        "file": None,
        "stderr_file": None,
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
