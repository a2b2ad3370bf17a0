"""Print the reproduction table of docs/training-on-the-test-task.md for *Training on the test task confounds evaluation and emergence*.

Each number the paper states in its text or tables sits beside the value our outputs hold, with a note on how
they differ. Reads only the JSON/CSV sidecars written beside the figures (`testtask action=figures
paper=training-on-the-test-task` and `action=tables` first). The paper's values are quoted constants below;
they enter only the paper column and the note's difference, never any of our numbers. A value whose sidecar
is absent prints "not built"; Figures 9 and 20 are not built from the authors' release and print so unless a
sidecar for them exists.

    python analysis/training_on_the_test_task_reproduction.py [figures_dir]
"""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Callable
from pathlib import Path

from testtask.sidecars import Missing, load, need

NOT_BUILT = "not built"
NOT_RELEASED = "not in the authors' release"
SUBDIR = "training-on-the-test-task"

# ---- the paper's values (display only) -------------------------------------------------------------------
PAPER_N_BASE_MODELS = 56  # §1, §2
PAPER_N_CHAT_MODELS = 36  # App. G
PAPER_FIG1_THETA = {"mmlu": 0.073, "gsm8k": 0.191}  # App. E: "MMLU (0.073) and GSM8K (0.191)"
PAPER_FIG1_POINTS = {"mmlu": 7, "gsm8k": 19}  # §2.2 "over 7 accuracy points in MMLU and 19 ... in GSM8K"
PAPER_R2_MIN = 0.9  # §2.2 "We obtain R² > 0.9 for all model fits"
PAPER_SMALLEST_NEWER_FLOPS = (
    7e21  # §3.1 "at least 7·10^21 FLOPs, the pre-training compute of the smallest newer model"
)
PAPER_PARETO_RATIO = 6  # §4.2 "the area of improvement reduces by a sixfold"
PAPER_EMERGENCE_BEFORE_LOG10 = 22  # §5 "emergence at around 10^22 FLOPs, the scale of Pythia 6.9B"
PAPER_EMERGENCE_64K_FLOPS = (
    6e20  # §5 "After training on 64,000 examples, ... around 6·10^20 FLOPs (Pythia 410M)"
)
PAPER_LOGLIN_R2 = (0.63, 0.95)  # §5 "jumping from 0.63 to 0.95 after training on 64,000 examples"
PAPER_FIG9_THETA = (-0.005, 0.005)  # App. B.3 "shifts from θ̂ = −0.005 to θ̂ = 0.005"
PAPER_TABLE3 = {"mmlu": (0.071, 0.018, 0.530), "gsm8k": (0.168, 0.032, 0.503)}  # φ̂ (SE), R²; both bold
PAPER_TABLE4 = {"mmlu": (-0.004, 0.009, 0.926), "gsm8k": (0.000, 0.032, 0.763)}  # ψ̂ (SE), R²; none bold
PAPER_EN_CN_POINTS = {"mmlu": 9, "gsm8k": 12}  # App. D.2
PAPER_TABLE5 = {  # App. D.3, balanced accuracy (%)
    ("Older models vs newer models", "MMLU"): 64.6,
    ("Older models vs newer models", "GSM8K"): 73.9,
    ("Fine-tuned, older models vs newer models", "MMLU"): 52.2,
    ("Fine-tuned, older models vs newer models", "GSM8K"): 52.5,
}
PAPER_RELATIVE_DIFFERENCE = {  # App. E, % of the best–worst spread
    "mmlu_pro": 13.7,
    "gpqa": 14.5,
    "musr": 12.1,
    "bbh": 9.7,
    "math_hard": 10.0,
    "mmlu": 15.3,
    "gsm8k": 25.0,
}
PAPER_V2_ADJUSTED_ABS_MAX = 0.002  # App. E, GPQA and MuSR: |θ̂| ≤ 0.002
PAPER_BBH = (40, 0.015)  # App. E: "reduces by 40% to 0.015"
PAPER_V2_REDUCTION = {"mmlu_pro": 19, "math_hard": 33}  # App. E, %
PAPER_V2_ADJUSTED_MIN = 0.01  # App. E: "remains reasonably large (θ̂ ≥ 0.01)"
PAPER_FIG16_THETA = (0.024, 0.016)  # App. E: adjusted θ̂, MMLU Pro (10 choices) → MMLU Pro (4 choices)
PAPER_RANK_SHIFT = (4.8, 16)  # App. F: average and maximum rank shift
PAPER_CLOZE_MC_EMERGENCE_LOG10 = (22, 23)  # App. F: "emergence around 10^22 to 10^23 FLOPs"

