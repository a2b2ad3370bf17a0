"""Fine-tuning on the test task: the authors' recipe on a tiny random causal LM, checkpoints, resume, task data."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from tests.fixtures.tiny_models import build_model
from testtask.lm import finetune as ft
from testtask.lm import recipe_rules
from testtask.lm.finetune import finetune, gradient_accumulation, peak_learning_rate
from testtask.lm.settings import Lora, Recipe
from testtask.paths import conf_dir
from testtask.schema import load
from testtask.training_on_the_test_task import task_data

ARC_ROWS = [
    {
        "question": f"which {animal} lives in the {place} ?",
        "choices": {"text": [place, "moon", "sun", "desk"], "label": ["1", "2", "3", "4"]},
        "answerKey": "1",
    }
    for animal, place in [("fish", "sea"), ("bird", "sky"), ("mole", "ground"), ("cow", "field")] * 8
]


def shipped_recipe() -> Recipe:
    """conf/training_on_the_test_task/finetune/recipe.yaml, typed."""
    return load(Recipe, OmegaConf.load(conf_dir() / "training_on_the_test_task" / "finetune" / "recipe.yaml"))


@pytest.fixture(scope="module")
def recipe():
    return replace(
        shipped_recipe(),
        epochs=1,
        max_steps=12,
        batch_size=4,
        per_device_batch_size=2,
        max_length=64,
        warmup_steps=2,
        save_steps=[4, 8],
        logging_steps=1,
        progress=False,
        gradient_checkpointing=False,
    )


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    pairs = [task_data.arc(row) for row in ARC_ROWS]
    texts = [task_data.text(pair) for pair in pairs]
    return str(build_model("llama", tmp_path_factory.mktemp("llama"), texts)), texts


def test_recipe_matches_the_authors_code():
    """jobs_train.py:93-104,204-205 (App. B.2 but for the warm-up: 1% of the steps, not 50)."""
    cfg = OmegaConf.load(conf_dir() / "training_on_the_test_task" / "finetune" / "recipe.yaml")
    assert (cfg.adam_beta1, cfg.adam_beta2, cfg.adam_epsilon) == (0.9, 0.95, 1e-8)
    assert (cfg.batch_size, cfg.weight_decay, cfg.max_grad_norm, cfg.max_length) == (64, 0.1, 1.0, 600)
    assert (cfg.warmup_steps, cfg.warmup_ratio, cfg.final_lr_fraction, cfg.epochs) == (None, 0.01, 0.1, 3)
    assert (cfg.lr_scheduler_type, cfg.optim, cfg.precision) == (
        "cosine_with_min_lr",
        "adamw_torch_fused",
        "bf16",
    )
    assert cfg.precision_large == "bf16-mixed"  # --bf16 under ZeRO-3: DeepSpeed's fp32 master weights
    assert (cfg.loss_on, cfg.train_eos, cfg.truncation_side) == ("completion", True, "left")
    typed = shipped_recipe()
    assert peak_learning_rate(typed, 7e9) == 2e-5 and peak_learning_rate(typed, 13e9) == 2e-6
    assert peak_learning_rate(typed, 13e9, override=1e-5) == 1e-5
    assert gradient_accumulation(64, 4) == 16 and gradient_accumulation(64, 4, world_size=8) == 2
    with pytest.raises(ValueError, match="not a multiple"):
        gradient_accumulation(64, 5)


def test_finetune_learns_saves_checkpoints_and_resumes(tmp_path, tiny_llama, recipe):
    model, texts = tiny_llama
    out = tmp_path / "run"
    result = finetune(model, texts, out, recipe, parameters=1e6, learning_rate=5e-3, seed=3)
    assert result.steps == 12
    assert result.checkpoints == [4, 8, 12]
    first = result.first_loss
    last = sum(loss for _, loss in result.losses[-3:]) / 3
    assert last < 0.9 * first, f"loss did not go down: {first:.3f} -> {last:.3f}"
    assert (out / "final" / "config.json").is_file() and (out / "final" / "tokenizer_config.json").is_file()
    # Cosine decay to 10% of the peak after 2 warm-up steps.
    history = json.loads((out / "checkpoint-12" / "trainer_state.json").read_text())["log_history"]
    rates = [e["learning_rate"] for e in history if "learning_rate" in e]
    assert max(rates) == pytest.approx(5e-3, rel=0.05)
    # The rate logged at step 12 is the one its update used: 11 scheduler steps, 9 of the 10 after warm-up.
    floor, peak = 5e-4, 5e-3
    assert rates[-1] == pytest.approx(floor + (peak - floor) * 0.5 * (1 + math.cos(0.9 * math.pi)), rel=1e-3)
    # A finished run is not redone; a longer run resumes at the newest checkpoint and only adds the new steps.
    again = finetune(model, texts, out, recipe, parameters=1e6, learning_rate=5e-3, seed=3)
    assert again.steps == 12 and again.losses == result.losses
    longer = finetune(
        model, texts, out, replace(recipe, max_steps=14), parameters=1e6, learning_rate=5e-3, seed=3
    )
    assert longer.steps == 14 and longer.losses[: len(result.losses)] == result.losses
    assert [step for step, _ in longer.losses[len(result.losses) :]] == [13, 14]


def test_a_checkpoint_cut_short_while_saving_is_not_resumed_from(tmp_path, tiny_llama, recipe):
    """A run killed while it saved checkpoint-8 leaves that checkpoint without trainer_state.json (the Trainer's
    last file) and nothing after it; the rerun resumes from checkpoint-4, records so, and ends with the
    uninterrupted run's losses and weights."""
    model, texts = tiny_llama
    out = tmp_path / "run"
    kwargs = {"parameters": 1e6, "learning_rate": 5e-3, "seed": 3}
    whole = finetune(model, texts, out, recipe, **kwargs)  # checkpoints 4, 8 and 12
    weights = _weights(out / "final")
    for later in ("checkpoint-12", "final"):
        shutil.rmtree(out / later)
    (out / "finished.json").unlink()
    (out / "checkpoint-8" / "trainer_state.json").unlink()
    resumed = finetune(model, texts, out, recipe, **kwargs)
    record = json.loads((out / "finished.json").read_text())
    assert record["resumed_from"] == "checkpoint-4"
    # what ran: the seed, the step budget and this process's training time (since the checkpoint)
    assert (
        record["seed"] == 3 and record["max_steps"] == recipe.max_steps == 12 and record["train_seconds"] > 0
    )
    assert resumed.losses == whole.losses
    again = _weights(out / "final")
    assert all(torch.equal(weights[k], again[k]) for k in weights)


