"""Config checks: the composed config is validated once, before anything runs or is written.

Settings are read once, typed, at the edge: every value the code would only trip over later (a negative size
deep inside numpy, an unknown backend at fit time, a repetition count that silently runs nothing) is checked
here against a declarative list of rules, and all violations are reported together, one line each, naming the
key and what it should be:

    invalid config: pretrain_on_test.model.backend = 'foo': expected one of marginal, bambi
    invalid config: n = -5: expected a positive integer

Entry points, one per composed config:

- `check_analysis_config(cfg)`: the `testtask` CLI's config (conf/config.yaml: sampler, top-level keys and the
  five papers' analysis groups);
- `check_pretrain_on_test_run(cfg)`, `check_training_on_the_test_task_run(cfg)`,
  `check_train_before_test_run(cfg)`: the three runners' configs, called first thing by each runner's `run`.

A rule is (key path, expectation): `*` in a path stands for every key of a mapping or every item of a list.
A relation is a function of the whole config for what one key alone cannot say (a benchmark that must be a key
of `benchmarks`, a batch that must divide evenly). The known sets below are copied from the code that consumes
the values (named next to each); tests/test_config_checks.py keeps the copies equal to those constants, so this
module imports nothing heavy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from testtask.errors import InputError

# --- known sets, from the code that reads each value ---------------------------------------------------------
POT_TASKS = ("cell", "packing_speed", "contamination")  # pretrain_on_test.runner.main.run
POT_PROTOCOLS = ("few_shot", "zero_shot")  # pretrain_on_test.runner.cell.make_protocol
POT_OBJECTIVES = ("mlm", "clm")  # pretrain_on_test.runner.fewshot.FewShot
# pretrain_on_test.runner.subsample.stratified_counts
POT_STRATIFICATIONS = ("balanced_floor", "proportional")
POT_PRECISIONS = ("fp32", "bf16", "fp16")  # pretrain_on_test.runner.training.PRECISIONS
POT_QUANTIZATIONS = ("nf4", "none")  # pretrain_on_test.runner.zeroshot.load_for_training
POT_PREDICTIONS = ("mean_logprob", "sum_logprob")  # pretrain_on_test.runner.zeroshot.PREDICTIONS
POT_SCORING = ("segments", "joint")  # pretrain_on_test.runner.zeroshot.SCORING_TOKENIZATIONS
FINETUNE_PRECISIONS = ("bf16", "bf16-mixed", "fp32")  # lm.finetune.PRECISIONS
LOSS_ON = ("completion", "all")  # lm.finetune (tokenize)
SIDES = ("left", "right")  # lm.finetune (truncation_side, PadCollator)
TOTT_SUITES = ("v1", "v2")  # training_on_the_test_task.runner.main.stage_folder
TBT_CHAT_TEMPLATES = ("auto", "plain", "chat", "both")  # train_before_test.runner.cell.resolve_variants
TBT_TEXT_FORMATS = ("authors", "lm_eval")  # train_before_test.runner.texts.FORMATS
TBT_SPLIT_RULES = ("authors", "streams")  # train_before_test.runner.splits.RULES
TBT_KEEP = ("all", "best", "none")  # train_before_test.runner.cell.KEEP
TBT_SETS = ("train", "validation", "test")  # train_before_test.runner.splits.SETS


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


def lm_eval_batch_size() -> Expect:
    """lm-eval's `batch_size`: a positive integer, `auto`, or `auto:N` (N recomputations)."""

    def test(v: Any) -> bool:
        if isinstance(v, str):
            head, _, tail = v.partition(":")
            return head == "auto" and (not tail or (tail.isdigit() and int(tail) >= 1))
        return positive_int(v)

    return Expect(test, "a positive integer, auto or auto:N")


@cache
def _hf_names(kind: str) -> tuple[str, ...]:
    """Optimizer or scheduler names transformers' TrainingArguments accept (imported on first use only)."""
    if kind == "optim":
        from transformers.training_args import OptimizerNames

        return tuple(o.value for o in OptimizerNames)
    from transformers.trainer_utils import SchedulerType

    return tuple(s.value for s in SchedulerType)


