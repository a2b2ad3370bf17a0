"""The protocol tables of the runners (`docs/protocols/<paper>.md`) and analyses (`<paper>-analysis.md`), read as
data: tests/test_protocol_tables.py checks every row against the composed configs (`drift`), so that the two
cannot drift apart.

Cell conventions (see any of the tables):
- `config key`: a backticked dotted path into the composed entry config, optionally preceded by the Hydra
  overrides needed to compose it in brackets (``[lm=mistral_qlora] `lm.zero_shot.learning_rate```), or `—` for a
  mechanism that is no single value (its decision names the test that covers it);
- `default` / `paper_text`: a backticked YAML literal, `—`, or (paper_text only) `same`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testtask.errors import InputError

COLUMNS = ("element", "paper text", "authors' code", "config key", "default", "paper_text", "decision")
NONE = {"—", "-", ""}

#: the override that selects the paper-text preset, of an analysis and of a runner alike (conf/protocol/)
PRESET = "protocol=paper_text"
MISSING = object()


def runners() -> dict[str, str]:
    """paper key -> its runner's entry config, for every paper whose runner has a paper_text preset."""
    from testtask import papers

    plugins = (papers.get(key) for key in papers.keys())
    return {p.key: p.runner.config_name for p in plugins if "runner" in p.paper_text and p.runner is not None}


def analyses() -> dict[str, tuple[str, ...]]:
    """paper key -> the overrides that compose its analysis config, for every paper whose analysis has a
    paper_text preset."""
    from testtask import papers

    return {key: (f"paper={key}",) for key in papers.keys() if "analysis" in papers.get(key).paper_text}


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
        default_value = _literal(default, allow_same=False, where=where)
        preset_value = _literal(preset, allow_same=True, where=where)
        rows.append(Row(number, element, paper, code, overrides, key, default_value, preset_value, decision))
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


def lookup(config: Mapping[str, Any], path: str) -> Any:
    """The value at dotted `path` in a plain config, or `MISSING`."""
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return MISSING
        node = node[part]
    return node


Compose = Callable[[tuple[str, ...]], Mapping[str, Any]]


def drift(table: list[Row], name: str, compose: Compose, preset: str) -> list[str]:
    """Every disagreement between the rows of `table` (file `name`) and the plain configs `compose(overrides)`
    gives: the default without `preset`, the paper_text value with it."""
    problems = []
    for row in table:
        where = f"{name}:{row.line} ({row.element})"
        if not row.decision or not row.authors_code:
            problems.append(f"{where}: no decision or no authors' code reference")
        if row.key is None:
            if "test" not in row.decision:
                problems.append(f"{where}: a mechanism row must name the test that covers it")
            continue
        default = lookup(compose(row.overrides), row.key)
        if default is MISSING:
            problems.append(f"{where}: `{row.key}` is not in the composed config")
            continue
        if row.default is None or not same_value(parse_literal(row.default), default):
            problems.append(f"{where}: table default {row.default!r}, config {default!r}")
        if row.preset is None:
            continue
        value = lookup(compose((*row.overrides, preset)), row.key)
        wanted = row.default if row.preset == "same" else row.preset
        if wanted is None or not same_value(parse_literal(wanted), value):
            problems.append(f"{where}: table paper_text {row.preset!r}, preset config {value!r}")
    return problems
