"""The train-before-test runner follows the authors' code (socialfoundations/lm-harmony@88bc5c3, TRL v0.17.0):
training texts, the chat variant's tokens, EOS in the loss, the split draws, MedMCQA's option and the perplexity
corpora (8:1:1, rolling log-likelihood, bits per byte, selection by the lowest validation value), each checked
through the runner's own defaults (docs/protocols/train-before-test.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import offline_single_thread
from tests.fixtures.tbt_runner import chat_tokenizer, cheap_env_info, compose_run, tiny_config, typed_run
from testtask.provenance import code_record
from testtask.schema import ConfigError
from testtask.train_before_test.runner import splits
from testtask.train_before_test.runner.benchmarks import lookup, spec_of

pytest.importorskip("lm_eval")

NQ_YAML = """task: fx_nq
dataset_path: json
dataset_kwargs: {{data_files: {{train: {data}, validation: {data}}}}}
output_type: generate_until
training_split: train
validation_split: validation
description: "Answer these questions:\\n\\n"
doc_to_text: "Q: {{{{question}}}}?\\nA:"
doc_to_target: "{{{{answer}}}}"
target_delimiter: " "
generation_kwargs: {{until: ["\\n"]}}
metric_list: [{{metric: exact_match, aggregation: mean, higher_is_better: true}}]
"""
MC_YAML = """task: fx_mc_described
dataset_path: json
dataset_kwargs: {{data_files: {{train: {data}, test: {data}}}}}
output_type: multiple_choice
training_split: train
test_split: test
description: "Pick one.\\n"
doc_to_text: "Q: {{{{q}}}}\\nA:"
doc_to_target: label
doc_to_choice: choices
metric_list: [{{metric: acc, aggregation: mean, higher_is_better: true}}]
"""


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """An NQ-Open-like generation task (description, several answer aliases) and a described multiple choice."""
    from lm_eval.tasks import TaskManager, get_task_dict

    root = tmp_path_factory.mktemp("tbt_protocol")
    rows = {
        "fx_nq": [{"question": f"who is {i}", "answer": [f"ann {i}", f"bob {i}", "it"]} for i in range(3)],
        "fx_mc_described": [{"q": f"q{i}", "choices": ["x", "y", "z"], "label": i % 3} for i in range(3)],
    }
    for name, template in (("fx_nq", NQ_YAML), ("fx_mc_described", MC_YAML)):
        data = root / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows[name]))
        (root / f"{name}.yaml").write_text(template.format(data=data))
    with offline_single_thread():
        manager = TaskManager(include_path=str(root), include_defaults=False)
        return get_task_dict(list(rows), manager)


def _default_texts():
    return typed_run().texts


# --------------------------------------------------------------------------- item 14: training texts


def test_nq_open_text_joins_every_alias_without_description(tasks):
    """data_utils.py:220-229: `doc_to_text + " " + " ".join(answers)`, no description, for every task."""
    from testtask.train_before_test.runner.texts import as_text, training_examples

    nq = training_examples(tasks["fx_nq"], _default_texts())
    assert nq[1] == ("Q: who is 1?\nA:", " ann 1 bob 1 it")
    mc = [as_text(e) for e in training_examples(tasks["fx_mc_described"], _default_texts())]
    assert mc == ["Q: q0\nA: x", "Q: q1\nA: y", "Q: q2\nA: z"]
    assert not any("Answer these questions" in as_text(e) for e in nq)


# --------------------------------------------------------------------------- item 15: chat variant


def test_chat_text_has_the_system_turn_and_a_single_bos(tasks, tmp_path):
    """data_utils.py:235-249 + main.py:100: [system "You are helpful", user, assistant], no system turn for
    Gemma; TRL v0.17.0 tokenizes the rendered chat without special tokens (sft_trainer.py:541-554): one BOS, and
    no EOS after the template's own end of turn."""
    from testtask.lm.finetune import encode
    from testtask.train_before_test.runner.cell import variant_recipe
    from testtask.train_before_test.runner.texts import as_text, training_examples

    tokenizer = chat_tokenizer(tmp_path / "model", "Q : who is 1 ? A : ann bob it")
    cfg = typed_run()
    recipe = variant_recipe(cfg.recipe, cfg.chat_recipe, "chat")
    examples = training_examples(
        tasks["fx_nq"], _default_texts(), chat_tokenizer=tokenizer, model="org/Model-Chat"
    )
    rendered = tokenizer.apply_chat_template(
        [
            {"role": "system", "content": "You are helpful"},
            {"role": "user", "content": "Q: who is 1?\nA:"},
            {"role": "assistant", "content": "ann 1 bob 1 it"},
        ],
        tokenize=False,
    )
    assert rendered.startswith(tokenizer.bos_token + "<|system|> You are helpful")
    ids = encode(tokenizer, examples[1], recipe)["input_ids"]
    assert ids == tokenizer(rendered, add_special_tokens=False)["input_ids"]  # TRL's tokens exactly
    assert ids.count(tokenizer.bos_token_id) == 1 and ids[0] == tokenizer.bos_token_id
    assert ids[-1] != tokenizer.eos_token_id
    gemma = training_examples(
        tasks["fx_nq"], _default_texts(), chat_tokenizer=tokenizer, model="google/gemma-2-2b-it"
    )
    assert "<|system|>" not in as_text(gemma[1]) and "<|user|> Q: who is 1?" in as_text(gemma[1])


