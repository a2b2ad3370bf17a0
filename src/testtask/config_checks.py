"""Config checks: the composed config is validated once, before anything runs or is written.

Settings are read once, typed, at the edge: every value the code would only trip over later (a negative size
deep inside numpy, an unknown backend at fit time, a repetition count that silently runs nothing) is checked
here against a declarative list of rules, and all violations are reported together, one line each, naming the
key and what it should be:

    invalid config: pretrain_on_test.model.backend = 'foo': expected one of marginal, bambi
    invalid config: n = -5: expected a positive integer

Entry point: `check_analysis_config(cfg)`, the `testtask` CLI's config (conf/config.yaml: sampler, top-level keys
and the five papers' analysis groups). The runners' configs have typed schemas (`<paper>/runner/settings.py`).

A rule is (key path, expectation): `*` in a path stands for every key of a mapping or every item of a list.
A relation is a function of the whole config for what one key alone cannot say (a benchmark that must be a key
of `benchmarks`, a batch that must divide evenly). The known sets below are copied from the code that consumes
the values (named next to each); tests/test_config_checks.py keeps the copies equal to those constants, so this
module imports nothing heavy.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from testtask.errors import InputError
from testtask.sources import SOURCES  # pipeline.make_context

PRESETS = ("authors", "paper_text")

# --- known sets, from the code that reads each value ---------------------------------------------------------
SAMPLERS = ("nutpie", "pymc", "numpyro")  # pretrain_on_test.sampling.fit
CHAIN_METHODS = ("parallel", "sequential", "vectorized")  # numpyro MCMC(chain_method=...)
BACKENDS = ("marginal", "bambi")  # pretrain_on_test.sampling.fit
EFFECTS = ("boost", "bias")  # pretrain_on_test.accuracies.EFFECTS
MODEL_VALUES = ("paper", "authors")  # lm.release._registry
MODEL_KINDS = ("base", "instruct", "extra")  # lm.models.KINDS
AGGREGATES = ("own", "entries_mean")  # lm.scores (lm.results.ENTRIES_MEAN)
# training_on_the_test_task.regression.CovType
COV_TYPES = ("cluster", "nonrobust", "HC0", "HC1", "HC2", "HC3")
C_E_SEARCHES = ("profile", "local")  # training_on_the_test_task.regression.fit_emergence
EMERGENCE_C_E_SEARCHES = ("pwlf", "profile", "local")  # training_on_the_test_task.regression.EmergenceSearch
TIE_RULES = ("pairwise", "leader")  # train_before_test.ties.RULES
DP_NORMALISATIONS = ("none", "chars", "bytes")  # downstream_predictability.chain.NORMALISATIONS
DP_QUANTITIES = ("log_p_vocab", "p_vocab", "p_choices", "brier", "accuracy")  # ...chain.QUANTITIES
DP_METHODS = ("pearson", "spearman", "kendall")  # downstream_predictability.correlations.METHODS
DP_UNDEFINED = ("drop", "zero")  # downstream_predictability.statistics.UNDEFINED_POLICIES
DP_COMPUTE_SCALES = ("log10", "linear")  # downstream_predictability.analysis.scale_compute
DP_INCORRECT = ("sum", "each")  # downstream_predictability.mechanism_figures.figure_6
DP_ORDERING_OPS = (">", ">=")  # downstream_predictability.distribution_figures._holds
PROXY_METRICS = ("pearson", "spearman", "kendall")  # proxy_tasks.correlation.METRICS
PROXY_NORMALISATIONS = ("two_step", "feature", "none")  # proxy_tasks.normalise.MODES
PROXY_ROBUSTNESS = ("none", "stderr_proxy", "ensembles")  # proxy_tasks.settings.ROBUSTNESS_MODES
PROXY_READERS = ("train_before_test", "training_on_the_test_task")  # proxy_tasks.matrices.load_matrix
PROXY_STAGES = ("base", "adjusted")  # proxy_tasks.matrices.training_on_the_test_task
PROXY_PERPLEXITY = ("exclude", "flip")  # proxy_tasks.matrices.train_before_test
PROXY_IF_NONE = ("best_single", "error")  # proxy_tasks.settings.Method


class ConfigError(InputError, ValueError):
    """The composed config breaks one or more rules; `violations` holds one line per broken rule."""

    def __init__(self, violations: Sequence[str]):
        self.violations = list(violations)
        super().__init__("\n".join(f"invalid config: {line}" for line in self.violations))


# --- expectations --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """A test of one value and the words for what it expects (`expected <text>`)."""

    test: Callable[[Any], bool]
    text: str

    def __call__(self, value: Any) -> bool:
        try:
            return bool(self.test(value))
        except (TypeError, ValueError):
            return False


def _is_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def int_at_least(low: int, text: str | None = None) -> Expect:
    return Expect(lambda v: _is_int(v) and v >= low, text or f"an integer >= {low}")


positive_int = int_at_least(1, "a positive integer")
non_negative_int = int_at_least(0, "an integer >= 0")
integer = Expect(_is_int, "an integer")
number = Expect(_is_number, "a number")
positive_number = Expect(lambda v: _is_number(v) and v > 0, "a number > 0")
non_negative_number = Expect(lambda v: _is_number(v) and v >= 0, "a number >= 0")
boolean = Expect(lambda v: isinstance(v, bool), "true or false")
text = Expect(lambda v: isinstance(v, str) and v != "", "a non-empty string")


def between(low: float, high: float, *, low_open: bool = True, high_open: bool = True) -> Expect:
    def test(v: Any) -> bool:
        if not _is_number(v):
            return False
        above = v > low if low_open else v >= low
        below = v < high if high_open else v <= high
        return above and below

    brackets = ("(" if low_open else "[") + f"{low:g}, {high:g}" + (")" if high_open else "]")
    return Expect(test, f"a number in {brackets}")


def one_of(*choices: Any) -> Expect:
    def test(v: Any) -> bool:
        # True == 1 in Python: compare types too, so `1` is not taken for `true`
        return any(v == c and type(v) is type(c) for c in choices)

    return Expect(test, "one of " + ", ".join(_word(c) for c in choices))


def list_of(item: Expect, *, non_empty: bool = False) -> Expect:
    def test(v: Any) -> bool:
        items = _plain(v)
        return isinstance(items, list) and (bool(items) or not non_empty) and all(item(x) for x in items)

    return Expect(test, f"a {'non-empty ' if non_empty else ''}list, each item {item.text}")


def _word(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --- rules and the walk over the config ----------------------------------------------------------------------

_MISSING = object()


class _Unresolved:
    def __init__(self, error: Exception):
        self.error = error


@dataclass(frozen=True)
class Rule:
    """`path` (dotted; `*` = every key or item) must satisfy `expect`; `optional`: an absent key is fine;
    `nullable`: null is fine."""

    path: str
    expect: Expect
    optional: bool = False
    nullable: bool = False

    def violations(self, cfg: Any) -> Iterator[str]:
        for where, value in _lookup(cfg, self.path.split(".")):
            if isinstance(value, _Unresolved):
                reason = str(value.error).splitlines()[0] if str(value.error) else ""
                yield f"{where}: could not be resolved ({type(value.error).__name__}: {reason})"
            elif value is _MISSING:
                if not self.optional:
                    yield f"{where}: missing, expected {self._text()}"
            elif value is None and self.nullable:
                continue
            elif not self.expect(value):
                yield f"{where} = {_show(value)}: expected {self._text()}"

    def _text(self) -> str:
        return self.expect.text + (" (or null)" if self.nullable else "")


Relation = Callable[[Any], Iterable[str]]  # the whole config -> violation lines
Check = Rule | Relation


def _child(node: Any, key: Any) -> Any:
    try:
        if isinstance(node, DictConfig):  # `in` would call a key whose interpolation fails absent
            return node[key] if key in node.keys() else _MISSING
        if isinstance(node, ListConfig | list | tuple):
            if not (isinstance(key, int) or str(key).lstrip("-").isdigit()):
                return _MISSING
            index = int(key)
            return node[index] if -len(node) <= index < len(node) else _MISSING
        if isinstance(node, Mapping):
            return node.get(key, _MISSING)
    except Exception as err:  # an interpolation that fails to resolve, a missing mandatory value
        return _Unresolved(err)
    return _MISSING


def _keys(node: Any) -> list[Any]:
    """Keys as the node holds them (an int key such as repetitions_by_n's stays an int)."""
    if isinstance(node, DictConfig | Mapping):
        return list(node.keys())
    if isinstance(node, ListConfig | list | tuple):
        return list(range(len(node)))
    return []


def _join(where: str, key: Any, parent: Any) -> str:
    if isinstance(parent, ListConfig | list | tuple):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else str(key)


def _lookup(cfg: Any, parts: list[str], where: str = "") -> Iterator[tuple[str, Any]]:
    """(key path as written in an override, value) for every node `parts` reaches; a wildcard over an absent
    or null node reaches nothing."""
    if not parts:
        yield where, cfg
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        if cfg is None or cfg is _MISSING or isinstance(cfg, _Unresolved):
            return
        for key in _keys(cfg):
            yield from _lookup(_child(cfg, key), rest, _join(where, key, cfg))
        return
    if cfg is _MISSING or isinstance(cfg, _Unresolved):
        yield _join(where, ".".join(parts), None), cfg
        return
    yield from _lookup(_child(cfg, head), rest, _join(where, head, cfg))


def _plain(value: Any) -> Any:
    if OmegaConf.is_config(value):
        try:
            return OmegaConf.to_container(value, resolve=True)
        except Exception:
            return OmegaConf.to_container(value, resolve=False)
    return value


def _show(value: Any) -> str:
    return repr(_plain(value))


def get(cfg: Any, path: str, default: Any = None) -> Any:
    """The value at dotted `path` (no wildcards), or `default` when absent or unresolvable."""
    node = cfg
    for key in path.split("."):
        node = _child(node, key)
        if node is _MISSING or isinstance(node, _Unresolved):
            return default
    return node


def check(cfg: Any, rules: Iterable[Check]) -> None:
    """Raise one ConfigError listing every violated rule (one line each), or return None."""
    lines: list[str] = []
    for rule in rules:
        found = rule.violations(cfg) if isinstance(rule, Rule) else rule(cfg)
        lines.extend(line for line in found if line not in lines)
    if lines:
        raise ConfigError(lines)


def prefixed(prefix: str, rules: Iterable[Rule]) -> list[Rule]:
    return [Rule(f"{prefix}.{r.path}", r.expect, r.optional, r.nullable) for r in rules]


# --- relations -----------------------------------------------------------------------------------------------


def keys_of(path: str, of: str, *, each: bool = False) -> Relation:
    """The value at `path` (a list of them with `each`; `*` allowed) must be a key of the mapping at `of`."""

    def relation(cfg: Any) -> Iterator[str]:
        known = [str(k) for k in _keys(get(cfg, of, {}))]
        for where, value in _lookup(cfg, path.split(".")):
            if value is _MISSING or value is None or isinstance(value, _Unresolved):
                continue
            values = _plain(value) if each else [value]
            if not isinstance(values, list):
                continue
            bad = [v for v in values if str(v) not in known or not isinstance(v, str)]
            if bad:
                yield f"{where} = {_show(value)}: expected {'keys' if each else 'a key'} of {of} ({', '.join(known)})"

    return relation


# --- the analysis CLI (conf/config.yaml) ---------------------------------------------------------------------

SAMPLER_RULES = prefixed(
    "sampler",
    [
        Rule("name", one_of(*SAMPLERS)),
        Rule("draws", positive_int),
        Rule("tune", non_negative_int),
        Rule("chains", positive_int),
        Rule("cores", positive_int, optional=True),
        Rule("target_accept", between(0, 1), optional=True),
        Rule("progressbar", boolean, optional=True),
        Rule("chain_method", one_of(*CHAIN_METHODS), optional=True),
    ],
)

# `action` and `paper` are not here: cli.run answers an unknown one with its own UsageError before building.
TOP_RULES = [
    Rule("source", one_of(*SOURCES)),
    Rule("analysis_preset", one_of(*PRESETS), optional=True),
    Rule("seed", non_negative_int),
    Rule("log_level", one_of(*logging.getLevelNamesMapping())),
    Rule("results_dir", text),
    Rule("figures_dir", text),
    Rule("results_run", text, optional=True, nullable=True),
    Rule("cache_dir", text, optional=True, nullable=True),
    Rule("user_dir", text, optional=True),
    Rule("diagnostics.max_r_hat", positive_number),
    Rule("diagnostics.min_ess_bulk", positive_number),
    Rule("diagnostics.max_divergences", non_negative_int),
    Rule("bench.proxy_missing_m", boolean, optional=True),
    Rule("bench.cold", boolean, optional=True),
    Rule("bench.figure_7", boolean, optional=True),
    Rule("bench.vs_authors.m", positive_int, optional=True),
    Rule("bench.vs_authors.n", positive_int, optional=True),
    Rule("bench.vs_authors.effect", one_of("boost", "bias"), optional=True),
    Rule("assess.model_file", text, optional=True, nullable=True),
    Rule("assess.level", between(0, 1), optional=True),
]

POT_ANALYSIS_RULES = prefixed(
    "pretrain_on_test",
    [
        Rule("model.backend", one_of(*BACKENDS)),
        Rule("model.interaction", boolean),
        Rule("model.noncentered_t", one_of(True, False, "auto"), optional=True),
        Rule("model.collapse_s", one_of(True, False, "auto"), optional=True),
        Rule("model.formula", text),
        *(
            Rule(f"model.priors.{k}", positive_number, optional=True)
            for k in ("intercept_sigma", "lm_type_sigma", "treatment_sigma", "sigma_U", "sigma_V", "sigma_W")
        ),
        Rule("model.priors.treatment_mu", number, optional=True),
        Rule("collections.*", text),
        Rule("predictive.hdi_prob", between(0, 1), optional=True),
        Rule("predictive.max_draws", positive_int, optional=True, nullable=True),
        Rule("effects", list_of(one_of(*EFFECTS)), optional=True),
        Rule("figure_4.threshold", number),
        Rule("figure_4.strict", boolean, optional=True),
        Rule("figure_7.slices", positive_int),
        Rule("figure_7.m", positive_int),
        Rule("figure_7.n", positive_int),
        Rule("figure_7.band", non_negative_number),
        Rule("figure_7.band_zero_shot", non_negative_number),
        Rule("figure_7.draws", positive_int),
        Rule("figure_7.tune", non_negative_int),
        Rule("figure_7.subsample_effect", boolean, optional=True),
        Rule("figure_8.permutations", positive_int, optional=True),
        *(Rule(f"figure_{f}.{k}", positive_int, optional=True) for f in (9, 10, 11) for k in ("m", "n")),
        Rule("figure_11.draws", positive_int),
        *(Rule(f"figure_12.{k}", positive_int) for k in ("datasets", "subsamples", "n", "lm_types")),
        Rule("figure_12.null_beta", number),
        Rule("figure_12.effect_beta", number),
        Rule("permutation_test.permutations", positive_int, optional=True),
        Rule("permutation_test.alpha", between(0, 1), optional=True),
        Rule("contamination.collection", text, optional=True),
        Rule("contamination.alpha", between(0, 1), optional=True),
        Rule("contamination.paper.dataset", text, optional=True),
        Rule("contamination.paper.n", positive_int, optional=True),
        Rule("contamination.paper.lm_type", text, optional=True),
        *(
            Rule(f"contamination.paper.{k}", between(0, 1), optional=True)
            for k in ("p_extra", "p_test", "acc_extra", "acc_test")
        ),
    ],
)

_TOTT_BENCHMARK_LISTS = (
    *(f"figure_{n}.benchmarks" for n in (1, 2, 3, 5, 6, 7, 13, 14, 15, 16, 18, 20)),
    "figure_4.unadjusted",
    "figure_4.reformulated",
    "relative_difference.benchmarks",
    *(f"table_{n}.benchmarks" for n in (3, 4, 5)),
)
_TOTT_BENCHMARK_KEYS = tuple(f"figure_{n}.benchmark" for n in (8, 9, 17, 19))

TOTT_ANALYSIS_RULES = prefixed(
    "training_on_the_test_task",
    [
        Rule("evaluations_dir", text),
        Rule("model_values", one_of(*MODEL_VALUES)),
        Rule("model_kinds", list_of(one_of(*MODEL_KINDS), non_empty=True)),
        Rule("cutoff", text),
        Rule("robustness_cutoffs", list_of(text)),
        Rule("adjustment.stage", text),
        Rule("adjustment.use_max", boolean),
        Rule("mmlu_aggregate", one_of(*AGGREGATES), optional=True),
        Rule("benchmarks.*.file", text),
        Rule("benchmarks.*.metric", text),
        Rule("benchmarks.*.aggregate", one_of(*AGGREGATES)),
        Rule("benchmarks.*.chance", between(0, 1, low_open=False, high_open=False)),
        Rule("benchmarks.*.higher_is_better", boolean, optional=True),
        Rule("regression.cov_type", one_of(*COV_TYPES)),
        Rule("regression.alpha_level", between(0, 1)),
        Rule("regression.c_e_search", one_of(*C_E_SEARCHES), optional=True),
        Rule("figure_3.min_compute", positive_number),
        Rule("figure_3.seed", integer),
        Rule("emergence.batch_size", positive_int),
        Rule("emergence.min_compute", non_negative_number),
        Rule("emergence.max_compute", positive_number),
        Rule("emergence.c_e_search", one_of(*EMERGENCE_C_E_SEARCHES)),
        Rule("figure_8.steps", list_of(non_negative_int)),
        Rule("figure_19.steps", list_of(non_negative_int)),
        Rule("figure_14.step", positive_int),
        Rule("table_5.step", positive_int),
        Rule("figure_20.kinds", list_of(one_of(*MODEL_KINDS), non_empty=True)),
    ],
)

TOTT_ANALYSIS_RELATIONS: list[Relation] = [
    *(
        keys_of(f"training_on_the_test_task.{p}", "training_on_the_test_task.benchmarks", each=True)
        for p in _TOTT_BENCHMARK_LISTS
    ),
    *(
        keys_of(f"training_on_the_test_task.{p}", "training_on_the_test_task.benchmarks")
        for p in _TOTT_BENCHMARK_KEYS
    ),
]

TBT_ANALYSIS_RULES = prefixed(
    "train_before_test",
    [
        Rule("results_file", text),
        Rule("regimes.*.field", text),
        Rule("perplexity.higher_is_better", boolean),
        Rule("ties.confidence", between(0, 1)),
        Rule("ties.rule", one_of(*TIE_RULES)),
        Rule("pca.standardize", boolean),
        Rule("pca.n_components", positive_int),
        Rule("heatmap.vmax", number),
        Rule("heatmap.cmap", text),
        *(
            Rule(f"pretraining_compute.models.*.{k}", positive_number)
            for k in ("params_b", "tokens_b", "flops_1e18")
        ),
    ],
)


def _two_regimes(cfg: Any) -> Iterator[str]:
    regimes = get(cfg, "train_before_test.regimes")
    if regimes is not None and len(_keys(regimes)) != 2:
        yield f"train_before_test.regimes = {_show(regimes)}: expected two regimes"


DP_ANALYSIS_RULES = prefixed(
    "downstream_predictability",
    [
        Rule("normalisation", one_of(*DP_NORMALISATIONS)),
        Rule("compute_scale", one_of(*DP_COMPUTE_SCALES)),
        Rule("undefined", one_of(*DP_UNDEFINED)),
        Rule("methods", list_of(one_of(*DP_METHODS))),
        Rule("negate", list_of(one_of(*DP_QUANTITIES))),
        Rule("grid_points", positive_int),
        Rule("tasks", list_of(text), nullable=True),
        Rule("focus.method", one_of(*DP_METHODS)),
        Rule("figure_2.quantity", one_of(*DP_QUANTITIES)),
        Rule("figure_2.bins", positive_int),
        Rule("figure_2.schematic.*.a", positive_number),
        Rule("figure_2.schematic.*.b", positive_number),
        Rule("figure_3.quantities", list_of(one_of(*DP_QUANTITIES), non_empty=True)),
        Rule("figure_4.quantities", list_of(one_of(*DP_QUANTITIES), non_empty=True)),
        Rule("figure_4.ordering.*.0", one_of(*DP_QUANTITIES)),
        Rule("figure_4.ordering.*.1", one_of(*DP_ORDERING_OPS)),
        Rule("figure_4.ordering.*.2", one_of(*DP_QUANTITIES)),
        Rule("figure_4.tolerance", non_negative_number, optional=True),
        Rule("figure_5.tasks", list_of(text)),
        Rule("figure_5.bins", positive_int),
        Rule("figure_6.tasks", list_of(text)),
        Rule("figure_6.bins", positive_int),
        Rule("figure_6.incorrect", one_of(*DP_INCORRECT)),
    ],
)


def _focus_method_computed(cfg: Any) -> Iterator[str]:
    methods = _plain(get(cfg, "downstream_predictability.methods")) or list(DP_METHODS)
    method = get(cfg, "downstream_predictability.focus.method")
    if isinstance(methods, list) and method in DP_METHODS and method not in methods:
        yield (
            f"downstream_predictability.focus.method = {method!r}: expected one of the computed "
            f"downstream_predictability.methods ({', '.join(map(str, methods))})"
        )


DP_ANALYSIS_RELATIONS: list[Relation] = [
    keys_of("downstream_predictability.families_used", "downstream_predictability.families", each=True),
    _focus_method_computed,
]

PROXY_ANALYSIS_RULES = prefixed(
    "proxy_tasks",
    [
        Rule("matrices.*.reader", one_of(*PROXY_READERS)),
        Rule("matrices.*.top_t", positive_int, optional=True),
        Rule("matrices.*.n_models", int_at_least(3), optional=True),
        Rule("matrices.*.stage", one_of(*PROXY_STAGES), optional=True),
        Rule("matrices.*.robustness", one_of(*PROXY_ROBUSTNESS), optional=True),
        Rule("matrices.*.benchmarks", list_of(text, non_empty=True), optional=True),
        Rule("train_before_test.file", text),
        Rule("train_before_test.perplexity", one_of(*PROXY_PERPLEXITY)),
        Rule("normalisation", one_of(*PROXY_NORMALISATIONS)),
        Rule("relevance.metrics", list_of(one_of(*PROXY_METRICS), non_empty=True)),
        Rule("relevance.metric", one_of("auto", *PROXY_METRICS)),
        Rule("relevance.fallback_metric", one_of(*PROXY_METRICS)),
        Rule("relevance.threshold", number),
        Rule("consistency.n_models", int_at_least(3)),  # Algorithm 1: 2 < n
        Rule("consistency.samples", int_at_least(2)),
        Rule("consistency.top_t", positive_int),
        Rule("consistency.min_top_frequency", between(0, 1, low_open=False, high_open=False)),
        Rule("robustness.mode", one_of(*PROXY_ROBUSTNESS)),
        Rule("robustness.threshold", number),
        Rule("robustness.sigmoid_k", number),
        Rule("robustness.ensembles_file", text, nullable=True),
        Rule("combination.max_proxies", positive_int, nullable=True),
        Rule("combination.if_none_selected", one_of(*PROXY_IF_NONE)),
        Rule("evaluation.bootstrap", positive_int),
        Rule("evaluation.ci_level", between(0, 1)),
        Rule("table_3.configs.*.0", int_at_least(3)),
        Rule("table_3.configs.*.1", int_at_least(2)),
        Rule("table_3.top_t", positive_int),
        Rule("table_3.repeats", positive_int),
        Rule("table_loo.workers", positive_int, optional=True),
    ],
)


def _proxy_metrics(cfg: Any) -> Iterator[str]:
    metrics = _plain(get(cfg, "proxy_tasks.relevance.metrics"))
    if not isinstance(metrics, list):
        return
    for key in ("metric", "fallback_metric"):
        value = get(cfg, f"proxy_tasks.relevance.{key}")
        if value in PROXY_METRICS and value not in metrics:
            yield (
                f"proxy_tasks.relevance.{key} = {value!r}: expected "
                f"{'auto or ' if key == 'metric' else ''}one of proxy_tasks.relevance.metrics "
                f"({', '.join(map(str, metrics))})"
            )


def _proxy_ensembles(cfg: Any) -> Iterator[str]:
    if get(cfg, "proxy_tasks.robustness.mode") == "ensembles" and not get(
        cfg, "proxy_tasks.robustness.ensembles_file"
    ):
        yield "proxy_tasks.robustness.ensembles_file = None: expected a file with robustness.mode=ensembles"


def _proxy_targets(cfg: Any) -> Iterator[str]:
    targets = get(cfg, "proxy_tasks.table_loo.targets", "all")
    if targets != "all" and not list_of(text)(targets):
        yield f"proxy_tasks.table_loo.targets = {_show(targets)}: expected all or a list of task names"


PROXY_ANALYSIS_RELATIONS: list[Relation] = [
    *(
        keys_of(f"proxy_tasks.{p}", "proxy_tasks.matrices", each=True)
        for p in ("figure_1.matrices", "table_3.matrices", "table_robustness.matrices", "table_loo.matrices")
    ),
    keys_of("proxy_tasks.figure_loo.panels.*.matrix", "proxy_tasks.matrices"),
    _proxy_metrics,
    _proxy_ensembles,
    _proxy_targets,
]

ANALYSIS_CHECKS: list[Check] = [
    *TOTT_ANALYSIS_RULES,
    *TOTT_ANALYSIS_RELATIONS,
    *TBT_ANALYSIS_RULES,
    _two_regimes,
    *DP_ANALYSIS_RULES,
    *DP_ANALYSIS_RELATIONS,
    *PROXY_ANALYSIS_RULES,
    *PROXY_ANALYSIS_RELATIONS,
]


def check_analysis_config(cfg: Any) -> None:
    """The `testtask` CLI's composed config (conf/config.yaml); raises ConfigError naming every bad key."""
    check(cfg, ANALYSIS_CHECKS)
