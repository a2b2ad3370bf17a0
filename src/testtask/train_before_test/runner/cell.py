"""One cell of the score matrices: a model × benchmark, direct evaluation and train-before-test.

Files (`<eval>` = results_dir/evaluations/<benchmark>/<model>, `<work>` = work_dir/<benchmark>/<model>):
`<eval>/base/<variant>/{validation,test}.json`, the base model zero-shot (direct evaluation);
`<eval>/tuned/<variant>/lr_<lr>/epoch_<k>/validation.json`, each epoch's checkpoint on validation, and `test.json`
for the selected one; `<work>/data/`, the capped documents (data.py); `<work>/<variant>/lr_<lr>/checkpoint-<step>/`,
the LoRA checkpoints (all, the selected one, or none kept once the cell is finished: `keep_checkpoints`).

Direct evaluation reports the base model's test score in the variant with the best validation score (plain
prompts, or the chat template for instruction-tuned models, App. A.2). Train-before-test reports the test score
of the best point of the validation curve over variants, learning rates and epochs (selection.py); with
`fallback_to_base` the base model is a candidate (App. A.2). The chat variant fine-tunes with `chat_recipe` over
the recipe (no EOS after the template's end of turn, as TRL).
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from testtask.lm.hf import load_tokenizer
from testtask.lm.settings import Recipe, recipe_record
from testtask.provenance import code_record
from testtask.schema import to_plain
from testtask.train_before_test.runner.benchmarks import BenchmarkSpec
from testtask.train_before_test.runner.data import VIEWS, build_manager, load_task, prepare, view_config
from testtask.train_before_test.runner.scoring import Score, Scorer
from testtask.train_before_test.runner.selection import Point, base_points, best
from testtask.train_before_test.runner.settings import PER_RUN, ChatTemplate, Keep, Settings
from testtask.train_before_test.runner.store import (
    check_settings,
    claim,
    count_attempt,
    merge,
    read_record,
    record_path,
    slug,
    write_record,
)
from testtask.train_before_test.runner.texts import chat_template, training_examples
from testtask.train_before_test.runner.training import train_epochs

log = logging.getLogger(__name__)
# Recipe keys that change how a run fits the hardware, not what it computes (same effective batch, same steps):
# changing them mid-sweep (e.g. after running out of GPU memory) is not a different configuration.
_HOW = ("progress", "logging_steps", "per_device_batch_size", "gradient_checkpointing", "deepspeed")


@dataclass
class CellConfig:
    """Everything one cell needs: the job's typed settings (`run`), with paths resolved, the benchmark's spec looked
    up and the prompt variants chosen (runner.main.cell_config); `settings()` is the part its numbers depend on."""

    run: Settings
    model_path: str  # what is loaded: the model id itself, or a local copy
    spec: BenchmarkSpec
    variants: list[str]  # "plain" and/or "chat"
    learning_rates: list[float]
    caps: dict[str, int | None]
    corpus_fractions: list[float]
    # how, not what: not part of the settings
    results_dir: Path
    work_dir: Path
    include_paths: list[Path]
    local_data: Path | None
    device: str

    @property
    def model(self) -> str:
        """The model id (the key in all_results.json)."""
        return self.run.model

    def settings(self) -> dict[str, Any]:
        run = self.run
        recipe = {k: v for k, v in recipe_record(run.recipe).items() if k not in (*_HOW, *PER_RUN)}
        return {
            "model": self.model,
            "benchmark": self.spec.as_dict(),
            "variants": list(self.variants),
            "learning_rates": list(self.learning_rates),
            "epochs": int(run.epochs),
            "caps": dict(self.caps),
            "validation_fraction": float(run.validation_fraction),
            "seed": int(run.seed),
            "recipe": recipe,
            "chat_recipe": to_plain(run.chat_recipe),
            "texts": to_plain(run.texts),
            "training_seed": int(run.training_seed),
            "split_rule": run.split_rule.value,
            **({"corpus_fractions": list(self.corpus_fractions)} if self.spec.is_corpus else {}),
            "eager_attention_for": list(run.eager_attention_for),
            "lora": to_plain(run.lora),
            "fallback_to_base": bool(run.fallback_to_base),
            "num_fewshot": int(run.num_fewshot),
            "bootstrap_iters": int(run.bootstrap_iters),
            "model_args": dict(run.model_args),
        }


def _lr_name(lr: float) -> str:
    return f"lr_{float(lr):g}"


def _relative(path: Path, root: Path) -> str:
    """Paths in a record are relative to the results folder, so a run folder can move."""
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def _score_record(score: Score, point: Point, validation: float, root: Path) -> dict[str, Any]:
    return {
        "variant": point.variant,
        "learning_rate": point.learning_rate,
        "epoch": point.epoch,
        "step": point.step,
        "validation": validation,
        "test": score.value,
        "stderr": score.stderr,
        "test_documents": score.documents,
        "file": _relative(score.file, root),
    }


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("lm_eval", "transformers", "peft", "torch", "datasets"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


def _prune(work: Path, cc: CellConfig, chosen: Point) -> None:
    """Free the disk of a finished cell: every checkpoint but the selected one (`best`), or all (`none`)."""
    if cc.run.keep_checkpoints == Keep.all:
        return
    keep = None
    if cc.run.keep_checkpoints == Keep.best and not chosen.is_base:
        keep = work / chosen.variant / _lr_name(chosen.learning_rate) / f"checkpoint-{chosen.step}"
    for variant in cc.variants:
        for lr in cc.learning_rates:
            run = work / variant / _lr_name(lr)
            for folder in [*run.glob("checkpoint-*"), run / "final"]:
                if folder.is_dir() and folder != keep:
                    shutil.rmtree(folder)


def _tuned(root: Path, variant: str, lr: float, epoch: int) -> Path:
    return root / "tuned" / variant / _lr_name(lr) / f"epoch_{epoch}"


class _CellRun:
    """The scores of one cell in progress: the validation curve, the checkpoints, the progress bar."""

    def __init__(self, cc: CellConfig, scorer: Scorer, configs: Mapping[str, Any], evals: Path):
        self.cc, self.scorer, self.configs, self.evals = cc, scorer, configs, evals
        self.points: list[Point] = []
        self.checkpoints: dict[tuple[str, float, int], Path] = {}
        self.runs: dict[str, Any] = {}
        n_variants, n_lrs = len(cc.variants), len(cc.learning_rates)
        self.bar = tqdm(
            total=n_variants * (1 + n_lrs * (1 + cc.run.epochs)) + 2,
            desc=f"{cc.spec.name} × {cc.model}",
            disable=not cc.run.progress,
        )

    def score(self, view: str, out: Path, point: Point, adapter: Path | None = None) -> Score:
        self.bar.set_postfix_str(f"{view} {point.variant} lr={point.learning_rate} epoch={point.epoch}")
        result = self.scorer.score(
            self.cc.spec,
            self.configs[view],
            out,
            pretrained=self.cc.model_path,
            adapter=adapter,
            chat=point.variant == "chat",
        )
        self.bar.update()
        return result

    def validate(self, point: Point, out: Path, adapter: Path | None = None) -> None:
        s = self.score("validation", out, point, adapter)
        self.points.append(replace(point, score=s.value, file=_relative(s.file, self.cc.results_dir)))

    def direct(self) -> tuple[Point, Score]:
        """The base model on validation in each variant, then on test in the better one."""
        for variant in self.cc.variants:
            self.validate(Point(variant, None, 0, 0.0), self.evals / "base" / variant / "validation.json")
        chosen = best(base_points(self.points), self.cc.spec.higher_is_better)
        return chosen, self.score("test", self.evals / "base" / chosen.variant / "test.json", chosen)

    def sweep(self, train_task: Any, tokenizer: Any, work: Path) -> None:
        """Every variant × learning rate: fine-tune, then score each epoch's checkpoint on validation."""
        cc = self.cc
        for variant in cc.variants:
            chat = variant == "chat"
            texts = training_examples(
                train_task, cc.run.texts, chat_tokenizer=tokenizer if chat else None, model=cc.model
            )
            recipe = variant_recipe(cc.run.recipe, cc.run.chat_recipe, variant)
            for lr in cc.learning_rates:
                self.bar.set_postfix_str(f"training {variant} lr={lr:g}")
                self.scorer.release()  # the GPU holds one model at a time
                run = train_epochs(
                    cc.model_path,
                    texts,
                    work / variant / _lr_name(lr),
                    recipe,
                    learning_rate=lr,
                    epochs=cc.run.epochs,
                    lora=cc.run.lora,
                    device=cc.device,
                    seed=cc.run.training_seed,
                )
                self.bar.update()
                self.runs[f"{variant}/{_lr_name(lr)}"] = {
                    "training_texts": len(texts),
                    "steps_per_epoch": run.steps_per_epoch,
                    "first_loss": run.losses[0][1] if run.losses else None,
                    "last_loss": run.losses[-1][1] if run.losses else None,
                }
                for epoch, folder in run.checkpoints.items():
                    point = Point(variant, float(lr), epoch, 0.0, run.step(epoch))
                    self.validate(point, _tuned(self.evals, variant, lr, epoch) / "validation.json", folder)
                    self.checkpoints[(variant, float(lr), epoch)] = folder

    def select(self) -> tuple[Point, Score]:
        """The best point of the curve (the base model too with `fallback_to_base`), scored on test."""
        candidates = (
            self.points if self.cc.run.fallback_to_base else [p for p in self.points if not p.is_base]
        )
        chosen = best(candidates, self.cc.spec.higher_is_better)
        if chosen.is_base:
            return chosen, self.score("test", self.evals / "base" / chosen.variant / "test.json", chosen)
        out = _tuned(self.evals, chosen.variant, chosen.learning_rate, chosen.epoch) / "test.json"
        adapter = self.checkpoints[(chosen.variant, chosen.learning_rate, chosen.epoch)]
        return chosen, self.score("test", out, chosen, adapter)


