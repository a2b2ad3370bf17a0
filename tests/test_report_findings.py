"""The report's findings: both presets side by side, every non-matching claim by category, the first
section of the page; an uncategorized difference on the authors' release is a ledger error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markupsafe import escape

from tests.test_report import DOC, _claim, _write
from testtask.report import evaluate, findings, ledger, provenance, render

GAP = {"kind": "release-gap", "missing": ["few/m100 of every dataset"]}
TEXT = {"kind": "text-vs-code", "text": "§6.1: Y = n · acc", "code": "a/b@c:utils.py:9: truncates"}


def _folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The toy sidecar under the authors' preset and (another boost) under the paper's text."""
    authors = tmp_path / "figures" / "toy" / "published"
    text = tmp_path / "figures" / "toy" / "published.paper_text"
    for folder, boost in ((authors, 0.04127), (text, 0.0431)):
        folder.mkdir(parents=True)
        doc = json.loads(json.dumps(DOC))
        doc["rows"][0]["boost_mean"] = boost
        (folder / "table-1.json").write_text(json.dumps(doc))
    data = tmp_path / "data" / "toy"
    (data / "few" / "m50").mkdir(parents=True)
    return authors, text, data


def _claims() -> list[dict]:
    return [
        _claim(id="t.match"),  # 4.1 under the authors' code, 4.3 under the text: a text-vs-code finding
        _claim(id="t.gap", paper=4.2, category=GAP),  # differs, categorized
        _claim(id="t.text", paper=4.3, category=TEXT),  # differs under the code, matches under the text
        _claim(id="t.bare", paper=4.0),  # differs, no category: a ledger error
        _claim(id="t.unbuilt", ours={"output": "figure-3", "path": "x"}),  # not built: no finding
        _claim(id="t.absent", needs=["few/m100"]),  # input absent from this copy: no finding
        _claim(id="t.own", paper=3.9),  # the user's own claim: never uncategorized
    ]


def _evaluate(tmp_path: Path):
    authors, text, data = _folders(tmp_path)
    loaded = ledger.load(_write(tmp_path, _claims()))
    return (
        loaded,
        evaluate.evaluate(loaded, authors, data),
        evaluate.evaluate(loaded, text, data),
        authors,
    )


def test_every_non_matching_claim_is_found_under_its_category(tmp_path):
    _, verdicts, text, _ = _evaluate(tmp_path)
    found = findings.collect("toy", verdicts, text, own=frozenset({"t.own"}))
    ids = {section: [line.claim.id for line in lines] for section, lines in found.sections.items()}
    assert ids == {
        "text-vs-code": ["t.text", "t.match"],  # the one the code does not reproduce first
        "release-gap": ["t.gap"],
        "uncategorized": ["t.bare"],
    }
    assert found.authors == {"matches": 1, "differs": 4, "not computable": 2}
    assert found.text == {"matches": 1, "differs": 4, "not computable": 2}
    categorized, auto = found.sections["text-vs-code"]
    assert auto.why == (
        "matches only under the authors' code: the settings that differ are in docs/protocols/toy-analysis.md"
    )
    assert categorized.why.startswith("text: §6.1: Y = n · acc; authors' code: a/b@c:utils.py:9")
    assert (
        findings.headline(found) == "1 of 7 claims match under the authors' code (1 under the paper's text)"
    )
    assert findings.shown(found.sections["release-gap"][0]) == (
        "paper 4.2; ours 4.1 (exact 4.127) (authors' code), 4.3 (exact 4.310) (paper's text)"
    )
    # our own runs: the categories are about the authors' release, nothing is uncategorized
    assert "uncategorized" not in findings.collect("toy", verdicts, text, categorize=False).sections


