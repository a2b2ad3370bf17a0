"""`testtask action=report [paper=<key>|all]` (`make report`): evaluate every paper's claims ledger on the sidecars
already built under `figures_dir/<paper>/<source folder>/` and render `<report.out_dir>/<source folder>/index.html`,
`REPRODUCTION.md` and `report.json` (paths.output_dir). Each sidecar's provenance must name the source (and run,
and for the release its data checksum) the report reads for that paper, the protocol preset, and the fingerprint
of the settings of that preset (as the report was given them), or the report stops with ProvenanceMismatch naming
what differs: a results build is never evaluated as the published one, nor a build with other settings (a
variant) as its preset's.

Every claim is judged under each protocol preset of `report.protocols`; the paper_text configuration is composed
with Hydra's compose API from the report's own command line (`Builds.preset`). By default nothing is built (fast:
run `make figures tables` first for complete verdicts; what is missing is named first on the page and the console
with the command that builds it, report/unbuilt.py); with `report.build_missing=true` the outputs the claims read
that are absent are built first through the pipeline's `build`. The pipeline passes in what the report needs of it
(`Builds`): this package never imports it.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path
from typing import Any, Protocol

from omegaconf import DictConfig, OmegaConf

from testtask import papers, schema, user_files
from testtask.io import atomic_write_json
from testtask.paths import AUTHORS, PAPER_TEXT, conf_dir, output_dir, resolve
from testtask.report import evaluate, findings, ledger, provenance, render, unbuilt
from testtask.sidecars import Expected, release_checksum
from testtask.sources import OVERLAY, OverlayUnsupported

log = logging.getLogger("testtask.report")


class Builds(Protocol):
    """What the report asks of the pipeline (pipeline.Builds)."""

    def typed(self, cfg: DictConfig) -> Any: ...
    def preset(self, cfg: DictConfig, protocol: str) -> DictConfig: ...
    def variant(self, cfg: DictConfig, paper: str) -> Any: ...
    def overrides(self, cfg: DictConfig) -> list[str]: ...
    def build(self, cfg: DictConfig, kind: str, numbers: list[Any] | None) -> Any: ...


def ledger_file(paper: str) -> Path:
    return conf_dir() / "claims" / f"{paper}.yaml"


def load_ledger(paper: str) -> ledger.Ledger | None:
    """The paper's ledger, checked against its report hook (None when it has none yet)."""
    file = ledger_file(paper)
    if not file.is_file():
        return None
    loaded = ledger.load(file, paper)
    ledger.check_functions(loaded, papers.get(paper).report)
    return loaded


def user_ledger_file(paper: str, directory: Path) -> Path:
    """The user's own claims of `paper`: <user_dir>/claims/<paper>.yaml (testtask.user_files)."""
    return directory / "claims" / f"{paper}.yaml"


def with_user_claims(paper: str, loaded: ledger.Ledger | None, directory: Path) -> ledger.Ledger | None:
    """The paper's ledger with the user's own claims of `paper` appended, evaluated beside the paper's. The own
    file is a ledger of its own (same fields, validated the same way); an id the paper's ledger has already, or
    another `source`, is an error naming the file."""
    file = user_ledger_file(paper, directory)
    if not file.is_file():
        return loaded
    own = ledger.load(file, paper)
    ledger.check_functions(own, papers.get(paper).report)
    if loaded is None:
        return own
    taken = {c.id for c in loaded.claims}
    for claim in own.claims:
        if claim.id in taken:
            raise ledger.LedgerError(
                f"{file}: claim {claim.id}, field 'id': the paper's ledger {loaded.file} has it"
            )
    if own.source not in (None, loaded.source):
        raise ledger.LedgerError(
            f"{file}, field 'source': {own.source!r}, the paper's ledger says {loaded.source!r}"
        )
    log.info("report %s: %d own claims from %s", paper, len(own.claims), file)
    return dataclasses.replace(loaded, claims=loaded.claims + own.claims)


def _outputs_read(loaded: ledger.Ledger) -> set[str]:
    """The figure/table outputs whose sidecars the claims read by path (functions' reads show on evaluation)."""
    return {c.ours.file for c in loaded.claims if c.ours.file}


def _build_missing(
    cfg: DictConfig, paper: str, source: str, files: set[str], folder: Path, builds: Builds
) -> None:
    for file in sorted(files):
        if (folder / file).is_file():
            continue
        match = re.fullmatch(r"(figure|table)-(.+)\.(json|csv)", file)
        if not match:
            continue
        number: Any = int(match.group(2)) if match.group(2).isdigit() else match.group(2)
        sub = cfg.copy()
        OmegaConf.set_struct(sub, False)
        sub.paper = paper
        sub.source = source
        try:
            builds.build(sub, match.group(1), [number])
        except SystemExit as err:  # NothingBuilt / UsageError: the verdict will say what is missing
            log.warning("report: could not build %s of %s: %s", file, paper, err)


def _command(cfg: DictConfig) -> str:
    from testtask.provenance import command

    return command(
        fallback=f"testtask action=report paper={cfg.paper} figures_dir={cfg.figures_dir} (called from Python)"
    )


