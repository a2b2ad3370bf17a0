"""The train-before-test runner's job (started by `testtask.runners`): one cell (a model × benchmark).

python experiments/train_before_test/run.py model=EleutherAI/pythia-160m-deduped benchmark=arc_easy
python experiments/train_before_test/run.py experiment=train_before_test/paper hydra/launcher=slurm
python experiments/train_before_test/run.py experiment=train_before_test/tiny      # offline smoke run (CPU)
"""

from __future__ import annotations

import logging
from typing import Any

from omegaconf import DictConfig, OmegaConf

from testtask.config_checks import check_train_before_test_run
from testtask.lm.hf import load_tokenizer, pick_device
from testtask.paths import resolve
from testtask.train_before_test.runner.benchmarks import lookup
from testtask.train_before_test.runner.cell import CellConfig, resolve_variants, run_cell
from testtask.train_before_test.runner.texts import TextFormat

log = logging.getLogger("testtask.tbt_runner")


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def is_instruct(cfg: DictConfig) -> bool:
    """`instruct` when given, else the model table's flag (conf/train_before_test/models), else False."""
    if cfg.get("instruct") is not None:
        return bool(cfg.instruct)
    for entry in cfg.get("models") or []:
        if str(entry["id"]) == str(cfg.model):
            return bool(entry.get("instruct", False))
    return False


def cell_config(cfg: DictConfig) -> CellConfig:
    """The cell of the composed config: the benchmark spec looked up, paths resolved, prompt variants chosen."""
    spec = lookup(_plain(cfg.benchmarks), str(cfg.benchmark))
    model_path = str(resolve(cfg.model_path)) if cfg.get("model_path") else str(cfg.model)
    variants = resolve_variants(
        str(cfg.chat_template), is_instruct(cfg), load_tokenizer(model_path), corpus=spec.is_corpus
    )
    local = _plain(cfg.get("local_data") or {})
    caps = {k: (None if v is None else int(v)) for k, v in _plain(cfg.caps).items()}
    return CellConfig(
        model=str(cfg.model),
        model_path=model_path,
        spec=spec,
        variants=variants,
        learning_rates=[float(x) for x in cfg.learning_rates],
        epochs=int(cfg.epochs),
        caps=caps,
        validation_fraction=float(cfg.validation_fraction),
        seed=int(cfg.seed),
        recipe=_plain(cfg.recipe),
        lora=_plain(cfg.lora),
        fallback_to_base=bool(cfg.fallback_to_base),
        texts=TextFormat.from_config(_plain(cfg.texts)),
        chat_recipe=_plain(cfg.get("chat_recipe") or {}),
        training_seed=int(cfg.training_seed),
        split_rule=str(cfg.split_rule),
        corpus_fractions=[float(f) for f in cfg.corpus_fractions],
        eager_attention_for=[str(p) for p in cfg.get("eager_attention_for") or []],
        num_fewshot=int(cfg.num_fewshot),
        bootstrap_iters=int(cfg.bootstrap_iters),
        model_args=_plain(cfg.get("model_args") or {}),
        results_dir=resolve(cfg.results_dir),
        work_dir=resolve(cfg.work_dir),
        include_paths=[resolve(p) for p in cfg.get("include_paths") or []],
        local_data=resolve(local[spec.name]) if spec.name in local else None,
        device=pick_device(str(cfg.device)),
        batch_size=cfg.batch_size,
        max_batch_size=cfg.get("max_batch_size"),
        log_samples=bool(cfg.log_samples),
        keep_checkpoints=str(cfg.keep_checkpoints),
        progress=bool(cfg.progress),
    )


def run(cfg: DictConfig) -> dict[str, Any]:
    check_train_before_test_run(cfg)  # every setting validated before anything is loaded or written
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if cfg.get("threads"):
        import torch

        torch.set_num_threads(int(cfg.threads))
    return run_cell(cell_config(cfg))