hf_optimizer = Expect(
    lambda v: isinstance(v, str) and v in _hf_names("optim"),
    "an optimizer name of transformers' OptimizerNames",
)
hf_scheduler = Expect(
    lambda v: isinstance(v, str) and v in _hf_names("scheduler"),
    "a scheduler name of transformers' SchedulerType",
)


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


def _multiple_of(batch: str, per_device: str) -> Relation:
    """`batch` (the effective batch) must be a multiple of `per_device`: the gradient accumulation is their
    quotient (lm.finetune.gradient_accumulation) and must be a whole number >= 1. (Under
    `accelerate launch` the quotient is divided by the process count as well; finetune checks that one when the
    processes know it.)"""

    def relation(cfg: Any) -> Iterator[str]:
        total, each = get(cfg, batch), get(cfg, per_device)
        if positive_int(total) and positive_int(each) and total % each:
            yield (
                f"{batch} = {total!r}: expected a multiple of {per_device} ({each}), "
                "so that gradient accumulation is a whole number of steps >= 1"
            )

    return relation


# --- shared runner pieces ------------------------------------------------------------------------------------


def lora_rules(prefix: str, *, optional: bool = False) -> list[Rule]:
    return prefixed(
        prefix,
        [
            Rule("enabled", boolean, optional=True),
            Rule("r", positive_int, optional=optional),
            Rule("alpha", positive_number, optional=optional),
            Rule("dropout", between(0, 1, low_open=False), optional=optional),
        ],
    )


def recipe_rules(prefix: str) -> list[Rule]:
    """The fine-tuning recipe of lm.finetune (both tott and tbt runners use it)."""
    return prefixed(
        prefix,
        [
            Rule("epochs", positive_int, optional=True),
            Rule("max_steps", positive_int, optional=True, nullable=True),
            Rule("batch_size", positive_int),
            Rule("per_device_batch_size", positive_int),
            Rule("max_length", positive_int),
            Rule("loss_on", one_of(*LOSS_ON), optional=True),
            Rule("add_eos", boolean, optional=True),
            Rule("train_eos", boolean, optional=True),
            Rule("truncation_side", one_of(*SIDES), optional=True),
            Rule("pad_to_max_length", boolean, optional=True),
            Rule("attend_padding", boolean, optional=True),
            Rule("padding_side", one_of(*SIDES), optional=True, nullable=True),
            Rule("learning_rate_small", positive_number, optional=True),
            Rule("learning_rate_large", positive_number, optional=True),
            Rule("large_model_threshold", positive_number, optional=True),
            Rule("learning_rate_overrides.*", positive_number),
            Rule("optim", hf_optimizer, optional=True, nullable=True),
            Rule("adam_beta1", between(0, 1, low_open=False), optional=True),
            Rule("adam_beta2", between(0, 1, low_open=False), optional=True),
            Rule("adam_epsilon", positive_number, optional=True),
            Rule("weight_decay", non_negative_number, optional=True),
            Rule("max_grad_norm", non_negative_number, optional=True),
            Rule("lr_scheduler_type", hf_scheduler, optional=True),
            Rule("final_lr_fraction", between(0, 1, low_open=False, high_open=False), optional=True),
            Rule("warmup_steps", non_negative_int, optional=True, nullable=True),
            Rule("warmup_ratio", between(0, 1, low_open=False), optional=True, nullable=True),
            Rule("precision", one_of(*FINETUNE_PRECISIONS), optional=True, nullable=True),
            Rule("precision_large", one_of(*FINETUNE_PRECISIONS), optional=True, nullable=True),
            Rule("gradient_checkpointing", boolean, optional=True, nullable=True),
            Rule("gradient_checkpointing_threshold", positive_number, optional=True),
            Rule("save_steps", list_of(positive_int), optional=True, nullable=True),
            Rule("save_every", positive_int, optional=True, nullable=True),
            Rule("save_total_limit", positive_int, optional=True, nullable=True),
            Rule("logging_steps", positive_int, optional=True),
            Rule("progress", boolean, optional=True),
        ],
    )


