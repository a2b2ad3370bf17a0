"""No input can make an analysis silently wrong.

Before d6a26a1 the lm-eval loader of training-on-the-test-task dropped a model whose metric was missing, null, "N/A" or
NaN, and accepted an accuracy of 1.7 or -0.5; accuracies.csv took a duplicated column, failed with a bare
UnicodeDecodeError on UTF-16 or binary files, and gave no hint for a header with spaces. The same rule for the other
raw-result readers that feed figures: train-before-test's all_results.json and the proxy-tasks matrices.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest

from tests.conftest import write_json
from testtask.context import Context
from testtask.lm.models import ModelRegistry
from testtask.lm.results import ResultsError, load_results
from testtask.pipeline import compose
from testtask.pretrain_on_test.accuracies import AccuracyDataError, load, read_accuracies

PAPER = "training-on-the-test-task"
CSV_HEADER = "base,extra,test,majority,num_classes,majority_all"
CSV_ROWS = "0.5,0.6,0.62,0.25,4,0.25\n0.4,0.42,0.5,0.25,4,0.25\n"


# --- training-on-the-test-task: a small release of MMLU results for every base model -----------------------


def _entry(acc: float, alias: str) -> dict:
    return {
        "acc,none": acc,
        "acc_stderr,none": 0.01,
        "brier_score,none": 0.75 - 0.8 * (acc - 0.25),
        "brier_score_stderr,none": "N/A",
        "alias": alias,
    }


def mmlu_payload(acc: float) -> dict:
    """An lm-eval MMLU output: the group, one subject, group_subtasks naming both."""
    return {
        "results": {"mmlu": _entry(acc, "mmlu"), "mmlu_anatomy": _entry(acc - 0.02, " - anatomy")},
        "group_subtasks": {"mmlu": ["mmlu_anatomy"], "mmlu_anatomy": []},
        "versions": {"mmlu": 2},
    }


def tott_release(root: Path) -> Path:
    """data root of training-on-the-test-task: base and e3/mmluaux MMLU files of every base model that the
    authors' release has (the registry's qwen2 models have none there)."""
    models = [m for m in ModelRegistry.load().names("base") if not m.startswith("qwen2-")]
    evaluations = root / PAPER / "evaluations"
    for i, name in enumerate(models):
        acc = 0.3 + 0.005 * i
        write_json(evaluations / "base" / f"{name}-mmlu.json", mmlu_payload(acc))
        write_json(evaluations / "e3" / "mmluaux" / f"{name}-mmlu.json", mmlu_payload(acc + 0.05))
    return evaluations


def tott_context(root: Path, out: Path, absent: tuple[dict, ...] = ()) -> Context:
    """training-on-the-test-task's context as the pipeline builds it; `absent`: more entries of absent_results."""
    from testtask.pipeline import typed

    cfg = compose([f"paper={PAPER}"])
    listed = cfg.training_on_the_test_task.absent_results
    cfg.training_on_the_test_task.absent_results = [*listed, *absent]
    config = typed(cfg)
    return Context(
        paper=PAPER,
        source="published",
        data_root=root / PAPER,
        out_dir=out,
        sampler=config.sampler,
        seed=0,
        cache_dir=None,
        settings=config.training_on_the_test_task,
    )


def _figure_17(ctx: Context) -> dict:
    """MMLU ranks before and after fine-tuning: reads every model's base and e3 MMLU, fits nothing (fast)."""
    from testtask.training_on_the_test_task.comparison_figures import figure_17

    return figure_17(ctx)


def _corrupt(path: Path, entry: str, key: str, value) -> None:
    data = json.loads(path.read_text())
    if value is _DROP:
        del data["results"][entry][key]
        data["results"][entry].pop(key.replace(",", "_stderr,", 1), None)
    else:
        data["results"][entry][key] = value
    path.write_text(json.dumps(data))  # NaN is written as the JSON token NaN, as the authors' release has it


_DROP = object()


