"""Where the repository's inputs and outputs live."""

from __future__ import annotations

import os
from pathlib import Path

from testtask.settings import Protocol, Source


def repo_root() -> Path:
    """The checkout root: TESTTASK_ROOT if set, else the folder holding `conf/` above this package."""
    if env := os.environ.get("TESTTASK_ROOT"):
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "conf" / "config.yaml").is_file():
            return parent
    return Path.cwd().resolve()


def in_repo(path: str | os.PathLike) -> str:
    """A path as messages and records show it: relative to the repository root when inside it."""
    try:
        return Path(path).resolve().relative_to(repo_root()).as_posix()
    except ValueError:
        return str(path)


def conf_dir() -> Path:
    return repo_root() / "conf"


def resolve(path: str | os.PathLike) -> Path:
    """A path from config: absolute as given, relative to the repository root otherwise."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else repo_root() / p


PUBLISHED, RESULTS, OVERLAY = Source.published, Source.results, Source.overlay
AUTHORS, PAPER_TEXT = Protocol.authors, Protocol.paper_text


def run_of(source: str, run: object) -> str | None:
    """The results run that a source reads: `run` (results_run), but None for the authors' release."""
    return None if source == PUBLISHED or run in (None, "") else str(run)


def source_folder(source: str, run: object = None) -> str:
    """The folder name that keeps one source's (and run's) outputs apart: `published`, `results-<run>`, `results`
    (results_run=null) or `published+results-<run>`."""
    if source not in (PUBLISHED, RESULTS, OVERLAY):
        raise ValueError(f"source must be {PUBLISHED}, {RESULTS} or {OVERLAY}, got {source!r}")
    name = run_of(source, run)
    if name is not None and ("/" in name or name in (".", "..")):
        raise ValueError(f"results_run {name!r} cannot name an output folder")
    return str(source) if name is None else f"{source}-{name}"


def preset_suffix(protocol: object) -> str:
    """`""` for the default protocol preset (authors), `.<preset>` for another (`.paper_text`)."""
    name = Protocol(str(protocol or AUTHORS))
    return "" if name == AUTHORS else f".{name}"


def output_dir(
    root: str | os.PathLike,
    source: str,
    run: object = None,
    paper: str | None = None,
    protocol: object = AUTHORS,
    variant: str | None = None,
) -> Path:
    """THE place an output of `source` (and run `run`) goes, for every writer and reader:
    `<root>[/variants/<variant>][/<paper>]/<source folder>[.paper_text]/` (a variant: settings that differ from
    their preset's, pipeline.variant)."""
    base = resolve(root)
    if variant:
        base = base / "variants" / variant
    return (base / paper if paper else base) / (source_folder(source, run) + preset_suffix(protocol))
