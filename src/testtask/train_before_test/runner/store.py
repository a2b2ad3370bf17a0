"""Where a cell's results live, the refusal of changed settings, and the merge into `all_results.json`.

Below `results_dir` (results/train-before-test/<run>/): `cells/<benchmark>/<model>.json`, one cell's record
(its presence means finished); `evaluations/<benchmark>/<model>/...`, the lm-eval JSON of every score (cell.py);
`all_results.json`, the published format rebuilt from every cell record under a file lock and replaced
atomically, so parallel jobs of a multirun fill one file and never lose each other's cells. A cell's settings are
written to its work folder when it starts and kept in its record; a rerun with other settings is refused rather
than mixing results of two configurations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testtask.errors import InputError
from testtask.io import atomic_write_json, file_lock, to_jsonable

KEYS = ("train_before_test", "direct_eval", "train_before_test_stderr", "direct_eval_stderr")


class SettingsChanged(InputError, RuntimeError):
    pass


def slug(model: str) -> str:
    """A folder name for a model id: `Qwen/Qwen2.5-7B` -> `Qwen__Qwen2.5-7B`."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(model).strip("/").replace("/", "__"))
    if not name or name.startswith("."):
        raise ValueError(f"cannot make a folder name of model {model!r}")
    return name


def record_path(results_dir: Path, benchmark: str, model: str) -> Path:
    return Path(results_dir) / "cells" / benchmark / f"{slug(model)}.json"


def _canonical(settings: Mapping[str, Any]) -> Any:
    return json.loads(json.dumps(to_jsonable(dict(settings)), sort_keys=True))


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            out += _differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    return [] if old == new else [f"{prefix.rstrip('.')}: {old!r} -> {new!r}"]


def check_settings(path: Path, settings: Mapping[str, Any], what: str) -> None:
    """Raise `SettingsChanged` when `path` holds other settings than `settings`."""
    if not Path(path).is_file():
        return
    stored = json.loads(Path(path).read_text())
    stored = stored.get("settings", stored)
    changes = _differences(stored, _canonical(settings))
    if changes:
        raise SettingsChanged(
            f"{what} was run with other settings ({path}):\n  "
            + "\n  ".join(changes)
            + "\nUse another `run=` name for the new settings, or delete the old results to redo the cell."
        )


def claim(work_dir: Path, settings: Mapping[str, Any]) -> None:
    """Record the settings a cell's work folder is built with (refusing other settings already there)."""
    path = Path(work_dir) / "settings.json"
    check_settings(path, settings, f"the work folder {work_dir}")
    if not path.is_file():
        atomic_write_json(path, _canonical(settings))


def count_attempt(work_dir: Path) -> int:
    """Count one more attempt at the cell of `work_dir` (its `attempts.json`); the attempts so far, this one too."""
    path = Path(work_dir) / "attempts.json"
    count = int(json.loads(path.read_text()).get("attempts", 0)) + 1 if path.is_file() else 1
    atomic_write_json(path, {"attempts": count})
    return count


def read_record(path: Path) -> dict[str, Any] | None:
    return json.loads(Path(path).read_text()) if Path(path).is_file() else None


def write_record(path: Path, record: Mapping[str, Any]) -> None:
    atomic_write_json(path, record)


def _published_stderr(value: float | None) -> float | str:
    """A standard error as the release writes it: lm-eval's "N/A" where none was computed (the perplexity
    corpora), never null."""
    return "N/A" if value is None else value


def collect(results_dir: Path) -> dict[str, dict[str, dict[str, float | str | None]]]:
    """The published-format matrices from every cell record below `results_dir`."""
    merged: dict[str, dict[str, dict[str, float | str | None]]] = {k: {} for k in KEYS}
    for path in sorted((Path(results_dir) / "cells").glob("*/*.json")):
        record = json.loads(path.read_text())
        try:
            benchmark, model = record["benchmark"], record["model"]
            values = {
                "train_before_test": record["train_before_test"]["test"],
                "direct_eval": record["direct_eval"]["test"],
                "train_before_test_stderr": _published_stderr(record["train_before_test"]["stderr"]),
                "direct_eval_stderr": _published_stderr(record["direct_eval"]["stderr"]),
            }
        except KeyError as err:
            raise ValueError(f"{path}: cell record lacks field {err}") from None
        for key, value in values.items():
            merged[key].setdefault(benchmark, {})[model] = value
    for key in KEYS:
        merged[key] = {b: dict(sorted(m.items())) for b, m in sorted(merged[key].items())}
    return merged


def merge(results_dir: Path) -> Path:
    """Rebuild `all_results.json` from the cell records, under a lock shared by all jobs of the run."""
    target = Path(results_dir) / "all_results.json"
    with file_lock(Path(results_dir) / ".all_results.lock"):
        atomic_write_json(target, collect(results_dir))
    return target
