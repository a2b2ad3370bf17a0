"""Print the reproduction table of docs/train-before-test.md for *Train-before-test harmonizes language model rankings*.

Each number the paper states in its text sits beside the value our outputs hold, with a note on how they
differ. Reads only the JSON sidecars written beside the figures (`testtask action=figures
paper=train-before-test` and `action=tables` first). The paper's values are quoted constants below; they enter
only the paper column and the note's difference, never any of our numbers. A value whose sidecar is absent
prints "not built".

Two rows read the sensitivity variants the notebook writes under `<figures_dir>/variants/<name>/` (the defaults
are never overwritten); build them with

    testtask action=figure paper=train-before-test figure=6 train_before_test.pca.standardize=false \
        figures_dir=figures/variants/pca-centred          # and figure=8 likewise
    testtask action=figure paper=train-before-test figure=12 train_before_test.ties.rule=leader \
        figures_dir=figures/variants/ties-leader

    python analysis/train_before_test_reproduction.py [figures_dir]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from testtask.sidecars import Missing, load, need

NOT_BUILT = "not built"
SUBDIR = "train-before-test"
REGIMES = ("direct", "train_before_test")

# ---- the paper's values (display only) -------------------------------------------------------------------
PAPER_N_MODELS, PAPER_N_BENCHMARKS = 61, 24  # §1, §3
PAPER_MEAN_TAU = (0.52, 0.76)  # §1, §3.2 (Figure 2): direct -> train-before-test
PAPER_PAIRS_IMPROVED = (274, 276)  # §1, §3.2
PAPER_OUTLIERS = ("nq_open", "mrpc")  # §3.2: "outliers under direct evaluation, such as NQ-Open and MRPC"
PAPER_NQ_OPEN_TAU = (0.23, 0.74)  # §3.2: mean τ of NQ-Open with all other benchmarks
PAPER_INTRA = {"LU": (0.54, 0.75), "Math": (0.55, 0.84)}  # §3.2 (Figure 3)
PAPER_LU_ALT = 0.52  # §3.2 quotes LU direct once more as "raises from 0.52 to 0.75"
PAPER_CORPORA_TAU = (0.76, 0.78)  # §3.3 (Figure 4): between the three perplexity corpora
PAPER_PPL_DOWNSTREAM_TAU = (0.48, 0.74)  # §3.3 (Figure 4): perplexity vs the 24 benchmarks
PAPER_MEAN_PPL_TAU = (0.55, 0.84)  # §3.3: average perplexity vs average downstream score
PAPER_GEMMA_EXCLUDED = 4  # §3.3: "We exclude the four Gemma models"
PAPER_GEMMA_TABLE3 = 8  # App. B.2 Table 3: bits per byte of eight Gemma models (four base, four -IT)
PAPER_PRE_FT_PPL = {"base": 0.78, "instruction_tuned": 0.51}  # §3.3 (Figure 5)
PAPER_PC1 = (0.70, 0.86)  # §3.4 (Figure 6)
PAPER_FIRST_FIVE = (0.91, 0.97)  # §3.4 (Figure 6)
PAPER_QWEN_PC1 = 0.93  # §3.4 (Figure 8), train-before-test
PAPER_TAU_B_TIES = (0.58, 0.77)  # App. C.2 (Figures 12-15)

LABEL = {"LU": "language understanding", "Math": "math", "nq_open": "NQ-Open", "mrpc": "MRPC"}


def _rel(d: float, paper: float) -> str:
    r = 100 * d / abs(paper)
    return f" ({r:+.0f}%)" if abs(r) >= 10 else f" ({r:+.1f}%)"


def _vs(paper: float, ours: float, dp: int = 2) -> str:
    """How `ours` differs from `paper` at the paper's printed precision (`dp` decimals)."""
    if f"{paper:.{dp}f}" == f"{ours:.{dp}f}":
        return f"agrees at the paper's precision ({ours:.{dp}f})"
    d = ours - paper
    return f"differs: ours {abs(d):.{dp + 1}f} {'higher' if d > 0 else 'lower'}{_rel(d, paper)}"


def _pair(paper: tuple[float, float], ours: tuple[float, float]) -> tuple[str, str]:
    """(ours, note) of a direct -> train-before-test pair."""
    return (
        f"{ours[0]:.3f} → {ours[1]:.3f}",
        f"direct: {_vs(paper[0], ours[0])}; train-before-test: {_vs(paper[1], ours[1])}",
    )


