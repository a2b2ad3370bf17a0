"""Shared pieces of the train-before-test runner tests: the offline fixture, the tiny preset composed on it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from testtask.paths import conf_dir


def compose_run(*overrides: str, hydra_config: bool = False):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("train_before_test_run", overrides=list(overrides), return_hydra_config=hydra_config)
    if not hydra_config:
        OmegaConf.set_struct(cfg, False)
    return cfg


def tiny_config(root: Path, *overrides: str):
    """The `tiny` preset on the fixture below `root`, writing results and checkpoints there too."""
    return compose_run(
        "experiment=train_before_test/tiny",
        f"tiny_root={root / 'fixture'}",
        f"results_dir={root / 'results'}",
        f"work_dir={root / 'work'}",
        *overrides,
    )


@contextmanager
def offline_single_thread() -> Iterator[None]:
    """One torch thread (the CPUs are shared), offline hubs, quiet progress bars; restored afterwards."""
    import datasets
    import torch
    import transformers

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    keys = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TOKENIZERS_PARALLELISM")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        transformers.utils.logging.enable_progress_bar()
        datasets.enable_progress_bars()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def cheap_env_info(results: dict) -> None:
    """lm-eval asks torch's collect_env (pip list and friends, ~1 s) for every score; tests skip that."""
    results["pretty_env_info"] = "(not collected in tests)"