@pytest.mark.parametrize(
    ("entry", "value", "expected"),
    [
        ("mmlu", _DROP, "'results.mmlu.acc,none' is missing"),
        ("mmlu", None, "is None, not a number"),
        ("mmlu", "N/A", "is 'N/A', not a number"),
        ("mmlu", math.nan, "is nan, not a finite number"),
        ("mmlu", 1.7, "outside [0, 1]"),
        ("mmlu", -0.5, "outside [0, 1]"),
        ("mmlu_anatomy", None, "'results.mmlu_anatomy.acc,none' is None"),  # enters the mean over entries
    ],
    ids=["missing-key", "null", "N/A", "NaN", "1.7", "-0.5", "null-in-a-subject"],
)
def test_a_bad_lm_eval_metric_value_is_an_error_naming_file_and_field(tmp_path, entry, value, expected):
    """Today: the model silently leaves the fit (53 -> 52 models) or an impossible accuracy is fitted."""
    evaluations = tott_release(tmp_path / "published")
    path = evaluations / "base" / "pythia-410m-mmlu.json"
    _corrupt(path, entry, "acc,none", value)
    ctx = tott_context(tmp_path / "published", tmp_path / "out")
    with pytest.raises(ResultsError) as err:
        _figure_17(ctx)
    assert str(path) in str(err.value)
    assert expected in str(err.value)


def test_lm_eval_brier_score_outside_its_range_is_an_error(tmp_path):
    evaluations = tott_release(tmp_path / "published")
    path = evaluations / "e3" / "mmluaux" / "olmo-7b-mmlu.json"
    _corrupt(path, "mmlu", "brier_score,none", 2.5)
    with pytest.raises(ResultsError, match=r"outside \[0, 2\], the range of brier_score") as err:
        load_results(evaluations)
    assert str(path) in str(err.value) and "'results.mmlu.brier_score,none'" in str(err.value)


def test_loader_refuses_null_and_out_of_range_but_keeps_lm_eval_na_stderr(tmp_path):
    evaluations = tott_release(tmp_path / "published")
    table = load_results(evaluations)
    brier = table[table["metric"] == "brier_score,none"]
    assert brier["stderr"].isna().all() and brier["value"].notna().all()  # "N/A" stderr -> NaN, value kept
    path = evaluations / "base" / "yi-6b-mmlu.json"
    for value, expected in ((None, "not a number"), (1.7, "outside [0, 1]")):
        _corrupt(path, "mmlu_anatomy", "acc,none", value)
        with pytest.raises(ResultsError, match="results.mmlu_anatomy.acc,none") as err:
            load_results(evaluations)
        assert str(path) in str(err.value) and expected in str(err.value)


