"""The named functions of train-before-test's claims ledger (conf/claims/train-before-test.yaml): values a path into
one sidecar cannot give (counts, orderings, comparisons across sidecars, the sensitivity variants). Each gets the
paper's sidecars (file name -> JSON) and returns a mapping the ledger's rule compares on the paper's keys only, so
the numbers behind a verdict are shown beside it. A sensitivity variant is a build with one setting changed
(`VARIANTS`), in its own folder `<figures_dir>/variants/<override>/<paper>/<source folder>/` (pipeline.variant,
paths.output_dir); a variant not built is not computable, and the verdict names the command.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from testtask.report.evaluate import NotComputable
from testtask.sidecars import ProvenanceMismatch, read

REGIMES = ("direct", "train_before_test")
NEARLY = 0.9  # "nearly as high" (§3.2): the between-category mean τ is at least this share of the within one
# Sensitivity variants the ledger reads: the setting each changes (its override names the variant folder, as for any
# build whose settings differ from the preset's: pipeline.variant) and the command that builds it.
VARIANTS = {
    "train_before_test.ties.rule=leader": "make figure-12 PAPER=train-before-test "
    "ARGS='train_before_test.ties.rule=leader'",
    "train_before_test.pca.standardize=false": "make figure-6 figure-8 PAPER=train-before-test "
    "ARGS='train_before_test.pca.standardize=false'",
}


def matrix_size(sidecars: Mapping[str, Any]) -> dict[str, int]:
    """§1/§3.1: models scored in each regime, benchmarks and benchmark pairs of Figure 2."""
    figure = sidecars["figure-2.json"]
    return {
        "models_direct": int(figure["models"]["direct"]["n_models_any"]),
        "models_train_before_test": int(figure["models"]["train_before_test"]["n_models_any"]),
        "benchmarks": len(figure["benchmarks"]),
        "pairs": int(figure["pairs_total"]),
    }


def pairs_improved(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§1/§3.2: benchmark pairs whose τ is higher under train-before-test, and those that are not."""
    figure = sidecars["figure-2.json"]
    return {
        "improved": int(figure["pairs_improved"]),
        "total": int(figure["pairs_total"]),
        "not_improved": [
            f"{p['pair'][0]}/{p['pair'][1]} ({p['before']:.2f} → {p['after']:.2f})"
            for p in figure["pairs_not_improved"]
        ],
    }