def test_lora_finetune_trains_only_adapters(tmp_path, tiny_llama, recipe):
    model, texts = tiny_llama
    lora = Lora(enabled=True, r=4, alpha=8, dropout=0.0, target_modules="all-linear")
    result = finetune(
        model,
        texts,
        tmp_path / "lora",
        replace(recipe, save_steps=[]),
        parameters=1e6,
        learning_rate=1e-2,
        lora=lora,
    )
    assert (tmp_path / "lora" / "final" / "adapter_config.json").is_file()
    assert result.last_loss < result.first_loss


def _composed_recipe(*overrides: str) -> Recipe:
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("training_on_the_test_task_run", overrides=list(overrides))
    return load(Recipe, cfg.recipe, "recipe")


def test_precision_defaults_follow_app_b2_by_model_size():
    """< 10B: pure bf16 (App. B.2 "BF16", the authors' bf16-loaded weights under --bf16); >= 10B: bf16 compute on
    fp32 master weights (what their --bf16 under ZeRO-3 ran); the paper_text preset: fp32 ("full precision")
    there. CPU: fp32 unless asked explicitly; an explicit choice wins everywhere."""
    code, text = _composed_recipe(), _composed_recipe("protocol=paper_text")
    assert recipe_rules.PRECISIONS == ("bf16", "bf16-mixed", "fp32")
    assert [recipe_rules.resolve_precision(code, "cuda", n) for n in (1e9, 9.9e9, 1e10, 70e9)] == [
        "bf16",
        "bf16",
        "bf16-mixed",
        "bf16-mixed",
    ]
    assert [recipe_rules.resolve_precision(text, "cuda", n) for n in (7e9, 13e9)] == ["bf16", "fp32"]
    assert (
        recipe_rules.resolve_precision(code, "cpu", 1e9)
        == recipe_rules.resolve_precision(code, "cpu", 13e9)
        == "fp32"
    )
    assert recipe_rules.resolve_precision(code, "cpu", 1e9, explicit="bf16") == "bf16"
    assert recipe_rules.resolve_precision(code, "cuda", 13e9, explicit="fp32") == "fp32"
    assert ft.weights_dtype("bf16") == torch.bfloat16
    assert ft.weights_dtype("bf16-mixed") == ft.weights_dtype("fp32") == torch.float32
    with pytest.raises(ValueError, match="one of"):
        recipe_rules.resolve_precision(code, "cpu", explicit="half")


