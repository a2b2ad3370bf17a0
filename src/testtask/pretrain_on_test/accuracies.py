"""Discover, validate and load per-subsample accuracy files.

Layout (the authors' release and our runners alike): `<root>/<collection>/m{m}/n{n}/<lm_type>/<dataset>/
accuracies.csv`, one row per subsample (row k is subsample k for every LM type), columns `COLUMNS`. A malformed
file is an AccuracyDataError naming the file and the field.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from testtask.errors import InputError
from testtask.pretrain_on_test.settings import Counts, Effect
from testtask.sources import OverlayConflict

COLUMNS = ("base", "extra", "test", "majority", "num_classes", "majority_all")
ACCURACY_COLUMNS = ("base", "extra", "test", "majority", "majority_all")
# Counts are reconstructed as accuracy × n; anything further than this from an integer is not a count.
COUNT_TOLERANCE = 1e-4
# A plain decimal number as pandas and Python write one; no spaces, no nan/inf.
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_PATTERN = re.compile(
    r"^(?:(?P<collection>.+)/)?m(?P<m>\d+)/n(?P<n>\d+)/(?P<lm_type>[^/]+)/(?P<dataset>[^/]+)/accuracies\.csv$"
)

# The two paired comparisons of §5: (control, treatment).
EFFECTS = {Effect.boost: ("base", "extra"), Effect.bias: ("extra", "test")}  # effect -> (control, treatment)


class AccuracyDataError(InputError, ValueError):
    """An accuracies.csv file (named in the message) is malformed."""


def discover(root: Path, strict: bool = False) -> pd.DataFrame:
    """Every accuracies.csv under `root`, one row per file; a file outside the layout is passed over, or with
    `strict` (a run laid over a release) an AccuracyDataError."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"no accuracies folder at {root}")
    rows = []
    for path in sorted(root.rglob("accuracies.csv")):
        match = _PATTERN.match(path.relative_to(root).as_posix())
        if match is None:
            if strict:
                raise AccuracyDataError(
                    f"{path}: outside the layout, so it would not be read; move it to "
                    f"{root}/m<m>/n<n>/<lm_type>/<dataset>/accuracies.csv"
                )
            continue
        rows.append({**match.groupdict(), "path": path})
    files = pd.DataFrame(rows, columns=["collection", "m", "n", "lm_type", "dataset", "path"])
    files["collection"] = files["collection"].fillna("")
    files[["m", "n"]] = files[["m", "n"]].astype(int)
    return files.sort_values(["collection", "m", "n", "lm_type", "dataset"], ignore_index=True)


IDENTITY = ["collection", "m", "n", "lm_type", "dataset"]  # what one accuracies.csv holds results of


def discover_roots(roots: Sequence[Path]) -> pd.DataFrame:
    """`discover` over each of `roots`, the release first; one file's identity in two roots is an OverlayConflict."""
    found = [discover(root, strict=i > 0) for i, root in enumerate(roots)]
    files = pd.concat(found, ignore_index=True) if len(found) > 1 else found[0]
    twice = files[files.duplicated(IDENTITY, keep=False)]
    if not twice.empty:
        first = twice.iloc[0]
        same = twice[(twice[IDENTITY] == first[IDENTITY]).all(axis=1)]
        what = f"accuracies.csv of LM type {first.lm_type}, dataset {first.dataset}, m={first.m}, n={first.n}"
        if first.collection:
            what += f", collection {first.collection}"
        raise OverlayConflict(what, same.path.iloc[0], same.path.iloc[1])
    return files.sort_values(IDENTITY, ignore_index=True)


def _text(path: Path, raw: bytes | None = None) -> str:
    """The file (or its bytes `raw`) as text: UTF-8 (a byte-order mark is dropped), not empty, ending in a newline."""
    raw = path.read_bytes() if raw is None else raw
    if not raw.strip():
        raise AccuracyDataError(f"{path}: file is empty")
    if b"\x00" in raw:  # UTF-16/32 text or a binary file
        raise AccuracyDataError(f"{path}: not a UTF-8 text CSV (it holds NUL bytes: UTF-16 or binary?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise AccuracyDataError(
            f"{path}: not a UTF-8 text CSV (byte {err.start}: {err.reason}); save it as UTF-8"
        ) from None
    if not text.endswith("\n"):
        # every writer ends the last row with a newline; without one the file may have been cut off mid-row
        raise AccuracyDataError(f"{path}: does not end with a newline (truncated?)")
    return text.removeprefix("\ufeff")


