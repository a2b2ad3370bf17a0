"""A small path language into a sidecar's JSON.

A path is segments joined by dots; each segment is a key, optionally followed by selectors in brackets:

    rows[lm_type=bert,m=50,n=50].boost_mean     the one row whose fields match (an error unless exactly one)
    panels[?effect=boost].divergences           every matching row (a list; later segments apply to each)
    panels[*].beta.r_hat                        every item of a list
    panels[0].m                                 an item by position
    counts.accuracies_from_paper.zero_bias.count

A filter value is compared with the field as a number when both read as numbers (`m=50` matches 50 and 50.0),
otherwise as text. Keys may hold any character but `.`, `[`, `]`.
"""

from __future__ import annotations

import re
from typing import Any

_SEGMENT = re.compile(r"([^.\[\]]*)((?:\[[^\]]*\])*)")
_SELECTOR = re.compile(r"\[([^\]]*)\]")


class PathError(LookupError):
    """A path that is malformed, or that the document does not hold (the message names the segment)."""


def _split(path: str) -> list[tuple[str, list[str]]]:
    if not path or not isinstance(path, str):
        raise PathError(f"empty path {path!r}")
    segments = []
    for part in _split_dots(path):
        match = _SEGMENT.fullmatch(part)
        if match is None or (not match.group(1) and not match.group(2)):
            raise PathError(f"malformed segment {part!r} in path {path!r}")
        segments.append((match.group(1), _SELECTOR.findall(match.group(2))))
    return segments


def _split_dots(path: str) -> list[str]:
    """Split on dots outside brackets (a filter value may hold a dot: `[band=0.04]`)."""
    parts, depth, current = [], 0, ""
    for char in path:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise PathError(f"unbalanced ']' in path {path!r}")
        if char == "." and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if depth:
        raise PathError(f"unbalanced '[' in path {path!r}")
    parts.append(current)
    return parts


def _number(text: Any) -> float | None:
    if isinstance(text, bool):
        return None
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _same(field: Any, wanted: str) -> bool:
    a, b = _number(field), _number(wanted)
    if a is not None and b is not None:
        return a == b
    return str(field) == wanted


def _filter(items: Any, selector: str, where: str) -> tuple[Any, bool]:
    """(result, is_multi) of one selector on `items`."""
    if not isinstance(items, list):
        raise PathError(f"{where}: [{selector}] needs a list, found {type(items).__name__}")
    if selector == "*":
        return list(items), True
    if selector.lstrip("-").isdigit():
        index = int(selector)
        if not -len(items) <= index < len(items):
            raise PathError(f"{where}: no item [{index}] in a list of {len(items)}")
        return items[index], False
    multi = selector.startswith("?")
    conditions = []
    for condition in selector.lstrip("?").split(","):
        key, eq, value = condition.partition("=")
        if not eq or not key.strip():
            raise PathError(f"{where}: malformed filter [{selector}] (want key=value[,key=value])")
        conditions.append((key.strip(), value.strip()))
    hits = [
        item
        for item in items
        if isinstance(item, dict) and all(k in item and _same(item[k], v) for k, v in conditions)
    ]
    if multi:
        return hits, True
    if len(hits) != 1:
        raise PathError(f"{where}: {len(hits)} items match [{selector}] (want exactly one)")
    return hits[0], False


def _step(value: Any, key: str, selectors: list[str], where: str) -> tuple[Any, bool]:
    multi = False
    if key:
        if not isinstance(value, dict):
            raise PathError(f"{where}: no key {key!r} (found {type(value).__name__})")
        if key not in value:
            raise PathError(f"{where}: no key {key!r}")
        value = value[key]
    for selector in selectors:
        if multi:
            raise PathError(f"{where}: a second selector after a list selector; add a key between them")
        value, multi = _filter(value, selector, where)
    return value, multi


def resolve(document: Any, path: str) -> Any:
    """The value at `path` in `document` (PathError naming the first segment the document does not hold)."""

    def walk(value: Any, rest: list[tuple[str, list[str]]], done: list[str]) -> Any:
        if not rest:
            return value
        (key, selectors), tail = rest[0], rest[1:]
        text = key + "".join(f"[{s}]" for s in selectors)
        where = ".".join([*done, text]) or text
        value, multi = _step(value, key, selectors, where)
        if multi:
            return [walk(item, tail, [*done, text]) for item in value]
        return walk(value, tail, [*done, text])

    return walk(document, _split(path), [])


def validate(path: str) -> None:
    """PathError when `path` is malformed (checked when a ledger is loaded, before any sidecar is read)."""
    for _, selectors in _split(path):
        for selector in selectors:
            if selector in ("*",) or selector.lstrip("-").isdigit():
                continue
            for condition in selector.lstrip("?").split(","):
                if "=" not in condition or not condition.partition("=")[0].strip():
                    raise PathError(f"malformed filter [{selector}] in path {path!r}")
