"""What the page's template shows, as plain text, numbers and paths (markup and escaping are the templates' job);
building it copies each figure beside the page, so that the page is self-contained."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from testtask.report import findings
from testtask.report.evaluate import DIFFERS, MATCHES, NOT_COMPUTABLE, STATUSES, Verdict, counts
from testtask.report.paper_report import (
    PaperReport,
    detail,
    groups,
    ours_shown,
    paper_value,
    provenance_rows,
    text_cell,
)
from testtask.report.provenance import Provenance

BADGE = {MATCHES: "match", DIFFERS: "differ", NOT_COMPUTABLE: "nc"}  # a status's CSS class
TABLE_LINES = 30  # of a table's Markdown shown beside its claims


@dataclass(frozen=True)
class Status:
    """A verdict's status and the CSS class of its badge."""

    label: str
    css: str


def _status(label: str) -> Status:
    return Status(label, BADGE[label])


@dataclass(frozen=True)
class FindingLine:
    anchor: str  # the id of the claim's row in the tables below
    where: str
    statement: str
    authors: Status
    text: Status | None  # None: not evaluated under the paper's text
    shown: str  # the paper's value and ours
    why: str


@dataclass(frozen=True)
class FindingsSection:
    title: str
    uncategorized: bool  # a ledger error, shown as one
    lines: list[FindingLine]


@dataclass(frozen=True)
class FindingsBlock:
    """One paper's findings: its headline, then the claims that do not match, by section."""

    paper: str
    headline: str
    single_protocol: bool
    waiting: int  # claims not computable only because an output is not built or an input is absent
    all_match: bool  # nothing to report
    sections: list[FindingsSection]


@dataclass(frozen=True)
class SummaryRow:
    paper: str
    has_ledger: bool
    authors: list[int]  # counts per status, in STATUSES order
    text: list[int] | None  # under the paper's text (None: the column says `text_column`)
    text_column: str


@dataclass(frozen=True)
class ClaimRow:
    id: str
    where: str
    statement: str
    paper: str
    ours: str
    status: Status
    detail: str
    text: Status | None  # None: no verdict under the paper's text, the cell says `text_shown`
    text_shown: str
    text_ours: str  # ours under the paper's text when it is not the authors'-code value


@dataclass(frozen=True)
class Output:
    """A figure or table (name None: claims shown beside no output) and the claims beside it."""

    name: str | None
    image: str | None  # relative to the page
    table: str | None  # the first TABLE_LINES of its Markdown, when there is no image
    claims: list[ClaimRow]


@dataclass(frozen=True)
class PaperSection:
    paper: str
    ledger_file: str | None  # None: the paper has no ledger yet
    counts: list[tuple[Status, int]]
    outputs: list[Output]
    user_files: str | None  # the user's own files its verdicts read, in words (None: none)


@dataclass(frozen=True)
class Page:
    notice: Sequence[str]  # a heading and the commands that build what is not built (empty: none)
    # what the outputs' provenance says a reader should know (report/provenance.Outputs)
    cautions: Sequence[str]
    findings: list[FindingsBlock]
    provenance: list[tuple[str, str]]
    statuses: Sequence[str]
    summary: list[SummaryRow]
    papers: list[PaperSection]


def page(reports: list[PaperReport], prov: Provenance, out_dir: Path, notice: Sequence[str] = ()) -> Page:
    """The page's data; copies the figures of `reports` into `out_dir`/figures/."""
    return Page(
        notice,
        prov.cautions(),
        [_findings(r, r.findings) for r in reports if r.findings is not None],
        provenance_rows(prov),
        STATUSES,
        [_summary_row(r) for r in reports],
        [_paper(r, out_dir) for r in reports],
    )


def _findings(r: PaperReport, f: findings.PaperFindings) -> FindingsBlock:
    waiting = f.authors[NOT_COMPUTABLE] - sum(
        1 for lines in f.sections.values() for x in lines if x.authors.status == NOT_COMPUTABLE
    )
    sections = [
        FindingsSection(
            findings.TITLES[section],
            section in findings.ERRORS,
            [_finding_line(line) for line in f.sections[section]],
        )
        for section in findings.SECTIONS
        if f.sections.get(section)
    ]
    return FindingsBlock(
        r.paper, findings.headline(f), r.single_protocol, waiting, not f.sections and not waiting, sections
    )


def _finding_line(line: findings.Line) -> FindingLine:
    return FindingLine(
        line.anchor,
        line.claim.where,
        line.claim.statement,
        _status(line.authors.status),
        _status(line.text.status) if line.text is not None else None,
        findings.shown(line),
        line.why,
    )


def _summary_row(r: PaperReport) -> SummaryRow:
    authors, text = counts(r.verdicts), counts(r.text) if r.text is not None else None
    return SummaryRow(
        r.paper,
        r.ledger_file is not None,
        [authors[s] for s in STATUSES],
        [text[s] for s in STATUSES] if text is not None else None,
        r.text_column(),
    )


def _paper(r: PaperReport, out_dir: Path) -> PaperSection:
    if r.ledger_file is None:
        return PaperSection(r.paper, None, [], [], None)
    c = counts(r.verdicts)
    outputs = []
    for name, verdicts in groups(r.verdicts):
        image = _copy_figure(r, name, out_dir) if name else None
        table = _table_text(r, name) if name and not image else None
        outputs.append(Output(name, image, table, [_claim_row(r, v) for v in verdicts]))
    return PaperSection(
        r.paper, str(r.ledger_file), [(_status(s), c[s]) for s in STATUSES], outputs, r.user_files()
    )


def _claim_row(r: PaperReport, v: Verdict) -> ClaimRow:
    text = text_cell(r, v)
    return ClaimRow(
        v.claim.id,
        v.claim.where,
        v.claim.statement,
        paper_value(v),
        ours_shown(v),
        _status(v.status),
        detail(v, r.text_verdict(v.claim.id)),
        _status(text.status) if text.status is not None else None,
        text.shown,
        text.ours,
    )


def _copy_figure(report: PaperReport, name: str, out_dir: Path) -> str | None:
    """Copy <name>.png into out_dir/figures/<paper>/ and return its relative path (None when not built)."""
    source = report.figures_dir / f"{name}.png"
    if not source.is_file():
        return None
    target_dir = out_dir / "figures" / report.paper
    target_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target_dir / source.name)
    return f"figures/{report.paper}/{source.name}"


def _table_text(report: PaperReport, name: str) -> str | None:
    source = report.figures_dir / f"{name}.md"
    if not source.is_file():
        return None
    lines = source.read_text(encoding="utf-8").splitlines()
    more = f"\n… {len(lines) - TABLE_LINES} more lines in {source.name}" if len(lines) > TABLE_LINES else ""
    return "\n".join(lines[:TABLE_LINES]) + more
