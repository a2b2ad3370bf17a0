"""This paper's actions beyond figures and tables: `testtask action=<name> paper=<key>` (fn(context, config)).

- `tiny-data`: the offline fixture of the runner's `tiny` preset (runner/tiny.py), written to
  `train_before_test.tiny_data.out`: `testtask action=tiny-data paper=train-before-test`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from testtask.context import Context
from testtask.paths import resolve


def tiny_data(ctx: Context, cfg: Any) -> dict[str, Path]:
    """Write the `tiny` preset's fixture (benchmark, lm-eval task, perplexity corpus, random Llama) below
    `train_before_test.tiny_data.out`; print and return what was written where."""
    from testtask.train_before_test.runner import tiny  # datasets and transformers: imported when run

    paths = tiny.build(resolve(ctx.settings.tiny_data.out))
    for name, path in paths.items():
        print(f"{name}\t{path}")
    return paths


ACTIONS: dict[str, Callable[[Any, Any], Any]] = {"tiny-data": tiny_data}
