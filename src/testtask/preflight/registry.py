"""The preflight's checks: a function of the run's `Context` returning its key numbers (raising to fail,
`Skip` to be skipped), registered in running order with `@check(...)`.

`cuda_only` says what a `--cpu` run cannot show, with the reason: the whole check (`WHOLE`) or named parts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

NEEDS = {
    "cuda": "needs a CUDA GPU",
    "2gpu": "needs 2 GPUs on CUDA (on the CPU: 2 gloo ranks)",
}
WHOLE = "whole check"  # the `cuda_only` part of a check that needs CUDA altogether


class Skip(Exception):  # noqa: N818 -- raised to skip, not an error
    """Raised by a check that cannot run here; the message says why."""


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[Any], dict[str, Any] | None]
    description: str
    needs: frozenset[str] = field(default_factory=frozenset)
    cuda_only: Mapping[str, str] = field(default_factory=dict)  # part -> why only CUDA can show it

    def __post_init__(self) -> None:
        unknown = set(self.needs) - set(NEEDS)
        if unknown:
            raise ValueError(f"check {self.name!r}: unknown needs {sorted(unknown)}; known: {sorted(NEEDS)}")
        if ("cuda" in self.needs) != (WHOLE in self.cuda_only):
            raise ValueError(
                f"check {self.name!r}: a check that needs CUDA gives the reason as cuda_only[{WHOLE!r}], "
                "and only such a check"
            )
        if not all(str(reason).strip() for reason in self.cuda_only.values()):
            raise ValueError(f"check {self.name!r}: every cuda_only part needs its reason")
        object.__setattr__(self, "cuda_only", MappingProxyType(dict(self.cuda_only)))


REGISTRY: dict[str, Check] = {}


def register(item: Check) -> Check:
    if item.name in REGISTRY and REGISTRY[item.name].run is not item.run:
        raise ValueError(f"a check named {item.name!r} is registered already")
    REGISTRY[item.name] = item
    return item


def check(
    name: str, description: str, needs: Iterable[str] = (), cuda_only: Mapping[str, str] | None = None
) -> Callable:
    """Decorator: register the function as the check `name`."""

    def wrap(fn: Callable[[Any], dict[str, Any] | None]) -> Callable[[Any], dict[str, Any] | None]:
        register(Check(name, fn, description, frozenset(needs), dict(cuda_only or {})))
        return fn

    return wrap


def checks() -> dict[str, Check]:
    """Every registered check, in running order (importing the check modules registers them)."""
    import testtask.preflight.checks  # noqa: F401

    return REGISTRY


def select(only: Iterable[str] | None) -> list[Check]:
    """The checks named in `only` (in registry order), or all of them; an unknown name is a KeyError."""
    registry = checks()
    if not only:
        return list(registry.values())
    wanted = list(dict.fromkeys(only))
    unknown = [name for name in wanted if name not in registry]
    if unknown:
        raise KeyError(f"unknown check(s) {', '.join(unknown)}; known: {', '.join(registry)}")
    return [registry[name] for name in registry if name in wanted]
