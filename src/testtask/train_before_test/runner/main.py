"""The train-before-test runner's job (started by `testtask.runners`): one cell (a model × benchmark).

python experiments/train_before_test/run.py model=EleutherAI/pythia-160m-deduped benchmark=arc_easy
python experiments/train_before_test/run.py experiment=train_before_test/paper hydra/launcher=slurm
python experiments/train_before_test/run.py experiment=train_before_test/tiny      # offline smoke run (CPU)
"""

from __future__ import annotations

import logging
from typing import Any

from omegaconf import DictConfig

from testtask import runners
from testtask.lm.hf import load_tokenizer, pick_device
from testtask.lm.local_folders import check_local_folders
from testtask.paths import resolve
from testtask.schema import to_plain
from testtask.train_before_test.runner.benchmarks import lookup
from testtask.train_before_test.runner.cell import CellConfig, resolve_variants, run_cell
from testtask.train_before_test.runner.settings import Settings

log = logging.getLogger("testtask.tbt_runner")
PAPER = "train-before-test"


def settings_of(cfg: DictConfig) -> Settings:
    """The runner's typed settings of a composed config."""
    return runners.settings_of(PAPER, cfg)


def cell_config(settings: Settings) -> CellConfig:
    """The cell of the typed settings: the benchmark spec looked up, paths resolved, prompt variants chosen."""
    spec = lookup(settings.benchmarks, settings.benchmark)
    check_local_folders(settings.local_folders())  # the command line's check too, for a job called in-process
    model_path = str(resolve(settings.model_path)) if settings.model_path else settings.model
    variants = resolve_variants(
        settings.chat_template, settings.is_instruct(), load_tokenizer(model_path), corpus=spec.is_corpus
    )
    local = settings.local_data
    return CellConfig(
        run=settings,
        model_path=model_path,
        spec=spec,
        variants=variants,
        learning_rates=[float(x) for x in settings.learning_rates],
        caps=to_plain(settings.caps),
        corpus_fractions=[float(f) for f in settings.corpus_fractions],
        results_dir=resolve(settings.results_dir),
        work_dir=resolve(settings.work_dir),
        include_paths=[resolve(p) for p in settings.include_paths],
        local_data=resolve(local[spec.name]) if spec.name in local else None,
        device=pick_device(settings.device),
    )


def run(cfg: DictConfig) -> dict[str, Any]:
    settings = settings_of(cfg)  # every setting read, typed, before anything is loaded or written
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if settings.threads:
        import torch

        torch.set_num_threads(settings.threads)
    return run_cell(cell_config(settings))
