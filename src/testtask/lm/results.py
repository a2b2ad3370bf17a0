"""Read LM Evaluation Harness output JSONs in the published layout (`results_layout`) into one tidy table.

Every value of every entry is checked (ResultsError naming the file and field); only a result config lists in
`absent_results` may hold NaN (the authors' release has a few such files). Whether a file holds the metric an
analysis reads is checked where it is read (`scores.lookup`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from testtask.io import unique_keys_hook
from testtask.lm.results_layout import ADJUSTMENTS, FINETUNES, ResultFile, ResultsError, discover
from testtask.metric_ranges import problem
from testtask.schema import Choice, Name, NonNegativeInt, Text, load, non_empty, section

if TYPE_CHECKING:
    import pandas as pd

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
# Keys of a `results` entry that are lm-eval's bookkeeping, not metrics (newer versions add name and sample_len).
BOOKKEEPING = frozenset({"alias", "name", "sample_len", "sample_count", "samples"})
# What lm-eval writes for a standard error it did not compute (bootstrap off, or a single document).
NO_STDERR = "N/A"
# Where the repository lists the results its sources lack (training-on-the-test-task's analysis config).
CONFIG = "conf/training_on_the_test_task/analysis.yaml"
ANY = "*"  # an `absent_results` pattern that matches anything


# The stages and fine-tuning data an `absent_results` entry may name (`*`: any), from the layout's own sets.
Stage = Choice("Stage", {**{s: s for s in ADJUSTMENTS}, "any": ANY})
Finetune = Choice("Finetune", {**{f: f for f in FINETUNES}, "any": ANY})


@section
class Absence:
    """Results the source genuinely lacks (or holds as NaN), and why; `*` matches anything."""

    model: Annotated[
        Name | non_empty(Name), Text("a model name or a non-empty list of them")
    ]  # "*": every one
    benchmark: Name  # benchmark name as in result files (e.g. mmlu, leaderboard_gpqa), or "*"
    stage: Stage  # base | e1 | e2 | e1+2 | e3 | intermediate | lr_sweep | *
    finetune: Finetune  # mmluaux | gsm8kaux | mcaux | * (ignored for stage base)
    steps: list[NonNegativeInt] | None  # intermediate checkpoints; null: every one
    reason: Name

    @property
    def models(self) -> tuple[str, ...]:
        return (self.model,) if isinstance(self.model, str) else tuple(self.model)

    def covers(self, model: str, benchmark: str, stage: str, finetune: str | None, step: int | None) -> bool:
        def match(pattern: str, value: str | None) -> bool:
            return pattern == ANY or pattern == value

        return (
            (ANY in self.models or model in self.models)
            and match(self.benchmark, benchmark)
            and match(self.stage, stage)
            and (stage == "base" or match(self.finetune, finetune))
            and (self.steps is None or step in self.steps)
        )


class AbsentResults:
    """The results config lists as genuinely absent from the source (`absent_results`): the only gaps allowed."""

    def __init__(self, entries: Iterable[Absence] = ()) -> None:
        self.entries = tuple(entries)

    @classmethod
    def from_config(cls, entries: Any, where: str = "absent_results") -> AbsentResults:
        """An `absent_results` list checked against `Absence` (ConfigError naming every bad key)."""
        return cls(load(list[Absence], entries, where))

    @classmethod
    def default(cls) -> AbsentResults:
        """The list of the repository's analysis config (conf/training_on_the_test_task/analysis.yaml)."""
        from omegaconf import OmegaConf

        from testtask.paths import conf_dir

        path = conf_dir() / "training_on_the_test_task" / "analysis.yaml"
        if not path.is_file():
            return cls()
        return cls.from_config(OmegaConf.load(path).absent_results, where=f"{path}: absent_results")

    def reason(
        self,
        model: str,
        benchmark: str,
        stage: str,
        finetune: str | None = None,
        step: int | None = None,
    ) -> str | None:
        """Why the source lacks this result, or None when config does not list it."""
        for absence in self.entries:
            if absence.covers(model, benchmark, stage, finetune, step):
                return " ".join(absence.reason.split())
        return None

    def __len__(self) -> int:
        return len(self.entries)


def _missing(value: Any) -> bool:
    """What lm-eval (or the authors' release) writes where it has no number: null, "N/A", NaN."""
    return value is None or value == NO_STDERR or (isinstance(value, float) and math.isnan(value))


def _value(value: Any, path: Path, field: str, metric: str, absent_ok: bool) -> float:
    """A metric's value: a finite number in the metric's range; NaN only for a result config lists as absent."""
    if absent_ok and _missing(value):
        return math.nan
    why = problem(value, metric)
    if why is not None:
        raise ResultsError(f"{path}: field {field!r} is {value!r}, {why}")
    return float(value)


def _stderr(value: Any, path: Path, field: str, absent_ok: bool) -> float:
    """A standard error: a finite number >= 0, or lm-eval's "N/A" (and an absent key) when it computed none."""
    if value == NO_STDERR or (absent_ok and _missing(value)):
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ResultsError(
            f"{path}: field {field!r} is {value!r}; a standard error must be a finite number >= 0 or "
            f"{NO_STDERR!r} (lm-eval's mark for one it did not compute)"
        )
    return float(value)


