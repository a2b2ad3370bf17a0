"""Descriptive outputs that need no model fit: Table 1, the task-level test table, Figure 8 (Appendix F)
and the difference distributions of Figures 13–20 (Appendix D.2).

Every difference is computed from integer counts, (treatment_correct − control_correct) / n, and reported in
accuracy units (fractions); only Markdown and axis labels show percent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import PercentFormatter  # noqa: E402
from scipy import stats  # noqa: E402

from testtask.context import Context, InputsUnavailable  # noqa: E402
from testtask.io import atomic_save, atomic_write_json, atomic_write_text  # noqa: E402
from testtask.outputs import save_figure, save_table  # noqa: E402
from testtask.pretrain_on_test import accuracies  # noqa: E402
from testtask.pretrain_on_test.correlation import bert_gpt2_correlations, permuted_correlations  # noqa: E402
from testtask.pretrain_on_test.permutation import paired_differences, section7_counts, task_tests  # noqa: E402

DEFAULT_COLLECTIONS = {
    "few_shot": "accuracies_from_paper",
    "overtrained": "accuracies_gpt2_epochs_2",
    "zero_shot": "accuracies_zero_shot",
    "zero_shot_packing": "accuracies_zero_shot_packing",
}
# Appendix D.2: Figures 13–16 are m = 50, Figures 17–20 m = 100, each for n = 50, 100, 200, 500.
FIGURE_NUMBERS = {
    (m, n): 13 + 4 * i + j for i, m in enumerate((50, 100)) for j, n in enumerate((50, 100, 200, 500))
}
LM_LABELS = {"bert": "BERT", "gpt2": "GPT-2"}
LM_COLORS = {"bert": "tab:blue", "gpt2": "tab:orange"}
EFFECT_TITLES = {
    "boost": r"Pretraining boost: $\mathrm{acc}_\mathrm{extra} - \mathrm{acc}_\mathrm{base}$",
    "bias": r"Evaluation bias: $\mathrm{acc}_\mathrm{test} - \mathrm{acc}_\mathrm{extra}$",
}
QUANTILES = (5, 25, 50, 75, 95)


# ---------------------------------------------------------------- config and data


def _cfg(ctx: Context, *keys: str, default: Any = None) -> Any:
    """`ctx.cfg[keys[0]][keys[1]]...`, or `default` when any level is missing (dict or DictConfig)."""
    node: Any = ctx.cfg
    for key in keys:
        if node is None or not hasattr(node, "get"):
            return default
        node = node.get(key)
    return default if node is None else node


def collection_names(ctx: Context) -> dict[str, str]:
    """Collection key (few_shot, ...) → folder name: `ctx.cfg["collections"]`, else the paper's defaults."""
    configured = _cfg(ctx, "collections", default={})
    return {key: str(configured.get(key, name)) for key, name in DEFAULT_COLLECTIONS.items()}


def load_collection(ctx: Context, key: str, m: int | None = None, n: int | None = None) -> pd.DataFrame:
    """All accuracies of collection `key` (optionally one m, n), or InputsUnavailable when absent."""
    name = collection_names(ctx)[key]
    root = ctx.collection_root(name)
    try:
        data = accuracies.load(root, m=m, n=n)
    except FileNotFoundError as err:
        raise InputsUnavailable(f"no accuracies for m={m}, n={n} under {root}: {err}") from err
    # Loading from the collection's own folder leaves the collection column empty.
    data["collection"] = name
    return data


def with_differences(data: pd.DataFrame) -> pd.DataFrame:
    """`data` with columns boost and bias: per-subsample differences in accuracy units."""
    data = data.copy()
    for effect in ("boost", "bias"):
        data[effect] = paired_differences(data, effect).to_numpy()
    return data


