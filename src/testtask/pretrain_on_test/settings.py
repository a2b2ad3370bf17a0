"""The analysis settings of pretrain-on-test, read once from the `pretrain_on_test` config section.

`Settings.from_config(section)` reads every value the figures, tables, statistics and `make bench` use, with its
type, from conf/pretrain_on_test/analysis.yaml (as composed and overridden): the defaults live there and only
there, so a key missing from the section is an error naming it, never a silent fallback. The pipeline builds the
settings once per context (`PAPER.settings`) and builders read `ctx.settings.<field>`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from testtask.errors import InputError
from testtask.pretrain_on_test.accuracies import EFFECTS
from testtask.pretrain_on_test.hierarchical import ModelSpec, Priors
from testtask.pretrain_on_test.sampling import BACKENDS

SECTION = "pretrain_on_test"
NONCENTERED_T = (True, False, "auto")
COUNTS = ("truncate", "round")  # accuracy × n to a count: the authors' int cast, or the nearest integer
SLICE_DRAWS = (
    "per_lm_type",
    "per_task",
)  # Figure 7: a subsample per (LM type, task), or one per task for all
T = TypeVar("T")


class SettingsError(InputError, ValueError):
    """A value of the `pretrain_on_test` section (named in the message) is missing or not of its type."""


# --- reading one value ---------------------------------------------------------------------------------------


def _at(section: Any, path: str) -> Any:
    node = section
    for key in path.split("."):
        if not isinstance(node, Mapping) and not hasattr(node, "keys"):
            raise SettingsError(f"{SECTION}.{path}: expected a mapping above {key!r}, got {node!r}")
        if key not in node:
            raise SettingsError(
                f"{SECTION}.{path} is missing (its default is in conf/pretrain_on_test/*.yaml)"
            )
        node = node[key]
    return node


def _read(section: Any, path: str, convert: Callable[[Any], T | None], expected: str) -> T:
    value = _at(section, path)
    converted = convert(value)
    if converted is None:
        raise SettingsError(f"{SECTION}.{path} = {value!r}: expected {expected}")
    return converted


def _as_int(low: int) -> Callable[[Any], int | None]:
    def convert(v: Any) -> int | None:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return None
        if isinstance(v, float) and not v.is_integer():
            return None
        return int(v) if v >= low else None

    return convert


def _as_float(low: float, high: float, open_: bool) -> Callable[[Any], float | None]:
    def convert(v: Any) -> float | None:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return None
        inside = low < v < high if open_ else low <= v <= high
        return float(v) if inside else None

    return convert


def _as_text(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _as_bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def _positive_int(section: Any, path: str) -> int:
    return _read(section, path, _as_int(1), "a positive integer")


def _non_negative_int(section: Any, path: str) -> int:
    return _read(section, path, _as_int(0), "an integer >= 0")


def _number(
    section: Any, path: str, low: float = -math.inf, high: float = math.inf, *, open_: bool = False
) -> float:
    """A finite number in [low, high] (in (low, high) when `open_`)."""
    bounds = (
        ""
        if (low, high) == (-math.inf, math.inf)
        else f" in {'(' if open_ else '['}{low:g}, {high:g}{')' if open_ else ']'}"
    )
    return _read(section, path, _as_float(low, high, open_), f"a number{bounds}")


def _text(section: Any, path: str) -> str:
    return _read(section, path, _as_text, "a non-empty string")


def _choice(section: Any, path: str, choices: tuple[Any, ...]) -> Any:
    def convert(v: Any) -> Any:
        # True == 1 in Python: compare types too, so `1` is not taken for `true`
        return next((c for c in choices if v == c and type(v) is type(c)), None)

    return _read(section, path, convert, "one of " + ", ".join(str(c).lower() for c in choices))


# --- the settings --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Collections:
    """Folder names of the raw-result collections under the paper's data root, as the authors release them."""

    few_shot: str  # BERT and GPT-2 (§4–§7)
    overtrained: str  # GPT-2 pretrained for 2 epochs (§8)
    zero_shot: str  # Mistral-7B QLoRA, padding (§9)
    zero_shot_packing: str  # Mistral-7B QLoRA, packing (§9.1)

    def names(self) -> dict[str, str]:
        """Collection key (few_shot, ...) → folder name, in the paper's order."""
        return {
            "few_shot": self.few_shot,
            "overtrained": self.overtrained,
            "zero_shot": self.zero_shot,
            "zero_shot_packing": self.zero_shot_packing,
        }


