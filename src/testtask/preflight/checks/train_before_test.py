"""Train-before-test: one cell of the `tiny` preset (experiment=train_before_test/tiny) on the device: lm-eval
direct evaluation, LoRA fine-tuning over the preset's learning rates × epochs, checkpoint selection on
validation, the chosen checkpoint scored on test, all_results.json merged.
"""

from __future__ import annotations

from typing import Any

from testtask.preflight.checks.pretrain_on_test import compose
from testtask.preflight.registry import check


@check("tbt_lora_cell", "train-before-test: the tiny preset's LoRA cell (lm-eval + LoRA sweep + selection)")
def tbt_lora_cell(ctx) -> dict[str, Any]:
    from testtask.train_before_test.runner import tiny
    from testtask.train_before_test.runner.main import run

    root = ctx.folder("tbt")
    tiny.build(root / "fixture")
    cfg = compose(
        "experiment=train_before_test/tiny",
        f"tiny_root={root / 'fixture'}",
        f"results_dir={root / 'results'}",
        f"work_dir={root / 'work'}",
        "benchmark=tbt_tiny",
        f"device={ctx.device}",
        "threads=null",  # the preset pins one CPU thread; leave the process's setting alone
        config="train_before_test_run",
    )
    record = run(cfg)
    if not (root / "results" / "all_results.json").is_file():
        raise AssertionError("the cell wrote no all_results.json")
    runs = record["finetune"]
    if not runs:
        raise AssertionError("the cell fine-tuned nothing")
    chosen = record["train_before_test"]
    return {
        "direct_eval_test": record["direct_eval"]["test"],
        "train_before_test_test": chosen["test"],
        "chosen_learning_rate": chosen["learning_rate"],
        "chosen_epoch": chosen["epoch"],
        "curve_points": len(record["curve"]),
        "finetune_runs": len(runs),
        "first_loss": next(iter(runs.values()))["first_loss"],
        "last_loss": next(iter(runs.values()))["last_loss"],
        "steps_per_epoch": next(iter(runs.values()))["steps_per_epoch"],
    }
