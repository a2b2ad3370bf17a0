"""Print the summary tables of docs/downstream-predictability.md for *Why has predicting downstream capabilities ... remained elusive?*

Reads only the JSON sidecars beside the figures (`testtask action=figures paper=downstream-predictability
source=results` first) and prints Markdown:

- the families: members, compute (pretraining + fine-tuning FLOPs), where the fine-tuning steps and token
  counts come from, the number of members and the analysis' warnings;
- per family, the four statistics of the per-sample correlation distributions (mean, median, area under the
  complementary CDF, −min(W(C, +1), W(C, −1))) for each quantity of the chain, for one correlation method
  (default: the one Figures 2 and 3 use), averaged over tasks, with the undefined correlations counted;
- Figure 3's benchmark along the chain: the shares of its samples with a correlation above 0 and 0.75;
- the ordering checks of Figure 4: in how many (task, method, statistic) cases each step of the chain
  keeps the paper's ordering, i.e. loses predictability.

Works for any number of families, members and tasks. A sidecar that is absent prints "not built". It describes
our families (the CPU-mini family, a simulated one, a build with overrides); whether they bear out the paper's
statements (the ordering of the chain, Figure 3's shares, Figures 5 and 6) is judged by the claims ledger
conf/claims/downstream-predictability.yaml: `make report PAPER=downstream-predictability SOURCE=results`.

    python analysis/downstream_predictability_summary.py [figures_dir] [--run RUN] [--method NAME] [--per-task]
        [--variant NAME]

`figures_dir` is the folder holding `downstream-predictability/` (default: the repository's `figures/`); the
sidecars are read from its `results-<RUN>/` folder, or where only a variant was built (a build with overrides: its
`variants/<name>/` folder) from that one (`--variant` picks among several), (testtask.paths.output_dir; RUN default cpu-mini, `simulated`
for `build_simulated`), each checked to be built from that run (testtask.sidecars.check).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from testtask.downstream_predictability.chain import LABELS as QUANTITY_LABELS
from testtask.downstream_predictability.statistics import STATISTICS
from testtask.paths import output_dir
from testtask.sidecars import Expected
from testtask.sidecars import check as check_provenance

REPO = Path(__file__).resolve().parents[1]
SUBDIR = "downstream-predictability"
NOT_BUILT = "not built"
FIGURES = (2, 3, 4, 5, 6)
STATISTIC_HEADERS = ("mean", "median", "AUC of 1 − CDF", "−min(W(C,+1), W(C,−1))")


def load_sidecars(folder: Path, expected: Expected | None = None) -> dict[int, dict[str, Any]]:
    """Figure number -> its JSON sidecar, for the sidecars that exist (each checked against `expected`)."""
    out = {}
    for number in FIGURES:
        path = folder / f"figure-{number}.json"
        if path.is_file():
            try:
                out[number] = check_provenance(path, json.loads(path.read_text()), expected)
            except json.JSONDecodeError as err:
                raise SystemExit(f"{path}: not valid JSON ({err})") from err
    return out


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: Sequence[str] | None = None) -> str:
    """A Markdown table; `align` holds 'l' or 'r' per column (default: first left, rest right)."""
    align = align or ["l"] + ["r"] * (len(headers) - 1)
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|",
    ]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def number(value: Any, digits: int = 3) -> str:
    """A float with `digits` decimals; None and NaN (undefined: nothing left to summarise) as '—'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{float(value):.{digits}f}"


def flops(value: Any) -> str:
    if value is None:
        return "—"
    return "0" if float(value) == 0.0 else f"{float(value):.4g}"


def short(text: Any) -> str:
    """A provenance string without the repository's absolute prefix."""
    if text is None:
        return "—"
    return str(text).replace(f"{REPO}/", "")