def summary(values: np.ndarray) -> dict[str, Any]:
    """Mean, sd (ddof = 1), quantiles and count of finite `values`."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {"n": 0, "mean": None, "sd": None, "quantiles": {}}
    quantiles = np.percentile(values, QUANTILES)
    return {
        "n": int(values.size),
        "mean": float(values.mean()),
        "sd": float(values.std(ddof=1)) if values.size > 1 else None,
        "quantiles": {f"q{q:02d}": float(v) for q, v in zip(QUANTILES, quantiles, strict=True)},
    }


def _lm_label(lm_type: str) -> str:
    return LM_LABELS.get(lm_type, lm_type)


# ---------------------------------------------------------------- Table 1


def table_1_frame(data: pd.DataFrame) -> pd.DataFrame:
    """Means over all subsamples of all tasks per (m, n, lm_type): m, n, lm_type, boost_mean, bias_mean."""
    data = with_differences(data)
    table = data.groupby(["m", "n", "lm_type"], sort=True)[["boost", "bias"]].mean().reset_index()
    return table.rename(columns={"boost": "boost_mean", "bias": "bias_mean"})


def table_1_markdown(table: pd.DataFrame) -> str:
    """Table 1 as the paper prints it: a block per m, boost to 0.1 and bias to 0.01 percentage points."""
    lines = [
        "Table 1: means of accuracy differences across all subsamples of all tasks. "
        "Boost = acc_extra − acc_base, bias = acc_test − acc_extra.",
        "",
    ]
    for m, block in table.groupby("m", sort=True):
        wide = pd.DataFrame({"n": sorted(block["n"].unique())})
        for lm_type in sorted(block["lm_type"].unique()):
            rows = block[block["lm_type"] == lm_type].set_index("n")
            label = _lm_label(lm_type)
            wide[f"{label} boost"] = [
                f"{100 * rows.at[n, 'boost_mean']:.1f}%" if n in rows.index else "" for n in wide.n
            ]
            wide[f"{label} bias"] = [
                f"{100 * rows.at[n, 'bias_mean']:.2f}%" if n in rows.index else "" for n in wide.n
            ]
        wide["n"] = [f"n = {n}" for n in wide["n"]]
        lines += [
            f"### m = {m}",
            "",
            wide.to_markdown(index=False, colalign=["left"] + ["right"] * (wide.shape[1] - 1)),
            "",
        ]
    return "\n".join(lines)


def table_1(ctx: Context) -> dict:
    """Table 1 (few-shot only) → table-1.csv (fractions, full precision), .md (paper format), .json."""
    data = load_collection(ctx, "few_shot")
    table = table_1_frame(data)
    out = ctx.out_dir
    atomic_save(out / "table-1.csv", lambda p: table.to_csv(p, index=False))
    atomic_write_text(out / "table-1.md", table_1_markdown(table) + "\n")
    numbers = {
        "collection": collection_names(ctx)["few_shot"],
        "units": "accuracy (fraction); boost = acc_extra - acc_base, bias = acc_test - acc_extra",
        "rows": table.to_dict(orient="records"),
    }
    atomic_write_json(out / "table-1.json", numbers)
    return numbers


# ---------------------------------------------------------------- Table 2: task-level tests


def _present_collections(ctx: Context) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Data of every configured collection that exists, and the keys of those that do not."""
    present, absent = {}, []
    for key in collection_names(ctx):
        try:
            present[key] = load_collection(ctx, key)
        except InputsUnavailable:
            absent.append(key)
    return present, absent


def table_2(ctx: Context) -> dict:
    """Permutation tests of eqs. 13–14 for every task of every present collection → table-2.{csv,md,json}."""
    present, absent = _present_collections(ctx)
    if not present:
        raise InputsUnavailable(f"none of the collections {collection_names(ctx)} is under {ctx.data_root}")
    permutations = int(_cfg(ctx, "permutation_test", "permutations", default=10_000))
    alpha = float(_cfg(ctx, "permutation_test", "alpha", default=0.05))
    data = pd.concat(present.values(), ignore_index=True)
    tests = task_tests(data, "bias", permutations=permutations, seed=ctx.seed, alpha=alpha)
    save_table(tests, ctx.out_dir, "table-2")
    names = collection_names(ctx)
    numbers = {
        "test": "one-sided paired sign-flip permutation test of H0: E[acc_test - acc_extra] = 0 vs H1: > 0, "
        "Benjamini-Hochberg within each (collection, m, n, lm_type)",
        "effect": "bias",
        "permutations": permutations,
        "alpha": alpha,
        "seed": ctx.seed,
        "collections": {key: names[key] for key in present},
        "absent_collections": {key: names[key] for key in absent},
        "counts": section7_counts(data, tests),
    }
    atomic_write_json(ctx.out_dir / "table-2.json", numbers)
    return numbers


