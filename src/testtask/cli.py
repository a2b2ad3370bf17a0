"""The `testtask` command (`testtask action=figure figure=3 paper=pretrain-on-test`); the work is the pipeline's."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import hydra
from omegaconf import DictConfig

from testtask.errors import reported
from testtask.paths import conf_dir
from testtask.pipeline import check, compose_checked, plain_overrides, run, with_user_files
from testtask.schema import ConfigError


@hydra.main(version_base=None, config_path=str(conf_dir()), config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    with reported():  # a user's mistake: one message, no traceback (unless HYDRA_FULL_ERROR=1)
        run(with_user_files(cfg))


def precheck(args: Sequence[str]) -> None:
    """ConfigError with every bad key of the command line's config, before Hydra runs or anything is read."""
    cfg, lines = compose_checked(args)
    if cfg is not None:
        try:
            check(cfg)
        except ConfigError as err:
            lines += err.violations
    if lines:
        raise ConfigError(lines)


def main() -> None:
    os.environ.setdefault("MPLBACKEND", "Agg")
    args = sys.argv[1:]
    if plain_overrides(args):
        with reported():
            precheck(args)
    _hydra_main()
