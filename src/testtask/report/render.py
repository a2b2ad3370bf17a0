"""`report/index.html` (self-contained: inline CSS, figures copied beside it) and `report/REPRODUCTION.md`:
the findings, the provenance and summary table, then per output its image or table with its claims beside it.

The page is written by the templates of report/templates/ from the data of report/page_data.py; the Markdown here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from testtask.report import findings, page_data, templating
from testtask.report.evaluate import STATUSES, counts
from testtask.report.paper_report import (
    FIT_WARNING,
    PaperReport,
    detail,
    groups,
    ours_shown,
    paper_value,
    provenance_rows,
    summary,
    text_cell,
)
from testtask.report.provenance import Provenance

__all__ = ["FIT_WARNING", "PaperReport", "html_page", "markdown", "summary", "write"]


def html_page(reports: list[PaperReport], prov: Provenance, out_dir: Path, notice: Sequence[str] = ()) -> str:
    """The page, copying its figures into `out_dir`; `notice`: what builds the outputs not built (report/unbuilt.py)."""
    return templating.render("report.html.j2", page=page_data.page(reports, prov, out_dir, notice))


def _findings_md(reports: list[PaperReport]) -> list[str]:
    lines = ["## Findings", ""]
    for r in reports:
        if r.findings is None:
            continue
        f = r.findings
        single = " (one protocol: no released analysis code)" if r.single_protocol else ""
        lines += [f"### {r.paper}", "", f"**{findings.headline(f)}**{single}", ""]
        for section in findings.SECTIONS:
            found = f.sections.get(section)
            if not found:
                continue
            lines += [f"**{findings.TITLES[section]}** ({len(found)})", ""]
            lines += [
                f"- [{_md(x.claim.where)}](#{x.anchor}) `{x.claim.id}`: {_md(x.claim.statement)} — "
                f"{x.authors.status}"
                + (f" (text: {x.text.status})" if x.text is not None else "")
                + f"; {_md(findings.shown(x))}. {_md(x.why)}"
                for x in found
            ]
            lines.append("")
    return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(reports: list[PaperReport], prov: Provenance, notice: Sequence[str] = ()) -> str:
    lines = ["# Reproduction report", ""]
    if notice:
        lines += [f"> **Not built yet.** {notice[0]}", ">", *(f"> - `{line}`" for line in notice[1:]), ""]
    if prov.cautions():
        lines += ["> **Check the outputs.**", ">", *(f"> - {_md(line)}" for line in prov.cautions()), ""]
    lines += _findings_md(reports)
    lines += ["## Provenance", ""]
    lines += [f"- **{k}**: {_md(v)}" for k, v in provenance_rows(prov)]
    head = " | ".join([*(f"{s} (authors' code)" for s in STATUSES), *(f"{s} (text)" for s in STATUSES)])
    lines += ["", f"| paper | {head} |", "|---|" + "---|" * (2 * len(STATUSES))]
    for r in reports:
        c = counts(r.verdicts)
        if not r.ledger_file:
            cells = "no ledger yet" + " |" * 5
        else:
            cells = " | ".join(str(c[s]) for s in STATUSES) + " | "
            if r.text is not None:
                t = counts(r.text)
                cells += " | ".join(str(t[s]) for s in STATUSES)
            else:
                cells += r.text_column() + " | | "
        lines.append(f"| {r.paper} | {cells} |")
    for r in reports:
        lines += ["", f"## {r.paper}", ""]
        if r.ledger_file is None:
            lines.append("No claims ledger yet.")
            continue
        lines.append(summary(r.verdicts))
        if r.user_files():
            lines += ["", r.user_files()]
        for name, verdicts in groups(r.verdicts):
            lines += ["", f"### {name or 'other claims'}", ""]
            if name and (r.figures_dir / f"{name}.png").is_file():
                lines += [f"![{r.paper} {name}](figures/{r.paper}/{name}.png)", ""]
            lines += [
                "| claim | where | statement | paper | ours | authors' code | paper's text | detail |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for v in verdicts:
                ours = ours_shown(v)
                cell = text_cell(r, v)
                text = cell.shown + (f" (ours {cell.ours})" if cell.ours else "")
                lines.append(
                    f'| <a id="{v.claim.id}"></a>`{v.claim.id}` | {_md(v.claim.where)} | {_md(v.claim.statement)} | '
                    f"{_md(paper_value(v))} | {_md(ours)} | {v.status} | {_md(text)} | {_md(detail(v, r.text_verdict(v.claim.id)))} |"
                )
    return "\n".join(lines) + "\n"


def write(
    reports: list[PaperReport], prov: Provenance, out_dir: Path, notice: Sequence[str] = ()
) -> tuple[Path, Path]:
    """Write index.html (copying the figures) and REPRODUCTION.md into `out_dir`; return their paths."""
    from testtask.io import atomic_write_text

    out_dir.mkdir(parents=True, exist_ok=True)
    page = atomic_write_text(out_dir / "index.html", html_page(reports, prov, out_dir, notice))
    md = atomic_write_text(out_dir / "REPRODUCTION.md", markdown(reports, prov, notice))
    return page, md