# --- pretrain-on-test runner (conf/pretrain_on_test_run.yaml) ------------------------------------------------


def _pot_stage(prefix: str, optional: bool) -> list[Rule]:
    """One training stage of an LM config (`lm.pretrain`, `lm.classify`): runner/training.py's settings."""
    return prefixed(
        prefix,
        [
            Rule("epochs", positive_number, optional=optional),
            Rule("batch_size", positive_int, optional=optional),
            Rule("gradient_accumulation_steps", positive_int, optional=optional),
            Rule("learning_rate", positive_number, optional=optional),
            Rule("weight_decay", non_negative_number, optional=optional),
            Rule("warmup_ratio", between(0, 1, low_open=False), optional=optional),
            Rule("lr_scheduler", hf_scheduler, optional=optional),
            Rule("max_grad_norm", non_negative_number, optional=optional),
            Rule("optim", hf_optimizer, optional=optional),
            Rule("precision", one_of(*POT_PRECISIONS), optional=optional),
            Rule("max_length", positive_int, optional=True, nullable=prefix.endswith("classify")),
            Rule("mlm_probability", between(0, 1), optional=True),
            Rule("eval_batch_size", positive_int, optional=True),
            Rule("gradient_checkpointing", boolean, optional=True),
        ],
    )


POT_RUN_RULES: list[Rule] = [
    Rule("task", one_of(*POT_TASKS)),
    Rule("dataset", text),
    Rule("m", positive_int),
    Rule("n", positive_int),
    Rule("repetitions", positive_int, nullable=True),
    Rule("repetitions_by_n.*", positive_int),
    Rule("seed", non_negative_int),
    Rule("stratification", one_of(*POT_STRATIFICATIONS)),
    Rule("device", text),
    Rule("results_dir", text),
    Rule("show_step_progress", boolean, optional=True),
    Rule("threads", positive_int, optional=True, nullable=True),
    Rule("quiet_transformers", boolean, optional=True),
    Rule("lm.lm_type", text),
    Rule("lm.model", text),
    Rule("lm.protocol", one_of(*POT_PROTOCOLS)),
    Rule("lm.objective", one_of(*POT_OBJECTIVES), optional=True),
    *_pot_stage("lm.pretrain", optional=False),
    *_pot_stage("lm.classify", optional=True),
    *_pot_stage("lm.per_task.*.pretrain", optional=True),
    *_pot_stage("lm.per_task.*.classify", optional=True),
    Rule("lm.quantization", one_of(*POT_QUANTIZATIONS), optional=True),
    Rule("lm.bnb_4bit_compute_dtype", one_of("bfloat16", "float16", "float32"), optional=True),
    Rule("lm.score_on_plain_load", boolean, optional=True),
    Rule("lm.max_seq_length", positive_int, optional=True),
    Rule("lm.packing", boolean, optional=True),
    Rule("lm.pack_size", positive_int, optional=True),
    Rule("lm.eval_batch_size", positive_int, optional=True),
    Rule("lm.prediction", one_of(*POT_PREDICTIONS), optional=True),
    Rule("lm.scoring_tokenization", one_of(*POT_SCORING), optional=True),
    Rule("lm.prompt.max_text_chars", positive_int, optional=True, nullable=True),
    *lora_rules("lm.lora", optional=True),
    Rule("speed.repeats", positive_int, optional=True),
    Rule("speed.packing_max_seq_length", positive_int, optional=True),
    Rule("contamination.repetition", non_negative_int, optional=True),
    Rule(
        "contamination.num_shards", Expect(lambda v: _is_int(v) and v >= 2, "an integer >= 2"), optional=True
    ),
    Rule("contamination.permutations", positive_int, optional=True),
    Rule("contamination.context_len", positive_int, optional=True),
    Rule("contamination.stride", positive_int, optional=True),
    Rule("contamination.ddof", one_of(0, 1), optional=True),
    Rule("contamination.add_special_tokens", boolean, optional=True),
    Rule("contamination.example", text, optional=True),
    Rule("contamination.batch_size", positive_int, optional=True),
]


