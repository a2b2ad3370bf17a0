"""Print the findings of one or more reproduction reports (`report.json` written by `make report`): per paper the
verdict counts under the authors' code and the paper's text, how many non-matching claims fall in each category,
the unexplained ones, and any claim left without a category or with one whose evidence does not hold
(unsupported).

    python analysis/report_findings.py report/published/report.json [more report.json ...]

Several files (e.g. pretrain-on-test's complete release reported into another folder) are read in order; a paper
in a later file replaces the same paper of an earlier one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SECTIONS = (
    "text-vs-code",
    "inconsistent",
    "release-gap",
    "implementation",
    "misrounded",
    "within-error",
    "unexplained",
    "unsupported",
    "uncategorized",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="report.json files written by `make report`")
    args = parser.parse_args()
    papers: dict[str, dict] = {}
    for file in args.reports:
        papers.update(json.loads(file.read_text(encoding="utf-8"))["papers"])
    print(
        f"{'paper':28} {'authors m/d/nc':>15} {'text m/d/nc':>12}  "
        + " ".join(f"{s[:12]:>12}" for s in SECTIONS)
    )
    unexplained: list[str] = []
    total = dict.fromkeys(SECTIONS, 0)
    for paper, entry in papers.items():
        found = entry.get("findings") or {}
        if not found:
            continue

        def triple(counts: dict | None) -> str:
            if not counts:
                return "—"
            return "/".join(str(counts[k]) for k in ("matches", "differs", "not computable"))

        cells = []
        for section in SECTIONS:
            n = len(found.get(section, []))
            total[section] += n
            cells.append(f"{n:>12}")
        print(
            f"{paper:28} {triple(found.get('counts_authors')):>15} {triple(found.get('counts_paper_text')):>12}  "
            + " ".join(cells)
        )
        unexplained += [f"{paper}: {line['id']} ({line['where']})" for line in found.get("unexplained", [])]
    print(f"{'all papers':28} {'':>15} {'':>12}  " + " ".join(f"{total[s]:>12}" for s in SECTIONS))
    print(f"\nunexplained: {len(unexplained)}")
    for line in unexplained:
        print(f"  {line}")


if __name__ == "__main__":
    main()
