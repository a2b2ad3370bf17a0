"""Read LM Evaluation Harness output JSONs in the published layout into one tidy table.

Layout below the `evaluations/` root (the authors' release, and what our runners write):

- `base/<model>-<benchmark>.json`                        no fine-tuning
- `<stage>/<finetune>/<model>-<benchmark>.json`          stage e1, e2, e1+2, e3; finetune mmluaux or gsm8kaux
- `intermediate/<finetune>/evals/<model>/step_<k>/<benchmark>.json`   checkpoints during fine-tuning
- `new_evals/<base|finetune>/<model>-<benchmark>.json`   Open LLM Leaderboard v2 tasks
- `lr_sweep/<learning rate>/<finetune>/<model>-<benchmark>.json`   fine-tuned (e3) at another peak learning
  rate (Appendix B.3; not in the authors' release, written by our runners)

Benchmark names never contain '-', so a flat file name splits at its last '-'.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

STAGES = ("e1", "e2", "e1+2", "e3")
FINETUNES = ("mmluaux", "gsm8kaux", "mcaux")  # mcaux: ARC/OpenBookQA train (the CPU mini-replication)
COLUMNS = [
    "model",
    "adjustment",
    "finetune",
    "suite",
    "benchmark",
    "metric",
    "value",
    "stderr",
    "step",
    "learning_rate",
    "file",
]
# Derived metric: mean of a metric over every entry of `results` (groups and subjects alike), as the
# authors averaged MMLU; the standard aggregate is the entry named like the benchmark.
ENTRIES_MEAN = "entries_mean"
_STEP = re.compile(r"^step_(\d+)$")


class ResultsError(ValueError):
    """A result file is malformed or sits where the layout does not expect one; names the file."""


@dataclass(frozen=True)
class ResultFile:
    path: Path
    model: str
    benchmark: str
    adjustment: str  # base | e1 | e2 | e1+2 | e3 | intermediate
    finetune: str | None  # mmluaux | gsm8kaux | None
    suite: str  # v1 (Leaderboard v1 era evaluations) | v2 (new_evals: Leaderboard v2)
    step: int | None = None
    learning_rate: float | None = None


def _split_flat(path: Path) -> tuple[str, str]:
    stem = path.stem
    if "-" not in stem:
        raise ResultsError(f"{path}: file name must be <model>-<benchmark>.json")
    model, benchmark = stem.rsplit("-", 1)
    return model, benchmark


def classify(path: Path, root: Path) -> ResultFile:
    """Where a file sits in the layout says what it holds."""
    parts = path.relative_to(root).parts
    top = parts[0]
    if top == "base" and len(parts) == 2:
        model, bench = _split_flat(path)
        return ResultFile(path, model, bench, "base", None, "v1")
    if top in STAGES and len(parts) == 3 and parts[1] in FINETUNES:
        model, bench = _split_flat(path)
        return ResultFile(path, model, bench, top, parts[1], "v1")
    if top == "intermediate" and len(parts) == 6 and parts[1] in FINETUNES and parts[2] == "evals":
        match = _STEP.match(parts[4])
        if match:
            return ResultFile(path, parts[3], path.stem, "intermediate", parts[1], "v1", int(match.group(1)))
    if top == "new_evals" and len(parts) == 3 and parts[1] in ("base", *FINETUNES):
        model, bench = _split_flat(path)
        finetune = None if parts[1] == "base" else parts[1]
        return ResultFile(path, model, bench, "base" if finetune is None else "e3", finetune, "v2")
    if top == "lr_sweep" and len(parts) == 4 and parts[2] in FINETUNES:
        try:
            rate = float(parts[1])
        except ValueError:
            raise ResultsError(f"{path}: folder {parts[1]!r} is not a learning rate") from None
        model, bench = _split_flat(path)
        return ResultFile(path, model, bench, "lr_sweep", parts[2], "v1", learning_rate=rate)
    raise ResultsError(
        f"{path}: not a place the layout expects a result "
        "(base/, e1|e2|e1+2|e3/<mmluaux|gsm8kaux>/, intermediate/<ft>/evals/<model>/step_<k>/, new_evals/<base|ft>/, lr_sweep/<lr>/<ft>/)"
    )


def discover(root: Path) -> list[ResultFile]:
    """Every `*.json` below `root`, classified; sorted for reproducible order."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no evaluations folder")
    return [classify(p, root) for p in sorted(root.rglob("*.json"))]


