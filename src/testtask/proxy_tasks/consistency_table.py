"""Table 3: Algorithm 1's baseline / sampling consistency indices (s / r) per correlation metric.

The paper reports one draw per (n, k) with t = 10; one draw of k subsets is noisy, so each cell here is the mean
(and standard deviation) over `repeats` independently seeded draws. A matrix with fewer than 2t candidate tasks
uses its own `top_t` (with t close to the number of candidates every ranking overlaps trivially).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from testtask.context import Context
from testtask.outputs import save_numbers, save_table
from testtask.proxy_tasks.consistency import sampling_consistency
from testtask.proxy_tasks.inputs import SettingError, analysis, check_target, check_top_t, matrix_and_settings
from testtask.proxy_tasks.normalise import Normaliser


def table_3(ctx: Context) -> dict:
    out = analysis(ctx).table_3
    target = out.target
    repeats = out.repeats
    rows, details = [], []
    loaded = [(key, *matrix_and_settings(ctx, key)) for key in out.matrices]
    for _, matrix, settings in loaded:  # every matrix checked before any is analysed
        check_target(matrix, target, "table_3.target")
        for i, (n, k) in enumerate(out.configs):
            if n > len(matrix.scores):
                raise SettingError(
                    f"proxy_tasks.table_3.configs[{i}] = [{n}, {k}]: expected n at most {len(matrix.scores)}, the "
                    f"models of matrix {matrix.key!r}"
                )
        if matrix.scores.shape[1] - 1 < 2 * out.top_t:  # such a matrix uses its own top_t (below)
            check_top_t(ctx, matrix, settings.top_t)
    for key, matrix, settings in loaded:
        candidates = [c for c in matrix.scores.columns if c != target]
        t = out.top_t if len(candidates) >= 2 * out.top_t else settings.top_t
        p = Normaliser.fit(matrix.scores, candidates, settings.normalisation).transform(matrix.scores).values
        for n, k in out.configs:
            s = {m: [] for m in settings.metrics}
            r = {m: [] for m in settings.metrics}
            chosen = []
            for rep in range(repeats):
                rng = np.random.default_rng([ctx.seed, int(n), int(k), rep])
                res = sampling_consistency(p[candidates], p[target], settings.metrics, int(n), int(k), t, rng)
                for m in settings.metrics:
                    s[m].append(res.s[m])
                    r[m].append(res.r[m])
                chosen.append(res.choose(settings.fallback_metric))
            row = {"matrix": key, "n": int(n), "k": int(k), "t": t}
            record = {
                **row,
                "label": matrix.label,
                "n_models": len(p),
                "normalisation": settings.normalisation,
                "metrics": {},
            }
            for m in settings.metrics:
                row[m] = f"{np.mean(s[m]):.3f} / {np.mean(r[m]):.3f}"
                record["metrics"][m] = {
                    "s_mean": float(np.mean(s[m])),
                    "s_sd": float(np.std(s[m], ddof=1)) if repeats > 1 else None,
                    "r_mean": float(np.mean(r[m])),
                    "r_sd": float(np.std(r[m], ddof=1)) if repeats > 1 else None,
                }
            dominating = [m for m, rule in chosen if rule == "dominates"]
            row["dominates (share of draws)"] = (
                ", ".join(
                    f"{m} {dominating.count(m) / repeats:.2f}" for m in settings.metrics if m in dominating
                )
                or "none"
            )
            record["dominates_share"] = {m: dominating.count(m) / repeats for m in settings.metrics}
            rows.append(row)
            details.append(record)
    frame = pd.DataFrame(rows)
    save_table(frame, ctx.out_dir, "table-3")
    numbers = {
        "paper": ctx.paper,
        "table": 3,
        "source": ctx.source,
        "target": target,
        "what": "Algorithm 1: s (overlap with the all-model top t) / r (overlap between subsets' top t)",
        "repeats": repeats,
        "rows": details,
    }
    save_numbers(ctx.out_dir / "table-3.json", numbers)
    return numbers