def run_cell(cc: CellConfig) -> dict[str, Any]:
    """Run (or resume, or find finished) one cell; returns its record and merges it into all_results.json."""
    spec, settings = cc.spec, cc.settings()
    where = f"cell {cc.model} × {spec.name}"
    record_file = record_path(cc.results_dir, spec.name, cc.model)
    if (finished := read_record(record_file)) is not None:
        check_settings(record_file, settings, where)
        log.info("%s is finished (%s); skipped", where, record_file)
        merge(cc.results_dir)
        return finished
    started = time.time()
    work = Path(cc.work_dir) / spec.name / slug(cc.model)
    claim(work, settings)
    attempts = count_attempt(work)  # a resumed cell's earlier attempts ran for times no record holds
    cache = work / "hf_cache"
    manager = build_manager([spec.task], cc.include_paths)
    prepared = prepare(
        spec,
        manager,
        work / "data",
        caps=cc.caps,
        validation_fraction=cc.run.validation_fraction,
        seed=cc.run.seed,
        rule=cc.run.split_rule,
        corpus_fractions=cc.corpus_fractions,
        local_data=cc.local_data,
        cache_dir=cache,
    )
    configs = {view: view_config(manager, spec, prepared, view, cache) for view in VIEWS}
    scorer = Scorer(
        manager,
        device=cc.device,
        batch_size=cc.run.batch_size,
        max_batch_size=cc.run.max_batch_size,
        model_args=scoring_model_args(cc),
        num_fewshot=cc.run.num_fewshot,
        bootstrap_iters=cc.run.bootstrap_iters,
        log_samples=cc.run.log_samples,
    )
    cell = _CellRun(cc, scorer, configs, Path(cc.results_dir) / "evaluations" / spec.name / slug(cc.model))
    direct, direct_test = cell.direct()
    cell.sweep(load_task(manager, configs["validation"]), load_tokenizer(cc.model_path), work)
    chosen, tbt_test = cell.select()
    cell.bar.close()
    scorer.release()

    record = {
        "model": cc.model,
        "model_path": cc.model_path,
        "benchmark": spec.name,
        "task": spec.task,
        "metric": spec.metric_key,
        "higher_is_better": spec.higher_is_better,
        "settings": settings,
        "counts": prepared.counts,
        "curve": [p.as_dict() for p in cell.points],
        "direct_eval": _score_record(direct_test, direct, direct.score, cc.results_dir),
        "train_before_test": {
            **_score_record(tbt_test, chosen, chosen.score, cc.results_dir),
            "base_selected": chosen.is_base,
        },
        "base_validation": {p.variant: p.score for p in base_points(cell.points)},
        "finetune": cell.runs,
        "seconds": round(time.time() - started, 1),  # of this attempt only
        "attempts": attempts,  # > 1: resumed, the earlier attempts' time not in `seconds`
        "versions": _versions(),
        "code": code_record(),  # the checkout's commit
    }
    write_record(record_file, record)
    _prune(work, cc, chosen)
    merge(cc.results_dir)
    log.info(
        "%s: direct %.4f, train-before-test %.4f (%s lr=%s epoch %d)",
        where,
        direct_test.value,
        tbt_test.value,
        chosen.variant,
        chosen.learning_rate,
        chosen.epoch,
    )
    return record