# ---------------------------------------------------------------- Figure 8: BERT vs GPT-2 correlations


def _density(ax: plt.Axes, values: np.ndarray, grid: np.ndarray, **style: Any) -> None:
    """Gaussian KDE of finite `values` on `grid` (skipped when there is nothing to smooth)."""
    values = values[np.isfinite(values)]
    if values.size > 1 and np.ptp(values) > 0:
        ax.plot(grid, stats.gaussian_kde(values)(grid), **style)


def _correlation_axes(ax: plt.Axes, title: str) -> None:
    ax.axvline(0, color="0.3", lw=0.8, ls="--", zorder=0)
    ax.set_xlim(-1, 1)
    ax.set_xlabel("Spearman correlation, BERT vs GPT-2 (per m, n, task)")
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)


def _observed_panel(ax: plt.Axes, observed: dict[str, pd.DataFrame], grid: np.ndarray) -> None:
    colors = {"bias": "tab:red", "boost": "tab:green"}
    bins = np.linspace(-1, 1, 21)
    for effect, frame in observed.items():
        values = frame["spearman"].to_numpy(dtype=float)
        finite = values[np.isfinite(values)]
        ax.hist(finite, bins=bins, density=True, alpha=0.25, color=colors[effect])
        _density(
            ax, values, grid, color=colors[effect], lw=2, label=f"{effect} (mean {np.mean(finite):+.3f})"
        )
    ax.set_ylabel("density")
    ax.legend(loc="upper left", fontsize=9)
    _correlation_axes(ax, "(a) observed: row k of BERT paired with row k of GPT-2")


def _null_panel(
    ax: plt.Axes, label: str, effect: str, observed: pd.DataFrame, nulls: pd.DataFrame, grid
) -> None:
    for i, (_, frame) in enumerate(nulls.groupby("permutation", sort=True)):
        _density(
            ax,
            frame["spearman"].to_numpy(dtype=float),
            grid,
            color="0.55",
            lw=1,
            alpha=0.8,
            label="permuted pairs" if i == 0 else None,
        )
    _density(ax, observed["spearman"].to_numpy(dtype=float), grid, color="black", lw=2.2, label="observed")
    ax.legend(loc="upper left", fontsize=9)
    n_perm = nulls["permutation"].nunique()
    _correlation_axes(ax, f"({label}) {effect}: {n_perm} nulls, GPT-2 subsamples permuted")


def figure_8(ctx: Context) -> dict:
    """Appendix F, Figure 8: (a) observed correlations of bias and boost; (b) bias nulls; (c) boost nulls."""
    data = load_collection(ctx, "few_shot")
    n_permutations = int(_cfg(ctx, "figure_8", "permutations", default=10))
    effects = {"b": "bias", "c": "boost"}
    observed = {effect: bert_gpt2_correlations(data, effect) for effect in ("bias", "boost")}
    if observed["bias"].empty:
        raise InputsUnavailable("Figure 8 needs both bert and gpt2 results for some (m, n, task)")
    nulls = {
        effect: permuted_correlations(data, effect, n_permutations, seed=ctx.seed + offset)
        for offset, effect in enumerate(("bias", "boost"))
    }
    grid = np.linspace(-1, 1, 401)
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8), sharex=True, sharey=True)
    _observed_panel(axes[0], observed, grid)
    for ax, (label, effect) in zip(axes[1:], effects.items(), strict=True):
        _null_panel(ax, label, effect, observed[effect], nulls[effect], grid)
    fig.suptitle(
        "Distribution of the correlation between BERT and GPT-2 across all m, n and tasks", fontsize=13
    )
    fig.tight_layout()
    numbers = {
        "collection": collection_names(ctx)["few_shot"],
        "method": "Spearman correlation of subsample-level differences, BERT row k paired with GPT-2 row k, "
        "per (m, n, task); nulls permute GPT-2's rows within each (m, n, task)",
        "panels": {
            "a": {effect: _observed_numbers(frame) for effect, frame in observed.items()},
            **{label: _null_numbers(effect, nulls[effect]) for label, effect in effects.items()},
        },
        "panel_choice": "(a) observed bias and boost correlations; (b) bias nulls; (c) boost nulls",
        "permutations": n_permutations,
        "seed": ctx.seed,
    }
    save_figure(fig, ctx.out_dir, "figure-8", numbers)
    return numbers