def direct_outliers(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§3.2: the benchmarks with the lowest mean τ with the others under direct evaluation."""
    mean = sidecars["figure-2.json"]["mean_with_others"]["direct"]
    low = sorted(mean, key=mean.get)
    return {"lowest_two": low[:2], "lowest_three": {b: round(float(mean[b]), 3) for b in low[:3]}}


def category_agreement(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§3.2, Figure 3: mean τ within and between categories; "nearly as high" read as between ≥ NEARLY × within
    under train-before-test (the paper gives no number)."""
    figure = sidecars["figure-3.json"]
    intra, inter = figure["mean_intra"], figure["mean_inter"]
    ratio = {r: inter[r] / intra[r] for r in REGIMES}
    return {
        "nearly_as_high": ratio["train_before_test"] >= NEARLY,
        "inter_over_intra": {r: round(ratio[r], 3) for r in REGIMES},
        "intra": {r: round(float(intra[r]), 3) for r in REGIMES},
        "inter": {r: round(float(inter[r]), 3) for r in REGIMES},
    }


def perplexity_exclusions(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§3.3 / App. B.2: models left out of every perplexity comparison (Figure 2's models − Figure 4's)."""
    every = int(sidecars["figure-2.json"]["models"]["direct"]["n_models_any"])
    figure_4 = sidecars["figure-4.json"]
    in_perplexity = int(figure_4["panels"]["direct"]["n_models_means"])
    return {
        "excluded": every - in_perplexity,
        "in_perplexity": in_perplexity,
        "models": every,
        "prefixes": list(figure_4["excluded_model_prefixes"]),
    }


def qwen_pc1(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§3.4, Figure 8: the Qwen models' PC1 share under train-before-test, beside their first five under direct."""
    figure = sidecars["figure-8.json"]
    pc1 = float(figure["pc1_share"]["train_before_test"])
    five = float(figure["first_components_cumulative"]["direct"])
    return {
        "pc1_train_before_test": pc1,
        "first_five_direct": five,
        "difference": pc1 - five,
        "models": int(figure["n_models"]),
    }


def _tau_b(figure: Mapping[str, Any]) -> dict[str, Any]:
    share = figure["ties"]["mean_tied_pair_share"]
    return {
        "direct": float(figure["mean_kendall_direct"]),
        "train_before_test": float(figure["mean_kendall_train_before_test"]),
        "pairs_improved": int(figure["pairs_improved"]),
        "pairs_total": int(figure["pairs_total"]),
        "tied_pair_share_direct": float(share["direct"]),
        "tied_pair_share_train_before_test": float(share["train_before_test"]),
    }


def tau_b_ties(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. C.2, Figure 12: mean Kendall τ-b with significance ties, pairs improved, share of model pairs tied."""
    return _tau_b(sidecars["figure-12.json"])


def ties_raise_tau(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. C.2: ties raise the mean τ in both regimes (no ties → significance ties)."""
    figure = sidecars["figure-12.json"]
    plain = {r: float(figure["mean_kendall_without_ties"][r]) for r in REGIMES}
    tied = {r: float(figure[f"mean_kendall_{r}"]) for r in REGIMES}
    rise = {r: tied[r] - plain[r] for r in REGIMES}
    return {
        "higher_in_both": all(v > 0 for v in rise.values()),
        "rise": {r: round(rise[r], 3) for r in REGIMES},
        "without_ties": {r: round(plain[r], 3) for r in REGIMES},
        "with_ties": {r: round(tied[r], 3) for r in REGIMES},
    }


def variant(sidecars: Mapping[str, Any], name: str, file: str) -> Any:
    """A sidecar of sensitivity variant `name` (its override: built under <figures_dir>/variants/<name>/<paper>/
    <source folder>/ and checked against the report's source like every sidecar, and to be a variant of the
    report's own settings that changes exactly that one); NotComputable, naming the command that builds it, when
    it is absent."""
    folder = getattr(sidecars, "folder", None)
    if folder is None:
        raise NotComputable(f"variant {name}: the sidecars come from no folder")
    folder = Path(folder)  # <figures_dir>/<paper>/<source folder>
    path = folder.parents[1] / "variants" / name / folder.parent.name / folder.name / file
    if not path.is_file():
        raise NotComputable(
            f"variant {name} not built ({path} is absent): {VARIANTS[name]}",
            unbuilt=(f"variants/{name}/{file}",),
            command=VARIANTS[name],
        )
    expected = getattr(sidecars, "expected", None)
    document = read(path, dataclasses.replace(expected, settings=None) if expected is not None else None)
    built = (document.get("provenance") or {}).get("settings") or {}
    key, _, value = name.partition("=")
    if expected is not None and expected.settings and built:
        differs = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in built["differs"].items()}
        if built["preset_fingerprint"] != expected.settings or differs != {key: value}:
            raise ProvenanceMismatch(
                f"{path}: built as a variant of other settings than the report reads (it changes "
                f"{built.get('differs')}, the variant {name} only {key}); rebuild it: {VARIANTS[name]}"
            )
    return document


def ties_leader(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """App. C.2 with transitive tie classes (`ties.rule=leader`): mean τ-b."""
    return _tau_b(variant(sidecars, "train_before_test.ties.rule=leader", "figure-12.json"))


def pca_centred(sidecars: Mapping[str, Any]) -> dict[str, Any]:
    """§3.4 with centring only (`pca.standardize=false`): PC1 share (all models and Qwen), first five."""
    figure_6 = variant(sidecars, "train_before_test.pca.standardize=false", "figure-6.json")
    out = {
        "direct": float(figure_6["pc1_share"]["direct"]),
        "train_before_test": float(figure_6["pc1_share"]["train_before_test"]),
        "first_five_direct": float(figure_6["first_components_cumulative"]["direct"]),
        "first_five_train_before_test": float(figure_6["first_components_cumulative"]["train_before_test"]),
    }
    figure_8 = variant(sidecars, "train_before_test.pca.standardize=false", "figure-8.json")
    out["qwen_train_before_test"] = float(figure_8["pc1_share"]["train_before_test"])
    return out


FUNCTIONS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "matrix_size": matrix_size,
    "pairs_improved": pairs_improved,
    "direct_outliers": direct_outliers,
    "category_agreement": category_agreement,
    "perplexity_exclusions": perplexity_exclusions,
    "qwen_pc1": qwen_pc1,
    "tau_b_ties": tau_b_ties,
    "ties_raise_tau": ties_raise_tau,
    "ties_leader": ties_leader,
    "pca_centred": pca_centred,
}