def _paper_pair(paper: tuple[float, float]) -> str:
    return f"{paper[0]:.2f} → {paper[1]:.2f}"


def _by_regime(obj: dict) -> tuple[float, float]:
    return obj["direct"], obj["train_before_test"]


def _variant(figures: Path, name: str, sidecar: str) -> dict | None:
    return load(figures / "variants" / name / SUBDIR, sidecar)


def rows(figures: Path) -> list[tuple[str, str, str, str]]:
    """(statement, paper, ours, note) for every number the paper states; sidecars lie in figures/<paper>."""
    folder = figures / SUBDIR
    fig = {n: load(folder, f"figure-{n}.json") for n in range(2, 16)}
    out: list[tuple[str, str, str, str]] = []

    def add(statement: str, paper: str, compute: Callable[[], tuple[str, str]]) -> None:
        try:
            ours, note = compute()
        except Missing:
            ours, note = NOT_BUILT, "sidecar absent"
        except KeyError as missing:  # a sidecar from another version of the builders
            ours, note = NOT_BUILT, f"field {missing} absent from the sidecar"
        out.append((statement, paper, ours, note))

    # ---- §1 / §3.1: the matrices ----
    def sizes() -> tuple[str, str]:
        f = need(fig[2])
        models = {r: f["models"][r]["n_models_any"] for r in REGIMES}
        n_b, pairs = len(f["benchmarks"]), f["pairs_total"]
        ok = set(models.values()) == {PAPER_N_MODELS} and n_b == PAPER_N_BENCHMARKS
        return (
            f"{models['direct']} / {models['train_before_test']} models (direct / train-before-test), "
            f"{n_b} benchmarks, {pairs} pairs",
            "agrees" if ok else "differs",
        )

    add(
        "§1/§3.1: models × benchmarks in the score matrices",
        f"{PAPER_N_MODELS} × {PAPER_N_BENCHMARKS} (276 pairs)",
        sizes,
    )

    # ---- §3.2, Figure 2 ----
    add(
        "§1/§3.2 Fig. 2: mean Kendall τ over benchmark pairs, direct → train-before-test",
        _paper_pair(PAPER_MEAN_TAU),
        lambda: _pair(
            PAPER_MEAN_TAU,
            (need(fig[2])["mean_kendall_direct"], need(fig[2])["mean_kendall_train_before_test"]),
        ),
    )

    def improved() -> tuple[str, str]:
        f = need(fig[2])
        k, n = f["pairs_improved"], f["pairs_total"]
        rest = ", ".join(
            f"{p['pair'][0]}/{p['pair'][1]} ({p['before']:.2f} → {p['after']:.2f})"
            for p in f["pairs_not_improved"]
        )
        same = (k, n) == PAPER_PAIRS_IMPROVED
        note = "agrees" if same else f"differs: ours {k - PAPER_PAIRS_IMPROVED[0]:+d} pairs"
        return f"{k} of {n}; not improved: {rest}", note

    add(
        "§1/§3.2 Fig. 2: benchmark pairs whose τ improves",
        f"{PAPER_PAIRS_IMPROVED[0]} of {PAPER_PAIRS_IMPROVED[1]}",
        improved,
    )

    def outliers() -> tuple[str, str]:
        mean = need(fig[2])["mean_with_others"]["direct"]
        low = sorted(mean, key=mean.get)
        ours = ", ".join(f"{b} {mean[b]:.3f}" for b in low[:3])
        ok = set(low[:2]) == set(PAPER_OUTLIERS)
        return f"lowest mean τ with the others: {ours}", (
            "agrees (the two lowest)" if ok else "differs: not the two lowest"
        )

    add("§3.2: NQ-Open and MRPC are outliers under direct evaluation", "NQ-Open, MRPC", outliers)
    add(
        "§3.2: mean τ of NQ-Open with the other benchmarks",
        _paper_pair(PAPER_NQ_OPEN_TAU),
        lambda: _pair(
            PAPER_NQ_OPEN_TAU,
            tuple(need(fig[2])["mean_with_others"][r]["nq_open"] for r in REGIMES),
        ),
    )

    # ---- §3.2, Figure 3 ----
    for cat, paper in PAPER_INTRA.items():

        def intra(cat: str = cat, paper: tuple[float, float] = paper) -> tuple[str, str]:
            values = tuple(need(fig[3])["intra_category"][r][cat] for r in REGIMES)
            ours, note = _pair(paper, values)
            if cat == "LU":
                note += f"; the text's other value {PAPER_LU_ALT:.2f}: {_vs(PAPER_LU_ALT, values[0])}"
            return ours, note

        shown = _paper_pair(paper) + (f" ({PAPER_LU_ALT:.2f} once)" if cat == "LU" else "")
        add(f"§3.2 Fig. 3: intra-category mean τ, {LABEL[cat]}", shown, intra)

    def between() -> tuple[str, str]:
        f = need(fig[3])
        parts = [
            f"{r.replace('_', '-')}: intra {f['mean_intra'][r]:.3f}, inter {f['mean_inter'][r]:.3f}"
            for r in REGIMES
        ]
        gap = f["mean_intra"]["train_before_test"] - f["mean_inter"]["train_before_test"]
        return "; ".join(parts), f"no number to compare; train-before-test inter is {gap:.3f} below intra"

    add(
        "§3.2 Fig. 3: after train-before-test, agreement between categories nearly as high as within",
        "nearly as high (no number)",
        between,
    )

    # ---- §3.3, Figures 4 and 5 ----
    def f4(key: str) -> tuple[float, float]:
        return tuple(need(fig[4])["panels"][r][key] for r in REGIMES)

    add(
        "§3.3 Fig. 4: mean τ between the three perplexity corpora",
        _paper_pair(PAPER_CORPORA_TAU),
        lambda: _pair(PAPER_CORPORA_TAU, f4("mean_tau_between_corpora")),
    )
    add(
        "§1/§3.3 Fig. 4: mean τ between perplexity and the 24 benchmarks",
        _paper_pair(PAPER_PPL_DOWNSTREAM_TAU),
        lambda: _pair(PAPER_PPL_DOWNSTREAM_TAU, f4("mean_tau_with_downstream")),
    )
    add(
        "§3.3: τ between average perplexity and average downstream score",
        _paper_pair(PAPER_MEAN_PPL_TAU),
        lambda: _pair(PAPER_MEAN_PPL_TAU, f4("tau_mean_perplexity_vs_mean_downstream")),
    )

    def gemma() -> tuple[str, str]:
        n_all = need(fig[2])["models"]["direct"]["n_models_any"]
        n_ppl = need(fig[4])["panels"]["direct"]["n_models_means"]
        excluded = n_all - n_ppl
        agree = "agrees" if excluded == PAPER_GEMMA_TABLE3 else "differs"
        return (
            f"{n_ppl} of {n_all} models in every perplexity comparison ({excluded} excluded: "
            f"{', '.join(need(fig[4])['excluded_model_prefixes'])}*)",
            f"§3.3: ours {excluded - PAPER_GEMMA_EXCLUDED:+d}; Table 3: {agree}",
        )

    add(
        "§3.3: Gemma models excluded from the perplexity analyses",
        f"{PAPER_GEMMA_EXCLUDED} (§3.3); {PAPER_GEMMA_TABLE3} in App. B.2 Table 3",
        gemma,
    )
    for group, value in PAPER_PRE_FT_PPL.items():

        def pre_ft(group: str = group, value: float = value) -> tuple[str, str]:
            panel = need(fig[5])["panels"][group]
            return (
                f"{panel['mean_tau_with_downstream']:.3f} ({len(panel['models'])} models)",
                _vs(value, panel["mean_tau_with_downstream"]),
            )

        add(
            f"§1/§3.3 Fig. 5: perplexity before fine-tuning vs benchmarks after it, "
            f"{group.replace('_', '-')} models",
            f"{value:.2f}",
            pre_ft,
        )

    # ---- §3.4, Figures 6, 7 and 8 ----
    add(
        "§3.4 Fig. 6: share of variance explained by PC1, direct → train-before-test",
        _paper_pair(PAPER_PC1),
        lambda: _pair(PAPER_PC1, _by_regime(need(fig[6])["pc1_share"])),
    )
    add(
        "§3.4 Fig. 6: share explained by the first five components",
        _paper_pair(PAPER_FIRST_FIVE),
        lambda: _pair(PAPER_FIRST_FIVE, _by_regime(need(fig[6])["first_components_cumulative"])),
    )

    def compute_corr() -> tuple[str, str]:
        panels = need(fig[7])["panels"]
        parts = [
            f"{r.replace('_', '-')}: Pearson r {p['pearson_r_log10_flops']:.3f}, Spearman ρ "
            f"{p['spearman_rho']:.3f}"
            for r, p in panels.items()
        ]
        n = panels["train_before_test"]["n_models"]
        ok = all(p["pearson_r_log10_flops"] > 0 for p in panels.values())
        return "; ".join(parts) + f" ({n} models, log10 FLOPs)", (
            "no number to compare; positive in both regimes" if ok else "differs: not positive"
        )

    add(
        "§3.4 Fig. 7: PC1 correlates positively with pretraining compute",
        "positive (no number)",
        compute_corr,
    )

    def qwen() -> tuple[str, str]:
        f = need(fig[8])
        pc1, five = f["pc1_share"]["train_before_test"], f["first_components_cumulative"]["direct"]
        return (
            f"{pc1:.3f} ({f['n_models']} Qwen models); first five under direct evaluation {five:.3f}",
            _vs(PAPER_QWEN_PC1, pc1) + f"; PC1 − direct first five {pc1 - five:+.3f}",
        )

    add(
        "§1/§3.4 Fig. 8: Qwen models, PC1 share under train-before-test (≈ direct's first five)",
        f"{PAPER_QWEN_PC1:.2f}",
        qwen,
    )

    # ---- App. C.2, Figures 12-15 ----
    def ties() -> tuple[str, str]:
        f = need(fig[12])
        ours, note = _pair(PAPER_TAU_B_TIES, (f["mean_kendall_direct"], f["mean_kendall_train_before_test"]))
        share = f["ties"]["mean_tied_pair_share"]
        return (
            ours + f" ({f['pairs_improved']} of {f['pairs_total']} pairs improve; model pairs tied: "
            f"{100 * share['direct']:.0f}% / {100 * share['train_before_test']:.0f}%)",
            note,
        )

    add(
        "App. C.2 Fig. 12: mean Kendall τ-b, significance ties (95%)",
        _paper_pair(PAPER_TAU_B_TIES),
        ties,
    )

    def ties_higher() -> tuple[str, str]:
        f = need(fig[12])
        plain = f["mean_kendall_without_ties"]
        tied = {r: f[f"mean_kendall_{r}"] for r in REGIMES}
        parts = [f"{r.replace('_', '-')} {plain[r]:.3f} → {tied[r]:.3f}" for r in REGIMES]
        rises = [tied[r] - plain[r] for r in REGIMES]
        paper_rises = (PAPER_TAU_B_TIES[0] - PAPER_MEAN_TAU[0], PAPER_TAU_B_TIES[1] - PAPER_MEAN_TAU[1])
        ok = all(x > 0 for x in rises)
        return "; ".join(parts), (
            ("agrees (higher in both)" if ok else "differs: not higher in both")
            + f"; rises {rises[0]:+.3f} / {rises[1]:+.3f} vs the paper's {paper_rises[0]:+.2f} / "
            f"{paper_rises[1]:+.2f}"
        )

    add(
        "App. C.2: ties make the mean τ slightly higher (no ties → ties)",
        "direct 0.52 → 0.58, train-before-test 0.76 → 0.77",
        ties_higher,
    )

    # ---- sensitivity variants (built apart; see the module docstring) ----
    def leader() -> tuple[str, str]:
        f = need(_variant(figures, "ties-leader", "figure-12.json"))
        return _pair(PAPER_TAU_B_TIES, (f["mean_kendall_direct"], f["mean_kendall_train_before_test"]))

    add(
        "App. C.2 variant `ties.rule=leader` (transitive tie classes): mean τ-b",
        _paper_pair(PAPER_TAU_B_TIES),
        leader,
    )

    def centred() -> tuple[str, str]:
        f6 = need(_variant(figures, "pca-centred", "figure-6.json"))
        ours, note = _pair(PAPER_PC1, _by_regime(f6["pc1_share"]))
        five = _by_regime(f6["first_components_cumulative"])
        ours += f"; first five {five[0]:.3f} → {five[1]:.3f}"
        f8 = _variant(figures, "pca-centred", "figure-8.json")
        if f8 is not None:
            q = f8["pc1_share"]["train_before_test"]
            ours += f"; Qwen PC1 {q:.3f}"
            note += f"; Qwen: {_vs(PAPER_QWEN_PC1, q)}"
        return ours, note

    add(
        "§3.4 Fig. 6 variant `pca.standardize=false` (centring only): PC1 share",
        _paper_pair(PAPER_PC1) + f"; Qwen {PAPER_QWEN_PC1:.2f}",
        centred,
    )
    return out


def main() -> None:
    figures = Path(sys.argv[1] if len(sys.argv) > 1 else "figures")
    lines = ["| statement | paper | ours (published data) | note |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows(figures)]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
