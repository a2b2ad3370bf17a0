"""The analysis settings of train-before-test, read once from the `train_before_test` config section
(conf/train_before_test/analysis.yaml, where every default is; `PAPER.settings` builds them for the pipeline)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from testtask.train_before_test.inputs import Regime

COMPUTE_COLUMNS = ("name", "params_b", "tokens_b", "flops_1e18")


@dataclass(frozen=True)
class Category:
    name: str  # e.g. "Language understanding"
    benchmarks: tuple[str, ...]  # in the order of Table 1


@dataclass(frozen=True)
class Perplexity:
    corpora: tuple[str, ...]  # perplexity corpora (Figures 4-5 only)
    higher_is_better: bool  # bits per byte: false
    exclude_model_prefixes: tuple[str, ...]  # models left out of the perplexity analyses


@dataclass(frozen=True)
class Ties:
    confidence: float  # of the two-sided normal test deciding a significance tie
    rule: str  # pairwise | leader


@dataclass(frozen=True)
class CaseStudy:
    name: str  # Figure 8's family, e.g. Qwen
    model_prefix: str  # its models' ids start with this
    max_with_baseline: bool = (
        False  # second regime's cell = max(second, first), as the authors' Figure 8 cell
    )


@dataclass(frozen=True)
class Pca:
    standardize: bool  # z-score every benchmark across models (true) or only centre it
    n_components: int  # shown in Figures 6 and 8
    case_study: CaseStudy


@dataclass(frozen=True)
class Heatmap:
    cmap: str
    vmax: float


@dataclass(frozen=True)
class ModelCompute:
    name: str  # the paper's label
    params_b: float  # parameters, billions
    tokens_b: float  # training tokens, billions
    flops_1e18: float  # 6 N D, units of 1e18


@dataclass(frozen=True)
class PretrainingCompute:
    source: str  # where the numbers come from (Table 4 of the paper)
    models: dict[str, ModelCompute]  # HF id -> compute


@dataclass(frozen=True)
class TinyData:
    out: str  # `action=tiny-data`: folder of the tiny preset's offline fixture (relative to the repository root)


@dataclass(frozen=True)
class Settings:
    results_file: str  # below the paper's data root
    regimes: dict[str, Regime]  # our key -> fields of all_results.json; the first is the baseline
    categories: dict[str, Category]  # the downstream benchmarks by category, in the order of Table 1
    perplexity: Perplexity
    instruction_tuned_suffixes: tuple[
        str, ...
    ]  # Figure 5: HF ids ending in one of these are instruction-tuned
    labels: dict[str, str]  # benchmark -> label in figures and tables
    kendall_decimals: int | None  # plain tau rounded to this many decimals before any mean (None: unrounded)
    ties: Ties
    pca: Pca
    heatmap: Heatmap
    pretraining_compute: PretrainingCompute
    tiny_data: TinyData

    def __post_init__(self) -> None:
        if self.ties.rule not in ("pairwise", "leader"):
            raise ValueError(
                f"train_before_test.ties.rule must be pairwise or leader, got {self.ties.rule!r}"
            )
        if not 0 < self.ties.confidence < 1:
            raise ValueError(
                f"train_before_test.ties.confidence must be in (0, 1), got {self.ties.confidence}"
            )

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> Settings:
        """Settings of the `train_before_test` section; ValueError naming a bad entry."""
        ppl, ties, pca, heat = section["perplexity"], section["ties"], section["pca"], section["heatmap"]
        return cls(
            results_file=str(section["results_file"]),
            regimes={
                str(key): Regime(str(key), str(spec["field"]), str(spec["stderr_field"]), str(spec["label"]))
                for key, spec in section["regimes"].items()
            },
            categories={
                str(key): Category(str(spec.get("name", key)), tuple(str(b) for b in spec["benchmarks"]))
                for key, spec in section["categories"].items()
            },
            perplexity=Perplexity(
                corpora=tuple(str(c) for c in ppl["corpora"]),
                higher_is_better=bool(ppl["higher_is_better"]),
                exclude_model_prefixes=tuple(str(p) for p in ppl["exclude_model_prefixes"]),
            ),
            instruction_tuned_suffixes=tuple(str(s) for s in section["instruction_tuned_suffixes"]),
            labels={str(k): str(v) for k, v in (section["labels"] or {}).items()},
            kendall_decimals=_optional_int(section.get("kendall_decimals")),
            ties=Ties(confidence=float(ties["confidence"]), rule=str(ties["rule"])),
            pca=Pca(
                standardize=bool(pca["standardize"]),
                n_components=int(pca["n_components"]),
                case_study=CaseStudy(
                    str(pca["case_study"]["name"]),
                    str(pca["case_study"]["model_prefix"]),
                    bool(pca["case_study"].get("max_with_baseline", False)),
                ),
            ),
            heatmap=Heatmap(cmap=str(heat["cmap"]), vmax=float(heat["vmax"])),
            pretraining_compute=pretraining_compute(section["pretraining_compute"]),
            tiny_data=TinyData(out=str(section["tiny_data"]["out"])),
        )


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def pretraining_compute(section: Mapping[str, Any]) -> PretrainingCompute:
    """`pretraining_compute` of the config; ValueError naming an entry that lacks a column or has FLOPs <= 0."""
    models = {}
    for model, spec in section["models"].items():
        missing = [c for c in COMPUTE_COLUMNS if c not in spec]
        if missing:
            raise ValueError(f"train_before_test.pretraining_compute.models.{model} lacks {missing}")
        flops = float(spec["flops_1e18"])
        if not flops > 0:
            raise ValueError(f"train_before_test.pretraining_compute.models.{model}.flops_1e18 must be > 0")
        models[str(model)] = ModelCompute(
            str(spec["name"]), float(spec["params_b"]), float(spec["tokens_b"]), flops
        )
    return PretrainingCompute(source=str(section["source"]), models=models)
