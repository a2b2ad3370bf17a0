"""Claims × the sidecars present in `<figures_dir>/<paper>/<source folder>/` → verdicts: `matches`, `differs` or
`not computable` (what is missing and the command that makes it). A claim whose `needs` are absent is not
computable even when a sidecar holds a value computed on what is present: that value is shown, never judged.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from testtask import diagnostics
from testtask.report import notes, paths, rules
from testtask.report.ledger import Claim, Ledger, thaw
from testtask.sidecars import DRAWN_WITHOUT, Expected, read
from testtask.sidecars import KEY as PROVENANCE

MATCHES, DIFFERS, NOT_COMPUTABLE = "matches", "differs", "not computable"
STATUSES = (MATCHES, DIFFERS, NOT_COMPUTABLE)


class MissingOutput(LookupError):
    """A sidecar a claim reads has not been built."""

    def __init__(self, file: str):
        super().__init__(file)
        self.file = file


class NotComputable(LookupError):
    """Raised by a report-hook function when the sidecars it read cannot give the value; `unbuilt`: the outputs
    it needs that are not built yet (`command` builds them), which makes it no finding about the paper."""

    def __init__(self, message: str, unbuilt: tuple[str, ...] = (), command: str | None = None):
        super().__init__(message)
        self.unbuilt = tuple(unbuilt)
        self.command = command


def build_command(file: str, paper: str, source: str = "published", args: Sequence[str] = ()) -> str:
    """The command that builds the output whose sidecar is `file` (`figure-3.json` -> `make figure-3 ...`), with
    the overrides `args` that place it in the folder read."""
    stem = Path(file).stem
    match = re.fullmatch(r"(figure|table)-(.+)", stem)
    target = f"{match.group(1)}-{match.group(2)}" if match else "figures tables"
    command = f"make {target} PAPER={paper}" + ("" if source == "published" else f" SOURCE={source}")
    return command + (f" ARGS='{' '.join(args)}'" if args else "")


def _cell(text: str) -> Any:
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class Sidecars(Mapping[str, Any]):
    """The outputs of one paper by file name (a bare name means its JSON; a CSV is a list of row dicts), loaded on
    first use and checked against `expected` (ProvenanceMismatch, never "not computable"); MissingOutput if absent."""

    def __init__(
        self,
        folder: Path,
        expected: Expected | None = None,
        pages: Path | None = None,
        build_args: Sequence[str] = (),
    ):
        self.folder = Path(folder)
        self.expected = expected
        self.pages = pages  # `make assess-model`'s pages of this source (<pages>/<model>/<model>.json)
        self.build_args = tuple(build_args)  # what a command that builds into `folder` adds (own_files=false)
        self._cache: dict[str, Any] = {}
        self.touched: set[str] = set()  # read since the last `start_claim`: the files one claim rests on
        # every sidecar read: its provenance block (how it was built)
        self.built: dict[str, dict[str, Any]] = {}

    def _read(self, key: str, path: Path) -> Any:
        """The sidecar at `path`, checked against `expected`, its provenance block kept under `key`."""
        document = read(path, self.expected)
        block = document.get(PROVENANCE) if isinstance(document, dict) else None
        if isinstance(block, dict):
            self.built[key] = block
        return document

    def page(self, model: str) -> Any:
        """The JSON of `make assess-model`'s page of `model` (MissingOutput when it has not been made)."""
        key = f"assess-model/{model}.json"
        if key not in self._cache:
            path = (self.pages or self.folder) / model / f"{model}.json"
            if self.pages is None or not path.is_file():
                raise MissingOutput(key)
            self._cache[key] = self._read(key, path)
        self.touched.add(key)
        return self._cache[key]

    def user_files(self) -> dict[str, str]:
        """The user's own files (name -> SHA-256) the sidecars read since `start_claim` were built with."""
        found: dict[str, str] = {}
        for name in self.touched:
            settings = self.built.get(name, {}).get("settings") or {}
            found.update(settings.get("user_files") or {})
        return dict(sorted(found.items()))

    @staticmethod
    def file_name(name: str) -> str:
        return name if Path(name).suffix else f"{name}.json"

    def __getitem__(self, name: str) -> Any:
        file = self.file_name(name)
        if file not in self._cache:
            path = self.folder / file
            if not path.is_file():
                raise MissingOutput(file)
            if path.suffix == ".csv":
                beside = path.with_suffix(".json")  # a table's CSV has no provenance; its JSON sidecar does
                if beside.is_file():
                    self._read(beside.name, beside)
                with path.open(newline="", encoding="utf-8") as handle:
                    self._cache[file] = [
                        {k: _cell(v) for k, v in row.items()} for row in csv.DictReader(handle)
                    ]
            else:
                self._cache[file] = self._read(file, path)
        self.touched.add(file)
        return self._cache[file]

    def start_claim(self) -> None:
        self.touched = set()

    def with_failed_fits(self) -> tuple[str, ...]:
        """The files read since `start_claim` that record a fit which failed its diagnostics."""
        return tuple(sorted(f for f in self.touched if diagnostics.any_failed(self._cache[f])))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (self.folder / self.file_name(name)).is_file()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(p.name for p in self.folder.glob("*") if p.suffix in (".json", ".csv")))

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    status: str
    ours: str | None = None  # ours as shown (None when nothing could be computed)
    value: Any = None  # ours as computed (JSON-able), for the report's data
    difference: str | None = None
    missing: tuple[str, ...] = ()  # the inputs or sidecars that are absent
    command: str | None = None  # what makes the missing part
    reason: str | None = None  # why not computable, in words
    unbuilt: tuple[str, ...] = ()  # the sidecars it reads that are not built
    failed_fits: tuple[str, ...] = ()  # sidecars read that record a fit outside the diagnostics limits
    user_files: Mapping[str, str] = dataclasses.field(default_factory=dict)  # own files read: name -> SHA-256
    note: str | None = None  # the claim's note with its references read (report/notes.py; None: no note)
    unresolved: tuple[str, ...] = ()  # the note's references that could not be read, each with why

    def as_dict(self) -> dict[str, Any]:
        category = self.claim.category
        return {
            "id": self.claim.id,
            "where": self.claim.where,
            "statement": self.claim.statement,
            "paper": thaw(self.claim.paper),
            "status": self.status,
            "ours": self.ours,
            "value": self.value,
            "difference": self.difference,
            "missing": list(self.missing),
            "command": self.command,
            "reason": self.reason,
            "not_built": list(self.unbuilt),
            "note": self.note,
            "category": {"kind": category.kind, **thaw(category.fields)} if category else None,
            "failed_fits": list(self.failed_fits),
            "user_files": dict(self.user_files),
        }


