"""A user's model made from a published one: its lm-eval files (and train-before-test scores) copied under a new
name, base scores raised, into a results run laid over the release (the acceptance case of `assess-model`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path

from testtask.lm.models import ModelRegistry

TOTT, TBT = "training-on-the-test-task", "train-before-test"
RAISED_METRICS = ("acc,", "exact_match,")  # accuracies: higher is better, in [0, 1]


def _raise(path: Path, out: Path, delta: float) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    for entry in data["results"].values():
        for key, value in entry.items():
            if key.startswith(RAISED_METRICS) and "_stderr," not in key and isinstance(value, int | float):
                entry[key] = min(1.0, value + delta)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data), encoding="utf-8")


def model_files(evaluations: Path, model: str, known: Iterable[str] | None = None) -> list[tuple[Path, str]]:
    """(file, benchmark) of every base and e3 result of exactly `model` under `evaluations`. A file
    `<name>-<benchmark>.json` belongs to the longest model name of `known` (default: the paper's registry) and
    `model` that starts it: `openllama-3b` never takes `openllama-3b-v2`'s files, and a benchmark name may hold
    dashes and underscores."""
    names = {*(ModelRegistry.load().names() if known is None else known), model}
    out = []
    for path in sorted(evaluations.glob("base/*.json")) + sorted(evaluations.glob("e3/*/*.json")):
        owners = [name for name in names if path.stem.startswith(f"{name}-")]
        if owners and max(owners, key=len) == model:
            out.append((path, path.stem[len(model) + 1 :]))
    return out


def make_run(published: Path, results: Path, run: str, source: str, name: str, delta: float) -> list[Path]:
    """Copy `source`'s base and e3 files of the release in `published` to `results/<paper>/<run>` as `name`:
    base scores raised by `delta`, fine-tuned ones unchanged; its train-before-test direct scores raised the same
    way. Returns the files written."""
    evaluations = published / TOTT / "evaluations"
    out = results / TOTT / run / "evaluations"
    written = []
    for path, benchmark in model_files(evaluations, source):
        rel = path.relative_to(evaluations)
        target = out / rel.parent / f"{name}-{benchmark}.json"
        if rel.parts[0] == "base":
            _raise(path, target, delta)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        written.append(target)
    return written


def make_tbt_run(
    published: Path, results: Path, run: str, source: str, name: str, delta: float, raised: set[str]
) -> Path:
    """`source`'s train-before-test scores as `name`: its direct scores on the benchmarks `raised` raised by
    `delta`, the rest as published."""
    data = json.loads((published / TBT / "all_results.json").read_text(encoding="utf-8"))
    out: dict[str, dict] = {}
    for field, per_bench in data.items():
        out[field] = {}
        for bench, per_model in per_bench.items():
            if source in per_model and per_model[source] is not None:
                value = per_model[source]
                if field == "direct_eval" and bench in raised:
                    value = min(1.0, value + delta)
                out[field][bench] = {name: value}
    path = results / TBT / run / "all_results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> None:
    """`python -m tests.assess.raised <source model> <name> <run> [--delta D]`: a stand-in for a user's own
    lm-eval run (docs/extending.md), from the release in data/published into results/<paper>/<run>/."""
    import argparse

    from testtask.paths import repo_root

    parser = argparse.ArgumentParser(prog="python -m tests.assess.raised", description=main.__doc__)
    parser.add_argument("source", help="a published model, e.g. llama-2-7b")
    parser.add_argument("name", help="your model's name in the copied files")
    parser.add_argument("run", help="the results run, results/<paper>/<run>/")
    parser.add_argument("--delta", type=float, default=0.05, help="added to every base accuracy")
    args = parser.parse_args(argv)
    root = repo_root()
    written = make_run(
        root / "data" / "published", root / "results", args.run, args.source, args.name, args.delta
    )
    if not written:
        raise SystemExit(
            f"no files of {args.source!r} in {root / 'data' / 'published' / TOTT}: run `make data`"
        )
    print(f"{len(written)} lm-eval files of {args.name} in {written[0].parents[2]}")


if __name__ == "__main__":
    main()
