"""Typed settings: every config key is a field of a frozen `@section` dataclass (its type names its allowed
values); its value lives in YAML, never as a default in code.

`load(Schema, node, key)` reads a composed section once, at the edge, reporting every bad, missing and unknown
key at once, one line each (`invalid config: pretrain_on_test.figure_7.chains = 0: expected a positive
integer`). Relations between keys are a section's `__post_init__`, calling `require(...)` with `Problem`s.

Validation is pydantic's: OmegaConf 2.3's structured configs stop at the first error, cannot take a choice in a
union with a flag (`noncentered_t: true | false | auto`) and refuse to merge into frozen sections held in a
mapping (`analysis/schema_measurement.py` shows all three). Nothing heavy is imported, so a config error is
reported before torch loads.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import hashlib
import json
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import annotated_types as at
import typing_extensions
from pydantic import AllowInfNan, ConfigDict, Strict, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass as _pydantic_dataclass

from testtask import reads
from testtask.errors import InputError

T = TypeVar("T")

# --- what a value must be: types with their allowed values and the words for them ---------------------------


@dataclass(frozen=True)
class Text:
    """The words a message uses for what a type allows (`expected <words>`), attached with `Annotated`."""

    words: str


Int = Annotated[int, Strict(), Text("an integer")]
PositiveInt = Annotated[int, Strict(), at.Ge(1), Text("a positive integer")]
NonNegativeInt = Annotated[int, Strict(), at.Ge(0), Text("an integer >= 0")]
Flag = Annotated[bool, Strict(), Text("true or false")]
Name = Annotated[str, Strict(), at.MinLen(1), Text("a non-empty string")]
AnyText = Annotated[str, Strict(), Text("a string")]


def int_at_least(low: int) -> Any:
    return Annotated[int, Strict(), at.Ge(low), Text(f"an integer >= {low}")]


def number(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = True,
    high_open: bool = True,
    words: str | None = None,
) -> Any:
    """A finite number (an integer is one too), optionally bounded; `low_open`/`high_open`: strict bounds."""
    bounds: list[Any] = []
    if low is not None:
        bounds.append(at.Gt(low) if low_open else at.Ge(low))
    if high is not None:
        bounds.append(at.Lt(high) if high_open else at.Le(high))
    if words is None:
        if low is not None and high is not None:
            brackets = ("(" if low_open else "[") + f"{low:g}, {high:g}" + (")" if high_open else "]")
            words = f"a number in {brackets}"
        elif low is not None:
            words = f"a number {'>' if low_open else '>='} {low:g}"
        elif high is not None:
            words = f"a number {'<' if high_open else '<='} {high:g}"
        else:
            words = "a number"
    return Annotated[float, Strict(), AllowInfNan(False), *bounds, Text(words)]


Number = number()
PositiveNumber = number(0)
NonNegativeNumber = number(0, low_open=False)
Probability = number(0, 1)  # a level or a fraction strictly between 0 and 1
UnitInterval = number(0, 1, low_open=False, high_open=False)


def non_empty(item: Any) -> Any:
    """A list with at least one item of type `item`."""
    return Annotated[list[item], at.MinLen(1)]


class Choice(enum.StrEnum):
    """Base of every choice set: members compare equal to their value (`Counts.round == "round"`) and print as
    it, also inside a list or a mapping, so sidecars, notes and messages carry the plain word."""

    def __repr__(self) -> str:
        return repr(self.value)


# --- sections ------------------------------------------------------------------------------------------------

_RECORD_FIELD = "testtask.record_field"


def record_field(absent: Any = None) -> Any:
    """A field of a data record (many to a YAML file) that most records leave out, with what its absence means;
    never for a setting (`defaults_in_code` reports those)."""
    metadata = {_RECORD_FIELD: True}
    if isinstance(absent, dict):
        return field(default_factory=lambda: dict(absent), kw_only=True, metadata=metadata)
    return field(default=absent, kw_only=True, metadata=metadata)


_CONFIG = ConfigDict(extra="forbid", arbitrary_types_allowed=False, revalidate_instances="never")


def section(cls: type[T]) -> type[T]:
    """Make `cls` a settings section: a frozen dataclass whose construction validates every field, and whose
    fields' reads a build can record (`reads`)."""
    made = _pydantic_dataclass(frozen=True, config=_CONFIG)(cls)
    made.__getattribute__ = reads.getattribute  # type: ignore[method-assign]
    return made  # type: ignore[return-value]


