"""Pretrain-on-test through the runner's own code (its composed config, on a tiny random model, one repetition
of a shrunk cell): the zero-shot protocol under the authors' QLoRA recipe, with padding and with packing, and
the few-shot protocol on tiny BERT and GPT-2.

The zero-shot checks compare what ran, read from the live objects (`TrainStats`), with the authors' recipe
(`QLORA`), not with the config strings."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from testtask.preflight import data as fixtures
from testtask.preflight import models
from testtask.preflight.checks.device import PAGED_REASON
from testtask.preflight.registry import check

# The authors' QLoRA recipe (A = kddubey/pretrain-on-test@80fd183): BitsAndBytesConfig of _dum.py:188-193, the
# optimizer of :307, bf16 training of :309-310; what a zero-shot run records must equal it.
QLORA = {
    "quant_type": ["nf4"],
    "double_quant": [True],
    "compute_dtype": ["bfloat16"],
    "weight_storage": ["uint8"],  # packed 4-bit
    "precision": "bf16",
    "optimizer": "bitsandbytes.optim.adamw.AdamW",  # what paged_adamw_8bit builds
    "paging_requested": True,
}
ZERO_SHOT = {"m": 3, "n": 24}  # padding: 2 steps of 16 per pretraining; packing: 3 packs of 8, batch 1
FEW_SHOT = {"m": 6, "n": 12}
FEW_SHOT_FAST = [
    "lm.pretrain.epochs=1",
    "lm.classify.epochs=1",
    "lm.pretrain.batch_size=4",
    "lm.classify.batch_size=4",
    "lm.classify.eval_batch_size=8",
    "lm.pretrain.max_length=32",
    "lm.classify.max_length=32",
]


def compose(*overrides: str, config: str = "pretrain_on_test_run"):
    """A runner's config (`config`.yaml) composed with `overrides`, not in struct mode."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from testtask.paths import conf_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = hydra_compose(config, overrides=list(overrides))
    OmegaConf.set_struct(cfg, False)
    return cfg


def _data(ctx) -> tuple[Path, dict]:
    def build():
        folder = ctx.folder("pot-data")
        return folder, fixtures.write_classification(folder)

    return ctx.cached("pot-data", build)


def _model(ctx, kind: str) -> Path:
    def build():
        texts = [*fixtures.classification_frame()["text"], fixtures.PROMPT_TEXT]
        size = models.SMALL if kind == "llama" else models.TINY
        return models.build(kind, ctx.folder(f"pot-{kind}"), texts, size)

    return ctx.cached(f"pot-{kind}", build)


def run_repetition(
    ctx, lm_name: str, kind: str, cell: dict[str, int], *overrides: str
) -> tuple[Any, dict, dict]:
    """One repetition of a cell with `lm=<lm_name>` on the tiny `kind` model: (protocol, accuracies, record)."""
    from testtask.pretrain_on_test.runner import subsample
    from testtask.pretrain_on_test.runner.cell import make_protocol
    from testtask.pretrain_on_test.runner.datasets import load_dataset
    from testtask.runners import settings_of

    folder, spec_config = _data(ctx)
    cfg = compose(
        f"lm={lm_name}",
        f"lm.model={_model(ctx, kind)}",
        f"dataset={fixtures.DATASET}",
        f"m={cell['m']}",
        f"n={cell['n']}",
        f"device={ctx.device}",
        f"assets_dir={folder}",
        "show_step_progress=false",
        *overrides,
    )
    cfg.datasets[fixtures.DATASET] = spec_config  # the fixture joins the registry, as an own dataset would
    settings = settings_of("pretrain-on-test", cfg)
    spec, lm = settings.spec, settings.lm_for_task()
    data = load_dataset(spec, folder)
    seed = settings.seed
    sub = subsample.draw(
        data["label"].to_numpy(),
        cell["m"],
        cell["n"],
        seed=seed,
        dataset=spec.key,
        repetition=0,
        stratification=settings.stratification,
    )
    protocol = make_protocol(lm, spec, ctx.device, False)
    acc, record = protocol.run(data, sub, subsample.training_seed(seed, 0))
    for name, value in acc.items():
        if not 0.0 <= value <= 1.0:
            raise AssertionError(f"acc_{name} = {value} is not an accuracy")
    for key, value in record.items():
        if key.endswith("_loss") and not math.isfinite(value):
            raise AssertionError(f"{key} is {value}")
    return protocol, acc, record


def observed_recipe(record: dict[str, Any], stage: str, cuda: bool) -> dict[str, Any]:
    """What one pretraining stage (`pretrain_extra`, `pretrain_test`) ran, from its record
    (`TrainStats.as_dict`)."""

    def part(name: str) -> dict[str, Any]:
        prefix = f"{stage}_{name}_"
        return {k.removeprefix(prefix): v for k, v in record.items() if k.startswith(prefix)}

    from testtask.pretrain_on_test.runner.training import qlora_record  # torch: imported when a check runs

    precision = record.get(f"{stage}_precision")
    return {**qlora_record(part("quantization"), part("optimizer"), precision), "paging_checked": cuda}


