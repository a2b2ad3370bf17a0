"""Materialise the authors' published raw results under `data/published/<paper-key>/` (`make data`).

From a local mirror (`TESTTASK_DATA_MIRROR`, always copied, never linked) or the pinned GitHub commit (a
tarball), every file checked against the committed manifest `checksums/<paper-key>.sha256`. JSON files are hashed
canonically, after dropping the configured top-level keys, so a re-serialised mirror and a download hash alike.

A fetch is built in a staging folder beside the destination and swapped in only once every file has passed, so a
failed fetch leaves the previous good tree (or none), never a mix; fetched files are written read-only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from tqdm import tqdm

from testtask.errors import InputError
from testtask.io import atomic_write_bytes, atomic_write_json, atomic_write_text, current_umask

log = logging.getLogger(__name__)

CHECKSUMS_DIR = Path(__file__).with_name("checksums")
STAMP_NAME = ".fetched.json"
URL_TEMPLATE = "https://codeload.github.com/{repo}/tar.gz/{commit}"
DOWNLOAD_TIMEOUT_S = 60.0


class FetchError(InputError, RuntimeError):
    """A source could not be fetched (offline, missing mirror, incomplete archive)."""


class ReleaseError(FetchError):
    """A fetched release on disk cannot be trusted (no stamp, files added, changed or missing)."""


class ChecksumError(FetchError):
    """A fetched file's hash differs from the committed manifest."""

    def __init__(self, path: str, expected: str, actual: str) -> None:
        super().__init__(f"checksum mismatch for {path}: expected sha256 {expected}, got {actual}")
        self.path, self.expected, self.actual = path, expected, actual


# --------------------------------------------------------------------------------------------------- hashing