def _scaled(value: Any, scale: float) -> Any:
    if scale == 1.0 or isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value * scale
    if isinstance(value, list):
        return [_scaled(v, scale) for v in value]
    if isinstance(value, dict):
        return {k: _scaled(v, scale) for k, v in value.items()}
    return value


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def compute(claim: Claim, sidecars: Sidecars, functions: Mapping[str, Callable[[Any], Any]]) -> Any:
    """Ours for `claim` (MissingOutput, paths.PathError or NotComputable when it cannot be had)."""
    ours = claim.ours
    if ours.function:
        value = functions[ours.function](sidecars)
    else:
        document = sidecars.page(ours.page) if ours.page else sidecars[ours.file]
        assert ours.path is not None
        if isinstance(ours.path, tuple):
            value = [paths.resolve(document, p) for p in ours.path]
        else:
            value = paths.resolve(document, ours.path)
    return _scaled(value, ours.scale)


def _no_value(claim: Claim, sidecars: Sidecars) -> str | None:
    """Why `claim` has no value where it reads a null from an output file: the file and path, with what the
    figure was drawn without where its sidecar says (outputs.save_figure); None for a claim computed otherwise."""
    ours = claim.ours
    if ours.function or ours.page or not ours.file:
        return None
    drawn = sidecars[ours.file].get(DRAWN_WITHOUT) or []
    return f"{ours.file} holds no value at {ours.path}" + (
        f"; drawn without: {'; '.join(drawn)}" if drawn else ""
    )


def evaluate_claim(
    claim: Claim,
    sidecars: Sidecars,
    data_root: Path,
    functions: Mapping[str, Callable[[Any], Any]],
    paper: str,
    source: str = "published",
) -> Verdict:
    """`claim`'s verdict, marked with the sidecars it read that record a fit failing its diagnostics."""
    sidecars.start_claim()
    verdict = _judge(claim, sidecars, data_root, functions, paper, source)
    failed = sidecars.with_failed_fits()
    return dataclasses.replace(verdict, failed_fits=failed, user_files=sidecars.user_files(), note=claim.note)


