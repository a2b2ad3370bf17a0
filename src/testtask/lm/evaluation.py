"""Evaluate a model with LM Evaluation Harness as training-on-the-test-task does, one benchmark at a time.

Our task YAMLs live in `lm_eval_tasks/` (`include_path()`), next to every task lm-eval ships; few-shot counts
are the Open LLM Leaderboard v1's. Below `results_dir`, `evaluate` writes
`evaluations/<stage>/<model>-<benchmark>.json` (lm-eval's output as its CLI writes it, the layout of
`results_layout.py`), atomically and last, so its presence means the benchmark is done; it records under
`testtask_provenance` how it was made, and a file made otherwise is refused (StaleResultError), never reused.
With `log_samples`, `samples/<stage>/<model>-<benchmark>/<task>.jsonl` holds one line per document.

Offline data (`local_data`: benchmark -> folder): for each leaf task, `<folder>/<dataset_name>` (when it
exists) or `<folder>` holds a `save_to_disk` copy (`dataset_dict.json`, a folder per split) or
`<split>.jsonl|json` files with the Hub dataset's columns, read through lm-eval's `dataset_path: arrow|json`.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testtask.errors import InputError
from testtask.io import atomic_write_text, to_jsonable
from testtask.lm.results_layout import classify

if TYPE_CHECKING:
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

log = logging.getLogger(__name__)

TASKS_DIR = Path(__file__).resolve().parent / "lm_eval_tasks"
_SPLIT_KEYS = ("training_split", "validation_split", "test_split", "fewshot_split")


def include_path() -> Path:
    """The folder of our lm-eval task YAMLs, for `TaskManager(include_path=...)` or `lm_eval --include_path`."""
    return TASKS_DIR


def _is_ours(path: Path | None) -> bool:
    return path is not None and TASKS_DIR in Path(path).resolve().parents


@functools.cache
def _our_index() -> frozenset[str]:
    from lm_eval.tasks._index import TaskIndex

    return frozenset(TaskIndex.build([TASKS_DIR]))


def our_task_names(manager: TaskManager) -> list[str]:
    """Names in `manager`'s index (tasks, groups, tags) defined by our YAMLs, sorted."""
    index = manager.task_index
    names = []
    for name, entry in index.items():
        if _is_ours(entry.yaml_path):
            names.append(name)
        elif entry.yaml_path is None and entry.tags and all(_is_ours(index[t].yaml_path) for t in entry.tags):
            names.append(name)  # a tag whose tasks are all ours
    return sorted(names)


def leaf_tasks(manager: TaskManager, name: str) -> list[str]:
    """The tasks a task, group or tag name expands to, in the index of `manager`."""
    from lm_eval.tasks._index import Kind

    entry = manager.task_index.get(name)
    if entry is None:
        raise KeyError(f"{name!r} is not a task, group or tag lm-eval knows (with include_path {TASKS_DIR})")
    if entry.kind in (Kind.TASK, Kind.PY_TASK):
        return [name]
    if entry.kind == Kind.TAG:
        return sorted(entry.tags)
    members = (entry.cfg or {}).get("task", [])
    out: list[str] = []
    for member in members if isinstance(members, list) else [members]:
        child = member if isinstance(member, str) else member.get("task") or member.get("group")
        if isinstance(child, str) and child in manager.task_index:
            out.extend(leaf_tasks(manager, child))
        else:
            raise ValueError(
                f"group {name!r}: member {member!r} is not a registered name; cannot override its data"
            )
    return out


def resolved_config(manager: TaskManager, task: str) -> dict[str, Any]:
    """The config of task `task` in `manager`'s index, its includes and functions resolved."""
    from lm_eval.tasks._yaml_loader import load_yaml

    entry = manager.task_index[task]
    if entry.yaml_path is not None:
        return dict(load_yaml(entry.yaml_path, resolve_func=True, recursive=True))
    return dict(entry.cfg or {})


