"""`report/index.html` (self-contained: inline CSS, figures copied beside it) and `report/REPRODUCTION.md`.

Layout: first the findings (report/findings.py): per paper, the claims that match under the authors' analysis code
and under the paper's text, then one line per claim that does not match, by category, each linking to its claim;
then the provenance header and the summary table; then per paper, per figure or table, the image (or the table's
Markdown) with its claims beside it, each with its verdict under the authors' code and under the paper's text, ours,
the difference, the category, the note and, when not computable, the missing input and the command that makes it.
"""

from __future__ import annotations

import html
import shutil
from collections.abc import Sequence
from pathlib import Path

from testtask.report import findings
from testtask.report.evaluate import DIFFERS, MATCHES, NOT_COMPUTABLE, STATUSES, counts
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

_BADGE = {MATCHES: "match", DIFFERS: "differ", NOT_COMPUTABLE: "nc"}

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1500px;padding:1em 2em;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #444;padding-bottom:.2em;margin-top:2em}h3{margin:1.2em 0 .4em}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.3em .45em;vertical-align:top;text-align:left}
th{background:#f3f3f3}.prov td:first-child{white-space:nowrap;font-weight:600}
.output{display:flex;gap:1.2em;align-items:flex-start;border-top:1px solid #ddd;padding-top:.8em;margin-top:.8em}
.output .fig{flex:0 0 44%}.output .fig img{max-width:100%;border:1px solid #ddd}
.output .claims{flex:1 1 56%}pre{white-space:pre-wrap;font-size:12px;background:#fafafa;padding:.5em;border:1px solid #eee}
.badge{display:inline-block;border-radius:3px;padding:0 .45em;font-weight:600;font-size:12px;white-space:nowrap}
.match{background:#d7f5dd;color:#0b5a1c}.differ{background:#fde2c8;color:#8a3b00}.nc{background:#e4e4e4;color:#444}
.notice{background:#fff4d6;border:1px solid #e0b84c;padding:.4em 1em;margin:.8em 0}
.summary span{margin-right:1em}.detail{color:#555;font-size:12.5px}code{font-size:12.5px}
#findings{border:2px solid #444;padding:.2em 1.2em 1em;margin:1em 0 2em}#findings h2{margin-top:.6em}
#findings h3{margin:1em 0 .2em}#findings h4{margin:.7em 0 .2em;font-size:1em}#findings ul{margin:.2em 0;padding-left:1.4em}
#findings li{margin:.15em 0}.headline{font-size:1.1em}.err{color:#a00000}.cat{font-size:12px;color:#555}
"""


def _copy_figure(report: PaperReport, name: str, out_dir: Path) -> str | None:
    """Copy <name>.png into out_dir/figures/<paper>/ and return its relative path (None when not built)."""
    source = report.figures_dir / f"{name}.png"
    if not source.is_file():
        return None
    target_dir = out_dir / "figures" / report.paper
    target_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target_dir / source.name)
    return f"figures/{report.paper}/{source.name}"


TABLE_LINES = 30  # of a table's Markdown shown beside its claims


def _table_text(report: PaperReport, name: str) -> str | None:
    source = report.figures_dir / f"{name}.md"
    if not source.is_file():
        return None
    lines = source.read_text(encoding="utf-8").splitlines()
    more = f"\n… {len(lines) - TABLE_LINES} more lines in {source.name}" if len(lines) > TABLE_LINES else ""
    return "\n".join(lines[:TABLE_LINES]) + more


def html_page(reports: list[PaperReport], prov: Provenance, out_dir: Path, notice: Sequence[str] = ()) -> str:
    """`notice`: a heading and lines shown first (report/unbuilt.py: what builds the outputs not built)."""
    e = html.escape
    body = ["<h1>Reproduction report</h1>"]
    if notice:
        items = "".join(f"<li><code>{e(line)}</code></li>" for line in notice[1:])
        body.append(f'<div class="notice"><p><b>Not built yet.</b> {e(notice[0])}</p><ul>{items}</ul></div>')
    body.append(_findings_html(reports))
    body.append('<h2>Provenance</h2><table class="prov">')
    body += [f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in provenance_rows(prov)]
    body.append("</table>")
    body.append(
        '<h2>Summary</h2><table><tr><th rowspan="2">paper</th><th colspan="3">authors\' analysis code (default)</th>'
        '<th colspan="3">paper\'s text (analysis_protocol=paper_text)</th></tr><tr>'
        + "".join(f"<th>{s}</th>" for s in STATUSES) * 2
        + "</tr>"
    )
    for r in reports:
        c = counts(r.verdicts)
        if not r.ledger_file:
            cells = '<td colspan="6">no ledger yet</td>'
        else:
            cells = "".join(f"<td>{c[s]}</td>" for s in STATUSES)
            if r.text is not None:
                t = counts(r.text)
                cells += "".join(f"<td>{t[s]}</td>" for s in STATUSES)
            else:
                cells += f'<td colspan="3" class="detail">{e(r.text_column())}</td>'
        body.append(f'<tr><td><a href="#{e(r.paper)}">{e(r.paper)}</a></td>{cells}</tr>')
    body.append("</table>")
    for r in reports:
        body.append(f'<h2 id="{e(r.paper)}">{e(r.paper)}</h2>')
        if r.ledger_file is None:
            body.append("<p>No claims ledger yet (conf/claims/&lt;paper&gt;.yaml).</p>")
            continue
        c = counts(r.verdicts)
        badges = "".join(
            f'<span><span class="badge {_BADGE[s]}">{e(s)}</span> {c[s]}</span>' for s in STATUSES
        )
        body.append(f'<p class="summary">{badges} — ledger <code>{e(str(r.ledger_file))}</code></p>')
        for name, verdicts in groups(r.verdicts):
            body.append('<div class="output"><div class="fig">')
            body.append(f"<h3>{e(name or 'other claims')}</h3>")
            if name:
                image = _copy_figure(r, name, out_dir)
                table = None if image else _table_text(r, name)
                if image:
                    body.append(f'<img src="{e(image)}" alt="{e(r.paper)} {e(name)}">')
                elif table:
                    body.append(f"<pre>{e(table)}</pre>")
                else:
                    body.append(f"<p class='detail'>{e(name)} has not been built.</p>")
            body.append('</div><div class="claims"><table>')
            body.append(
                "<tr><th>where</th><th>statement</th><th>paper</th><th>ours</th><th>authors' code</th>"
                "<th>paper's text</th></tr>"
            )
            for v in verdicts:
                why = detail(v)
                ours = ours_shown(v)
                cell = text_cell(r, v)
                badge = _BADGE[cell.status] if cell.status is not None else ""
                text_status, text_ours = cell.shown, cell.ours
                text = (
                    f"<span class='badge {badge}'>{e(text_status)}</span>"
                    if badge
                    else f"<span class='detail'>{e(text_status)}</span>"
                )
                if text_ours:
                    text += f'<div class="detail">ours {e(text_ours)}</div>'
                body.append(
                    f'<tr id="{e(v.claim.id)}"><td>{e(v.claim.where)}</td><td>{e(v.claim.statement)}'
                    f'<div class="detail"><code>{e(v.claim.id)}</code></div></td><td>{e(paper_value(v))}</td>'
                    f"<td>{e(ours)}</td><td><span class='badge {_BADGE[v.status]}'>{e(v.status)}</span>"
                    + (f'<div class="detail">{e(why)}</div>' if why else "")
                    + f"</td><td>{text}</td></tr>"
                )
            body.append("</table></div></div>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Reproduction report</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _findings_html(reports: list[PaperReport]) -> str:
    """The first section: per paper the headline counts and one line per finding, linking to its claim."""
    e = html.escape
    out = ['<section id="findings"><h2>Findings</h2>']
    out.append(
        "<p class='detail'>Verdicts under the authors' released analysis code (the default: it produced the "
        "published numbers) and under the paper's text (<code>analysis_protocol=paper_text</code>); each claim "
        "that does not match, by why. Details: the claim tables below.</p>"
    )
    for r in reports:
        if r.findings is None:
            continue
        f = r.findings
        out.append(f'<h3><a href="#{e(r.paper)}">{e(r.paper)}</a></h3>')
        single = " (one protocol: no released analysis code)" if r.single_protocol else ""
        out.append(f'<p class="headline"><b>{e(findings.headline(f))}</b>{e(single)}</p>')
        waiting = f.authors[NOT_COMPUTABLE] - sum(
            1 for lines in f.sections.values() for x in lines if x.authors.status == NOT_COMPUTABLE
        )
        if waiting:
            out.append(
                f"<p class='detail'>{waiting} claims are not computable here because an output is not built or an "
                "input is absent from this copy of the release (the notice above names what makes them).</p>"
            )
        if not f.sections and not waiting:
            out.append("<p class='detail'>Nothing to report: every claim matches.</p>")
        for section in findings.SECTIONS:
            lines = f.sections.get(section)
            if not lines:
                continue
            cls = ' class="err"' if section == findings.UNCATEGORIZED else ""
            out.append(f"<h4{cls}>{e(findings.TITLES[section])} ({len(lines)})</h4><ul>")
            for line in lines:
                badges = (
                    f"<span class='badge {_BADGE[line.authors.status]}'>code: {e(line.authors.status)}</span>"
                )
                if line.text is not None:
                    badges += (
                        f" <span class='badge {_BADGE[line.text.status]}'>text: {e(line.text.status)}</span>"
                    )
                out.append(
                    f'<li><a href="#{e(line.anchor)}">{e(line.claim.where)}</a>: {e(line.claim.statement)} {badges}'
                    f"<div class='cat'>{e(findings.shown(line))}. {e(line.why)}</div></li>"
                )
            out.append("</ul>")
    out.append("</section>")
    return "\n".join(out)


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
    lines += _findings_md(reports)
    lines += ["## Provenance", ""]
    lines += [f"- **{k}**: {_md(v)}" for k, v in provenance_rows(prov)]
    head = (
        " | ".join(f"{s} (authors' code)" for s in STATUSES)
        + " | "
        + " | ".join(f"{s} (text)" for s in STATUSES)
    )
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
                    f"{_md(paper_value(v))} | {_md(ours)} | {v.status} | {_md(text)} | {_md(detail(v))} |"
                )
    return "\n".join(lines) + "\n"


def write(
    reports: list[PaperReport], prov: Provenance, out_dir: Path, notice: Sequence[str] = ()
) -> tuple[Path, Path]:
    """Write index.html (copying the figures) and REPRODUCTION.md into `out_dir`; return their paths."""
    from testtask.io import atomic_write_text

    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / "index.html"
    atomic_write_text(page, html_page(reports, prov, out_dir, notice))
    md = out_dir / "REPRODUCTION.md"
    atomic_write_text(md, markdown(reports, prov, notice))
    return page, md
