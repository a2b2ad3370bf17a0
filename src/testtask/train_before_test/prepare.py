"""What every builder of this paper starts from: the checked results, the layout and the benchmarks present."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from testtask.context import Context
from testtask.train_before_test.inputs import Results, results
from testtask.train_before_test.layout import Layout, layout, present_downstream
from testtask.train_before_test.settings import Regime


@dataclass
class Prepared:
    results: Results
    layout: Layout
    benchmarks: list[str]  # configured downstream benchmarks present, in category order
    missing: list[str]  # configured downstream benchmarks absent

    @property
    def regimes(self) -> dict[str, Regime]:
        """Regimes in config order: the first is the baseline (direct evaluation), the second the alternative."""
        return self.results.regimes

    def downstream(self, regime: str) -> pd.DataFrame:
        return self.results.scores[regime][self.benchmarks]

    def stderr(self, regime: str) -> pd.DataFrame:
        return self.results.stderr[regime][self.benchmarks]


def prepare(ctx: Context) -> Prepared:
    res = results(ctx)
    settings = ctx.settings
    lay = layout(settings.categories, settings.perplexity, settings.labels)
    benchmarks, missing = present_downstream(res, lay)
    return Prepared(res, lay, benchmarks, missing)


def base_numbers(ctx: Context, prep: Prepared, kind: str, number: int) -> dict[str, Any]:
    """Provenance fields every JSON sidecar of this paper starts with."""
    return {
        "paper": ctx.paper,
        kind: number,
        "source": ctx.source,
        "results_files": [str(path) for path in prep.results.files],
        "missing_benchmarks": prep.missing,  # configured, but without scores in some regime of those files
        "regimes": {k: {"field": r.field, "label": r.label} for k, r in prep.regimes.items()},
    }


def missing_notes(prep: Prepared) -> list[str]:
    """What a figure is drawn without: the configured benchmarks the results do not score."""
    return [f"not in the data, so not drawn: {', '.join(prep.missing)}"] if prep.missing else []


def model_counts(prep: Prepared) -> dict[str, Any]:
    """How many models each regime scores on every present benchmark, and which are missing where."""
    out: dict[str, Any] = {}
    for key in prep.regimes:
        frame = prep.downstream(key)
        missing = {b: sorted(frame.index[frame[b].isna()]) for b in frame.columns if frame[b].isna().any()}
        out[key] = {
            "n_models_any": int(frame.notna().any(axis=1).sum()),
            "n_models_all": int(frame.notna().all(axis=1).sum()),
            "missing_models": missing,
        }
    return out