def test_a_model_left_out_is_named_in_the_log_and_the_sidecar(tmp_path, caplog, monkeypatch):
    """A result missing from the source stops the figure unless config lists it; a listed one is named."""
    evaluations = tott_release(tmp_path / "published")
    gone = evaluations / "e3" / "mmluaux" / "olmo-7b-mmlu.json"
    gone.unlink()
    ctx = tott_context(tmp_path / "published", tmp_path / "out")
    with pytest.raises(ResultsError, match=r"e3/mmluaux/olmo-7b-mmlu\.json"):
        _figure_17(ctx)
    listed = {
        "model": "olmo-7b",
        "benchmark": "mmlu",
        "stage": "e3",
        "finetune": "*",
        "steps": None,
        "reason": "not fine-tuned in this test",
    }
    ctx = tott_context(tmp_path / "published", tmp_path / "out", (listed,))
    with caplog.at_level(logging.WARNING):
        numbers = _figure_17(ctx)
    sidecar = json.loads((tmp_path / "out" / "figure-17.json").read_text())
    assert sidecar["excluded_models"] == numbers["excluded_models"]
    olmo = [r for r in sidecar["excluded_models"] if r["model"] == "olmo-7b"]
    assert olmo == [
        {
            "model": "olmo-7b",
            "benchmark": "mmlu",
            "stage": "e3",
            "finetune": "mmluaux",
            "suite": "v1",
            "step": None,
            "reason": "not fine-tuned in this test",
            "file": "e3/mmluaux/olmo-7b-mmlu.json",
        }
    ]
    assert "olmo-7b" not in {r["name"] for r in sidecar["ranks"]}
    assert any("olmo-7b" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_a_nan_in_an_lm_eval_file_is_read_only_where_config_lists_the_result(tmp_path):
    """The authors' release holds NaN for three TruthfulQA results (listed in config); elsewhere NaN is refused."""
    evaluations = tott_release(tmp_path / "published")
    path = evaluations / "e3" / "mmluaux" / "pythia-70m-mmlu.json"
    _corrupt(path, "mmlu", "acc,none", math.nan)
    with pytest.raises(ResultsError, match="not a finite number"):
        load_results(evaluations)
    from testtask.lm.results import AbsentResults

    listed = AbsentResults.from_config(
        [
            {
                "model": "pythia-70m",
                "benchmark": "mmlu",
                "stage": "e3",
                "finetune": "*",
                "steps": None,
                "reason": "NaN upstream",
            }
        ]
    )
    table = load_results(evaluations, absent=listed)
    row = table[
        (table["model"] == "pythia-70m") & (table["adjustment"] == "e3") & (table["metric"] == "acc,none")
    ]
    assert math.isnan(row["value"].iloc[0])


# --- pretrain-on-test: accuracies.csv -----------------------------------------------------------------------


def _csv(tmp_path: Path, content: bytes | str) -> Path:
    path = tmp_path / "m50" / "n50" / "gpt2" / "ag_news" / "accuracies.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_accuracies_csv_duplicated_column_is_an_error_naming_file_and_column(tmp_path):
    """Today: pandas renames the second `base` to `base.1` and the file is accepted."""
    rows = "".join(line + ",0.5\n" for line in CSV_ROWS.splitlines())
    path = _csv(tmp_path, f"{CSV_HEADER},base\n{rows}")
    with pytest.raises(AccuracyDataError) as err:
        read_accuracies(path, 50)
    assert str(path) in str(err.value) and "base appear more than once" in str(err.value)


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: text.encode("utf-16"),
        lambda text: text.encode("utf-16-le"),
        lambda text: bytes(range(256)) * 4,  # a binary file
        lambda text: text.encode() + "é\n".encode("latin-1"),  # a byte that is not UTF-8
    ],
    ids=["utf-16", "utf-16-le", "binary", "latin-1-byte"],
)
def test_accuracies_csv_non_utf8_or_binary_file_is_an_accuracy_data_error(tmp_path, encode):
    """Today: a bare UnicodeDecodeError (or a parser error) naming no file."""
    path = _csv(tmp_path, encode(f"{CSV_HEADER}\n{CSV_ROWS}"))
    with pytest.raises(AccuracyDataError) as err:
        read_accuracies(path, 50)
    assert str(path) in str(err.value) and "not a UTF-8 text CSV" in str(err.value)


def test_accuracies_csv_header_with_spaces_says_so(tmp_path):
    """Today: 'missing column(s) extra, test, ...' with no hint that the names carry spaces."""
    path = _csv(tmp_path, f"{CSV_HEADER.replace(',', ', ')}\n{CSV_ROWS}")
    with pytest.raises(AccuracyDataError) as err:
        read_accuracies(path, 50)
    assert str(path) in str(err.value) and "spaces around column names" in str(err.value)
    assert "' extra'" in str(err.value)


def test_accuracies_clean_file_still_reads(tmp_path):
    frame = read_accuracies(_csv(tmp_path, f"{CSV_HEADER}\n{CSV_ROWS}"), 50)
    assert list(frame["base_correct"]) == [25, 20] and list(frame["num_classes"]) == [4.0, 4.0]