def _metric_items(
    entry: Any, path: Path, key: str, absent_ok: bool = False
) -> Iterable[tuple[str, float, float]]:
    """(metric, value, stderr) of one `results` entry; lm-eval names metrics `<name>,<filter>`."""
    if not isinstance(entry, dict):
        raise ResultsError(f"{path}: results[{key!r}] is not an object")
    for name, value in entry.items():
        if name in BOOKKEEPING:
            continue
        field = f"results.{key}.{name}"
        if "," not in name:
            raise ResultsError(
                f"{path}: field {field!r} is neither a metric (<name>,<filter>) nor one of lm-eval's "
                f"bookkeeping keys ({', '.join(sorted(BOOKKEEPING))})"
            )
        if "_stderr," in name:
            metric = name.replace("_stderr,", ",", 1)
            if metric not in entry:
                raise ResultsError(
                    f"{path}: field {field!r} is a standard error of {metric!r}, which is absent"
                )
            continue
        stderr_key = name.replace(",", "_stderr,", 1)
        stderr = (
            _stderr(entry[stderr_key], path, f"results.{key}.{stderr_key}", absent_ok)
            if stderr_key in entry
            else math.nan
        )
        yield name, _value(value, path, field, name, absent_ok), stderr


def _parse(path: Path) -> dict:
    """The decoded JSON of one file: UTF-8 text, valid JSON, no key twice, a `results` object."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise ResultsError(
            f"{path}: not UTF-8 text (byte {err.start}: {err.reason}); lm-eval writes UTF-8 JSON"
        ) from None
    try:
        data = json.loads(text, object_pairs_hook=unique_keys_hook(path, ResultsError))
    except json.JSONDecodeError as err:
        raise ResultsError(f"{path}: not valid JSON ({err})") from err
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise ResultsError(f"{path}: missing the 'results' object of an lm-eval output")
    return data


def _check_listed_entries(data: dict, path: Path) -> None:
    """Every task `group_subtasks` names has its `results` entry (a dropped subject would change the mean)."""
    groups = data.get("group_subtasks")
    if groups is None:
        return
    if not isinstance(groups, dict) or not all(isinstance(v, list) for v in groups.values()):
        raise ResultsError(f"{path}: field 'group_subtasks' must map a group to the list of its tasks")
    listed = set(groups) | {str(task) for tasks in groups.values() for task in tasks}
    lacking = sorted(listed - set(data["results"]))
    if lacking:
        raise ResultsError(
            f"{path}: field 'results' lacks entries {lacking[:5]} that 'group_subtasks' lists ({len(lacking)} in all)"
        )


def entries_lacking(path: Path, metric: str) -> list[str]:
    """The `results` entries of a (valid) result file that do not report `metric`."""
    return [key for key, entry in _parse(Path(path))["results"].items() if metric not in entry]


def _entries_means(per_entry: dict[str, dict[str, float]]) -> dict[str, float]:
    """metric -> its mean over several `results` entries (entry -> metric -> value), if all report it."""
    if len(per_entry) < 2:
        return {}
    common = set.intersection(*(set(values) for values in per_entry.values()))
    first = next(iter(per_entry.values()))
    return {m: float(sum(v[m] for v in per_entry.values()) / len(per_entry)) for m in first if m in common}


def read_file(rf: ResultFile, absent: AbsentResults | None = None) -> list[dict]:
    """Rows of the tidy table for one file: the benchmark's own entry, plus entry means for groups."""
    absent_ok = absent is not None and (
        absent.reason(rf.model, rf.benchmark, rf.adjustment, rf.finetune, rf.step) is not None
    )
    data = _parse(rf.path)
    results = data["results"]
    _check_listed_entries(data, rf.path)
    if rf.benchmark not in results:
        raise ResultsError(
            f"{rf.path}: results has no entry {rf.benchmark!r} (entries: {', '.join(sorted(results)[:5])}...)"
        )
    # every value of every entry is checked, used or not
    items = {key: list(_metric_items(entry, rf.path, key, absent_ok)) for key, entry in results.items()}
    own = items[rf.benchmark]
    if not own:
        raise ResultsError(f"{rf.path}: results[{rf.benchmark!r}] holds no metric")
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
    rows = [{**base, "metric": metric, "value": value, "stderr": stderr} for metric, value, stderr in own]
    per_entry = {key: {m: v for m, v, _ in entry} for key, entry in items.items()}
    for metric, mean in _entries_means(per_entry).items():
        rows.append({**base, "metric": f"{metric}|{ENTRIES_MEAN}", "value": mean, "stderr": math.nan})
    return rows


def load_results(
    root: Path,
    known_model: Callable[[str], bool] | None = None,
    progress: bool = False,
    absent: AbsentResults | None = None,
) -> pd.DataFrame:
    """The tidy table of every result below `root` (an `evaluations/` folder). A model `known_model` refuses
    is an error (it cannot be placed on the compute axis); `absent` None reads the repository's
    `absent_results`."""
    import pandas as pd  # here, not at the top: checking a config must not load pandas

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
    absent = AbsentResults.default() if absent is None else absent
    iterator: Iterable[ResultFile] = files
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(files, desc="lm-eval results", unit="file")
    rows = [row for rf in iterator for row in read_file(rf, absent)]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["step"] = frame["step"].astype("Int64")
    return frame
