"""The report's findings: both presets side by side, every non-matching claim by category, the first
section of the page; an uncategorized difference on the authors' release is a ledger error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markupsafe import escape

from tests.test_report import DOC, _claim, _write
from testtask.report import evaluate, evidence, findings, ledger, provenance, render

GAP = {
    "kind": "release-gap",
    "missing": ["few/m100 of every dataset"],
    "toward": "m = 100 raises the boost",
    "shown_by": "ls few",
}
TEXT = {
    "kind": "text-vs-code",
    "text": "§6.1: Y = n · acc",
    "code": "a/b@c357810:utils.py:9: truncates",
    "shown_by": "make table-1 ARGS=protocol=paper_text",
}


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
    assert categorized.why.startswith("text: §6.1: Y = n · acc; authors' code: a/b@c357810:utils.py:9")
    assert (
        findings.headline(found) == "1 of 7 claims match under the authors' code (1 under the paper's text)"
    )
    assert findings.shown(found.sections["release-gap"][0]) == (
        "paper 4.2; ours 4.1 (4.127 before rounding) (authors' code), 4.3 (4.310 before rounding) (paper's text)"
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
    summary = json.loads((root / "report" / "published" / PAPER / "report.json").read_text())
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


# ---------------------------------------------------------------- a category is a claim about the cause


def _category(kind: str, **fields) -> ledger.Category:
    return ledger.Category(kind, ledger._frozen({"shown_by": "the command", **fields}))


ROUNDING = {"basis": "rounding"}
MONTE_CARLO = {"basis": "monte-carlo", "varies": "the draw is unseeded"}
SPREAD = {"observed_sd": 0.177, "null_sd_range": [0.137, 0.173]}


@pytest.mark.parametrize(
    ("kind", "fields", "ours", "paper", "problem"),
    [
        # rounding: within half a unit of the printed last digit, a tie on the half included
        ("within-error", {**ROUNDING, "printed": "0.18"}, 0.1848, 0.18, None),
        ("within-error", {**ROUNDING, "printed": "0.19"}, 0.1848, 0.19, "0.0052 from the printed 0.19"),
        (
            "within-error",
            {**ROUNDING, "printed": "6"},
            5.4625,
            6,
            "more than half a unit of its last digit (0.5)",
        ),
        ("within-error", {**ROUNDING, "printed": ["0.76", "0.78"]}, [0.765, 0.7803], [0.76, 0.78], None),
        ("within-error", {**ROUNDING, "printed": ["0.76", "0.78"]}, [0.7651, 0.78], [0.76, 0.78], "0.76"),
        ("within-error", {**ROUNDING, "printed": "0.002", "of": "gpqa"}, {"gpqa": 0.00214}, "x", None),
        ("within-error", {**ROUNDING, "printed": "0.002", "of": "gpqa"}, {"gpqa": 0.0026}, "x", "0.0006"),
        # Monte Carlo: within two stated standard errors of the paper's value, or of a path into ours
        ("within-error", {**MONTE_CARLO, "se": 2.22}, 44.6, 47, None),
        ("within-error", {**MONTE_CARLO, "se": 2.22}, 42.0, 47, "more than 2 standard errors (2 × 2.22)"),
        (
            "within-error",
            {**MONTE_CARLO, "se": 0.0075, "of": "observed_sd", "against": "null_sd_range[1]"},
            SPREAD,
            {"within_null_range": True},
            None,
        ),
        (
            "within-error",
            {**MONTE_CARLO, "se": 0.001, "of": "observed_sd", "against": "null_sd_range[1]"},
            SPREAD,
            {"within_null_range": True},
            "from ours' null_sd_range[1] 0.173",
        ),
        (
            "within-error",
            {**MONTE_CARLO, "se": 0.1},
            {"not_dominated": ["llama-2-70b"]},
            {"x": 1},
            "not a number",
        ),
        # misrounded: the stated steps give the printed value, which plain rounding does not
        (
            "misrounded",
            {"output": "a/b@80fd183:README.md:40", "printed": "0.19", "steps": [3]},
            0.1848,
            0.19,
            None,
        ),
        (
            "misrounded",
            {"output": "a/b@80fd183:README.md:40", "printed": "-0.39", "steps": [3]},
            -0.3848,
            -0.39,
            None,
        ),
        (
            "misrounded",
            {"output": "a/b@80fd183:README.md:40", "printed": "0.19", "steps": [3]},
            0.1838,
            0.19,
            "gives 0.18, not the printed 0.19",
        ),
        (
            "misrounded",
            {"output": "a/b@80fd183:README.md:40", "printed": "0.18", "steps": [3]},
            0.1801,
            0.18,
            "plain rounding",
        ),
        # the kinds whose evidence is not arithmetic on ours are checked for form by the ledger
        ("release-gap", {"missing": ["qwen2"], "toward": "newer"}, 0.068, 0.073, None),
    ],
)
def test_a_category_is_checked_against_our_value(kind, fields, ours, paper, problem):
    found = evidence.problem(_category(kind, **fields), ours, paper)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_a_category_whose_evidence_does_not_hold_is_a_ledger_error(tmp_path):
    """Ours is 4.127: 0.027 from a printed 4.1 (rounding holds), 0.073 from a printed 4.2 (it does not): the
    second claim is listed as unsupported, on the page as an error, and `report.require_categories` refuses it."""
    from types import SimpleNamespace

    from testtask.report import main

    authors, text, data = _folders(tmp_path)
    rounding = {"kind": "within-error", "basis": "rounding", "shown_by": "make table-1"}
    claims = [
        _claim(
            id="t.rounds",
            paper=4.12,
            rule={"kind": "round", "digits": 2},
            category={**rounding, "printed": "4.1"},
        ),
        _claim(id="t.does_not", paper=4.2, category={**rounding, "printed": "4.2"}),
    ]
    loaded = ledger.load(_write(tmp_path, claims))
    verdicts = evaluate.evaluate(loaded, authors, data)
    assert [v.status for v in verdicts] == ["differs", "differs"]
    found = findings.collect("toy", verdicts)
    ids = {section: [line.claim.id for line in lines] for section, lines in found.sections.items()}
    assert ids == {"within-error": ["t.rounds"], "unsupported": ["t.does_not"]}
    assert "ours 4.127 is 0.073 from the printed 4.2" in found.unsupported[0].why
    report = render.PaperReport("toy", verdicts, authors, loaded.file, findings=found)
    prov = provenance.Provenance("abc123", False, "testtask action=report", "now", tmp_path / "figures")
    page, _ = render.write([report], prov, tmp_path / "report")
    assert "A category whose evidence does not hold (ledger error: fix the category) (1)" in page.read_text()
    config = SimpleNamespace(report=SimpleNamespace(require_categories=True))
    with pytest.raises(ledger.LedgerError) as err:
        main._require_categories(config, [report])
    assert "claim t.does_not, field 'category': within-error (rounding)" in str(err.value)
