"""The analysis settings of train-before-test: the schema of the `train_before_test` config section.

Each key is declared here once, with its type and allowed values; its value is in
conf/train_before_test/analysis.yaml (the paper's text, where it differs from the authors' code, in
conf/train_before_test/protocol/paper_text.yaml). Own benchmark categories (conf/user/benchmarks.yaml) are merged
into `categories` and `labels` before the section is typed (`user_benchmarks.merge`), so they are checked here too.
The pipeline reads the section once (`testtask.schema.load`) and builders read `ctx.settings.<field>`.
"""

from __future__ import annotations

from testtask.schema import (
    Choice,
    Flag,
    Name,
    NonNegativeInt,
    Number,
    PositiveInt,
    PositiveNumber,
    Probability,
    Problem,
    non_empty,
    require,
    section,
)


class TieRule(Choice):
    """How significance ties are decided (Appendix C.2; testtask.train_before_test.ties)."""

    pairwise = "pairwise"  # each pair of models tied or ordered by its own test (the paper's rule)
    leader = "leader"  # transitive tie classes: a model joins the class of a best model it is not below


@section
class Regime:
    """One evaluation regime: the fields of all_results.json that hold its scores."""

    field: Name  # score field, e.g. direct_eval
    stderr_field: Name
    label: Name  # in figures and tables


@section
class Category:
    name: Name  # e.g. "Language understanding"
    benchmarks: non_empty(Name)  # in the order of Table 1


@section
class Perplexity:
    corpora: list[Name]  # perplexity corpora (Figures 4-5 only)
    higher_is_better: Flag  # bits per byte: false
    exclude_model_prefixes: list[Name]  # models left out of the perplexity analyses


@section
class Ties:
    confidence: Probability  # of the two-sided normal test deciding a significance tie
    rule: TieRule


@section
class CaseStudy:
    name: Name  # Figure 8's family, e.g. Qwen
    model_prefix: Name  # its models' ids start with this
    max_with_baseline: Flag  # second regime's cell = max(second, first), as the authors' Figure 8 cell


@section
class Pca:
    standardize: Flag  # z-score every benchmark across models (true) or only centre it
    n_components: PositiveInt  # shown in Figures 6 and 8
    case_study: CaseStudy


@section
class Heatmap:
    cmap: Name
    vmax: Number


@section
class ModelCompute:
    name: Name  # the paper's label
    params_b: PositiveNumber  # parameters, billions
    tokens_b: PositiveNumber  # training tokens, billions
    flops_1e18: PositiveNumber  # 6 N D, units of 1e18


@section
class PretrainingCompute:
    source: Name  # where the numbers come from (Table 4 of the paper)
    models: dict[str, ModelCompute]  # HF id -> compute


@section
class TinyData:
    out: Name  # `action=tiny-data`: folder of the tiny preset's offline fixture (relative to the repository root)


@section
class Settings:
    """The `train_before_test` section of the analysis config."""

    results_file: Name  # below the paper's data root
    regimes: dict[str, Regime]  # our key -> fields of all_results.json; the first is the baseline
    categories: dict[str, Category]  # the downstream benchmarks by category, in the order of Table 1
    perplexity: Perplexity
    instruction_tuned_suffixes: list[Name]  # Figure 5: HF ids ending in one of these are instruction-tuned
    labels: dict[str, Name]  # benchmark -> label in figures and tables
    kendall_decimals: NonNegativeInt | None  # plain tau rounded to this many decimals before any mean
    ties: Ties
    pca: Pca
    heatmap: Heatmap
    pretraining_compute: PretrainingCompute
    tiny_data: TinyData

    def __post_init__(self) -> None:
        # Every figure compares a baseline regime with one other (Figures 2, 6-8 and 12-15 take the two in order).
        two = len(self.regimes) == 2
        require(None if two else Problem("regimes", list(self.regimes), "two regimes"))
