"""Reading the JSON sidecars written beside figures and tables, checked against what the reader asked for
(`Expected`): a `provenance` block naming another source, run, data, preset or settings is refused
(`ProvenanceMismatch`). A sidecar without one (written by hand or outside `pipeline.build`) is accepted with a
warning: its folder (one per source and run) then says what it was built from.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testtask.errors import InputError
from testtask.paths import AUTHORS, PUBLISHED, run_of

log = logging.getLogger(__name__)

KEY = "provenance"  # = testtask.provenance.KEY (not imported: this module stays light for scripts)
DRAWN_WITHOUT = "drawn_without"  # a figure's notes of the inputs it was drawn without (outputs.save_figure)
_warned: set[str] = set()  # sidecars already warned about (once per process, not once per claim)


class Missing(Exception):
    """A sidecar (or a field in it) that a row needs is absent."""


class ProvenanceMismatch(InputError, ValueError):
    """A sidecar built from another source, run or data than the one it is read for."""


@dataclass(frozen=True)
class Expected:
    """What a reader was asked for (run: None for the release; checksum, settings: None, not compared)."""

    source: str
    run: str | None = None
    checksum: str | None = None
    reader: str = "the reader"  # who asked, for the message: "the report", "compare_sidecars"
    preset: str = AUTHORS  # the protocol preset (testtask.settings.Protocol) the reader reads the outputs of
    settings: str | None = None  # the fingerprint of the settings the outputs must be built with (None: any)
    user_files: dict[str, str] | None = None  # the user's own files in those settings (name -> SHA-256)

    @classmethod
    def of(
        cls,
        source: str,
        run: object = None,
        checksum: str | None = None,
        reader: str = "the reader",
        preset: object = AUTHORS,
        settings: str | None = None,
        user_files: dict[str, str] | None = None,
    ):
        """`run` as configured (results_run): dropped for source=published, where it names nothing."""
        run = run_of(str(source), run)
        return cls(str(source), run, checksum, reader, str(preset or AUTHORS), settings, user_files)

    def describe(self) -> str:
        return _described(self.source, self.run, self.preset)


def _described(source: Any, run: Any, preset: Any) -> str:
    under = "" if preset == AUTHORS else f" under protocol={preset}"
    return f"source={source}" + (f" (run {run})" if run else "") + under


def built_from(block: dict[str, Any]) -> str:
    """`source=results (run cpu-mini)` from a provenance block."""
    return _described(block.get("source"), block.get("run"), block.get("protocol") or AUTHORS)


def check(path: Path | str, document: Any, expected: Expected | None) -> Any:
    """`document` (the parsed sidecar at `path`) when its provenance agrees with `expected` (None: not checked);
    ProvenanceMismatch naming both when it does not."""
    if expected is None or not isinstance(document, dict):
        return document
    block = document.get(KEY)
    if not isinstance(block, dict) or "source" not in block:  # no block, or a partial one written by hand
        if str(path) not in _warned:
            _warned.add(str(path))
            log.warning(
                "%s has no provenance block (not built through `testtask`): read for %s on its folder's word",
                path,
                expected.describe(),
            )
        return document
    source = block.get("source")
    # `run` is absent from sidecars built before it was recorded: their source is still checked.
    run = run_of(str(source), block.get("run")) if "run" in block else expected.run
    checksum = (block.get("data") or {}).get("checksum")
    # Sidecars built before the preset was recorded were built with the defaults of their day: not compared.
    preset = block.get("protocol", expected.preset)
    if source != expected.source or run != expected.run or preset != expected.preset:
        args = [f"results_run={expected.run}"] if expected.run else []
        if expected.preset != AUTHORS:
            args.append(f"protocol={expected.preset}")
        raise ProvenanceMismatch(
            f"{path} was built from {built_from(block)}, {expected.reader} was asked for "
            f"{expected.describe()}; rebuild it with SOURCE={expected.source}"
            + (f" ARGS='{' '.join(args)}'" if args else "")
            + " or read the folder of the source and preset it was built for"
        )
    if expected.checksum and checksum and checksum != expected.checksum:
        raise ProvenanceMismatch(
            f"{path} was built from other data ({checksum[:19]}…) than {expected.reader} reads for "
            f"{expected.describe()} ({expected.checksum[:19]}…): the data changed since; rebuild it"
        )
    built = block.get("settings") or {}
    if expected.settings and built.get("fingerprint") and built["fingerprint"] != expected.settings:
        raise ProvenanceMismatch(f"{path}: {_other_settings(built, expected)}")
    return document


def _other_settings(built: dict[str, Any], expected: Expected) -> str:
    """Why a sidecar's settings are not the ones its reader asked for, naming the keys where the sidecar says."""
    differs = built.get("differs") or {}
    if differs and built.get("preset_fingerprint") == expected.settings:
        keys = ", ".join(f"{key}={value!r}" for key, value in differs.items())
        return (
            f"built with other settings than {expected.reader} reads for {expected.describe()}: {keys} (a variant "
            f"of the preset, whose outputs belong in figures/variants/{built.get('variant')}/); rebuild it with "
            "the preset's settings or read the variant's folder"
        )
    own = _own_files_changed(built.get("user_files") or {}, expected.user_files)
    if own:
        return (
            f"built with other settings than {expected.reader} reads for {expected.describe()}: your own files "
            f"changed since it was built ({own}); rebuild it with `make figures tables` and the report's overrides"
        )
    return (
        f"built with other settings than {expected.reader} reads for {expected.describe()} (fingerprint "
        f"{str(built.get('fingerprint'))[:12]}…, expected {expected.settings[:12]}…"
        + (
            f"; it differs from its own preset in {', '.join(differs)}"
            if differs
            else ": the preset's settings changed since it was built"
        )
        + "); rebuild it with `make figures tables` and the report's overrides"
    )


def _own_files_changed(built: dict[str, str], now: dict[str, str] | None) -> str:
    """The user's own files that differ between a sidecar's build and now, in words ('' when none or not known)."""
    if now is None:
        return ""
    changed = [
        f"{name} {'added' if name not in built else 'removed' if name not in now else 'edited'}"
        for name in sorted(set(built) | set(now))
        if built.get(name) != now.get(name)
    ]
    return ", ".join(changed)


def read(path: Path, expected: Expected | None) -> Any:
    """The sidecar at `path`, parsed and checked against `expected`."""
    return check(path, json.loads(Path(path).read_text(encoding="utf-8")), expected)


def release_checksum(data_root: Path, source: str) -> str | None:
    """The data checksum a published build records for `data_root` (from its fetch stamp, cheap); None for our
    runs (hashing every file of a run still being written would change; the run name is checked)."""
    from testtask.data.fetch import STAMP_NAME
    from testtask.provenance import data_identity

    if source != PUBLISHED or not (Path(data_root) / STAMP_NAME).is_file():
        return None
    return data_identity(Path(data_root), source).get("checksum")


def load(folder: Path, name: str, expected: Expected | None = None) -> dict | None:
    """`folder/name` parsed (and checked against `expected`), or None when that output has not been built."""
    path = Path(folder) / name
    return read(path, expected) if path.is_file() else None


def need(obj: Any) -> Any:
    """`obj`, or Missing when it is None (the row is then reported as not built)."""
    if obj is None:
        raise Missing
    return obj