def test_accuracies_read_again_are_the_files_bytes_now_and_a_fresh_frame(tmp_path):
    """A command reads a file once per content: the same bytes come from memory, edited bytes are read and checked
    again (an edit within the file system's timestamp resolution and of the same size included), and a caller
    that changes its frame changes no later read."""
    path = _csv(tmp_path, f"{CSV_HEADER}\n{CSV_ROWS}")
    first = read_accuracies(path, 50)
    first.loc[0, "base_correct"] = -1
    assert list(read_accuracies(path, 50)["base_correct"]) == [25, 20]
    loaded = load(tmp_path)
    loaded.loc[0, "base_correct"] = -1
    assert list(load(tmp_path)["base_correct"]) == [25, 20]
    path.write_text(f"{CSV_HEADER}\n{CSV_ROWS.replace('0.5,0.6', '0.7,0.6', 1)}")  # the same size
    assert list(read_accuracies(path, 50)["base_correct"]) == [35, 20]
    assert list(read_accuracies(path, 100)["base_correct"]) == [70, 40]  # n keys the counts too
    path.write_text(f"{CSV_HEADER}\n{CSV_ROWS.replace('0.5,0.6', '1.7,0.6', 1)}")
    with pytest.raises(AccuracyDataError, match="column 'base' row 0 = 1.7 is outside"):
        read_accuracies(path, 50)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (f"{CSV_HEADER}\n0.5,0.6,0.62,0.25,4,0.25\n0.4,0.42,0.5,0.25,4,0.2", "does not end with a newline"),
        (f"{CSV_HEADER}\n0.5,0.6,0.62,0.25,4\n", "row 0 has 5 field(s)"),
        (f"{CSV_HEADER}\n0.5,0.6, 0.62,0.25,4,0.25\n", "column 'test' row 0 is not a finite number"),
        (f"{CSV_HEADER}\n0.5,0.6,nan,0.25,4,0.25\n", "column 'test' row 0 is not a finite number"),
        (f"{CSV_HEADER}\n0.5,0.6,0.62,0.25,1,0.25\n", "'num_classes' row 0 = 1.0 is not a whole number"),
        (f"{CSV_HEADER}\n0.5,0.6,0.62,0.25,1e400,0.25\n", "'num_classes' row 0 is not a finite number"),
    ],
    ids=["truncated", "short-row", "spaced-cell", "nan", "one-class", "infinite-classes"],
)
def test_accuracies_other_edge_cases_name_file_and_field(tmp_path, content, expected):
    path = _csv(tmp_path, content)
    with pytest.raises(AccuracyDataError) as err:
        read_accuracies(path, 50)
    assert str(path) in str(err.value) and expected in str(err.value)


# --- the same rule for train-before-test's all_results.json and the proxy-tasks matrices -------------------


def _all_results(path: Path, score: float, bench: str = "hellaswag") -> Path:
    models = ["org/a", "org/b", "org/c", "org/d", "org/e", "org/f"]
    scores = {b: {m: 0.3 + 0.05 * i for i, m in enumerate(models)} for b in ("arc_easy", "hellaswag", "cola")}
    scores[bench]["org/c"] = score
    errors = {b: {m: 0.01 for m in models} for b in scores}
    path.write_text(json.dumps({"direct_eval": scores, "direct_eval_stderr": errors}))
    return path


@pytest.mark.parametrize(
    ("bench", "score", "expected"),
    [("hellaswag", 1.7, "outside [0, 1], the range of acc_norm"), ("cola", -1.5, "outside [-1, 1]")],
)
def test_train_before_test_scores_outside_their_metric_range_are_errors(tmp_path, bench, score, expected):
    from testtask.train_before_test.inputs import Regime, ResultsFormatError
    from testtask.train_before_test.inputs import load_results as tbt_load

    regimes = {"direct": Regime(field="direct_eval", stderr_field="direct_eval_stderr", label="Direct")}
    path = _all_results(tmp_path / "all_results.json", score, bench)
    with pytest.raises(ResultsFormatError) as err:
        tbt_load(path, regimes)
    assert str(path) in str(err.value) and f"direct_eval.{bench}.org/c" in str(err.value)
    assert expected in str(err.value)
    tbt_load(_all_results(path, -0.09, "cola"), regimes)  # an MCC may be negative


@pytest.mark.parametrize("score", [None, "N/A", 1.7])
def test_proxy_tasks_reader_refuses_a_missing_or_impossible_score(tmp_path, score):
    """Today the proxy reader turns null and "N/A" into NaN and drops the model without a word."""
    from testtask.proxy_tasks.matrices import train_before_test
    from testtask.proxy_tasks.settings import TrainBeforeTestReader

    path = _all_results(tmp_path / "all_results.json", score)
    reader = TrainBeforeTestReader(file="all_results.json", perplexity_tasks=[], perplexity="exclude")
    with pytest.raises(ValueError) as err:
        train_before_test(path, "k", "x", "direct_eval", reader)
    assert str(path) in str(err.value) and "direct_eval.hellaswag.org/c" in str(err.value)
