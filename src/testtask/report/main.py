"""`testtask action=report` (`make report`): every paper's claims ledger evaluated, under each preset of
`report.protocols`, on the sidecars already built, rendered as index.html, REPRODUCTION.md and report.json.

A sidecar whose provenance names another source, run, data, preset or settings stops the report
(ProvenanceMismatch): a results build is never judged as the published one, nor a variant as its preset's.
Nothing is built unless `report.build_missing=true` (report/unbuilt.py names what is missing). The pipeline
passes in what the report needs of it (`Builds`): this package never imports it.
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
from testtask.sources import OVERLAY, run_root

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


def own_claims(paper: str, loaded: ledger.Ledger | None, directory: Path) -> ledger.Ledger | None:
    """The user's own claims of `paper` (None: no such file): a ledger of its own, judged only on the source it
    states; an id the paper's ledger has already is an error."""
    file = user_ledger_file(paper, directory)
    if not file.is_file():
        return None
    own = ledger.load(file, paper)
    ledger.check_functions(own, papers.get(paper).report)
    if own.source is None:
        raise ledger.LedgerError(
            f"{file}, field 'source': own claims state the source they are about: one of "
            f"{', '.join(ledger.SOURCES)} (published+results: your run laid over the release, make report "
            "SOURCE=published+results RUN=<run>)"
        )
    taken = {c.id for c in loaded.claims} if loaded is not None else set()
    for claim in own.claims:
        if claim.id in taken:
            raise ledger.LedgerError(
                f"{file}: claim {claim.id}, field 'id': the paper's ledger {loaded.file} has it"  # type: ignore[union-attr]
            )
    log.info("report %s: %d own claims from %s (source %s)", paper, len(own.claims), file, own.source)
    return own


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


def _data_root(config: Any, paper: str, source: str) -> Path:
    """Where a claim's `needs` are checked: the release (also for an overlay) or our run (as make_context)."""
    if source in ("published", OVERLAY):
        return resolve(config.data.dest) / paper
    return run_root(config, paper)


def _elsewhere(own: ledger.Ledger, source: str, configs: dict[str, Any], plugin: Any) -> _Judged:
    """Own claims about another source than the report's: not computable here, saying where they are judged."""
    if own.source == OVERLAY and not plugin.overlay:
        reason = (
            f"own claims about source={OVERLAY}: {plugin.key} does not read it (its loaders read one root)"
        )
        command = None
    else:
        run = " RUN=<run>" if own.source != "published" else ""
        command = f"make report PAPER={plugin.key} SOURCE={own.source}{run}"
        reason = f"an own claim about source={own.source}, judged by `{command}` (this report reads {source})"
    missing = (f"source={own.source}",)  # what this report does not read: the data the claims are about
    verdicts = [
        evaluate.Verdict(c, evaluate.NOT_COMPUTABLE, reason=reason, command=command, missing=missing)
        for c in own.claims
    ]
    protocols = [p for p in configs if p == AUTHORS or "analysis" in plugin.paper_text]
    return _Judged(evaluate.with_notes({p: list(verdicts) for p in protocols}, {}), {})


def _command(cfg: DictConfig) -> str:
    from testtask.provenance import command

    return command(
        fallback=f"testtask action=report paper={cfg.paper} figures_dir={cfg.figures_dir} (called from Python)"
    )


@dataclasses.dataclass
class _Judged:
    """One ledger judged on one source: verdicts and the sidecars' folder per protocol preset, the provenance
    blocks of the sidecars read (by preset/file), and whether their data checksums were compared (None: no
    release)."""

    verdicts: dict[str, list[evaluate.Verdict]]
    folders: dict[str, Path]
    built: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    compared: bool | None = None


