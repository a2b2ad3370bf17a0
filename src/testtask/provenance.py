"""What built an output: the git commit of the code, the seed, the source and a checksum of the data it read.

`pipeline.build` sets a `Stamp` per builder (a context variable, so nothing is passed down); every JSON sidecar
written under the builder's output folder gets its block as `provenance`. Outside `build` there is no stamp.

The data's identity: for a published release, the SHA-256 of its fetch stamp's file hashes (the same release gives
the same checksum wherever it was fetched); for our runs, of every file under the root (dot-files, e.g. locks and
half-written temporaries, left out), hashed once per `build`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import subprocess
import time
from collections.abc import Collection, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testtask.io import JSON_HOOK
from testtask.paths import in_repo, repo_root

log = logging.getLogger(__name__)

KEY = "provenance"  # the sidecar key
FROM_PYTHON = "(called from Python, not the testtask command)"


def git_state(root: Path | None = None) -> tuple[str, bool]:
    """(HEAD commit, whether the work tree has uncommitted changes); ("unknown", False) outside a checkout."""
    root = root or repo_root()

    def git(*args: str) -> str:
        run = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=60)
        return run.stdout.strip()

    try:
        return git("rev-parse", "HEAD"), bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return "unknown", False


def code_git_state() -> tuple[str, bool]:
    """The git state of the checkout this package is imported from (not of TESTTASK_ROOT's data folders)."""
    return git_state(Path(__file__).resolve().parent)


def code_record(root: Path | None = None) -> dict[str, Any]:
    """The code a raw result was computed with, for its record: {"commit", "dirty"} of this package's checkout (or
    of `root`); both None outside a checkout."""
    commit, dirty = git_state(root) if root is not None else code_git_state()
    known = commit != "unknown"  # outside a checkout, or git missing
    return {"commit": commit if known else None, "dirty": dirty if known else None}


def command(fallback: str = FROM_PYTHON) -> str:
    """The running `testtask <overrides>` (Hydra's record; the library reads no `sys.argv`), else `fallback`."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return "testtask " + " ".join(HydraConfig.get().overrides.task)
    except (ImportError, ValueError):
        return fallback


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def tree_digest(root: Path, leave_out: Collection[str] = ()) -> tuple[str, int]:
    """(SHA-256 over the sorted "path<TAB>file SHA-256" lines of every file under `root`, number of files);
    files and folders below `root` whose name starts with a dot or is in `leave_out` are left out."""
    root = Path(root)
    lines = sorted(
        f"{p.relative_to(root).as_posix()}\t{file_sha256(p)}\n"
        for p in root.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") or part in leave_out for part in p.relative_to(root).parts)
    )
    return hashlib.sha256("".join(lines).encode()).hexdigest(), len(lines)


def data_identity(root: Path, source: str) -> dict[str, Any]:
    """The `data` entry of a provenance block for one data root (see the module docstring)."""
    from testtask.data.fetch import STAMP_NAME, canonical_json

    root = Path(root)
    entry: dict[str, Any] = {"root": in_repo(root)}
    if not root.is_dir():
        return {**entry, "present": False, "checksum": None}
    stamp_path = root / STAMP_NAME
    if source == "published" and stamp_path.is_file():
        try:
            stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
            hashes = stamp["hashes"]
            return {
                **entry,
                "present": True,
                "checksum": "sha256:" + hashlib.sha256(canonical_json(hashes)).hexdigest(),
                "checksum_of": f"the file hashes of the fetch stamp {STAMP_NAME} (canonical JSON)",
                "files": len(hashes),
                "fetched_from": stamp.get("source"),
            }
        except (OSError, ValueError, KeyError, TypeError) as err:
            log.warning("%s: unreadable fetch stamp (%s); hashing the files instead", stamp_path, err)
    start = time.perf_counter()
    digest, files = tree_digest(root)
    seconds = time.perf_counter() - start
    (log.info if seconds > 1 else log.debug)(
        "data checksum of %s: %d file(s) in %.2f s", root, files, seconds
    )
    return {
        **entry,
        "present": True,
        "checksum": "sha256:" + digest,
        "checksum_of": "every file under the root: sorted (relative path, file SHA-256), dot-files left out",
        "files": files,
    }


@dataclass
class Stamp:
    """The provenance of one builder's outputs, with the data roots it read, checksummed once through `cache`."""

    paper: str
    source: str
    seed: int
    data_root: Path
    out_dir: Path
    git_commit: str
    git_dirty: bool
    command: str
    run: str | None = None  # the results run read (source=results); the sidecar's readers check it
    protocol: str = "authors"  # the protocol preset (`protocol=...`); the sidecar's readers check it
    settings: dict[str, Any] | None = None  # pipeline.Variant.record(): the settings' fingerprint and variant
    cache: dict[str, dict[str, Any]] = field(default_factory=dict)  # resolved root -> data entry, per build
    others: dict[str, Path] = field(default_factory=dict)  # other papers' roots read, in order
    overlay_root: Path | None = None  # source=published+results: the run read over `data_root` (the release)

    def _entry(self, root: Path, source: str | None = None) -> dict[str, Any]:
        key = str(Path(root).resolve())
        if key not in self.cache:
            self.cache[key] = data_identity(root, source or self.source)
        return self.cache[key]

    def note_read(self, paper: str, root: Path) -> None:
        if paper != self.paper:
            self.others.setdefault(paper, Path(root))

    def block(self) -> dict[str, Any]:
        from testtask import __version__

        if self.overlay_root is None:
            data = dict(self._entry(self.data_root))
        else:  # both roots, each identified as its own source is (the release by its fetch stamp)
            data = {
                "published": self._entry(self.data_root, "published"),
                "results": self._entry(self.overlay_root, "results"),
            }
        if self.others:
            data["other_papers"] = {paper: self._entry(root) for paper, root in self.others.items()}
        return {
            "git_commit": self.git_commit,
            "dirty": self.git_dirty,
            "seed": self.seed,
            "source": self.source,
            "run": self.run,
            "protocol": self.protocol,
            "settings": self.settings,
            "data": data,
            "command": self.command,
            "testtask_version": __version__,
        }


_CURRENT: ContextVar[Stamp | None] = ContextVar("testtask_provenance", default=None)


def current() -> Stamp | None:
    return _CURRENT.get()


@contextlib.contextmanager
def stamping(stamp: Stamp) -> Iterator[Stamp]:
    """Sidecars written inside this block carry `stamp`'s provenance."""
    token = _CURRENT.set(stamp)
    hook = JSON_HOOK.set(stamped_if_sidecar)
    try:
        yield stamp
    finally:
        JSON_HOOK.reset(hook)
        _CURRENT.reset(token)


def note_read(paper: str, root: Path) -> None:
    """Record that the running builder reads `paper`'s data under `root` (called by `Context`)."""
    stamp = _CURRENT.get()
    if stamp is not None:
        stamp.note_read(paper, root)


def stamped(numbers: Any) -> Any:
    """A copy of `numbers` with the current provenance block; as given without a stamp, a dict or when it has one."""
    stamp = _CURRENT.get()
    if stamp is None or not isinstance(numbers, dict) or KEY in numbers:
        return numbers
    return {**numbers, KEY: stamp.block()}


def stamped_if_sidecar(path: Path, obj: Any) -> Any:
    """`io.atomic_write_json`'s hook: a JSON written under the running builder's output folder is a sidecar."""
    stamp = _CURRENT.get()
    if stamp is None:
        return obj
    try:
        Path(path).resolve().relative_to(Path(stamp.out_dir).resolve())
    except ValueError:
        return obj
    return stamped(obj)
