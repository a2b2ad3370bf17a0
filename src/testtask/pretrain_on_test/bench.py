"""`make bench`: time Figure 3 from scratch (no posterior cache) and print per-fit seconds and diagnostics.

The paper's Figure 3 has 16 fits (m = 50 and 100, four n, two effects). Where only one m is present (the offline
mirror holds m = 50 alone), `bench.proxy_missing_m=true` times the missing m on a relabelled copy of the present
one: same shapes, same geometry, so the same work. Those rows are marked `proxy` and are timings only.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig

from testtask.context import Context
from testtask.io import atomic_write_json
from testtask.paths import resolve
from testtask.pretrain_on_test.inputs import PAPER_M


def _with_proxy(ctx: Context, scratch: Path) -> list[int]:
    """Copy the few-shot collection into `scratch`, adding relabelled copies for each missing m of the paper."""
    collection = ctx.settings.collections.few_shot
    source = ctx.collection_root(collection)
    present = sorted(int(p.name[1:]) for p in source.glob("m*") if p.name[1:].isdigit())
    target = scratch / collection
    shutil.copytree(source, target)
    proxies = [m for m in PAPER_M if m not in present]
    for m in proxies:
        shutil.copytree(source / f"m{present[0]}", target / f"m{m}")
    ctx.data_root = scratch
    return proxies


def bench(ctx: Context, cfg: DictConfig) -> dict[str, Any]:
    """The `bench` action of pretrain-on-test: `ctx` is the paper's context, `cfg` the whole config."""
    from testtask.pretrain_on_test.boost_bias_figures import figure_3

    ctx.cache_dir = None
    ctx.out_dir = resolve(cfg.figures_dir) / "pretrain-on-test" / "bench"
    proxies: list[int] = []
    with tempfile.TemporaryDirectory() as scratch:
        if cfg.get("bench", {}).get("proxy_missing_m", False):
            proxies = _with_proxy(ctx, Path(scratch))
        start = time.perf_counter()
        numbers = figure_3(ctx)
        total = time.perf_counter() - start
    rows = [
        {
            "m": p["m"],
            "n": p["n"],
            "effect": p["effect"],
            "proxy": p["m"] in proxies,
            "seconds": round(p["fit_seconds"], 1),
            "beta_mean": round(p["beta"]["mean"], 4),
            "r_hat": round(p["beta"]["r_hat"], 3),
            "ess_bulk": round(p["beta"]["ess_bulk"]),
            "divergences": p["divergences"],
            "noncentered_t": p.get("noncentered_t"),
            "avg_diff_pts": round(100 * p["average_difference"]["mean"], 2),
        }
        for p in numbers["panels"]
    ]
    table = pd.DataFrame(rows)
    print(table.to_markdown(index=False))
    ok = bool((table.r_hat <= 1.01).all() and (table.ess_bulk >= 400).all())
    print(
        f"\n{len(rows)} fits ({int(table.proxy.sum())} on relabelled proxy data), {total:.0f} s in all including the "
        f"posterior predictive (sampler={cfg.sampler.name}, backend={ctx.settings.model.backend}, "
        f"{cfg.sampler.chains} chains x {cfg.sampler.draws} draws after {cfg.sampler.tune} tuning steps); "
        f"r_hat <= 1.01 and bulk ESS >= 400 for beta in every fit: {ok}"
    )
    result = {
        "fits": rows,
        "total_seconds": total,
        "criteria_met": ok,
        "sampler": cfg.sampler.name,
        "proxy_m": proxies,
    }
    atomic_write_json(resolve(cfg.figures_dir) / "pretrain-on-test" / "bench.json", result)
    return result
