"""Print the numbers docs/<paper>.md quote for the committed CPU mini-replications, from their raw results.

python analysis/mini_runs.py                 the committed results (the training-on-the-test-task table is
                                             computed from the JSONs, as `make figure-mini ... SOURCE=results`)
python analysis/mini_runs.py --before REV    the same numbers for the results committed at REV, and the change
                                             (e.g. REV = 5ed6098, the last commit before the runners followed the
                                             authors' protocols)
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from testtask.paths import repo_root
from testtask.pipeline import compose, make_context
from testtask.training_on_the_test_task.mini_figure import before_after

POT = Path("results/pretrain-on-test/cpu-mini")
TOTT = Path("results/training-on-the-test-task/cpu-mini")


def cell_summary(csv: Path) -> dict[str, Any]:
    """One cell's accuracies.csv and run_log.jsonl: mean accuracies, boost and bias (points), seconds per
    repetition, and the pretraining optimizer and precision (what the Trainer ran) of the last repetition."""
    acc = pd.read_csv(csv)
    log = csv.parent / "run_log.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []
    reps = [r["seconds"] for r in records]
    return {
        "repetitions": len(acc),
        "base": acc.base.mean(),
        "extra": acc.extra.mean(),
        "test": acc.test.mean(),
        "majority": acc.majority.mean(),
        "boost": 100 * (acc.extra - acc.base).mean(),
        "bias": 100 * (acc.test - acc.extra).mean(),
        "seconds": float(np.median(reps)) if reps else float("nan"),
        "seconds_min": min(reps, default=float("nan")),
        "seconds_max": max(reps, default=float("nan")),
        "seconds_total": float(sum(reps)),
        "optim": records[-1].get("pretrain_test_optim", "") if records else "",
        "precision": records[-1].get("pretrain_test_precision", "") if records else "",
    }


def pretrain_on_test(root: Path) -> dict[str, dict[str, Any]]:
    """Per dataset of the few-shot collection: cell_summary."""
    # the few-shot collection only: cpu-mini also holds the zero-shot and §9.2 contamination cells
    return {
        csv.parent.name: cell_summary(csv)
        for csv in sorted((root / "accuracies_from_paper").rglob("accuracies.csv"))
    }


def zero_shot(root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (lm_type, dataset) of the §9 zero-shot CPU mini (accuracies_zero_shot): cell_summary."""
    return {
        (csv.parent.parent.name, csv.parent.name): cell_summary(csv)
        for csv in sorted((root / "accuracies_zero_shot").rglob("accuracies.csv"))
    }


def packing_speed(root: Path) -> dict[str, dict[str, Any]]:
    """`make packing-speed`'s JSONs (results/pretrain-on-test/speed), one per lm_type and device."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(root.glob("packing-*.json"))}


def _print_zero_shot(rows: dict, speeds: dict) -> None:
    print(
        "pretrain-on-test zero-shot cpu-mini (make mini-zero-shot-pretrain-on-test; means over repetitions)"
    )
    print(
        "| lm_type | dataset | reps | acc_base | acc_extra | acc_test | majority | boost | bias | s / rep | optim "
        "| precision |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for (lm_type, name), r in rows.items():
        print(
            f"| {lm_type} | {name} | {r['repetitions']} | {r['base']:.3f} | {r['extra']:.3f} | {r['test']:.3f} | "
            f"{r['majority']:.3f} | {r['boost']:+.1f} | {r['bias']:+.1f} | {r['seconds']:.0f} | {r['optim']} | "
            f"{r['precision']} |"
        )
    print("packing speed (make packing-speed; one epoch of pretraining on the prompts of the same texts)")
    print("| file | mode | sequences | tokens | seconds | tokens/s | texts/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for stem, data in speeds.items():
        for mode, run in data["runs"].items():
            trial = run["trials"][0]
            print(
                f"| {stem} | {mode} | {run['sequences']} | {trial['tokens']:,} | {trial['seconds']:.1f} | "
                f"{run['tokens_per_second']:.1f} | {run['texts_per_second']:.2f} |"
            )


def training_on_the_test_task(results: Path, scratch: Path) -> dict[str, Any]:
    """The figure-mini panels (before/after per benchmark) and lm-eval's total seconds, from `results`."""
    evaluations = results / TOTT / "evaluations"
    files = sorted(evaluations.rglob("*.json"))
    by_stage: dict[str, float] = {}
    for f in files:
        stage = (
            "intermediate"
            if "intermediate" in f.relative_to(evaluations).parts
            else f.parent.relative_to(evaluations).as_posix()
        )
        by_stage[stage] = by_stage.get(stage, 0.0) + float(
            json.loads(f.read_text()).get("total_evaluation_time_seconds", 0)
        )
    seconds = sum(by_stage.values())
    cfg = compose(
        [
            "paper=training-on-the-test-task",
            "source=results",
            f"results_dir={results / 'results'}",
            f"figures_dir={scratch}",
        ]
    )
    numbers = before_after(make_context(cfg, "training-on-the-test-task"))
    return {
        "files": len(files),
        "seconds": seconds,
        "seconds_by_stage": by_stage,
        "panels": numbers["panels"],
    }


