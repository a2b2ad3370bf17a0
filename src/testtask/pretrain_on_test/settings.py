"""The schema of the `pretrain_on_test` config section; values in conf/pretrain_on_test/analysis.yaml (the paper's
text, where it differs from the authors' code, in conf/pretrain_on_test/protocol/paper_text.yaml)."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from testtask.schema import (
    Choice,
    Flag,
    Name,
    NonNegativeInt,
    NonNegativeNumber,
    Number,
    PositiveInt,
    PositiveNumber,
    Probability,
    Problem,
    Text,
    UnitInterval,
    non_empty,
    require,
    section,
)


class Backend(Choice):
    """How the §6.1 model is built: `marginal` (identified coordinates) or `bambi` (the formula as written)."""

    marginal = "marginal"
    bambi = "bambi"


class Effect(Choice):
    """Which difference a posterior figure fits: boost (extra − base) or bias (test − extra)."""

    boost = "boost"
    bias = "bias"


class Counts(Choice):
    """Accuracy × n to a count: the authors' integer cast (`truncate`) or the nearest integer (`round`)."""

    truncate = "truncate"
    round = "round"


class SliceDraw(Choice):
    """Figure 7: a subsample per (LM type, task), as the authors' meta.py draws it, or one per task for all."""

    per_lm_type = "per_lm_type"
    per_task = "per_task"


class LmTypeFit(Choice):
    """A posterior figure's LM types: one fit per panel pooling them (the paper's) or one fit each, side by side."""

    pooled = "pooled"
    side_by_side = "side_by_side"


class Auto(Choice):
    """`auto`: decided from the data (beside true and false)."""

    auto = "auto"


TrueFalseAuto = Annotated[Flag | Auto, Text("true, false or auto")]


@section
class Collections:
    """Folder names of the raw-result collections under the paper's data root, as the authors release them."""

    few_shot: Name  # BERT and GPT-2 (§4–§7)
    overtrained: Name  # GPT-2 pretrained for 2 epochs (§8)
    zero_shot: Name  # Mistral-7B QLoRA, padding (§9)
    zero_shot_packing: Name  # Mistral-7B QLoRA, packing (§9.1)

    def names(self) -> dict[str, str]:
        """Collection key (few_shot, ...) → folder name, in the paper's order."""
        return dataclasses.asdict(self)


@section
class Priors:
    """Prior scales of §6.1 (eqs. 3–10)."""

    intercept_sigma: PositiveNumber
    lm_type_sigma: PositiveNumber
    treatment_sigma: PositiveNumber
    treatment_mu: Number
    sigma_U: PositiveNumber
    sigma_V: PositiveNumber
    sigma_W: PositiveNumber


@section
class ModelSpec:
    """The §6.1 model as fitted (a figure may change a field with `dataclasses.replace`)."""

    backend: Backend
    interaction: Flag  # include W_jl (Figure 10 drops it)
    # t_j = β + sqrt(2)·σ_W·e_j (non-centred) mixes better when σ_W is small next to the data's noise (the bias)
    noncentered_t: TrueFalseAuto
    # s_j integrated out of the c_jk prior (same posterior otherwise): no s–c–σ_V funnel with one subsample per
    # task (Figure 7's slices); "auto" collapses exactly then.
    collapse_s: TrueFalseAuto
    # V_jk, the (1|dataset:subsample) term. False: the authors' Figure 7 slice model (meta.py's `(1|pair)`), one
    # subsample per task; σ_V then keeps only its HalfNormal prior.
    subsample_effect: Flag
    priors: Priors
    formula: Name


@section
class Refit:
    """What a fit that fails its diagnostics is refitted with, the healthiest attempt kept (`refit.py`)."""

    other_t: Flag  # refit in the other t_j parameterisation, where `model.noncentered_t: auto` chose it
    target_accept: Probability | None  # then, if still failing, with this target_accept; None: no such step


@section
class Predictive:
    hdi_prob: Probability  # the HDI of eqs. 11/12
    max_draws: PositiveInt | None  # posterior draws used for eqs. 11/12 (None: all chains × draws)


