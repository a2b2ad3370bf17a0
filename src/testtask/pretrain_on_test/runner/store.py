"""Results of one (m, n, lm_type, dataset) cell: `accuracies.csv` in the published layout, written row by row.

Row k is repetition k, appended with an atomic rewrite, so a crash loses at most the repetition in flight.
`run_log.jsonl` beside it keeps each repetition's subsample indices, seconds and training throughput.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from testtask.io import atomic_write_text, to_jsonable

COLUMNS = ("base", "extra", "test", "majority", "num_classes", "majority_all")


def cell_dir(results_dir: Path, m: int, n: int, lm_type: str, dataset: str) -> Path:
    return Path(results_dir) / f"m{m}" / f"n{n}" / lm_type / dataset


def majority_share(labels: np.ndarray) -> float:
    """The share of the most frequent class in `labels`: the authors' `majority` (of test) and `majority_all`
    (kddubey/pretrain-on-test@80fd183:src/pretrain_on_test/experiment.py:260, 334)."""
    counts = np.bincount(np.asarray(labels))
    return float(counts.max() / counts.sum())


@dataclass
class CellStore:
    directory: Path

    @property
    def csv(self) -> Path:
        return self.directory / "accuracies.csv"

    @property
    def log(self) -> Path:
        return self.directory / "run_log.jsonl"

    def rows(self) -> pd.DataFrame:
        if not self.csv.exists():
            return pd.DataFrame(columns=list(COLUMNS))
        frame = pd.read_csv(self.csv)
        if tuple(frame.columns) != COLUMNS:
            raise ValueError(
                f"{self.csv}: columns {list(frame.columns)} are not {list(COLUMNS)}; not resuming"
            )
        return frame

    def done(self) -> int:
        """How many repetitions are finished (rows 0..done-1)."""
        return len(self.rows())

    def log_records(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def append(self, repetition: int, row: dict[str, float], record: dict[str, Any]) -> None:
        """Add repetition `repetition`'s row; refuses to leave a gap or overwrite a finished row."""
        frame = self.rows()
        if repetition != len(frame):
            raise ValueError(f"{self.csv}: has {len(frame)} rows, cannot append repetition {repetition}")
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            raise ValueError(f"row for {self.csv} lacks {missing}")
        frame = pd.concat([frame, pd.DataFrame([{c: row[c] for c in COLUMNS}])], ignore_index=True)
        # The log goes first: a row without its log record would lose the subsample indices.
        records = [r for r in self.log_records() if r.get("repetition") != repetition]
        records.append({"repetition": repetition, **record})
        atomic_write_text(self.log, "".join(json.dumps(to_jsonable(r)) + "\n" for r in records))
        atomic_write_text(self.csv, frame.to_csv(index=False))
