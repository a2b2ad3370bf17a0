"""Property-based tests of the raw-result loaders: corrupt one valid file at random.

The loader must either raise its own error naming the file, or return exactly what it returned for the clean file.
For lm-eval outputs "the loader" is what every analysis of training-on-the-test-task runs: `load_results` then
`scores.lookup` of each metric the analysis reads (which refuses a file without that metric), and "what it
returned" the rows of those metrics. The one allowance: a standard error the corrupted file does not give (key
removed, or lm-eval's "N/A") reads NaN; the loader is faithful to the file there, and no fit uses standard errors.

Corruptions: byte flips to bytes that cannot form another valid number (so a flip can never turn 0.61 into 0.71,
which no loader could tell from the truth), truncation, encodings, dropped / duplicated / renamed columns or keys,
and values replaced by strings, null, NaN, infinities or numbers outside the metric's range.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testtask.lm.results import AbsentResults, ResultsError, load_results
from testtask.lm.scores import BenchmarkSpec, check_gaps, lookup
from testtask.metric_ranges import metric_range
from testtask.pretrain_on_test.accuracies import COLUMNS, AccuracyDataError, load

SETTINGS = settings(max_examples=150, deadline=None)
# Bytes that are not digits, '.', '-', '+' or 'e': a flip to one of them can not make another valid number. JSON
# takes no space: there a space flipped onto a last digit ("0.612" -> "0.61 ") leaves a valid, shorter number.
FLIP_BYTES = [b"x", b"\xff", b"\x00", b" ", b";"]
JSON_FLIP_BYTES = [b"x", b"\xff", b"\x00"]
ENCODINGS = ["utf-16", "utf-16-le", "utf-32", "utf-8-sig", "latin-1", "cp1252"]
BAD_VALUES: list[Any] = [None, "high", "", "N/A", "nan", True, math.nan, math.inf, -math.inf, [], {}]


def _flip(raw: bytes, position: int, byte: bytes) -> bytes:
    return raw[:position] + byte + raw[position + 1 :]


# --- accuracies.csv -------------------------------------------------------------------------------------------

ROWS = [
    [0.5, 0.6, 0.62, 0.25, 4, 0.25],
    [0.4, 0.42, 0.5, 0.25, 4, 0.25],
    [0.12, 0.16, 0.2, 0.3, 4, 0.25],
    [0.9, 0.88, 0.94, 0.25, 4, 0.25],
]


def _csv_lines(rows: list[list[Any]]) -> list[list[str]]:
    return [list(COLUMNS)] + [[str(v) for v in row] for row in rows]


def _csv_text(lines: list[list[str]]) -> str:
    return "".join(",".join(line) + "\n" for line in lines)


CLEAN_CSV = _csv_text(_csv_lines(ROWS))
# Out-of-range (or, for the counted columns, not a count out of n=50) replacements per column.
OUT_OF_RANGE = {
    "base": ["1.5", "-0.1", "0.123"],
    "extra": ["1.5", "-0.1", "0.123"],
    "test": ["2", "-0.02", "0.011"],
    "majority": ["1.5", "-0.1"],
    "num_classes": ["0", "1", "2.5", "-3"],
    "majority_all": ["1.01", "-1"],
}
NOT_NUMBERS = ["", "abc", "nan", "NaN", "inf", "-inf", "1e400", " 0.5", "0.5 ", "N/A", "null", "TRUE", "0,5"]


@st.composite
def csv_corruption(draw) -> bytes:
    lines = _csv_lines(ROWS)
    raw = CLEAN_CSV.encode()
    kind = draw(st.sampled_from(["flip", "truncate", "encoding", "column", "cell", "line"]))
    if kind == "flip":
        return _flip(raw, draw(st.integers(0, len(raw) - 1)), draw(st.sampled_from(FLIP_BYTES)))
    if kind == "truncate":
        return raw[: draw(st.integers(0, len(raw) - 1))]
    if kind == "encoding":
        return CLEAN_CSV.encode(draw(st.sampled_from(ENCODINGS)))
    if kind == "column":
        col = draw(st.integers(0, len(COLUMNS) - 1))
        how = draw(st.sampled_from(["drop", "duplicate", "rename"]))
        if how == "drop":
            lines = [line[:col] + line[col + 1 :] for line in lines]
        elif how == "duplicate":
            lines = [line + [line[col]] for line in lines]
        else:
            name = draw(st.sampled_from(["x", "Base", f"{COLUMNS[col]} ", f" {COLUMNS[col]}", "", *COLUMNS]))
            if name == COLUMNS[col]:
                name = name.upper()
            lines[0][col] = name
        return _csv_text(lines).encode()
    if kind == "cell":
        row = draw(st.integers(1, len(lines) - 1))
        col = draw(st.integers(0, len(COLUMNS) - 1))
        lines[row][col] = draw(st.sampled_from(NOT_NUMBERS + OUT_OF_RANGE[COLUMNS[col]]))
        return _csv_text(lines).encode()
    # a line dropped or repeated: the file's row count no longer matches the other LM type's
    index = draw(st.integers(0, len(lines) - 1))
    if draw(st.booleans()):
        del lines[index]
    else:
        lines.insert(index, list(lines[index]))
    return _csv_text(lines).encode()


@pytest.fixture(scope="module")
def accuracies_tree(tmp_path_factory) -> tuple[Path, Path, pd.DataFrame]:
    root = tmp_path_factory.mktemp("accuracies")
    for lm in ("bert", "gpt2"):
        folder = root / "m50" / "n50" / lm / "ag_news"
        folder.mkdir(parents=True)
        (folder / "accuracies.csv").write_text(CLEAN_CSV)
    return root, root / "m50" / "n50" / "gpt2" / "ag_news" / "accuracies.csv", load(root)


@SETTINGS
@given(corrupted=csv_corruption())
def test_accuracies_loader_raises_naming_the_file_or_returns_the_clean_result(accuracies_tree, corrupted):
    root, target, clean = accuracies_tree
    target.write_bytes(corrupted)
    try:
        result = load(root)
    except AccuracyDataError as err:
        assert str(target) in str(err)
    else:
        pd.testing.assert_frame_equal(result, clean)
    finally:
        target.write_text(CLEAN_CSV)


# --- lm-eval output JSON --------------------------------------------------------------------------------------


def _mmlu_entry(acc: float, alias: str) -> dict:
    return {
        "alias": alias,
        "acc,none": acc,
        "acc_stderr,none": 0.012,
        "brier_score,none": 0.5,
        "brier_score_stderr,none": "N/A",
    }


MMLU = {
    "results": {
        "mmlu": _mmlu_entry(0.61, "mmlu"),
        "mmlu_anatomy": _mmlu_entry(0.55, " - anatomy"),
        "mmlu_virology": _mmlu_entry(0.44, " - virology"),
    },
    "group_subtasks": {"mmlu": ["mmlu_anatomy", "mmlu_virology"], "mmlu_anatomy": [], "mmlu_virology": []},
    "versions": {"mmlu": 2, "mmlu_anatomy": 1},
    "config": {"model": "hf", "model_args": "pretrained=/m", "batch_size": 1, "device": None, "limit": None},
}
GSM8K = {
    "results": {
        "gsm8k": {
            "alias": "gsm8k",
            "exact_match,strict-match": 0.505,
            "exact_match_stderr,strict-match": 0.0137,
            "exact_match,flexible-extract": 0.5087,
            "exact_match_stderr,flexible-extract": 0.0138,
        }
    },
    "group_subtasks": {"gsm8k": []},
    "n-shot": {"gsm8k": 5},
}
FILES = {"base/llama-2-7b-mmlu.json": MMLU, "e3/gsm8kaux/llama-2-7b-gsm8k.json": GSM8K}


# What an analysis reads from these files: benchmark specs as the analysis config defines them, and the stage.
def _spec(
    key: str, label: str, file: str, metric: str, aggregate: str, chance: float, finetune: str, higher: bool
):
    return BenchmarkSpec(
        key=key,
        label=label,
        file=file,
        metric=metric,
        aggregate=aggregate,
        chance=chance,
        finetune=finetune,
        suite="v1",
        higher_is_better=higher,
    )


SPECS = [
    (_spec("mmlu", "MMLU", "mmlu", "acc,none", "entries_mean", 0.25, "mmluaux", True), "base"),
    (_spec("mmlu_brier", "Brier", "mmlu", "brier_score,none", "own", 0.75, "mmluaux", False), "base"),
    (_spec("gsm8k", "GSM8K", "gsm8k", "exact_match,flexible-extract", "own", 0.0, "gsm8kaux", True), "e3"),
]
READ = {spec.metric_key for spec, _ in SPECS}


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a JSON tree (dict keys only)."""
    if not isinstance(node, dict):
        return []
    out = []
    for key, value in node.items():
        out.append((*prefix, key))
        out += _paths(value, (*prefix, key))
    return out


