"""Table 1 (mean boost and bias per m, n and LM type) and Table 2 (the task-level tests of §7, eqs. 13–14)."""

from __future__ import annotations

import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.io import atomic_save, atomic_write_text
from testtask.outputs import save_numbers, save_table
from testtask.pretrain_on_test.differences import with_differences
from testtask.pretrain_on_test.inputs import collection_names, lm_label, load_collection, present_collections
from testtask.pretrain_on_test.permutation import section7_counts, task_tests


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
            for effect, digits in (("boost", 1), ("bias", 2)):
                wide[f"{lm_label(lm_type)} {effect}"] = [
                    f"{100 * rows.at[n, f'{effect}_mean']:.{digits}f}%" if n in rows.index else ""
                    for n in wide.n
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
    save_numbers(out / "table-1.json", numbers)
    return numbers


def table_2(ctx: Context) -> dict:
    """Permutation tests of eqs. 13–14 for every task of every present collection → table-2.{csv,md,json}."""
    present, absent = present_collections(ctx)
    if not present:
        raise InputsUnavailable(f"none of the collections {collection_names(ctx)} is under {ctx.data_root}")
    permutations = ctx.settings.permutation_test.permutations
    alpha = ctx.settings.permutation_test.alpha
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
        "units": {
            "mean_difference": "accuracy difference, fraction (0.01 = 1 percentage point; the paper prints %)",
            "counts.*.values, counts.*.max_abs_bias.value": "accuracy difference, fraction (0.01 = 1 percentage point)",
        },
    }
    save_numbers(ctx.out_dir / "table-2.json", numbers)
    return numbers