def variant_recipe(recipe: Recipe, chat_recipe: Mapping[str, Any], variant: str) -> Recipe:
    """The fine-tuning recipe of a prompt variant: the chat variant's own keys (`chat_recipe`) over `recipe`."""
    return dataclasses.replace(recipe, **chat_recipe) if variant == "chat" else recipe


def uses_eager_attention(model: str, patterns: list[str]) -> bool:
    """The authors load Gemma and DeepSeek models with eager attention, others with sdpa (main.py:138-144)."""
    return any(p.lower() in str(model).lower() for p in patterns)


def scoring_model_args(cc: CellConfig) -> dict[str, Any]:
    """lm-eval's hf model arguments: `model_args`, plus eager attention where the authors used it."""
    args = dict(cc.run.model_args)
    if uses_eager_attention(cc.model, cc.run.eager_attention_for):
        args.setdefault("attn_implementation", "eager")
    return args


def resolve_variants(mode: ChatTemplate, instruct: bool, tokenizer: Any, corpus: bool = False) -> list[str]:
    """Prompt variants of a model: `auto` tries the chat template too for instruction-tuned models that have one.
    A perplexity corpus has no prompt, so it is scored and trained on plain text only."""
    if corpus:
        return ["plain"]
    has_template = chat_template(tokenizer) is not None
    if mode == ChatTemplate.auto:
        return ["plain", "chat"] if instruct and has_template else ["plain"]
    table: Mapping[str, list[str]] = {
        ChatTemplate.plain: ["plain"],
        ChatTemplate.chat: ["chat"],
        ChatTemplate.both: ["plain", "chat"],
    }
    if "chat" in table[mode] and not has_template:
        raise ValueError(f"chat_template={mode}: the model's tokenizer has no chat template")
    return list(table[mode])