def _observed_numbers(frame: pd.DataFrame) -> dict:
    values = frame["spearman"].to_numpy(dtype=float)
    return {
        **summary(values),
        "n_groups": len(frame),
        "n_undefined": int(np.isnan(values).sum()),
        "correlations": frame[["m", "n", "dataset", "n_subsamples", "spearman"]].to_dict(orient="records"),
    }


def _null_numbers(effect: str, nulls: pd.DataFrame) -> dict:
    return {
        "effect": effect,
        "permutations": [
            {
                "permutation": int(p),
                **summary(frame["spearman"].to_numpy(dtype=float)),
                "correlations": frame["spearman"].tolist(),
            }
            for p, frame in nulls.groupby("permutation", sort=True)
        ],
    }


# ---------------------------------------------------------------- Figures 13–20: difference distributions


def _boxplot(ax: plt.Axes, values: list[np.ndarray], positions: np.ndarray, color: str) -> None:
    """Horizontal box plots (whiskers at the 5th and 95th percentiles; points are drawn separately)."""
    style = {
        "positions": positions,
        "widths": 0.32,
        "whis": (5, 95),
        "showfliers": False,
        "patch_artist": True,
        "boxprops": {"facecolor": to_rgba(color, 0.35), "edgecolor": color},
        "medianprops": {"color": "black", "lw": 1.2},
        "whiskerprops": {"color": color},
        "capprops": {"color": color},
    }
    try:
        ax.boxplot(values, orientation="horizontal", **style)
    except TypeError:  # matplotlib < 3.10 has no `orientation`
        ax.boxplot(values, vert=False, **style)


def _difference_panel(
    ax: plt.Axes, data: pd.DataFrame, effect: str, datasets: list[str], lm_types: list[str]
):
    rng = np.random.default_rng(0)  # jitter only; fixed so that reruns draw the same picture
    y = np.arange(len(datasets))[::-1]  # first dataset at the top
    # First LM type on top within each task's band.
    offsets = np.linspace(0.2, -0.2, len(lm_types)) if len(lm_types) > 1 else np.zeros(1)
    for lm_type, offset in zip(lm_types, offsets, strict=True):
        per_lm = data[data["lm_type"] == lm_type]
        values = [per_lm.loc[per_lm["dataset"] == d, effect].to_numpy(dtype=float) for d in datasets]
        keep = [i for i, v in enumerate(values) if v.size]
        color = LM_COLORS.get(lm_type, "tab:gray")
        _boxplot(ax, [values[i] for i in keep], y[keep] + offset, color)
        for i in keep:
            jitter = rng.uniform(-0.07, 0.07, values[i].size)
            ax.plot(values[i], y[i] + offset + jitter, "o", ms=1.8, color=color, alpha=0.35, mew=0)
        means = [values[i].mean() for i in keep]
        ax.plot(means, y[keep] + offset, "D", ms=4, mfc="white", mec="black", mew=0.8, zorder=5)
    ax.axvline(0, color="black", lw=1, zorder=0)
    ax.set_yticks(y, datasets)
    ax.set_ylim(-0.7, len(datasets) - 0.3)
    ax.xaxis.set_major_formatter(PercentFormatter(xmax=1, decimals=0))
    ax.set_xlabel("accuracy difference (percentage points)")
    ax.set_title(EFFECT_TITLES[effect], fontsize=12)
    ax.grid(axis="x", alpha=0.3)
    for boundary in y[:-1] - 0.5:
        ax.axhline(boundary, color="0.9", lw=0.6, zorder=0)


