"""The named functions of training-on-the-test-task's claims ledger (conf/claims/training-on-the-test-task.yaml):
values a path into one sidecar cannot give: comparisons across panels or sidecars (Figure 3's θ̂ against Figure 1's,
Appendix E's reductions), Pareto dominance in Figure 6, where a fitted point of emergence c_e lies (Figures 5, 18).

Each gets the paper's sidecars (file name -> JSON) and returns a mapping: the facts the claim judges (booleans or
lists the paper's value is compared with) and the numbers behind them, shown beside the verdict. Differences and
reductions use the report's one rule for zero (`testtask.report.rules.sign`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from testtask.report.evaluate import NotComputable
from testtask.report.rules import sign

V2 = ("mmlu_pro", "gpqa", "musr", "bbh", "math_hard")  # the Open LLM Leaderboard v2 benchmarks of Figure 15


def panel(figure: Mapping[str, Any], benchmark: str, adjusted: bool | None = None) -> dict[str, Any]:
    """The one panel of `figure` for `benchmark` (before or after adjustment when `adjusted` is given)."""
    hits = [
        p
        for p in figure.get("panels", [])
        if p.get("benchmark") == benchmark and (adjusted is None or bool(p.get("adjusted")) == adjusted)
    ]
    if len(hits) != 1:
        state = "" if adjusted is None else (" (adjusted)" if adjusted else " (before adjustment)")
        raise NotComputable(
            f"figure {figure.get('figure')}: {len(hits)} panels of {benchmark}{state}, want one"
        )
    return hits[0]


def _r(x: float, digits: int = 4) -> float:
    return round(float(x), digits)


def older_gain_larger(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§2.1, Figure 2: older models gain more from fine-tuning than newer ones (mean gain, every benchmark)."""
    panels = sidecars["figure-2.json"]["panels"]
    return {
        "older_gain_larger": all(p["mean_gain_group_0"] > p["mean_gain_group_1"] for p in panels),
        "mean_gain_older": {p["benchmark"]: _r(p["mean_gain_group_0"], 3) for p in panels},
        "mean_gain_newer": {p["benchmark"]: _r(p["mean_gain_group_1"], 3) for p in panels},
    }


def smallest_newer_compute(sidecars: Mapping[str, Any]) -> float:
    """§3.1: the pretraining compute (FLOPs) of the smallest newer model of Figure 1 (MMLU panel)."""
    points = panel(sidecars["figure-1.json"], "mmlu", False)["points"]
    newer = [q["log10_compute"] for q in points if q["group"] == 1]
    if not newer:
        raise NotComputable("figure 1 has no newer model")
    return float(10 ** min(newer))


