"""Read one lm-eval samples file (`lm_eval --log_samples`): per document the choices' loglikelihoods and the gold.

Each line of `<task>.jsonl` is one document of a multiple-choice task: `doc_id`, `target` (the gold choice's
index, or its text), `arguments` (one `{arg_0: context, arg_1: continuation}` per choice), `resps` /
`filtered_resps` (one `(loglikelihood, is_greedy)` pair per choice; `resps` nests each pair once more) and the
per-document metrics lm-eval computed (`acc`, `acc_norm`, `brier_score` when the task reports them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from testtask.errors import InputError

LOGGED_METRICS = ("acc", "acc_norm", "brier_score")


class SamplesError(InputError, ValueError):
    """A samples file that cannot be read as a multiple-choice task; the message names the file and the field."""


@dataclass(frozen=True)
class TaskSamples:
    """One task's documents; arrays are (documents, max choices), padded with NaN where a document has fewer."""

    path: Path
    doc_ids: np.ndarray  # (n,) int
    target: np.ndarray  # (n,) int, index of the correct choice
    loglik: np.ndarray  # (n, C) summed loglikelihood of each choice's continuation
    chars: np.ndarray  # (n, C) length of each choice in characters (lm-eval's acc_norm divisor)
    bytes: np.ndarray  # (n, C) length in UTF-8 bytes
    doc_hash: list[str | None]
    # lm-eval's per-document metrics, NaN if absent
    logged: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_choices(self) -> np.ndarray:
        return np.sum(~np.isnan(self.loglik), axis=1)


def _pair(value: Any, where: str) -> float:
    """The loglikelihood of one `(loglikelihood, is_greedy)` response (`resps` wraps it in one more list)."""
    while isinstance(value, list) and value and isinstance(value[0], list):
        value = value[0]
    if not isinstance(value, list) or len(value) != 2:
        raise SamplesError(f"{where}: expected a (loglikelihood, is_greedy) pair, got {value!r}")
    try:
        return float(value[0])
    except (TypeError, ValueError) as err:
        raise SamplesError(f"{where}: loglikelihood {value[0]!r} is not a number") from err


def _continuations(row: dict[str, Any], n: int, where: str) -> list[str | None]:
    """The continuation (`arg_1`) of each choice's request, in choice order; None where not logged."""
    args = row.get("arguments")
    if isinstance(args, dict):
        items = [args[k] for k in sorted(args, key=lambda k: int(str(k).rsplit("_", 1)[-1]))]
    elif isinstance(args, list):
        items = args
    else:
        return [None] * n
    if len(items) != n:
        raise SamplesError(f"{where}: {len(items)} `arguments` for {n} responses")
    out: list[str | None] = []
    for item in items:
        if isinstance(item, dict):
            out.append(str(item.get("arg_1")) if "arg_1" in item else None)
        elif isinstance(item, list) and len(item) == 2:
            out.append(str(item[1]))
        else:
            out.append(None)
    return out


def _target(value: Any, continuations: list[str | None], delimiter: str, where: str) -> int:
    """The gold index: an int, a digit string, or the text of one choice."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool):
        raise SamplesError(f"{where}: `target` {value!r} is not a choice index")
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, str):
        if value.strip().lstrip("-").isdigit():
            return int(value.strip())
        texts = [_strip(c, delimiter) for c in continuations]
        if value in texts:
            return texts.index(value)
        if value.strip() in [t.strip() if t else t for t in texts]:
            return [t.strip() if t else t for t in texts].index(value.strip())
    raise SamplesError(f"{where}: `target` {value!r} is neither a choice index nor one of the choices")


def _strip(text: str | None, delimiter: str) -> str | None:
    """A continuation without lm-eval's target delimiter (the choice text that acc_norm measures)."""
    if text is None:
        return None
    return text[len(delimiter) :] if delimiter and text.startswith(delimiter) else text


def read_samples(path: Path, target_delimiter: str = " ") -> TaskSamples:
    """Parse `path`; raises SamplesError naming the file, the line and the field on malformed input."""
    path = Path(path)
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise SamplesError(f"{path}:{number}: not JSON ({err})") from err
    if not rows:
        raise SamplesError(f"{path}: no documents")
    lls: list[list[float]] = []
    chars: list[list[float]] = []
    nbytes: list[list[float]] = []
    ids, targets, hashes = [], [], []
    logged: dict[str, list[float]] = {m: [] for m in LOGGED_METRICS}
    for number, row in enumerate(rows, start=1):
        where = f"{path}:{number}"
        if "doc_id" not in row:
            raise SamplesError(f"{where}: field `doc_id` is missing")
        responses = row.get("filtered_resps", row.get("resps"))
        if not isinstance(responses, list) or not responses:
            raise SamplesError(f"{where}: field `filtered_resps` (or `resps`) is missing or empty")
        ll = [_pair(r, f"{where} field `filtered_resps`[{i}]") for i, r in enumerate(responses)]
        continuations = _continuations(row, len(ll), where)
        if "target" not in row:
            raise SamplesError(f"{where}: field `target` is missing")
        gold = _target(row["target"], continuations, target_delimiter, f"{where} field `target`")
        if not 0 <= gold < len(ll):
            raise SamplesError(f"{where}: field `target` = {gold} is out of range for {len(ll)} choices")
        texts = [_strip(c, target_delimiter) for c in continuations]
        ids.append(int(row["doc_id"]))
        targets.append(gold)
        lls.append(ll)
        chars.append([float(max(len(t), 1)) if t is not None else np.nan for t in texts])
        nbytes.append([float(max(len(t.encode()), 1)) if t is not None else np.nan for t in texts])
        hashes.append(row.get("doc_hash"))
        for metric in LOGGED_METRICS:
            value = row.get(metric)
            logged[metric].append(float(value) if isinstance(value, int | float) else np.nan)
    if len(set(ids)) != len(ids):
        raise SamplesError(f"{path}: field `doc_id` repeats (a samples file holds each document once)")
    width = max(len(x) for x in lls)

    def pad(values: list[list[float]]) -> np.ndarray:
        out = np.full((len(values), width), np.nan)
        for i, v in enumerate(values):
            out[i, : len(v)] = v
        return out

    return TaskSamples(
        path=path,
        doc_ids=np.asarray(ids, dtype=int),
        target=np.asarray(targets, dtype=int),
        loglik=pad(lls),
        chars=pad(chars),
        bytes=pad(nbytes),
        doc_hash=hashes,
        logged={m: np.asarray(v) for m, v in logged.items() if not np.all(np.isnan(v))},
    )
