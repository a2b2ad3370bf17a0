"""Print the numbers the README quotes for the committed CPU mini-replications, from their raw results.

python analysis/mini_runs.py            (after `make figure-mini PAPER=training-on-the-test-task SOURCE=results`
                                         for the second table, which reads figures/.../figure-mini.json)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from testtask.paths import repo_root


def pretrain_on_test(root: Path) -> None:
    print("pretrain-on-test cpu-mini (per dataset; seconds per repetition from run_log.jsonl)")
    seconds = []
    for csv in sorted(root.rglob("accuracies.csv")):
        acc = pd.read_csv(csv)
        reps = [
            json.loads(line)["seconds"] for line in (csv.parent / "run_log.jsonl").read_text().splitlines()
        ]
        seconds += reps
        print(
            f"  {csv.parent.name:26s} base {acc.base.mean():.3f} extra {acc.extra.mean():.3f} test {acc.test.mean():.3f} "
            f"majority {acc.majority.mean():.3f} boost {100 * (acc.extra - acc.base).mean():+.1f} "
            f"bias {100 * (acc.test - acc.extra).mean():+.1f} pts; s/rep median {np.median(reps):.0f} "
            f"(min {min(reps):.0f}, max {max(reps):.0f})"
        )
    print(f"  {len(seconds)} repetitions, {sum(seconds):.0f} s of repetition time")


def training_on_the_test_task(root: Path, figure: Path) -> None:
    files = sorted(root.rglob("*.json"))
    evaluation = sum(float(json.loads(f.read_text()).get("total_evaluation_time_seconds", 0)) for f in files)
    print(
        f"training-on-the-test-task cpu-mini: {len(files)} result files, {evaluation:.0f} s of lm-eval time"
    )
    if not figure.is_file():
        print(f"  ({figure} missing: run make figure-mini PAPER=training-on-the-test-task SOURCE=results)")
        return
    for p in json.loads(figure.read_text())["panels"]:
        before, after = p["before"], p["after"]
        print(
            f"  {p['benchmark']:18s} {p['metric']:18s} {before['value']:.3f} ± {before['stderr']:.3f} -> "
            f"{after['value']:.3f} ± {after['stderr']:.3f} ({p['difference']:+.3f})"
        )


if __name__ == "__main__":
    repo = repo_root()
    pretrain_on_test(repo / "results" / "pretrain-on-test" / "cpu-mini")
    training_on_the_test_task(
        repo / "results" / "training-on-the-test-task" / "cpu-mini" / "evaluations",
        repo / "figures" / "training-on-the-test-task" / "figure-mini.json",
    )
