"""The one entry point of every experiment runner: Hydra reads the paper's run config, its runner runs one job.

python experiments/<paper>/run.py [overrides]          (each of those scripts is `main("<paper-key>")`)
python -m testtask.runners <paper-key> [overrides]     (the same, e.g. for processes a launcher starts)

A paper declares its runner in its plug-in (`PAPER.runner`: the config name, the job function, and extra
subcommands such as training-on-the-test-task's `--train-job` worker that `accelerate launch` starts).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from testtask import papers
from testtask.errors import reported
from testtask.paths import conf_dir


def load(target: str) -> Callable[..., Any]:
    """`"package.module:function"` -> the function (imported now, so analysis imports stay free of torch)."""
    module, sep, name = target.partition(":")
    if not sep:
        raise ValueError(f"runner target must be 'module:function', got {target!r}")
    return getattr(importlib.import_module(module), name)


def command(paper: str, *args: str) -> list[str]:
    """The argument list after `python` that runs `paper`'s runner with `args` (for launchers)."""
    return ["-m", "testtask.runners", paper, *args]


def main(paper: str, argv: Sequence[str] | None = None) -> Any:
    """Run `paper`'s runner on `argv` (default: the command line after the script name) as Hydra would."""
    spec = papers.get(paper).runner
    if spec is None:
        raise SystemExit(f"{paper} has no experiment runner")
    args = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args and args[0] in spec.subcommands:  # e.g. a worker process started by a multi-process launcher
        with reported():
            return load(spec.subcommands[args[0]])(*args[1:])
    job = load(spec.run)

    def task(cfg: Any) -> Any:
        with reported():  # a user's mistake: one message, no traceback (unless HYDRA_FULL_ERROR=1)
            return job(cfg)

    # Hydra names the job after the task function's module unless the run config sets hydra.job.name.
    task.__module__ = spec.run.partition(":")[0]
    import hydra

    saved = sys.argv
    sys.argv = [saved[0], *args]  # Hydra parses sys.argv
    try:
        return hydra.main(version_base=None, config_path=str(conf_dir()), config_name=spec.config_name)(
            task
        )()
    finally:
        sys.argv = saved


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in papers.keys():
        raise SystemExit(
            f"usage: python -m testtask.runners <paper> [overrides]; papers: {', '.join(papers.keys())}"
        )
    main(sys.argv[1], sys.argv[2:])
