"""The bench's step kinds: each runs a runner's own code path on a random model of a published architecture.

The settings are the runner's, with the model replaced by the random one and the data sized to give warm-up +
measured optimizer steps. The texts are synthetic and the tokenizer a word-level one over their words:
throughput depends on token counts and shapes, not on which tokens they are.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testtask.gpu_bench.settings import Settings
from testtask.gpu_bench.timing import INFERENCE, TRAINING, step_timer, summary, timed_passes
from testtask.preflight import data as fixtures
from testtask.preflight.registry import Check
from testtask.schema import to_plain

WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec "
    "romeo sierra tango uniform victor whiskey xray yankee zulu red blue green stone water light plant sun moon "
    "rock heat cold river cloud seed leaf sand wind rain salt iron gold wood glass paper metal field road"
).split()


@contextmanager
def _timing(protocol: Any, settings: Settings, ctx: Any) -> Iterator[Any]:
    """A step timer on `protocol`'s Trainer callbacks while the block trains; removed after, even on an error."""
    timer = step_timer(settings.steps.warmup, ctx.cuda)
    protocol.callbacks = [timer]
    try:
        yield timer
    finally:
        protocol.callbacks = []


def texts(count: int, words: int, seed: int) -> list[str]:
    """`count` texts of 0.5-1.5 x `words` words (uneven, so padding pads as on real data), drawn from WORDS."""
    import numpy as np

    rng = np.random.default_rng(seed)
    sizes = rng.integers(max(1, words // 2), words + words // 2 + 1, size=count)
    return [" ".join(rng.choice(WORDS, size=int(size))) for size in sizes]


def vocabulary_text() -> list[str]:
    """Every word the bench's texts and prompts use (the word-level tokenizer's vocabulary)."""
    return [
        " ".join(WORDS),
        fixtures.PROMPT_TEXT,
        fixtures.MC_PROMPT_TEXT,
        " ".join(fixtures.CLASSES),
        "Answer : Question ? A B C D",
    ]


def architecture(settings: Settings, name: str, layers: int | None = None) -> dict[str, Any]:
    config = dict(settings.architectures[name])
    if layers is not None:
        key = "n_layer" if config["model_type"] == "gpt2" else "num_hidden_layers"
        config[key] = layers
    return config


def build_model(ctx, settings: Settings, name: str, *, layers: int | None, bf16: bool) -> tuple[Path, int]:
    """A random model of architecture `name` (its published config; `layers` overrides the depth) with a
    word-level tokenizer, saved in a scratch folder (bf16 weights when `bf16`); (folder, parameters). Built on
    the device (fast random init), once per run and shared by the steps that use it."""

    def build() -> tuple[Path, int]:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM

        from testtask.preflight.models import word_tokenizer

        fields = architecture(settings, name, layers)
        model_type = fields.pop("model_type")
        tokenizer = word_tokenizer(vocabulary_text(), bert=model_type == "bert", bos=model_type != "gpt2")
        ids = {
            "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
        }
        if model_type == "bert":
            ids = {"pad_token_id": tokenizer.pad_token_id}
        if len(tokenizer) > fields["vocab_size"]:
            raise AssertionError(
                f"{len(tokenizer)} tokens exceed {name}'s vocabulary of {fields['vocab_size']}"
            )
        config = AutoConfig.for_model(model_type, **fields, **ids)
        auto = AutoModelForMaskedLM if model_type == "bert" else AutoModelForCausalLM
        torch.manual_seed(settings.seed)
        dtype = torch.bfloat16 if bf16 else torch.float32
        with torch.device(ctx.device):
            model = auto.from_config(config, dtype=dtype)
        parameters = sum(p.numel() for p in model.parameters())
        folder = ctx.folder(f"model-{name}-{layers or 'all'}-{'bf16' if bf16 else 'fp32'}")
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        del model
        if ctx.cuda:
            torch.cuda.empty_cache()
        return folder, parameters

    return ctx.cached(f"model:{name}:{layers}:{bf16}", build)


def peak(settings: Settings, device_name: str | None) -> dict[str, Any] | None:
    """The first `peak_bf16_tflops` entry whose `match` is in the device's name, or None."""
    if not device_name:
        return None
    for entry in settings.peak_bf16_tflops:
        if entry.match.lower() in device_name.lower():
            return {"match": entry.match, "tflops": entry.tflops, "source": entry.source}
    return None


def free_zero_shot(ctx, settings: Settings) -> None:
    """Drop the zero-shot protocol (two NF4 7B loads on the device) and its checkpoint (about 14 GB on disk) before
    the 7B training-on-the-test-task steps, which need the GPU's memory and the scratch disk."""
    import gc

    if ctx._cache.pop("zero-shot", None) is None:
        return
    key = f"model:{settings.pretrain_on_test.zero_shot.architecture}:None:True"
    folder = ctx._cache.pop(key, (None, 0))[0]
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    gc.collect()
    if ctx.cuda:
        import torch

        torch.cuda.empty_cache()


def _result(
    ctx, settings: Settings, timed: Any, *, kind: str, parameters: int, **extra: Any
) -> dict[str, Any]:
    rates = summary(
        timed,
        kind=kind,
        parameters=parameters,
        peak_tflops=(ctx.cached("peak", lambda: None) or {}).get("tflops"),
        expected=settings.steps.measured,
    )
    memory = extra.pop("peak_gpu_memory_mib", None)
    if ctx.cuda and memory is None:  # an inference step: the whole step's peak, its model's load included
        import torch

        memory = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    first = dict(list(rates.items())[:5])  # the progress line shows the first six entries
    return {**first, "peak_gpu_memory_mib": memory, **rates, **extra}


def runner_lm(ctx, lm_name: str, model: Path, *overrides: str) -> tuple[Any, Any]:
    """The pretrain-on-test runner's typed LM settings for `lm=<lm_name>` on `model`, and the dataset spec."""
    from testtask.preflight.checks.pretrain_on_test import _data, compose
    from testtask.runners import settings_of

    folder, spec_config = _data(ctx)
    cfg = compose(
        f"lm={lm_name}",
        f"lm.model={model}",
        f"dataset={fixtures.DATASET}",
        f"device={ctx.device}",
        f"assets_dir={folder}",
        "show_step_progress=false",
        *overrides,
    )
    # the synthetic dataset joins the registry, as an own one would
    cfg.datasets[fixtures.DATASET] = spec_config
    settings = settings_of("pretrain-on-test", cfg)
    return settings.lm_for_task(), settings.spec


def _zero_shot(ctx, settings: Settings) -> tuple[Any, Any, int]:
    """The ZeroShot protocol on the random model (its plain and its k-bit-prepared NF4 loads, as the runner
    holds them), built once for the padding, packing and scoring steps; (protocol, packing LM, parameters)."""

    def build():
        from testtask.pretrain_on_test.runner.zeroshot import ZeroShot

        bench = settings.pretrain_on_test.zero_shot
        model, parameters = build_model(ctx, settings, bench.architecture, layers=None, bf16=True)
        padding, spec = runner_lm(ctx, bench.padding_lm, model)
        packing, _ = runner_lm(ctx, bench.packing_lm, model)
        protocol = ZeroShot(padding, spec, device=ctx.device, show_progress=False)
        return protocol, padding, packing, parameters

    protocol, padding, packing, parameters = ctx.cached("zero-shot", build)
    return protocol, (padding, packing), parameters


def zero_shot_pretraining(ctx, settings: Settings, mode: str) -> dict[str, Any]:
    protocol, (padding, packing), parameters = _zero_shot(ctx, settings)
    lm = packing if mode == "packing" else padding
    protocol.lm = lm
    steps = settings.steps.warmup + settings.steps.measured
    per_step = (
        lm.pretrain.batch_size * lm.pretrain.gradient_accumulation_steps * (lm.pack_size if lm.packing else 1)
    )
    sample = texts(steps * per_step, settings.text_words, settings.seed)
    if (
        len(protocol.pretraining_features(sample))
        != steps * lm.pretrain.batch_size * lm.pretrain.gradient_accumulation_steps
    ):
        raise AssertionError("the texts do not make whole optimizer steps")
    with _timing(protocol, settings, ctx) as timer:
        model, stats = protocol.pretrain(sample, settings.seed)
        protocol.drop_adapters(model)
    return _result(
        ctx,
        settings,
        timer.timed,
        kind=TRAINING,
        parameters=parameters,
        architecture=settings.pretrain_on_test.zero_shot.architecture,
        lm=to_plain(lm),
        texts=len(sample),
        quantization=str(lm.quantization),
        linear4bit_layers=sum(type(m).__name__ == "Linear4bit" for m in protocol.training_model.modules()),
        optimizer=stats.optimizer,
        peak_gpu_memory_mib=timer.peak_gpu_memory_mib,
    )


def zero_shot_scoring(ctx, settings: Settings) -> dict[str, Any]:
    protocol, (padding, _), parameters = _zero_shot(ctx, settings)
    protocol.lm = padding
    bench = settings.pretrain_on_test.zero_shot
    sample = texts(bench.scoring_texts, settings.text_words, settings.seed + 1)
    timed = timed_passes(
        lambda: protocol.class_token_logprobs(protocol.model, sample),
        protocol.model,
        warmup=settings.steps.warmup,
        measured=settings.steps.measured,
        cuda=ctx.cuda,
    )
    return _result(
        ctx,
        settings,
        timed,
        kind=INFERENCE,
        parameters=parameters,
        architecture=bench.architecture,
        texts_per_pass=len(sample),
        sequences_per_pass=len(sample) * len(protocol.spec.classes),
        eval_batch_size=padding.eval_batch_size,
        quantization=str(padding.quantization),
    )


def _few_shot(ctx, settings: Settings, kind: str) -> tuple[Any, Any, int]:
    def build():
        from testtask.pretrain_on_test.runner.fewshot import FewShot

        name = getattr(settings.pretrain_on_test.few_shot, kind)
        model, parameters = build_model(ctx, settings, name, layers=None, bf16=False)
        # one epoch of each stage: the data below is sized to give exactly warm-up + measured steps
        lm, spec = runner_lm(ctx, kind, model, "lm.pretrain.epochs=1", "lm.classify.epochs=1")
        return (
            FewShot(lm, num_classes=spec.num_classes, device=ctx.device, show_progress=False),
            lm,
            parameters,
        )

    return ctx.cached(f"few-shot-{kind}", build)


def few_shot_step(ctx, settings: Settings, kind: str, stage: str) -> dict[str, Any]:
    import pandas as pd

    protocol, lm, parameters = _few_shot(ctx, settings, kind)
    hp = lm.pretrain if stage == "pretrain" else lm.classify
    steps = settings.steps.warmup + settings.steps.measured
    count = steps * hp.batch_size * hp.gradient_accumulation_steps
    sample = texts(count, settings.text_words, settings.seed)
    with _timing(protocol, settings, ctx) as timer:
        if stage == "pretrain":
            stats = protocol.pretrain(sample, str(ctx.folder(f"{kind}-pretrained")), settings.seed)
        else:
            frame = pd.DataFrame({"text": sample, "label": [i % 3 for i in range(count)]})
            _, stats = protocol.classify(lm.model, frame, frame.iloc[: hp.batch_size], settings.seed)
    return _result(
        ctx,
        settings,
        timer.timed,
        kind=TRAINING,
        parameters=parameters,
        architecture=getattr(settings.pretrain_on_test.few_shot, kind),
        stage=to_plain(hp),
        texts=count,
        optimizer=stats.optimizer,
        peak_gpu_memory_mib=timer.peak_gpu_memory_mib,
    )


def recipe(settings: Settings) -> Any:
    """The B.2 recipe (conf/training_on_the_test_task/finetune/recipe.yaml) for warm-up + measured optimizer
    steps, with the bench's precision and recipe changes, typed by the recipe's schema."""
    from testtask.lm.settings import Recipe
    from testtask.preflight.checks.training_on_the_test_task import conf_values
    from testtask.schema import load

    bench = settings.training_on_the_test_task.finetune
    values = conf_values("training_on_the_test_task", "finetune", "recipe.yaml")
    values.update(
        epochs=1,
        max_steps=settings.steps.warmup + settings.steps.measured,
        precision=bench.precision,
        logging_steps=1,
        progress=False,
        save_steps=[],
        save_every=None,
        **dict(bench.recipe),
    )
    return load(Recipe, values, "recipe")


def arc_rows(count: int, words: int, seed: int, offset: int = 0) -> list[dict]:
    """ARC rows with the Hub dataset's columns (question, four lettered options, answerKey)."""
    import numpy as np

    rng = np.random.default_rng(seed + offset)
    labels = list("ABCD")
    return [
        {
            "id": f"bench-{offset + i}",
            "question": " ".join(rng.choice(WORDS, size=words)) + " ?",
            "choices": {"text": [" ".join(rng.choice(WORDS, size=6)) for _ in labels], "label": labels},
            "answerKey": labels[i % 4],
        }
        for i in range(count)
    ]


def finetune_step(ctx, settings: Settings) -> dict[str, Any]:
    from testtask.lm import finetune as ft
    from testtask.training_on_the_test_task import task_data

    free_zero_shot(ctx, settings)
    bench = settings.training_on_the_test_task.finetune
    typed = recipe(settings)
    steps = settings.steps.warmup + settings.steps.measured
    model, parameters = build_model(
        ctx, settings, bench.architecture, layers=bench.layers, bf16=ctx.cuda and bench.precision == "bf16"
    )
    pairs = [task_data.arc(row) for row in arc_rows(steps * typed.batch_size, 30, settings.seed)]
    timer = step_timer(settings.steps.warmup, ctx.cuda)
    out = ctx.folder("tott-finetune")
    try:
        result = ft.finetune(
            str(model), pairs, out, typed, parameters=parameters, device=ctx.device, callbacks=[timer]
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)  # the trained 7B weights are not needed (disk)
    return _result(
        ctx,
        settings,
        timer.timed,
        kind=TRAINING,
        parameters=parameters,
        architecture=bench.architecture,
        layers=architecture(settings, bench.architecture, bench.layers).get("num_hidden_layers"),
        precision=result.precision,
        batch=result.batch,
        attn_implementation=ft.attention(typed, ctx.device, result.precision or "fp32") or "default",
        gradient_checkpointing=ft.gradient_checkpointing(typed, parameters),
        recipe=to_plain(typed),
        peak_gpu_memory_mib=timer.peak_gpu_memory_mib,
    )


def lm_eval_step(ctx, settings: Settings) -> dict[str, Any]:
    import json

    from testtask.lm import evaluation
    from testtask.preflight.checks.training_on_the_test_task import EVAL_MODEL_ARGS, hf_lm

    free_zero_shot(ctx, settings)
    bench = settings.training_on_the_test_task.lm_eval
    model, parameters = build_model(ctx, settings, bench.architecture, layers=bench.layers, bf16=ctx.cuda)
    shots = max(bench.num_fewshot, 1) + 4
    splits = {
        "train": arc_rows(shots, bench.question_words, settings.seed, 10_000),
        "validation": arc_rows(shots, bench.question_words, settings.seed, 20_000),
        "test": arc_rows(bench.documents, bench.question_words, settings.seed),
    }
    data = fixtures.write_arc(ctx.folder("tott-eval-data"), splits)
    lm = hf_lm(model, ctx.device)
    cache = ctx.folder("tott-eval-cache")

    def run() -> None:
        paths = evaluation.evaluate(
            str(model),
            [bench.benchmark],
            ctx.folder("tott-eval-results"),
            num_fewshot=bench.num_fewshot,
            device=ctx.device,
            local_data={bench.benchmark: data},
            dataset_cache_dir=cache,
            model_args=EVAL_MODEL_ARGS,
            bootstrap_iters=0,
            lm=lm,
        )
        scored = json.loads(paths[bench.benchmark].read_text())["n-samples"][bench.benchmark]["effective"]
        if scored != bench.documents:
            raise AssertionError(f"lm-eval scored {scored} documents, the test split has {bench.documents}")

    timed = timed_passes(
        run, lm.model, warmup=settings.steps.warmup, measured=settings.steps.measured, cuda=ctx.cuda
    )
    return _result(
        ctx,
        settings,
        timed,
        kind=INFERENCE,
        parameters=parameters,
        architecture=bench.architecture,
        benchmark=bench.benchmark,
        documents_per_pass=bench.documents,
        num_fewshot=bench.num_fewshot,
        batch_size=1,
        model_dtype=str(next(lm.model.parameters()).dtype).removeprefix("torch."),
        model_device=str(next(lm.model.parameters()).device),
    )


# --- the step kinds, in running order: the two the plan reads first (a run cut short still has them), the 7B
# fine-tune first of all, on an empty GPU --------------------------------------------------------------------------

STEPS: dict[str, tuple[str, Callable[[Any, Settings], dict[str, Any]]]] = {
    "tott_finetune": (
        "training-on-the-test-task B.2 fine-tuning step, full-parameter (Llama-2-7B shape)",
        finetune_step,
    ),
    "tott_lm_eval": (
        "training-on-the-test-task lm-eval (hf model, batch 1) on our multiple-choice ARC task (Llama-2-7B shape)",
        lm_eval_step,
    ),
    "pot_zeroshot_padding": (
        "pretrain-on-test zero-shot QLoRA pretraining, padded prompts (Mistral-7B shape, NF4)",
        lambda ctx, s: zero_shot_pretraining(ctx, s, "padding"),
    ),
    "pot_zeroshot_packing": (
        "pretrain-on-test zero-shot QLoRA pretraining, packed texts (Mistral-7B shape, NF4)",
        lambda ctx, s: zero_shot_pretraining(ctx, s, "packing"),
    ),
    "pot_zeroshot_scoring": (
        "pretrain-on-test zero-shot CAPPr scoring of the class names (Mistral-7B shape, NF4)",
        zero_shot_scoring,
    ),
    "pot_fewshot_bert_pretrain": (
        "pretrain-on-test few-shot masked-LM pretraining (BERT-base)",
        lambda ctx, s: few_shot_step(ctx, s, "bert", "pretrain"),
    ),
    "pot_fewshot_bert_classify": (
        "pretrain-on-test few-shot classifier training (BERT-base)",
        lambda ctx, s: few_shot_step(ctx, s, "bert", "classify"),
    ),
    "pot_fewshot_gpt2_pretrain": (
        "pretrain-on-test few-shot causal-LM pretraining (GPT-2 small)",
        lambda ctx, s: few_shot_step(ctx, s, "gpt2", "pretrain"),
    ),
    "pot_fewshot_gpt2_classify": (
        "pretrain-on-test few-shot classifier training (GPT-2 small)",
        lambda ctx, s: few_shot_step(ctx, s, "gpt2", "classify"),
    ),
}


def checks(settings: Settings, only: list[str] | None = None) -> list[Check]:
    """The step kinds as preflight checks (its runner times them and isolates their failures)."""
    unknown = [name for name in only or [] if name not in STEPS]
    if unknown:
        raise KeyError(f"unknown step(s) {', '.join(unknown)}; known: {', '.join(STEPS)}")
    return [
        Check(name=name, run=(lambda ctx, fn=fn: fn(ctx, settings)), description=description)
        for name, (description, fn) in STEPS.items()
        if not only or name in only
    ]