def _checkout_results(rev: str, dest: Path) -> Path:
    """The committed results folders at `rev`, extracted under `dest` (the working tree is not touched)."""
    archive = subprocess.run(
        ["git", "archive", rev, str(POT), str(TOTT)], cwd=repo_root(), capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def _print_pot(now: dict, before: dict | None) -> None:
    print("pretrain-on-test cpu-mini (per dataset; seconds per repetition from run_log.jsonl)")
    for name, r in now.items():
        line = (
            f"  {name:26s} n_rep {r['repetitions']} base {r['base']:.3f} extra {r['extra']:.3f} "
            f"test {r['test']:.3f} majority {r['majority']:.3f} boost {r['boost']:+.1f} bias {r['bias']:+.1f} pts; "
            f"s/rep median {r['seconds']:.0f} (min {r['seconds_min']:.0f}, max {r['seconds_max']:.0f})"
        )
        print(line)
        if before and name in before:
            b = before[name]
            print(
                f"  {'':26s} before: base {b['base']:.3f} extra {b['extra']:.3f} test {b['test']:.3f} "
                f"boost {b['boost']:+.1f} bias {b['bias']:+.1f} pts -> change: base {r['base'] - b['base']:+.3f}, "
                f"boost {r['boost'] - b['boost']:+.1f}, bias {r['bias'] - b['bias']:+.1f} pts"
            )
    total = sum(r["seconds_total"] for r in now.values())
    print(f"  {sum(r['repetitions'] for r in now.values())} repetitions, {total:.0f} s of repetition time")


def _key(panel: dict) -> tuple[str, str]:
    return panel["benchmark"], panel["metric"]


def _print_tott(now: dict, before: dict | None) -> None:
    print(
        f"training-on-the-test-task cpu-mini: {now['files']} result files, {now['seconds']:.0f} s of lm-eval time ("
        + ", ".join(f"{stage} {sec:.0f} s" for stage, sec in sorted(now.get("seconds_by_stage", {}).items()))
        + ")"
    )
    old = {_key(p): p for p in before["panels"]} if before else {}
    for p in now["panels"]:
        b, a = p["before"], p["after"]
        line = (
            f"  {p['benchmark']:18s} {p['metric']:18s} {b['value']:.3f} ± {b['stderr']:.3f} -> "
            f"{a['value']:.3f} ± {a['stderr']:.3f} ({p['difference']:+.3f})"
        )
        if _key(p) in old:
            o = old[_key(p)]
            line += (
                f" | at the --before revision: {o['before']['value']:.3f} -> {o['after']['value']:.3f} ({o['difference']:+.3f});"
                f" change of the difference {p['difference'] - o['difference']:+.3f}"
            )
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--before", metavar="REV", help="also read the results committed at this git revision"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        old_pot = old_tott = None
        if args.before:
            old = _checkout_results(args.before, tmp / "before")
            old_pot = pretrain_on_test(old / POT)
            old_tott = training_on_the_test_task(old, tmp / "figures-before")
        _print_pot(pretrain_on_test(repo_root() / POT), old_pot)
        _print_zero_shot(zero_shot(repo_root() / POT), packing_speed(repo_root() / POT.parent / "speed"))
        _print_tott(training_on_the_test_task(repo_root(), tmp / "figures-now"), old_tott)


if __name__ == "__main__":
    main()
