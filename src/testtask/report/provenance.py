"""What built a report: the git commit, the command, each paper's release (repository, commit, whether its fetch
stamp verifies) and which subsets of it are present (discovered from the folders, never listed by hand)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from testtask.provenance import git_state

__all__ = [
    "Outputs",
    "Provenance",
    "Release",
    "collect",
    "git_state",
    "outputs",
    "release",
    "shown",
    "subsets",
]

SUBSET_DEPTH = 2  # folders this deep below a release root name its subsets (e.g. accuracies_from_paper/m50)


def shown(text: str | Path | None) -> str | None:
    """A path (or `mirror:<path>`) relative to the repository, so that a report names the same folders on every
    machine, never this machine's absolute path."""
    if text is None:
        return None
    import os

    from testtask.paths import repo_root

    text = str(text)
    prefix = "mirror" if text.startswith("mirror:") else ""  # fetch stamps name a mirror as mirror:<path>
    rest = text[len("mirror:") :] if prefix else text
    if not os.path.isabs(rest):
        return text
    relative = os.path.relpath(rest, repo_root())
    return f"{prefix}:{relative}" if prefix else relative


@dataclass(frozen=True)
class Release:
    paper: str
    repo: str | None
    commit: str | None
    folder: Path
    present: bool
    verified: str  # "verified (N files)", "not fetched", or the verification error
    fetched_from: str | None = None
    fetched_at: str | None = None
    subsets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outputs:
    """How the sidecars one paper's claims read were built, as their provenance blocks say."""

    paper: str
    read: int  # sidecars read (those with a provenance block)
    commits: tuple[str, ...]  # the code's commits they were built at
    uncommitted: tuple[str, ...]  # those built from a tree with uncommitted changes (preset/file)
    checksums: tuple[str, ...]  # the data checksums they record
    compared: bool | None  # checksums compared with the release here; None: not a release (our runs)

    def _cautions(self) -> list[str]:
        found = []
        if self.uncommitted:
            found.append(
                f"{len(self.uncommitted)} of the {self.read} outputs read were built from uncommitted changes "
                f"({', '.join(self.uncommitted)}): their code is not in any commit; rebuild them from a clean tree "
                "to make them reproducible"
            )
        if self.compared is False and self.checksums:
            found.append(
                f"the release is not fetched here, so the data checksums the outputs record "
                f"({', '.join(c[:19] + '…' for c in self.checksums)}) were not compared with it; "
                f"`make data PAPER={self.paper}` lets the report check them"
            )
        return found

    def warnings(self) -> list[str]:
        """What a reader should know before trusting these outputs as built from committed code and this data."""
        return [f"{self.paper}: {line}" for line in self._cautions()]

    def text(self) -> str:
        commits = ", ".join(c[:12] for c in self.commits) or "no commit recorded"
        line = f"{self.read} sidecars read, built at {commits}"
        if self.compared:
            line += "; their data checksum agrees with the release here"
        return "; ".join([line, *self._cautions()])


def outputs(paper: str, built: dict[str, dict[str, Any]], compared: bool | None) -> Outputs:
    """`paper`'s `Outputs` from the provenance blocks of the sidecars read (`evaluate.Sidecars.built`, keyed by
    preset/file)."""
    checksums = {str(c) for b in built.values() if (c := (b.get("data") or {}).get("checksum"))}
    return Outputs(
        paper,
        len(built),
        tuple(sorted({str(b["git_commit"]) for b in built.values() if b.get("git_commit")})),
        tuple(sorted(name for name, b in built.items() if b.get("dirty"))),
        tuple(sorted(checksums)),
        compared,
    )


@dataclass(frozen=True)
class Provenance:
    git_commit: str
    git_dirty: bool
    command: str
    built_at: str
    figures_dir: Path
    releases: tuple[Release, ...] = field(default_factory=tuple)
    outputs: tuple[Outputs, ...] = field(default_factory=tuple)

    def cautions(self) -> list[str]:
        """What the outputs read say a reader should know before trusting them (empty: nothing)."""
        return [line for o in self.outputs for line in o.warnings()]

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "figures_dir": shown(self.figures_dir),
            "releases": [
                {
                    **asdict(r),
                    "folder": shown(r.folder),
                    "fetched_from": shown(r.fetched_from),
                    "subsets": list(r.subsets),
                }
                for r in self.releases
            ],
            "outputs": [
                {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(o).items()}
                for o in self.outputs
            ],
        }


def subsets(folder: Path, depth: int = SUBSET_DEPTH) -> tuple[str, ...]:
    """The folders `depth` levels below `folder` (shallower leaves included), as relative paths."""
    if not folder.is_dir():
        return ()
    found: list[str] = []

    def walk(path: Path, level: int) -> None:
        children = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
        if level == depth or not children:
            if path != folder:
                found.append(path.relative_to(folder).as_posix())
            return
        for child in children:
            walk(child, level + 1)

    walk(folder, 0)
    return tuple(found)


def release(paper: str, folder: Path, source: dict[str, Any] | None) -> Release:
    """The state of `paper`'s fetched release in `folder` (its stamp verified against the checksum manifest)."""
    from testtask.data.fetch import ReleaseError
    from testtask.data.release import STAMP_NAME, verify_release

    source = source or {}
    repo, commit = source.get("repo"), source.get("commit")
    if not folder.is_dir():
        return Release(paper, repo, commit, folder, False, "not fetched")
    stamp: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        stamp = json.loads((folder / STAMP_NAME).read_text(encoding="utf-8"))
    try:
        verify_release(folder, paper, list(source.get("json_drop_keys") or []))
        verified = f"verified ({len(stamp.get('hashes') or {})} files against the checksum manifest)"
    except ReleaseError as err:
        verified = f"NOT verified: {err}"
    fetched_from, fetched_at = stamp.get("source"), stamp.get("fetched_at")
    return Release(paper, repo, commit, folder, True, verified, fetched_from, fetched_at, subsets(folder))


def collect(
    papers: list[str],
    command: str,
    figures_dir: Path,
    data_dest: Path,
    sources: dict[str, Any],
    read: tuple[Outputs, ...] = (),
) -> Provenance:
    """Provenance of a report on `papers` (each paper's own release and, where it has none, nothing), and how the
    outputs it `read` were built."""
    commit, dirty = git_state()
    releases = tuple(release(p, data_dest / p, sources.get(p)) for p in papers if p in sources)
    built_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return Provenance(commit, dirty, command, built_at, figures_dir, releases, read)
