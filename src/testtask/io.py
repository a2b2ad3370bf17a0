"""Atomic writes: a crash never leaves a half-written result behind, and the result is readable as the umask says
(`tempfile.mkstemp` makes 0600 files, which colleagues sharing a cluster project folder could not read)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np

_UMASK_LOCK = threading.Lock()
# The files written inside `noting_writes`: a module global, not a context variable, as builders write in threads.
_WRITTEN: list[Path] | None = None


@contextlib.contextmanager
def noting_writes() -> Iterator[list[Path]]:
    """The files `atomic_save` moves into place inside the block, in order (an enclosing block gets them too)."""
    global _WRITTEN
    outer, written = _WRITTEN, []
    _WRITTEN = written
    try:
        yield written
    finally:
        _WRITTEN = outer
        if outer is not None:
            outer.extend(written)


def current_umask() -> int:
    """The process umask (read by setting and restoring it; the lock keeps that safe across threads)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def file_mode(read_only: bool = False) -> int:
    """The mode `open()` gives a new file under the current umask; without write bits if `read_only`."""
    mode = 0o666 & ~current_umask()
    return mode & ~0o222 if read_only else mode


def atomic_save(path: Path, save: Callable[[Path], None], read_only: bool = False) -> Path:
    """Let `save(tmp_path)` write a file (a figure, a CSV) and move it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        save(Path(tmp))
        os.chmod(tmp, file_mode(read_only))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if _WRITTEN is not None:
        _WRITTEN.append(path)
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_save(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def atomic_write_bytes(path: Path, data: bytes, read_only: bool = False) -> Path:
    return atomic_save(path, lambda tmp: tmp.write_bytes(data), read_only)


def to_jsonable(obj: Any) -> Any:
    """Numpy scalars and arrays to plain JSON; NaN/inf to null so the file stays valid JSON."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj


# (path, object) -> the object to write: set by `testtask.provenance.stamping` while `pipeline.build` runs a
# builder, so a sidecar under its output folder gains the build's `provenance` block whichever writer wrote it.
JSON_HOOK: ContextVar[Callable[[Path, Any], Any] | None] = ContextVar("testtask_json_hook", default=None)


def atomic_write_json(path: Path, obj: Any) -> Path:
    """`obj` as indented JSON (through `JSON_HOOK` when one is set)."""
    hook = JSON_HOOK.get()
    if hook is not None:
        obj = hook(Path(path), obj)
    return atomic_write_text(path, json.dumps(to_jsonable(obj), indent=2, sort_keys=False) + "\n")


def unique_keys_hook(path: Path, error: type[Exception]) -> Callable[[list[tuple[str, Any]]], dict]:
    """A `json.loads` object hook raising `error` for a key given twice in one object (json keeps the last one)."""

    def hook(pairs: list[tuple[str, Any]]) -> dict:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise error(f"{path}: key {key!r} appears twice in one object")
            seen[key] = value
        return seen

    return hook


@contextlib.contextmanager
def file_lock(path: Path, wait: bool = True) -> Iterator[bool]:
    """An exclusive advisory lock on `path` (created when absent) for the block: waits for it and yields True, or
    with `wait=False` yields False at once where another process holds it (a lock ends with its holder, a killed
    one too)."""
    import fcntl

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
