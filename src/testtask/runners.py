"""The one entry point of every experiment runner (`PAPER.runner`): Hydra reads the paper's run config, its
runner runs one job. `python experiments/<paper>/run.py [overrides]` or `python -m testtask.runners <paper-key>
[overrides]`; plain overrides are checked against the schema before Hydra starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from testtask import papers
from testtask.errors import reported
from testtask.paths import conf_dir


def load(target: str) -> Callable[..., Any]:
    """`"package.module:function"` -> the function (imported now, so analysis imports stay free of torch)."""
    if ":" not in target:
        raise ValueError(f"runner target must be 'module:function', got {target!r}")
    return papers.resolve(target)


def command(paper: str, *args: str) -> list[str]:
    """The argument list after `python` that runs `paper`'s runner with `args` (for launchers)."""
    return ["-m", "testtask.runners", paper, *args]


def settings_of(paper: str, cfg: Any) -> Any:
    """The typed settings of `paper`'s runner in its composed config `cfg`, the user's own files merged in (in
    place); ConfigError naming every bad key."""
    from testtask import schema, user_files
    from testtask.pipeline import HYDRA

    spec = _runner(paper)
    user_files.apply(cfg, spec.user_files)
    return schema.load(spec.settings, cfg, exclude=(HYDRA,))


def _runner(paper: str) -> papers.Runner:
    spec = papers.get(paper).runner
    if spec is None:
        raise SystemExit(f"{paper} has no experiment runner")
    return spec


def _first_of_sweep(args: Sequence[str], config_name: str) -> list[str]:
    """Overrides that pick the first value of every parameter the config sweeps and `args` do not set: the
    sweep's first job, which the precheck composes."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
            cfg = compose(config_name, overrides=list(args), return_hydra_config=True)
    except Exception:  # noqa: BLE001 - the precheck's own composition names what is wrong
        return []
    params = cfg.hydra.sweeper.get("params") or {}
    given = {a.lstrip("+~").split("=", 1)[0] for a in args}
    parser = OverridesParser.create()
    out = []
    for key, values in params.items():
        if key in given:
            continue
        override = parser.parse_override(f"{key}={values}")
        first = next(iter(override.sweep_iterator())) if override.is_sweep_override() else override.value()
        out.append(f"{key}={first}")
    return out


def precheck(paper: str, args: Sequence[str], folders: bool = True) -> None:
    """ConfigError with every bad key of the command line's run config (a sweep's first job), before Hydra runs;
    with `folders`, SettingUnusable for a local folder the settings name that does not exist (`local_folders()`,
    where a runner's settings have it)."""
    from testtask import pipeline
    from testtask.lm.local_folders import check_local_folders

    spec = _runner(paper)
    overrides = [*args, *_first_of_sweep(args, spec.config_name)]

    def check(cfg: Any) -> Any:
        settings = settings_of(paper, cfg)
        if folders and hasattr(settings, "local_folders"):
            check_local_folders(settings.local_folders())
        return settings

    pipeline.precheck(overrides, spec.config_name, check)


def main(paper: str, argv: Sequence[str] | None = None) -> Any:
    """Run `paper`'s runner on `argv` (default: the command line after the script name) as Hydra would."""
    spec = _runner(paper)
    args = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args and args[0] in spec.subcommands:  # e.g. a worker process started by a multi-process launcher
        with reported():
            return load(spec.subcommands[args[0]])(*args[1:])
    from testtask.hydra_loads import keep_loaded_configs
    from testtask.pipeline import checked_overrides

    keep_loaded_configs()  # the check below and Hydra's two composes read each YAML file once
    overrides = checked_overrides(args)
    if overrides is not None:  # a sweep too: its first job, before anything is launched or submitted
        with reported():  # --cfg only prints the config: the folders it names need not exist yet
            precheck(paper, overrides, folders=not any(a in ("--cfg", "-c") for a in args))
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
