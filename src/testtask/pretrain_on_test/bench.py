"""`make bench`: time Figure 3 (16 fits and the eq. 11 posterior predictive) and Figure 7 (2 × 500 slice fits),
and print per-fit seconds and diagnostics.

Cached fits say so (their seconds are the original fit's); `bench.cold=true` times everything from scratch.
`bench.proxy_missing_m=true` times a missing m of the paper's (the offline mirror holds m = 50 alone) on a
relabelled copy of the present one: the same work; those rows are marked `proxy` and are timings only.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.io import atomic_write_json
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
    # The other collections as they are (Figure 7 reads the zero-shot one).
    for other in source.parent.iterdir():
        if other.is_dir() and other.name != collection:
            (scratch / other.name).symlink_to(other.resolve(), target_is_directory=True)
    ctx.data_root = scratch
    return proxies


def machine() -> str:
    """What the timings ran on, for the JSON and the printed summary."""
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _figure_3_rows(numbers: dict[str, Any], proxies: list[int]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "m": p["m"],
                "n": p["n"],
                "effect": p["effect"],
                "proxy": p["m"] in proxies,
                "from_cache": p["from_cache"],
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
    )


def _figure_7_rows(numbers: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "panel": p["label"],
                "m": p["m"],
                "n": p["n"],
                "slices": p["slices"],
                "from_cache": p["from_cache"],
                "seconds": round(p["seconds"], 1),
                "share_outside_band": round(p["share_outside_band"], 3),
                "mc_se": round(p["share_outside_band_se"], 3),
                "worst_r_hat": round(p["diagnostics"]["worst_r_hat"], 3),
                "min_ess_bulk": round(p["diagnostics"]["min_ess_bulk"]),
                "slices_with_divergences": p["diagnostics"]["slices_with_divergences"],
            }
            for p in numbers["panels"]
        ]
    )


def bench(ctx: Context, config: Any) -> dict[str, Any]:
    """The `bench` action of pretrain-on-test: `ctx` is the paper's context, `config` the whole typed config."""
    from testtask.pretrain_on_test.boost_bias_figures import figure_3
    from testtask.pretrain_on_test.meta_analysis_figures import figure_7

    options = ctx.settings.bench
    folder = ctx.out_dir  # bench.json goes here (the preset's folder: paths.output_dir)
    ctx.out_dir = folder / "bench"
    proxies: list[int] = []
    result: dict[str, Any] = {
        "sampler": ctx.sampler.name,
        "machine": machine(),
        "cold": options.cold,
    }
    with tempfile.TemporaryDirectory() as scratch:
        if options.cold:
            ctx.cache_dir = Path(scratch) / "cache"
        if options.proxy_missing_m:
            proxies = _with_proxy(ctx, Path(scratch))
        start = time.perf_counter()
        numbers = figure_3(ctx)
        seconds_3 = time.perf_counter() - start
        table = _figure_3_rows(numbers, proxies)
        print("Figure 3\n" + table.to_markdown(index=False))
        ok = all(p["diagnostics_ok"] for p in numbers["panels"])
        cached = int(table.from_cache.sum())
        print(
            f"\n{len(table)} fits ({int(table.proxy.sum())} on relabelled proxy data; {cached} from the cache, their "
            f"seconds are the original fits'), {seconds_3:.0f} s in all including the posterior predictive "
            f"(sampler={ctx.sampler.name}, backend={ctx.settings.model.backend}, {ctx.sampler.chains} chains x "
            f"{ctx.sampler.draws} draws after {ctx.sampler.tune} tuning steps); every fit within the diagnostics "
            f"limits (conf/config.yaml diagnostics: r_hat, bulk ESS of beta and the sigmas, divergences): {ok}"
        )
        result |= {
            "fits": table.to_dict("records"),
            "total_seconds": seconds_3,
            "criteria_met": ok,
            "proxy_m": proxies,
        }
        if options.figure_7:
            start = time.perf_counter()
            try:
                numbers_7 = figure_7(ctx)
            except InputsUnavailable as err:
                print(f"\nFigure 7 not timed: {err}")
            else:
                seconds_7 = time.perf_counter() - start
                table_7 = _figure_7_rows(numbers_7)
                f7 = ctx.settings.figure_7
                print("\nFigure 7\n" + table_7.to_markdown(index=False))
                chains = (
                    f"{f7.chains} chain{'s' if f7.chains > 1 else ''}"  # figure_7.chains, not the sampler's
                )
                print(
                    f"\n{int(table_7.slices.sum())} slice fits ({f7.draws} draws after {f7.tune} tuning steps, "
                    f"{chains} each; {int(table_7.from_cache.sum())} of {len(table_7)} panels from the cache) in "
                    f"{seconds_7:.0f} s including drawing the figure; notes: {numbers_7['notes']}"
                )
                result["figure_7"] = {
                    "panels": table_7.to_dict("records"),
                    "total_seconds": seconds_7,
                    "notes": numbers_7["notes"],
                }
    print(f"\nmachine: {result['machine']}")
    atomic_write_json(folder / "bench.json", result)
    return result
