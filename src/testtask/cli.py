"""The `testtask` command (`testtask action=figure figure=3 paper=pretrain-on-test`); the work is the pipeline's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from testtask import papers
from testtask.errors import reported
from testtask.hydra_loads import keep_loaded_configs
from testtask.paths import conf_dir
from testtask.pipeline import CORE_ACTIONS, check, checked_overrides, precheck, run, with_user_files


@hydra.main(version_base=None, config_path=str(conf_dir()), config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    with reported():  # a user's mistake: one message, no traceback (unless HYDRA_FULL_ERROR=1)
        run(with_user_files(cfg))


EXAMPLES = """\
  testtask action=figure figure=3 paper=pretrain-on-test       one figure (make figure-3 PAPER=...)
  testtask action=figures paper=all protocol=paper_text         every figure under the papers' text
  testtask action=report                                         the reproduction report of what is built
  testtask action=figure figure=3 paper=pretrain-on-test --cfg job   the composed config; nothing runs"""


def config_groups(root: Path) -> dict[str, list[str]]:
    """Config group (a folder of conf/ holding YAML files) -> its options, as `group=option` takes them."""
    groups: dict[str, list[str]] = {}
    for path in root.rglob("*.yaml"):
        if path.parent != root:
            groups.setdefault(path.parent.relative_to(root).as_posix(), []).append(path.stem)
    return {group: sorted(groups[group]) for group in sorted(groups)}


def usage() -> str:
    """`testtask --help`: what the command does, examples, the actions, papers and config groups.

    Written here rather than by Hydra's `--help`, which composes the config once per group option;
    `--hydra-help` still shows Hydra's own flags."""
    own = sorted({a for key in papers.keys() for a in papers.get(key).actions})
    lines = [
        "testtask: the five papers' figures, tables and reproduction report, built from raw results.",
        "",
        f"Usage: testtask [key=value ...]   (Hydra overrides of {conf_dir() / 'config.yaml'})",
        "",
        EXAMPLES,
        "",
        f"Actions (action=): {', '.join(CORE_ACTIONS)}; a paper's own: {', '.join(own)}",
        f"Papers (paper=): all, {', '.join(papers.keys())}",
        "",
        "== Configuration groups ==",
        "Compose your configuration from those groups (group=option)",
        "",
        *(f"{group}: {', '.join(options)}" for group, options in config_groups(conf_dir()).items()),
        "",
        "--cfg job prints the composed config, --hydra-help Hydra's own flags (multirun, launchers, sweeps).",
    ]
    return "\n".join(lines)


def main() -> None:
    os.environ.setdefault("MPLBACKEND", "Agg")
    args = sys.argv[1:]
    if args in (["--help"], ["-h"]):
        print(usage())
        return
    keep_loaded_configs()  # the check below and Hydra's two composes read each YAML file once
    overrides = checked_overrides(args)
    if overrides is not None:
        with reported():
            precheck(overrides, "config", check)
    _hydra_main()
