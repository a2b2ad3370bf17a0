"""The analysis settings of downstream-predictability: the schema of the `downstream_predictability` config section.

Values are in conf/downstream_predictability/analysis.yaml and its `families` group; a family added on the command
line (as the simulated ones are, `simulate.family_overrides`) gives every key of `FamilySpec` too.
"""

from __future__ import annotations

from typing import Annotated

from testtask.schema import (
    AnyText,
    Choice,
    Name,
    NonNegativeInt,
    NonNegativeNumber,
    PositiveInt,
    PositiveNumber,
    Problem,
    Text,
    all_of,
    non_empty,
    one_of,
    require,
    section,
)


class Quantity(Choice):
    """The scores of the chain (chain.chain), in its order: each one a step further from the loglikelihoods."""

    log_p_vocab = "log_p_vocab"
    p_vocab = "p_vocab"
    p_choices = "p_choices"
    brier = "brier"
    accuracy = "accuracy"


class Normalisation(Choice):
    """The loglikelihoods the chain starts from: as logged, per character (lm-eval's acc_norm) or per UTF-8 byte."""

    none = "none"
    chars = "chars"
    bytes = "bytes"


class CorrelationMethod(Choice):
    pearson = "pearson"
    spearman = "spearman"
    kendall = "kendall"


class ComputeScale(Choice):
    """Compute as Pearson correlates it: log10 FLOPs or FLOPs (ranks ignore it)."""

    log10 = "log10"
    linear = "linear"


class Undefined(Choice):
    """A sample whose score is the same for every member: dropped from the distribution or counted as 0."""

    drop = "drop"
    zero = "zero"


class Incorrect(Choice):
    """Figure 6: the vocabulary mass on the incorrect choices summed, or one point per incorrect choice."""

    sum = "sum"
    each = "each"


class Comparison(Choice):
    """An ordering step of Figure 4: the left quantity's statistic above (`>`) or at least (`>=`) the right's."""

    above = ">"
    at_least = ">="


class Members(Choice):
    """`discover`: every stage folder below the family's samples_dir is a member (compute from `compute`)."""

    discover = "discover"


@section
class Pretraining:
    parameters: PositiveNumber  # N
    tokens: PositiveNumber  # D: compute 6·N·D
    source: AnyText | None  # where N and D come from


@section
class Finetuning:
    parameters: PositiveNumber  # N of fine-tuning (LoRA still runs forward and backward through all weights)
    runner_config: Name | None  # the runner's experiment config: batch_size, max_length, checkpoints_dir
    batch_size: PositiveInt | None  # explicit values win over the runner config's
    max_length: PositiveInt | None
    checkpoints_dir: Name | None
    tokens_field: Name  # field of the runner's finished.json with the tokens seen, if it has one
    recorded_steps: dict[str, NonNegativeInt]  # stage -> optimizer steps, when the runner's record is absent


@section
class Compute:
    pretraining: Pretraining
    finetuning: Finetuning | None  # None: only the `base` stage can be costed


@section
class MemberSpec:
    name: Name
    samples: Name  # folder below the family's samples_dir
    compute: PositiveNumber  # FLOPs


MemberList = Annotated[
    Members | non_empty(MemberSpec), Text("discover or a non-empty list of {name, samples, compute}")
]


@section
class FamilySpec:
    """One family of `families`: where its samples are and what each member cost."""

    label: Name  # shown in figures
    paper: Name  # whose results root holds the samples (Context.paper_root)
    samples_dir: Name  # folder below that root
    model: Name  # model name prefix of the <model>-<benchmark> folders
    members: MemberList
    compute: Compute | None  # needed to discover members

    def __post_init__(self) -> None:
        if self.members == Members.discover and self.compute is None:
            require(Problem("compute", None, "a compute section with members: discover"))


@section
class Focus:
    task: Name | None  # Figures 2 and 3 (null or a family without it: its first task, alphabetically)
    method: CorrelationMethod  # correlation method shown in Figures 2, 3 and 6


@section
class Schematic:
    label: Name
    a: PositiveNumber  # Beta(a, b) stretched onto [-1, 1]
    b: PositiveNumber


@section
class Figure2:
    quantity: Quantity
    bins: PositiveInt
    schematic: list[Schematic]


@section
class Figure3:
    quantities: non_empty(Quantity)  # panels A-D


# (left, > or >=, right): one step of the paper's ordering of the quantities
OrderingStep = Annotated[
    tuple[Quantity, Comparison, Quantity], Text("a [quantity, > or >=, quantity] triple")
]


@section
class Figure4:
    quantities: non_empty(Quantity)
    ordering: list[OrderingStep]
    tolerance: NonNegativeNumber  # statistics this close count as equal


@section
class Figure5:
    tasks: list[Name]
    bins: PositiveInt


@section
class Figure6:
    tasks: list[Name]
    incorrect: Incorrect
    bins: PositiveInt


@section
class Settings:
    """The `downstream_predictability` section of the analysis config."""

    families: dict[str, FamilySpec]  # every configured family, by name
    families_used: list[Name] | None  # null or empty: every family whose samples exist
    tasks: list[Name]  # restrict to these tasks; empty: every task all members logged
    target_delimiter: AnyText  # stripped from a continuation to get the choice's text
    normalisation: Normalisation
    compute_scale: ComputeScale  # Pearson only
    negate: list[Quantity]  # quantities where lower is better, negated before correlating
    undefined: Undefined
    methods: non_empty(CorrelationMethod)  # correlation methods computed
    grid_points: PositiveInt  # points of the complementary CDFs in the JSON
    focus: Focus
    figure_2: Figure2
    figure_3: Figure3
    figure_4: Figure4
    figure_5: Figure5
    figure_6: Figure6

    def __post_init__(self) -> None:
        require(
            all_of("families_used", self.families_used or [], self.families, "keys of {families}"),
            one_of("focus.method", self.focus.method, self.methods, "one of the computed {methods}"),
        )
