"""A user's own LM type made from a published one: the release's accuracies of one LM type copied under a new
name into a results run, with the pretrained arms (extra and test) moved by whole counts (the worked example 5 of
docs/extending.md: a third LM type beside BERT and GPT-2 in pretrain-on-test's Figure 3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

PAPER = "pretrain-on-test"
COLLECTION = "accuracies_from_paper"
SHIFTED = ("extra", "test")  # both pretrained arms: the boost moves by the shift, the bias stays


def shifted(frame: pd.DataFrame, n: int, delta: float) -> pd.DataFrame:
    """`frame` with `extra` and `test` moved by `delta`, rounded to whole counts out of `n` and kept in [0, 1]."""
    out = frame.copy()
    step = round(delta * n)
    for column in SHIFTED:
        counts = np.clip(np.round(out[column].to_numpy() * n) + step, 0, n)
        out[column] = counts / n
    return out


def make_run(
    published: Path,
    results: Path,
    run: str,
    source: str,
    name: str,
    datasets: list[str],
    m: int,
    n: int,
    delta: float,
) -> list[Path]:
    """Write `results/pretrain-on-test/<run>/accuracies_from_paper/m<m>/n<n>/<name>/<dataset>/accuracies.csv` for
    each of `datasets`, from LM type `source`'s file of the release under `published`, shifted (`shifted`).
    Returns the files written."""
    release = published / PAPER / COLLECTION / f"m{m}" / f"n{n}" / source
    out = results / PAPER / run / COLLECTION / f"m{m}" / f"n{n}" / name
    written = []
    for dataset in datasets:
        path = release / dataset / "accuracies.csv"
        if not path.is_file():
            raise SystemExit(f"{path} does not exist: run `make data PAPER={PAPER}`, or name another dataset")
        target = out / dataset / "accuracies.csv"
        target.parent.mkdir(parents=True, exist_ok=True)
        shifted(pd.read_csv(path), n, delta).to_csv(target, index=False)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> None:
    """`python -m tests.pretrain_on_test.own_lm <source LM type> <name> <run> --datasets a,b [--m 50 --n 50
    --delta 0.04]`: a stand-in for a user's own runs of a new LM type, from the release in data/published into
    results/pretrain-on-test/<run>/."""
    import argparse

    from testtask.paths import repo_root

    parser = argparse.ArgumentParser(prog="python -m tests.pretrain_on_test.own_lm", description=main.__doc__)
    parser.add_argument("source", help="a published LM type, e.g. bert")
    parser.add_argument("name", help="your LM type's folder name, e.g. student-lm")
    parser.add_argument("run", help="the results run, results/pretrain-on-test/<run>/")
    parser.add_argument("--datasets", required=True, help="comma-separated datasets of the release")
    parser.add_argument("--m", type=int, default=50)
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--delta", type=float, default=0.04, help="added to the extra and test accuracies")
    args = parser.parse_args(argv)
    root = repo_root()
    written = make_run(
        root / "data" / "published",
        root / "results",
        args.run,
        args.source,
        args.name,
        [d for d in args.datasets.split(",") if d],
        args.m,
        args.n,
        args.delta,
    )
    print(f"{len(written)} accuracies files of {args.name} in {written[0].parents[1]}")


if __name__ == "__main__":
    main()