def _weights(folder) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return {k: v for f in sorted(folder.glob("*.safetensors")) for k, v in load_file(str(f)).items()}


@pytest.mark.parametrize(
    ("explicit", "dtype", "autocast"),
    [(None, torch.float32, False), ("bf16", torch.bfloat16, True), ("bf16-mixed", torch.float32, True)],
)
def test_precision_is_a_recipe_choice_recorded_in_the_metadata(
    tmp_path, tiny_llama, recipe, monkeypatch, explicit, dtype, autocast
):
    """On the CPU a run is fp32 unless `precision=` asks; bf16 trains (and saves) bf16 weights, bf16-mixed fp32
    master weights under bf16 autocast. finished.json and the result record the choice and the batch arithmetic;
    a rerun returns them; the explicit choice is part of the fingerprint."""
    model, texts = tiny_llama
    seen = {}
    make_args = ft.training_arguments

    def spy(*a, **kw):
        seen["args"] = make_args(*a, **kw)
        return seen["args"]

    monkeypatch.setattr(ft, "training_arguments", spy)
    small = replace(recipe, max_steps=2, save_steps=[])
    out = tmp_path / str(explicit)
    result = finetune(model, texts, out, small, parameters=1e6, learning_rate=1e-3, precision=explicit)
    name = explicit or "fp32"
    assert seen["args"].bf16 is autocast and seen["args"].use_cpu
    weights = _weights(out / "final")
    assert {w.dtype for w in weights.values()} == {dtype}
    assert result.precision == name and result.steps == 2
    assert result.batch == {"per_device": 2, "accumulation": 2, "world_size": 1, "effective": 4}
    record = json.loads((out / "finished.json").read_text())
    assert record["precision"] == name and record["weights_dtype"] == str(dtype).removeprefix("torch.")
    assert record["batch"]["effective"] == small.batch_size and record["precision_meaning"]
    assert all(math.isfinite(loss) for _, loss in result.losses)
    again = finetune(model, texts, out, small, parameters=1e6, learning_rate=1e-3, precision=explicit)
    assert (again.precision, again.batch, again.losses) == (name, result.batch, result.losses)
    if explicit:  # the same recipe without the explicit choice is another run (fp32 on the CPU)
        assert ft._fingerprint(model, texts, small, 1e-3, 0, None, None, explicit) != ft._fingerprint(
            model, texts, small, 1e-3, 0, None
        )


def test_training_arguments_exist_when_the_model_is_built(tmp_path, tiny_llama, recipe, monkeypatch):
    """ZeRO-3's documented order (the authors' train.py:257,267): TrainingArguments(deepspeed=...) first, which
    registers the DeepSpeed config so that `from_pretrained` builds the model inside zero.Init, partitioned; the
    other order loads the whole model on every rank. Spies on the two transformers calls themselves (deepspeed is
    not needed): when from_pretrained runs, TrainingArguments must already exist, and they are the Trainer's."""
    import transformers

    events: list[str] = []
    built: list[object] = []
    post_init = transformers.TrainingArguments.__post_init__
    load = transformers.AutoModelForCausalLM.from_pretrained.__func__

    def spy_post_init(self, *a, **kw):
        post_init(self, *a, **kw)
        events.append("TrainingArguments")
        built.append(self)

    def spy_load(cls, *a, **kw):
        events.append("from_pretrained")
        return load(cls, *a, **kw)

    class Stop(Exception):
        pass

    def spy_trainer(*a, **kw):
        events.append("Trainer")
        assert kw["args"] is built[-1]
        raise Stop

    monkeypatch.setattr(transformers.TrainingArguments, "__post_init__", spy_post_init)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", classmethod(spy_load))
    monkeypatch.setattr(transformers, "Trainer", spy_trainer)
    model, texts = tiny_llama
    with pytest.raises(Stop):
        finetune(model, texts, tmp_path / "order", recipe, parameters=1e6, learning_rate=1e-3)
    assert events == ["TrainingArguments", "from_pretrained", "Trainer"], events


