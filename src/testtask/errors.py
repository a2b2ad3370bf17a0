"""Errors a user makes (a bad override, a malformed results file, a ledger claim that does not fit its rule).

Each such error class derives from `InputError` and its usual built-in base (so callers keep catching what they
did); the command-line edges print its one message (`reported()`) instead of Hydra's traceback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class InputError(Exception):
    """An error in what the user gave (config, data, results, ledger); its message says what and where."""


class SettingUnusable(InputError, ValueError):
    """A setting valid on its own that the inputs read cannot serve (a benchmark the source lacks, a cutoff no
    model passes): one line naming the config key, its value, why, and what to change."""

    def __init__(self, key: str, value: Any, why: str, change: str) -> None:
        self.key = key
        super().__init__(f"{key} = {value!r}: {why}; {change}")


def message(err: BaseException) -> str:
    """The error's message as written (KeyError's str() would wrap it in quotes)."""
    if isinstance(err, KeyError) and len(err.args) == 1 and isinstance(err.args[0], str):
        return err.args[0]
    return str(err)


def full_error() -> bool:
    """True when the user asked for full tracebacks (Hydra's own switch, read the way Hydra reads it)."""
    return os.environ.get("HYDRA_FULL_ERROR") == "1"


@contextmanager
def reported() -> Iterator[None]:
    """Turn an InputError into `error: <message>` and exit status 1 (unless HYDRA_FULL_ERROR=1); SystemExit, so
    that Hydra's error reporting (which prints a traceback) passes it on."""
    try:
        yield
    except InputError as err:
        if full_error():
            raise
        raise SystemExit(f"error: {message(err)}") from None
