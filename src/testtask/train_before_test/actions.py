"""This paper's actions beyond figures and tables: `testtask action=<name> paper=<key>` (fn(context, config))."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ACTIONS: dict[str, Callable[[Any, Any], Any]] = {}
