"""An output built once is copied, not built again, by a build that would make the same: same inputs, code and
libraries, and settings equal at every key the first build read (`reads`). So the two protocol presets share the
figures and tables that do not depend on where they differ, keyed by content, not by preset name.

After building an output, `pipeline.build` adds an entry to that output's index beside the outputs
(`<figures_dir>/.reuse/<paper>/<kind>-<number>-<key>.json`): the folder it went to, the settings keys it read with
their values, every file it wrote there with its SHA-256, and its provenance. The index's key holds the rest: the
paper and output, source and run, data roots, the code (the package's and conf/'s files) and library versions, the
user's own files, and the sampler, seed and diagnostics limits. Another build of that output looks there first
and takes an entry whose read settings equal its own, whose data checksums are its own and whose files are
unchanged: it copies them into its own folder, and each sidecar gets that build's provenance, with `reused_from`
naming the folder the files came from. Removing `<figures_dir>/.reuse/` makes the next build build everything.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import shutil
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from testtask import provenance, reads, schema
from testtask.io import atomic_save, atomic_write_json
from testtask.paths import conf_dir, in_repo, resolve

log = logging.getLogger(__name__)

INDEX = ".reuse"  # the index's folder in figures_dir (a dot-folder: no reader of outputs looks there)
REUSED_FROM = "reused_from"  # the provenance key of a copied sidecar: the folder its files came from
# Libraries whose version can change a figure's numbers or pixels.
LIBRARIES = (
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "arviz",
    "pymc",
    "nutpie",
    "numba",
    "statsmodels",
    "scikit-learn",
    "xgboost",
    "bambi",
    "pyarrow",
)


@functools.cache
def code_version() -> str:
    """A hash of every file of the package and of conf/, and of the libraries' versions."""
    import testtask

    h = hashlib.sha256()
    for root in (Path(testtask.__file__).resolve().parent, conf_dir()):
        # bytecode and numba's caches live in __pycache__ and change without the code changing
        h.update(provenance.tree_digest(root, leave_out={"__pycache__"})[0].encode())
    for name in LIBRARIES:
        try:
            h.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name}=absent".encode())
    return h.hexdigest()[:20]


def _sha256(path: Path) -> str | None:
    try:
        return provenance.file_sha256(path)
    except OSError:
        return None


@dataclasses.dataclass(frozen=True)
class Output:
    """One output of one build, as the reuse index sees it."""

    index: Path  # the index file of the output's key
    out_dir: Path  # where this build writes it
    settings: Any  # this build's settings, plain (schema.to_plain)

    def entries(self) -> list[dict[str, Any]]:
        try:
            return list(json.loads(self.index.read_text(encoding="utf-8"))["entries"])
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def _write(self, entry: dict[str, Any]) -> None:
        here = str(self.out_dir.resolve())
        kept = [e for e in self.entries() if e.get("out_dir") != here]
        atomic_write_json(self.index, {"entries": [*kept, entry]})

    def record(self, read: reads.Reads, written: Sequence[Path], stamp: provenance.Stamp) -> None:
        """Add what a build of this output read and wrote to the index (an inexact record is not added)."""
        root = self.out_dir.resolve()
        files = {}
        for path in dict.fromkeys(Path(p).resolve() for p in written):
            if path.is_relative_to(root) and (digest := _sha256(path)) is not None:
                files[path.relative_to(root).as_posix()] = digest
        values = [(key, *reads.value_at(self.settings, key)) for key in sorted(read.keys)]
        if not read.exact or not files or not all(found for _, found, _ in values):
            log.debug(
                "%s: not indexed for reuse (exact=%s, %d file(s))", self.index.name, read.exact, len(files)
            )
            return
        self._write(
            {
                "out_dir": str(root),
                "reads": [[list(key), value] for key, _, value in values],
                "others": {paper: str(Path(p).resolve()) for paper, p in stamp.others.items()},
                "files": files,
                "provenance": stamp.block(),
            }
        )

    def restore(self, stamp: provenance.Stamp) -> dict[str, Any] | None:
        """Copy the files of an entry that this build would make again into its folder, with `stamp`'s
        provenance in every sidecar; the entry, or None when there is none."""
        here = self.out_dir.resolve()
        for entry in reversed(self.entries()):
            try:
                source = Path(entry["out_dir"])
                if source == here or not self._reads_equal(entry["reads"]):
                    continue
                trial = dataclasses.replace(stamp, others={})  # the same checksum cache, its own papers read
                for paper, root in entry["others"].items():
                    trial.note_read(paper, Path(root))
                block = trial.block()
                if block["data"] != entry["provenance"]["data"]:
                    continue
                if any(_sha256(source / name) != digest for name, digest in entry["files"].items()):
                    continue
            except (KeyError, TypeError, AttributeError):  # an entry of another layout: build instead
                continue
            files = {name: self._copy(source / name, here / name, block, source) for name in entry["files"]}
            stamp.others.update(trial.others)
            self._write({**entry, "out_dir": str(here), "files": files, "provenance": block})
            return entry
        return None

    def _reads_equal(self, stored: list[list[Any]]) -> bool:
        """Whether this build's settings equal `stored` ([key, value] pairs) at each of its keys."""
        for key, value in stored:
            found, current = reads.value_at(self.settings, tuple(key))
            if not found or schema.differences(value, current):
                return False
        return True

    @staticmethod
    def _copy(source: Path, target: Path, block: dict[str, Any], folder: Path) -> str:
        """Copy one file; a sidecar gets `block` (and where it came from) as its provenance. Its new SHA-256."""
        numbers = None
        if source.suffix == ".json":
            numbers = json.loads(source.read_text(encoding="utf-8"))
        if isinstance(numbers, dict) and provenance.KEY in numbers:
            numbers[provenance.KEY] = {**block, REUSED_FROM: in_repo(folder)}
            atomic_write_json(target, numbers)
        else:
            atomic_save(target, lambda tmp: shutil.copyfile(source, tmp))
        return _sha256(target) or ""


def locate(ctx: Any, settings: dict[str, Any], kind: str, number: Any, user_files: dict[str, str]) -> Output:
    """Output `kind` `number` of the build of `ctx` in the reuse index; `settings`: the build's whole config,
    plain (schema.to_plain, once per build)."""
    key = {
        "paper": ctx.paper,
        "output": f"{kind} {number}",
        "source": ctx.source,
        "run": ctx.run,
        "roots": [str(Path(r).resolve()) for r in ctx.roots()],
        "code": code_version(),
        "user_files": user_files,
        **{name: settings[name] for name in ("sampler", "seed", "diagnostics")},
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:20]
    index = resolve(settings["figures_dir"]) / INDEX / ctx.paper / f"{kind}-{number}-{digest}.json"
    return Output(index, Path(ctx.out_dir), settings)
