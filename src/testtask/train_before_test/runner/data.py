"""A benchmark's documents, from its lm-eval task, as the local datasets a cell trains and scores on.

The task's raw dataset (the Hub, or a local copy through `local_data`, as in
`lm.evaluation.local_dataset_overrides`) is split and capped (`splits.plan`), then saved with
`datasets.save_to_disk` once per evaluation view: `views/validation/` and `views/test/` hold the capped validation
or test documents under the task's evaluation split (its `test_split`, else its `validation_split`), and both the
capped training documents under its training (and few-shot) split, so the training texts (`texts.py`) come from
the task built on a view, with its own `process_docs`. A view is read by re-pointing the resolved task config at
it. `manifest.json` (written last) records the counts and settings, `indices.json` the chosen source positions.
A perplexity corpus (`spec.source`) is loaded from its source (`corpora.py`), cut 8:1:1 (`splits.plan_corpus`)
and saved the same way, under the splits its task in `lm_eval_tasks/` names.
"""

from __future__ import annotations

import functools
import json
import logging
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testtask.io import atomic_write_json, atomic_write_text
from testtask.lm.evaluation import TASKS_DIR, leaf_tasks, local_dataset_overrides, resolved_config
from testtask.train_before_test.runner.benchmarks import BenchmarkSpec, SpecError
from testtask.train_before_test.runner.corpora import load_corpus
from testtask.train_before_test.runner.splits import SplitPlan, plan, plan_corpus

if TYPE_CHECKING:
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks import TaskManager

log = logging.getLogger(__name__)
VIEWS = ("validation", "test")
# Our train-before-test tasks: the perplexity corpora (rolling log-likelihood, bits per byte).
CORPUS_TASKS_DIR = Path(__file__).resolve().parents[1] / "lm_eval_tasks"


# --------------------------------------------------------------------------- lm-eval tasks


@functools.cache
def _indexed(paths: tuple[str, ...]) -> frozenset[str]:
    from lm_eval.tasks._index import TaskIndex

    return frozenset(TaskIndex.build([Path(p) for p in paths]))


def build_manager(tasks: Iterable[str], include_paths: Iterable[Path] = ()) -> TaskManager:
    """A TaskManager over our task folder and `include_paths`, plus lm-eval's own tasks when one is needed."""
    from lm_eval.tasks import TaskManager

    paths = [TASKS_DIR, CORPUS_TASKS_DIR, *[Path(p) for p in include_paths]]
    missing = [p for p in paths if not p.is_dir()]
    if missing:
        raise FileNotFoundError(f"include_paths: no such folder(s) {[str(p) for p in missing]}")
    known = _indexed(tuple(str(p) for p in paths))
    defaults = any(t not in known for t in tasks)  # indexing lm-eval's folder takes ~15 s; only when needed
    return TaskManager(include_path=[str(p) for p in paths], include_defaults=defaults)


def task_config(
    manager: TaskManager, task: str, data: Path | None = None, cache_dir: Path | None = None
) -> dict[str, Any]:
    """The resolved config of one lm-eval task (includes and functions resolved), reading `data` when given."""
    if task not in manager.task_index:
        raise SpecError(f"lm-eval knows no task {task!r} (include paths: {manager.include_path})")
    if leaf_tasks(manager, task) != [task]:
        raise SpecError(f"{task!r} is a group or tag; a benchmark must name one lm-eval task")
    config = resolved_config(manager, task)
    if data is not None:
        config.update(local_dataset_overrides(config, Path(data), cache_dir))
    return config


def load_task(manager: TaskManager, config: Mapping[str, Any]) -> ConfigurableTask:
    """The task object of a resolved config (this loads its dataset)."""
    from lm_eval.tasks import get_task_dict

    tasks = get_task_dict([dict(config)], manager)
    (task,) = tasks.values()
    return task


def evaluation_split(config: Mapping[str, Any]) -> str:
    """The split lm-eval scores: the test split, else the validation split."""
    split = config.get("test_split") or config.get("validation_split")
    if not split:
        raise SpecError(f"lm-eval task {config.get('task')!r} names neither a test nor a validation split")
    return str(split)


# --------------------------------------------------------------------------- views


@dataclass(frozen=True)
class Prepared:
    folder: Path
    counts: dict[str, dict[str, Any]]

    def view(self, name: str) -> Path:
        return self.folder / "views" / name


def _raw_split(raw: Mapping[str, Any], split: str, spec: BenchmarkSpec, field: str) -> Any:
    if split not in raw:
        raise SpecError(
            f"benchmark {spec.name!r}: {field} split {split!r} is not in the dataset of task {spec.task!r} "
            f"(splits: {sorted(raw)})"
        )
    return raw[split]


def _save(folder: Path, splits: Mapping[str, Any]) -> None:
    from datasets import DatasetDict

    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    DatasetDict(dict(splits)).save_to_disk(str(tmp))
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)