def treatment_vs_newer(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§3.1: Figure 3's θ̂ (treatment − control) against Figure 1's (newer − older), before adjustment."""
    fig_1, fig_3 = sidecars["figure-1.json"], sidecars["figure-3.json"]
    ratio = {
        b: panel(fig_3, b, False)["theta"] / panel(fig_1, b, False)["theta"]
        for b in (p["benchmark"] for p in fig_3["panels"] if not p.get("adjusted"))
    }
    return {
        "larger_than_fig1": all(r > 1 for r in ratio.values()),
        "ratio": {b: _r(r, 2) for b, r in ratio.items()},
    }


def mc_vs_mmlu(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§3.2, Figure 4 centre: MMLU-style ARC / HellaSwag θ̂, their sign and their size against Figure 1's MMLU θ̂."""
    fig_4, mmlu = sidecars["figure-4.json"], panel(sidecars["figure-1.json"], "mmlu", False)["theta"]
    theta = {b: panel(fig_4, b, False)["theta"] for b in ("arc_challenge_mc", "hellaswag_mc")}
    return {
        "positive": all(sign(t) > 0 for t in theta.values()),
        "theta": {b: _r(t) for b, t in theta.items()},
        "ratio_to_mmlu": {b: _r(t / mmlu, 2) for b, t in theta.items()},
    }


def _kinks(figure: Mapping[str, Any], benchmarks: tuple[str, ...]) -> dict[str, Any]:
    """Where each panel's fitted point of emergence c_e lies against the smallest model's compute (log10 FLOPs):
    a c_e above it is a kink inside the compute range, i.e. emergence; one below it is no emergence."""
    inside, c_e, smallest = [], {}, {}
    for b in benchmarks:
        p = panel(figure, b, False)
        low = min(q["log10_compute"] for q in p["points"])
        c_e[b], smallest[b] = _r(p["c_e"], 2), _r(low, 2)
        if p["c_e"] > low:
            inside.append(b)
    return {"kink_inside_range": inside, "c_e_log10": c_e, "smallest_log10_compute": smallest}


def brier_emergence(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§3.2, Figure 5 right: does the MMLU Brier score show a sharp improvement (a kink inside the compute range)?"""
    p = panel(sidecars["figure-5.json"], "mmlu_brier", False)
    kinks = _kinks(sidecars["figure-5.json"], ("mmlu_brier",))
    return {
        "kink_inside_range": bool(kinks["kink_inside_range"]),
        "c_e_log10": kinks["c_e_log10"]["mmlu_brier"],
        "smallest_log10_compute": kinks["smallest_log10_compute"]["mmlu_brier"],
        "theta": _r(p["theta"]),
        "theta_p": _r(p["theta_p"], 3),
    }


def cloze_emergence(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. F, Figure 18 left: cloze ARC / HellaSwag, which panels have a fitted kink inside the compute range."""
    return _kinks(sidecars["figure-18.json"], ("arc_challenge", "hellaswag"))


def _emergence_between(
    figure: Mapping[str, Any], benchmarks: tuple[str, ...], low: float, high: float
) -> dict:
    c_e = {b: panel(figure, b, False)["c_e"] for b in benchmarks}
    return {
        "outside": [b for b, c in c_e.items() if not low <= c <= high],
        "c_e_log10": {b: _r(c, 2) for b, c in c_e.items()},
    }


def mc_emergence_accuracy(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. F, Figure 18 centre: MMLU-style ARC / HellaSwag (accuracy), c_e outside 10^22–10^23 FLOPs."""
    return _emergence_between(sidecars["figure-18.json"], ("arc_challenge_mc", "hellaswag_mc"), 22.0, 23.0)


def mc_emergence_brier(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. F, Figure 18 right: the same for the Brier score."""
    return _emergence_between(
        sidecars["figure-18.json"], ("arc_challenge_mc_brier", "hellaswag_mc_brier"), 22.0, 23.0
    )


def undominated(
    families: Mapping[str, Any], by: str = "Qwen 1.5", others: tuple[str, ...] = ("Llama 2", "Pythia")
):
    """Figure 6: the models of `others` at or above the smallest `by` model's compute that no `by` model Pareto-
    dominates (a `by` model with no more compute and at least the score), and per family how many are dominated."""
    front = list(zip(families[by]["log10_compute"], families[by]["values"], strict=True))
    lowest = min(c for c, _ in front)
    free, dominated, within = [], {}, {}
    for name in others:
        f = families[name]
        rows = list(zip(f["models"], f["log10_compute"], f["values"], strict=True))
        beaten = [m for m, c, v in rows if any(qc <= c and qv >= v for qc, qv in front)]
        inside = [m for m, c, _ in rows if c >= lowest]
        dominated[name] = f"{len(beaten)} of {len(rows)}"
        within[name] = len(inside)
        free += [m for m in inside if m not in beaten]
    return free, dominated, within


def _qwen_dominates(benchmark: str) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    def qwen_dominates(sidecars: Mapping[str, Any]) -> dict[str, Any]:
        free, dominated, within = undominated(panel(sidecars["figure-6.json"], benchmark, False)["families"])
        return {"not_dominated": free, "dominated": dominated, "at_or_above_smallest_qwen": within}

    qwen_dominates.__doc__ = (
        f"§4.1, Figure 6 left ({benchmark}): Llama 2 and Pythia models Qwen 1.5 does not dominate."
    )
    return qwen_dominates


def similar_after_adjustment(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§4.1, Figure 6 right: after adjustment no family is superior: Qwen 1.5 no longer Pareto-dominates Llama 2
    and Pythia (per benchmark), with the adjusted log-linear slopes per decade of compute."""
    out: dict[str, Any] = {}
    for p in sidecars["figure-6.json"]["panels"]:
        if p.get("adjusted"):
            free, _, _ = undominated(p["families"])
            out[f"qwen_dominates_{p['benchmark']}"] = not free
            out[f"slopes_{p['benchmark']}"] = {
                k: _r(v["log_linear_slope"], 3) for k, v in p["families"].items()
            }
    if not out:
        raise NotComputable("figure 6 has no adjusted panels")
    return out


def _points(sidecars: Mapping[str, Any], benchmark: str) -> dict[str, dict[str, Any]]:
    return {q["model"]: q for q in panel(sidecars["figure-1.json"], benchmark, False)["points"]}


def pythia_above_chance(sidecars: Mapping[str, Any]) -> dict[str, float]:
    """§4.1, Figure 6: the best Pythia model's score minus chance (accuracy points), MMLU and GSM8K."""
    out = {}
    for b in ("mmlu", "gsm8k"):
        values = panel(sidecars["figure-6.json"], b, False)["families"]["Pythia"]["values"]
        out[b] = _r(100 * (max(values) - panel(sidecars["figure-1.json"], b, False)["chance"]), 2)
    return out


def llama_3_vs_llama_2(sidecars: Mapping[str, Any]) -> dict[str, float]:
    """§4.2: Llama 3 8B minus Llama 2 70B (accuracy points, Figure 1's scores), MMLU and GSM8K."""
    out = {}
    for b in ("mmlu", "gsm8k"):
        pts = _points(sidecars, b)
        if "llama-3-8b" not in pts or "llama-2-70b" not in pts:
            raise NotComputable(f"figure 1 ({b}) lacks llama-3-8b or llama-2-70b")
        out[b] = _r(100 * (pts["llama-3-8b"]["value"] - pts["llama-2-70b"]["value"]), 2)
    return out


def _checkpoint(figure: Mapping[str, Any], examples: int) -> dict[str, Any]:
    hits = [c for c in figure["checkpoints"] if c["examples"] == examples]
    if len(hits) != 1:
        raise NotComputable(f"figure {figure.get('figure')}: no checkpoint at {examples} examples")
    return hits[0]


def gsm8k_emergence(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. F, Figure 19: GSM8K's c_e falls and its log-linear R² rises from the base models to the last checkpoint
    with at least half the models (checkpoints evaluated for fewer models are left out), through 64,000 examples."""
    fig = sidecars["figure-19.json"]
    cps = fig["checkpoints"]
    full = [c for c in cps if c["n_models"] >= cps[0]["n_models"] / 2]
    first, mid, last = cps[0], _checkpoint(fig, 64000), full[-1]
    return {
        "c_e_falls": last["c_e_flops"] < mid["c_e_flops"] < first["c_e_flops"],
        "log_linear_r2_rises": last["log_linear_r2"] > first["log_linear_r2"],
        "examples": [first["examples"], mid["examples"], last["examples"]],
        "c_e_log10": [_r(c["c_e_log10"], 2) for c in (first, mid, last)],
        "log_linear_r2": [_r(c["log_linear_r2"], 3) for c in (first, mid, last)],
        "checkpoints_left_out": len(cps) - len(full),
    }


def v2_smaller_than_mmlu(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. E: every v2 θ̂ (Figure 15, before adjustment) is smaller than our MMLU θ̂ (Figure 1), the smaller of
    MMLU's and GSM8K's."""
    theta = {b: panel(sidecars["figure-15.json"], b, False)["theta"] for b in V2}
    mmlu = panel(sidecars["figure-1.json"], "mmlu", False)["theta"]
    top = max(theta, key=lambda b: theta[b])
    return {
        "all_smaller": theta[top] < mmlu,
        "max_theta": _r(theta[top]),
        "max_benchmark": top,
        "mmlu_theta": _r(mmlu),
    }


def v2_reduced(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. E: the v2 benchmarks whose |θ̂| is not reduced by fine-tuning, with θ̂ before → after adjustment."""
    fig = sidecars["figure-15.json"]
    pairs = {b: (panel(fig, b, False)["theta"], panel(fig, b, True)["theta"]) for b in V2}
    return {
        "not_reduced": [b for b, (pre, post) in pairs.items() if abs(post) >= abs(pre)],
        "theta": {b: [_r(pre), _r(post)] for b, (pre, post) in pairs.items()},
    }


def v2_adjusted_abs_theta(sidecars: Mapping[str, Any]) -> dict[str, float]:
    """App. E: |θ̂| after adjustment, GPQA and MuSR."""
    return {b: abs(panel(sidecars["figure-15.json"], b, True)["theta"]) for b in ("gpqa", "musr")}


def reduction(figure: Mapping[str, Any], benchmark: str) -> float:
    """100 · (1 − θ̂_adjusted / θ̂_before), %: how much adjustment reduces θ̂."""
    pre, post = panel(figure, benchmark, False)["theta"], panel(figure, benchmark, True)["theta"]
    if sign(pre) == 0:
        raise NotComputable(f"θ̂ of {benchmark} before adjustment is 0")
    return 100 * (1 - post / pre)


def _v2_reduction(benchmark: str) -> Callable[[Mapping[str, Any]], float]:
    def v2_reduction(sidecars: Mapping[str, Any]) -> float:
        return reduction(sidecars["figure-15.json"], benchmark)

    v2_reduction.__doc__ = f"App. E: the reduction of {benchmark}'s θ̂ by adjustment (Figure 15), %."
    return v2_reduction


def instruct_gap_smaller(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. G: the instruct/chat models' θ̂ (Figure 20) is smaller than the base models' (Figure 1), before
    adjustment, MMLU and GSM8K."""
    fig_1, fig_20 = sidecars["figure-1.json"], sidecars["figure-20.json"]
    theta = {
        b: (panel(fig_20, b, False)["theta"], panel(fig_1, b, False)["theta"]) for b in ("mmlu", "gsm8k")
    }
    return {
        "smaller_than_base": all(chat < base for chat, base in theta.values()),
        "theta_instruct": {b: _r(chat) for b, (chat, _) in theta.items()},
        "theta_base": {b: _r(base) for b, (_, base) in theta.items()},
    }


FUNCTIONS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "older_gain_larger": older_gain_larger,
    "smallest_newer_compute": smallest_newer_compute,
    "treatment_vs_newer": treatment_vs_newer,
    "mc_vs_mmlu": mc_vs_mmlu,
    "brier_emergence": brier_emergence,
    "qwen_dominates_mmlu": _qwen_dominates("mmlu"),
    "qwen_dominates_gsm8k": _qwen_dominates("gsm8k"),
    "similar_after_adjustment": similar_after_adjustment,
    "pythia_above_chance": pythia_above_chance,
    "llama_3_vs_llama_2": llama_3_vs_llama_2,
    "gsm8k_emergence": gsm8k_emergence,
    "v2_smaller_than_mmlu": v2_smaller_than_mmlu,
    "v2_reduced": v2_reduced,
    "v2_adjusted_abs_theta": v2_adjusted_abs_theta,
    "v2_reduction_bbh": _v2_reduction("bbh"),
    "v2_reduction_mmlu_pro": _v2_reduction("mmlu_pro"),
    "v2_reduction_math_hard": _v2_reduction("math_hard"),
    "cloze_emergence": cloze_emergence,
    "mc_emergence_accuracy": mc_emergence_accuracy,
    "mc_emergence_brier": mc_emergence_brier,
    "instruct_gap_smaller": instruct_gap_smaller,
}
