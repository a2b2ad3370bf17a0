"""`make bench`: time Figure 3 from scratch (no posterior cache) and print per-fit seconds and diagnostics."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
from omegaconf import DictConfig

from testtask.io import atomic_write_json
from testtask.paths import resolve


def bench(cfg: DictConfig) -> dict[str, Any]:
    from testtask.cli import make_context
    from testtask.pretrain_on_test.posterior_figures import figure_3

    ctx = make_context(cfg, "pretrain-on-test")
    ctx.cache_dir = None
    start = time.perf_counter()
    numbers = figure_3(ctx)
    total = time.perf_counter() - start
    rows = [
        {
            "m": p["m"],
            "n": p["n"],
            "effect": p["effect"],
            "seconds": round(p["fit_seconds"], 1),
            "beta_mean": round(p["beta"]["mean"], 4),
            "r_hat": round(p["beta"]["r_hat"], 3),
            "ess_bulk": round(p["beta"]["ess_bulk"]),
            "divergences": p["divergences"],
            "avg_diff_pts": round(100 * p["average_difference"]["mean"], 2),
        }
        for p in numbers["panels"]
    ]
    table = pd.DataFrame(rows)
    print(table.to_markdown(index=False))
    ok = bool((table.r_hat <= 1.01).all() and (table.ess_bulk >= 400).all())
    print(
        f"\n{len(rows)} fits, {total:.0f} s in all (sampler={cfg.sampler.name}, backend={cfg.pretrain_on_test.model.backend}); "
        f"r_hat <= 1.01 and bulk ESS >= 400 for beta in every fit: {ok}"
    )
    result = {"fits": rows, "total_seconds": total, "criteria_met": ok, "sampler": cfg.sampler.name}
    atomic_write_json(resolve(cfg.figures_dir) / "pretrain-on-test" / "bench.json", result)
    return result