def _number(value, path: Path, field: str) -> float:
    if value in (None, "N/A"):
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResultsError(f"{path}: field {field!r} is {value!r}, not a number")
    return float(value)


def _metric_items(entry: dict, path: Path, key: str) -> Iterable[tuple[str, float, float]]:
    """(metric, value, stderr) of one `results` entry; lm-eval names metrics `<name>,<filter>`."""
    if not isinstance(entry, dict):
        raise ResultsError(f"{path}: results[{key!r}] is not an object")
    for name, value in entry.items():
        if name == "alias" or "_stderr," in name or "," not in name:
            continue
        stderr_key = name.replace(",", "_stderr,", 1)
        stderr = _number(entry.get(stderr_key), path, f"results.{key}.{stderr_key}")
        yield name, _number(value, path, f"results.{key}.{name}"), stderr


def read_file(rf: ResultFile) -> list[dict]:
    """Rows of the tidy table for one file: the benchmark's own entry, plus entry means for groups."""
    try:
        data = json.loads(rf.path.read_text())
    except json.JSONDecodeError as err:
        raise ResultsError(f"{rf.path}: not valid JSON ({err})") from err
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise ResultsError(f"{rf.path}: missing the 'results' object of an lm-eval output")
    results = data["results"]
    if rf.benchmark not in results:
        raise ResultsError(
            f"{rf.path}: results has no entry {rf.benchmark!r} (entries: {', '.join(sorted(results)[:5])}...)"
        )
    base = {
        "model": rf.model,
        "adjustment": rf.adjustment,
        "finetune": rf.finetune,
        "suite": rf.suite,
        "benchmark": rf.benchmark,
        "step": rf.step,
        "learning_rate": rf.learning_rate,
        "file": str(rf.path),
    }
    rows = []
    own = list(_metric_items(results[rf.benchmark], rf.path, rf.benchmark))
    if not own:
        raise ResultsError(f"{rf.path}: results[{rf.benchmark!r}] holds no metric")
    for metric, value, stderr in own:
        rows.append({**base, "metric": metric, "value": value, "stderr": stderr})
    if len(results) > 1:
        per_metric: dict[str, list[float]] = {}
        for key, entry in results.items():
            for metric, value, _ in _metric_items(entry, rf.path, key):
                per_metric.setdefault(metric, []).append(value)
        for metric, values in per_metric.items():
            if len(values) == len(results):  # only metrics every entry reports
                mean = float(sum(values) / len(values))
                rows.append({**base, "metric": f"{metric}|{ENTRIES_MEAN}", "value": mean, "stderr": math.nan})
    return rows


def load_results(
    root: Path,
    known_model: Callable[[str], bool] | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """The tidy table of every result below `root` (an `evaluations/` folder).

    `known_model(name)` returning False for a file's model is an error naming the file: a result whose
    model the registry does not know cannot be placed on the compute axis, and dropping it silently
    would change the analysis.
    """
    files = discover(root)
    if not files:
        raise ResultsError(f"{root}: no result files")
    if known_model is not None:
        unknown = [rf for rf in files if not known_model(rf.model)]
        if unknown:
            listed = "; ".join(f"{rf.model!r} in {rf.path}" for rf in unknown[:5])
            raise ResultsError(
                f"{len(unknown)} result file(s) name models missing from the model registry: {listed}"
            )
    iterator: Iterable[ResultFile] = files
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(files, desc="lm-eval results", unit="file")
    rows = [row for rf in iterator for row in read_file(rf)]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["step"] = frame["step"].astype("Int64")
    return frame
