"""Training-on-the-test-task: the B.2 recipe (recipe.yaml with only the run shrunk) for a few steps in each
precision the recipe offers, passed explicitly so the CPU trains in it too, and lm-eval's HF model scoring our
`arc_challenge_mc` from a local copy of its data. What ran is read from the live run: the Trainer's autocast
and the trained weights' dtype."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from testtask.preflight import data as fixtures
from testtask.preflight import models
from testtask.preflight.registry import Skip, check

FLASH_REASON = (
    "FlashAttention-2 (attn_implementation=auto on sm >= 80 with flash-attn installed) is a CUDA kernel; "
    "the CPU runs the default attention"
)

PRECISIONS = ("bf16", "bf16-mixed", "fp32")
# Expected dtype of the trained weights: pure bf16 trains bf16 weights; mixed keeps fp32 master weights.
WEIGHT_DTYPE = {"bf16": "bfloat16", "bf16-mixed": "float32", "fp32": "float32"}
AUTOCAST = {"bf16": "bf16", "bf16-mixed": "bf16", "fp32": "fp32"}  # the Trainer's autocast per precision


def ran_precision(autocast: str | None, weight_dtype: str) -> str:
    """The precision a run trained in, from the live Trainer's autocast and its trained weights' dtype."""
    for precision in PRECISIONS:
        if AUTOCAST[precision] == autocast and WEIGHT_DTYPE[precision] == weight_dtype:
            return precision
    return f"{autocast} autocast on {weight_dtype} weights"


RUN = {
    "epochs": 1,
    "max_steps": 4,
    "batch_size": 8,
    "per_device_batch_size": 4,  # 2 steps of gradient accumulation
    "max_length": 64,
    "warmup_steps": None,
    "logging_steps": 1,
    "progress": False,
    "save_steps": [],
    "save_every": None,
}
TRAINING_PAIRS = 32
EVAL_FEWSHOT = 2
# the runner's lm-eval model arguments for a non-Gemma model (runner.eval_model_args)
EVAL_MODEL_ARGS = {"trust_remote_code": False, "add_bos_token": False}


def conf_values(*parts: str) -> dict[str, Any]:
    """A YAML file below conf/ as plain values, interpolations resolved."""
    from omegaconf import OmegaConf

    from testtask.paths import conf_dir

    return OmegaConf.to_container(OmegaConf.load(conf_dir().joinpath(*parts)), resolve=True)


def recipe(**overrides: Any) -> dict[str, Any]:
    return {**conf_values("training_on_the_test_task", "finetune", "recipe.yaml"), **RUN, **overrides}


def supported_precisions() -> tuple[str, ...]:
    """The recipe rules' PRECISIONS when they have one, else the candidates finetune's precision rule accepts."""
    from testtask.lm import finetune, recipe_rules

    declared = getattr(recipe_rules, "PRECISIONS", None)
    if declared:
        return tuple(str(p) for p in declared)
    rule = getattr(finetune, "uses_bf16", None)
    if rule is None:
        return PRECISIONS
    found = []
    for precision in PRECISIONS:
        try:
            rule({"precision": precision}, "cuda")
        except ValueError:
            continue
        found.append(precision)
    return tuple(found)


def hf_lm(model: Path, device: str) -> Any:
    """lm-eval's hf model with the runner's model arguments, batch size 1 (its default)."""
    from lm_eval.api.registry import get_model

    return get_model("hf").create_from_arg_obj(
        {"pretrained": str(model), **EVAL_MODEL_ARGS}, {"batch_size": 1, "device": device}
    )


def _model(ctx) -> Path:
    def build():
        pairs = fixtures.arc_pairs(TRAINING_PAIRS)
        texts = [p + c for p, c in pairs] + [fixtures.MC_PROMPT_TEXT]
        return models.build("llama", ctx.folder("tott-llama"), texts, models.SMALL)

    return ctx.cached("tott-llama", build)


def _weights(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    tensors: dict[str, Any] = {}
    for path in sorted(Path(folder).glob("*.safetensors")):
        tensors.update(load_file(str(path)))
    if not tensors:
        raise FileNotFoundError(f"no safetensors weights in {folder}")
    return tensors


def weight_change(before: Path, after: Path) -> tuple[str, float]:
    """The trained projection weights' dtype and the fraction of their elements the run changed (in that
    dtype)."""
    old, new = _weights(before), _weights(after)
    keys = [k for k in new if k.endswith("proj.weight")]
    if not keys:
        raise AssertionError(f"no projection weights among {sorted(new)[:5]}...")
    dtypes = {str(new[k].dtype).removeprefix("torch.") for k in keys}
    if len(dtypes) != 1:
        raise AssertionError(f"trained projection weights in several dtypes: {sorted(dtypes)}")
    changed = total = 0
    for key in keys:
        changed += int((new[key] != old[key].to(new[key].dtype)).sum())
        total += new[key].numel()
    return dtypes.pop(), changed / total


def finetune_in(ctx, precision: str) -> dict[str, Any]:
    from testtask.lm import finetune as ft
    from testtask.lm.settings import Recipe
    from testtask.schema import load

    supported = supported_precisions()
    if precision not in supported:
        raise Skip(f"the recipe offers no precision {precision!r} (it accepts {', '.join(supported)})")
    model = _model(ctx)
    settings = load(Recipe, recipe(precision=precision), "recipe")
    parameters = models.parameter_count(model)
    out = ctx.folder(f"tott-finetune-{precision}")
    start = time.perf_counter()
    result = ft.finetune(
        str(model),
        fixtures.arc_pairs(TRAINING_PAIRS),
        out,
        settings,
        parameters=parameters,
        device=ctx.device,
        precision=precision,  # passed through: the recipe alone trains fp32 on the CPU (resolve_precision)
    )
    seconds = time.perf_counter() - start
    if result.steps != RUN["max_steps"]:
        raise AssertionError(f"{result.steps} optimizer steps, expected {RUN['max_steps']}")
    losses = [loss for _, loss in result.losses]
    if not losses or not all(math.isfinite(x) for x in losses):
        raise AssertionError(f"losses {losses}")
    dtype, changed = weight_change(model, out / "final")
    autocast = (result.trained or {}).get("autocast")  # the live Trainer's, not the recipe's
    ran = ran_precision(autocast, dtype)
    if ran != precision:
        raise AssertionError(
            f"precision={precision} on {ctx.device} ran {ran} ({autocast} autocast, {dtype} weights; finetune "
            f"recorded {result.precision})"
        )
    if result.precision != ran:
        raise AssertionError(f"finetune recorded precision {result.precision}, the run trained in {ran}")
    if changed == 0.0:
        raise AssertionError("training changed no weight")
    positions = result.steps * settings.batch_size * settings.max_length
    return {
        "precision": ran,
        "autocast": autocast,
        "weight_dtype": dtype,
        "optimizer": (result.trained or {}).get("optimizer"),
        "attn_implementation": ft.attention(settings, ctx.device, precision) or "default",
        "learning_rate": ft.peak_learning_rate(settings, parameters),
        "steps": result.steps,
        "effective_batch": (getattr(result, "batch", None) or {}).get("effective"),
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "fraction_of_weights_changed": changed,
        "positions_per_second": positions / seconds,
    }


@check(
    "tott_finetune_bf16",
    "training-on-the-test-task B.2 recipe, 4 steps, pure bf16 weights",
    cuda_only={"FlashAttention-2": FLASH_REASON},
)
def tott_finetune_bf16(ctx) -> dict[str, Any]:
    return finetune_in(ctx, "bf16")


@check(
    "tott_finetune_bf16_mixed",
    "training-on-the-test-task B.2 recipe, 4 steps, fp32 weights with bf16 autocast",
    cuda_only={"FlashAttention-2": FLASH_REASON},
)
def tott_finetune_bf16_mixed(ctx) -> dict[str, Any]:
    return finetune_in(ctx, "bf16-mixed")


@check("tott_finetune_fp32", "training-on-the-test-task B.2 recipe, 4 steps, fp32")
def tott_finetune_fp32(ctx) -> dict[str, Any]:
    return finetune_in(ctx, "fp32")


@check("tott_lm_eval", "lm-eval's HF model scores our arc_challenge_mc (local data) on the device")
def tott_lm_eval(ctx) -> dict[str, Any]:
    from testtask.lm import evaluation
    from testtask.lm.tiny_llama import build_tiny_llama

    benchmark = "arc_challenge_mc"
    data = fixtures.write_arc(ctx.folder("tott-eval-data"))
    model = build_tiny_llama(ctx.folder("tott-eval-model") / "tiny-llama", [fixtures.arc_text(data)])
    lm = hf_lm(model, ctx.device)
    where = str(next(lm.model.parameters()).device)
    if ctx.cuda and not where.startswith("cuda"):
        raise AssertionError(f"lm-eval put the model on {where}, not on the GPU")
    start = time.perf_counter()
    paths = evaluation.evaluate(
        str(model),
        [benchmark],
        ctx.folder("tott-eval-results"),
        num_fewshot=EVAL_FEWSHOT,
        device=ctx.device,
        local_data={benchmark: data},
        dataset_cache_dir=ctx.folder("tott-eval-cache"),
        model_args=EVAL_MODEL_ARGS,
        bootstrap_iters=100,
        lm=lm,
    )
    seconds = time.perf_counter() - start
    out = json.loads(paths[benchmark].read_text())
    scores = out["results"][benchmark]
    documents = out["n-samples"][benchmark]["effective"]
    if documents != 12:
        raise AssertionError(f"lm-eval scored {documents} documents, the local test split has 12")
    return {
        "model_device": where,
        "acc": scores["acc,none"],
        "brier_score": scores.get("brier_score,none"),
        "documents": documents,
        "num_fewshot": out["n-shot"][benchmark],
        "documents_per_second": documents / seconds,
    }