# --------------------------------------------------------------------------- loss and EOS


def test_eos_is_trained_in_the_tbt_recipe(tmp_path, monkeypatch):
    """completion_only False (main.py:41,189-192): the whole sequence is trained; TRL appends EOS and masks
    padding by position only (sft_trainer.py:121-138, 562-571), so the EOS label survives even when pad == EOS."""
    from testtask.lm.finetune import PadCollator, tokenize
    from testtask.train_before_test.runner import training

    tokenizer = chat_tokenizer(tmp_path / "model", "Q : who is 1 ? A : ann bob it")
    tokenizer.pad_token = tokenizer.eos_token  # GPT-2, Llama-3, Qwen base: pad is EOS
    seen = {}

    def capture(model, texts, output_dir, recipe, **kwargs):
        seen.update(texts=texts, recipe=recipe)
        raise RuntimeError("captured")

    monkeypatch.setattr(training, "finetune", capture)
    examples = [("Q: who is 1?\nA:", " ann 1"), ("Q: who?\nA:", " bob it it it")]
    with pytest.raises(RuntimeError, match="captured"):
        training.train_epochs(
            "m",
            examples,
            tmp_path,
            typed_run().recipe,
            learning_rate=1e-4,
            epochs=1,
            lora=typed_run().lora,
            device="cpu",
            seed=0,
        )
    features = tokenize(tokenizer, seen["texts"], seen["recipe"])
    batch = PadCollator(tokenizer.pad_token_id, seen["recipe"], "right")(features)
    eos = tokenizer.eos_token_id
    for row, feature in enumerate(features):
        n = len(feature["input_ids"])
        assert feature["input_ids"][-1] == eos and batch["labels"][row, n - 1].item() == eos
        assert feature["labels"] == feature["input_ids"]  # loss on all tokens, prompt included
        assert (batch["labels"][row, n:] == -100).all() and (batch["attention_mask"][row, n:] == 0).all()


# --------------------------------------------------------------------------- splits and MedMCQA


def test_authors_split_rule_draws_the_authors_documents():
    """random_split (zarth_utils/nn_utils.py:302-312) and the caps (data_utils.py:179-201): global numpy seeded."""
    # the authors draw with numpy's global generator; the test replays those draws on purpose
    np.random.seed(0)  # noqa: NPY002
    order = np.random.permutation(103)  # noqa: NPY002
    train, validation = splits.carve_authors(103, (0.8, 0.2), seed=0)
    assert train.tolist() == order[:82].tolist() and validation.tolist() == order[82:102].tolist()
    plan = splits.plan(
        103, None, 50, {"train": 10, "validation": 5, "test": 20}, validation_fraction=0.2, seed=0
    )
    np.random.seed(0)  # noqa: NPY002
    assert plan.train.tolist() == train[np.random.permutation(82)[:10]].tolist()  # noqa: NPY002
    assert compose_run().split_rule == "authors" and compose_run().seed == 0


def test_medmcqa_selects_on_carved_validation_unless_asked_for_the_authors_test_documents():
    cfg = compose_run()
    spec = lookup(typed_run().benchmarks, "medmcqa")
    assert spec.validation is None and not spec.validation_is_test  # ours: carved from train
    upstream = lookup(typed_run("benchmarks.medmcqa.validation_is_test=true").benchmarks, "medmcqa")
    assert upstream.validation_is_test and upstream.test == "validation"
    with pytest.raises(ConfigError, match="validation_is_test takes it from the test split"):
        spec_of("x", {**dict(cfg.benchmarks.medmcqa), "validation": "train2", "validation_is_test": True})


# --------------------------------------------------------------------------- item 16: perplexity corpora