def _pot_repetitions(cfg: Any) -> Iterator[str]:
    """With `repetitions: null` the count comes from `repetitions_by_n` (n <= key), which must cover n."""
    n, table = get(cfg, "n"), _plain(get(cfg, "repetitions_by_n")) or {}
    if get(cfg, "repetitions") is not None or not positive_int(n) or not isinstance(table, dict):
        return
    bounds = [int(k) for k in table if _is_int(k) or str(k).isdigit()]
    if len(bounds) != len(table):
        yield f"repetitions_by_n = {table!r}: expected positive integer keys (n <= key)"
    elif not bounds or n > max(bounds):
        yield f"repetitions = None: repetitions_by_n has no count for n = {n!r} (keys: n <= {bounds}); set repetitions"


def _pot_m_covers_classes(cfg: Any) -> Iterator[str]:
    """Stratified sampling draws train from every class: m >= the dataset's number of classes."""
    m, classes = get(cfg, "m"), _plain(get(cfg, f"datasets.{get(cfg, 'dataset')}.classes"))
    if (
        get(cfg, "task") in ("cell", "contamination")
        and positive_int(m)
        and isinstance(classes, list)
        and m < len(classes)
    ):
        yield f"m = {m!r}: expected at least the {len(classes)} classes of dataset {get(cfg, 'dataset')!r}"


POT_RUN_CHECKS: list[Check] = [
    *POT_RUN_RULES,
    keys_of("dataset", "datasets"),
    _pot_repetitions,
    _pot_m_covers_classes,
]


def check_pretrain_on_test_run(cfg: Any) -> None:
    """The pretrain-on-test runner's composed config; raises ConfigError naming every bad key."""
    check(cfg, POT_RUN_CHECKS)


# --- training-on-the-test-task runner (conf/training_on_the_test_task_run.yaml) ------------------------------

TOTT_RUN_RULES: list[Rule] = [
    Rule("model", text),
    Rule("stage", text),
    Rule("stage_epochs.*", positive_int),
    Rule("emergence_stages", list_of(text), nullable=True),
    Rule("learning_rate", positive_number, nullable=True),
    Rule("parameters", positive_number, optional=True, nullable=True),
    Rule("evaluate_checkpoints", boolean),
    Rule("evaluate_steps", list_of(positive_int), optional=True, nullable=True),
    Rule("overwrite_evaluations", boolean, optional=True),
    Rule("benchmarks", list_of(text, non_empty=True)),
    Rule("num_fewshot", non_negative_int, nullable=True),
    Rule("fewshot_by_task.*", non_negative_int),
    Rule("suite", one_of(*TOTT_SUITES)),
    Rule("limit", positive_number, nullable=True),
    Rule("batch_size", lm_eval_batch_size()),
    Rule("add_bos_token", boolean, nullable=True),
    Rule("trust_remote_code", one_of(True, False, "authors"), nullable=True),
    *lora_rules("lora"),
    Rule("seed", non_negative_int),
    Rule("device", text),
    Rule("results_dir", text),
    Rule("checkpoints_dir", text),
    Rule("distributed.num_processes", positive_int, optional=True),
    Rule("distributed.num_machines", positive_int, optional=True),
    Rule(
        "distributed.main_process_port",
        Expect(lambda v: _is_int(v) and 0 < v < 65536, "a port in 1..65535"),
        optional=True,
    ),
    Rule("finetune_data.name", text),
    Rule("finetune_data.max_chars", positive_int, optional=True, nullable=True),
    Rule("finetune_data.shuffle_seed", non_negative_int, optional=True, nullable=True),
    Rule("finetune_data.emergence.steps", list_of(positive_int), optional=True),
    Rule("finetune_data.emergence.every", positive_int, optional=True, nullable=True),
    Rule("finetune_data.emergence.num_fewshot", non_negative_int, optional=True, nullable=True),
    *recipe_rules("recipe"),
]


