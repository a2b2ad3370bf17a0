"""A claim's note (and its category's texts) quotes our numbers by reference, read from the outputs when the report
is written, so that a rebuilt output cannot leave a note stating an old value.

A reference is written in braces:

    {ours}                             the claim's own value under the authors' preset, as the report shows it
    {ours|.4f}                         ... formatted with a Python format spec (`.1%` multiplies by 100)
    {ours:rise.direct|.3f}             ... a path into it (report/paths.py), when the value is a mapping or list
    {figure-15:panels[benchmark=bbh].p_value|.3f}
                                       a value of another output of the paper (its JSON sidecar, or a CSV)
    {paper_text ours|.4f}              the same under the paper's-text preset (protocol=paper_text)
    {paper_text table-4:rows[benchmark=mmlu].coef|.4f}

A brace itself is written twice, `{{` and `}}`. A key may hold `|`
(`{figure-4:mean_over_tasks.family|spearman|p_vocab.mean|.3f}`): the text after the last `|` is the format spec
where it reads as one, part of the path otherwise.

A reference that cannot be read is shown as `[...]` saying why: an output not built yet, a preset not evaluated, or
ours not computable; one that the built output cannot answer (a path it does not hold) is also listed among the
report's unresolved notes, as the ledger's error. A claim whose inputs the data lacks (its `needs`) reads none: its
outputs hold values of other data than its note speaks of.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from testtask.paths import AUTHORS, PAPER_TEXT
from testtask.report import paths, rules

OURS = "ours"
_REFERENCE = re.compile(
    r"\{(?:(?P<preset>[a-z_]+) )?(?P<output>[A-Za-z0-9][A-Za-z0-9_.-]*)"
    r"(?::(?P<path>[^{}]+?))?(?:\|(?P<spec>[^{}|]*))?\}"
)
# Python's format-spec grammar: a `|` in a path (a key may hold one) is taken as the spec's only where what follows
# it reads as a spec
_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?\d*[,_]?(?:\.\d+)?[bcdeEfFgGnosxX%]?")


class NoteError(ValueError):
    """A note whose references are malformed (checked when the ledger is loaded)."""


@dataclass(frozen=True)
class Reference:
    preset: str  # authors | paper_text
    output: str  # `ours`, or an output name (figure-15, table-2.csv)
    path: str | None
    spec: str


def _masked(text: str) -> str:
    """`text` with its escaped braces (`{{`, `}}`) masked, at the same positions."""
    return text.replace("{{", "\x00\x00").replace("}}", "\x01\x01")


def _unmasked(text: str) -> str:
    return text.replace("\x00\x00", "{").replace("\x01\x01", "}")


def references(note: str) -> list[tuple[re.Match[str], Reference]]:
    """The references of `note` in order (NoteError for a brace that opens no valid reference, or a bad part); the
    matches are on `note` with its escaped braces masked."""
    found = []
    position = 0
    note = _masked(note)
    for match in _REFERENCE.finditer(note):
        _no_stray_brace(note[position : match.start()])
        position = match.end()
        preset = match.group("preset") or AUTHORS
        if preset not in (AUTHORS, PAPER_TEXT):
            raise NoteError(
                f"{match.group(0)}: the preset is {PAPER_TEXT} or none (the authors'), not {preset!r}"
            )
        path, spec = match.group("path"), match.group("spec") or ""
        if path is not None and match.group("spec") is not None and not _SPEC.fullmatch(spec):
            path, spec = f"{path}|{spec}", ""  # the `|` was a key's
        if path is not None:
            try:
                paths.validate(path.strip())
            except paths.PathError as err:
                raise NoteError(f"{match.group(0)}: {err}") from None
        try:
            format(0.5, spec)
        except ValueError as err:
            raise NoteError(f"{match.group(0)}: format spec {spec!r}: {err}") from None
        found.append((match, Reference(preset, match.group("output"), path and path.strip(), spec)))
    _no_stray_brace(note[position:])
    return found


def _no_stray_brace(text: str) -> None:
    if "{" in text or "}" in text:
        raise NoteError(
            f"a brace that is no reference in {_unmasked(text).strip()!r} (a reference: {{ours|.3f}}, "
            "{figure-3:panels[0].beta.mean}, {paper_text ours}; a brace itself: {{ or }})"
        )


def _shown(value: Any, spec: str) -> str:
    if not spec:
        return rules.fmt(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_shown(v, spec) for v in value) + "]"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"format spec {spec!r} needs a number, the value is {rules.fmt(value)}")
    return format(value, spec)


@dataclass(frozen=True)
class Rendered:
    text: str
    unresolved: tuple[str, ...]  # the references the outputs there cannot answer, each with why


class _Waiting(LookupError):
    """What a reference reads is not there yet: an output not built, a preset not evaluated, ours not computable."""


def _read(ref: Reference, values: Mapping[str, Any], outputs: Mapping[str, Mapping[str, Any]]) -> Any:
    if ref.preset not in outputs:
        raise _Waiting(f"protocol={ref.preset} not evaluated")
    if ref.output == OURS:
        document = values.get(ref.preset)
        if document is None:
            raise _Waiting("ours is not computable")
    else:
        try:
            document = outputs[ref.preset][ref.output]
        except LookupError as err:  # MissingOutput (argument: the file) or a plain KeyError
            raise _Waiting(f"{err.args[0] if err.args else ref.output} not built") from None
    return paths.resolve(document, ref.path) if ref.path else document


def render(
    note: str,
    values: Mapping[str, Any],
    outputs: Mapping[str, Mapping[str, Any]],
    withheld: str | None = None,
) -> Rendered:
    """`note` with its references replaced: `values[preset]` is the claim's value under a preset, `outputs[preset]`
    that preset's sidecars by output name (a missing preset: not evaluated). A reference to what is not there yet is
    shown as such; one that what is there cannot answer (a path it does not hold, a number format on a text) is
    also listed as unresolved: that is the ledger's error. `withheld`: why no reference is read at all (the claim's
    inputs are incomplete, so the outputs hold values of other data than the note speaks of)."""
    parts, unresolved, position = [], [], 0
    masked = _masked(note)
    for match, ref in references(note):
        parts.append(_unmasked(masked[position : match.start()]))
        position = match.end()
        if withheld is not None:  # the verdict says what the data lacks
            parts.append(f"[{withheld}]")
            continue
        try:
            parts.append(_shown(_read(ref, values, outputs), ref.spec))
        except _Waiting as err:
            parts.append(f"[{match.group(0)[1:-1]}: {err}]")
        except (LookupError, TypeError) as err:
            unresolved.append(f"{match.group(0)} ({err})")
            parts.append(f"[{match.group(0)[1:-1]}: {err}]")
    parts.append(_unmasked(masked[position:]))
    return Rendered("".join(parts), tuple(unresolved))
