"""The `testtask` command (`testtask action=figure figure=3 paper=pretrain-on-test`); the work is the pipeline's."""

from __future__ import annotations

import os
import sys

import hydra
from omegaconf import DictConfig

from testtask.errors import reported
from testtask.paths import conf_dir
from testtask.pipeline import check, plain_overrides, precheck, run, with_user_files


@hydra.main(version_base=None, config_path=str(conf_dir()), config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    with reported():  # a user's mistake: one message, no traceback (unless HYDRA_FULL_ERROR=1)
        run(with_user_files(cfg))


def main() -> None:
    os.environ.setdefault("MPLBACKEND", "Agg")
    args = sys.argv[1:]
    if plain_overrides(args):
        with reported():
            precheck(args, "config", check)
    _hydra_main()
