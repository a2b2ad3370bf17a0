"""Counts from accuracies: rounded for the descriptive outputs; for the §6.1 model either rounded (Y = n·acc, the
text) or cast to an integer as the authors' `utils.accuracies_to_num_correct` does (kddubey/pretrain-on-test@80fd183:
analysis/utils.py:69-79), which lowers a product just below a whole number by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import analysis_script
from testtask.pretrain_on_test.accuracies import model_counts, paired_long, read_accuracies

HEADER = "base,extra,test,majority,num_classes,majority_all\n"


def _frame(tmp_path: Path):
    path = tmp_path / "accuracies.csv"
    # 0.57 × 100 = 56.99999999999999 and 0.29 × 100 = 28.999999999999996 in floating point; 0.5 × 100 is exact.
    path.write_text(HEADER + "0.57,0.29,0.5,0.5,2,0.5\n0.5,0.5,0.5,0.5,2,0.5\n")
    frame = read_accuracies(path, 100)
    frame[["lm_type", "dataset", "n"]] = ["bert", "task", 100]
    return frame


def test_truncation_lowers_only_the_model_counts(tmp_path: Path) -> None:
    frame = _frame(tmp_path)
    assert frame.base_correct.tolist() == [57, 50] and frame.extra_correct.tolist() == [29, 50]
    assert model_counts(frame, "base", "truncate").tolist() == [56, 50]
    assert model_counts(frame, "extra", "truncate").tolist() == [28, 50]
    assert model_counts(frame, "test", "truncate").tolist() == [50, 50]


def test_rounding_keeps_the_exact_counts_for_the_model(tmp_path: Path) -> None:
    frame = _frame(tmp_path)
    assert model_counts(frame, "base", "round").tolist() == frame.base_correct.tolist() == [57, 50]


@pytest.mark.parametrize(("counts", "control"), [("truncate", [56, 50]), ("round", [57, 50])])
def test_the_model_reads_the_model_counts(tmp_path: Path, counts: str, control: list[int]) -> None:
    long = paired_long(_frame(tmp_path), "boost", counts)  # control: base, treatment: extra
    assert long[long.treatment == 0].correct.tolist() == control


def test_an_unknown_rule_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="counts = 'floor'"):
        paired_long(_frame(tmp_path), "boost", "floor")


def test_the_check_lists_the_counts_truncation_lowers_per_configuration(tmp_path: Path, capsys) -> None:
    """`analysis/pretrain_on_test_checks.py truncated-counts`, which the docs' counts of lowered counts quote."""
    checks = analysis_script("pretrain_on_test_checks")
    rows = {100: "0.57,0.29,0.5,0.5,2,0.5\n0.5,0.5,0.5,0.5,2,0.5\n", 50: "0.58,0.5,0.5,0.5,2,0.5\n"}
    for n, body in rows.items():
        for lm in ("bert", "gpt2"):
            folder = tmp_path / "accuracies_from_paper" / "m50" / f"n{n}" / lm / "task"
            folder.mkdir(parents=True)
            (folder / "accuracies.csv").write_text(HEADER + body)
    checks.truncated_counts(tmp_path)
    assert capsys.readouterr().out.splitlines() == [
        "accuracies_from_paper m = 50, n = 50: 2",
        "accuracies_from_paper m = 50, n = 100: 4",
        "in all: 6 of 18 counts one lower (base, extra, test)",
    ]