def test_the_page_opens_with_the_findings_and_shows_both_verdicts(tmp_path):
    loaded, verdicts, text, authors = _evaluate(tmp_path)
    found = findings.collect("toy", verdicts, text)
    report = render.PaperReport("toy", verdicts, authors, loaded.file, text=text, findings=found)
    prov = provenance.Provenance("abc123", False, "testtask action=report", "now", tmp_path / "figures")
    page, md = render.write([report], prov, tmp_path / "report")
    html = page.read_text()
    start = html.index('<section id="findings">')
    assert start < html.index("<h2>Provenance</h2>") < html.index('<h2 id="toy">')
    assert escape("1 of 7 claims match under the authors' code (1 under the paper's text)") in html
    assert '<a href="#t.gap">' in html and '<tr id="t.gap">' in html  # the line links to its claim
    assert "The release lacks inputs the paper used (1)" in html
    assert "the release lacks few/m100 of every dataset" in html
    assert "Without a category (ledger error: add one to the claim) (2)" in html  # t.bare and t.own
    text_md = md.read_text()
    assert text_md.index("## Findings") < text_md.index("## Provenance")
    assert "| paper | matches (authors' code) |" in text_md


def test_a_report_run_evaluates_both_presets_and_refuses_uncategorized_claims(tmp_path, monkeypatch):
    """`testtask action=report` on the real pipeline: both folders read, both verdicts in report.json, and a
    differing claim without a category is an error once the page is written."""
    from tests.conftest import stamp_release
    from tests.test_source_separation import PAPER, _cfg
    from tests.training_on_the_test_task.test_figures import make_tree
    from testtask.pipeline import build, run

    root = tmp_path / "sources"

    make_tree(root / "published" / PAPER, seed=0)
    stamp_release(root / "published" / PAPER)
    (root / "results").mkdir()
    build(_cfg(root, "source=published"), "figure", [1])
    build(_cfg(root, "source=published", "protocol=paper_text"), "figure", [1])
    with pytest.raises(ledger.LedgerError) as err:
        run(_cfg(root, "action=report", "source=published"))
    assert "field 'category'" in str(err.value) and "the report is written" in str(err.value)
    summary = json.loads((root / "report" / "published" / "report.json").read_text())
    claims = {c["id"]: c for c in summary["papers"][PAPER]["claims"]}
    theta = claims["tott.fig1.mmlu.theta"]
    assert theta["status"] in ("matches", "differs") and theta["paper_text"]["status"] in (
        "matches",
        "differs",
    )
    assert summary["papers"][PAPER]["counts_paper_text"] is not None
    assert summary["uncategorized"][PAPER]  # the toy release differs from the paper everywhere
    # listed, not raised, when asked
    listed = run(_cfg(root, "action=report", "source=published", "report.require_categories=false"))
    # the report composes each preset's configuration from its own command line: given under the text's preset,
    # it judges the same claims the same way
    again = run(
        _cfg(
            root,
            "action=report",
            "source=published",
            "report.require_categories=false",
            "protocol=paper_text",
        )
    )
    assert again["papers"][PAPER]["claims"] == listed["papers"][PAPER]["claims"]


def test_a_claim_the_release_cannot_feed_waits_for_no_build(tmp_path):
    """Figures 9 and 20 of training-on-the-test-task cannot be built from the release (release-gap): the notice
    does not tell the reader to build them; an unbuilt output of any other claim is named."""
    from testtask.report import unbuilt

    authors, _, data = _folders(tmp_path)
    claims = [
        _claim(id="t.gap", ours={"output": "figure-9", "path": "x"}, category=GAP),
        _claim(id="t.wait", ours={"output": "figure-3", "path": "x"}),
    ]
    verdicts = evaluate.evaluate(ledger.load(_write(tmp_path, claims)), authors, data)
    waiting = unbuilt.collect("toy", "published", verdicts)
    assert waiting is not None and waiting.files == ("figure-3.json",) and waiting.claims == 1
    only_gap = unbuilt.collect("toy", "published", verdicts[:1])
    assert only_gap is None


def test_a_variants_own_command_is_named_for_the_preset_it_is_missing_under():
    from testtask.report import unbuilt

    command = "make figure-12 PAPER=p ARGS='x.rule=leader figures_dir=figures/variants/v'"
    waiting = [
        unbuilt.Unbuilt("p", "published", (), 1, "authors", (command,)),
        unbuilt.Unbuilt("p", "published", (), 1, "paper_text", (command,)),
    ]
    assert unbuilt.notice(waiting)[1:] == [
        command,
        "make figure-12 PAPER=p ARGS='protocol=paper_text x.rule=leader figures_dir=figures/variants/v'",
    ]
