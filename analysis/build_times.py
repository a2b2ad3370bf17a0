"""Where a build's time goes: per paper and preset, and the slowest outputs, read from `testtask`'s log.

    python analysis/build_times.py <log> [--top 15]

Every built output logs `<kind> <number> of <paper> done in <s> s -> <folder>`, and one copied from another build
(testtask.reuse) `<kind> <number> of <paper> reused from <folder> (...) in <s> s -> <folder>`; the folder names the
preset (a paper_text build's folder ends in `.paper_text`). Prints seconds per paper under each preset, their
ratio, how many outputs each preset reused, and the outputs that cost most, so that speed work starts from a
measurement.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"(figure|table) (\S+) of (\S+) (done|reused from \S+ \(.*?\)) in ([\d.]+) s -> (\S+)")


def preset_of(folder: str) -> str:
    return "paper_text" if Path(folder).name.endswith(".paper_text") else "authors"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    per_paper: dict[tuple[str, str], float] = defaultdict(float)
    outputs: list[tuple[float, str, str, str]] = []
    reused: dict[str, int] = defaultdict(int)
    for line in args.log.read_text(encoding="utf-8", errors="replace").splitlines():
        match = LINE.search(line)
        if match is None:
            continue
        kind, number, paper, how, seconds, folder = match.groups()
        preset = preset_of(folder)
        reused[preset] += how != "done"
        per_paper[paper, preset] += float(seconds)
        outputs.append((float(seconds), paper, f"{kind} {number}", preset))
    papers = sorted({paper for paper, _ in per_paper})
    print(f"{'paper':30s} {'authors':>9s} {'paper_text':>11s}")
    for paper in papers:
        print(f"{paper:30s} {per_paper[paper, 'authors']:9.1f} {per_paper[paper, 'paper_text']:11.1f}")
    authors = sum(v for (_, p), v in per_paper.items() if p == "authors")
    text = sum(v for (_, p), v in per_paper.items() if p == "paper_text")
    print(
        f"{'all':30s} {authors:9.1f} {text:11.1f}   both / authors alone: {(authors + text) / max(authors, 1e-9):.2f}x"
    )
    print(
        f"outputs reused from another build: {reused['authors']} (authors), {reused['paper_text']} (paper_text)"
    )
    print(f"\nslowest {args.top} outputs:")
    for seconds, paper, output, preset in sorted(outputs, reverse=True)[: args.top]:
        print(f"  {seconds:7.1f} s  {paper} {output} ({preset})")


if __name__ == "__main__":
    main()