def _tott_stages(cfg: Any) -> Iterator[str]:
    stages = [str(k) for k in _keys(get(cfg, "stage_epochs", {}))]
    stage = get(cfg, "stage")
    if isinstance(stage, str) and stage != "base" and stage not in stages:
        yield f"stage = {stage!r}: expected base or one of stage_epochs ({', '.join(stages)})"
    for where, value in _lookup(cfg, ["stage_init", "*"]):
        if value not in stages:
            yield f"{where} = {_show(value)}: expected one of stage_epochs ({', '.join(stages)})"


TOTT_RUN_CHECKS: list[Check] = [
    *TOTT_RUN_RULES,
    _tott_stages,
    _multiple_of("recipe.batch_size", "recipe.per_device_batch_size"),
]


def check_training_on_the_test_task_run(cfg: Any) -> None:
    """The training-on-the-test-task runner's composed config; raises ConfigError naming every bad key."""
    check(cfg, TOTT_RUN_CHECKS)


# --- train-before-test runner (conf/train_before_test_run.yaml) ----------------------------------------------

TBT_RUN_RULES: list[Rule] = [
    Rule("model", text),
    Rule("benchmark", text),
    Rule("instruct", boolean, nullable=True),
    Rule("chat_template", one_of(*TBT_CHAT_TEMPLATES)),
    Rule("texts.format", one_of(*TBT_TEXT_FORMATS)),
    Rule("learning_rates", list_of(positive_number, non_empty=True)),
    Rule("epochs", positive_int),
    Rule("fallback_to_base", boolean),
    Rule("caps.*", positive_int, nullable=True),
    Rule("validation_fraction", between(0, 1)),
    Rule("split_rule", one_of(*TBT_SPLIT_RULES)),
    Rule("corpus_fractions", list_of(between(0, 1), non_empty=True)),
    *lora_rules("lora"),
    Rule("num_fewshot", non_negative_int),
    Rule("bootstrap_iters", non_negative_int),
    Rule("seed", non_negative_int),
    Rule("training_seed", non_negative_int),
    Rule("device", text),
    Rule("batch_size", lm_eval_batch_size()),
    Rule("max_batch_size", positive_int, optional=True, nullable=True),
    Rule("log_samples", boolean),
    Rule("keep_checkpoints", one_of(*TBT_KEEP)),
    Rule("progress", boolean),
    Rule("threads", positive_int, optional=True, nullable=True),
    Rule("results_dir", text),
    Rule("work_dir", text),
    *recipe_rules("recipe"),
]


def _tbt_caps(cfg: Any) -> Iterator[str]:
    unknown = [k for k in _keys(get(cfg, "caps", {})) if k not in TBT_SETS]
    if unknown:
        yield f"caps = {_show(get(cfg, 'caps'))}: expected keys among {', '.join(TBT_SETS)}, not {unknown}"


def _tbt_corpus_fractions(cfg: Any) -> Iterator[str]:
    fractions = _plain(get(cfg, "corpus_fractions"))
    if isinstance(fractions, list) and all(_is_number(f) for f in fractions):
        if len(fractions) != 3 or sum(fractions) > 1 + 1e-9:
            yield (
                f"corpus_fractions = {fractions!r}: expected three fractions (train, validation, test) "
                "summing to at most 1"
            )


TBT_RUN_CHECKS: list[Check] = [
    *TBT_RUN_RULES,
    keys_of("benchmark", "benchmarks"),
    _tbt_caps,
    _tbt_corpus_fractions,
    _multiple_of("recipe.batch_size", "recipe.per_device_batch_size"),
]


def check_train_before_test_run(cfg: Any) -> None:
    """The train-before-test runner's composed config; raises ConfigError naming every bad key."""
    check(cfg, TBT_RUN_CHECKS)
