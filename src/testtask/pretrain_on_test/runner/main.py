"""The pretrain-on-test runner's job (started by `testtask.runners`): one job runs one cell; sweeps come from
Hydra multirun.

python experiments/pretrain_on_test/run.py experiment=pretrain_on_test/cpu_mini
python experiments/pretrain_on_test/run.py experiment=pretrain_on_test/paper hydra/launcher=slurm
python experiments/pretrain_on_test/run.py lm=gpt2 dataset=trec m=50 n=100
python experiments/pretrain_on_test/run.py experiment=pretrain_on_test/contamination_cpu   # §9.2
"""

from __future__ import annotations

import logging

from omegaconf import DictConfig

from testtask import user_files
from testtask.config_checks import check_pretrain_on_test_run

USER_FILES = {"datasets.yaml": "testtask.pretrain_on_test.runner.datasets:merge_user_datasets"}


def run(cfg: DictConfig) -> str:
    user_files.apply(cfg, USER_FILES)  # own datasets join the registry before the config is checked
    check_pretrain_on_test_run(cfg)  # every setting validated before anything is loaded or written
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if cfg.get("threads"):
        import torch

        torch.set_num_threads(int(cfg.threads))
    if cfg.get("quiet_transformers", True):
        import transformers

        transformers.logging.set_verbosity_error()  # load reports for every fresh model drown the progress bars
    task = str(cfg.get("task", "cell"))
    if task == "packing_speed":
        from testtask.pretrain_on_test.runner.packing_speed import run as run_speed

        return str(run_speed(cfg))
    if task == "contamination":  # §9.2
        from testtask.pretrain_on_test.runner.contamination import run_contamination

        return str(run_contamination(cfg))
    if task != "cell":
        raise ValueError(f"task must be cell, packing_speed or contamination, got {task!r}")
    from testtask.pretrain_on_test.runner.cell import run_cell

    return str(run_cell(cfg))