@section
class LmTypes:
    """Which LM types the posterior figures (3–6) read from each collection, and whether they pool them."""

    read: non_empty(Name) | None  # LM type folders (bert, gpt2, an own one); None: every LM type found
    fit: LmTypeFit

    def __post_init__(self) -> None:
        repeated = sorted({lm for lm in self.read or [] if self.read.count(lm) > 1})
        require(
            Problem("read", self.read, f"each LM type once ({', '.join(repeated)} repeated)")
            if repeated
            else None
        )


@section
class Figure4:
    # tasks whose observed average bias passes this in some configuration (dataset_level.ipynb)
    threshold: Number
    strict: Flag  # `>` as the authors' notebook filters; False: ≥, the text's "at least"


@section
class MetaAnalysis:
    """Figure 7 (§10): refits on de-replicated slices."""

    slices: PositiveInt
    m: PositiveInt
    n: PositiveInt
    band: NonNegativeNumber  # few-shot: |posterior mean of β| beyond this counts as a conclusion
    band_zero_shot: NonNegativeNumber
    draws: PositiveInt  # per slice fit
    tune: NonNegativeInt
    interaction: Flag  # W_jl in the slice model (authors' meta.py: none; the text: the §6.1 model)
    subsample_effect: Flag  # V_jk beside U_j in the slice model (authors' meta.py: one intercept per task)
    chains: PositiveInt  # per slice fit (authors' meta.py: 1)
    draw: SliceDraw


@section
class Permutations:
    permutations: PositiveInt


@section
class Reference:
    """The (m, n) a model-check figure uses (the closest present one when it is absent)."""

    m: PositiveInt
    n: PositiveInt


@section
class PriorPredictive:
    """Figure 11: prior predictive draws at (m, n)."""

    m: PositiveInt
    n: PositiveInt
    draws: PositiveInt


@section
class Recovery:
    """Figure 12: the simulated data set's shape and the two true β."""

    datasets: PositiveInt
    subsamples: PositiveInt
    n: PositiveInt
    lm_types: PositiveInt
    null_beta: Number
    effect_beta: Number


@section
class PermutationTest:
    """Table 2: the task-level sign-flip tests (eqs. 13–14)."""

    permutations: PositiveInt
    alpha: Probability


@section
class PaperContamination:
    """§9.2's tested cell and its two p-values (and the tested models' accuracies from the authors' release)."""

    dataset: Name
    n: PositiveInt
    lm_type: Name
    p_extra: UnitInterval
    p_test: UnitInterval
    acc_extra: UnitInterval
    acc_test: UnitInterval


@section
class Contamination:
    """The §9.2 table: where our task=contamination runs are, the flagging level and the paper's numbers."""

    collection: Name
    alpha: Probability
    paper: PaperContamination


@section
class VsAuthors:
    """`make bench-vs-authors`: the one configuration fitted the authors' way and ours."""

    m: PositiveInt
    n: PositiveInt
    effect: Effect


@section
class Bench:
    """`make bench`: Figure 3 (and Figure 7) timed per fit."""

    proxy_missing_m: Flag  # time a missing m (e.g. m=100 offline) on a relabelled copy of the present one
    cold: Flag  # time every fit from scratch (a throw-away posterior cache)
    figure_7: Flag  # also time Figure 7's slice fits
    vs_authors: VsAuthors


@section
class Settings:
    """The `pretrain_on_test` section of the analysis config."""

    key: Name  # the paper key the section belongs to
    collections: Collections
    counts: Counts  # the counts the §6.1 model is fitted to (Figures 3-7, 9, 10)
    model: ModelSpec
    refit: Refit  # a fit failing its diagnostics is refitted (Figures 3-7, 9, 10, 12)
    predictive: Predictive
    effects: non_empty(Effect)  # which differences the posterior figures fit
    lm_types: LmTypes  # which LM types the posterior figures read, pooled or side by side
    figure_4: Figure4
    figure_7: MetaAnalysis
    figure_8: Permutations
    figure_9: Reference
    figure_10: Reference
    figure_11: PriorPredictive
    figure_12: Recovery
    permutation_test: PermutationTest
    contamination: Contamination
    bench: Bench