def _leaves(node: Any, prefix: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in _leaves(value, (*prefix, key))]
    return [prefix]


def _dump(node: Any, duplicate: tuple | None = None, indent: str = "") -> str:
    """JSON text like lm-eval's (indented); `duplicate`: the key path written twice in its object."""
    if not isinstance(node, dict):
        return json.dumps(node)
    inner = indent + "  "
    items = []
    for key, value in node.items():
        sub = duplicate[1:] if duplicate and duplicate[0] == key and len(duplicate) > 1 else None
        item = f"{inner}{json.dumps(key)}: {_dump(value, sub, inner)}"
        items.append(item)
        if duplicate and len(duplicate) == 1 and duplicate[0] == key:
            items.append(item)
    return "{\n" + ",\n".join(items) + "\n" + indent + "}" if items else "{}"


def _get(node: dict, path: tuple) -> Any:
    for key in path:
        node = node[key]
    return node


def _out_of_range(path: tuple) -> list[float]:
    """Numbers outside the range of the metric at `path` (negative for a standard error)."""
    key = path[-1]
    if "_stderr," in key:
        return [-0.1]
    bounds = metric_range(key) if "," in key else None
    return [] if bounds is None else [bounds[1] + 0.5, bounds[0] - 0.5]


@st.composite
def json_corruption(draw) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(FILES)))
    tree = json.loads(json.dumps(FILES[name]))
    raw = _dump(tree).encode()
    kind = draw(st.sampled_from(["flip", "truncate", "encoding", "drop", "duplicate", "rename", "value"]))
    if kind == "flip":
        return name, _flip(raw, draw(st.integers(0, len(raw) - 1)), draw(st.sampled_from(JSON_FLIP_BYTES)))
    if kind == "truncate":
        return name, raw[: draw(st.integers(0, len(raw) - 1))]
    if kind == "encoding":
        return name, _dump(tree).encode(draw(st.sampled_from(ENCODINGS)))
    path = draw(st.sampled_from(_paths(tree)))
    parent = _get(tree, path[:-1])
    if kind == "drop":
        del parent[path[-1]]
    elif kind == "duplicate":
        return name, _dump(tree, duplicate=path).encode()
    elif kind == "rename":
        old = path[-1]
        new = draw(
            st.sampled_from(["x", "x,none", old + " ", old.upper(), old.replace("none", "nonx"), *parent])
        )
        if new == old:
            new = old + "2"
        items = [(new if k == old else k, v) for k, v in parent.items()]
        if new in parent:  # renamed onto a sibling: both keys in the text
            return name, _dump(tree).replace(json.dumps(old) + ":", json.dumps(new) + ":", 1).encode()
        parent.clear()
        parent.update(items)
    else:
        leaf = draw(st.sampled_from(_leaves(tree)))
        _get(tree, leaf[:-1])[leaf[-1]] = draw(st.sampled_from(BAD_VALUES + _out_of_range(leaf)))
    return name, _dump(tree).encode()


