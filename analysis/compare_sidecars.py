"""Compare the JSON sidecars of two figure folders: the same numbers before and after a change of the code.

python analysis/compare_sidecars.py OLD_FIGURES NEW_FIGURES [--rtol 1e-9] [--atol 1e-12] [--ignore seconds ...]
                                   [--with-provenance] [--source published|results [--run RUN]]
                                   [--across-presets] [--by-file]

Walks every `*.json` under OLD_FIGURES (e.g. `figures/` built at an older commit), pairs it with the file of the
same relative path under NEW_FIGURES and compares them value by value: numbers within the tolerance, strings,
booleans and nulls exactly. Prints one line per difference (file, key path, old, new), keys only one side has,
and a summary; exits 1 when a shared value differs or a file is missing on the new side. Keys the new side adds
are listed but allowed (a sidecar may gain fields); `--strict` makes them differences too. `--ignore NAME` skips
every key called NAME (default: the wall-clock fields `seconds`, `fit_seconds`, `total_seconds`). A sidecar's
top-level `provenance` block (git commit, command, data checksum: it differs from one build to the next by design)
is left out of the comparison unless `--with-provenance` is given, but it is checked first
(testtask.sidecars.check): each new sidecar must be built from the source, results run and data its old one was
(a before/after comparison on other data compares nothing), and with `--source` (and `--run`) every sidecar on
both sides must be of that source; a mismatch stops the tool with a message naming both (exit 2). Point it at one
source folder on each side, e.g. `figures/<paper>/published` (testtask.paths.output_dir).

`--across-presets` compares the outputs of two protocol presets of one source and data, e.g.
`figures/<paper>/published` against `figures/<paper>/published.paper_text`: which figures and tables the presets
really change (the new side may then be of another preset; its source, run and data are still checked).
`--by-file` prints one line per sidecar (`same`, or how many differences) instead of every difference.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from testtask.paths import AUTHORS
from testtask.sidecars import Expected, ProvenanceMismatch, check

TIMINGS = ("seconds", "fit_seconds", "total_seconds")
PROVENANCE = "provenance"  # the top-level block testtask.provenance adds to every sidecar


def without_provenance(obj: Any) -> Any:
    """`obj` without its top-level `provenance` block."""
    return {k: v for k, v in obj.items() if k != PROVENANCE} if isinstance(obj, dict) else obj


def expected_from(path: Path, obj: Any) -> Expected | None:
    """What the sidecar `path` was built from, as the Expected its counterpart is checked against (None: it has
    no provenance block, so its counterpart is checked against nothing)."""
    block = obj.get(PROVENANCE) if isinstance(obj, dict) else None
    if not isinstance(block, dict) or "source" not in block:
        return None
    checksum = (block.get("data") or {}).get("checksum")
    return Expected.of(
        str(block.get("source")),
        block.get("run"),
        checksum,
        reader=f"the comparison with {path}",
        preset=preset_of(obj),
    )


def preset_of(obj: Any) -> str:
    """The protocol preset a sidecar was built under, by its name of the day (sidecars built before it was
    `protocol` say `analysis_preset`); `authors` when it has no provenance block."""
    block = obj.get(PROVENANCE) if isinstance(obj, dict) else None
    if not isinstance(block, dict):
        return AUTHORS
    return block.get("protocol") or block.get("analysis_preset") or AUTHORS


def numbers(obj: Any) -> int:
    """How many numbers a JSON value holds."""
    if isinstance(obj, dict):
        return sum(numbers(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(numbers(v) for v in obj)
    return int(_number(obj))


def differences(
    old: Any, new: Any, path: str, rtol: float, atol: float, ignore: tuple[str, ...] = ()
) -> Iterator[tuple[str, str, Any, Any]]:
    """(kind, key path, old, new) for every place the two JSON values differ; kind: changed | removed | added."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            sub = f"{path}.{key}" if path else str(key)
            if key in ignore:
                continue
            if key not in new:
                yield "removed", sub, old[key], None
            else:
                yield from differences(old[key], new[key], sub, rtol, atol, ignore)
        for key in sorted(new.keys() - old.keys() - set(ignore)):
            yield "added", f"{path}.{key}" if path else str(key), None, new[key]
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            yield "changed", f"{path}[len]", len(old), len(new)
        for i, (a, b) in enumerate(zip(old, new, strict=False)):
            yield from differences(a, b, f"{path}[{i}]", rtol, atol, ignore)
    elif _number(old) and _number(new):
        if not math.isclose(float(old), float(new), rel_tol=rtol, abs_tol=atol):
            yield "changed", path, old, new
    elif old != new:
        yield "changed", path, old, new


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rtol", type=float, default=1e-9)
    parser.add_argument("--atol", type=float, default=1e-12)
    parser.add_argument(
        "--strict", action="store_true", help="keys only the new side has count as differences"
    )
    parser.add_argument(
        "--ignore", action="append", help=f"key names to skip (default: {', '.join(TIMINGS)})"
    )
    parser.add_argument(
        "--with-provenance",
        action="store_true",
        help="compare the top-level provenance blocks too (they differ by commit, command and data)",
    )
    parser.add_argument(
        "--source", choices=("published", "results"), help="the source every sidecar must be of"
    )
    parser.add_argument("--run", help="with --source results: the results run every sidecar must be of")
    parser.add_argument(
        "--across-presets",
        action="store_true",
        help="the new side may be of another protocol preset (source, run and data still checked)",
    )
    parser.add_argument(
        "--by-file", action="store_true", help="one line per sidecar (same, or how many differences)"
    )
    args = parser.parse_args(argv)
    asked = Expected.of(args.source, args.run, reader="compare_sidecars") if args.source else None
    files = sorted(p.relative_to(args.old) for p in args.old.rglob("*.json"))
    bad = added = compared = changed_numbers = differing = 0
    for rel in files:
        target = args.new / rel
        if not target.is_file():
            print(f"{rel}: missing in {args.new}")
            bad += 1
            differing += 1
            continue
        old, new = (json.loads(p.read_text(encoding="utf-8")) for p in (args.old / rel, target))
        counterpart = expected_from(args.old / rel, old)
        asked_old = asked_new = asked
        if args.across_presets:  # each side is checked against its own preset
            counterpart = counterpart and dataclasses.replace(counterpart, preset=preset_of(new))
            asked_old = asked and dataclasses.replace(asked, preset=preset_of(old))
            asked_new = asked and dataclasses.replace(asked, preset=preset_of(new))
        try:
            check(args.old / rel, old, asked_old)
            check(target, new, asked_new)
            check(target, new, counterpart)
        except ProvenanceMismatch as err:
            print(f"refused: {err}")
            return 2
        if not args.with_provenance:
            old, new = without_provenance(old), without_provenance(new)
        ignore = tuple(args.ignore) if args.ignore is not None else TIMINGS
        compared += numbers(old)
        bad_before = bad
        for kind, key, a, b in differences(old, new, "", args.rtol, args.atol, ignore):
            changed_numbers += kind == "changed" and _number(a) and _number(b)
            shown = lambda v: json.dumps(v)[:120]  # noqa: E731 - one-line display
            if not args.by_file:
                print(f"{rel}: {kind} {key}: {shown(a)} -> {shown(b)}")
            if kind == "added" and not args.strict:
                added += 1
            else:
                bad += 1
        differing += bad > bad_before
        if args.by_file:
            print(f"{rel}: {'same' if bad == bad_before else f'{bad - bad_before} difference(s)'}")
    print(
        f"{len(files)} sidecar(s) compared (rtol {args.rtol:g}, atol {args.atol:g}): "
        f"{bad} difference(s), {added} added key(s); {compared} numbers compared, {changed_numbers} differ; "
        f"{differing} sidecar(s) differ"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
