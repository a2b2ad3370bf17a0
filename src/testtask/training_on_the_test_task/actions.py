"""This paper's actions beyond figures and tables, `testtask action=<name> paper=<key>` (fn(context, config)):
`plan`, the paper sweep's jobs, resources and GPU-hours (runner/plan.py; `make plan-training-on-the-test-task`),
and `mini-data`, the CPU mini-replication's offline data (runner/mini_data.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from testtask.context import Context
from testtask.paths import resolve


def plan(ctx: Context, cfg: Any) -> str:
    """Print and return the plan of the sweeps of `training_on_the_test_task.plan`."""
    # the runner's config and finetune: imported when run
    from testtask.training_on_the_test_task.runner import plan as planner

    jobs, settings = planner.plan(ctx.settings.plan)
    text = planner.report(jobs, settings)
    print(text)
    return text


def mini_data(ctx: Context, cfg: Any) -> dict[str, Path]:
    """Prepare the mini-replication's data per `training_on_the_test_task.mini_data`, print the counts and return
    benchmark -> evaluation folder (the training file under `train`)."""
    from testtask.training_on_the_test_task.runner import mini_data as md  # datasets: imported when run

    settings = ctx.settings.mini_data
    out = resolve(settings.out)
    local, train = md.prepare(
        resolve(settings.assets),
        out,
        docs_per_task=settings.docs_per_task,
        fewshot_docs=settings.fewshot_docs,
        subjects=list(settings.subjects),
        sources=list(settings.sources),
        max_train_docs=settings.max_train_docs,
        seed=settings.seed,
    )
    print(md.report(out, local))
    return {**local, "train": train}


ACTIONS: dict[str, Callable[[Any, Any], Any]] = {"plan": plan, "mini-data": mini_data}