def canonical_json(obj: Any) -> bytes:
    """The serialisation JSON checksums are taken over: independent of indentation and key order."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class Prepared:
    """A file ready to write: `content` is None when the source bytes are kept as they are."""

    content: bytes | None
    digest: str


def prepare(raw: bytes, name: str, drop_keys: Sequence[str] = ()) -> Prepared:
    """Drop `drop_keys` from a JSON object and hash the file (canonical form for JSON, raw bytes otherwise)."""
    if not name.endswith(".json"):
        return Prepared(None, hashlib.sha256(raw).hexdigest())
    try:
        obj = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        # Not worth failing a whole fetch over; it will show as unverified unless the manifest has it raw.
        log.warning("%s is not valid JSON; hashing its raw bytes", name)
        return Prepared(None, hashlib.sha256(raw).hexdigest())
    dropped = [key for key in drop_keys if isinstance(obj, dict) and key in obj]
    for key in dropped:
        obj.pop(key, None)
    content = (json.dumps(obj, indent=1, ensure_ascii=False) + "\n").encode() if dropped else None
    return Prepared(content, hashlib.sha256(canonical_json(obj)).hexdigest())


def file_digest(path: Path, drop_keys: Sequence[str] = ()) -> str:
    """The manifest hash of a file on disk."""
    return prepare(Path(path).read_bytes(), Path(path).name, drop_keys).digest


# -------------------------------------------------------------------------------------------------- manifests


def manifest_path(paper: str, checksums_dir: Path | None = None) -> Path:
    return Path(checksums_dir or CHECKSUMS_DIR) / f"{paper}.sha256"


def load_manifest(paper: str, checksums_dir: Path | None = None) -> dict[str, str]:
    """`{relative path: sha256}` from `<paper>.sha256`; empty if there is none yet."""
    path = manifest_path(paper, checksums_dir)
    if not path.is_file():
        return {}
    entries: dict[str, str] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        digest, sep, rel = line.partition("  ")
        if not sep or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise FetchError(f"{path}:{lineno}: expected '<sha256>  <path>', got {line!r}")
        entries[rel] = digest
    return entries


def write_manifest(
    paper: str, hashes: Mapping[str, str], checksums_dir: Path | None = None, merge: bool = True
) -> Path:
    """Write `<paper>.sha256` (sorted, `sha256sum` format); with `merge`, keep entries not in `hashes`."""
    entries = load_manifest(paper, checksums_dir) if merge else {}
    entries.update(hashes)
    text = "".join(f"{digest}  {rel}\n" for rel, digest in sorted(entries.items()))
    return atomic_write_text(manifest_path(paper, checksums_dir), text)


# ------------------------------------------------------------------------------------------------------ globs


@lru_cache(maxsize=64)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """`**/` spans zero or more folders, `*` and `?` stay within one path segment."""
    out = []
    for i, part in enumerate(pattern.split("/")):
        last = i == pattern.count("/")
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        seg = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in part)
        out.append(seg if last else seg + "/")
    return re.compile("".join(out))


def matches(rel: str, include: Sequence[str]) -> bool:
    """Whether a posix path relative to the source folder matches any of the `include` globs."""
    return any(_glob_regex(str(p)).fullmatch(rel) for p in include)


# ---------------------------------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class SourceFile:
    """One file of a source: `rel` is relative to the source folder; `path` is set for mirror files."""

    rel: str
    raw: bytes
    path: Path | None = None


def _mirror_files(folder: Path, include: Sequence[str]) -> list[str]:
    """The files of a mirror folder that `include` takes, relative to it, sorted."""
    rels = (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return sorted(rel for rel in rels if matches(rel, include))


def _iter_mirror(folder: Path, rels: Iterable[str]) -> Iterator[SourceFile]:
    for rel in rels:
        yield SourceFile(rel, (folder / rel).read_bytes(), folder / rel)


def _iter_archive(archive: Path, subdir: str, include: Sequence[str]) -> Iterator[SourceFile]:
    prefix = f"{subdir.strip('/')}/" if subdir.strip("/") else ""
    # Streaming mode: members are read in order, so the archive is never held in memory.
    with tarfile.open(archive, mode="r|gz") as tar:
        for member in tar:
            # GitHub tarballs have a single top folder `<repo-name>-<commit>/`; strip it whatever its name.
            parts = member.name.split("/", 1)
            if not member.isfile() or len(parts) < 2 or not parts[1].startswith(prefix):
                continue
            rel = parts[1][len(prefix) :]
            if ".." in PurePosixPath(rel).parts or rel.startswith("/") or not matches(rel, include):
                continue
            handle = tar.extractfile(member)
            if handle is not None:
                yield SourceFile(rel, handle.read())


def download(url: str, path: Path, timeout: float = DOWNLOAD_TIMEOUT_S) -> None:
    """Stream `url` into `path`; a network failure becomes a FetchError naming the URL."""
    request = urllib.request.Request(url, headers={"User-Agent": "testtask-data-fetch"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, open(path, "wb") as out:
            size = response.headers.get("Content-Length")
            total = int(size) if size else None
            with tqdm(total=total, unit="B", unit_scale=True, desc="download", disable=None) as bar:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
        reason = getattr(err, "reason", err)
        raise FetchError(
            f"could not download {url} ({reason}). Are you offline? Point TESTTASK_DATA_MIRROR at a local "
            "mirror of the published data to copy it instead."
        ) from err


# ---------------------------------------------------------------------------------------------------- writing


def _read_stamp(paper_dest: Path) -> dict[str, Any] | None:
    try:
        return json.loads((paper_dest / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def file_stats(folder: Path, rels: Iterable[str]) -> dict[str, list[int]]:
    """`{rel: [size, mtime_ns]}` of files under `folder` (a missing file is left out): what the stamp records, so
    that a later fetch or read can tell the files unchanged without hashing them."""
    stats: dict[str, list[int]] = {}
    for rel in rels:
        try:
            st = os.stat(folder / rel)
        except OSError:
            continue
        stats[rel] = [st.st_size, st.st_mtime_ns]
    return stats


def as_stamped(folder: Path, stamp: Mapping[str, Any]) -> set[str]:
    """The stamped files under `folder` that keep the size and mtime the fetch recorded: the files it wrote (once,
    read-only, by rename), which need no hashing again."""
    stats = stamp.get("stats")
    if not isinstance(stats, dict):
        return set()
    return {rel for rel, now in file_stats(folder, stats).items() if now == stats[rel]}


def _mirror_unchanged(
    paper_dest: Path, source: str, read: Mapping[str, list[int]], manifest: Mapping[str, str]
) -> bool:
    """The last fetch was from this mirror folder, whose files (names, sizes, mtimes) are as they were then, and
    left every file in place as it wrote it, each hash still the manifest's: fetching again would change nothing."""
    stamp = _read_stamp(paper_dest)
    if not stamp or stamp.get("source") != source or stamp.get("source_stats") != read:
        return False
    hashes = stamp.get("hashes")
    if not isinstance(hashes, dict) or any(manifest.get(rel, d) != d for rel, d in hashes.items()):
        return False
    present = sorted(p.relative_to(paper_dest).as_posix() for p in paper_dest.rglob("*") if p.is_file())
    return present == sorted([*hashes, STAMP_NAME]) and as_stamped(paper_dest, stamp) == set(hashes)


