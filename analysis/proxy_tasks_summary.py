"""Print the `proxy-tasks` tables of docs/proxy-tasks.md that describe our own runs, from the sidecars beside the
figures.

Reads only the JSON written by the builds (`testtask action=figures paper=proxy-tasks` and
`testtask action=tables paper=proxy-tasks`): figure-loo.json, table-loo.json and table-robustness.json under
figures/proxy-tasks/published/ (testtask.paths.output_dir; each checked to be built from the release,
testtask.sidecars.check). Computes nothing of the method itself; it only lays the numbers out and counts. None of these
tables answers a statement of the paper (it has no leave-one-model-out prediction, baselines or published matrices).
The paper's claims (Table 5 recomputed from its Table 4, §4.2's reading of it, Table 3's Kendall) are judged by the
claims ledger conf/claims/proxy-tasks.yaml: `make report PAPER=proxy-tasks`.

    python analysis/proxy_tasks_summary.py [figures_dir]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from testtask.paths import output_dir
from testtask.sidecars import Expected, check

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = output_dir(ROOT / "figures", "published", None, "proxy-tasks")
TARGET = "gsm8k"
SIDECARS = {
    "figure-loo.json": "action=figures",
    "table-loo.json": "action=tables",
    "table-robustness.json": "action=tables",
}
PREDICTORS = ("proxy", "mean_of_tasks", "best_single")


def load(folder: Path) -> dict[str, dict]:
    missing = [name for name in SIDECARS if not (folder / name).is_file()]
    if missing:
        how = sorted({SIDECARS[name] for name in missing})
        cmds = "; ".join(f"nice -n 19 .venv/bin/testtask {a} paper=proxy-tasks" for a in how)
        sys.exit(f"missing {', '.join(missing)} in {folder}: build them first ({cmds})")
    asked = Expected.of("published", reader="the summary")
    return {name: check(folder / name, json.loads((folder / name).read_text()), asked) for name in SIDECARS}


def markdown(headers: list[str], rows: list[list[object]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def diff_ci(vs: dict) -> str:
    return f"{vs['mae_difference']:+.4f} [{vs['ci_low']:+.4f}, {vs['ci_high']:+.4f}]"


def chosen(freq: dict, top: int = 4) -> str:
    """Tasks most often in the proxy set, with their share of the leave-one-model-out folds."""
    order = sorted(freq, key=lambda t: -freq[t]["share_folds"])
    return ", ".join(f"{t} {freq[t]['share_folds']:.2f}" for t in order[:top])


def counts(values: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(values.items(), key=lambda kv: -kv[1]))


def settings_table(fig: dict) -> str:
    rows = []
    for p in fig["panels"]:
        s, m = p["settings"], p["matrix"]
        dropped = len(m["dropped_models"])
        rows.append(
            [
                m["key"],
                f"{m['n_models']} ({dropped} dropped)" if dropped else m["n_models"],
                len(m["tasks"]) - 1,
                s["top_t"],
                s["n_models"],
                s["samples"],
                s["eps_c"],
                s["eps_r"],
                s["sigmoid_k"],
                s["min_top_frequency"],
                s["max_proxies_effective"],
                s["normalisation"],
                s["robustness"],
                s["fallback_metric"],
            ]
        )
    head = [
        "matrix",
        "models",
        "candidates",
        "t",
        "n",
        "k",
        "eps_C",
        "eps_R",
        "sigmoid k",
        "min top-t frequency",
        "max proxies",
        "normalisation",
        "robustness",
        "fallback metric",
    ]
    return markdown(head, rows)


def gsm8k_tables(fig: dict, loo: dict) -> tuple[str, str, list[str]]:
    """(a) MAE per matrix for the target and the selection behind it, cross-checked against table loo."""
    by_key = {(r["matrix"], r["target"]): r for r in loo["rows"]}
    mae_rows, sel_rows, checks = [], [], []
    for p in fig["panels"]:
        if p["target"] != TARGET:
            continue
        key = p["matrix"]["key"]
        err, vs, ps = p["errors"], p["proxy_vs"], p["proxy_set"]
        mae_rows.append(
            [
                key,
                p["n_models"],
                f"{err['proxy']['mae']:.4f}",
                f"{err['mean_of_tasks']['mae']:.4f}",
                f"{err['best_single']['mae']:.4f}",
                diff_ci(vs["mean_of_tasks"]),
                diff_ci(vs["best_single"]),
                chosen(ps["frequency"]),
            ]
        )
        full = p["all_models_selection"]
        weights = ", ".join(f"{t} {w:.2f}" for t, w in full["selection"]["weights"].items())
        sel_rows.append(
            [
                key,
                f"{ps['mean_size']:.2f}",
                counts(ps["metric_counts"]),
                counts(ps["metric_rule_counts"]),
                ps["fallback_folds"],
                counts(ps["best_single_counts"]),
                f"{full['metric']} ({full['metric_rule']}): {weights}",
            ]
        )
        row = by_key.get((key, TARGET))
        if row is not None:
            same = all(abs(row["errors"][q]["mae"] - err[q]["mae"]) < 1e-12 for q in PREDICTORS)
            checks.append(f"{key}: table-loo {'agrees' if same else 'DIFFERS'}")
    mae = markdown(
        [
            "matrix",
            "models",
            "MAE proxy",
            "MAE mean of tasks",
            "MAE best single",
            "MAE(mean) − MAE(proxy) [95% CI]",
            "MAE(best single) − MAE(proxy) [95% CI]",
            "proxies chosen (share of folds)",
        ],
        mae_rows,
    )
    sel = markdown(
        [
            "matrix",
            "proxies per fold (mean)",
            "metric (folds)",
            "Algorithm 1 rule (folds)",
            "folds with no candidate passing",
            "best single proxy (folds)",
            "selection on all models: metric, weights",
        ],
        sel_rows,
    )
    return mae, sel, checks


def median_ratio(num: list[float], den: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(num, den, strict=True))


def target_row(label: str, part: list[dict]) -> list[object]:
    """Counts and median MAE ratios over the (matrix, target) rows in `part`."""
    n = len(part)
    mae = {q: [r["errors"][q]["mae"] for r in part] for q in PREDICTORS}

    def beats(base: str) -> str:
        return f"{sum(p < b for p, b in zip(mae['proxy'], mae[base], strict=True))} of {n}"

    def ci(base: str) -> str:
        vs = [r["proxy_vs"][base] for r in part]
        return f"{sum(v['ci_low'] > 0 for v in vs)} / {sum(v['ci_high'] < 0 for v in vs)}"

    return [
        label,
        n,
        beats("mean_of_tasks"),
        ci("mean_of_tasks"),
        beats("best_single"),
        ci("best_single"),
        f"{median_ratio(mae['proxy'], mae['mean_of_tasks']):.3f}",
        f"{median_ratio(mae['proxy'], mae['best_single']):.3f}",
    ]


def every_target_table(loo: dict) -> str:
    groups: dict[str, list[dict]] = {}
    for r in loo["rows"]:
        groups.setdefault(r["matrix"], []).append(r)
    rows = [target_row(key, part) for key, part in groups.items()]
    rows.append(target_row("all", list(loo["rows"])))
    return markdown(
        [
            "matrix",
            "targets",
            "proxy MAE < mean of tasks",
            "95% CI: proxy better / worse (vs mean)",
            "proxy MAE < best single",
            "95% CI: proxy better / worse (vs best single)",
            "median MAE ratio proxy / mean",
            "median MAE ratio proxy / best single",
        ],
        rows,
    )


def filters_table(loo: dict, settings: dict) -> str:
    """What each filter removes in the selection fitted on all models, every target of each matrix.

    Each candidate is counted under every test it fails, so one candidate can appear in several columns.
    `settings` are the method settings of a figure-loo panel (thresholds are the same for every matrix)."""
    eps_c, eps_r = float(settings["eps_c"]), float(settings["eps_r"])
    min_freq = float(settings["min_top_frequency"])
    no_rob = settings["robustness"] == "none"
    groups: dict[str, dict[str, int]] = {}
    for r in loo["rows"]:
        full = r["all_models_selection"]
        freq = full["consistency"]["top_frequency"][full["metric"]] if full["consistency"] else None
        g = groups.setdefault(
            r["matrix"],
            {"slots": 0, "rel": 0, "rob": 0, "cons": 0, "cons_only": 0, "cap": 0, "kept": 0, "fallback": 0},
        )
        g["fallback"] += bool(full["selection"]["fallback"])
        for c in full["selection"]["candidates"]:
            g["slots"] += 1
            rel_ok = c["relevance"] >= eps_c
            rob_ok = no_rob or c["robustness"] >= eps_r  # NaN (no standard error) fails
            cons_ok = min_freq <= 0 or freq is None or freq[c["task"]] >= min_freq
            g["rel"] += not rel_ok
            g["rob"] += not rob_ok
            g["cons"] += not cons_ok
            g["cons_only"] += rel_ok and rob_ok and not cons_ok
            g["cap"] += str(c["reason"]).startswith("outside")
            g["kept"] += bool(c["kept"])
    fields = ("slots", "rel", "rob", "cons", "cons_only", "cap", "kept", "fallback")
    rows = [[k, *(g[f] for f in fields)] for k, g in groups.items()]
    rows.append(["all", *(sum(g[f] for g in groups.values()) for f in fields)])
    return markdown(
        [
            "matrix",
            "candidates × targets",
            "relevance < eps_C",
            "R < eps_R",
            "top-t frequency < minimum",
            "dropped by the frequency filter alone",
            "beyond max proxies",
            "kept",
            "targets where none passed (best single used)",
        ],
        rows,
    )


def robustness_table(rob: dict) -> str:
    eps = float(rob["threshold_eps_r"])
    rows = []
    for key, m in rob["matrices"].items():
        if m["rows"] is None:
            rows.append([key, "-", "no standard errors", "-", "-", "-"])
            continue
        ratio = {t: r["ratio"] for t, r in m["rows"].items()}
        f = {t: r["f_ratio"] for t, r in m["rows"].items()}
        lowest = min(ratio, key=lambda t: ratio[t])
        below = [t for t, v in ratio.items() if not v >= eps]
        lowest_f = min(f, key=lambda t: f[t])
        rows.append(
            [
                key,
                len(ratio),
                f"{ratio[lowest]:.2f} ({lowest})",
                f"{statistics.median(ratio.values()):.1f}",
                f"{len(below)}" + (f" ({', '.join(below)})" if below else ""),
                f"{f[lowest_f]:.4f} ({lowest_f})",
                sum(v < 0.99 for v in f.values()),
            ]
        )
    return markdown(
        [
            "matrix",
            "tasks",
            "lowest R (task)",
            "median R",
            f"tasks with R < eps_R = {eps:g}",
            "lowest f(R) (task)",
            "tasks with f(R) < 0.99",
        ],
        rows,
    )


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR
    data = load(folder)
    fig, loo, rob = (data[n] for n in SIDECARS)
    first = fig["panels"][0]["settings"]
    print(
        f"# proxy-tasks summary (from {folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder})"
    )
    print(f"\nsource: {fig['source']}, seed {fig['seed']}; errors in {fig['errors_in']}.")
    print(f"robustness: {fig['robustness']}.")
    print("\n## Settings per matrix (figure-loo.json)\n")
    print(settings_table(fig))
    for p in fig["panels"]:
        lacking = p["matrix"]["dropped_models"]
        if lacking:
            names = "; ".join(f"{m} (no {', '.join(t)})" for m, t in lacking.items())
            print(f"\n{p['matrix']['key']}: models dropped for lacking a task: {names}")
    mae, sel, checks = gsm8k_tables(fig, loo)
    print(f"\n## (a) {TARGET.upper()} predicted leave one model out (figure-loo.json)\n")
    print(mae)
    print(
        "\nDifferences are MAE(baseline) − MAE(proxy) with a percentile bootstrap over models "
        "(positive: proxy better)."
    )
    print(f"\n### Selection behind (a)\n\n{sel}")
    print(f"\ncross-check with table-loo.json ({TARGET} rows): {'; '.join(checks)}")
    print("\n## (b) Every benchmark of each matrix as the target (table-loo.json)\n")
    print(every_target_table(loo))
    print(
        "\n'95% CI: better / worse': targets whose interval of MAE(baseline) − MAE(proxy) "
        "lies above / below 0."
    )
    print("\n### What each filter removes (selection on all models, every target; table-loo.json)\n")
    print(filters_table(loo, first))
    print(
        f"\nA candidate is counted under every test it fails (eps_C = {first['eps_c']:g}, "
        f"eps_R = {first['eps_r']:g}, top-t frequency >= {first['min_top_frequency']:g} of the k subsets "
        "under the chosen metric)."
    )
    print("\n## (c) Robustness stand-in on the published matrices (table-robustness.json)\n")
    print(robustness_table(rob))
    print(f"\n{rob['what']}.")


if __name__ == "__main__":
    main()