def partial(cls: type, required: Iterable[str] = (), exclude: Iterable[str] = ()) -> Any:
    """A plain dict of some of section `cls`'s keys (`required` ones must be there), typed as `cls` types them:
    an override of some keys of a full section (e.g. a per-dataset training stage); absent keys stay as it has."""
    required, exclude = set(required), set(exclude)
    keys: dict[str, Any] = {}
    for name, annotation in field_types(cls).items():
        if name in exclude:
            continue
        base, metadata = _split(annotation)
        if dataclasses.is_dataclass(base):
            annotation = partial(base)
        keys[name] = annotation if name in required else typing_extensions.NotRequired[annotation]
    out = typing_extensions.TypedDict(f"Some{cls.__name__}", keys)  # type: ignore[operator]
    out.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
    out.__doc__ = f"Some keys of {cls.__qualname__}."
    return out


def _keys_of(base: Any) -> dict[str, Any] | None:
    """The keys of a TypedDict (`partial`) with their types, or None for any other type."""
    if not typing_extensions.is_typeddict(base):
        return None
    hints = typing_extensions.get_type_hints(base, include_extras=True)
    out = {}
    for name, annotation in hints.items():
        while get_origin(annotation) in (typing_extensions.NotRequired, typing_extensions.Required):
            (annotation,) = get_args(annotation)
        out[name] = annotation
    return out


@dataclass(frozen=True)
class _Tag:
    """A step into one option of a tagged union (pydantic puts the tag in an error's location)."""

    option: Any


def _tagged(annotation: Any) -> tuple[str, dict[str, Any]] | None:
    """(discriminator key, tag -> section) of a union of sections tagged by one of their keys
    (`Annotated[A | B, Field(discriminator="protocol")]`, each option's key a `Literal`), or None."""
    base, metadata = _split(annotation)
    if not _is_union(base):
        return None
    key = next(
        (m.discriminator for m in metadata if isinstance(getattr(m, "discriminator", None), str)), None
    )
    if key is None:
        return None
    options: dict[str, Any] = {}
    for option in get_args(base):
        if dataclasses.is_dataclass(option):
            for tag in get_args(_split(field_types(option)[key])[0]):
                options[str(tag.value if isinstance(tag, enum.Enum) else tag)] = option
    return key, options


@dataclass(frozen=True)
class Problem:
    """A broken relation between keys of one section: `key` (relative to the section) = `value`: expected
    `expected`. `{name}` in `expected` stands for the section's own key `name`, written out in full."""

    key: str
    value: Any
    expected: str


