"""The claim categories' acceptance test on the releases the offline mirror holds whole (training-on-the-test-task,
train-before-test, and proxy-tasks, which reads those two): `make data figures tables report` under both presets,
and every claim that does not match under the authors' code has a category (the report raises a LedgerError
otherwise). pretrain-on-test's complete release is larger than the mirror (m = 100): its claims on the absent parts
are not computable here, which needs no category (docs/data.md: reading its complete release offline, on which
`make figures tables report PAPER=pretrain-on-test` makes the same check)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import tmp_config
from testtask.pipeline import NothingBuilt, run

PAPERS = ("training-on-the-test-task", "train-before-test", "proxy-tasks")


@pytest.mark.slow
@pytest.mark.parametrize("paper", PAPERS)
def test_every_claim_that_does_not_match_on_the_release_has_a_category(
    tmp_path, real_mirror, monkeypatch, paper
):
    monkeypatch.setenv("TESTTASK_DATA_MIRROR", str(real_mirror))
    run(tmp_config(tmp_path, "action=data", f"paper={paper}"))
    for preset in ("authors", "paper_text"):
        for kind in ("figures", "tables"):
            try:
                run(tmp_config(tmp_path, f"action={kind}", f"paper={paper}", f"protocol={preset}"))
            except NothingBuilt:  # a paper with no tables, or one protocol only
                pass
    summary = run(
        tmp_config(tmp_path, "action=report", f"paper={paper}", f"report.out_dir={tmp_path / 'report'}")
    )
    assert summary["uncategorized"] == {}
    assert summary["unsupported"] == {}  # every category's evidence holds against our values
    assert summary["unresolved_notes"] == {}  # every number a note quotes is read from the outputs
    found = summary["papers"][paper]["findings"]
    unexplained = found.get("unexplained", [])
    assert len(unexplained) <= 2, json.dumps(unexplained, indent=1)
    page = (tmp_path / "report" / "published" / paper / "index.html").read_text()  # one paper's own folder
    assert page.index('<section id="findings">') < page.index("<h2>Provenance</h2>")