def _stderr_given(text: bytes, benchmark: str, metric: str) -> bool:
    """Whether the (corrupted) file gives a standard error for `metric` of its own entry."""
    entry = json.loads(text.decode("utf-8"))["results"][benchmark]
    key = metric.replace(",", "_stderr,", 1)
    return key in entry and entry[key] != "N/A"


def _same_as_clean(result: pd.DataFrame, clean: pd.DataFrame, corrupted: bytes, name: str) -> None:
    """Exactly the clean table, except a standard error the corrupted file does not give reads NaN."""
    pd.testing.assert_frame_equal(result.drop(columns="stderr"), clean.drop(columns="stderr"))
    differ = ~((result["stderr"] == clean["stderr"]) | (result["stderr"].isna() & clean["stderr"].isna()))
    for row in result[differ].itertuples():
        assert row.file.endswith(name) and math.isnan(row.stderr), row
        assert not _stderr_given(corrupted, row.benchmark, row.metric), row


def read(root: Path) -> pd.DataFrame:
    """What an analysis gets: the rows of the metrics it reads, each looked up (a file lacking one is an error)."""
    table = load_results(root, absent=AbsentResults())
    for spec, stage in SPECS:
        check_gaps(lookup(table, spec, stage, ["llama-2-7b"], AbsentResults())[1].values(), spec.key)
    return table[table["metric"].isin(READ)].reset_index(drop=True)


@pytest.fixture(scope="module")
def lm_eval_tree(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    root = tmp_path_factory.mktemp("evaluations")
    for name, tree in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(_dump(tree))
    return root, read(root)


@SETTINGS
@given(corruption=json_corruption())
def test_lm_eval_loader_raises_naming_the_file_or_returns_the_clean_result(lm_eval_tree, corruption):
    root, clean = lm_eval_tree
    name, corrupted = corruption
    target = root / name
    target.write_bytes(corrupted)
    try:
        result = read(root)
    except ResultsError as err:
        assert str(target) in str(err)
    else:
        _same_as_clean(result, clean, corrupted, name)
    finally:
        target.write_text(_dump(FILES[name]))


def test_the_clean_files_load_as_expected(lm_eval_tree):
    _, clean = lm_eval_tree
    by = clean.set_index(["benchmark", "metric"])
    assert by.loc[("mmlu", "acc,none|entries_mean"), "value"] == pytest.approx((0.61 + 0.55 + 0.44) / 3)
    assert math.isnan(by.loc[("mmlu", "brier_score,none"), "stderr"])  # lm-eval's "N/A"
    assert by.loc[("gsm8k", "exact_match,flexible-extract"), "stderr"] == pytest.approx(0.0138)
    assert len(clean) == 3  # the metrics the analysis reads