V2 = ("mmlu_pro", "gpqa", "musr", "bbh", "math_hard")
LABEL = {
    "mmlu": "MMLU",
    "gsm8k": "GSM8K",
    "mmlu_pro": "MMLU Pro",
    "gpqa": "GPQA",
    "musr": "MuSR",
    "bbh": "BBH",
    "math_hard": "MATH Lvl 5",
    "arc_challenge": "ARC",
    "hellaswag": "HellaSwag",
}


def _panel(fig: dict | None, benchmark: str, adjusted: bool | None = None) -> dict:
    for p in need(fig).get("panels", []):
        if p.get("benchmark") == benchmark and (adjusted is None or bool(p.get("adjusted")) == adjusted):
            return p
    raise Missing


def _num(x: float, dp: int) -> str:
    s = f"{x:.{dp}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def _vs(paper: float, ours: float, dp: int, unit: str = "") -> str:
    """How `ours` differs from `paper` at the paper's printed precision (`dp` decimals)."""
    if _num(paper, dp) == _num(ours, dp):
        return f"matches at the paper's precision ({_num(ours, dp)}{unit})"
    d = ours - paper
    return f"ours {abs(d):.{dp + 1}f}{unit} {'higher' if d > 0 else 'lower'}{_rel(d, paper)}"


def _rel(d: float, paper: float) -> str:
    if not paper:
        return ""
    r = 100 * d / abs(paper)
    return f" ({r:+.0f}% of the paper's value)" if abs(r) >= 10 else f" ({r:+.1f}% of the paper's value)"


def _sig(p: float) -> str:
    return "significant" if p < 0.05 else "not significant"


def _theta(p: dict) -> str:
    return f"θ̂ {_num(p['theta'], 4)} (SE {p['theta_se']:.4f}, p = {p['theta_p']:.3f})"


def _flops(x: float) -> str:
    e = math.floor(math.log10(x))
    return f"{x / 10**e:.1f}·10^{e}"


def _one_sig_fig(paper: float, ours: float) -> str:
    """Compare a 'k·10^e' paper value with ours at one significant figure."""
    e = math.floor(math.log10(paper))
    p1, o1 = round(paper / 10**e), ours / 10**e
    if round(o1) == p1:
        return f"matches at the paper's precision ({round(o1)}·10^{e})"
    d = o1 - p1
    return f"ours {abs(d):.1f}·10^{e} {'higher' if d > 0 else 'lower'}{_rel(d, p1)}"


def _agrees(ok: bool, why: str = "") -> str:
    if ok:
        return f"agrees ({why})" if why else "agrees"
    return f"differs: {why}" if why else "differs"


def _not_significant(panels: dict[str, dict]) -> tuple[str, str]:
    ours = "; ".join(f"{k}: {_theta(p)}" for k, p in panels.items())
    bad = [f"{k} p = {p['theta_p']:.3f}" for k, p in panels.items() if p["theta_p"] < 0.05]
    sizes = ", ".join(f"|θ̂| {abs(p['theta']):.3f}" for p in panels.values())
    return ours, _agrees(not bad, f"all p ≥ 0.05; {sizes}") if not bad else _agrees(False, "; ".join(bad))


def _points(panel: dict) -> dict[str, dict]:
    return {q["model"]: q for q in panel["points"]}


def _released(fig: dict | None) -> tuple[str, str]:
    if fig is None:
        return NOT_RELEASED, "the authors' release holds no scores for it"
    panels = "; ".join(f"{p.get('title', p['benchmark'])}: {_theta(p)}" for p in fig.get("panels", []))
    return panels, "built from a sidecar outside the authors' release; compare by eye"


