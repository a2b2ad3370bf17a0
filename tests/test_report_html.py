"""The report's page is written by Jinja templates that escape every value: a user's own claims file
(conf/user/claims/<paper>.yaml) reaches the page, and nothing in it may become markup."""

from __future__ import annotations

import dataclasses
import importlib.resources
import tomllib
from fnmatch import fnmatch
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import pytest
import yaml
from PIL import Image

from testtask.report import evaluate, findings, provenance, render, templating
from testtask.report.main import own_claims

PAPER = "train-before-test"
SCRIPT = '<script>alert(1)</script> "quotes" & ampersands'
ATTRIBUTE = 'x" onerror="alert(1)'  # a figure name that would end the attribute it is written into


class _Parsed(HTMLParser):
    """The page as a browser reads it: its tags with their attributes, and its text."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _page_with_own_claims(tmp_path: Path) -> str:
    """The page of a paper whose only claims are the user's own, every text field of them hostile."""
    claims = [
        {
            "id": "own.script",
            "where": SCRIPT,
            "statement": SCRIPT,
            "paper": SCRIPT,  # the paper's words
            "ours": {"output": "figure-3", "path": "x"},
            "rule": {"kind": "significance", "alpha": 0.05},
            "note": SCRIPT,
            "category": {"kind": "unexplained", "tried": SCRIPT, "shown_by": SCRIPT},
        },
        {
            "id": "own.attribute",
            "where": "Figure 4",
            "statement": "a claim shown beside a built figure",
            "paper": 1,
            "ours": {"output": "figure-4", "path": "x"},
            "rule": {"kind": "equal"},
        },
    ]
    user = tmp_path / "user"
    (user / "claims").mkdir(parents=True)
    file = user / "claims" / f"{PAPER}.yaml"
    file.write_text(
        yaml.safe_dump({"paper": PAPER, "source": "published", "claims": claims}, sort_keys=False)
    )
    loaded = own_claims(PAPER, None, user)
    figures = tmp_path / "figures"
    figures.mkdir()
    Image.new("RGB", (4, 4), "white").save(figures / f"{ATTRIBUTE}.png")
    verdicts = evaluate.evaluate(loaded, figures, tmp_path / "data")
    # the ledger allows only plain output names; the page must not rely on that
    figure = {"own.script": SCRIPT, "own.attribute": ATTRIBUTE}
    verdicts = [
        dataclasses.replace(v, claim=dataclasses.replace(v.claim, figure=figure[v.claim.id]))
        for v in verdicts
    ]
    found = findings.collect(PAPER, verdicts, verdicts, own=frozenset(figure))
    report = render.PaperReport(PAPER, verdicts, figures, file, text=verdicts, findings=found)
    prov = provenance.Provenance("abc123", False, SCRIPT, "now", figures)
    return render.html_page([report], prov, tmp_path / "report", notice=(SCRIPT, SCRIPT))


def test_a_users_claim_text_is_escaped_on_the_page(tmp_path):
    page = _page_with_own_claims(tmp_path)
    assert "<script>" not in page and "alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&amp; ampersands" in page
    parsed = _Parsed(page)
    assert "script" not in {tag for tag, _ in parsed.tags}
    text = "".join(parsed.text)
    # where, statement, paper value, note, category, the figure's heading, notice and findings: read as written
    assert text.count(SCRIPT) >= 8
    assert f"{SCRIPT} has not been built." in text


def test_a_figure_name_cannot_add_an_attribute_to_the_page(tmp_path):
    parsed = _Parsed(_page_with_own_claims(tmp_path))
    assert not any("onerror" in attributes for _, attributes in parsed.tags)
    (image,) = [attributes for tag, attributes in parsed.tags if tag == "img"]
    assert image == {"src": f"figures/{PAPER}/{ATTRIBUTE}.png", "alt": f"{PAPER} {ATTRIBUTE}"}
    assert (tmp_path / "report" / image["src"]).is_file()


def test_the_page_templates_ship_with_the_package():
    """The templates are found in the installed package, and pyproject's package data lists every one of them."""
    from testtask.paths import repo_root

    folder = importlib.resources.files("testtask.report") / templating.TEMPLATES
    names = {t.name for t in folder.iterdir() if t.is_file()}
    assert "report.html.j2" in names
    assert set(templating.environment().list_templates()) == names
    pyproject = tomllib.loads((repo_root() / "pyproject.toml").read_text())
    shipped = pyproject["tool"]["setuptools"]["package-data"]["testtask"]
    assert all(any(fnmatch(f"report/templates/{n}", pattern) for pattern in shipped) for n in names), names
    dependencies = {
        d.split(">")[0].split("=")[0].strip().lower() for d in pyproject["project"]["dependencies"]
    }
    assert "jinja2" in dependencies


def test_a_name_the_page_lacks_fails_the_page_instead_of_leaving_a_blank():
    with pytest.raises(jinja2.UndefinedError):
        templating.environment().from_string("<td>{{ row.ours }}</td>").render(row={})
