"""The scripts in analysis/: each is listed in analysis/README.md with what it prints, and
analysis/compare_reports.py tells two reports' verdicts apart."""

from __future__ import annotations

import re

from tests.conftest import REPO, analysis_script, write_json

compare = analysis_script("compare_reports")


def test_every_script_is_listed_in_the_folders_readme():
    readme = (REPO / "analysis" / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(\w+)\.py\b", readme, re.M))
    scripts = {p.stem for p in (REPO / "analysis").glob("*.py")}
    assert scripts - listed == set(), "scripts without a row in analysis/README.md"
    assert listed - scripts == set(), "rows of analysis/README.md without a script"


def _report(status: str, ours: float, text_status: str | None = "matches") -> dict:
    claim = {"id": "fig3-beta", "status": status, "ours": ours}
    if text_status is not None:
        claim["paper_text"] = {"status": text_status, "ours": ours}
    other = {"id": "table1-n", "status": "matches", "ours": 100}
    return {"papers": {"pretrain-on-test": {"claims": [claim, other]}}}


def test_equal_reports_compare_equal(tmp_path, capsys):
    for name in ("old", "new"):
        write_json(tmp_path / name / "report.json", _report("matches", 0.232))
    assert compare.main(str(tmp_path / "old" / "report.json"), str(tmp_path / "new" / "report.json")) == 0
    assert "2 claims before, 2 after: 0 changed" in capsys.readouterr().out


def test_a_changed_verdict_value_or_paper_text_verdict_is_printed_and_fails(tmp_path, capsys):
    write_json(tmp_path / "old.json", _report("matches", 0.232))
    for new, shown in (
        (_report("differs", 0.232), "'differs'"),
        (_report("matches", 0.25), "0.25"),
        (_report("matches", 0.232, "differs"), "'differs'"),
        (_report("matches", 0.232, None), "None"),
    ):
        write_json(tmp_path / "new.json", new)
        assert compare.main(str(tmp_path / "old.json"), str(tmp_path / "new.json")) == 1
        out = capsys.readouterr().out
        assert "pretrain-on-test fig3-beta: ('matches', 0.232, 'matches', 0.232) -> (" in out and shown in out
        assert "table1-n" not in out and "1 changed" in out