def run(cfg: DictConfig, builds: Builds) -> dict[str, Any]:
    config = builds.typed(cfg)
    settings = config.report
    chosen = papers.keys() if config.paper == "all" else [str(config.paper)]
    figures_dir = resolve(config.figures_dir)
    run_name = config.results_run
    out_dir = output_dir(settings.out_dir, str(config.source), run_name)
    if config.paper != "all":  # one paper's report beside the whole one, never over it
        out_dir = out_dir / str(config.paper)
    wanted = [str(p) for p in settings.protocols]
    if AUTHORS not in wanted:
        raise ledger.LedgerError(
            f"report.protocols = {wanted}: the authors' preset and optionally {PAPER_TEXT}"
        )
    protocols = list(dict.fromkeys(wanted))
    # A paper's claims are about the paper's settings: judged on outputs built without the user's own files, which
    # make a build a variant (figures/variants/own=<files>/); own claims on the outputs built with them.
    present = user_files.digest(user_files.folder(config), user_files.ANALYSIS) if config.own_files else {}
    configs = {True: {protocol: builds.preset(cfg, protocol) for protocol in protocols}}
    # without own files to leave out, the paper's settings are those composed already
    configs[False] = (
        {protocol: builds.preset(cfg, protocol, own_files=False) for protocol in protocols}
        if present
        else configs[True]
    )
    reports: list[render.PaperReport] = []
    missing: list[unbuilt.Unbuilt] = []
    read: list[provenance.Outputs] = []  # how each paper's outputs were built

    def judge(paper: str, loaded: ledger.Ledger, source: str, own_files: bool = False) -> _Judged:
        """`loaded`'s claims on the outputs built from `source`, under each preset the paper has (with the user's
        own files where `own_files`)."""
        plugin = papers.get(paper)
        data_root = _data_root(config, paper, source)
        checksum = release_checksum(data_root, "published" if source == OVERLAY else source)
        # the sidecars read by path and those of the outputs shown beside (functions' reads show on evaluation)
        needed = {c.ours.file for c in loaded.claims if c.ours.file} | {
            f"{c.figure}.json"
            for c in loaded.claims
            if c.figure and c.figure.startswith(("figure-", "table-"))
        }
        judged = _Judged({}, {})
        outputs: dict[str, evaluate.Sidecars] = {}  # each preset's sidecars, for the notes' references
        for protocol, preset_cfg in configs[own_files].items():
            if protocol == PAPER_TEXT and "analysis" not in plugin.paper_text:
                continue
            built = builds.variant(preset_cfg, paper)
            folder = output_dir(figures_dir, source, run_name, paper, protocol, variant=built.name)
            judged.folders[protocol] = folder
            if settings.build_missing:
                _build_missing(preset_cfg, paper, source, needed, folder, builds)
            expected = Expected.of(
                source,
                run_name,
                checksum,
                reader="the report",
                preset=protocol,
                settings=built.fingerprint,
                user_files=built.user_files,
            )
            pages = output_dir(figures_dir, source, run_name, "assess-model", protocol)
            # the paper's outputs, where the user's own files would make its commands build a variant of them
            variant_with_own = (
                present and not own_files and builds.variant(configs[True][protocol], paper).name
            )
            without = ("own_files=false",) if variant_with_own and built.name is None else ()
            outputs[protocol] = evaluate.Sidecars(folder, expected, pages, build_args=without)
            judged.verdicts[protocol] = evaluate.evaluate_on(
                loaded, outputs[protocol], data_root, plugin.report, source
            )
            waiting = unbuilt.collect(paper, source, judged.verdicts[protocol], protocol, without)
            if waiting:
                missing.append(waiting)
        judged.verdicts = evaluate.with_notes(judged.verdicts, outputs)
        where = "" if source == "published" else f"{source}:"  # an own ledger may read another source
        judged.built = {
            f"{where}{p}/{name}": b for p, sidecars in outputs.items() for name, b in sidecars.built.items()
        }
        judged.compared = checksum is not None if source in ("published", OVERLAY) else None
        return judged

    for paper in chosen:
        plugin = papers.get(paper)
        paper_ledger = load_ledger(paper)
        own = own_claims(paper, paper_ledger, user_files.folder(config))
        if paper_ledger is None and own is None:
            empty = output_dir(figures_dir, str(config.source), run_name, paper)
            reports.append(render.PaperReport(paper, [], empty, None))
            continue
        # The paper's claims are about the authors' release (or, for a ledger that says so, our runs): under
        # SOURCE=published+results they are judged on the release alone, beside the own claims on the overlay.
        default = "published" if config.source == OVERLAY else str(config.source)
        parts: list[_Judged] = []
        if paper_ledger is not None:
            parts.append(judge(paper, paper_ledger, paper_ledger.source or default))
        if own is not None:
            if own.source in (str(config.source), "published") and (own.source != OVERLAY or plugin.overlay):
                parts.append(judge(paper, own, own.source, own_files=True))
            else:
                parts.append(_elsewhere(own, str(config.source), configs[True], plugin))
        verdicts = [v for part in parts for v in part.verdicts[AUTHORS]]
        built = {name: block for part in parts for name, block in part.built.items()}
        compared = [part.compared for part in parts if part.built and part.compared is not None]
        if built:
            read.append(provenance.outputs(paper, built, all(compared) if compared else None))
        texts = [part.verdicts.get(PAPER_TEXT) for part in parts]
        text = [v for t in texts if t is not None for v in t] if any(t is not None for t in texts) else None
        own_ids = frozenset(c.id for c in own.claims) if own is not None else frozenset()
        found = findings.collect(paper, verdicts, text, own_ids, categorize=default == "published")
        ledger_file_shown = (paper_ledger or own).file  # type: ignore[union-attr]
        folder = parts[0].folders.get(AUTHORS) or output_dir(figures_dir, default, run_name, paper)
        single = "analysis" not in plugin.paper_text
        reports.append(render.PaperReport(paper, verdicts, folder, ledger_file_shown, text, found, single))
        under = f"; under the paper's text: {render.summary(text)}" if text is not None else ""
        log.info("report %s: %s%s", paper, render.summary(verdicts), under)
    overrides = unbuilt.place_overrides(builds.overrides(cfg))
    notice = unbuilt.notice(missing, overrides, tried=settings.build_missing)
    for line in notice:  # on the console too, not only at the top of the page
        log.warning("report: %s", line)
    for line in (w for outputs in read for w in outputs.warnings()):
        log.warning("report: %s", line)
    sources = schema.to_plain(config.data.sources)
    prov = provenance.collect(
        chosen, _command(cfg), figures_dir, resolve(config.data.dest), sources, tuple(read)
    )
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
    summary["unresolved_notes"] = {
        r.paper: {v.claim.id: list(v.unresolved) for v in r.verdicts if v.unresolved}
        for r in reports
        if any(v.unresolved for v in r.verdicts)
    }
    for unresolved in summary["unresolved_notes"].values():
        for claim_id, why in unresolved.items():
            log.warning(
                "report: claim %s quotes in its note or category what its outputs do not hold: %s",
                claim_id,
                "; ".join(why),
            )
    for section in ("uncategorized", "unsupported"):
        ids = {
            r.paper: [line.claim.id for line in getattr(r.findings, section)] for r in reports if r.findings
        }
        summary[section] = {paper: found for paper, found in ids.items() if found}
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
    """With report.require_categories, LedgerError (once the report is written) for uncategorized and
    unsupported claims (report/findings.py)."""
    if not config.report.require_categories:
        return
    problems = [
        f"{provenance.shown(r.ledger_file)}: claim {line.claim.id}, field 'category': {line.why}, and the claim "
        "has no category"
        for r in reports
        if r.findings
        for line in r.findings.uncategorized
    ] + [
        f"{provenance.shown(r.ledger_file)}: claim {line.claim.id}, field 'category': {line.why}"
        for r in reports
        if r.findings
        for line in r.findings.unsupported
    ]
    if problems:
        raise ledger.LedgerError(
            f"{len(problems)} claims do not match and have no category, or a category whose evidence does not "
            "hold (the report is written; ledger.CATEGORIES lists the kinds and their evidence):\n  "
            + "\n  ".join(problems)
        )
