"""Reading the JSON sidecars written beside figures and tables, for scripts that tabulate them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Missing(Exception):
    """A sidecar (or a field in it) that a row needs is absent."""


def load(folder: Path, name: str) -> dict | None:
    """`folder/name` parsed, or None when that output has not been built."""
    path = Path(folder) / name
    return json.loads(path.read_text()) if path.is_file() else None


def need(obj: Any) -> Any:
    """`obj`, or Missing when it is None (the row is then reported as not built)."""
    if obj is None:
        raise Missing
    return obj