def _up_to_date(paper_dest: Path, source: str, manifest: Mapping[str, str], drop_keys: Sequence[str]) -> bool:
    """A previous fetch from the same source left every file in place, each matching the manifest: all of the
    manifest's for a download; a mirror may hold part of a release (the offline one lacks pretrain-on-test's m =
    100), so only the files it had."""
    stamp = _read_stamp(paper_dest)
    if not stamp or stamp.get("source") != source or not isinstance(stamp.get("hashes"), dict):
        return False
    hashes: dict[str, str] = stamp["hashes"]
    complete = not source.startswith("github:") or set(manifest) <= set(hashes)
    if not complete or any(manifest.get(rel, d) != d for rel, d in hashes.items()):
        return False
    same = as_stamped(paper_dest, stamp)
    for rel, digest in hashes.items():
        path = paper_dest / rel
        # A file with other links may share its inode with a mirror (older fetches hard-linked): refetch it.
        if not path.is_file() or path.stat().st_nlink > 1:
            return False
        if rel not in same and file_digest(path, drop_keys) != digest:
            return False
    return True


def _record_stats(paper_dest: Path, read: Mapping[str, list[int]] | None = None) -> None:
    """Give the stamp of a release just verified in place the sizes and mtimes it lacks (a stamp of an older fetch),
    and the mirror's `read`, so that the next fetch needs no hashing. A release folder we may not write (shared,
    read-only) keeps its stamp, and the next fetch hashes again."""
    stamp = _read_stamp(paper_dest) or {}
    if "stats" in stamp and (read is None or stamp.get("source_stats") == read):
        return
    fields: dict[str, Any] = {"stats": file_stats(paper_dest, stamp.get("hashes") or {})}
    if read is not None:
        fields["source_stats"] = read
    try:
        atomic_write_json(paper_dest / STAMP_NAME, {**stamp, **fields})
    except OSError as err:
        log.debug("%s: stamp not updated (%s)", paper_dest, err)


def _present_report(
    paper: str, paper_dest: Path, source: str, manifest: Mapping[str, str], status: str
) -> dict[str, Any]:
    """The fetch report of data already in place (checked by `_up_to_date`)."""
    hashes = (_read_stamp(paper_dest) or {})["hashes"]
    return {
        "paper": paper,
        "status": status,
        "source": source,
        "dest": str(paper_dest),
        "files": len(hashes),
        "copied": 0,
        "verified": sum(rel in manifest for rel in hashes),
        "unverified": sorted(rel for rel in hashes if rel not in manifest),
        "missing": [],
        "hashes": hashes,
    }


# ------------------------------------------------------------------------------------------------------ fetch


