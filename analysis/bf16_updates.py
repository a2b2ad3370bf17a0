"""What pure bf16 does to the updates of the App. B.2 recipe: a few AdamW steps on a real small model in each
precision the recipe offers, with the fraction of the weights each step changes and the loss curve.

python analysis/bf16_updates.py [--model assets/models/smollm2-135m] [--steps 10] [--lrs 2e-6 2e-5]

The paper's < 10B runs (and the authors' code) load the model in bf16 and let AdamW update the bf16 weights
(`precision: bf16`). An update smaller than half a bf16 ulp of its weight (2^-9 of it, relative) rounds back to
the old value, so at the recipe's learning rates most weights never move. `bf16-mixed` keeps fp32 master weights
under bf16 autocast; `fp32` is full precision. Each run here goes through the runner's own pieces
(`finetune.training_arguments` with the precision given explicitly, `_load_model`, `tokenize`, `PadCollator`,
the transformers Trainer): fused AdamW, β (0.9, 0.95), ε 1e-8, weight decay 0.1, clipping 1.0, loss on the answer
with EOS, at a constant learning rate (the recipe's peak; its warm-up would make the first steps smaller still).
The examples are MMLU-auxiliary-style multiple-choice questions built here (`task_data.mmlu_auxiliary` format).
The same batches in the same order for every run. On the CPU, bf16 is asked for explicitly.

Printed per run: the loss at each step, the fraction of weight elements the step changed (in the dtype the
optimizer updates: bf16 for `bf16`, the fp32 master for the others), the fraction changed after all steps, and for
the fp32-master runs the fraction of their bf16 rounding that changed (what bf16 compute sees).
Writes results/bf16-updates/<model>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from testtask.lm.settings import FinetunePrecision
from testtask.paths import repo_root

PRECISIONS = [p.value for p in FinetunePrecision]  # every precision the recipe offers
CAPITALS = [
    ("France", "Paris"), ("Japan", "Tokyo"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Egypt", "Cairo"),
    ("Canada", "Ottawa"), ("Kenya", "Nairobi"), ("Peru", "Lima"), ("Norway", "Oslo"), ("Greece", "Athens"),
    ("Chile", "Santiago"), ("Poland", "Warsaw"),
]  # fmt: skip
ELEMENTS = [
    ("H", "hydrogen"), ("O", "oxygen"), ("C", "carbon"), ("N", "nitrogen"), ("Na", "sodium"), ("Fe", "iron"),
    ("Au", "gold"), ("Ag", "silver"), ("K", "potassium"), ("Cu", "copper"), ("He", "helium"), ("Ca", "calcium"),
]  # fmt: skip


def examples(n: int) -> list[tuple[str, str]]:
    """`n` (prompt, completion) pairs in the mmluaux format: arithmetic, capitals and chemical symbols, four
    options each, the gold option's letter as the completion."""
    from testtask.training_on_the_test_task import task_data

    rows = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            a, b = 3 + (7 * i) % 40, 2 + (11 * i) % 30
            gold = a + b
            choices = [gold, gold + 1, gold - 2, gold + 10]
            question = f"What is {a} + {b}?"
        elif kind == 1:
            country, capital = CAPITALS[(i // 3) % len(CAPITALS)]
            others = [c for _, c in CAPITALS if c != capital]
            choices = [capital, *[others[(i + k * 5) % len(others)] for k in range(3)]]
            question = f"What is the capital of {country}?"
        else:
            symbol, name = ELEMENTS[(i // 3) % len(ELEMENTS)]
            others = [e for _, e in ELEMENTS if e != name]
            choices = [name, *[others[(i + k * 4) % len(others)] for k in range(3)]]
            question = f"Which element has the chemical symbol {symbol}?"
        answer = i % 4  # the gold option moves round the letters
        choices[0], choices[answer] = choices[answer], choices[0]
        rows.append({"question": question, "choices": [str(c) for c in choices], "answer": answer})
    return [task_data.mmlu_auxiliary(row) for row in rows]


def kind(name: str) -> str:
    if "embed" in name or "lm_head" in name:
        return "embeddings"
    if "norm" in name:
        return "norms"
    if "self_attn" in name:
        return "attention"
    if "mlp" in name:
        return "mlp"
    return "other"


class Tracker:
    """Snapshots of the trained weights: at the start, and after each optimizer step, the fraction of elements
    that changed in that step and since the start (native dtype; and of their bf16 rounding)."""

    def __init__(self, model: torch.nn.Module):
        self.params = {n: p for n, p in model.named_parameters() if p.requires_grad}
        self.total = sum(p.numel() for p in self.params.values())
        self.native = {n: p.detach().clone() for n, p in self.params.items()}
        self.start = {n: p.detach().clone() for n, p in self.params.items()}
        self.fp32_master = next(iter(self.params.values())).dtype == torch.float32
        self.start_bf16 = {n: p.detach().to(torch.bfloat16, copy=True) for n, p in self.params.items()}
        self.step_changed: list[float] = []
        self.cumulative: list[float] = []
        self.cumulative_bf16: list[float] = []
        self.by_kind: dict[str, float] = {}

    def after_step(self) -> None:
        step = cum = cum16 = 0
        counts: dict[str, list[int]] = {}
        with torch.no_grad():
            for n, p in self.params.items():
                step += int((p != self.native[n]).sum())
                changed = int((p != self.start[n]).sum())
                cum += changed
                c = counts.setdefault(kind(n), [0, 0])
                c[0] += changed
                c[1] += p.numel()
                cum16 += int((p.to(torch.bfloat16) != self.start_bf16[n]).sum())
                self.native[n].copy_(p)
        self.step_changed.append(step / self.total)
        self.cumulative.append(cum / self.total)
        self.cumulative_bf16.append(cum16 / self.total)
        self.by_kind = {k: v[0] / v[1] for k, v in sorted(counts.items())}


def run_one(
    model_path: str, pairs: list[tuple[str, str]], precision: str, lr: float, opts: argparse.Namespace
) -> dict[str, Any]:
    from omegaconf import OmegaConf
    from transformers import Trainer, TrainerCallback, set_seed

    from testtask.lm import finetune as ft
    from testtask.lm.hf import load_tokenizer
    from testtask.lm.settings import Recipe
    from testtask.paths import conf_dir
    from testtask.schema import load

    recipe = OmegaConf.to_container(
        OmegaConf.load(conf_dir() / "training_on_the_test_task" / "finetune" / "recipe.yaml"), resolve=True
    )
    recipe.update(
        max_steps=opts.steps,
        batch_size=opts.batch,
        per_device_batch_size=opts.batch,
        max_length=opts.max_length,
        pad_to_max_length=False,  # each batch padded to its longest example (the recipe pads to 600)
        lr_scheduler_type="constant",
        warmup_steps=0,
        warmup_ratio=0.0,
        logging_steps=1,
        progress=False,
        gradient_checkpointing=False,
        save_steps=[],
    )
    recipe = load(Recipe, recipe, "recipe")
    set_seed(opts.seed)
    with tempfile.TemporaryDirectory() as tmp:
        args = ft.training_arguments(
            recipe, output_dir=Path(tmp), learning_rate=lr, device="cpu", seed=opts.seed, precision=precision
        )
        tokenizer = load_tokenizer(model_path)
        model = ft._load_model(
            model_path,
            device="cpu",
            parameters=opts.parameters,
            recipe=recipe,
            trust_remote_code=False,
            lora=None,
            adapter=None,
            precision=precision,
        )
        tracker = Tracker(model)

        class Track(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                tracker.after_step()

        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=ft.tokenize(tokenizer, pairs, recipe),
            data_collator=ft.PadCollator(tokenizer.pad_token_id, recipe, ft.padding_side(recipe, tokenizer)),
            callbacks=[Track()],
        )
        start, cpu = time.perf_counter(), time.process_time()
        trainer.train()
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    losses = [float(e["loss"]) for e in trainer.state.log_history if "loss" in e]
    return {
        "precision": precision,
        "learning_rate": lr,
        "weights_dtype": str(next(iter(tracker.params.values())).dtype).removeprefix("torch."),
        "autocast_bf16": bool(args.bf16),
        "optim": args.optim if isinstance(args.optim, str) else args.optim.value,
        "loss": losses,
        "changed_per_step": tracker.step_changed,
        "changed_cumulative": tracker.cumulative,
        "changed_cumulative_bf16_view": tracker.cumulative_bf16,
        "changed_cumulative_by_kind": tracker.by_kind,
        "trained_parameters": tracker.total,
        "seconds": seconds,
        "cpu_seconds": cpu,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(repo_root() / "assets" / "models" / "smollm2-135m"))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--lrs", type=float, nargs="+", default=[2e-6, 2e-5])
    parser.add_argument("--precisions", nargs="+", default=PRECISIONS, choices=PRECISIONS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)  # 1: less lost to waiting on busy cores
    parser.add_argument("--parameters", type=float, default=1.35e8, help="for the size rules (< 10B)")
    parser.add_argument("--out", type=Path, default=None, help="default: results/bf16-updates/<model>.json")
    opts = parser.parse_args(argv)
    os.environ.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(opts.threads)
    model = Path(opts.model)
    out = opts.out or repo_root() / "results" / "bf16-updates" / f"{model.name}.json"
    pairs = examples(opts.steps * opts.batch)
    print(
        f"{model.name}: {opts.steps} AdamW steps of {opts.batch} examples, lrs {opts.lrs}, {opts.threads} threads"
    )
    print(f"example: {pairs[0][0]!r} -> {pairs[0][1]!r}")
    started = time.perf_counter()
    runs = []
    for lr in opts.lrs:
        for precision in opts.precisions:
            run = run_one(str(model), pairs, precision, lr, opts)
            runs.append(run)
            view = f", bf16 view {run['changed_cumulative_bf16_view'][-1]:.1%}" if precision != "bf16" else ""
            print(
                f"lr {lr:.0e} {precision:10s} ({run['weights_dtype']} weights, {run['seconds']:.0f} s, "
                f"{run['cpu_seconds']:.0f} s CPU): "
                f"changed per step {', '.join(f'{c:.1%}' for c in run['changed_per_step'])}; "
                f"after {opts.steps} steps {run['changed_cumulative'][-1]:.1%}{view}"
            )
            print(
                "    by kind after the steps: "
                + ", ".join(f"{k} {v:.1%}" for k, v in run["changed_cumulative_by_kind"].items())
            )
            print(f"    loss {' '.join(f'{x:.3f}' for x in run['loss'])}")
    total = time.perf_counter() - started
    cpu_total = time.process_time()
    record = {
        "model": model.name,
        "command": " ".join(["python analysis/bf16_updates.py", *(sys.argv[1:] if argv is None else argv)]),
        "steps": opts.steps,
        "batch": opts.batch,
        "max_length": opts.max_length,
        "examples": len(pairs),
        "schedule": "constant at the peak learning rate, no warm-up",
        "recipe": "conf/training_on_the_test_task/finetune/recipe.yaml (fused AdamW, betas 0.9/0.95, eps 1e-8, "
        "weight decay 0.1, clipping 1.0, loss on the answer with EOS)",
        "device": "cpu",
        "threads": opts.threads,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "machine": platform.processor() or platform.machine(),
        "seconds": total,
        "cpu_seconds": cpu_total,
        "runs": runs,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"{total:.0f} s in all ({cpu_total:.0f} s CPU); wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
