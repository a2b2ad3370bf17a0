"""train-before-test: the results loader (structure checks naming file and field) and the benchmark layout."""

from __future__ import annotations

import json
import math

import pytest

from testtask.context import InputsUnavailable
from testtask.train_before_test.inputs import ResultsFormatError, load_results, overlay
from testtask.train_before_test.layout import layout, present_corpora, present_downstream
from testtask.train_before_test.settings import Category, Perplexity, Regime

REGIMES = {
    "direct": Regime("direct_eval", "direct_eval_stderr", "Direct"),
    "train_before_test": Regime("train_before_test", "train_before_test_stderr", "TBT"),
}
CATEGORIES = {"A": Category("Alpha", ("a1", "a2")), "B": Category("B", ("b1",))}
PERPLEXITY = Perplexity(corpora=("wiki_2025",), higher_is_better=False, exclude_model_prefixes=())
LABELS = {"a1": "A-one"}


def _valid() -> dict:
    scores = {"a1": {"m1": 0.5, "m2": 0.6}, "a2": {"m1": 0.1, "m2": 0.3}, "b1": {"m1": 1, "m2": 0.2}}
    scores["wiki_2025"] = {"m1": 0.9}  # m2 has no perplexity
    errors = {b: {m: 0.01 for m in v} for b, v in scores.items()}
    errors["wiki_2025"] = {"m1": "N/A", "m2": None}
    return {
        "direct_eval": scores,
        "train_before_test": scores,
        "direct_eval_stderr": errors,
        "train_before_test_stderr": errors,
    }


def _write(tmp_path, data) -> object:
    path = tmp_path / "all_results.json"
    path.write_text(json.dumps(data))
    return path


def test_valid_file_becomes_frames_with_nan_for_absent_models_and_missing_errors(tmp_path):
    res = load_results(_write(tmp_path, _valid()), REGIMES)
    frame = res.scores["direct"]
    assert list(frame.index) == ["m1", "m2"]
    assert frame.loc["m2", "a2"] == 0.3
    assert math.isnan(frame.loc["m2", "wiki_2025"])  # absent model -> NaN
    assert math.isnan(res.stderr["direct"].loc["m1", "wiki_2025"])  # "N/A" -> NaN
    assert res.benchmarks() == {"a1", "a2", "b1", "wiki_2025"}


def test_a_run_laid_over_the_release_names_both_files(tmp_path):
    release = load_results(_write(tmp_path, _valid()), REGIMES)
    # the run scores a model the release lacks
    run = {field: {bench: {"m3": 0.4} for bench in scores} for field, scores in _valid().items()}
    (tmp_path / "run").mkdir()
    both = overlay(release, load_results(_write(tmp_path / "run", run), REGIMES))
    assert both.files == [tmp_path / "all_results.json", tmp_path / "run" / "all_results.json"]
    assert list(both.scores["direct"].index) == ["m1", "m2", "m3"]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.pop("train_before_test_stderr"), "field 'train_before_test_stderr' is missing"),
        (lambda d: d.__setitem__("direct_eval", [1, 2]), "field 'direct_eval' must map benchmark"),
        (lambda d: d["direct_eval"].__setitem__("a1", [0.5]), "field 'direct_eval.a1' must map model id"),
        (lambda d: d["direct_eval"]["a1"].__setitem__("m1", "high"), "'direct_eval.a1.m1' must be a number"),
        (lambda d: d["direct_eval"]["a1"].__setitem__("m1", None), "'direct_eval.a1.m1' is missing"),
        (lambda d: d["direct_eval"]["a1"].__setitem__("m1", True), "'direct_eval.a1.m1' must be a number"),
        (
            lambda d: d["direct_eval_stderr"]["b1"].__setitem__("m2", -0.1),
            "'direct_eval_stderr.b1.m2' is a negative",
        ),
        (lambda d: d["direct_eval_stderr"].pop("a2"), "field 'direct_eval_stderr' lacks benchmarks ['a2']"),
    ],
)
def test_malformed_files_name_the_file_and_the_field(tmp_path, mutate, expected):
    data = _valid()
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(ResultsFormatError) as err:
        load_results(path, REGIMES)
    assert expected in str(err.value)
    assert str(path) in str(err.value)


def test_not_json_and_absent_file(tmp_path):
    path = tmp_path / "all_results.json"
    path.write_text("{not json")
    with pytest.raises(ResultsFormatError, match="not valid JSON"):
        load_results(path, REGIMES)
    with pytest.raises(InputsUnavailable):
        load_results(tmp_path / "nothing.json", REGIMES)
    with pytest.raises(ResultsFormatError, match="top level must be an object"):
        load_results(_write(tmp_path, [1, 2]), REGIMES)


def test_perplexity_corpora_never_enter_the_downstream_benchmarks(tmp_path):
    res = load_results(_write(tmp_path, _valid()), REGIMES)
    lay = layout(CATEGORIES, PERPLEXITY, LABELS)
    present, missing = present_downstream(res, lay)
    assert present == ["a1", "a2", "b1"] and missing == []
    assert "wiki_2025" not in present
    assert present_corpora(res, lay) == ["wiki_2025"]
    assert lay.label("a1") == "A-one" and lay.label("a2") == "a2"
    assert lay.category_of("b1") == "B"


def test_layout_rejects_a_corpus_listed_as_benchmark_and_duplicates():
    bad = {"A": Category("A", ("a1", "wiki_2025"))}
    with pytest.raises(ValueError, match="both downstream benchmarks and perplexity corpora"):
        layout(bad, PERPLEXITY, LABELS)
    dup = {"A": Category("A", ("a1",)), "B": Category("B", ("a1",))}
    with pytest.raises(ValueError, match="more than once"):
        layout(dup, PERPLEXITY, LABELS)


def test_too_few_benchmarks_or_no_corpus_is_unavailable(tmp_path):
    data = _valid()
    for field in ("direct_eval", "direct_eval_stderr"):
        for bench in ("a2", "b1", "wiki_2025"):
            data[field].pop(bench)
    res = load_results(_write(tmp_path, data), REGIMES)
    lay = layout(CATEGORIES, PERPLEXITY, LABELS)
    with pytest.raises(
        InputsUnavailable,
        match=r"all_results.json: only 1 of the 3 downstream benchmarks of train_before_test.categories are in every regime",
    ):
        present_downstream(res, lay)
    with pytest.raises(InputsUnavailable, match="none of the perplexity corpora"):
        present_corpora(res, lay)
