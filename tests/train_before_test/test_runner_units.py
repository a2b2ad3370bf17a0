"""Units of the train-before-test runner with known answers: caps and carving, checkpoint selection, epoch
boundaries, training texts against lm-eval's own requests, the store, the benchmark specs and the presets."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import offline_single_thread
from tests.fixtures.tbt_runner import compose_run, typed_run
from testtask.schema import ConfigError
from testtask.train_before_test.runner import splits, store
from testtask.train_before_test.runner.benchmarks import SpecError, lookup, spec_of
from testtask.train_before_test.runner.selection import Point, best
from testtask.train_before_test.runner.training import steps_per_epoch

REPO = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- caps and carving


def test_cap_keeps_small_sets_and_subsamples_large_ones_in_source_order():
    small = np.arange(5)
    assert splits.cap(small, 5, seed=0, purpose="test").tolist() == [0, 1, 2, 3, 4]
    assert splits.cap(small, None, seed=0, purpose="test").tolist() == [0, 1, 2, 3, 4]
    big = np.arange(100, 200)
    chosen = splits.cap(big, 10, seed=0, purpose="test")
    assert len(chosen) == 10 and len(set(chosen.tolist())) == 10
    assert set(chosen.tolist()) <= set(big.tolist()) and (np.diff(chosen) > 0).all()
    assert chosen.tolist() == splits.cap(big, 10, seed=0, purpose="test").tolist()  # seeded
    assert chosen.tolist() != splits.cap(big, 10, seed=1, purpose="test").tolist()
    with pytest.raises(splits.SplitError):
        splits.cap(big, 0, seed=0, purpose="test")


def test_carve_gives_a_disjoint_fifth():
    train, validation = splits.carve(10, 0.2, seed=3)
    assert len(validation) == 2 and len(train) == 8
    assert sorted(train.tolist() + validation.tolist()) == list(range(10))
    assert splits.carve(1001, 0.2, seed=3)[1].size == 200
    with pytest.raises(splits.SplitError, match="between 0 and 1"):
        splits.carve(10, 1.0, seed=0)


def test_plan_applies_the_paper_caps_and_keeps_streams_independent():
    caps = {"train": 50_000, "validation": 1_000, "test": 10_000}
    plan = splits.plan(60_000, None, 12_000, caps, validation_fraction=0.2, seed=0)
    assert plan.carved and plan.counts() == {
        "train": {"available": 48_000, "used": 48_000},  # 80% of 60k is under the 50k cap
        "validation": {"available": 12_000, "used": 1_000},
        "test": {"available": 12_000, "used": 10_000},
    }
    assert not set(plan.train.tolist()) & set(plan.validation.tolist())
    other = splits.plan(60_000, None, 12_000, {**caps, "test": 500}, validation_fraction=0.2, seed=0)
    assert (
        other.train.tolist() == plan.train.tolist() and other.validation.tolist() == plan.validation.tolist()
    )
    own = splits.plan(400, 50, 30, {"validation": 40}, validation_fraction=0.2, seed=0)
    assert not own.carved and len(own.train) == 400 and len(own.validation) == 40 and len(own.test) == 30


# --------------------------------------------------------------------------- selection and epochs


def test_best_takes_the_highest_score_and_the_first_among_equals():
    base = Point("plain", None, 0, 0.50)
    curve = [
        base,
        Point("plain", 1e-4, 1, 0.55),
        Point("plain", 1e-4, 2, 0.61),
        Point("plain", 5e-4, 1, 0.61),
    ]
    assert best(curve) == curve[2]
    assert best([base, Point("plain", 1e-4, 1, 0.50)]) == base  # no improvement: the pre-fine-tuning result
    assert best(curve, higher_is_better=False) == base  # e.g. bits per byte
    assert best([Point("plain", 1e-4, 1, float("nan")), Point("plain", 1e-4, 2, 0.1)]).epoch == 2
    chat = [Point("plain", None, 0, 0.4), Point("chat", None, 0, 0.45)]
    assert best(chat).variant == "chat"
    with pytest.raises(ValueError):
        best([])


@pytest.mark.parametrize(
    ("examples", "per_device", "accumulation", "world", "expected"),
    [(24, 8, 1, 1, 3), (25, 8, 1, 1, 4), (100, 4, 4, 1, 7), (100, 4, 1, 2, 13), (3, 8, 2, 1, 1)],
)
def test_steps_per_epoch_counts_as_the_trainer(examples, per_device, accumulation, world, expected):
    assert steps_per_epoch(examples, per_device, accumulation, world) == expected


# --------------------------------------------------------------------------- training texts


MC_YAML = """task: fx_mc
dataset_path: json
dataset_kwargs: {{data_files: {{train: {data}, test: {data}}}}}
output_type: multiple_choice
training_split: train
test_split: test
description: "Pick one.\\n"
doc_to_text: "Q: {{{{q}}}}\\nA:"
doc_to_target: label
doc_to_choice: choices
metric_list: [{{metric: acc}}]
"""
MULTI_INPUT_YAML = """task: fx_multi
dataset_path: json
dataset_kwargs: {{data_files: {{train: {data}, test: {data}}}}}
output_type: multiple_choice
training_split: train
test_split: test
doc_to_text: "{{{{label}}}}"
doc_to_choice: "{{{{options}}}}"
doc_to_target: "{{{{tail}}}}"
metric_list: [{{metric: acc}}]
"""
GEN_YAML = """task: fx_gen
dataset_path: json
dataset_kwargs: {{data_files: {{train: {data}, test: {data}}}}}
output_type: generate_until
training_split: train
test_split: test
doc_to_text: "Q: {{{{q}}}}?\\nA:"
doc_to_target: "{{{{answers}}}}"
target_delimiter: " "
generation_kwargs: {{until: ["\\n"]}}
metric_list: [{{metric: exact_match}}]
"""


@pytest.fixture(scope="module")
def fixture_tasks(tmp_path_factory):
    """Three small lm-eval tasks (multiple choice, multiple input, generation) on JSON Lines data."""
    from lm_eval.tasks import TaskManager, get_task_dict

    root = tmp_path_factory.mktemp("tbt_texts")
    rows = {
        "fx_mc": [{"q": f"q{i}", "choices": ["x", "y", "z"], "label": i % 3} for i in range(4)],
        "fx_multi": [
            {"options": [f"the cat sat {i}", f"the dog sat {i}"], "label": i % 2, "tail": "on the mat"}
            for i in range(4)
        ],
        "fx_gen": [{"q": f"who {i}", "answers": [f"ann {i}", f"bob {i}"]} for i in range(4)],
    }
    for name, template in (("fx_mc", MC_YAML), ("fx_multi", MULTI_INPUT_YAML), ("fx_gen", GEN_YAML)):
        data = root / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows[name]))
        (root / f"{name}.yaml").write_text(template.format(data=data))
    with offline_single_thread():
        manager = TaskManager(include_path=str(root), include_defaults=False)
        tasks = get_task_dict(["fx_mc", "fx_multi", "fx_gen"], manager)
    return tasks, rows


def _gold_request(task, doc) -> str:
    """context + continuation of the gold answer in lm-eval's own requests."""
    ctx = task.fewshot_context(doc, 0)
    requests = task.construct_requests(doc, ctx, metadata=("t", 0, 1))
    requests = requests if isinstance(requests, list) else [requests]
    if task.OUTPUT_TYPE == "generate_until":
        return requests[0].arguments[0]
    gold = task.doc_to_text(doc) if task.multiple_input else task.doc_to_target(doc)
    return "".join(requests[gold].arguments)


