"""This paper's inputs: the tidy table of lm-eval results of a release or of our runs.

The reading and validation of the lm-eval JSON files is shared machinery (`testtask.lm.release`, `lm.results`),
as proxy-tasks reads the same release; this room gives this paper's figures their table, under its settings.
"""

from __future__ import annotations

import pandas as pd

from testtask.context import Context
from testtask.lm import release
from testtask.lm.models import ModelRegistry


def results(ctx: Context) -> pd.DataFrame:
    """The tidy results table of `ctx`'s source (InputsUnavailable when its evaluations folder is absent); with
    source=published+results, the release's and the run's results together."""
    return release.results(ctx.data_root, ctx.settings.release, ctx.source, ctx.overlay_root)


def registry(ctx: Context) -> ModelRegistry:
    """The model registry as `ctx`'s source sees it: an own model (the user folder's models.yaml) without a
    result there is left out (one info line), not a missing result of the paper."""
    where = " + ".join(str(root / ctx.settings.release.evaluations_dir) for root in ctx.roots())
    return ctx.settings.release.registry_for(results(ctx), where)