def _required_splits(config: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(evaluation split, other splits the config names) of a task config."""
    evaluation = config.get("test_split") or config.get("validation_split")
    if not evaluation:
        raise ValueError(f"task {config.get('task')!r} names neither a test nor a validation split")
    named = {config[k] for k in _SPLIT_KEYS if config.get(k)}
    return evaluation, sorted(named - {evaluation})


def local_dataset_overrides(
    config: Mapping[str, Any], data: Path, cache_dir: Path | None = None
) -> dict[str, Any]:
    """`dataset_path`, `dataset_name`, `dataset_kwargs` that make a task config read a local copy of its data
    (module docstring); the evaluation split, and the few-shot one when few-shot, must be there."""
    data = Path(data)
    name = config.get("dataset_name")
    folder = data / name if name and (data / str(name)).is_dir() else data
    if not folder.is_dir():
        raise FileNotFoundError(f"task {config.get('task')!r}: no local data folder {folder}")
    evaluation, others = _required_splits(config)
    saved = (folder / "dataset_dict.json").is_file()
    files: dict[str, list[str]] = {}
    for split in [evaluation, *others]:
        if saved:
            found = sorted((folder / split).glob("*.arrow"))
        else:
            found = [p for p in (folder / f"{split}.jsonl", folder / f"{split}.json") if p.is_file()][:1]
        if found:
            files[split] = [str(p) for p in found]
    fewshot = config.get("fewshot_split") or config.get("training_split")
    needed = [evaluation] + ([fewshot] if fewshot and (config.get("num_fewshot") or 0) > 0 else [])
    missing = [s for s in needed if s not in files]
    if missing:
        kind = "a save_to_disk split folder" if saved else "<split>.jsonl or <split>.json"
        raise FileNotFoundError(f"task {config.get('task')!r}: {folder} lacks split(s) {missing} ({kind})")
    kwargs: dict[str, Any] = {"data_files": files}
    if cache_dir is not None:
        kwargs["cache_dir"] = str(cache_dir)
    return {"dataset_path": "arrow" if saved else "json", "dataset_name": None, "dataset_kwargs": kwargs}


def _register(manager: TaskManager, name: str, config: dict[str, Any], like: str) -> None:
    """Put `config` in the index under `name`, as a task of the kind and tags of `like`."""
    from lm_eval.tasks._index import Entry

    entry = manager.task_index[like]
    manager.task_index[name] = Entry(name=name, kind=entry.kind, yaml_path=None, cfg=config, tags=entry.tags)


def register_variant(manager: TaskManager, name: str, variant: str) -> None:
    """Register task `variant`'s config under the task name `name` (e.g. our seeded MMLU-Pro-4 evaluated as
    `leaderboard_mmlu_pro_four`), so result files keep the benchmark's name."""
    if variant == name:
        return
    if variant not in manager.task_index or leaf_tasks(manager, variant) != [variant]:
        raise KeyError(f"task variant {variant!r} for {name!r} is not a single task lm-eval knows")
    _register(manager, name, {**resolved_config(manager, variant), "task": name}, variant)


def task_manager(
    local_data: Mapping[str, Path] | None = None,
    cache_dir: Path | None = None,
    include_defaults: bool = True,
    variants: Mapping[str, str] | None = None,
) -> TaskManager:
    """A TaskManager over lm-eval's tasks (unless `include_defaults` is False) and ours, with `variants`
    registered and every leaf task of a `local_data` benchmark reading its local copy (groups keep their
    structure). This edits `TaskManager.task_index` (lm-eval 0.4.13)."""
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=include_defaults)
    for name, variant in (variants or {}).items():
        if variant:
            register_variant(manager, str(name), str(variant))
    for benchmark, data in (local_data or {}).items():
        for task in leaf_tasks(manager, benchmark):
            config = resolved_config(manager, task)
            config.update(local_dataset_overrides(config, Path(data), cache_dir))
            _register(manager, task, config, task)
    return manager


def task_config(task: str, data: Path | None = None, cache_dir: Path | None = None) -> dict[str, Any]:
    """The resolved config of one of our tasks, reading `data` when given (for `simple_evaluate`)."""
    manager = task_manager(include_defaults=False)
    if task not in manager.task_index or leaf_tasks(manager, task) != [task]:
        raise KeyError(f"{task!r} is not one of our tasks (groups: use task_manager(local_data=...))")
    config = resolved_config(manager, task)
    if data is not None:
        config.update(local_dataset_overrides(config, Path(data), cache_dir))
    return config


def model_type(model: str, *, trust_remote_code: bool = False) -> str | None:
    """`config.model_type` of a local folder or Hub id (what the authors' lm-eval fork keys BOS on)."""
    from transformers import AutoConfig

    return getattr(
        AutoConfig.from_pretrained(str(model), trust_remote_code=trust_remote_code), "model_type", None
    )