def _task_documents(
    spec: BenchmarkSpec,
    manager: TaskManager,
    config: Mapping[str, Any],
    caps: Mapping[str, int | None],
    *,
    validation_fraction: float,
    seed: int,
    rule: str,
) -> tuple[SplitPlan, dict[str, Any], dict[str, str]]:
    """The split plan of a benchmark's task, the chosen documents of each set and where each set comes from."""
    raw = load_task(manager, config).dataset
    train = _raw_split(raw, spec.train, spec, "train")
    test = _raw_split(raw, spec.test, spec, "test")
    if spec.validation_is_test:  # the authors' MedMCQA: validation documents drawn from the test split
        validation_source, n_validation, where = test, len(test), f"{spec.test} (the test split)"
    elif spec.validation is None:
        validation_source, n_validation, where = train, None, f"{spec.train} (carved)"
    else:
        validation_source = _raw_split(raw, spec.validation, spec, "validation")
        n_validation, where = len(validation_source), spec.validation
    chosen = plan(
        len(train),
        n_validation,
        len(test),
        caps,
        validation_fraction=validation_fraction,
        seed=seed,
        rule=rule,
    )
    docs = {
        "train": train.select(chosen.train),
        "validation": validation_source.select(chosen.validation),
        "test": test.select(chosen.test),
    }
    return chosen, docs, {"train": spec.train, "validation": where, "test": spec.test}


def prepare(
    spec: BenchmarkSpec,
    manager: TaskManager,
    folder: Path,
    *,
    caps: Mapping[str, int | None],
    validation_fraction: float,
    seed: int,
    rule: str = "authors",
    corpus_fractions: list[float] | None = None,
    local_data: Path | None = None,
    cache_dir: Path | None = None,
) -> Prepared:
    """Split, cap and save the benchmark's documents below `folder` (reused when already there)."""
    folder = Path(folder)
    manifest = folder / "manifest.json"
    fractions = [float(f) for f in corpus_fractions or (0.8, 0.1, 0.1)]
    settings = {
        "spec": spec.as_dict(),
        "caps": dict(caps),
        "validation_fraction": float(validation_fraction),
        "seed": int(seed),
        "split_rule": rule,
        **({"corpus_fractions": fractions} if spec.is_corpus else {}),
    }
    if manifest.is_file():
        record = json.loads(manifest.read_text())
        if record.get("settings") == settings:
            return Prepared(folder, record["counts"])
    # A corpus task reads the views only; its own dataset_path is a placeholder.
    config = task_config(manager, spec.task, None if spec.is_corpus else local_data, cache_dir)
    training_split = config.get("training_split")
    if not training_split:
        raise SpecError(f"lm-eval task {spec.task!r} has no training_split; train-before-test needs one")
    if spec.source is not None:
        corpus = load_corpus(spec.name, spec.source, local_data, cache_dir)
        chosen = plan_corpus(len(corpus), fractions, caps, seed=seed, rule=rule)
        docs = {s: corpus.select(getattr(chosen, s)) for s in ("train", "validation", "test")}
        label = f"{spec.source.path or local_data}:{spec.source.split}"
        cut = ":".join(f"{f:g}" for f in fractions)
        sources = {s: f"{label} ({cut} {s})" for s in docs}
    else:
        chosen, docs, sources = _task_documents(
            spec, manager, config, caps, validation_fraction=validation_fraction, seed=seed, rule=rule
        )
    scored = evaluation_split(config)
    for view in VIEWS:
        splits = {str(training_split): docs["train"]}
        if config.get("validation_split"):
            splits.setdefault(str(config["validation_split"]), docs["validation"])
        if config.get("fewshot_split"):  # only read for few-shot prompts; zero-shot runs never use it
            splits.setdefault(str(config["fewshot_split"]), docs["train"])
        splits[scored] = docs[view]
        _save(folder / "views" / view, splits)
    counts = chosen.counts()
    for name, source in sources.items():
        counts[name]["source"] = source
    indices = {"train": chosen.train, "validation": chosen.validation, "test": chosen.test}
    atomic_write_json(folder / "indices.json", indices)
    record = {
        "settings": settings,
        "counts": counts,
        "evaluation_split": scored,
        "training_split": training_split,
    }
    atomic_write_text(manifest, json.dumps(record, indent=2) + "\n")
    log.info("%s: %s", spec.name, {s: c["used"] for s, c in counts.items()})
    return Prepared(folder, counts)


def view_config(
    manager: TaskManager, spec: BenchmarkSpec, prepared: Prepared, view: str, cache_dir: Path | None = None
) -> dict[str, Any]:
    """The task's config reading one view (`validation` or `test`) of the prepared documents."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    return task_config(manager, spec.task, prepared.view(view), cache_dir)
