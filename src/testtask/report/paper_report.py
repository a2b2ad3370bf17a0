"""One paper's part of the report, and the cells of its claims as plain text: index.html and REPRODUCTION.md
read them from here, so that the two never disagree on a verdict's wording."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from testtask.report import findings, rules
from testtask.report.evaluate import DIFFERS, MATCHES, NOT_COMPUTABLE, STATUSES, Verdict, counts
from testtask.report.ledger import thaw
from testtask.report.provenance import Provenance, shown

FIT_WARNING = "⚠ fit diagnostics"  # beside a claim resting on a fit outside the diagnostics limits


@dataclass(frozen=True)
class PaperReport:
    paper: str
    verdicts: list[Verdict]  # under the authors' analysis code (the default preset)
    figures_dir: Path  # figures_dir/<paper>/<source folder>/ of the authors' preset
    ledger_file: Path | None  # None: the paper has no ledger yet
    text: list[Verdict] | None = None  # under protocol=paper_text (None: not evaluated)
    findings: findings.PaperFindings | None = None
    single_protocol: bool = False  # no released analysis code: the text is the one protocol

    def user_files(self) -> str | None:
        """The user's own files the verdicts read (their sidecars were built with them), in words; None: none."""
        found = {name: h for v in [*self.verdicts, *(self.text or [])] for name, h in v.user_files.items()}
        if not found:
            return None
        return "built with your own files: " + ", ".join(
            f"{name} (sha256 {h[:12]})" for name, h in sorted(found.items())
        )

    def text_verdict(self, claim_id: str) -> Verdict | None:
        return next((v for v in self.text or [] if v.claim.id == claim_id), None)

    def text_column(self) -> str:
        """What the paper's-text column says when it holds no verdicts."""
        if self.single_protocol:
            return "one protocol (no released analysis code)"
        return "not evaluated" if self.text is None else ""


def groups(verdicts: list[Verdict]) -> list[tuple[str | None, list[Verdict]]]:
    """Claims grouped by the output they are shown beside, in ledger order."""
    order: dict[str | None, list[Verdict]] = {}
    for v in verdicts:
        order.setdefault(v.claim.shown_beside, []).append(v)
    return list(order.items())


def paper_value(v: Verdict) -> str:
    return rules.fmt(thaw(v.claim.paper))


def ours_shown(v: Verdict) -> str:
    """Ours as the claim tables show it; a value of a claim that is not computable is marked as not judged."""
    if v.ours is None:
        return "—"
    return f"{v.ours} (on the data present)" if v.status == NOT_COMPUTABLE else v.ours


def detail(v: Verdict, text: Verdict | None = None) -> str:
    """The notes of a claim's row; `text`, its verdict under protocol=paper_text, adds the failed fits it read."""
    parts = []
    if v.failed_fits:
        parts.append(f"{FIT_WARNING}: {', '.join(v.failed_fits)} records a fit outside the limits")
    if text is not None and text.failed_fits:
        parts.append(
            f"{FIT_WARNING} (paper's text): {', '.join(text.failed_fits)} records a fit outside the limits"
        )
    if v.status == DIFFERS and v.difference:
        parts.append(f"differs by {v.difference}")
    if v.status == NOT_COMPUTABLE:
        parts.append(f"not computable on this data: {v.reason}")
        if v.ours is not None:
            parts.append("ours is shown on the data present, not judged")
        if v.command:
            parts.append(f"make it with `{v.command}`")
    if v.claim.category is not None and v.status != MATCHES:
        category = v.claim.category
        shown_by = category.get("shown_by")  # inconsistent's evidence, its arithmetic, is in its summary
        parts.append(
            f"{category.kind}: {category.summary()}" + (f"; shown by: {shown_by}" if shown_by else "")
        )
    if v.note and v.status != MATCHES:
        parts.append(f"note: {v.note}")
    return "; ".join(parts)


@dataclass(frozen=True)
class TextCell:
    """The claim under the paper's text: its status (None: no verdict), the cell, and ours when not the authors'."""

    status: str | None
    shown: str
    ours: str


def text_cell(r: PaperReport, v: Verdict) -> TextCell:
    t = r.text_verdict(v.claim.id)
    if t is None:
        return TextCell(None, r.text_column() or "—", "")
    return TextCell(t.status, t.status, "" if t.ours in (v.ours, None) else t.ours)


def summary(verdicts: list[Verdict]) -> str:
    c = counts(verdicts)
    return ", ".join(f"{c[s]} {s}" for s in STATUSES) + f" ({len(verdicts)} claims)"


def provenance_rows(prov: Provenance) -> list[tuple[str, str]]:
    rows = [
        ("built", prov.built_at),
        ("git commit", prov.git_commit + (" (with uncommitted changes)" if prov.git_dirty else "")),
        ("command", prov.command),
        ("sidecars read from", shown(prov.figures_dir)),
        ("zero rule", rules.ZERO_RULE),
        ("rounding", "ours is rounded half away from zero at the paper's printed precision"),
    ]
    for r in prov.releases:
        text = f"{r.repo}@{r.commit}: {r.verified}"
        if r.present:
            text += (
                f"; fetched from {shown(r.fetched_from)} at {r.fetched_at}; "
                f"subsets present: {', '.join(r.subsets) or 'none'}"
            )
        rows.append((f"release of {r.paper}", text))
    rows += [(f"outputs of {o.paper}", o.text()) for o in prov.outputs]
    return rows