def rows(folder: Path) -> list[tuple[str, str, str, str]]:
    """(statement, paper, ours, note) for every number the paper states; `folder` holds the sidecars."""
    fig = {n: load(folder, f"figure-{n}.json") for n in range(1, 21)}
    t3, t4 = load(folder, "table-3.json"), load(folder, "table-4.json")
    t5_path = folder / "table-5.csv"
    t5 = list(csv.DictReader(t5_path.read_text().splitlines())) if t5_path.is_file() else None
    out: list[tuple[str, str, str, str]] = []

    def add(statement: str, paper: str, compute: Callable[[], tuple[str, str]]) -> None:
        try:
            ours, note = compute()
        except Missing:
            ours, note = NOT_BUILT, "sidecar absent"
        out.append((statement, paper, ours, note))

    def f1(b: str, adjusted: bool = False) -> dict:
        return _panel(fig[1], b, adjusted)

    # ---- §1–§2, Figure 1 ----
    def n_models() -> tuple[str, str]:
        n = {p["n_models"] for p in need(fig[1])["panels"]}
        m = max(n)
        return f"{m} models in the Fig. 1 panels", f"ours {PAPER_N_BASE_MODELS - m} fewer"

    add("§1/§2: base models evaluated", f"{PAPER_N_BASE_MODELS}", n_models)
    for b in ("mmlu", "gsm8k"):
        add(
            f"Fig. 1 top / App. E: θ̂ newer − older, {LABEL[b]}",
            f"{PAPER_FIG1_THETA[b]:.3f}, significant",
            lambda b=b: (
                _theta(f1(b)),
                _vs(PAPER_FIG1_THETA[b], f1(b)["theta"], 3)
                + f"; {_sig(f1(b)['theta_p'])} ({'agrees' if f1(b)['theta_p'] < 0.05 else 'differs'})",
            ),
        )
    for b in ("mmlu", "gsm8k"):

        def points(b: str = b) -> tuple[str, str]:
            ours, k = 100 * f1(b)["theta"], PAPER_FIG1_POINTS[b]
            over = f"over {k}" if ours > k else f"not over {k} ({k - ours:.1f} short)"
            return f"{ours:.1f} points", f"§1: {_vs(k, ours, 0, ' points')}; §2.2 'over': ours {over}"

        add(
            f"§1/§2.2: newer models outperform older by (over) {PAPER_FIG1_POINTS[b]} points, {LABEL[b]}",
            f"{PAPER_FIG1_POINTS[b]} (§1); over {PAPER_FIG1_POINTS[b]} (§2.2)",
            points,
        )
    add(
        "Fig. 1 bottom / §2.2: adjusted θ̂ small and not significant",
        "small, p ≥ 0.05 (MMLU and GSM8K)",
        lambda: _not_significant({LABEL[b]: f1(b, True) for b in ("mmlu", "gsm8k")}),
    )

    def r2() -> tuple[str, str]:
        panels = need(fig[1])["panels"]
        unc = [p["r2"] for p in panels]
        cen = [p["fit"]["r2_centered"] for p in panels if "r2_centered" in p.get("fit", {})]
        ours = f"uncentred (as statsmodels reports it): min {min(unc):.3f} over {len(unc)} fits"
        if cen:
            ours += f"; centred: min {min(cen):.3f}, {sum(c > PAPER_R2_MIN for c in cen)} of {len(cen)} > 0.9"
        ok = all(r > PAPER_R2_MIN for r in unc)
        return ours, _agrees(ok, "uncentred R²") if ok else _agrees(False, f"min uncentred R² {min(unc):.3f}")

    add("§2.2: R² > 0.9 for all model fits (Fig. 1)", "> 0.9", r2)

    def gains() -> tuple[str, str]:
        ps = need(fig[2])["panels"]
        ours = "; ".join(
            f"{LABEL[p['benchmark']]}: mean gain older {p['mean_gain_group_0']:.3f}, newer {p['mean_gain_group_1']:.3f}"
            for p in ps
        )
        ok = all(p["mean_gain_group_0"] > p["mean_gain_group_1"] for p in ps)
        return ours, _agrees(ok, "older gain larger in both") if ok else _agrees(
            False, "a newer gain is larger"
        )

    add("§2.1 Fig. 2: older models benefit more from fine-tuning", "older gain > newer gain", gains)

    # ---- §3.1, Figure 3 ----
    def smallest_newer() -> tuple[str, str]:
        newer = [q["log10_compute"] for q in f1("mmlu")["points"] if q["group"] == 1]
        x = 10 ** min(newer)
        return f"smallest newer model: {_flops(x)} FLOPs", _one_sig_fig(PAPER_SMALLEST_NEWER_FLOPS, x)

    add("§3.1: compute of the smallest newer model (fine-tuning threshold)", "7·10^21 FLOPs", smallest_newer)
    for b in ("mmlu", "gsm8k"):

        def fig3(b: str = b) -> tuple[str, str]:
            p, ref = _panel(fig[3], b, False), f1(b)
            ratio = p["theta"] / ref["theta"]
            ok = p["theta_p"] < 0.05 and p["theta"] > ref["theta"]
            return (
                f"{_theta(p)}; Fig. 1 θ̂ {ref['theta']:.4f}",
                _agrees(ok, f"{_sig(p['theta_p'])}, {ratio:.2f}× Fig. 1's θ̂")
                if ok
                else _agrees(False, f"{_sig(p['theta_p'])}, {ratio:.2f}× Fig. 1's θ̂"),
            )

        add(
            f"§3.1 Fig. 3 left: θ̂ treatment − control, {LABEL[b]}",
            "significant; similar to, slightly larger than newer − older",
            fig3,
        )
    add(
        "§3.1 Fig. 3 right: after adjustment θ̂ small and not significant",
        "small, p ≥ 0.05",
        lambda: _not_significant({LABEL[b]: _panel(fig[3], b, True) for b in ("mmlu", "gsm8k")}),
    )

    # ---- §3.2, Figures 4 and 5 ----
    add(
        "§3.2 Fig. 4 left: cloze ARC / HellaSwag θ̂ small and not significant",
        "small, p ≥ 0.05",
        lambda: _not_significant(
            {LABEL[b]: _panel(fig[4], b, False) for b in ("arc_challenge", "hellaswag")}
        ),
    )

    def mc() -> tuple[str, str]:
        ps = {LABEL[b]: _panel(fig[4], f"{b}_mc", False) for b in ("arc_challenge", "hellaswag")}
        ref = f1("mmlu")["theta"]
        ours = "; ".join(f"{k}: {_theta(p)}" for k, p in ps.items()) + f"; Fig. 1 MMLU θ̂ {ref:.4f}"
        bad = [
            f"{k} p = {p['theta_p']:.3f}" for k, p in ps.items() if p["theta_p"] >= 0.05 or p["theta"] <= 0
        ]
        ratios = ", ".join(f"{k} {p['theta'] / ref:.2f}× MMLU's" for k, p in ps.items())
        return ours, _agrees(not bad, ratios) if not bad else _agrees(False, "; ".join(bad) + f" ({ratios})")

    add(
        "§3.2 Fig. 4 centre: MMLU-style ARC / HellaSwag θ̂",
        "significant, positive, large, roughly MMLU's",
        mc,
    )
    add(
        "§3.2 Fig. 4 right: adjusted MMLU-style ARC / HellaSwag θ̂",
        "neither large nor significant",
        lambda: _not_significant(
            {LABEL[b]: _panel(fig[4], f"{b}_mc", True) for b in ("arc_challenge", "hellaswag")}
        ),
    )
    add(
        "§3.2 Fig. 5 centre: MMLU cloze θ̂ small and not significant",
        "small, p ≥ 0.05",
        lambda: _not_significant({"MMLU cloze": _panel(fig[5], "mmlu_cloze")}),
    )
    add(
        "§3.2 Fig. 5 right: MMLU Brier score still shows sharp improvements",
        "sharp improvements (no number)",
        lambda: (
            f"fitted point of emergence c_e = 10^{_panel(fig[5], 'mmlu_brier')['c_e']:.2f} FLOPs; "
            + _theta(_panel(fig[5], "mmlu_brier")),
            "no number to compare; a kink is fitted inside the compute range",
        ),
    )

    # ---- §4.1, Figure 6 ----
    for b in ("mmlu", "gsm8k"):

        def pareto(b: str = b) -> tuple[str, str]:
            fam = _panel(fig[6], b, False)["families"]
            qwen = list(zip(fam["Qwen 1.5"]["log10_compute"], fam["Qwen 1.5"]["values"], strict=True))
            lo_q = min(qc for qc, _ in qwen)
            parts, free = [], []
            for name in ("Llama 2", "Pythia"):
                f = fam[name]
                rows_ = list(zip(f["models"], f["log10_compute"], f["values"], strict=True))
                dom = [m for m, c, v in rows_ if any(qc <= c and qv >= v for qc, qv in qwen)]
                within = [m for m, c, _ in rows_ if c >= lo_q]
                parts.append(
                    f"{name}: {len(dom)} of {len(rows_)} dominated ({len(within)} at ≥ the smallest Qwen's compute)"
                )
                free += [m for m in within if m not in dom]
            return "; ".join(parts), (
                _agrees(True, "every model at ≥ the smallest Qwen's compute is dominated")
                if not free
                else _agrees(False, f"not dominated: {', '.join(free)}")
            )

        add(f"§4.1 Fig. 6 left: Qwen 1.5 Pareto-dominates Llama 2 and Pythia, {LABEL[b]}", "yes", pareto)

    def pythia_chance() -> tuple[str, str]:
        parts, gaps = [], []
        for b in ("mmlu", "gsm8k"):
            vals = _panel(fig[6], b, False)["families"]["Pythia"]["values"]
            chance = f1(b)["chance"]
            parts.append(f"{LABEL[b]}: max {max(vals):.3f} (chance {chance:.2f})")
            gaps.append(f"{LABEL[b]} {100 * (max(vals) - chance):.1f}")
        return "; ".join(parts), f"no number to compare; best Pythia above chance by {', '.join(gaps)} points"

    add("§4.1 Fig. 6: all Pythia models no better than random chance", "at chance", pythia_chance)

    def slopes() -> tuple[str, str]:
        parts = []
        for b in ("mmlu", "gsm8k"):
            fam = _panel(fig[6], b, True)["families"]
            s = ", ".join(f"{k} {v['log_linear_slope']:.3f}" for k, v in fam.items())
            parts.append(f"{LABEL[b]} adjusted slopes per decade: {s}")
        return "; ".join(parts), "no number to compare"

    add("§4.1 Fig. 6 right: after adjustment similar scaling trends", "similar (no number)", slopes)

    # ---- §4.2, Figure 7 and Llama ----
    for b in ("mmlu", "gsm8k"):
        add(
            f"§4.2 Fig. 7: Pareto area of improvement shrinks after adjustment, {LABEL[b]}",
            f"{PAPER_PARETO_RATIO}-fold",
            lambda b=b: (
                f"{need(fig[7])['comparisons'][b]['ratio']:.2f}-fold "
                f"({need(fig[7])['comparisons'][b]['area_unadjusted']:.3f} → "
                f"{need(fig[7])['comparisons'][b]['area_adjusted']:.3f})",
                _vs(PAPER_PARETO_RATIO, need(fig[7])["comparisons"][b]["ratio"], 0, "×"),
            ),
        )

    def llama() -> tuple[str, str]:
        parts, gaps = [], []
        for b in ("mmlu", "gsm8k"):
            pts = _points(f1(b))
            if "llama-3-8b" not in pts or "llama-2-70b" not in pts:
                raise Missing
            l3, l2 = pts["llama-3-8b"], pts["llama-2-70b"]
            parts.append(f"{LABEL[b]} {l3['value']:.3f} vs {l2['value']:.3f}")
            gaps.append(f"{LABEL[b]} {100 * (l3['value'] - l2['value']):+.1f}")
        c3, c2 = pts["llama-3-8b"]["log10_compute"], pts["llama-2-70b"]["log10_compute"]
        return (
            "; ".join(parts) + f"; compute 10^{c3:.2f} vs 10^{c2:.2f}",
            f"Llama 3 8B minus Llama 2 70B: {', '.join(gaps)} points",
        )

    add("§4.2: Llama 3 8B closely matches Llama 2 70B (similar compute)", "closely matches", llama)

    # ---- §5, Figure 8; App. F, Figure 19 ----
    def checkpoint(f: dict | None, examples: int) -> dict:
        for c in need(f)["checkpoints"]:
            if c["examples"] == examples:
                return c
        raise Missing

    def pythia(name: str) -> float:
        pts = _points(f1("mmlu"))
        return 10 ** pts[name]["log10_compute"] if name in pts else float("nan")

    def em0() -> tuple[str, str]:
        c = checkpoint(fig[8], 0)
        return (
            f"c_e = {_flops(c['c_e_flops'])} FLOPs (Pythia 6.9B: {_flops(pythia('pythia-6.9b'))})",
            (
                f"matches at the paper's precision (order of magnitude 10^{PAPER_EMERGENCE_BEFORE_LOG10})"
                if round(c["c_e_log10"]) == PAPER_EMERGENCE_BEFORE_LOG10
                else "differs in order of magnitude"
            )
            + f"; ours 10^{c['c_e_log10']:.2f}, {c['c_e_log10'] - PAPER_EMERGENCE_BEFORE_LOG10:+.2f} decades",
        )

    add("§5 Fig. 8 top: MMLU emergence before fine-tuning", "≈ 10^22 FLOPs (Pythia 6.9B)", em0)

    def em64() -> tuple[str, str]:
        c = checkpoint(fig[8], 64000)
        return (
            f"c_e = {_flops(c['c_e_flops'])} FLOPs (Pythia 410M: {_flops(pythia('pythia-410m'))})",
            _one_sig_fig(PAPER_EMERGENCE_64K_FLOPS, c["c_e_flops"]),
        )

    add("§5 Fig. 8 top: MMLU emergence after 64,000 examples", "≈ 6·10^20 FLOPs (Pythia 410M)", em64)

    def loglin() -> tuple[str, str]:
        a, b = checkpoint(fig[8], 0)["log_linear_r2"], checkpoint(fig[8], 64000)["log_linear_r2"]
        return (
            f"{a:.3f} → {b:.3f} (centred R², OLS on log10 compute)",
            f"before: {_vs(PAPER_LOGLIN_R2[0], a, 2)}; after: {_vs(PAPER_LOGLIN_R2[1], b, 2)}",
        )

    add("§5 Fig. 8 bottom: MMLU log-linear R², 0 → 64,000 examples", "0.63 → 0.95", loglin)

    def gsm_emergence() -> tuple[str, str]:
        cps = need(fig[19])["checkpoints"]
        full = [c for c in cps if c["n_models"] >= cps[0]["n_models"] / 2]
        a, m, z = cps[0], checkpoint(fig[19], 64000), full[-1]
        ours = (
            f"c_e {_flops(a['c_e_flops'])} → {_flops(m['c_e_flops'])} (64,000 ex.) → {_flops(z['c_e_flops'])} "
            f"({z['examples']:,} ex.); log-linear R² {a['log_linear_r2']:.3f} → {m['log_linear_r2']:.3f} → "
            f"{z['log_linear_r2']:.3f}"
        )
        ok = z["c_e_flops"] < m["c_e_flops"] < a["c_e_flops"] and z["log_linear_r2"] > a["log_linear_r2"]
        few = len(cps) - len(full)
        why = f"no number in the paper; {few} checkpoints with < half the models left out"
        return ours, _agrees(ok, why)

    add(
        "App. F Fig. 19: GSM8K emergence at lower scales, cleaner log-linear fits",
        "c_e falls, R² rises (no number)",
        gsm_emergence,
    )

    # ---- App. B.3, Figure 9 ----
    add(
        "App. B.3 Fig. 9: θ̂ with original learning rates → newer models' best learning rate (MMLU)",
        f"{PAPER_FIG9_THETA[0]:.3f} → {PAPER_FIG9_THETA[1]:.3f}, not significant",
        lambda: _released(fig[9]),
    )

    # ---- App. C, Tables 3 and 4 ----
    for table, data, sym, paper_vals, bold in (
        (3, t3, "φ̂", PAPER_TABLE3, True),
        (4, t4, "ψ̂", PAPER_TABLE4, False),
    ):
        for b in ("mmlu", "gsm8k"):
            coef, se, r2_paper = paper_vals[b]

            def coef_row(data=data, b=b, coef=coef, se=se, bold=bold) -> tuple[str, str]:
                r = need(data)["rows"][b]
                sig = r["p"] < 0.05
                return (
                    f"{_num(r['coef'], 4)} ({r['se']:.4f}), p = {r['p']:.4f}",
                    f"coef: {_vs(coef, r['coef'], 3)}; SE: {_vs(se, r['se'], 3)}; "
                    f"{'bold' if sig else 'not bold'} ({'agrees' if sig == bold else 'differs'})",
                )

            add(
                f"App. C Table {table}: {sym} (SE), {LABEL[b]}",
                f"{_num(coef, 3)} ({se:.3f}){', bold' if bold else ''}",
                coef_row,
            )
            add(
                f"App. C Table {table}: R², {LABEL[b]}",
                f"{r2_paper:.3f}",
                lambda data=data, b=b, r2_paper=r2_paper: (
                    f"{need(data)['rows'][b]['r2']:.4f}",
                    _vs(r2_paper, need(data)["rows"][b]["r2"], 3),
                ),
            )

    # ---- App. D.1, Figures 11 and 12 ----
    for n, month in ((11, "September 2023"), (12, "January 2024")):
        for b in ("mmlu", "gsm8k"):

            def cutoff(n: int = n, b: str = b) -> tuple[str, str]:
                pre, post = _panel(fig[n], b, False), _panel(fig[n], b, True)
                ok = pre["theta_p"] < 0.05 <= post["theta_p"]
                return (
                    f"before {_theta(pre)} → adjusted {_theta(post)}",
                    _agrees(ok)
                    if ok
                    else _agrees(
                        False, f"before p = {pre['theta_p']:.3f}, adjusted p = {post['theta_p']:.3f}"
                    ),
                )

            add(
                f"App. D.1 Fig. {n} ({month} cutoff), {LABEL[b]}: result robust",
                "significant before, not after adjustment",
                cutoff,
            )

    # ---- App. D.2, Figure 13 ----
    for b in ("mmlu", "gsm8k"):
        add(
            f"App. D.2 Fig. 13: EN+CN outperform EN, {LABEL[b]}",
            f"{PAPER_EN_CN_POINTS[b]} points",
            lambda b=b: (
                f"{100 * _panel(fig[13], b, False)['theta']:.1f} points (p = {_panel(fig[13], b, False)['theta_p']:.3f})",
                _vs(PAPER_EN_CN_POINTS[b], 100 * _panel(fig[13], b, False)["theta"], 0, " points"),
            ),
        )
    add(
        "App. D.2 Fig. 13: EN vs EN+CN after adjustment small and not significant",
        "small, p ≥ 0.05",
        lambda: _not_significant({LABEL[b]: _panel(fig[13], b, True) for b in ("mmlu", "gsm8k")}),
    )

    # ---- App. D.3, Figure 14 and Table 5 ----
    add(
        "App. D.3 Fig. 14: older models fine-tuned on 64,000 examples resemble newer ones",
        "similar scaling (no number)",
        lambda: _not_significant({LABEL[b]: _panel(fig[14], b) for b in ("mmlu", "gsm8k")}),
    )
    for (test, col), value in PAPER_TABLE5.items():

        def t5_row(test: str = test, col: str = col, value: float = value) -> tuple[str, str]:
            hit = [r for r in need(t5) if r["discriminator_test"] == test]
            if not hit:
                raise Missing
            ours = 100 * float(hit[0][col])
            return f"{ours:.1f}%", _vs(value, ours, 1, " pt")

        add(f"App. D.3 Table 5: {test}, {col}", f"{value:.1f}%", t5_row)

    # ---- App. E, Figures 15 and 16 ----
    def v2_significant() -> tuple[str, str]:
        ps = {b: _panel(fig[15], b, False) for b in V2}
        ours = "; ".join(f"{LABEL[b]} {p['theta']:.4f} (p = {p['theta_p']:.3f})" for b, p in ps.items())
        bad = [f"{LABEL[b]} p = {p['theta_p']:.3f}" for b, p in ps.items() if p["theta_p"] >= 0.05]
        return ours, _agrees(not bad, "all five p < 0.05") if not bad else _agrees(False, "; ".join(bad))

    add(
        "App. E Fig. 15: newer significantly outperform older on all five v2 benchmarks",
        "all significant",
        v2_significant,
    )

    def v2_smaller() -> tuple[str, str]:
        top = max((_panel(fig[15], b, False) for b in V2), key=lambda p: p["theta"])
        ref = f1("mmlu")["theta"]
        ok = top["theta"] < ref  # our own MMLU θ̂, the smaller of the two
        why = f"largest {LABEL[top['benchmark']]} {top['theta']:.4f} vs our MMLU {ref:.4f}"
        return f"max θ̂ {top['theta']:.4f} ({LABEL[top['benchmark']]})", _agrees(ok, why)

    add(
        "App. E: v2 differences smaller in absolute terms than MMLU's and GSM8K's",
        "all < 0.073, 0.191",
        v2_smaller,
    )
    for b, value in PAPER_RELATIVE_DIFFERENCE.items():
        src = 1 if b in ("mmlu", "gsm8k") else 15
        add(
            f"App. E: relative difference newer − older, {LABEL[b]}{' (Fig. 1)' if src == 1 else ''}",
            f"{value:.1f}%",
            lambda b=b, src=src, value=value: (
                f"{100 * _panel(fig[src], b, False)['relative_difference']:.2f}%",
                _vs(value, 100 * _panel(fig[src], b, False)["relative_difference"], 1, " pt"),
            ),
        )

    def v2_reduces() -> tuple[str, str]:
        parts, bad = [], []
        for b in V2:
            pre, post = _panel(fig[15], b, False)["theta"], _panel(fig[15], b, True)["theta"]
            parts.append(f"{LABEL[b]} {pre:.4f} → {_num(post, 4)}")
            if abs(post) >= abs(pre):
                bad.append(LABEL[b])
        return "; ".join(parts), _agrees(not bad, "all five") if not bad else _agrees(False, ", ".join(bad))

    add("App. E: fine-tuning reduces θ̂ on all five v2 benchmarks", "reduces for all five", v2_reduces)
    for b in ("gpqa", "musr"):
        add(
            f"App. E: adjusted |θ̂| small and not significant, {LABEL[b]}",
            f"|θ̂| ≤ {PAPER_V2_ADJUSTED_ABS_MAX:.3f}, not significant",
            lambda b=b: (
                _theta(_panel(fig[15], b, True)),
                _agrees(
                    abs(_panel(fig[15], b, True)["theta"]) <= PAPER_V2_ADJUSTED_ABS_MAX
                    and _panel(fig[15], b, True)["theta_p"] >= 0.05,
                    f"|θ̂| {abs(_panel(fig[15], b, True)['theta']):.4f} vs 0.002; "
                    f"{_sig(_panel(fig[15], b, True)['theta_p'])}",
                ),
            ),
        )

    def reduction(b: str) -> float:
        pre, post = _panel(fig[15], b, False)["theta"], _panel(fig[15], b, True)["theta"]
        return 100 * (1 - post / pre)

    add(
        "App. E: BBH θ̂ reduction after adjustment",
        f"{PAPER_BBH[0]}%",
        lambda: (f"{reduction('bbh'):.1f}%", _vs(PAPER_BBH[0], reduction("bbh"), 0, " pt")),
    )

    def bbh_after() -> tuple[str, str]:
        pre, post = _panel(fig[15], "bbh", False), _panel(fig[15], "bbh", True)
        note = _vs(PAPER_BBH[1], post["theta"], 3) + f"; adjusted {_sig(post['theta_p'])}"
        if pre["theta_p"] >= 0.05:
            note += f" — but ours is not significant before adjustment either (p = {pre['theta_p']:.3f})"
        return _theta(post), note

    add("App. E: BBH adjusted θ̂, no longer significant", f"{PAPER_BBH[1]:.3f}, not significant", bbh_after)
    for b, value in PAPER_V2_REDUCTION.items():

        def v2_red(b: str = b, value: int = value) -> tuple[str, str]:
            post = _panel(fig[15], b, True)
            ok = post["theta"] >= PAPER_V2_ADJUSTED_MIN
            return (
                f"{reduction(b):.1f}% (adjusted {_theta(post)})",
                _vs(value, reduction(b), 0, " pt") + f"; θ̂ ≥ 0.01 {'agrees' if ok else 'differs'}",
            )

        add(f"App. E: {LABEL[b]} θ̂ reduction; stays ≥ 0.01", f"{value}%, θ̂ ≥ 0.01", v2_red)

    def v2_caption() -> tuple[str, str]:
        gone = {b: _panel(fig[15], b, True) for b in ("gpqa", "musr", "bbh")}
        stay = {b: _panel(fig[15], b, True) for b in ("mmlu_pro", "math_hard")}
        ours = "; ".join(f"{LABEL[b]} p = {p['theta_p']:.3f}" for b, p in {**gone, **stay}.items())
        bad = [f"{LABEL[b]} significant" for b, p in gone.items() if p["theta_p"] < 0.05]
        bad += [f"{LABEL[b]} not significant" for b, p in stay.items() if p["theta_p"] >= 0.05]
        return ours, _agrees(not bad, ", ".join(bad))

    add(
        "App. E Fig. 15 caption: adjusted θ̂ significant only for MMLU Pro and MATH Lvl 5",
        "GPQA, MuSR, BBH not; MMLU Pro, MATH Lvl 5 significant",
        v2_caption,
    )

    def fig16() -> tuple[str, str]:
        ten, four = _panel(fig[15], "mmlu_pro", True), _panel(fig[16], "mmlu_pro_four", True)
        pre4 = _panel(fig[16], "mmlu_pro_four", False)
        return (
            f"adjusted θ̂ {ten['theta']:.4f} (10 choices) → {four['theta']:.4f} (4 choices, p = "
            f"{four['theta_p']:.3f}); 4-choice before adjustment {pre4['theta']:.4f}",
            f"10 choices: {_vs(PAPER_FIG16_THETA[0], ten['theta'], 3)}; 4 choices: "
            f"{_vs(PAPER_FIG16_THETA[1], four['theta'], 3)}; {_sig(four['theta_p'])}",
        )

    add(
        "App. E Fig. 16: adjusted θ̂, MMLU Pro (Fig. 15) → MMLU Pro with 4 answer choices; not significant",
        f"{PAPER_FIG16_THETA[0]:.3f} → {PAPER_FIG16_THETA[1]:.3f}, not significant",
        fig16,
    )

    # ---- App. F, Figures 17 and 18 ----
    add(
        "App. F Fig. 17: MMLU average rank shift",
        f"{PAPER_RANK_SHIFT[0]:.1f}",
        lambda: (
            f"{need(fig[17])['mean_shift']:.2f}",
            _vs(PAPER_RANK_SHIFT[0], need(fig[17])["mean_shift"], 1),
        ),
    )
    add(
        "App. F Fig. 17: MMLU maximum rank shift",
        f"{PAPER_RANK_SHIFT[1]}",
        lambda: (f"{need(fig[17])['max_shift']}", _vs(PAPER_RANK_SHIFT[1], need(fig[17])["max_shift"], 0)),
    )
    lo, hi = PAPER_CLOZE_MC_EMERGENCE_LOG10

    def cloze_emergence() -> tuple[str, str]:
        parts, inside = [], []
        for b in ("arc_challenge", "hellaswag"):
            p = _panel(fig[18], b, False)
            smallest = min(q["log10_compute"] for q in p["points"])
            parts.append(f"{LABEL[b]} c_e = 10^{p['c_e']:.2f} (smallest model 10^{smallest:.2f})")
            if p["c_e"] > smallest:
                inside.append(f"{LABEL[b]} has a fitted kink at 10^{p['c_e']:.2f}, inside the compute range")
        return "; ".join(parts), _agrees(not inside, "no kink inside the range") if not inside else _agrees(
            False, "; ".join(inside)
        )

    add("App. F Fig. 18 left: cloze ARC / HellaSwag show no emergence", "no emergence", cloze_emergence)
    for suffix, what in (("_mc", "accuracy"), ("_mc_brier", "Brier score")):

        def mc_emergence(suffix: str = suffix) -> tuple[str, str]:
            ps = {LABEL[b]: _panel(fig[18], b + suffix, False) for b in ("arc_challenge", "hellaswag")}
            ours = "; ".join(f"{k} c_e = 10^{p['c_e']:.2f}" for k, p in ps.items())
            out_ = [k for k, p in ps.items() if not lo <= p["c_e"] <= hi]
            return ours, _agrees(not out_, "both inside") if not out_ else _agrees(False, f"{out_} outside")

        add(
            f"App. F Fig. 18: MMLU-style ARC / HellaSwag emergence ({what})",
            "10^22 to 10^23 FLOPs",
            mc_emergence,
        )

    # ---- App. G, Figure 20 ----
    add(
        "App. G Fig. 20: instruct/chat models, newer − older θ̂ equalises after fine-tuning",
        f"{PAPER_N_CHAT_MODELS} models; θ̂ smaller than Fig. 1's, vanishes after adjustment",
        lambda: _released(fig[20]),
    )
    return out


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "figures") / SUBDIR
    lines = ["| statement | paper | ours (published data) | note |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows(folder)]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
