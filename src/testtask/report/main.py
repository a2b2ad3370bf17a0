"""`testtask action=report [paper=<key>|all]` (`make report`): evaluate every paper's claims ledger on the sidecars
already built under `figures_dir/<paper>/<source folder>/` and render `<report.out_dir>/<source folder>/index.html`,
`REPRODUCTION.md` and `report.json` (paths.output_dir). Each sidecar's provenance must name the source (and run,
and for the release its data checksum) the report reads for that paper, or the report stops with
ProvenanceMismatch: a results build is never evaluated as the published one (issue 25, finding 1).

By default nothing is built (fast: run `make figures tables` first for complete verdicts; what is missing is named
first on the page and the console with the command that builds it, report/unbuilt.py); with
`report.build_missing=true` the outputs the claims read that are absent are built first through the pipeline's
`build` (passed in by the pipeline, which this package never imports).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from testtask import papers, user_files
from testtask.io import atomic_write_json
from testtask.paths import conf_dir, output_dir, resolve
from testtask.report import evaluate, ledger, provenance, render, unbuilt
from testtask.sidecars import Expected, release_checksum
from testtask.sources import OVERLAY, OverlayUnsupported

log = logging.getLogger("testtask.report")

Build = Callable[[DictConfig, str, list[Any] | None], Any]


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
    cfg: DictConfig, paper: str, source: str, files: set[str], folder: Path, build: Build
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
            build(sub, match.group(1), [number])
        except SystemExit as err:  # NothingBuilt / UsageError: the verdict will say what is missing
            log.warning("report: could not build %s of %s: %s", file, paper, err)


def _command(cfg: DictConfig) -> str:
    from testtask.provenance import command

    return command(
        fallback=f"testtask action=report paper={cfg.paper} figures_dir={cfg.figures_dir} (called from Python)"
    )


def _overrides() -> list[str]:
    """The command line's overrides that place outputs (none when called from Python, outside Hydra)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    return unbuilt.place_overrides(list(HydraConfig.get().overrides.task))


def run(cfg: DictConfig, build: Build | None = None) -> dict[str, Any]:
    if cfg.source == OVERLAY:  # the ledgers' claims are about the authors' data or about our runs
        raise OverlayUnsupported(
            f"the report judges the paper's claims on source=published or source=results, not {OVERLAY}"
        )
    settings = cfg.report
    chosen = papers.keys() if cfg.paper == "all" else [str(cfg.paper)]
    figures_dir = resolve(cfg.figures_dir)
    data_dest = resolve(cfg.data.dest)
    run_name = cfg.get("results_run")
    out_dir = output_dir(settings.out_dir, str(cfg.source), run_name)
    reports: list[render.PaperReport] = []
    missing: list[unbuilt.Unbuilt] = []
    for paper in chosen:
        plugin = papers.get(paper)
        loaded = with_user_claims(paper, load_ledger(paper), user_files.folder(cfg))
        if loaded is None:
            reports.append(
                render.PaperReport(paper, [], output_dir(figures_dir, str(cfg.source), run_name, paper), None)
            )
            continue
        source = loaded.source or str(
            cfg.source
        )  # a ledger may read another source (downstream-predictability)
        folder = output_dir(figures_dir, source, run_name, paper)
        if settings.build_missing:
            if build is None:
                raise RuntimeError("report.build_missing=true needs the pipeline's build function")
            needed = _outputs_read(loaded) | {
                f"{c.figure}.json"
                for c in loaded.claims
                if c.figure and c.figure.startswith(("figure-", "table-"))
            }
            _build_missing(cfg, paper, source, needed, folder, build)
        if source == "published":
            data_root = data_dest / paper
        else:  # as the pipeline's make_context: results/<paper>[/<results_run>]
            data_root = resolve(cfg.results_dir) / paper
            if cfg.get("results_run"):
                data_root = data_root / str(cfg.results_run)
        expected = Expected.of(source, run_name, release_checksum(data_root, source), reader="the report")
        verdicts = evaluate.evaluate(loaded, folder, data_root, plugin.report, source, expected)
        reports.append(render.PaperReport(paper, verdicts, folder, loaded.file))
        log.info("report %s: %s", paper, render.summary(verdicts))
        waiting = unbuilt.collect(paper, source, verdicts)
        if waiting:
            missing.append(waiting)
    notice = unbuilt.notice(missing, _overrides(), tried=bool(settings.build_missing))
    for line in notice:  # on the console too, not only at the top of the page
        log.warning("report: %s", line)
    sources = OmegaConf.to_container(cfg.data.get("sources") or {}, resolve=True)
    prov = provenance.collect(chosen, _command(cfg), figures_dir, data_dest, sources)  # type: ignore[arg-type]
    page, md = render.write(reports, prov, out_dir, notice)
    summary = {
        "provenance": prov.as_dict(),
        "not_built": notice,
        "papers": {
            r.paper: {
                "ledger": str(r.ledger_file) if r.ledger_file else None,
                "counts": evaluate.counts(r.verdicts) if r.ledger_file else None,
                "claims": [v.as_dict() for v in r.verdicts],
            }
            for r in reports
        },
    }
    atomic_write_json(out_dir / "report.json", summary)
    log.info("report -> %s, %s", page, md)
    return summary
