"""The protocol tables of the runners (`docs/protocols/<paper>.md`), read as data.

Each table lists one protocol element a row: what the paper's text says, what the authors' code ran (file and
line), the config key that holds it, its default and its value under the `paper_text` preset, and the decision.
`tests/test_protocol_tables.py` composes the runner's configs and checks every row against them, so the tables
and the configs cannot drift apart.

Cell conventions (see any of the tables):
- `config key`: a backticked dotted path into the composed entry config, optionally preceded by the Hydra
  overrides needed to compose it in brackets (``[lm=mistral_qlora] `lm.zero_shot.learning_rate```), or `—` for a
  mechanism that is no single value (its decision names the test that covers it);
- `default` / `paper_text`: a backticked YAML literal, `—`, or (paper_text only) `same`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testtask.errors import InputError

COLUMNS = ("element", "paper text", "authors' code", "config key", "default", "paper_text", "decision")
NONE = {"—", "-", ""}

#: paper key -> (entry config name, protocol group option prefix)
RUNNERS = {
    "pretrain-on-test": ("pretrain_on_test_run", "pretrain_on_test"),
    "training-on-the-test-task": ("training_on_the_test_task_run", "training_on_the_test_task"),
    "train-before-test": ("train_before_test_run", "train_before_test"),
}

_KEY = re.compile(r"^(?:\[(?P<overrides>[^\]]*)\]\s*)?`(?P<path>[^`]+)`$")
_LITERAL = re.compile(r"^`(?P<value>.*)`$")


class TableError(InputError, ValueError):
    """A protocol table that does not follow the conventions, naming the file and the row."""


@dataclass(frozen=True)
class Row:
    line: int
    element: str
    paper_text: str
    authors_code: str
    overrides: tuple[str, ...]
    key: str | None
    default: str | None  # a YAML literal, or None for "—"
    preset: str | None  # a YAML literal; "same" when the preset keeps the default; None for "—"
    decision: str


def _cells(line: str) -> list[str]:
    body = line.strip()
    if not (body.startswith("|") and body.endswith("|")):
        return []
    parts = re.split(r"(?<!\\)\|", body[1:-1])
    return [p.strip().replace("\\|", "|") for p in parts]


def _literal(cell: str, *, allow_same: bool, where: str) -> str | None:
    if cell in NONE:
        return None
    if allow_same and cell == "same":
        return "same"
    match = _LITERAL.match(cell)
    if not match:
        raise TableError(
            f"{where}: expected a backticked YAML literal, '—'{', or same' * allow_same}; got {cell!r}"
        )
    return match.group("value")


def read_table(path: Path) -> list[Row]:
    """The rows of the protocol table in `path` (the first table whose header is `COLUMNS`)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(
        (i for i, line in enumerate(lines) if tuple(c.lower() for c in _cells(line)) == COLUMNS), None
    )
    if start is None:
        raise TableError(f"{path}: no table with the header {' | '.join(COLUMNS)}")
    rows = []
    for number, line in enumerate(lines[start + 2 :], start=start + 3):
        cells = _cells(line)
        if not cells:
            break
        where = f"{path}:{number}"
        if len(cells) != len(COLUMNS):
            raise TableError(f"{where}: {len(cells)} cells, expected {len(COLUMNS)}")
        element, paper, code, key_cell, default, preset, decision = cells
        overrides: tuple[str, ...] = ()
        key = None
        if key_cell not in NONE:
            match = _KEY.match(key_cell)
            if not match:
                raise TableError(f"{where}: config key {key_cell!r} is not `[overrides] `dotted.path``")
            key = match.group("path")
            overrides = tuple(o.strip() for o in (match.group("overrides") or "").split(",") if o.strip())
        rows.append(
            Row(
                number,
                element,
                paper,
                code,
                overrides,
                key,
                _literal(default, allow_same=False, where=where),
                _literal(preset, allow_same=True, where=where),
                decision,
            )
        )
    return rows


def parse_literal(text: str) -> Any:
    return yaml.safe_load(text)


def same_value(expected: Any, actual: Any) -> bool:
    """Equality of a table literal and a config value; numbers compare as floats (YAML reads `1e-4` as text)."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(actual, int | float) and isinstance(expected, int | float | str):
        try:
            return math.isclose(float(expected), float(actual), rel_tol=1e-12, abs_tol=0.0)
        except ValueError:
            return False
    if isinstance(actual, dict) and isinstance(expected, dict):
        return expected.keys() == actual.keys() and all(same_value(expected[k], actual[k]) for k in expected)
    if isinstance(actual, list) and isinstance(expected, list):
        return len(expected) == len(actual) and all(
            same_value(e, a) for e, a in zip(expected, actual, strict=True)
        )
    return expected == actual