def default_model_name(model: str) -> str:
    """A file-name-safe model name: the last component of a path or Hub id."""
    name = Path(str(model).rstrip("/")).name
    if not name:
        raise ValueError(f"cannot name model {model!r}; pass model_name")
    return name


def result_path(results_dir: Path, stage: str, model_name: str, benchmark: str) -> Path:
    """`<results_dir>/evaluations/<stage>/<model>-<benchmark>.json`, checked against the results layout."""
    if "-" in benchmark or "/" in benchmark:
        raise ValueError(f"benchmark {benchmark!r}: names may not contain '-' or '/'")
    if not model_name or "/" in model_name or model_name.startswith("."):
        raise ValueError(f"model name {model_name!r} must be a plain file-name part")
    root = Path(results_dir) / "evaluations"
    # Checkpoint evaluations sit in a folder per model and step, named by the benchmark alone.
    name = f"{benchmark}.json" if stage.startswith("intermediate/") else f"{model_name}-{benchmark}.json"
    path = root / stage / name
    classify(path, root)  # raises ResultsError when the loader would not accept the place
    return path


def samples_dir(results_dir: Path, stage: str, model_name: str, benchmark: str) -> Path:
    """`<results_dir>/samples/<stage>/<model>-<benchmark>/`: one `<task>.jsonl` per leaf task."""
    return Path(results_dir) / "samples" / stage / f"{model_name}-{benchmark}"


def _args_string(args: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in args.items())


def _json_default(obj: Any) -> Any:
    if isinstance(obj, set):
        return sorted(obj, key=str)
    return str(obj)


def dumps_result(obj: Any, **kwargs: Any) -> str:
    """An lm-eval result (numpy values, dtypes, callables inside) as JSON text."""
    return json.dumps(to_jsonable(obj), default=_json_default, ensure_ascii=False, **kwargs)


def _sample_line(sample: Mapping[str, Any]) -> str:
    """A logged sample as one JSON line; tuples become lists, loglikelihoods stay numbers."""
    record = dict(sample)
    record["arguments"] = {
        f"gen_args_{i}": {f"arg_{j}": value for j, value in enumerate(arg)}
        for i, arg in enumerate(sample.get("arguments", []))
    }
    return dumps_result(record)


def task_hashes(samples: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, str]:
    """lm-eval's per-task hash of its logged samples (as its CLI writes it)."""
    from lm_eval.utils import hash_string

    return {
        task: hash_string("".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in rows))
        for task, rows in samples.items()
    }


