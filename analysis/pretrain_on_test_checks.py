"""Checks behind categories of the pretrain-on-test ledger (conf/claims/pretrain-on-test.yaml) and its counts
rule, on the release.

    python analysis/pretrain_on_test_checks.py null-spread [--permutations 5000]
    python analysis/pretrain_on_test_checks.py overtrained-p-values
    python analysis/pretrain_on_test_checks.py truncated-counts [--root ../shared/data/pretrain_on_test]

`null-spread` (Appendix F, Figure 8): the observed sd of the 200 BERT–GPT-2 Spearman correlations of subsample-level
biases against the sd of permuted nulls: its percentile among `--permutations` nulls, and how often it falls inside
the range of a set of 10 (the paper's and the authors' number of unseeded permutations, dataset_level.ipynb:572).

`overtrained-p-values` (§8): the authors' own task-level test on the 2-epoch GPT-2 collection, as
kddubey/pretrain-on-test@80fd183:analysis/dataset.ipynb:184-190,542 runs it (scipy's paired permutation test of
acc_test vs acc_extra, 10,000 resamples, alternative "greater"; Benjamini–Hochberg per configuration): per (m, n),
how many of the 25 adjusted p-values exceed 0.5.

`truncated-counts` (`pretrain_on_test.counts`): how many of the counts the §6.1 model reads (accuracy × n of `base`,
`extra` and `test`) the authors' truncation makes one lower than rounding does, per (collection, m, n) and in all.

All read `data/published/pretrain-on-test/` (`make data PAPER=pretrain-on-test`, the complete release for m = 100).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy import stats

from testtask.pretrain_on_test import accuracies
from testtask.pretrain_on_test.correlation import paired_by_subsample

ROOT = Path("data/published/pretrain-on-test")


def _ranked_pairs(root: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per (m, n, task): BERT's and GPT-2's subsample biases, as centred ranks (Spearman = Pearson of ranks)."""
    wide = paired_by_subsample(accuracies.load(root / "accuracies_from_paper"), "bias")
    pairs = []
    for _, group in wide.groupby(["m", "n", "dataset"], sort=True):
        a, b = stats.rankdata(group["bert"]), stats.rankdata(group["gpt2"])
        pairs.append((a - a.mean(), b - b.mean()))
    return pairs


def _sd(pairs: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator | None = None) -> float:
    rho = [
        float(a @ (b if rng is None else rng.permutation(b)) / np.sqrt((a @ a) * (b @ b))) for a, b in pairs
    ]
    return float(np.std(rho, ddof=1))


def null_spread(root: Path, permutations: int, seed: int = 0) -> None:
    pairs = _ranked_pairs(root)
    observed = _sd(pairs)
    rng = np.random.default_rng(seed)
    nulls = np.array([_sd(pairs, rng) for _ in range(permutations)])
    sets = nulls[: permutations // 10 * 10].reshape(-1, 10)
    inside = (sets.min(axis=1) <= observed) & (observed <= sets.max(axis=1))
    print(f"cells {len(pairs)}, observed sd {observed:.4f}")
    print(f"null sd over {permutations} permutations: mean {nulls.mean():.4f}, sd {nulls.std():.4f}")
    print(f"share of nulls with sd >= observed: {(nulls >= observed).mean():.3f}")
    print(f"sets of 10 whose range holds the observed sd: {inside.mean():.3f} of {len(sets)}")
    # the report's Monte Carlo check compares the observed sd with the largest of its 10 nulls
    tops = sets.max(axis=1)
    print(f"largest null sd of a set of 10: mean {tops.mean():.4f}, sd {tops.std(ddof=1):.4f}")


def overtrained_p_values(root: Path) -> None:
    from statsmodels.stats.multitest import fdrcorrection

    data = accuracies.load(root / "accuracies_gpt2_epochs_2")
    for (m, n), part in data.groupby(["m", "n"], sort=True):
        p_values = [
            stats.permutation_test(
                (task["test"], task["extra"]),
                lambda x, y: np.mean(x - y),
                permutation_type="samples",
                alternative="greater",
                n_resamples=10_000,
                random_state=0,
            ).pvalue
            for _, task in part.groupby("dataset", sort=True)
        ]
        adjusted = fdrcorrection(p_values)[1]
        print(
            f"m = {m}, n = {n}: {int((adjusted > 0.5).sum())} of {len(adjusted)} adjusted p > 0.5 "
            f"(lowest {adjusted.min():.3f}; raw lowest {min(p_values):.3f})"
        )


def truncated_counts(root: Path) -> None:
    data = accuracies.load(root)
    columns = sorted({column for pair in accuracies.EFFECTS.values() for column in pair})
    lowered = np.zeros(len(data), dtype=int)
    for column in columns:
        truncated = accuracies.model_counts(data, column, accuracies.Counts.truncate)
        lowered += truncated != accuracies.model_counts(data, column, accuracies.Counts.round)
    per = data.assign(lowered=lowered).groupby(["collection", "m", "n"], sort=True)["lowered"].sum()
    for (collection, m, n), count in per[per > 0].items():
        print(f"{collection} m = {m}, n = {n}: {count}")
    print(
        f"in all: {lowered.sum():,} of {len(data) * len(columns):,} counts one lower ({', '.join(columns)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("check", choices=["null-spread", "overtrained-p-values", "truncated-counts"])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--permutations", type=int, default=5000)
    args = parser.parse_args()
    if args.check == "null-spread":
        null_spread(args.root, args.permutations)
    elif args.check == "truncated-counts":
        truncated_counts(args.root)
    else:
        overtrained_p_values(args.root)


if __name__ == "__main__":
    main()