def run(cfg: DictConfig, builds: Builds) -> dict[str, Any]:
    config = builds.typed(cfg)
    if config.source == OVERLAY:  # the ledgers' claims are about the authors' data or about our runs
        raise OverlayUnsupported(
            f"the report judges the paper's claims on source=published or source=results, not {OVERLAY}"
        )
    settings = config.report
    chosen = papers.keys() if config.paper == "all" else [str(config.paper)]
    figures_dir = resolve(config.figures_dir)
    data_dest = resolve(config.data.dest)
    run_name = config.results_run
    out_dir = output_dir(settings.out_dir, str(config.source), run_name)
    wanted = [str(p) for p in settings.protocols]
    if AUTHORS not in wanted:
        raise ledger.LedgerError(
            f"report.protocols = {wanted}: the authors' preset and optionally {PAPER_TEXT}"
        )
    configs = {protocol: builds.preset(cfg, protocol) for protocol in dict.fromkeys(wanted)}
    reports: list[render.PaperReport] = []
    missing: list[unbuilt.Unbuilt] = []
    for paper in chosen:
        plugin = papers.get(paper)
        paper_ledger = load_ledger(paper)
        loaded = with_user_claims(paper, paper_ledger, user_files.folder(config))
        if loaded is None:
            reports.append(
                render.PaperReport(
                    paper, [], output_dir(figures_dir, str(config.source), run_name, paper), None
                )
            )
            continue
        own = frozenset(c.id for c in loaded.claims) - frozenset(
            c.id for c in (paper_ledger.claims if paper_ledger else ())
        )
        source = loaded.source or str(
            config.source
        )  # a ledger may read another source (downstream-predictability)
        if source == "published":
            data_root = data_dest / paper
        else:  # as the pipeline's make_context: results/<paper>[/<results_run>]
            data_root = resolve(config.results_dir) / paper
            if run_name:
                data_root = data_root / str(run_name)
        checksum = release_checksum(data_root, source)
        needed = _outputs_read(loaded) | {
            f"{c.figure}.json"
            for c in loaded.claims
            if c.figure and c.figure.startswith(("figure-", "table-"))
        }
        evaluated: dict[str, list[evaluate.Verdict]] = {}
        folders: dict[str, Path] = {}
        for protocol, preset_cfg in configs.items():
            if protocol == PAPER_TEXT and "analysis" not in plugin.paper_text:
                continue
            built = builds.variant(preset_cfg, paper)
            folder = output_dir(figures_dir, source, run_name, paper, protocol, variant=built.name)
            folders[protocol] = folder
            if settings.build_missing:
                _build_missing(preset_cfg, paper, source, needed, folder, builds)
            expected = Expected.of(
                source, run_name, checksum, reader="the report", preset=protocol, settings=built.fingerprint
            )
            evaluated[protocol] = evaluate.evaluate(
                loaded, folder, data_root, plugin.report, source, expected
            )
            waiting = unbuilt.collect(paper, source, evaluated[protocol], protocol)
            if waiting:
                missing.append(waiting)
        verdicts, text = evaluated[AUTHORS], evaluated.get(PAPER_TEXT)
        found = findings.collect(paper, verdicts, text, own, categorize=str(config.source) == "published")
        reports.append(
            render.PaperReport(
                paper,
                verdicts,
                folders[AUTHORS],
                loaded.file,
                text=text,
                findings=found,
                single_protocol="analysis" not in plugin.paper_text,
            )
        )
        log.info(
            "report %s: %s%s",
            paper,
            render.summary(verdicts),
            f"; under the paper's text: {render.summary(text)}" if text is not None else "",
        )
    overrides = unbuilt.place_overrides(builds.overrides(cfg))
    notice = unbuilt.notice(missing, overrides, tried=settings.build_missing)
    for line in notice:  # on the console too, not only at the top of the page
        log.warning("report: %s", line)
    sources = schema.to_plain(config.data.sources)
    prov = provenance.collect(chosen, _command(cfg), figures_dir, data_dest, sources)
    page, md = render.write(reports, prov, out_dir, notice)
    summary = {
        "provenance": prov.as_dict(),
        "not_built": notice,
        "papers": {
            r.paper: {
                "ledger": str(r.ledger_file) if r.ledger_file else None,
                "counts": evaluate.counts(r.verdicts) if r.ledger_file else None,
                "counts_paper_text": evaluate.counts(r.text) if r.text is not None else None,
                "findings": r.findings.as_dict() if r.findings else None,
                "claims": [_claim_entry(r, v) for v in r.verdicts],
            }
            for r in reports
        },
    }
    uncategorized = {
        r.paper: [line.claim.id for line in r.findings.uncategorized] for r in reports if r.findings
    }
    summary["uncategorized"] = {paper: ids for paper, ids in uncategorized.items() if ids}
    atomic_write_json(out_dir / "report.json", summary)
    log.info("report -> %s, %s", page, md)
    _require_categories(config, reports)
    return summary


def _claim_entry(report: render.PaperReport, v: evaluate.Verdict) -> dict[str, Any]:
    entry = v.as_dict()
    text = report.text_verdict(v.claim.id)
    entry["paper_text"] = (
        {"status": text.status, "ours": text.ours, "value": text.value, "difference": text.difference}
        if text is not None
        else None
    )
    return entry


def _require_categories(config: Any, reports: list[render.PaperReport]) -> None:
    """LedgerError, once the report is written, when a claim that does not match on the authors' release has no
    category (report/findings.py: only source=published lists any); with report.require_categories."""
    if not config.report.require_categories:
        return
    problems = [
        f"{provenance.shown(r.ledger_file)}: claim {line.claim.id}, field 'category': {line.why}, and the claim "
        "has no category"
        for r in reports
        if r.findings
        for line in r.findings.uncategorized
    ]
    if problems:
        raise ledger.LedgerError(
            f"{len(problems)} claims do not match and have no category (the report is written; "
            "ledger.CATEGORIES lists the kinds):\n  " + "\n  ".join(problems)
        )
