"""Every MCMC fit recorded in the JSON sidecars of a figures folder, with its diagnostics (testtask/diagnostics.py).

    python analysis/fit_diagnostics.py FIGURES_DIR [FIGURES_DIR ...] [--all]

Walks `<FIGURES_DIR>/<paper>/<source>/*.json` (every preset's folder: `published`, `published.paper_text`, ...) and
prints, per sidecar, how many fits it records, how many failed, how many were refitted after failing their
diagnostics (pretrain-on-test's `refit`: the sidecar records every attempt), and each failed fit's cell and failures
(a Figure 7 panel counts each slice fit: the slices with divergences, with r̂ over the limit, the worst r̂ and least
ESS). `--all` also prints the fits that passed. Exit status 1 when any fit failed, so a build can be checked by it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from testtask import diagnostics


def fits(document: Any, where: str = "") -> Iterator[tuple[str, dict]]:
    """Every mapping in a sidecar that records a fit's verdict (`diagnostics_ok`), with a path naming it."""
    if isinstance(document, dict):
        if diagnostics.OK in document:
            yield where or "/", document
            return  # a Figure 7 panel's slices are summarised from the panel itself
        for key, value in document.items():
            yield from fits(value, f"{where}/{key}")
    elif isinstance(document, list):
        for i, value in enumerate(document):
            yield from fits(value, f"{where}[{i}]")


def label(fit: dict, where: str) -> str:
    """The fit's cell, from what the panel records (m, n, effect, LM types), else its path in the sidecar."""
    parts = [f"{k}={fit[k]}" for k in ("m", "n", "effect") if fit.get(k) is not None]
    if fit.get("lm_types"):
        parts.append("(" + ", ".join(map(str, fit["lm_types"])) + ")")
    return f"{where} " + " ".join(parts) if parts else where


def refitted(fit: dict) -> int:
    """How many of the fits one record holds were refitted after failing their diagnostics: a fit's `refit`
    record, or a Figure 7 panel's `refits` count of its slices (0 in sidecars from before refits existed)."""
    if isinstance(fit.get("refits"), dict):
        return int(fit["refits"]["slices_refitted"])
    return int(bool(isinstance(fit.get("refit"), dict) and fit["refit"].get("refitted")))


def describe(fit: dict) -> tuple[int, int, str]:
    """(fits, failed fits, a summary line) of one recorded fit, or of a Figure 7 panel's slice fits."""
    per_slice = (
        fit.get("diagnostics", {}).get("per_slice") if isinstance(fit.get("diagnostics"), dict) else None
    )
    if per_slice is not None:
        ok = per_slice[diagnostics.OK]
        divergent = sum(1 for d in per_slice["divergences"] if d > 0)
        text = (
            f"{len(ok)} slice fits, {len(ok) - sum(ok)} failed: {divergent} with divergences "
            f"({sum(per_slice['divergences'])} in all), worst r̂ {max(per_slice['r_hat']):.4f}, "
            f"least bulk ESS {min(per_slice['ess_bulk']):.0f}; sampler {fit.get('sampler')}"
        )
        return len(ok), len(ok) - sum(ok), text
    failures = fit.get(diagnostics.FAILURES, [])
    shown = "; ".join(
        f"{f.get('parameter') or 'fit'} {f['statistic']} {f['value']:.4g} (limit {f['limit']:g})"
        for f in failures
    )
    beta = fit.get("beta", {})
    worst = f"β r̂ {beta['r_hat']:.4f}, ESS {beta['ess_bulk']:.0f}" if "r_hat" in beta else ""
    sigmas = fit.get("sigmas") or {}
    if sigmas:
        worst += f"; σ's worst r̂ {max(s['r_hat'] for s in sigmas.values()):.4f}"
        worst += f", least ESS {min(s['ess_bulk'] for s in sigmas.values()):.0f}"
    text = shown if failures else ("ok" + (f" ({worst})" if worst else ""))
    return 1, 0 if fit[diagnostics.OK] else 1, text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("figures", nargs="+", type=Path, help="figures folders (figures_dir of a build)")
    parser.add_argument("--all", action="store_true", help="also print every fit that passed")
    args = parser.parse_args(argv)
    total = failed = refits = 0
    for root in args.figures:
        for path in sorted(root.glob("*/*/*.json")):
            recorded = list(fits(json.loads(path.read_text(encoding="utf-8"))))
            if not recorded:
                continue
            counts = [(where, fit, *describe(fit)) for where, fit in recorded]
            n_fits, n_failed = sum(c[2] for c in counts), sum(c[3] for c in counts)
            n_refitted = sum(refitted(fit) for _, fit in recorded)
            total, failed, refits = total + n_fits, failed + n_failed, refits + n_refitted
            print(f"{path.relative_to(root)}: {n_fits} fit(s), {n_failed} failed, {n_refitted} refitted")
            for where, fit, _, n_bad, text in counts:
                if n_bad or args.all:
                    print(f"  {'FAILED' if n_bad else 'ok    '} {label(fit, where)}: {text}")
    print(f"{total} fit(s), {failed} failed their diagnostics, {refits} refitted after failing them")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