def _difference_numbers(data: pd.DataFrame) -> list[dict]:
    rows = []
    for (dataset, lm_type), group in data.groupby(["dataset", "lm_type"], sort=True):
        for effect in ("boost", "bias"):
            stats_ = summary(group[effect].to_numpy())
            rows.append(
                {
                    "dataset": dataset,
                    "lm_type": lm_type,
                    "effect": effect,
                    "n_subsamples": stats_["n"],
                    "mean": stats_["mean"],
                    "sd": stats_["sd"],
                    **stats_["quantiles"],
                }
            )
    return rows


def difference_figure(ctx: Context, m: int, n: int, data: pd.DataFrame | None = None) -> dict:
    """One of Figures 13–20: per task, the distributions of boost and bias for each LM type at (m, n)."""
    number = FIGURE_NUMBERS.get((m, n))
    if number is None:
        raise ValueError(f"no figure of Appendix D.2 for m={m}, n={n}; known: {sorted(FIGURE_NUMBERS)}")
    if data is None:
        data = load_collection(ctx, "few_shot", m=m, n=n)
    data = with_differences(data[(data["m"] == m) & (data["n"] == n)])
    if data.empty:
        raise InputsUnavailable(f"no few-shot accuracies for m={m}, n={n}")
    datasets = sorted(data["dataset"].unique(), key=str.lower)
    lm_types = sorted(data["lm_type"].unique())
    fig, axes = plt.subplots(1, 2, figsize=(16, max(6.0, 0.42 * len(datasets) + 2)), sharey=True)
    for ax, effect in zip(axes, ("boost", "bias"), strict=True):
        _difference_panel(ax, data, effect, datasets, lm_types)
    handles = [
        Patch(facecolor=LM_COLORS.get(lm, "tab:gray"), alpha=0.6, label=_lm_label(lm)) for lm in lm_types
    ]
    handles.append(Line2D([], [], ls="", marker="D", ms=5, mfc="white", mec="black", label="mean"))
    fig.legend(handles=handles, loc="upper right", ncol=len(handles), frameon=False, fontsize=11)
    fig.suptitle(f"Accuracy difference distributions\nm = {m} train, n = {n} test observations", fontsize=14)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    numbers = {
        "figure": number,
        "collection": collection_names(ctx)["few_shot"],
        "m": m,
        "n": n,
        "units": "accuracy (fraction); boost = acc_extra - acc_base, bias = acc_test - acc_extra",
        "box": "box = quartiles, whiskers = 5th and 95th percentiles, points = subsamples, diamond = mean",
        "stats": _difference_numbers(data),
    }
    save_figure(fig, ctx.out_dir, f"figure-{number}", numbers)
    return numbers


def difference_figures(ctx: Context) -> dict:
    """Figures 13–20 for every (m, n) of the few-shot collection that is present; keyed "figure-N"."""
    data = load_collection(ctx, "few_shot")
    written = {}
    for (m, n), number in sorted(FIGURE_NUMBERS.items(), key=lambda item: item[1]):
        if ((data["m"] == m) & (data["n"] == n)).any():
            written[f"figure-{number}"] = difference_figure(ctx, m, n, data)
    return written


def _figure_for(m: int, n: int) -> Callable[[Context], dict]:
    def build(ctx: Context) -> dict:
        return difference_figure(ctx, m, n)

    build.__name__ = f"figure_{FIGURE_NUMBERS[(m, n)]}"
    build.__doc__ = f"Figure {FIGURE_NUMBERS[(m, n)]}: difference distributions at m = {m}, n = {n}."
    return build


figure_13 = _figure_for(50, 50)
figure_14 = _figure_for(50, 100)
figure_15 = _figure_for(50, 200)
figure_16 = _figure_for(50, 500)
figure_17 = _figure_for(100, 50)
figure_18 = _figure_for(100, 100)
figure_19 = _figure_for(100, 200)
figure_20 = _figure_for(100, 500)

BUILDERS: Mapping[str, Callable[[Context], dict]] = {
    "table-1": table_1,
    "table-2": table_2,
    "figure-8": figure_8,
    **{f"figure-{number}": _figure_for(m, n) for (m, n), number in FIGURE_NUMBERS.items()},
}