def training_texts(task, tokenizer=None) -> list[str]:
    """The `texts.format: lm_eval` examples as whole texts."""
    from dataclasses import replace

    from testtask.train_before_test.runner.texts import as_text, training_examples

    lm_eval = replace(typed_run().texts, format="lm_eval")
    examples = training_examples(task, lm_eval, chat_tokenizer=tokenizer)
    return [as_text(e) for e in examples]


def test_training_texts_are_lm_evals_gold_requests(fixture_tasks):
    tasks, rows = fixture_tasks
    mc = training_texts(tasks["fx_mc"])
    assert mc[1] == "Pick one.\nQ: q1\nA: y"
    assert mc == [_gold_request(tasks["fx_mc"], d) for d in tasks["fx_mc"].training_docs()]
    multi = training_texts(tasks["fx_multi"])
    assert multi[1] == "the dog sat 1 on the mat"  # Winogrande-style: the gold context, then the shared tail
    assert multi == [_gold_request(tasks["fx_multi"], d) for d in tasks["fx_multi"].training_docs()]
    gen = training_texts(tasks["fx_gen"])
    assert (
        gen[2] == "Q: who 2?\nA: ann 2"
    )  # the first reference answer after the prompt lm-eval generates from
    assert all(
        t.startswith(_gold_request(tasks["fx_gen"], d)) for t, d in zip(gen, rows["fx_gen"], strict=True)
    )