def test_corpus_split_is_8_1_1():
    plan = splits.plan_corpus(3366, [0.8, 0.1, 0.1], {}, seed=0)  # App. B.2: the Wikipedia corpus
    assert [len(plan.train), len(plan.validation), len(plan.test)] == [2692, 336, 336]
    everything = np.concatenate([plan.train, plan.validation, plan.test])
    assert len(set(everything.tolist())) == len(everything)
    again = splits.plan_corpus(3366, [0.8, 0.1, 0.1], {}, seed=0)
    assert again.test.tolist() == plan.test.tolist()
    assert compose_run().corpus_fractions == [0.8, 0.1, 0.1]
    for name in ("wiki_2025", "arxiv_2025", "stackexchange_2025"):
        spec = lookup(typed_run().benchmarks, name)
        assert spec.is_corpus and spec.metric_key == "bits_per_byte,none" and not spec.higher_is_better


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    """The tiny preset's perplexity cell: a 30-document corpus read as wiki_2025."""
    from testtask.train_before_test.runner import tiny
    from testtask.train_before_test.runner.main import run

    root = tmp_path_factory.mktemp("tbt_corpus")
    mp = pytest.MonkeyPatch()
    mp.setattr("lm_eval.evaluator.add_env_info", cheap_env_info)
    with offline_single_thread():
        tiny.build(root / "fixture")
        record = run(tiny_config(root, "benchmark=wiki_2025"))
    mp.undo()
    return root, record


def test_perplexity_scoring_yields_bits_per_byte_on_the_8_1_1_split(corpus_run):
    root, record = corpus_run
    counts = record["counts"]
    assert [counts[s]["used"] for s in ("train", "validation", "test")] == [24, 3, 3]  # 30 documents, 8:1:1
    indices = json.loads((root / "work" / "wiki_2025" / "tiny__llama" / "data" / "indices.json").read_text())
    assert sorted(indices["train"] + indices["validation"] + indices["test"]) == list(range(30))
    merged = json.loads((root / "results" / "all_results.json").read_text())
    for regime in ("direct_eval", "train_before_test"):
        file = root / "results" / record[regime]["file"]
        scored = json.loads(file.read_text())
        assert scored["results"]["wiki_2025"]["bits_per_byte,none"] == record[regime]["test"] > 0
        assert scored["n-samples"]["wiki_2025"]["effective"] == 3
        assert merged[regime]["wiki_2025"]["tiny/llama"] == record[regime]["test"]
        # lm-eval computes none for bits per byte: written "N/A", the release's own value, never null
        assert merged[f"{regime}_stderr"]["wiki_2025"]["tiny/llama"] == "N/A"
    assert record["finetune"]["plain/lr_0.001"]["training_texts"] == 24  # whole documents of the train part
    assert record["versions"]["lm_eval"] != "absent"
    assert record["code"] == code_record() and len(record["code"]["commit"]) == 40  # the checkout's


def test_corpus_selection_picks_the_lowest_validation_bits_per_byte(corpus_run):
    _, record = corpus_run
    curve = record["curve"]
    assert {p["variant"] for p in curve} == {"plain"}
    lowest = min(p["score"] for p in curve)
    chosen = record["train_before_test"]
    assert chosen["validation"] == lowest and chosen["validation"] < curve[0]["score"]
    assert record["direct_eval"]["validation"] == curve[0]["score"]


# The metric the authors' notebook reads for each benchmark (notebooks/analyze_results.ipynb:52-131, task2metric).
NOTEBOOK_METRICS = {
    **dict.fromkeys(["cola"], "mcc,none"),
    **dict.fromkeys(
        ["mnli", "qnli", "rte", "mrpc", "qqp", "sst2", "boolq", "wic", "anli_r1", "commonsense_qa"],
        "acc,none",
    ),
    **dict.fromkeys(["social_iqa", "winogrande"], "acc,none"),
    **dict.fromkeys(
        [
            "openbookqa",
            "hellaswag",
            "arc_easy",
            "arc_challenge",
            "headqa_en",
            "mathqa",
            "medmcqa",
            "piqa",
            "sciq",
        ],
        "acc_norm,none",
    ),
    "nq_open": "exact_match,remove_whitespace",
    "gsm8k": "exact_match,flexible-extract",
    **dict.fromkeys(["wiki_2025", "arxiv_2025", "stackexchange_2025"], "bits_per_byte,none"),
}


def test_reported_metrics_are_the_authors_notebooks():
    benchmarks = typed_run().benchmarks
    assert set(benchmarks) == set(NOTEBOOK_METRICS)
    for name, key in NOTEBOOK_METRICS.items():
        spec = lookup(benchmarks, name)
        assert spec.metric_key == key, name
        assert spec.higher_is_better == (not key.startswith("bits_per_byte")), name