@dataclass(frozen=True)
class Predictive:
    hdi_prob: float  # the HDI of eqs. 11/12
    max_draws: int | None  # posterior draws used for eqs. 11/12 (None: all chains × draws)


@dataclass(frozen=True)
class Figure4:
    threshold: (
        float  # tasks whose observed average bias passes this in some configuration (dataset_level.ipynb)
    )
    strict: bool = True  # `>` as the authors' notebook filters; False: ≥, the text's "at least"


@dataclass(frozen=True)
class MetaAnalysis:
    """Figure 7 (§10): refits on de-replicated slices."""

    slices: int
    m: int
    n: int
    band: float  # few-shot: |posterior mean of β| beyond this counts as a conclusion
    band_zero_shot: float
    draws: int  # per slice fit
    tune: int
    interaction: bool = False  # W_jl in the slice model (authors' meta.py: none; the text: the §6.1 model)
    # V_jk beside U_j in the slice model (authors' meta.py: one intercept per task, `(1|pair)`; the text: both)
    subsample_effect: bool = False
    chains: int = 1  # per slice fit (authors' meta.py: 1)
    draw: str = "per_lm_type"  # SLICE_DRAWS


@dataclass(frozen=True)
class Permutations:
    permutations: int


@dataclass(frozen=True)
class Reference:
    """The (m, n) a model-check figure uses (the closest present one when it is absent)."""

    m: int
    n: int


@dataclass(frozen=True)
class PriorPredictive(Reference):
    """Figure 11: prior predictive draws at (m, n)."""

    draws: int


@dataclass(frozen=True)
class Recovery:
    """Figure 12: the simulated data set's shape and the two true β."""

    datasets: int
    subsamples: int
    n: int
    lm_types: int
    null_beta: float
    effect_beta: float


@dataclass(frozen=True)
class PermutationTest:
    """Table 2: the task-level sign-flip tests (eqs. 13–14)."""

    permutations: int
    alpha: float


@dataclass(frozen=True)
class PaperContamination:
    """§9.2's tested cell and its two p-values (and the tested models' accuracies from the authors' release)."""

    dataset: str
    n: int
    lm_type: str
    p_extra: float
    p_test: float
    acc_extra: float
    acc_test: float


@dataclass(frozen=True)
class Contamination:
    """The §9.2 table: where our task=contamination runs are, the flagging level and the paper's numbers."""

    collection: str
    alpha: float
    paper: PaperContamination


