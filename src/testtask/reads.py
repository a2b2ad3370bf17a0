"""Which settings a build reads: while `recording` is active, every read of a field of a typed settings section
(`schema.section`) is noted by the key it has in the config, as a tuple of names (`label` gives each section its
key; a name may hold dots, e.g. a model's).

A read of a field that holds another labelled section only walks into it; any other value (a number, a word, a
list or mapping of settings) is a read of that whole key. A section handed on as a whole (its `__dict__`, pickled
for a worker process, copied) counts as a read of all of it. A section reachable at two keys makes the record
inexact (`Reads.exact`), and nothing is decided on an inexact record.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
from collections.abc import Iterator, Mapping
from typing import Any

Key = tuple[str, ...]
_KEY = "_testtask_key"  # where a labelled section keeps its key, in its instance dict
_AMBIGUOUS: Key = ("\0",)  # the key of a section reached at two keys
_CACHED_PROPERTY_GET = functools.cached_property.__get__.__code__
_WHOLE = frozenset({"__dict__", "__reduce_ex__", "__reduce__", "__getstate__", "__deepcopy__", "__copy__"})


@dataclasses.dataclass
class Reads:
    """The keys read (a key stands for everything under it); `exact` is False when one could not be told."""

    keys: set[Key] = dataclasses.field(default_factory=set)
    exact: bool = True


_ACTIVE: Reads | None = None  # a module global, not a context variable: builders read settings in threads too


def _key_of(obj: Any) -> Key | None:
    try:
        return object.__getattribute__(obj, "__dict__").get(_KEY)
    except AttributeError:
        return None


def _is_section(obj: Any) -> bool:
    return type(obj).__getattribute__ is getattribute


def getattribute(self: Any, name: str) -> Any:
    """Every settings section's `__getattribute__`: the attribute, noted while a record is active."""
    reads = _ACTIVE
    if reads is None:
        return object.__getattribute__(self, name)
    key = _key_of(self)
    # A value a `functools.cached_property` computed before: what it read is not known, so it reads everything.
    cached = key is not None and _is_cached(self, name)
    value = object.__getattribute__(self, name)
    if key is None:
        return value
    if key == _AMBIGUOUS:
        reads.exact = False
    elif name in type(self).__dataclass_fields__:
        if not (_is_section(value) and _key_of(value) is not None):
            reads.keys.add((*key, name))
    elif cached or (name in _WHOLE and not (name == "__dict__" and _filling_cache(sys._getframe(1), value))):
        reads.keys.add(key)
    return value


def _is_cached(obj: Any, name: str) -> bool:
    own = object.__getattribute__(obj, "__dict__")
    return name in own and isinstance(getattr(type(obj), name, None), functools.cached_property)


def _filling_cache(caller: Any, own: dict[str, Any]) -> bool:
    """Whether `functools.cached_property` reads a section's `__dict__` to compute a value it has not cached yet
    (the reads of that computation are noted as they happen)."""
    if caller.f_code is not _CACHED_PROPERTY_GET:
        return False
    prop = caller.f_locals.get("self")
    return isinstance(prop, functools.cached_property) and prop.attrname not in own


def label(value: Any, key: Key = ()) -> None:
    """Give every section in the typed config `value` its key (the root's is ())."""
    if _is_section(value):
        found = _key_of(value)
        own = object.__getattribute__(value, "__dict__")
        if found is not None and found != key:
            own[_KEY] = _AMBIGUOUS
            return
        own[_KEY] = key
        for name in type(value).__dataclass_fields__:
            label(object.__getattribute__(value, name), (*key, name))
    elif isinstance(value, Mapping):
        for name, item in value.items():
            label(item, (*key, str(name)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            label(item, (*key, str(index)))


@contextlib.contextmanager
def recording() -> Iterator[Reads]:
    """Note the settings read inside the block; an enclosing record gets them too."""
    global _ACTIVE
    outer, reads = _ACTIVE, Reads()
    _ACTIVE = reads
    try:
        yield reads
    finally:
        _ACTIVE = outer
        if outer is not None:
            outer.keys |= reads.keys
            outer.exact &= reads.exact


def value_at(plain: Any, key: Key) -> tuple[bool, Any]:
    """(found, value) at `key` of a plain settings tree."""
    node = plain
    for part in key:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Note nothing inside the block (the pipeline's own reads, e.g. where another paper's outputs go)."""
    global _ACTIVE
    outer, _ACTIVE = _ACTIVE, None
    try:
        yield
    finally:
        _ACTIVE = outer