def test_chat_variant_wraps_the_prompt_in_the_template(fixture_tasks, tmp_path):
    from testtask.lm.hf import load_tokenizer
    from testtask.train_before_test.runner import tiny
    from testtask.train_before_test.runner.cell import resolve_variants
    from testtask.train_before_test.runner.texts import chat_template

    tasks, _ = fixture_tasks
    tokenizer = load_tokenizer(str(tiny.build_model(tmp_path / "model")))
    assert chat_template(tokenizer) is None and resolve_variants("auto", True, tokenizer) == ["plain"]
    with pytest.raises(ValueError, match="no chat template"):
        resolve_variants("both", False, tokenizer)
    tokenizer.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    assert resolve_variants("auto", True, tokenizer) == ["plain", "chat"]
    assert resolve_variants("auto", False, tokenizer) == ["plain"]
    assert resolve_variants("both", True, tokenizer, corpus=True) == ["plain"]  # a corpus has no prompt
    text = training_texts(tasks["fx_mc"], tokenizer)[1]
    assert text == "<system>Pick one.\n<user>Q: q1\nA:<assistant>y"  # no delimiter after a chat prompt


# --------------------------------------------------------------------------- store


def _record(benchmark: str, model: str, direct: float, tuned: float) -> dict:
    return {
        "benchmark": benchmark,
        "model": model,
        "direct_eval": {"test": direct, "stderr": 0.01},
        "train_before_test": {"test": tuned, "stderr": 0.02},
    }


def test_slug_and_record_paths():
    assert store.slug("Qwen/Qwen2.5-7B") == "Qwen__Qwen2.5-7B"
    assert store.slug("01-ai/Yi-1.5-6B-Chat") == "01-ai__Yi-1.5-6B-Chat"
    assert store.record_path(Path("r"), "arc_easy", "openai-community/gpt2") == Path(
        "r/cells/arc_easy/openai-community__gpt2.json"
    )


def test_parallel_merges_keep_every_cell(tmp_path):
    cells = [("arc_easy", "a/m1", 0.3, 0.4), ("arc_easy", "b/m2", 0.5, 0.6), ("rte", "a/m1", 0.7, 0.8)]

    def finish(cell):
        store.write_record(store.record_path(tmp_path, cell[0], cell[1]), _record(*cell))
        store.merge(tmp_path)

    threads = [threading.Thread(target=finish, args=(c,)) for c in cells]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    merged = json.loads((tmp_path / "all_results.json").read_text())
    assert merged == {
        "train_before_test": {"arc_easy": {"a/m1": 0.4, "b/m2": 0.6}, "rte": {"a/m1": 0.8}},
        "direct_eval": {"arc_easy": {"a/m1": 0.3, "b/m2": 0.5}, "rte": {"a/m1": 0.7}},
        "train_before_test_stderr": {"arc_easy": {"a/m1": 0.02, "b/m2": 0.02}, "rte": {"a/m1": 0.02}},
        "direct_eval_stderr": {"arc_easy": {"a/m1": 0.01, "b/m2": 0.01}, "rte": {"a/m1": 0.01}},
    }
    broken = store.record_path(tmp_path, "rte", "c/m3")
    store.write_record(broken, {"benchmark": "rte", "model": "c/m3"})
    with pytest.raises(ValueError, match="c__m3.json: cell record lacks field"):
        store.merge(tmp_path)


def test_claim_refuses_other_settings(tmp_path):
    settings = {"learning_rates": [1e-4], "caps": {"train": 10}}
    store.claim(tmp_path, settings)
    store.claim(tmp_path, settings)  # the same settings: resuming is fine
    with pytest.raises(store.SettingsChanged, match=r"caps\.train: 10 -> 20"):
        store.claim(tmp_path, {"learning_rates": [1e-4], "caps": {"train": 20}})


# --------------------------------------------------------------------------- specs and presets


def test_benchmark_specs_are_checked():
    spec = spec_of("gsm8k", {"task": "gsm8k", "train": "train", "test": "test",
                             "metric": "exact_match", "filter": "flexible-extract"})  # fmt: skip
    assert spec.validation is None and spec.metric_key == "exact_match,flexible-extract"
    assert spec.stderr_key == "exact_match_stderr,flexible-extract"
    with pytest.raises(ConfigError, match="benchmarks.x.metric: missing"):
        spec_of("x", {"task": "x", "train": "train", "test": "test"})
    with pytest.raises(ConfigError, match="benchmarks.x.validation = 'v': expected a split other than"):
        spec_of("x", {"task": "x", "train": "t", "validation": "v", "test": "v", "metric": "acc"})
    with pytest.raises(ConfigError, match="benchmarks.x.split: unknown key"):
        spec_of("x", {"task": "x", "train": "t", "test": "v", "metric": "acc", "split": 1})
    with pytest.raises(SpecError, match="no specification"):
        lookup({}, "arc_easy")