@dataclass(frozen=True)
class Settings:
    collections: Collections
    model: ModelSpec  # the §6.1 model as configured (figures may override a field, e.g. interaction)
    predictive: Predictive
    effects: tuple[str, ...]  # which differences the posterior figures fit (boost, bias)
    figure_4: Figure4
    figure_7: MetaAnalysis
    figure_8: Permutations
    figure_9: Reference
    figure_10: Reference
    figure_11: PriorPredictive
    figure_12: Recovery
    permutation_test: PermutationTest
    contamination: Contamination
    counts: str = "truncate"  # COUNTS

    def __post_init__(self) -> None:
        if self.model.backend not in BACKENDS:
            raise SettingsError(
                f"{SECTION}.model.backend = {self.model.backend!r}: expected one of {', '.join(BACKENDS)}"
            )
        unknown = [e for e in self.effects if e not in EFFECTS]
        if unknown or not self.effects:
            raise SettingsError(
                f"{SECTION}.effects = {list(self.effects)}: expected a non-empty list of {list(EFFECTS)}"
            )

    @classmethod
    def from_config(cls, section: Any) -> Settings:
        """The settings of `section` (the `pretrain_on_test` config: DictConfig or plain mapping)."""
        s = section
        scales = ("intercept_sigma", "lm_type_sigma", "treatment_sigma", "sigma_U", "sigma_V", "sigma_W")
        priors = Priors(
            treatment_mu=_number(s, "model.priors.treatment_mu"),
            **{name: _number(s, f"model.priors.{name}", 0.0, open_=True) for name in scales},
        )
        max_draws = _at(s, "predictive.max_draws")
        effects = _at(s, "effects")
        if isinstance(effects, str) or not hasattr(effects, "__iter__"):
            raise SettingsError(f"{SECTION}.effects = {effects!r}: expected a list of {list(EFFECTS)}")
        return cls(
            collections=Collections(
                few_shot=_text(s, "collections.few_shot"),
                overtrained=_text(s, "collections.overtrained"),
                zero_shot=_text(s, "collections.zero_shot"),
                zero_shot_packing=_text(s, "collections.zero_shot_packing"),
            ),
            model=ModelSpec(
                backend=_choice(s, "model.backend", BACKENDS),
                interaction=_read(s, "model.interaction", _as_bool, "true or false"),
                noncentered_t=_choice(s, "model.noncentered_t", NONCENTERED_T),
                collapse_s=_choice(s, "model.collapse_s", NONCENTERED_T),
                priors=priors,
                formula=_text(s, "model.formula"),
            ),
            predictive=Predictive(
                hdi_prob=_number(s, "predictive.hdi_prob", 0.0, 1.0, open_=True),
                max_draws=None if max_draws is None else _positive_int(s, "predictive.max_draws"),
            ),
            effects=tuple(str(e) for e in effects),
            figure_4=Figure4(
                threshold=_number(s, "figure_4.threshold"),
                strict=_read(s, "figure_4.strict", _as_bool, "true or false"),
            ),
            figure_7=MetaAnalysis(
                slices=_positive_int(s, "figure_7.slices"),
                m=_positive_int(s, "figure_7.m"),
                n=_positive_int(s, "figure_7.n"),
                band=_number(s, "figure_7.band", 0.0),
                band_zero_shot=_number(s, "figure_7.band_zero_shot", 0.0),
                draws=_positive_int(s, "figure_7.draws"),
                tune=_non_negative_int(s, "figure_7.tune"),
                interaction=_read(s, "figure_7.interaction", _as_bool, "true or false"),
                subsample_effect=_read(s, "figure_7.subsample_effect", _as_bool, "true or false"),
                chains=_positive_int(s, "figure_7.chains"),
                draw=_choice(s, "figure_7.draw", SLICE_DRAWS),
            ),
            figure_8=Permutations(permutations=_positive_int(s, "figure_8.permutations")),
            figure_9=Reference(m=_positive_int(s, "figure_9.m"), n=_positive_int(s, "figure_9.n")),
            figure_10=Reference(m=_positive_int(s, "figure_10.m"), n=_positive_int(s, "figure_10.n")),
            figure_11=PriorPredictive(
                m=_positive_int(s, "figure_11.m"),
                n=_positive_int(s, "figure_11.n"),
                draws=_positive_int(s, "figure_11.draws"),
            ),
            figure_12=Recovery(
                datasets=_positive_int(s, "figure_12.datasets"),
                subsamples=_positive_int(s, "figure_12.subsamples"),
                n=_positive_int(s, "figure_12.n"),
                lm_types=_positive_int(s, "figure_12.lm_types"),
                null_beta=_number(s, "figure_12.null_beta"),
                effect_beta=_number(s, "figure_12.effect_beta"),
            ),
            permutation_test=PermutationTest(
                permutations=_positive_int(s, "permutation_test.permutations"),
                alpha=_number(s, "permutation_test.alpha", 0.0, 1.0, open_=True),
            ),
            contamination=Contamination(
                collection=_text(s, "contamination.collection"),
                alpha=_number(s, "contamination.alpha", 0.0, 1.0, open_=True),
                paper=PaperContamination(
                    dataset=_text(s, "contamination.paper.dataset"),
                    n=_positive_int(s, "contamination.paper.n"),
                    lm_type=_text(s, "contamination.paper.lm_type"),
                    **{
                        k: _number(s, f"contamination.paper.{k}", 0.0, 1.0)
                        for k in ("p_extra", "p_test", "acc_extra", "acc_test")
                    },
                ),
            ),
            counts=_choice(s, "counts", COUNTS),
        )