def header_source(sidecars: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The sidecar whose header (settings, families, warnings) is reported: Figure 4's, else any."""
    for number_ in (4, 3, 2, 5, 6):
        if number_ in sidecars:
            return sidecars[number_]
    return {}


def print_settings(head: dict[str, Any], sidecars: dict[int, dict[str, Any]]) -> None:
    settings = head.get("settings", {})
    built = ", ".join(str(n) for n in sorted(sidecars)) or "none"
    print(f"Figures with a sidecar: {built}; source={head.get('source', '—')}.")
    print(
        "Settings: "
        + "; ".join(f"{key}={value}" for key, value in settings.items())
        + " (from the sidecars' `settings`)."
    )
    builds = {json.dumps(s.get("settings"), sort_keys=True) for s in sidecars.values()}
    if len(builds) > 1:
        print("WARNING: the sidecars were built with different settings; rebuild them together.")
    print()


def lm_eval_agreement(tasks: dict[str, Any]) -> list[str]:
    """How our accuracy and Brier score agree with the per-document values lm-eval logged (`lm_eval_check`)."""
    agree: dict[str, list[int]] = {}
    brier_diffs, brier_n = [], 0
    for info in tasks.values():
        for metrics in info.get("lm_eval_check", {}).values():
            for metric, check in metrics.items():
                if "n_agree" in check:
                    agree.setdefault(metric, [0, 0])
                    agree[metric][0] += int(check["n_agree"])
                    agree[metric][1] += int(check["n"])
                elif check.get("max_abs_diff") is not None:
                    brier_diffs.append(float(check["max_abs_diff"]))
                    brier_n += int(check["n"])
    lines = [
        f"- lm-eval check: our accuracy equals lm-eval's `{metric}` on {held} of {n} (document, member) pairs"
        for metric, (held, n) in agree.items()
    ]
    if brier_diffs:
        lines.append(
            f"- lm-eval check: largest |our Brier − lm-eval's `brier_score`| {max(brier_diffs):.1e} "
            f"over {brier_n} (document, member) pairs"
        )
    return lines


def print_families(head: dict[str, Any]) -> None:
    print("## Families\n")
    families = head.get("families", {})
    if not families:
        print(f"No family: {NOT_BUILT}.\n")
    for name, family in families.items():
        members = family.get("members", [])
        tasks = family.get("tasks", {})
        n_docs = [int(t.get("n_samples", 0)) for t in tasks.values()]
        dropped = sum(int(t.get("n_docs_dropped", 0)) for t in tasks.values())
        print(f"### {name}: {family.get('label', name)}\n")
        print(
            f"n_members = {family.get('n_members', len(members))}; {len(tasks)} tasks; "
            f"{sum(n_docs)} samples per member ({min(n_docs, default=0)}–{max(n_docs, default=0)} per task); "
            f"{dropped} documents dropped (not logged by every member); "
            f"tasks not logged by every member: {', '.join(family.get('tasks_incomplete', [])) or 'none'}.\n"
        )
        rows = []
        for m in members:
            steps = m.get("finetuning_steps")
            rows.append(
                [
                    m.get("name"),
                    flops(m.get("pretraining_flops")),
                    flops(m.get("finetuning_flops")),
                    f"{float(m['compute_flops']):.10g}" if m.get("compute_flops") is not None else "—",
                    "—" if steps is None else steps,
                    short(m.get("finetuning_steps_source")) if steps else "—",
                    flops(m.get("finetuning_tokens")),
                    "—" if m.get("batch_size") is None else f"{m['batch_size']} × {m['max_length']}",
                ]
            )
        print(
            table(
                [
                    "member",
                    "pretraining FLOPs",
                    "fine-tuning FLOPs",
                    "total FLOPs",
                    "fine-tuning steps",
                    "steps from",
                    "fine-tuning tokens",
                    "batch × length",
                ],
                rows,
                ["l", "r", "r", "r", "r", "l", "r", "r"],
            )
        )
        print()
        bullets = [
            f"- pretraining tokens: {source}"
            for source in sorted(
                {str(m["pretraining_source"]) for m in members if m.get("pretraining_source")}
            )
        ]
        bullets += [
            f"- fine-tuning tokens: {basis}"
            for basis in sorted(
                {str(m["finetuning_tokens_basis"]) for m in members if m.get("finetuning_tokens_basis")}
            )
        ]
        if any(m.get("source") == "config" for m in members):
            bullets.append(
                "- compute: the total FLOPs each member lists in the family's config (no breakdown)"
            )
        bullets += [f"- note: {note}" for note in family.get("notes", [])]
        bullets += lm_eval_agreement(tasks)
        if bullets:
            print("\n".join(bullets) + "\n")
    lines = [
        f"- skipped family {name}: {reason}" for name, reason in head.get("skipped_families", {}).items()
    ]
    lines += [f"- WARNING: {warning}" for warning in head.get("warnings", [])]
    if lines:
        print("\n".join(lines) + "\n")


def default_method(sidecars: dict[int, dict[str, Any]], head: dict[str, Any]) -> tuple[str | None, str]:
    """The correlation method of Figures 3 and 2 (`focus.method`) and where that choice comes from. Without
    their sidecars: Spearman if it was computed (the config's default focus and the paper's Figures 2-3),
    else the first configured method."""
    for number_ in (3, 2):
        if sidecars.get(number_, {}).get("method"):
            return str(sidecars[number_]["method"]), f"the method of Figure {number_}"
    methods = [str(m) for m in head.get("settings", {}).get("methods") or []]
    if "spearman" in methods:
        return "spearman", "no Figure 2/3 sidecar: Spearman, the paper's choice for Figures 2-3"
    return (methods[0], "no Figure 2/3 sidecar: the first configured method") if methods else (None, "none")


def mean_of(values: Iterable[Any]) -> float:
    """Mean over tasks of a statistic, skipping tasks where it is undefined (every correlation dropped)."""
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return sum(kept) / len(kept) if kept else float("nan")


def tasks_defined(rows: list[dict[str, Any]]) -> str:
    """How many tasks the mean over tasks averages: those with at least one correlation left."""
    defined = sum(r.get("mean") is not None and not math.isnan(float(r["mean"])) for r in rows)
    return str(len(rows)) if defined == len(rows) else f"{defined} of {len(rows)}"


def print_statistics(fig4: dict[str, Any] | None, method: str | None, per_task: bool) -> None:
    print(f"## Statistics of the correlation distributions ({method or '—'}, mean over tasks)\n")
    if fig4 is None:
        print(f"Figure 4: {NOT_BUILT}.\n")
        return
    rows_all = fig4.get("rows", [])
    methods = sorted({r["method"] for r in rows_all})
    if method not in methods:
        print(f"Method {method!r} is not in figure-4.json (it has {methods}).\n")
        return
    quantities = list(fig4.get("quantities") or QUANTITY_LABELS)
    families = list(dict.fromkeys(r["family"] for r in rows_all))
    for family in families:
        rows = [r for r in rows_all if r["family"] == family and r["method"] == method]
        tasks = sorted({r["task"] for r in rows})
        out = []
        for quantity in quantities:
            chosen = [r for r in rows if r["quantity"] == quantity]
            if not chosen:
                continue
            undefined = sum(int(r.get("n_undefined", 0)) for r in chosen)
            samples = sum(int(r.get("n_samples", 0)) for r in chosen)
            out.append(
                [QUANTITY_LABELS.get(quantity, quantity)]
                + [number(mean_of(r.get(s) for r in chosen)) for s in STATISTICS]
                + [f"{undefined} / {samples}", tasks_defined(chosen)]
            )
        print(f"### {family}: {len(tasks)} tasks\n")
        print(table(["quantity", *STATISTIC_HEADERS, "undefined / samples", "tasks"], out))
        print()
        if per_task:
            print(f"Mean per-sample {method} correlation per task:\n")
            index = {(r["task"], r["quantity"]): r for r in rows}
            print(
                table(
                    ["task", *(QUANTITY_LABELS.get(q, q) for q in quantities)],
                    [[t, *(number(index.get((t, q), {}).get("mean")) for q in quantities)] for t in tasks],
                )
            )
            print()
    policy = fig4.get("settings", {}).get("undefined", "drop")
    print(
        f"Undefined correlations (the score is the same for every member, or not finite): "
        f"undefined={policy} ({'left out of' if policy == 'drop' else 'counted as 0 in'} the statistics).\n"
    )


def print_focus(fig3: dict[str, Any] | None) -> None:
    """Figure 3's benchmark along the chain: the shares of samples above 0 and 0.75 (the paper's §3 numbers)."""
    print("## Figure 3: one benchmark along the chain\n")
    if fig3 is None:
        print(f"Figure 3: {NOT_BUILT}.\n")
        return
    panels = fig3.get("panels", {})
    families = list(dict.fromkeys(name for by_family in panels.values() for name in by_family))
    quantities = [q for q in QUANTITY_LABELS if q in panels] + [q for q in panels if q not in QUANTITY_LABELS]
    for family in families:
        rows = []
        for quantity in quantities:
            panel = panels[quantity].get(family)
            if panel is None:
                continue
            summary = panel.get("summary", {})
            rows.append(
                [
                    QUANTITY_LABELS.get(quantity, quantity),
                    panel.get("task", "—"),
                    f"{summary.get('n_undefined', '—')} / {summary.get('n_samples', '—')}",
                    number(summary.get("fraction_above_0")),
                    number(summary.get("fraction_above_0.75")),
                    number(summary.get("mean")),
                ]
            )
        print(f"### {family} ({fig3.get('method', '—')})\n")
        headers = ["quantity", "task", "undefined / samples", "share > 0", "share > 0.75", "mean"]
        print(table(headers, rows, ["l", "l", "r", "r", "r", "r"]))
        print()


def count(cases: list[dict[str, Any]]) -> str:
    """'held / cases' for a list of ordering cases."""
    held = sum(bool(c["holds"]) for c in cases)
    return f"{held} / {len(cases)}" if cases else "—"


def print_ordering(fig4: dict[str, Any] | None, method: str | None) -> None:
    print("## Ordering of the chain (Figure 4)\n")
    if fig4 is None:
        print(f"Figure 4: {NOT_BUILT}.\n")
        return
    ordering = fig4.get("ordering", {})
    cases = [c for step in ordering.values() for c in step.get("cases", [])]
    methods = list(
        dict.fromkeys(fig4.get("settings", {}).get("methods") or sorted({c["method"] for c in cases}))
    )
    families = list(dict.fromkeys(c["family"] for c in cases))
    print(
        "Cases where the step holds, of (task, method, statistic) cases with both statistics defined; "
        f"ties within {fig4.get('ordering_tolerance', '—')} count as equal.\n"
    )
    for family in families:
        rows = []
        for step, result in ordering.items():
            mine = [c for c in result.get("cases", []) if c["family"] == family]
            rows.append([step, count(mine), *(count([c for c in mine if c["method"] == m]) for m in methods)])
        if len(families) > 1:
            print(f"### {family}\n")
        print(table(["step", "all methods", *methods], rows))
        print()
    if method:
        stats = list(STATISTICS)
        rows = []
        for step, result in ordering.items():
            mine = [c for c in result.get("cases", []) if c["method"] == method]
            rows.append([step, *(count([c for c in mine if c["statistic"] == s]) for s in stats)])
        print(f"By statistic ({method}, all families):\n")
        print(table(["step", *STATISTIC_HEADERS], rows))
        print()


def sidecar_folder(figures_dir: Path, run: str, variant: str | None) -> Path:
    """Where the sidecars of `run` are: the preset's folder, else the one variant built (a build with overrides
    goes to figures_dir/variants/<overrides>/); several variants and no --variant: SystemExit naming them."""
    if variant is not None:
        return output_dir(figures_dir, "results", run, SUBDIR, variant=variant)
    folder = output_dir(figures_dir, "results", run, SUBDIR)
    if folder.is_dir():
        return folder
    found = sorted(p.parent.parent.name for p in (figures_dir / "variants").glob(f"*/{SUBDIR}/{folder.name}"))
    if len(found) > 1:
        raise SystemExit(
            f"{folder} is not built; variants of it are: {', '.join(found)}: pick one with --variant"
        )
    return output_dir(figures_dir, "results", run, SUBDIR, variant=found[0]) if found else folder


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figures_dir", nargs="?", default=str(REPO / "figures"))
    parser.add_argument("--run", default="cpu-mini", help="the results run the figures were built from")
    parser.add_argument("--method", default=None, help="correlation method (default: that of Figures 2/3)")
    parser.add_argument("--per-task", action="store_true", help="also print the mean correlation per task")
    parser.add_argument(
        "--variant", default=None, help="a variant folder's name (figures_dir/variants/<name>/)"
    )
    args = parser.parse_args(argv)
    folder = sidecar_folder(Path(args.figures_dir), args.run, args.variant)
    sidecars = load_sidecars(folder, Expected.of("results", args.run, reader="the summary"))
    print(f"# downstream-predictability: summary of {short(folder)}\n")
    if not sidecars:
        print(
            f"No sidecar in {folder}: {NOT_BUILT}. Run `testtask action=figures paper={SUBDIR} source=results`."
        )
        return
    head = header_source(sidecars)
    print_settings(head, sidecars)
    print_families(head)
    method, why = (args.method, "--method") if args.method else default_method(sidecars, head)
    print(f"Correlation method of the statistics below: {method} ({why}).\n")
    print_focus(sidecars.get(3))
    print_statistics(sidecars.get(4), method, args.per_task)
    print_ordering(sidecars.get(4), method)


if __name__ == "__main__":
    main()
