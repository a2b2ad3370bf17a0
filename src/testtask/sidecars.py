"""Reading the JSON sidecars written beside figures and tables, and checking that a sidecar is from the source it
is read for.

Every reader of a sidecar (the report, `analysis/compare_sidecars.py`, the notebooks, the summary scripts) passes
what it was asked for as an `Expected` to `check` (or reads through `read`/`load`): a sidecar whose `provenance`
block names another source, another results run, other data, another protocol preset or other settings (the
fingerprint of what its build read, `pipeline.Variant`) is refused with `ProvenanceMismatch`, naming both and, for
settings, the keys that differ.

A sidecar without a `provenance` block naming its source (written by hand, in tests, or by a builder called from Python outside
`pipeline.build`) is accepted with a warning: its folder (`paths.output_dir`, one per source and run) is then the
only thing that says what it was built from, and that is the layout every build writes.
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
_warned: set[str] = set()  # sidecars already warned about (once per process, not once per claim)


class Missing(Exception):
    """A sidecar (or a field in it) that a row needs is absent."""


class ProvenanceMismatch(InputError, ValueError):
    """A sidecar built from another source, run or data than the one it is read for."""


@dataclass(frozen=True)
class Expected:
    """What a reader was asked for: the source, the results run (None for the release) and, where the reader
    knows it, the data checksum (`provenance.data.checksum`; None: not compared)."""

    source: str
    run: str | None = None
    checksum: str | None = None
    reader: str = "the reader"  # who asked, for the message: "the report", "compare_sidecars"
    preset: str = AUTHORS  # the protocol preset (testtask.settings.Protocol) the reader reads the outputs of
    settings: str | None = None  # the fingerprint of the settings the outputs must be built with (None: any)

    @classmethod
    def of(
        cls,
        source: str,
        run: object = None,
        checksum: str | None = None,
        reader: str = "the reader",
        preset: object = AUTHORS,
        settings: str | None = None,
    ):
        """`run` as configured (results_run): dropped for source=published, where it names nothing."""
        return cls(str(source), run_of(str(source), run), checksum, reader, str(preset or AUTHORS), settings)

    def describe(self) -> str:
        return (
            f"source={self.source}"
            + (f" (run {self.run})" if self.run else "")
            + ("" if self.preset == AUTHORS else f" under protocol={self.preset}")
        )


def built_from(block: dict[str, Any]) -> str:
    """`source=results (run cpu-mini)` from a provenance block."""
    run = block.get("run")
    preset = block.get("protocol") or AUTHORS
    return (
        f"source={block.get('source')}"
        + (f" (run {run})" if run else "")
        + ("" if preset == AUTHORS else f" under protocol={preset}")
    )


def check(path: Path | str, document: Any, expected: Expected | None) -> Any:
    """`document` (the parsed sidecar at `path`) when its provenance agrees with `expected`; ProvenanceMismatch
    naming both when it does not. No `expected`: nothing is checked. No provenance block: a warning (see above)."""
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
            + " or read the folder of its own source"
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


def read(path: Path, expected: Expected | None) -> Any:
    """The sidecar at `path`, parsed and checked against `expected`."""
    return check(path, json.loads(Path(path).read_text(encoding="utf-8")), expected)


def release_checksum(data_root: Path, source: str) -> str | None:
    """The data checksum a published build records for `data_root` (from its fetch stamp, cheap); None for our
    runs (their checksum hashes every file, and a run still being written changes it: the run name is checked)."""
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