def _check_header(header: list[str], path: Path) -> None:
    """Distinct, non-empty column names without surrounding spaces, holding every column of COLUMNS."""
    spaced = [name for name in header if name != name.strip()]
    if spaced:
        raise AccuracyDataError(
            f"{path}: the header has spaces around column names {spaced}; write "
            f"{','.join(name.strip() for name in header)!r} (the published format has no spaces)"
        )
    if "" in header:
        raise AccuracyDataError(f"{path}: the header has an empty column name (column {header.index('')})")
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise AccuracyDataError(
            f"{path}: column(s) {', '.join(repeated)} appear more than once in the header"
        )
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise AccuracyDataError(
            f"{path}: missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)}"
        )


def _rows(text: str, path: Path) -> tuple[list[str], list[list[str]]]:
    """(header, data rows) of the CSV text, every row as long as the header."""
    try:
        header, *body = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as err:
        raise AccuracyDataError(f"{path}: not a CSV file ({err})") from err
    _check_header(header, path)
    for row, cells in enumerate(body):
        if len(cells) != len(header):
            raise AccuracyDataError(
                f"{path}: row {row} has {len(cells)} field(s), the header {len(header)} ({','.join(header)})"
            )
    if not body:
        raise AccuracyDataError(f"{path}: no rows")
    return header, body


def _numbers(cells: Sequence[str], column: str, path: Path) -> np.ndarray:
    """Column `column` (its cells as read) as floats; every cell a plain, finite decimal number."""
    for row, cell in enumerate(cells):
        if not _NUMBER.match(cell) or not np.isfinite(float(cell)):
            raise AccuracyDataError(f"{path}: column '{column}' row {row} is not a finite number: {cell!r}")
    return np.array(cells, dtype=float)


