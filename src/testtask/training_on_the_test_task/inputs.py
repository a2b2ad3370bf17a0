"""This paper's inputs: the tidy table of lm-eval results of a release or of our runs.

The reading and validation of the lm-eval JSON files is shared machinery (`testtask.lm.release`, `lm.results`),
as proxy-tasks reads the same release; this room gives this paper's figures their table, under its settings.
"""

from __future__ import annotations

import pandas as pd

from testtask.context import Context
from testtask.lm import release


def results(ctx: Context) -> pd.DataFrame:
    """The tidy results table of `ctx`'s source (InputsUnavailable when its evaluations folder is absent); with
    source=published+results, the release's and the run's results together."""
    return release.results(ctx.data_root, ctx.settings.release, ctx.source, ctx.overlay_root)