def write_samples(folder: Path, samples: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    """lm-eval's per-sample logs as `<folder>/<task>.jsonl`, one file per task, each written atomically."""
    for task, rows in samples.items():
        text = "".join(_sample_line(row) + "\n" for row in rows)
        atomic_write_text(folder / f"{re.sub(r'[^A-Za-z0-9_.]+', '_', task)}.jsonl", text)


PROVENANCE_KEY = "testtask_provenance"


class StaleResultError(InputError, RuntimeError):
    """A result file exists but was made by another model or other settings; resuming would reuse it silently."""


def provenance(
    model_args: Mapping[str, Any], model_fingerprint: str | None, shots: Any, limit: Any, task: str
) -> dict[str, Any]:
    """What a result file depends on, as JSON: the same in the file written and in the check on resume."""
    return json.loads(
        json.dumps(
            {
                "model_args": {str(k): str(v) for k, v in sorted(model_args.items())},
                "model_fingerprint": model_fingerprint,
                "num_fewshot": shots,
                "limit": limit,
                "task": task,
            },
            default=str,
        )
    )


def check_provenance(path: Path, expected: Mapping[str, Any]) -> None:
    """Raise StaleResultError unless the result at `path` records exactly `expected` as its provenance."""
    try:
        recorded = json.loads(Path(path).read_text()).get(PROVENANCE_KEY)
    except (OSError, ValueError, AttributeError) as err:
        raise StaleResultError(
            f"{path}: unreadable result file ({err}); delete it to evaluate again"
        ) from err
    fix = "delete it (or pass overwrite) to evaluate again"
    if recorded is None:
        raise StaleResultError(
            f"{path}: exists but has no field {PROVENANCE_KEY!r} (written before provenance was recorded), so it "
            f"may come from another model or protocol; {fix}"
        )
    differ = [k for k in sorted(set(recorded) | set(expected)) if recorded.get(k) != expected.get(k)]
    if differ:
        shown = "; ".join(f"{k}: file {recorded.get(k)!r}, this run {expected.get(k)!r}" for k in differ)
        raise StaleResultError(
            f"{path}: made by another model or settings ({PROVENANCE_KEY} differs: {shown}); {fix}"
        )


def evaluate(
    model: str,
    tasks: Iterable[str],
    results_dir: Path,
    stage: str = "base",
    model_name: str | None = None,
    num_fewshot: int | Mapping[str, int] | None = None,
    limit: int | float | None = None,
    batch_size: int | str = 1,
    device: str | None = None,
    log_samples: bool = True,
    local_data: Mapping[str, Path] | None = None,
    dataset_cache_dir: Path | None = None,
    model_args: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    bootstrap_iters: int = 100000,
    lm: LM | None = None,
    task_variants: Mapping[str, str] | None = None,
    model_fingerprint: str | None = None,
) -> dict[str, Path]:
    """Evaluate `model` (a local folder or a Hub id) on each benchmark of `tasks`; returns benchmark -> file.

    A result file that exists is skipped (its provenance checked) unless `overwrite`. `num_fewshot`: one
    count, or benchmark -> count. `model_args` go to lm-eval's `hf` model. `model_fingerprint` identifies
    weights a path alone does not (a retrained folder). The model is loaded once, unless `lm` is given.
    """
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker

    tasks = list(tasks)
    name = model_name or default_model_name(model)
    paths = {benchmark: result_path(results_dir, stage, name, benchmark) for benchmark in tasks}
    args = {"pretrained": str(model), **dict(model_args or {})}

    def shots(benchmark: str) -> int | None:
        return num_fewshot.get(benchmark) if isinstance(num_fewshot, Mapping) else num_fewshot

    def made(benchmark: str) -> dict[str, Any]:
        task = (task_variants or {}).get(benchmark) or benchmark
        return provenance(args, model_fingerprint, shots(benchmark), limit, task)

    todo = [b for b in tasks if overwrite or not paths[b].exists()]
    for benchmark in tasks:
        if benchmark not in todo:
            check_provenance(paths[benchmark], made(benchmark))
            log.info("%s: %s exists (same model and settings), skipped", benchmark, paths[benchmark])
    if not todo:
        return paths
    # lm-eval's own folder (about 15 s to index) only when a benchmark is not ours
    theirs = [b for b in todo if b not in _our_index()]
    local = {b: Path(local_data[b]) for b in todo if local_data and b in local_data}
    variants = {b: v for b, v in (task_variants or {}).items() if b in todo and v and v != b}
    manager = task_manager(local, dataset_cache_dir, include_defaults=bool(theirs), variants=variants)
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if lm is None:
        from lm_eval.api.registry import get_model

        lm = get_model("hf").create_from_arg_obj(args, {"batch_size": batch_size, "device": device})
    for benchmark in todo:
        tracker = EvaluationTracker()
        started = time.time()
        out = simple_evaluate(
            model=lm,
            model_args=_args_string(args),
            tasks=[benchmark],
            num_fewshot=shots(benchmark),
            batch_size=batch_size,
            device=device,
            limit=limit,
            bootstrap_iters=bootstrap_iters,
            log_samples=log_samples,
            evaluation_tracker=tracker,
            task_manager=manager,
        )
        if out is None:  # not the main process
            continue
        samples = out.pop("samples", None) or {}
        out["config"]["model"] = "hf"
        tracker.general_config_tracker.log_end_time()
        tracker.general_config_tracker.model_source = "hf"
        out["task_hashes"] = task_hashes(samples) if samples else {}
        out.update(asdict(tracker.general_config_tracker))
        out[PROVENANCE_KEY] = made(benchmark)
        if log_samples:
            write_samples(samples_dir(results_dir, stage, name, benchmark), samples)
        atomic_write_text(paths[benchmark], dumps_result(out, indent=2) + "\n")
        log.info("%s: wrote %s (%.0f s)", benchmark, paths[benchmark], time.time() - started)
    return paths
