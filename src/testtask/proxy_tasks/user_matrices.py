"""Own score matrices (matrices.yaml of the user folder, see testtask.user_files) merged into
`proxy_tasks.matrices` as entries of reader `csv`, so a student's models x tasks matrix is analysed under its own
name and label.

    board:                              # the matrix's key: what figure_1.matrices, figure_loo.panels, ... name
      file: scores/board.csv            # relative to this file's folder (or absolute)
      label: "Our leaderboard"          # the name figures, tables and sidecars show
      stderr_file: scores/board_se.csv  # optional: standard errors, a CSV of the same models and tasks
      top_t: 3                          # optional: this matrix's consistency.top_t (else the configured one)
      n_models: null                    # optional: its consistency.n_models
      robustness: null                  # optional: its robustness.mode

The CSVs are read when an analysis uses the matrix (matrices.csv_matrix), not here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testtask.paths import in_repo
from testtask.proxy_tasks.settings import Reader, RobustnessMode
from testtask.schema import Name, PositiveInt, int_at_least, record_field, section, violations
from testtask.user_files import UserFileError


@section
class OwnMatrix:
    """An entry of matrices.yaml: a record the student writes, its optional fields absent meaning the configured
    value (null in `proxy_tasks.matrices`)."""

    file: Name  # the score CSV, relative to the folder of matrices.yaml
    label: Name  # the name figures, tables and sidecars show
    stderr_file: Name | None = record_field()  # its standard errors (same models and tasks); absent: none
    top_t: PositiveInt | None = record_field()  # absent: consistency.top_t
    n_models: int_at_least(3) | None = record_field()  # absent: consistency.n_models
    robustness: RobustnessMode | None = record_field()  # absent: robustness.mode


def _path(file: Any, value: str) -> str:
    """A file named in matrices.yaml as the config holds it: relative to the repository root when inside it."""
    path = Path(value).expanduser()
    return in_repo(path if path.is_absolute() else file.path.parent / path)


def entries(file: Any) -> dict[str, dict[str, Any]]:
    """The own matrices of `file` (a `testtask.user_files.UserFile`) as `proxy_tasks.matrices` entries; an error
    names the file and `<matrix>.<field>`, one line per problem."""
    lines: list[str] = []
    out: dict[str, dict[str, Any]] = {}
    for key, fields in file.data.items():
        typed, problems = violations(OwnMatrix, fields, str(key))
        lines += problems
        if typed is None:
            continue
        out[str(key)] = {
            "label": typed.label,
            "reader": str(Reader.csv),
            "regime": None,
            "stage": None,
            "benchmarks": None,
            "file": _path(file, typed.file),
            "stderr_file": None if typed.stderr_file is None else _path(file, typed.stderr_file),
            "top_t": typed.top_t,
            "n_models": typed.n_models,
            "robustness": None if typed.robustness is None else str(typed.robustness),
        }
    if lines:
        raise UserFileError("\n".join(f"{file.shown}: {line}" for line in lines))
    return out


def merge(cfg: Any, file: Any) -> None:
    """The `testtask` config: own matrices join `proxy_tasks.matrices` (an own matrix of the same key is replaced
    whole, so applying the file twice changes nothing); a key of one of the paper's matrices is an error."""
    matrices = cfg.proxy_tasks.matrices
    for key, entry in entries(file).items():
        configured = matrices.get(key)
        if configured is not None and configured.get("reader") != Reader.csv:
            papers = [k for k, m in matrices.items() if m.get("reader") != Reader.csv]
            raise file.error(key, f"the paper's matrices have this key ({', '.join(papers)}); choose another")
        matrices[key] = entry
