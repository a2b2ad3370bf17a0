"""Table 1 (benchmarks by category) and Table 4 (pretraining compute, with each model's PC1 score)."""

from __future__ import annotations

import pandas as pd

from testtask.context import Context
from testtask.io import atomic_write_json
from testtask.outputs import save_table
from testtask.train_before_test.compute import compute_table
from testtask.train_before_test.pca_figures import pc1_by_regime
from testtask.train_before_test.prepare import base_numbers, prepare


def table_1(ctx: Context) -> dict:
    """The downstream benchmarks by category, with how many models each regime scores on each."""
    prep = prepare(ctx)
    rows = []
    for key, benches in prep.layout.categories.items():
        for b in benches:
            row = {
                "category": key,
                "category_name": prep.layout.category_names[key],
                "benchmark": prep.layout.label(b),
            }
            for regime in prep.regimes:
                frame = prep.results.scores[regime]
                row[f"n_models_{regime}"] = int(frame[b].notna().sum()) if b in frame else 0
            rows.append(row)
    frame = pd.DataFrame(rows)
    save_table(frame, ctx.out_dir, "table-1")
    numbers = {
        **base_numbers(ctx, prep, "table", 1),
        "benchmarks_present": prep.benchmarks,
        "missing_benchmarks": prep.missing,
        "perplexity_corpora": prep.layout.corpora,
        "rows": rows,
    }
    atomic_write_json(ctx.out_dir / "table-1.json", numbers)
    return numbers


def table_4(ctx: Context) -> dict:
    """Pretraining compute of the models with public token counts (the config's transcription of Table 4), with
    the PC1 score of each under both regimes."""
    prep = prepare(ctx)
    table = compute_table(ctx.settings.pretraining_compute)
    components = pc1_by_regime(ctx, prep)
    frame = table.reset_index(names="model")
    for key, (scores, _, _) in components.items():
        frame[f"pc1_{key}"] = frame["model"].map(scores)
    save_table(frame, ctx.out_dir, "table-4", floatfmt=".3f")
    numbers = {
        **base_numbers(ctx, prep, "table", 4),
        "compute_source": ctx.settings.pretraining_compute.source,
        "flops": "6 N D, in units of 1e18 (as printed in the paper)",
        "models_without_scores": sorted(set(table.index) - set(next(iter(components.values()))[0].index)),
        "rows": frame.to_dict(orient="records"),
    }
    atomic_write_json(ctx.out_dir / "table-4.json", numbers)
    return numbers
