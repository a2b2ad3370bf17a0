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
from testtask.proxy_tasks.inputs import SettingError, check_target, check_top_t, matrix_and_settings
from testtask.proxy_tasks.normalise import Normaliser


def table_3(ctx: Context) -> dict:
    out = ctx.settings.table_3
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
        x, y = p[candidates], p[target]
        for n, k in out.configs:
            draws = []
            for rep in range(repeats):
                rng = np.random.default_rng([ctx.seed, int(n), int(k), rep])
                draws.append(sampling_consistency(x, y, settings.metrics, int(n), int(k), t, rng))
            s = {m: [d.s[m] for d in draws] for m in settings.metrics}
            r = {m: [d.r[m] for d in draws] for m in settings.metrics}
            chosen = [d.choose(settings.fallback_metric) for d in draws]
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
            shares = {m: dominating.count(m) / repeats for m in settings.metrics}
            dominant = [f"{m} {share:.2f}" for m, share in shares.items() if m in dominating]
            row["dominates (share of draws)"] = ", ".join(dominant) or "none"
            record["dominates_share"] = shares
            rows.append(row)
            details.append(record)
    save_table(pd.DataFrame(rows), ctx.out_dir, "table-3")
    numbers = {
        "paper": ctx.paper,
        "table": 3,
        "source": ctx.source,
        "target": target,
        "what": "Algorithm 1: s (overlap with the all-model top t) / r (overlap between subsets' top t)",
        "repeats": repeats,
        # what each matrix was read from (an own CSV by its SHA-256 in `notes`), as the figures record it
        "matrices": {str(key): matrix.describe() for key, matrix, _ in loaded},
        "rows": details,
    }
    save_numbers(ctx.out_dir / "table-3.json", numbers)
    return numbers
