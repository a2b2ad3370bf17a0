"""A model an analysis leaves out for a listed reason is said once per command, not once per panel: the
release's missing Qwen2 results otherwise filled a `make figures tables` log with hundreds of the same lines."""

from __future__ import annotations

import logging

import pytest

from testtask.lm import scores
from testtask.lm.results import ResultsError
from testtask.lm.scores import Gap, check_gaps

REASON = "in Appendix B.1, but the release holds no result file for it"


def _gap(model: str, benchmark: str, reason: str | None = REASON) -> Gap:
    return Gap(model, benchmark, "base", None, "harness", None, reason)


def test_a_listed_gap_is_a_warning_the_first_time_and_debug_after(caplog, monkeypatch):
    monkeypatch.setattr(scores, "_SAID", set())
    caplog.set_level(logging.DEBUG, logger=scores.log.name)
    first = [_gap("qwen2-7b", "mmlu")]
    assert check_gaps(first, "mmlu panel") == first
    check_gaps([_gap("qwen2-7b", "gsm8k")], "gsm8k panel")
    check_gaps([_gap("qwen2-1.5b", "mmlu")], "mmlu panel")
    check_gaps([_gap("qwen2-7b", "mmlu", "another reason")], "mmlu panel")
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == scores.log.name]
    assert [level for level, _ in said] == [logging.WARNING, logging.DEBUG, logging.WARNING, logging.WARNING]
    assert said[0][1].startswith(f"mmlu panel: leaving out qwen2-7b (no base/qwen2-7b-mmlu.json): {REASON}")
    assert said[1][1] == f"gsm8k panel: leaving out qwen2-7b (no base/qwen2-7b-gsm8k.json): {REASON}"
    assert "qwen2-1.5b" in said[2][1] and "another reason" in said[3][1]


def test_an_unlisted_gap_is_still_an_error_after_a_listed_one(monkeypatch):
    monkeypatch.setattr(scores, "_SAID", set())
    check_gaps([_gap("qwen2-7b", "mmlu")], "mmlu panel")
    with pytest.raises(ResultsError, match="not listed under absent_results"):
        check_gaps([_gap("qwen2-7b", "mmlu", None)], "mmlu panel")