def _first(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


# Parsed files by (path, n, SHA-256 of the bytes): the figures of one command read the same collection many times
# (Figure 3's 400 files 2.6 s a read), and a file that changes is read again because its bytes key it.
_PARSED: dict[tuple[str, int, str], pd.DataFrame] = {}
_PARSED_MAX = 20_000


def read_accuracies(path: Path, n: int) -> pd.DataFrame:
    """Read and validate one file; add integer counts `<col>_correct` = round(accuracy × n) (the §6.1 model's
    counts follow `counts` in `paired_long`)."""
    return _parsed(Path(path), n).copy()


def _parsed(path: Path, n: int) -> pd.DataFrame:
    """The file's frame as `read_accuracies` returns it, shared: the caller copies it (`load` by concatenating)."""
    raw = path.read_bytes()
    key = (str(path), int(n), hashlib.sha256(raw).hexdigest())
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = _parse(path, n, raw)
    return _PARSED[key]


def _parse(path: Path, n: int, raw: bytes) -> pd.DataFrame:
    header, body = _rows(_text(path, raw), path)
    cells = dict(zip(header, (list(column) for column in zip(*body, strict=True)), strict=True))
    values = {column: _numbers(cells[column], column, path) for column in COLUMNS}
    for column in ACCURACY_COLUMNS:
        outside = (values[column] < 0) | (values[column] > 1)
        if outside.any():
            row = _first(outside)
            raise AccuracyDataError(
                f"{path}: column '{column}' row {row} = {values[column][row]} is outside [0, 1]"
            )
    classes = values["num_classes"]
    not_count = (classes < 2) | (classes != np.round(classes))
    if not_count.any():
        row = _first(not_count)
        raise AccuracyDataError(
            f"{path}: column 'num_classes' row {row} = {classes[row]} is not a whole number of classes >= 2"
        )
    correct = {}
    for column in ("base", "extra", "test"):
        products = values[column] * n
        off = np.abs(products - np.round(products)) > COUNT_TOLERANCE
        if off.any():
            row = _first(off)
            raise AccuracyDataError(
                f"{path}: column '{column}' row {row} = {values[column][row]} is not a count out of n={n} "
                f"({products[row]:.4f} correct)"
            )
        correct[f"{column}_correct"] = np.round(products).astype(int)
    # other columns of the file stay text, as pandas reads them
    other = {column: pd.array(cells[column], dtype="str") for column in header if column not in values}
    columns = {
        "subsample": np.arange(len(body)),
        **{c: values.get(c, other.get(c)) for c in header},
        **correct,
    }
    return pd.DataFrame(columns)


def load(
    root: Path | Sequence[Path],
    collection: str | None = None,
    m: int | None = None,
    n: int | None = None,
    lm_types: list[str] | None = None,
) -> pd.DataFrame:
    """Load every matching file under `root` (or several roots laid over each other: `discover_roots`) into one
    frame; files of one (collection, m, n, dataset) must have equal row counts across LM types."""
    roots = [Path(root)] if isinstance(root, str | Path) else [Path(r) for r in root]
    files = discover_roots(roots)
    for column, value in (("collection", collection), ("m", m), ("n", n)):
        if value is not None:
            files = files[files[column] == value]
    if lm_types is not None:
        files = files[files.lm_type.isin(lm_types)]
    if files.empty:
        where = " or ".join(str(r) for r in roots)
        raise FileNotFoundError(
            f"no accuracies.csv under {where} for collection={collection} m={m} n={n} lm_types={lm_types}"
        )
    frames = [_parsed(Path(path), n) for path, n in zip(files.path, files.n, strict=True)]
    rows = np.array([len(frame) for frame in frames])
    data = pd.concat(frames, ignore_index=True)
    # each file's identity on each of its rows (the columns lead, dataset first, as the tables list them)
    identity = {
        key: np.repeat(files[key].to_numpy(), rows) for key in ("dataset", "lm_type", "n", "m", "collection")
    }
    for position, (key, column) in enumerate(identity.items()):
        data.insert(position, key, pd.Series(column.tolist()))  # typed as pandas types the values
    data["path"] = pd.array(np.repeat(files.path.astype(str).to_numpy(), rows), dtype="str")
    sizes = data.groupby(["collection", "m", "n", "dataset", "lm_type"]).size()
    for (coll, m_, n_, dataset), per_lm in sizes.groupby(level=[0, 1, 2, 3]):
        if per_lm.nunique() > 1:
            paths = files[
                (files.collection == coll) & (files.m == m_) & (files.n == n_) & (files.dataset == dataset)
            ]
            listing = "; ".join(
                f"{p} has {per_lm[(coll, m_, n_, dataset, lm)]} rows"
                for lm, p in zip(paths.lm_type, paths.path, strict=True)
            )
            raise AccuracyDataError(
                f"unequal row counts for dataset {dataset} (m={m_}, n={n_}): {listing}; row k is subsample k for "
                "every LM type, so give each LM type's file the same number of rows (repetitions)"
            )
    return data


def configurations(data: pd.DataFrame) -> list[tuple[str, int, int]]:
    """The (collection, m, n) groups present, sorted."""
    return sorted({(c, int(m), int(n)) for c, m, n in zip(data.collection, data.m, data.n, strict=True)})


def model_counts(data: pd.DataFrame, column: str, counts: str) -> np.ndarray:
    """The counts of accuracy column `column` the §6.1 model is fitted to: accuracy × n rounded, or with
    `counts="truncate"` cast to an integer as the authors' `utils.accuracies_to_num_correct` does (0.57 × 100 =
    56.999… gives 56). Only the model reads this setting, so outputs that do not fit it do not depend on it."""
    if counts not in set(Counts):
        raise ValueError(f"counts = {counts!r}: expected one of {', '.join(Counts)}")
    products = data[column].to_numpy() * data["n"].to_numpy()
    return (np.trunc(products) if counts == Counts.truncate else np.round(products)).astype(int)


def paired_long(data: pd.DataFrame, effect: str, counts: str) -> pd.DataFrame:
    """One row per (lm_type, dataset, subsample, arm) with `correct` (`model_counts`) and `trials` for the model
    of §6.1; `treatment` is 0 for the control arm and 1 for the treatment arm of `effect`."""
    if effect not in EFFECTS:
        raise ValueError(f"effect must be one of {sorted(EFFECTS)}, got {effect!r}")
    control, treatment = EFFECTS[effect]
    keep = ["lm_type", "dataset", "subsample", "n"]
    arms = []
    for arm, column in enumerate((control, treatment)):
        part = data[keep].copy()
        part["treatment"] = arm
        part["correct"] = model_counts(data, column, counts)
        arms.append(part)
    long = pd.concat(arms, ignore_index=True).rename(columns={"n": "trials"})
    return long.sort_values(["dataset", "subsample", "lm_type", "treatment"], ignore_index=True)
