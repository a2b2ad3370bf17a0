"""The `testtask` command: Hydra config in, figures, tables and data out (the work is in `testtask.pipeline`).

testtask action=figure figure=3 paper=pretrain-on-test source=published sampler=nutpie
testtask action=data
testtask action=bench paper=pretrain-on-test
"""

from __future__ import annotations

import os

import hydra
from omegaconf import DictConfig

from testtask.errors import reported
from testtask.paths import conf_dir
from testtask.pipeline import run, with_user_files


@hydra.main(version_base=None, config_path=str(conf_dir()), config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    with reported():  # a user's mistake: one message, no traceback (unless HYDRA_FULL_ERROR=1)
        run(with_user_files(cfg))


def main() -> None:
    os.environ.setdefault("MPLBACKEND", "Agg")
    _hydra_main()
