"""Table 1 (benchmarks by category), Table 3 (bits per byte of the models left out of the perplexity analyses,
beside Pythia-410M) and Table 4 (pretraining compute, with each model's PC1 score)."""

from __future__ import annotations

import pandas as pd

from testtask.context import Context
from testtask.io import atomic_write_json
from testtask.outputs import save_table
from testtask.train_before_test.compute import compute_table
from testtask.train_before_test.layout import present_corpora
from testtask.train_before_test.pca_figures import pc1_by_regime
from testtask.train_before_test.prepare import base_numbers, prepare

# App. B.2, Table 3: the model the paper sets beside the Gemma models ("even compared to smaller models like
# Pythia-410M"); the release's id for it.
TABLE_3_REFERENCE = "EleutherAI/pythia-410m-deduped"


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
    save_table(pd.DataFrame(rows), ctx.out_dir, "table-1")
    numbers = {
        **base_numbers(ctx, prep, "table", 1),
        "benchmarks_present": prep.benchmarks,
        "perplexity_corpora": prep.layout.corpora,
        "rows": rows,
    }
    atomic_write_json(ctx.out_dir / "table-1.json", numbers)
    return numbers


def table_3(ctx: Context) -> dict:
    """Bits per byte on each perplexity corpus of the models excluded from the perplexity analyses (ids starting
    with `perplexity.exclude_model_prefixes`: the eight Gemma models) and of Pythia-410M, in both regimes, as
    `all_results.json` holds them (null where it holds none: the release has no Gemma bits per byte)."""
    prep = prepare(ctx)
    corpora = present_corpora(prep.results, prep.layout)
    prefixes = tuple(ctx.settings.perplexity.exclude_model_prefixes)
    known = sorted(set().union(*(frame.index for frame in prep.results.scores.values())))
    excluded = [m for m in known if prefixes and m.startswith(prefixes)]
    models = excluded + ([TABLE_3_REFERENCE] if TABLE_3_REFERENCE in known else [])
    rows = []
    for model in models:
        for regime in prep.regimes:
            frame = prep.results.scores[regime]
            row: dict = {"model": model, "regime": regime, "excluded_from_perplexity": model in excluded}
            for corpus in corpora:
                value = frame.at[model, corpus] if model in frame.index and corpus in frame else float("nan")
                row[corpus] = None if pd.isna(value) else float(value)
            rows.append(row)
    frame = pd.DataFrame(rows, columns=["model", "regime", "excluded_from_perplexity", *corpora])
    save_table(frame, ctx.out_dir, "table-3", floatfmt=".3f")
    numbers = {
        **base_numbers(ctx, prep, "table", 3),
        "corpus_metric": "bits per byte, lower is better",
        "perplexity_corpora": corpora,
        "excluded_model_prefixes": list(prefixes),
        "reference_model": TABLE_3_REFERENCE if TABLE_3_REFERENCE in known else None,
        "models_without_bits_per_byte": sorted(
            {r["model"] for r in rows if all(r[c] is None for c in corpora)}
        ),
        "rows": rows,
    }
    atomic_write_json(ctx.out_dir / "table-3.json", numbers)
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
