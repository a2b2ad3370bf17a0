"""Compare two reproduction reports' verdicts: the same claims judged the same way before and after a change.

    python analysis/compare_reports.py OLD/report.json NEW/report.json

For every claim of every paper: its verdict and our value under the authors' code, and under the paper's text.
Prints each claim that changed and a summary; exits 1 when one did.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def verdicts(report: dict[str, Any]) -> dict[tuple[str, str], tuple[Any, ...]]:
    """(paper, claim id) -> (status, ours, status under the paper's text, ours under it)."""
    out = {}
    for paper, entry in report["papers"].items():
        for claim in entry["claims"]:
            text = claim.get("paper_text") or {}
            out[paper, claim["id"]] = (
                claim["status"],
                claim.get("ours"),
                text.get("status"),
                text.get("ours"),
            )
    return out


def main(old_file: str, new_file: str) -> int:
    old, new = (verdicts(json.loads(Path(f).read_text(encoding="utf-8"))) for f in (old_file, new_file))
    changed = 0
    for key in sorted(old.keys() | new.keys()):
        if old.get(key) != new.get(key):
            changed += 1
            print(f"{key[0]} {key[1]}: {old.get(key)} -> {new.get(key)}")
    print(f"{len(old)} claims before, {len(new)} after: {changed} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