def verify_qlora(observed: dict[str, Any]) -> None:
    """Raise unless `observed` is the authors' QLoRA recipe (on CUDA, with paged optimizer states)."""
    wrong = [
        f"{k}={observed.get(k)!r} (the recipe's {v!r})" for k, v in QLORA.items() if observed.get(k) != v
    ]
    if not observed.get("linear4bit_layers"):
        wrong.append("no bitsandbytes Linear4bit layer trained")
    if not observed.get("optimizer_8bit_states"):
        wrong.append(f"none of {observed.get('optimizer_states')} optimizer states is 8-bit")
    from testtask.pretrain_on_test.runner.training import PAGED_MIN_ELEMENTS

    pageable = observed.get("optimizer_pageable_states", 0)
    if observed.get("paging_checked") and observed.get("optimizer_paged_states", 0) < pageable:
        wrong.append(
            f"{observed.get('optimizer_paged_states', 0)} of the {pageable} optimizer states bitsandbytes pages "
            f"(parameters of >= {PAGED_MIN_ELEMENTS:,} elements) are in paged memory"
        )
    if wrong:
        raise AssertionError("the run is not the authors' QLoRA recipe: " + "; ".join(wrong))


def zero_shot(ctx, mode: str) -> dict[str, Any]:
    """The authors' QLoRA recipe (NF4, paged 8-bit AdamW, bf16) on the device: on the CPU as on a GPU."""
    lm_name = "mistral_qlora_packing" if mode == "packing" else "mistral_qlora"
    protocol, acc, record = run_repetition(ctx, lm_name, "llama", ZERO_SHOT)
    observed = {
        stage: observed_recipe(record, stage, ctx.cuda) for stage in ("pretrain_extra", "pretrain_test")
    }
    for stage in observed.values():
        verify_qlora(stage)
    from testtask.pretrain_on_test.runner.training import describe_quantization

    scoring = describe_quantization(protocol.model)  # the plain 4-bit load the accuracies are scored on
    keys = ("quant_type", "double_quant", "compute_dtype", "weight_storage")
    if any(scoring[k] != QLORA[k] for k in keys) or not scoring["layers"]:
        raise AssertionError(f"the scoring model is not the recipe's 4-bit load: {scoring}")
    sequences = len(protocol.pretraining_features(["x"] * ZERO_SHOT["n"]))
    first = observed["pretrain_extra"]
    return {
        "quantization": ",".join(first["quant_type"]),
        "double_quant": first["double_quant"] == [True],
        "compute_dtype": ",".join(first["compute_dtype"]),
        "linear4bit_layers": first["linear4bit_layers"],
        "scoring_linear4bit_layers": scoring["layers"],
        "weight_storage": first["weight_storage"],
        "precision": first["precision"],
        "optim": record["pretrain_extra_optim"],
        "optimizer": first["optimizer"],
        "optimizer_states": first["optimizer_states"],
        "optimizer_8bit_states": first["optimizer_8bit_states"],
        # paged (CUDA unified memory) states: parameters of >= 100,000 elements on CUDA; none on the CPU
        "optimizer_paged_states": first["optimizer_paged_states"],
        "optimizer_pageable_states": first["optimizer_pageable_states"],
        "paging_checked": first["paging_checked"],
        "training_sequences": sequences,
        "tokens_per_second": record["pretrain_test_tokens_per_second"],
        "positions_per_second": record["pretrain_test_positions"] / record["pretrain_test_seconds"],
        "tokens_per_second_extra": record["pretrain_extra_tokens_per_second"],
        "loss_extra": record["pretrain_extra_loss"],
        "loss_test": record["pretrain_test_loss"],
        **{f"acc_{name}": value for name, value in acc.items()},
    }


@check(
    "pot_zeroshot_padding",
    "pretrain-on-test zero-shot: QLoRA (NF4, paged 8-bit AdamW) pretraining + CAPPr scoring, padded prompts",
    cuda_only={"paged optimizer states": PAGED_REASON},
)
def pot_zeroshot_padding(ctx) -> dict[str, Any]:
    return zero_shot(ctx, "padding")


@check(
    "pot_zeroshot_packing",
    "pretrain-on-test zero-shot: QLoRA (NF4, paged 8-bit AdamW) pretraining + CAPPr scoring, packed texts",
    cuda_only={"paged optimizer states": PAGED_REASON},
)
def pot_zeroshot_packing(ctx) -> dict[str, Any]:
    return zero_shot(ctx, "packing")


def few_shot(ctx, kind: str) -> dict[str, Any]:
    _, acc, record = run_repetition(ctx, kind, kind, FEW_SHOT, *FEW_SHOT_FAST)
    return {
        **{f"acc_{name}": value for name, value in acc.items()},
        "pretrain_loss": record["pretrain_test_loss"],
        "classify_loss": record["classify_test_loss"],
        "pretrain_tokens_per_second": record["pretrain_test_tokens_per_second"],
        "classify_tokens_per_second": record["classify_test_tokens_per_second"],
    }


@check("pot_fewshot_bert", "pretrain-on-test few-shot on a tiny BERT: masked-LM pretraining + classifier")
def pot_fewshot_bert(ctx) -> dict[str, Any]:
    return few_shot(ctx, "bert")


@check("pot_fewshot_gpt2", "pretrain-on-test few-shot on a tiny GPT-2: causal-LM pretraining + classifier")
def pot_fewshot_gpt2(ctx) -> dict[str, Any]:
    return few_shot(ctx, "gpt2")
