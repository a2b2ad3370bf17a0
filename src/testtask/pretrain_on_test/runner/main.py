"""The pretrain-on-test runner's job (started by `testtask.runners`): one job runs one cell; sweeps come from
Hydra multirun, e.g. python experiments/pretrain_on_test/run.py experiment=pretrain_on_test/cpu_mini."""

from __future__ import annotations

import logging

from omegaconf import DictConfig

from testtask import runners
from testtask.pretrain_on_test.runner.settings import USER_FILES, Settings, Task

__all__ = ["USER_FILES", "run"]


def run(cfg: DictConfig) -> str:
    # own datasets join the registry, then every setting is read, typed, before anything is loaded or written
    settings: Settings = runners.settings_of("pretrain-on-test", cfg)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if settings.threads:
        import torch

        torch.set_num_threads(settings.threads)
    if settings.quiet_transformers:
        import transformers

        transformers.logging.set_verbosity_error()  # load reports for every fresh model drown the progress bars
    if settings.task == Task.packing_speed:
        from testtask.pretrain_on_test.runner.packing_speed import run as run_speed

        return str(run_speed(settings))
    if settings.task == Task.contamination:  # §9.2
        from testtask.pretrain_on_test.runner.contamination import run_contamination

        return str(run_contamination(settings, cfg))
    from testtask.pretrain_on_test.runner.cell import run_cell

    return str(run_cell(settings, cfg))
