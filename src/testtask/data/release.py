"""Whether a fetched release on disk may be analysed (`verify_release`, before any figure): only if its stamp
lists every file and nothing else, each still with its fetched hash (or the size and mtime the fetch recorded),
which (from the mirror or GitHub) is the committed manifest's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from testtask.data.fetch import STAMP_NAME, ReleaseError, as_stamped, file_digest, load_manifest

log = logging.getLogger(__name__)

# Stamps from these sources were checked against the committed manifest at fetch time; others (synthetic trees
# that tests write) are checked for completeness and integrity only.
MANIFEST_SOURCES = ("mirror:", "github:")
SHOWN = 3  # paths quoted in an error message


def _fix(paper: str) -> str:
    return f"run `make data PAPER={paper}` to fetch it again"


def _read_stamp(folder: Path, paper: str) -> dict[str, Any]:
    path = folder / STAMP_NAME
    try:
        stamp = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReleaseError(
            f"{folder}: no {STAMP_NAME}, so this folder was not written by a finished `make data` "
            f"(a fetch that failed or was interrupted, or files copied by hand); {_fix(paper)}"
        ) from None
    except (OSError, ValueError) as err:
        raise ReleaseError(f"{path}: unreadable fetch stamp ({err}); {_fix(paper)}") from err
    if not isinstance(stamp, dict) or not isinstance(stamp.get("hashes"), dict) or not stamp["hashes"]:
        raise ReleaseError(f"{path}: field 'hashes' is missing or empty; {_fix(paper)}")
    return stamp


def _listing(paths: Sequence[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


def verify_release(
    folder: Path, paper: str, drop_keys: Sequence[str] = (), checksums_dir: Path | None = None
) -> None:
    """Raise ReleaseError unless `folder` is a complete, unmodified fetch of `paper`."""
    folder = Path(folder)
    try:
        mtime = (folder / STAMP_NAME).stat().st_mtime_ns
    except FileNotFoundError:
        _read_stamp(folder, paper)  # raises the missing-stamp error
        raise
    _verify_cached(str(folder.resolve()), paper, tuple(drop_keys), str(checksums_dir or ""), mtime)


@lru_cache(maxsize=32)
def _verify_cached(
    folder_s: str, paper: str, drop_keys: tuple[str, ...], checksums_s: str, mtime: int
) -> None:
    """The checks of `verify_release`, once per process per stamp (a figure build calls it per figure)."""
    folder = Path(folder_s)
    stamp = _read_stamp(folder, paper)
    hashes: Mapping[str, str] = stamp["hashes"]
    present = sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != STAMP_NAME
    )
    extra = [rel for rel in present if rel not in hashes]
    if extra:
        raise ReleaseError(
            f"{folder}: {len(extra)} file(s) not written by the fetch ({_listing(extra)}); an analysis would "
            f"read them unverified. Remove them, or {_fix(paper)}"
        )
    missing = sorted(set(hashes) - set(present))
    if missing:
        raise ReleaseError(
            f"{folder}: {len(missing)} fetched file(s) are gone ({_listing(missing)}); {_fix(paper)}"
        )
    # hashing the files as the fetch wrote them again would cost a second for a large release before every figure
    same = as_stamped(folder, stamp)
    changed = [
        rel
        for rel, digest in sorted(hashes.items())
        if rel not in same and file_digest(folder / rel, drop_keys) != digest
    ]
    if changed:
        raise ReleaseError(
            f"{folder}: {len(changed)} file(s) changed since the fetch ({_listing(changed)}); {_fix(paper)}"
        )
    if str(stamp.get("source", "")).startswith(MANIFEST_SOURCES):
        manifest = load_manifest(paper, Path(checksums_s) if checksums_s else None)
        stale = [rel for rel, digest in sorted(hashes.items()) if rel in manifest and manifest[rel] != digest]
        if stale:
            raise ReleaseError(
                f"{folder}: {len(stale)} file(s) differ from the committed checksum manifest ({_listing(stale)}); "
                f"the manifest changed since the fetch: {_fix(paper)}"
            )
    log.debug("%s: %d file(s) verified against %s", folder, len(hashes), STAMP_NAME)