def test_model_kwargs_reach_the_model_and_tokenizer_loads(tmp_path, tiny_llama, recipe, monkeypatch):
    """A pinned revision and the registry's model arguments are passed to from_pretrained (the tokenizer at the
    same revision), and they are part of the run's fingerprint (different weights: no reuse of a finished run)."""
    import transformers

    from testtask.lm import finetune as ft

    calls: dict[str, dict] = {}
    load_model = transformers.AutoModelForCausalLM.from_pretrained.__func__
    load_tok = transformers.AutoTokenizer.from_pretrained.__func__

    def spy_model(cls, *a, **kw):
        calls["model"] = dict(kw)
        kw.pop("revision", None)  # the tiny local model has no Hub history
        kw.pop("low_cpu_mem_usage", None)
        return load_model(cls, *a, **kw)

    def spy_tok(cls, *a, **kw):
        calls["tokenizer"] = dict(kw)
        kw.pop("revision", None)
        return load_tok(cls, *a, **kw)

    class Stop(Exception):
        pass

    def stop(*a, **kw):
        raise Stop

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", classmethod(spy_model))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", classmethod(spy_tok))
    monkeypatch.setattr(transformers, "Trainer", stop)
    model, texts = tiny_llama
    kwargs = {"revision": "0123abc", "low_cpu_mem_usage": True}
    with pytest.raises(Stop):
        finetune(
            model, texts, tmp_path / "pinned", recipe, parameters=1e6, learning_rate=1e-3, model_kwargs=kwargs
        )
    assert calls["model"]["revision"] == "0123abc" and calls["model"]["low_cpu_mem_usage"] is True
    assert calls["tokenizer"]["revision"] == "0123abc"
    plain = ft._fingerprint(model, texts, recipe, 1e-3, 0, None)
    assert ft._fingerprint(model, texts, recipe, 1e-3, 0, None, model_kwargs=kwargs) != plain
    assert ft._fingerprint(model, texts, recipe, 1e-3, 0, None, model_kwargs={}) == plain


def test_task_data_formats():
    prompt, completion = task_data.arc(ARC_ROWS[0])
    assert prompt.splitlines() == [
        "which fish lives in the sea ?",
        "A. sea",
        "B. moon",
        "C. sun",
        "D. desk",
        "Answer:",
    ]
    assert completion == " A"
    nested = {"train": {"question": "2+2?", "choices": ["3", "4", "5", "6"], "answer": 1}}
    assert task_data.text(task_data.mmlu_auxiliary(nested)).endswith("D. 6\nAnswer: B")
    assert task_data.metamath({"query": "What is 1+1?", "response": "1+1=2. The answer is: 2"}) == (
        "Question: What is 1+1?\nAnswer:",
        "1+1=2. The answer is: 2",
    )
    obqa = {
        "question_stem": "Sun is a",
        "choices": {"text": ["star", "planet"], "label": ["A", "B"]},
        "answerKey": "A",
    }
    assert task_data.openbookqa(obqa) == ("Sun is a\nA. star\nB. planet\nAnswer:", " A")
    with pytest.raises(task_data.TaskDataError, match="'response'"):
        task_data.metamath({"query": "x", "response": ""})
    with pytest.raises(task_data.TaskDataError, match="answerKey 'E'"):
        task_data.arc({**ARC_ROWS[0], "answerKey": "E"})
    with pytest.raises(task_data.TaskDataError, match="unknown format"):
        task_data.build_texts([{"format": "nope"}])