def fetch_paper(
    paper: str,
    spec: Mapping,
    dest_root: Path,
    mirror: Path | None,
    verify: bool = True,
    write_checksums: bool = False,
    checksums_dir: Path | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Fetch one paper's files; see `fetch`."""
    include = list(spec.get("include") or ["**/*"])
    drop_keys = list(spec.get("json_drop_keys") or [])
    dest_subdir = str(spec.get("dest_subdir") or "").strip("/")
    paper_dest = Path(dest_root) / paper
    manifest = load_manifest(paper, checksums_dir)
    fresh = force or write_checksums  # nothing already in place is kept
    if verify and not write_checksums and not manifest:
        where = manifest_path(paper, checksums_dir)
        log.warning("%s: no checksum manifest at %s; nothing can be verified", paper, where)

    read: dict[str, list[int]] | None = None  # the mirror's file stats, for the stamp
    with tempfile.TemporaryDirectory(prefix="testtask-fetch-") as tmpdir:
        if mirror is not None:
            folder = Path(mirror) / str(spec["mirror_subdir"])
            if not folder.is_dir():
                log.warning("%s: %s is not in the mirror; skipped", paper, folder)
                return {"paper": paper, "status": "skipped", "source": str(folder), "reason": "not mirrored"}
            source = f"mirror:{folder.resolve()}"
            # before reading: a file the mirror changes during the fetch then differs from the stamp next time
            rels = _mirror_files(folder, include)
            read = file_stats(folder, rels)
            if not fresh and _mirror_unchanged(paper_dest, source, read, manifest):
                report = _present_report(paper, paper_dest, source, manifest, "up-to-date")
                _check_complete(paper, report, manifest, source, remote=False, verify=verify)
                log.info("%s: %d file(s) from %s already in place", paper, report["files"], source)
                return report
            files: Iterator[SourceFile] = _iter_mirror(folder, rels)
        else:
            repo, commit = str(spec["repo"]), str(spec["commit"])
            source = f"github:{repo}@{commit}/{str(spec.get('subdir', '')).strip('/')}"
            if not fresh and _up_to_date(paper_dest, source, manifest, drop_keys):
                _record_stats(paper_dest)
                log.info("%s: already fetched from %s", paper, source)
                return _present_report(paper, paper_dest, source, manifest, "up-to-date")
            url = URL_TEMPLATE.format(repo=repo, commit=commit)
            archive = Path(tmpdir) / "source.tar.gz"
            log.info("%s: downloading %s", paper, url)
            try:
                download(url, archive)
            except FetchError:
                # Offline with data already fetched (e.g. from a mirror) that still matches the manifest: keep it.
                kept = None if fresh else _verified_in_place(paper_dest, manifest, drop_keys)
                if kept is None:
                    raise
                previous = kept["source"]
                log.warning("%s: download failed; keeping the verified data fetched from %s", paper, previous)
                return _present_report(paper, paper_dest, previous, manifest, "kept (offline)")
            files = _iter_archive(archive, str(spec.get("subdir", "")), include)

        in_place = None if fresh else _verified_in_place(paper_dest, manifest, drop_keys)
        staging = _new_staging(paper_dest)
        try:
            report = _materialise(
                paper, files, staging, paper_dest, dest_subdir, drop_keys, manifest, verify, write_checksums
            )
            report["source"] = source
            _check_complete(
                paper, report, manifest, source, remote=mirror is None, verify=verify and not write_checksums
            )
            if write_checksums:
                written = write_manifest(paper, report["hashes"], checksums_dir)
                log.info("%s: wrote %d checksum(s) to %s", paper, len(report["hashes"]), written)
            kept = _more_complete(in_place, source, report)
            if kept is not None:
                log.warning(
                    "%s: keeping the release in place (from %s): it holds %d verified file(s) of the manifest that "
                    "%s lacks (e.g. %s); remove %s to replace it by that source's files",
                    paper,
                    kept["source"],
                    len(kept["more"]),
                    source,
                    kept["more"][0],
                    paper_dest,
                )
                return _present_report(paper, paper_dest, kept["source"], manifest, "kept (more complete)")
            if _unchanged(paper_dest, source, report):
                report["status"] = "up-to-date"
                log.info("%s: %d file(s) from %s already in place", paper, report["files"], source)
                _record_stats(paper_dest, read)
                return report
            stamp = {
                "paper": paper,
                "source": source,
                "files": report["files"],
                "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "hashes": report["hashes"],
                "stats": file_stats(staging, report["hashes"]),
                **({"source_stats": read} if read is not None else {}),
            }
            atomic_write_json(staging / STAMP_NAME, stamp)
            _swap_in(staging, paper_dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    report["status"] = "fetched"
    log.info(
        "%s: %d file(s) from %s (%d written, %d verified) into %s",
        paper,
        report["files"],
        source,
        report["copied"],
        report["verified"],
        paper_dest,
    )
    return report


def _verified_in_place(
    paper_dest: Path, manifest: Mapping[str, str], drop_keys: Sequence[str]
) -> dict[str, Any] | None:
    """The source and manifest files of the release in place when it is verified, else None."""
    stamp = _read_stamp(paper_dest)
    previous = (stamp or {}).get("source")
    if not previous or not _up_to_date(paper_dest, previous, manifest, drop_keys):
        return None
    return {"source": previous, "files": set(stamp["hashes"]) & set(manifest)}


def _more_complete(
    in_place: dict[str, Any] | None, source: str, report: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The release in place when it holds verified manifest files that `source` lacks (a partial mirror after a
    complete download): replacing it would silently drop data. Else None."""
    if in_place is None or in_place["source"] == source:
        return None
    more = sorted(in_place["files"] - set(report["hashes"]))
    return {"source": in_place["source"], "more": more} if more else None


def _check_complete(
    paper: str, report: dict[str, Any], manifest: Mapping[str, str], source: str, remote: bool, verify: bool
) -> None:
    """Record manifest files the source lacks (an error for a download), and warn about unverified files."""
    missing = sorted(set(manifest) - set(report["hashes"]))
    report["missing"] = missing
    if missing:
        if remote and verify:
            raise FetchError(
                f"{paper}: {len(missing)} file(s) of the manifest are not in {source}, e.g. {missing[0]}"
            )
        # Mirrors may hold a subset of the release.
        log.info("%s: %d manifest file(s) not in the source (e.g. %s)", paper, len(missing), missing[0])
    if report["unverified"] and verify:
        shown = ", ".join(report["unverified"][:3])
        count = len(report["unverified"])
        log.warning("%s: %d file(s) not in the checksum manifest, unverified (e.g. %s)", paper, count, shown)


def _new_staging(paper_dest: Path) -> Path:
    """An empty folder beside `paper_dest` (same file system, so the final move is a rename)."""
    paper_dest.parent.mkdir(parents=True, exist_ok=True)
    for stale in paper_dest.parent.glob(f".{paper_dest.name}.staging-*"):
        # Left by a fetch that was killed; its process is gone if its pid is.
        pid = stale.name.rsplit("-", 1)[-1].split(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    staging = Path(
        tempfile.mkdtemp(prefix=f".{paper_dest.name}.staging-{os.getpid()}.", dir=paper_dest.parent)
    )
    staging.chmod(0o777 & ~current_umask())  # mkdtemp makes it 0700; the release folder follows the umask
    return staging


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _unchanged(paper_dest: Path, source: str, report: Mapping[str, Any]) -> bool:
    """The tree in place holds exactly the fetched files, from the same source, none shared with the source."""
    stamp = _read_stamp(paper_dest)
    return (
        stamp is not None
        and stamp.get("source") == source
        and stamp.get("hashes") == report["hashes"]
        and report["copied"] == 0
        and not report["relinked"]
    )


def _swap_in(staging: Path, paper_dest: Path) -> None:
    """Replace `paper_dest` by `staging`: two renames, rolled back if the second fails."""
    old = None
    if paper_dest.exists():
        old = paper_dest.with_name(f".{paper_dest.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(paper_dest, old)
    try:
        os.replace(staging, paper_dest)
    except OSError:
        if old is not None:
            os.replace(old, paper_dest)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _materialise(
    paper: str,
    files: Iterator[SourceFile],
    staging: Path,
    previous: Path,
    dest_subdir: str,
    drop_keys: Sequence[str],
    manifest: Mapping[str, str],
    verify: bool,
    write_checksums: bool,
) -> dict[str, Any]:
    """Check each source file against the manifest and write it, read-only, under `staging`; a file equal to our
    own copy under `previous` is hard-linked from there (`copied` counts the new or changed ones)."""
    hashes: dict[str, str] = {}
    unverified: list[str] = []
    updated: list[str] = []
    relinked: list[str] = []
    copied = verified = 0
    for item in tqdm(files, desc=paper, unit="file", disable=None):
        rel = f"{dest_subdir}/{item.rel}" if dest_subdir else item.rel
        prepared = prepare(item.raw, item.rel, drop_keys)
        expected = manifest.get(rel)
        if expected is None:
            unverified.append(rel)
            log.debug("%s: %s is not in the manifest", paper, rel)
        elif expected == prepared.digest:
            verified += 1
        elif write_checksums:
            updated.append(rel)
            log.warning("%s: checksum of %s changed; updating the manifest", paper, rel)
        elif verify:
            # Raise before swapping anything in, so a corrupt source never lands in the destination.
            raise ChecksumError(f"{rel} (from {item.path})" if item.path else rel, expected, prepared.digest)
        else:
            log.warning("%s: %s does not match the manifest (verification off)", paper, rel)
        hashes[rel] = prepared.digest

        dest, old = staging / rel, previous / rel
        if old.is_file() and file_digest(old, drop_keys) == prepared.digest:
            if old.stat().st_nlink > 1:  # shared with another file (older fetches hard-linked the mirror)
                relinked.append(rel)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.link(old, dest)
                continue
        else:
            copied += 1
        # Bytes, never a link to the source: the mirror must not change when the copy does.
        atomic_write_bytes(dest, item.raw if prepared.content is None else prepared.content, read_only=True)
    if relinked:
        log.info("%s: %d file(s) were hard links into the mirror; now private copies", paper, len(relinked))
    return {
        "paper": paper,
        "dest": str(previous),
        "files": len(hashes),
        "copied": copied,
        "verified": verified if verify or write_checksums else 0,
        "unverified": unverified,
        "updated": updated,
        "relinked": relinked,
        "hashes": hashes,
    }


def fetch(
    papers: list[str],
    sources: Mapping,
    dest_root: Path,
    mirror: Path | None,
    verify: bool = True,
    write_checksums: bool = False,
    *,
    checksums_dir: Path | None = None,
    force: bool = False,
) -> dict[str, dict[str, Any]]:
    """Fetch each paper's published files into `dest_root/<paper>/`, from `mirror` if given, else GitHub:
    `{paper: report}`. ChecksumError on a mismatch, unless `write_checksums` records the hashes instead."""
    unknown = [p for p in papers if p not in sources]
    if unknown:
        raise KeyError(f"no data source for {', '.join(unknown)}; known: {', '.join(sources)}")
    if mirror is not None:
        mirror = Path(mirror).expanduser()
        mirror = mirror if mirror.is_absolute() else Path.cwd() / mirror
        if not mirror.is_dir():
            raise FetchError(f"data mirror {mirror} is not a folder")
    return {
        paper: fetch_paper(
            paper, sources[paper], Path(dest_root), mirror, verify, write_checksums, checksums_dir, force
        )
        for paper in papers
    }


def mirror_from_env(name: str = "TESTTASK_DATA_MIRROR") -> Path | None:
    """The mirror named by environment variable `name`, relative paths against the working directory."""
    value = os.environ.get(name, "").strip()
    return Path.cwd() / Path(value).expanduser() if value else None


def fetch_from_config(data: Any, papers: Sequence[str], **kwargs: Any) -> dict[str, dict[str, Any]]:
    """`make data`: fetch `papers` per the typed `data` settings (papers without published data skipped);
    `kwargs` go to `fetch`."""
    from testtask.paths import resolve
    from testtask.schema import to_plain

    sources = to_plain(data.sources)
    for key in (k for k in papers if k not in sources):
        log.info("%s: no published raw results to fetch", key)
    wanted = [k for k in papers if k in sources]
    kwargs.setdefault("verify", data.verify)
    return fetch(wanted, sources, resolve(data.dest), mirror_from_env(data.mirror_env), **kwargs)