def _judge(
    claim: Claim,
    sidecars: Sidecars,
    data_root: Path,
    functions: Mapping[str, Callable[[Any], Any]],
    paper: str,
    source: str = "published",
) -> Verdict:
    missing_needs = tuple(need for need in claim.needs if not (Path(data_root) / need).exists())
    value: Any = None
    shown: str | None = None
    unbuilt: tuple[str, ...] = ()
    command: str | None = None  # what makes the sidecars `unbuilt`
    reason: str | None = None  # why ours cannot be had
    try:
        value = compute(claim, sidecars, functions)
        shown = rules.fmt(value)
    except MissingOutput as err:
        unbuilt, reason = (err.file,), f"{err.file} has not been built"
        command = build_command(err.file, paper, source, sidecars.build_args)
    except NotComputable as err:
        unbuilt, command, reason = err.unbuilt, err.command, str(err)
    except LookupError as err:  # a path the sidecar does not hold, rows it lacks
        reason = str(err) if not isinstance(err, KeyError) else f"a sidecar lacks {err}"
    if missing_needs:
        if shown is not None:  # the rule's view of the part present, shown but not judged
            with contextlib.suppress(rules.RuleError):
                shown = rules.apply(claim.rule.kind, value, thaw(claim.paper), claim.rule.params).ours
            if value == [] or value == {}:
                shown = None
        return Verdict(
            claim,
            NOT_COMPUTABLE,
            ours=shown,
            value=_jsonable(value),
            missing=missing_needs,
            command=f"make data PAPER={paper} (the full release; the offline mirror lacks it)",
            reason=f"missing input {', '.join(missing_needs)}",
            unbuilt=unbuilt,
        )
    if reason is not None:
        return Verdict(
            claim, NOT_COMPUTABLE, missing=unbuilt, command=command, reason=reason, unbuilt=unbuilt
        )
    try:
        outcome = rules.apply(claim.rule.kind, value, thaw(claim.paper), claim.rule.params)
    except rules.RuleError as err:
        reason = (_no_value(claim, sidecars) if value is None else None) or f"rule {claim.rule.kind}: {err}"
        shown = None if value is None else shown
        return Verdict(claim, NOT_COMPUTABLE, ours=shown, value=_jsonable(value), reason=reason)
    return Verdict(
        claim,
        MATCHES if outcome.matches else DIFFERS,
        ours=outcome.ours,
        value=_jsonable(value),
        difference=outcome.difference,
    )


def evaluate(
    ledger: Ledger,
    out_dir: Path,
    data_root: Path,
    functions: Mapping[str, Callable[[Any], Any]] | None = None,
    source: str = "published",
    expected: Expected | None = None,
    pages: Path | None = None,
) -> list[Verdict]:
    """Every claim of `ledger` on the sidecars in `out_dir` and the inputs in `data_root`; `expected`: what each
    sidecar's provenance must say (None: not checked); `pages`: `make assess-model`'s pages of that source."""
    return evaluate_on(ledger, Sidecars(out_dir, expected, pages), data_root, functions, source)


def evaluate_on(
    ledger: Ledger,
    sidecars: Sidecars,
    data_root: Path,
    functions: Mapping[str, Callable[[Any], Any]] | None = None,
    source: str = "published",
) -> list[Verdict]:
    """`evaluate` on sidecars already opened (the report reads them again for the notes: each file once)."""
    return [
        evaluate_claim(c, sidecars, data_root, functions or {}, ledger.paper, source) for c in ledger.claims
    ]


def _read_text(
    text: Any,
    values: Mapping[str, Any],
    outputs: Mapping[str, Sidecars],
    where: str,
    unresolved: list[str],
    withheld: str | None,
) -> Any:
    """A text field (or list of them) with its references read; other values as they are."""
    if isinstance(text, tuple):
        return tuple(_read_text(t, values, outputs, where, unresolved, withheld) for t in text)
    if not isinstance(text, str):
        return text
    rendered = notes.render(text, values, outputs, withheld)
    unresolved.extend(f"{where}: {why}" for why in rendered.unresolved)
    return rendered.text


def with_notes(
    verdicts: Mapping[str, list[Verdict]], outputs: Mapping[str, Sidecars]
) -> dict[str, list[Verdict]]:
    """Each preset's verdicts with the references (report/notes.py) of their claims' notes and categories read from
    the claims' values and the sidecars `outputs` of every preset: a note may quote both presets, so it is read once
    all are judged, and once for all of them. A claim whose inputs this data lacks reads none: its outputs were
    built on other data than its note speaks of."""
    values: dict[str, dict[str, Any]] = {}
    for preset, judged in verdicts.items():
        for v in judged:
            values.setdefault(v.claim.id, {})[preset] = v.value
    read: dict[str, tuple[Claim, str | None, tuple[str, ...]]] = {}  # claim id -> (claim, note, unresolved)
    for v in (v for judged in verdicts.values() for v in judged):
        if v.claim.id in read:
            continue
        claim, unresolved = v.claim, []
        # a claim whose inputs (`needs`) this data lacks (the same under every preset): its verdict says which
        withheld = "not on this data" if any(m not in v.unbuilt for m in v.missing) else None
        note = _read_text(claim.note, values[claim.id], outputs, "note", unresolved, withheld)
        if claim.category is not None:
            fields = {
                name: _read_text(value, values[claim.id], outputs, f"category.{name}", unresolved, withheld)
                for name, value in claim.category.fields.items()
            }
            claim = dataclasses.replace(
                claim, category=dataclasses.replace(claim.category, fields=MappingProxyType(fields))
            )
        read[v.claim.id] = (claim, note, tuple(unresolved))
    shown: dict[str, list[Verdict]] = {}
    for preset, judged in verdicts.items():
        shown[preset] = []
        for v in judged:
            claim, note, unresolved = read[v.claim.id]
            shown[preset].append(dataclasses.replace(v, claim=claim, note=note, unresolved=unresolved))
    return shown


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    return {status: sum(v.status == status for v in verdicts) for status in STATUSES}