class Relations(ValueError):
    """Raised by a section's `__post_init__` with the relations it breaks."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(_line("", p) for p in problems))


def require(*problems: Problem | None | Iterable[Problem]) -> None:
    """Raise `Relations` with every given problem (None and empty iterables are fine relations)."""
    found = [q for p in problems if p is not None for q in ([p] if isinstance(p, Problem) else p)]
    if found:
        raise Relations(found)


def one_of(key: str, value: Any, known: Iterable[Any], what: str) -> Problem | None:
    """A Problem unless `value` is among `known` (`what` names them, e.g. "a key of {benchmarks}")."""
    names = [str(k) for k in known]
    return None if str(value) in names else Problem(key, value, f"{what} ({', '.join(names)})")


def all_of(key: str, values: Iterable[Any], known: Iterable[Any], what: str) -> Problem | None:
    """A Problem unless every item of `values` is among `known`."""
    values = list(values)
    names = [str(k) for k in known]
    if all(str(v) in names for v in values):
        return None
    return Problem(key, values, f"{what} ({', '.join(names)})")


# --- errors --------------------------------------------------------------------------------------------------


class ConfigError(InputError, ValueError):
    """The composed config breaks its schema; `violations` holds one line per bad key."""

    def __init__(self, violations: Iterable[str]):
        self.violations = list(dict.fromkeys(violations))
        super().__init__("\n".join(f"invalid config: {line}" for line in self.violations))


def _show(value: Any) -> str:
    if isinstance(value, enum.Enum):
        value = value.value
    return repr(value)


def _join(prefix: str, key: Any) -> str:
    if isinstance(key, int) and not isinstance(key, bool) and prefix:
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else str(key)


def _line(prefix: str, problem: Problem) -> str:
    expected = problem.expected.format_map(_Refs(prefix))
    return f"{_join(prefix, problem.key)} = {_show(problem.value)}: expected {expected}"


class _Refs(dict):
    def __init__(self, prefix: str):
        super().__init__()
        self.prefix = prefix

    def __missing__(self, key: str) -> str:
        return _join(self.prefix, key)


# --- describing a type ---------------------------------------------------------------------------------------


def _split(annotation: Any) -> tuple[Any, list[Any]]:
    """(the bare type, its Annotated metadata)."""
    metadata: list[Any] = []
    while get_origin(annotation) is Annotated:
        base, *extra = get_args(annotation)
        metadata.extend(extra)
        annotation = base
    return annotation, metadata


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def words(annotation: Any) -> str:
    """What a value of `annotation` must be, in the words of a config error."""
    base, metadata = _split(annotation)
    for item in metadata:
        if isinstance(item, Text):
            return item.words
    if _is_union(base):
        options = [a for a in get_args(base) if a is not type(None)]
        text = " or ".join(words(a) for a in options)
        return f"{text} (or null)" if len(options) < len(get_args(base)) else text
    if isinstance(base, type) and issubclass(base, enum.Enum):
        return "one of " + ", ".join(str(m.value) for m in base)
    origin = get_origin(base)
    if origin is list:
        (item,) = get_args(base)
        minimum = next((m.min_length for m in metadata if isinstance(m, at.MinLen)), 0)
        return f"a {'non-empty ' if minimum else ''}list, each item {words(item)}"
    if origin is dict:
        return f"a mapping, each value {words(get_args(base)[1])}"
    if dataclasses.is_dataclass(base):
        return f"a mapping with the keys {', '.join(f.name for f in dataclasses.fields(base))}"
    if (keys := _keys_of(base)) is not None:
        return f"a mapping with some of the keys {', '.join(keys)}"
    if base is Any:
        return "a value"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string"}.get(
        base, getattr(base, "__name__", str(base))
    )


@functools.cache  # resolving a section's annotations is most of walking a config's leaves; sections never change
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def field_types(cls: type) -> dict[str, Any]:
    """The declared type of each field of section `cls`."""
    hints = _hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _step(annotation: Any, key: Any) -> Any | None:
    """The type of `key` inside a value of `annotation`, or None when `annotation` is reported as a whole."""
    base, _ = _split(annotation)
    if _is_union(base):
        options = [a for a in get_args(base) if a is not type(None)]
        if len(options) == 1:
            return _step(options[0], key)
        tagged = _tagged(annotation)
        if tagged is not None and str(key) in tagged[1]:
            return _Tag(tagged[1][str(key)])
        return None
    if dataclasses.is_dataclass(base) and isinstance(key, str):
        return field_types(base).get(key)
    if (keys := _keys_of(base)) is not None:
        return keys.get(key) if isinstance(key, str) else None
    if get_origin(base) is dict and key != "[key]":
        return get_args(base)[1]
    if get_origin(base) is list and isinstance(key, int) and _nested(get_args(base)[0]):
        return get_args(base)[0]  # an item of a list of sections is reported by its own keys
    return None


def _fields_of(annotation: Any) -> list[str]:
    base, _ = _split(annotation)
    if _is_union(base):
        options = [a for a in get_args(base) if a is not type(None)]
        return _fields_of(options[0]) if len(options) == 1 else []
    if (keys := _keys_of(base)) is not None:
        return list(keys)
    return [f.name for f in dataclasses.fields(base)] if dataclasses.is_dataclass(base) else []


def _value_at(data: Any, path: list[Any]) -> Any:
    node = data
    for key in path:
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and -len(node) <= key < len(node):
            node = node[key]
        else:
            return None
    return node


def _violations(error: ValidationError, schema: Any, data: Any, prefix: str) -> list[str]:
    """One line per bad key of `data` (validated against `schema` under the config key `prefix`)."""
    lines: list[str] = []
    for item in error.errors(include_url=False):
        loc = list(item["loc"])
        kind = item["type"]
        annotation, path, consumed = schema, [], 0
        for key in loc:
            inner = _step(annotation, key)
            if inner is None:
                break
            consumed += 1
            if isinstance(inner, _Tag):  # the tag of a tagged union: no key of the config
                annotation = inner.option
                continue
            annotation, path = inner, [*path, key]
        key = functools.reduce(_join, path, prefix)
        rest = loc[consumed:]
        tagged = _tagged(annotation) if kind in ("union_tag_invalid", "union_tag_not_found") else None
        if tagged is not None:  # the key that picks the option: its value, or its absence
            name, options = tagged
            expected = f"one of {', '.join(options)}"
            if kind == "union_tag_invalid":
                shown = _show(_value_at(data, [*path, name]))
                lines.append(f"{_join(key, name)} = {shown}: expected {expected}")
            else:
                lines.append(f"{_join(key, name)}: missing, expected {expected}")
        elif kind in ("unexpected_keyword_argument", "extra_forbidden"):
            if rest:
                key = _join(key, rest[0])
            known = _fields_of(_parent(schema, loc))
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            lines.append(f"{key}: unknown key{hint}; the keys here are {', '.join(known)}")
        elif kind in ("missing", "missing_argument"):
            if rest:
                key = f"{key}.{rest[0]}" if key else str(rest[0])
            inner = _step(annotation, rest[0]) if rest else annotation
            lines.append(f"{key}: missing, expected {words(inner) if inner is not None else 'a value'}")
        elif kind == "value_error" and isinstance(item.get("ctx", {}).get("error"), Relations):
            lines += [_line(key, problem) for problem in item["ctx"]["error"].problems]
        elif kind == "value_error":
            lines.append(f"{key}: {item['ctx']['error']}")
        else:
            bad_key = f" (bad key {rest[0]!r})" if rest and rest[-1] == "[key]" else ""
            lines.append(f"{key} = {_show(_value_at(data, path))}: expected {words(annotation)}{bad_key}")
    return lines


def _parent(schema: Any, loc: list[Any]) -> Any:
    """The type holding the last key of `loc`."""
    annotation = schema
    for key in loc[:-1]:
        inner = _step(annotation, key)
        if inner is None:
            return annotation
        annotation = inner.option if isinstance(inner, _Tag) else inner
    return annotation


# --- loading -------------------------------------------------------------------------------------------------


def plain(node: Any, prefix: str = "", problems: list[str] | None = None, exclude: Iterable[str] = ()) -> Any:
    """A config node as plain values, interpolations resolved, keys `exclude` left out; a value that cannot be
    resolved is left out and reported in `problems`."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if problems is None:
        problems = []
    if isinstance(node, DictConfig | ListConfig):
        try:  # every value resolves: OmegaConf converts the whole tree at once, ~2x faster than the walk below
            return _container(node, exclude)
        except Exception:  # noqa: BLE001 - walk the nodes to name each value that does not resolve
            pass
    if isinstance(node, DictConfig):
        out: dict[Any, Any] = {}
        for key in node.keys():
            if key in exclude:
                continue
            where = _join(prefix, key)
            try:
                value = node[key]
            except Exception as err:  # a failing interpolation, a missing mandatory value
                reason = str(err).splitlines()[0] if str(err) else ""
                problems.append(f"{where}: could not be resolved ({type(err).__name__}: {reason})")
                continue
            out[key] = plain(value, where, problems)
        return out
    if isinstance(node, ListConfig):
        return [plain(node[i], _join(prefix, i), problems) for i in range(len(node))]
    if OmegaConf.is_config(node):  # pragma: no cover - no other container types
        return OmegaConf.to_container(node, resolve=True)
    if isinstance(node, Mapping):
        return {k: plain(v, _join(prefix, k), problems) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [plain(v, _join(prefix, i), problems) for i, v in enumerate(node)]
    return node


def _container(node: Any, exclude: Iterable[str]) -> Any:
    """`node` as plain values, interpolations resolved and keys `exclude` left out; raises where a value does not
    resolve or is missing (`???`)."""
    from omegaconf import OmegaConf

    left_out = set(exclude)
    if not left_out:
        return OmegaConf.to_container(node, resolve=True, throw_on_missing=True)
    out = {}
    for key in node.keys():
        if key not in left_out:
            value = node[key]
            is_config = OmegaConf.is_config(value)
            out[key] = (
                OmegaConf.to_container(value, resolve=True, throw_on_missing=True) if is_config else value
            )
    return out


def violations(
    schema: Any, node: Any, prefix: str = "", exclude: Iterable[str] = ()
) -> tuple[Any, list[str]]:
    """(the typed value of `node` under `schema`, or None; the lines of every problem)."""
    problems: list[str] = []
    data = plain(node, prefix, problems, exclude)
    if isinstance(node, Mapping) and not hasattr(node, "_get_node"):
        data = {k: v for k, v in data.items() if k not in exclude}
    try:
        value = _adapter(schema).validate_python(data)
    except ValidationError as err:
        return None, problems + _violations(err, schema, data, prefix)
    return (None if problems else value), problems


def load(schema: type[T], node: Any, prefix: str = "", exclude: Iterable[str] = ()) -> T:
    """The typed, frozen settings of `node` (its top-level keys `exclude` left out) under `schema`; ConfigError
    naming every bad key (under the config key `prefix`) otherwise."""
    value, lines = violations(schema, node, prefix, exclude)
    if lines:
        raise ConfigError(lines)
    return value


@functools.cache
def _adapter(schema: Any) -> TypeAdapter:
    return TypeAdapter(schema)


# --- what a build read ---------------------------------------------------------------------------------------


def to_plain(value: Any) -> Any:
    """Settings as JSON values (enums as their words, tuples as lists), for sidecars and fingerprints."""
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return to_plain(vars(value)) if hasattr(value, "__dict__") else repr(value)


def fingerprint(value: Any) -> str:
    """The SHA-256 of settings in a canonical JSON form: key order does not count, and `1` equals `1.0`."""
    text = json.dumps(_canonical(to_plain(value)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def differences(old: Any, new: Any, prefix: str = "") -> dict[str, tuple[Any, Any]]:
    """Dotted key -> (old, new) for every leaf where two plain settings trees differ (None for a missing side)."""
    out: dict[str, tuple[Any, Any]] = {}
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            out.update(differences(old.get(key), new.get(key), _join(prefix, key)))
        return out
    if _canonical(old) != _canonical(new):
        out[prefix] = (old, new)
    return out


# --- what a schema declares ----------------------------------------------------------------------------------


def leaves(schema: Any, data: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> declared type (None: undeclared) of every leaf of the plain config tree `data` under `schema`;
    lists, unions and enums are leaves."""
    out: dict[str, Any] = {}
    base, metadata = _split(schema)
    if _is_union(base):
        options = [a for a in get_args(base) if a is not type(None)]
        if len(options) == 1 and data is not None:
            return leaves(options[0], data, prefix)
        tagged = _tagged(schema)
        if tagged is not None and isinstance(data, Mapping) and str(data.get(tagged[0])) in tagged[1]:
            return leaves(tagged[1][str(data.get(tagged[0]))], data, prefix)
    walked = dataclasses.is_dataclass(base) or _keys_of(base) is not None
    if isinstance(data, Mapping) and (walked or get_origin(base) is dict):
        for key, value in data.items():
            inner = _step(schema, str(key)) if walked else get_args(base)[1]
            out.update(leaves(inner, value, _join(prefix, key)))
        return out
    typed = schema is not None and not (base is Any and not any(isinstance(m, Text) for m in metadata))
    out[prefix] = schema if typed else None
    return out


def _fields(schema: Any, seen: set[Any] | None = None) -> Iterator[tuple[type, dataclasses.Field]]:
    """(section, field) for every field of `schema` and the sections it holds, each section once."""
    seen = set() if seen is None else seen
    for annotation in _nested(schema):
        if annotation in seen:
            continue
        seen.add(annotation)
        yield from ((annotation, f) for f in dataclasses.fields(annotation))
        for inner in field_types(annotation).values():
            yield from _fields(inner, seen)


def defaults_in_code(schema: Any) -> list[str]:
    """`Class.field` for every field of `schema` (and the sections it holds) with a default in code, but records'."""
    return [
        f"{owner.__qualname__}.{f.name}"
        for owner, f in _fields(schema)
        if not f.metadata.get(_RECORD_FIELD)
        and (f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)
    ]


def _nested(annotation: Any) -> list[type]:
    """The section types `annotation` holds (itself, list items, mapping values, union options)."""
    base, _ = _split(annotation)
    if dataclasses.is_dataclass(base):
        return [base]
    if (keys := _keys_of(base)) is not None:
        return [t for inner in keys.values() for t in _nested(inner)]
    return [t for arg in get_args(base) for t in _nested(arg)]


def record_fields(schema: Any) -> list[str]:
    """`Class.field` for every `record_field` of `schema` and the sections it holds."""
    return [f"{owner.__qualname__}.{f.name}" for owner, f in _fields(schema) if f.metadata.get(_RECORD_FIELD)]
