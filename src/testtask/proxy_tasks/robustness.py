"""Robustness of candidate tasks (Section 3.2): variance ratio R = sigma_d^2 / sigma_r^2.

sigma_d^2 is a task's score variance across a Data Variability ensemble (models trained on different data),
sigma_r^2 across a Random Noise ensemble (same data, different seeds); both with ddof=1 as in the paper.

Ensemble scores come as a long table with columns `ensemble, member, task, score` (one row per member and task;
`ensemble` names the kind, e.g. data_variability or random_noise). Score matrices without ensembles (the
published leaderboards) can use `stderr_proxy`: sigma_d^2 is the variance of the task's score across the
models of the matrix and sigma_r^2 the mean squared published standard error, i.e. evaluation sampling noise
only, not training-seed noise. It is a labelled stand-in, not the paper's quantity.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ENSEMBLE_COLUMNS = ("ensemble", "member", "task", "score")


def validate_ensembles(frame: pd.DataFrame, labels: Mapping[str, str], source: str) -> pd.DataFrame:
    """Check the long ensemble table: columns, numeric scores, both kinds present, no duplicate cells."""
    missing = [c for c in ENSEMBLE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{source}: ensemble table lacks column(s) {missing}; needs {list(ENSEMBLE_COLUMNS)}"
        )
    out = frame[list(ENSEMBLE_COLUMNS)].copy()
    out["score"] = pd.to_numeric(out["score"], errors="coerce")
    bad = out[out["score"].isna()]
    if len(bad):
        row = bad.iloc[0]
        raise ValueError(
            f"{source}: field 'score' is not a number for ensemble={row['ensemble']!r}, "
            f"member={row['member']!r}, task={row['task']!r}"
        )
    for kind in ("data", "noise"):
        if labels[kind] not in set(out["ensemble"]):
            raise ValueError(f"{source}: field 'ensemble' has no rows of kind {labels[kind]!r} ({kind})")
    dup = out.duplicated(["ensemble", "member", "task"], keep=False)
    if dup.any():
        row = out[dup].iloc[0]
        raise ValueError(
            f"{source}: several scores for ensemble={row['ensemble']!r}, member={row['member']!r}, "
            f"task={row['task']!r}"
        )
    return out


def read_ensembles(path: Path, labels: Mapping[str, str]) -> pd.DataFrame:
    """A CSV ensemble table (columns ensemble, member, task, score)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"ensemble scores {path} do not exist")
    return validate_ensembles(pd.read_csv(path), labels, str(path))


def ensembles_from_wide(spec: Mapping[str, Any], source: str) -> pd.DataFrame:
    """The long table from `{ensembles: {kind: [members]}, scores: {task: {member: score}}}` (a YAML file)."""
    kinds = {str(member): str(kind) for kind, members in spec["ensembles"].items() for member in members}
    rows = []
    for task, by_member in spec["scores"].items():
        for member, score in by_member.items():
            if str(member) not in kinds:
                raise ValueError(f"{source}: scores.{task}.{member}: member is in no ensemble")
            rows.append({"ensemble": kinds[str(member)], "member": str(member), "task": task, "score": score})
    return pd.DataFrame(rows, columns=list(ENSEMBLE_COLUMNS))


def variance_ratio(ensembles: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """Per task: var_data, var_noise (ddof=1), their member counts and R = var_data / var_noise."""
    rows = {}
    for task, group in ensembles.groupby("task", sort=False):
        data = group.loc[group["ensemble"] == labels["data"], "score"].to_numpy(float)
        noise = group.loc[group["ensemble"] == labels["noise"], "score"].to_numpy(float)
        var_d = float(np.var(data, ddof=1)) if len(data) > 1 else np.nan
        var_r = float(np.var(noise, ddof=1)) if len(noise) > 1 else np.nan
        rows[task] = {
            "var_data": var_d,
            "var_noise": var_r,
            "n_data": len(data),
            "n_noise": len(noise),
            "ratio": var_d / var_r if var_r > 0 else np.nan,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def stderr_ratio(x: np.ndarray, se: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrays (models x tasks) to the proxy's var_data (ddof=1), var_noise (mean se^2) and ratio per task.

    A task lacking a standard error for any model gets var_noise and ratio NaN (it then fails any threshold)."""
    complete = ~np.isnan(se).any(axis=0)
    var_d = np.var(x, axis=0, ddof=1)
    var_r = np.where(complete, np.nan_to_num(se**2).mean(axis=0), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(var_r > 0, var_d / var_r, np.nan)
    return var_d, var_r, ratio


def stderr_proxy(scores: pd.DataFrame, stderr: pd.DataFrame) -> pd.DataFrame:
    """Per task: between-model variance of the scores over the mean squared standard error (the proxy R)."""
    se = stderr.reindex(index=scores.index, columns=scores.columns).to_numpy(float)
    var_d, var_r, ratio = stderr_ratio(scores.to_numpy(float), se)
    return pd.DataFrame(
        {
            "var_data": var_d,
            "var_noise": var_r,
            "n_data": len(scores),
            "n_noise": (~np.isnan(se)).sum(axis=0),
            "ratio": ratio,
        },
        index=scores.columns,
    )
