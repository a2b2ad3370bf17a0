"""The report's first section, per paper: how many claims match under the authors' code and under the paper's
text, then one line per claim that does not match, grouped by its ledger category (ledger.CATEGORIES order).

A claim whose verdict differs between the two presets is a text-vs-code finding even without a category. Ledger
errors: a claim that does not match for a reason a category must explain (`needs_category`) and has none is
`uncategorized` (the user's own claims need none); one whose category's evidence does not hold against our value
(report/evidence.py) is `unsupported`. Outputs not built and inputs absent from this copy are no findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from testtask.report import evidence, rules
from testtask.report.evaluate import MATCHES, NOT_COMPUTABLE, STATUSES, Verdict, counts
from testtask.report.ledger import CATEGORIES, TEXT_VS_CODE, Claim, thaw

UNCATEGORIZED, UNSUPPORTED = "uncategorized", "unsupported"
#: the sections of a paper's findings, in the order the report shows them
SECTIONS = (*CATEGORIES, UNSUPPORTED, UNCATEGORIZED)
ERRORS = (UNSUPPORTED, UNCATEGORIZED)  # the sections that are ledger errors
TITLES = {
    "text-vs-code": "The paper's text and the authors' code disagree",
    "inconsistent": "The paper disagrees with itself",
    "release-gap": "The release lacks inputs the paper used",
    "implementation": "Our implementation differs from the authors'",
    "misrounded": "The paper rounds the authors' own output in steps",
    "within-error": "Within rounding or Monte Carlo error",
    "unexplained": "Unexplained",
    UNSUPPORTED: "A category whose evidence does not hold (ledger error: fix the category)",
    UNCATEGORIZED: "Without a category (ledger error: add one to the claim)",
}


def needs_category(v: Verdict) -> bool:
    """Whether `v` (under the authors' code) differs, or is not computable with every output and input present."""
    return v.status != MATCHES and not (v.status == NOT_COMPUTABLE and (v.unbuilt or v.missing))


@dataclass(frozen=True)
class Line:
    """One finding: a claim, its verdicts under both presets and why it does not match."""

    claim: Claim
    authors: Verdict
    text: Verdict | None  # under protocol=paper_text (None: the paper has one protocol, or not built)
    section: str
    why: str

    @property
    def anchor(self) -> str:
        return self.claim.id


@dataclass(frozen=True)
class PaperFindings:
    paper: str
    authors: dict[str, int]  # verdict counts under the authors' code
    text: dict[str, int] | None  # under the paper's text (None: not evaluated)
    sections: dict[str, list[Line]] = field(default_factory=dict)

    @property
    def uncategorized(self) -> list[Line]:
        return self.sections.get(UNCATEGORIZED, [])

    @property
    def unsupported(self) -> list[Line]:
        return self.sections.get(UNSUPPORTED, [])

    def as_dict(self) -> dict:
        return {
            "counts_authors": self.authors,
            "counts_paper_text": self.text,
            **{
                section: [
                    {
                        "id": line.claim.id,
                        "where": line.claim.where,
                        "authors": line.authors.status,
                        "paper_text": line.text.status if line.text else None,
                        "why": line.why,
                    }
                    for line in lines
                ]
                for section, lines in self.sections.items()
            },
        }


def _why_presets(paper: str, authors: Verdict) -> str:
    only = "the authors' code" if authors.status == MATCHES else "the paper's text"
    return f"matches only under {only}: the settings that differ are in docs/protocols/{paper}-analysis.md"


def collect(
    paper: str,
    verdicts: Sequence[Verdict],
    text: Sequence[Verdict] | None = None,
    own: frozenset[str] = frozenset(),
    categorize: bool = True,
) -> PaperFindings:
    """The findings of `paper` from its verdicts under the authors' code and (when evaluated) the paper's text;
    `own`: the user's own claims' ids; `categorize=False` (our own runs: categories are about the release) lists
    no claim as uncategorized."""
    by_id = {v.claim.id: v for v in text} if text is not None else {}
    sections: dict[str, list[Line]] = {s: [] for s in SECTIONS}
    for v in verdicts:
        t = by_id.get(v.claim.id)
        category = v.claim.category
        presets_disagree = t is not None and MATCHES in (v.status, t.status) and v.status != t.status
        wrong = (
            evidence.problem(category, v.value, thaw(v.claim.paper))
            if category is not None and v.status != NOT_COMPUTABLE
            else None
        )
        if wrong is not None:
            sections[UNSUPPORTED].append(Line(v.claim, v, t, UNSUPPORTED, wrong))
        elif category is not None and (
            v.status != MATCHES or (presets_disagree and category.kind == TEXT_VS_CODE)
        ):
            sections[category.kind].append(Line(v.claim, v, t, category.kind, category.summary()))
        elif presets_disagree and not (v.status == NOT_COMPUTABLE or t.status == NOT_COMPUTABLE):
            sections[TEXT_VS_CODE].append(Line(v.claim, v, t, TEXT_VS_CODE, _why_presets(paper, v)))
        elif categorize and category is None and needs_category(v) and v.claim.id not in own:
            sections[UNCATEGORIZED].append(Line(v.claim, v, t, UNCATEGORIZED, _uncategorized(v)))
    # a claim the authors' code does not reproduce first, then those only the text's settings miss
    sections[TEXT_VS_CODE].sort(key=lambda line: line.authors.status == MATCHES)
    return PaperFindings(
        paper,
        counts(list(verdicts)),
        counts(list(text)) if text is not None else None,
        {s: lines for s, lines in sections.items() if lines},
    )


def _uncategorized(v: Verdict) -> str:
    if v.status == NOT_COMPUTABLE:
        return f"not computable: {v.reason}"
    return f"differs by {v.difference}" if v.difference else "differs"


def headline(f: PaperFindings) -> str:
    """`75 of 100 claims match under the authors' code (54 under the paper's text)`."""
    total = sum(f.authors[s] for s in STATUSES)
    text = f" ({f.text[MATCHES]} under the paper's text)" if f.text is not None else ""
    return f"{f.authors[MATCHES]} of {total} claims match under the authors' code{text}"


def shown(line: Line) -> str:
    """The paper's value and ours (under each preset evaluated), for one finding's line."""
    paper = rules.fmt(thaw(line.claim.paper))
    ours = line.authors.ours if line.authors.ours is not None else "—"
    if line.text is None or line.text.ours == line.authors.ours:
        return f"paper {paper}; ours {ours}"
    text = line.text.ours if line.text.ours is not None else "—"
    return f"paper {paper}; ours {ours} (authors' code), {text} (paper's text)"