def test_paper_preset_sweeps_the_published_models_and_benchmarks():
    cfg = compose_run("experiment=train_before_test/paper", hydra_config=True)
    models = cfg.hydra.sweeper.params.model.split(",")
    benchmarks = cfg.hydra.sweeper.params.benchmark.split(",")
    assert len(models) == 61 and len(benchmarks) == 24
    assert models == [m["id"] for m in cfg.models]
    assert sum(m["instruct"] for m in cfg.models) == 24
    corpora = {"arxiv_2025", "stackexchange_2025", "wiki_2025"}
    assert set(benchmarks) == set(cfg.benchmarks) - corpora
    perplexity = compose_run(
        "experiment=train_before_test/perplexity", hydra_config=True
    ).hydra.sweeper.params
    assert perplexity.model.split(",") == models and set(perplexity.benchmark.split(",")) == corpora
    typed = typed_run("experiment=train_before_test/paper")
    for name in benchmarks:
        lookup(typed.benchmarks, name)  # every spec parses
    assert cfg.results_dir == "results/train-before-test/paper"
    assert (cfg.lora.r, cfg.lora.alpha, cfg.lora.dropout, cfg.epochs) == (8, 32, 0.1, 5)
    assert len(cfg.learning_rates) == 3 and dict(cfg.caps) == {
        "train": 50000,
        "validation": 1000,
        "test": 10000,
    }
    assert cfg.recipe.weight_decay == 0.01
    published = REPO / "data" / "published" / "train-before-test" / "all_results.json"
    if published.is_file():  # the authors' matrices: the same model ids, their benchmarks less the 3 corpora
        table = json.loads(published.read_text())["train_before_test"]
        assert set(benchmarks) == set(table) - {"arxiv_2025", "stackexchange_2025", "wiki_2025"}
        assert set(models) == set(table["arc_easy"])


def test_instruction_tuned_models_are_read_from_the_table():
    assert typed_run("model=Qwen/Qwen2.5-7B-Instruct").is_instruct() is True
    assert typed_run("model=Qwen/Qwen2.5-7B").is_instruct() is False
    assert typed_run("model=someone/unknown").is_instruct() is False  # outside the table
    assert typed_run("model=someone/unknown", "instruct=true").is_instruct() is True


@pytest.mark.slow
def test_paper_specs_name_the_splits_of_the_lm_eval_tasks():
    """Each spec's test split is the split lm-eval scores, its validation split the task's own (slow: indexes
    lm-eval's ~15 s task folder)."""
    from testtask.train_before_test.runner.data import build_manager, evaluation_split, task_config

    cfg = typed_run()
    specs = [lookup(cfg.benchmarks, name) for name in cfg.benchmarks]
    manager = build_manager([s.task for s in specs])
    for spec in specs:
        if spec.is_corpus:  # our corpus tasks read the runner's 8:1:1 parts
            config = task_config(manager, spec.task)
            assert (config["training_split"], config["validation_split"], config["test_split"]) == (
                spec.train,
                spec.validation,
                spec.test,
            )
            assert config["output_type"] == "loglikelihood_rolling" and not spec.higher_is_better
            continue
        config = task_config(manager, spec.task)
        assert config["training_split"] == spec.train, spec.name
        assert spec.test == evaluation_split(config), spec.name
        if spec.validation is not None:
            assert config["validation_split"] == spec.validation and config.get("test_split") == spec.test
        metrics = {m["metric"] for m in config["metric_list"]}
        assert spec.metric in metrics, spec.name


def test_the_corpus_tasks_state_lm_evals_own_aggregation_and_direction_for_each_metric():
    """Stated, not left to lm-eval's defaults (it warns once per metric and task load otherwise), and equal to
    those defaults, so the scores are the same."""
    import yaml
    from lm_eval.api import metrics  # noqa: F401  (registers the metrics)
    from lm_eval.api.registry import AGGREGATION_REGISTRY, get_metric_aggregation, is_higher_better

    tasks = Path(splits.__file__).parent.parent / "lm_eval_tasks"
    config = yaml.safe_load((tasks / "_corpus_2025_yaml").read_text())
    assert [m["metric"] for m in config["metric_list"]] == [
        "word_perplexity",
        "byte_perplexity",
        "bits_per_byte",
    ]
    for entry in config["metric_list"]:
        assert AGGREGATION_REGISTRY[entry["aggregation"]] is get_metric_aggregation(entry["metric"])
        assert entry["higher_is_better"] is is_higher_better(entry["metric"])
