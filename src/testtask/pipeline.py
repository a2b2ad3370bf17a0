"""The pipeline every entry point shares (the command, the notebooks, `make bench`): config -> typed, checked
config -> Context per paper -> figure/table builders -> outputs. It never imports the command line."""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from testtask import papers, provenance, reads, reuse, schema, sources
from testtask.context import Context, InputsUnavailable
from testtask.diagnostics import Thresholds
from testtask.io import noting_writes
from testtask.papers import Key, Paper
from testtask.paths import AUTHORS, conf_dir, in_repo, output_dir, resolve, run_of
from testtask.settings import LOCATIONS, Top
from testtask.sources import run_root

log = logging.getLogger("testtask")

HYDRA = "hydra"  # Hydra's own node: only its record of the command line's overrides is kept (`compose`)


class UsageError(SystemExit):
    pass


# --- the typed config ----------------------------------------------------------------------------------------


@functools.cache
def _config_schema(sections: tuple[tuple[str, type], ...]) -> type:
    namespace = {"__annotations__": dict(sections), "__module__": __name__, "__qualname__": "Config"}
    return schema.section(type("Config", (Top,), namespace))


def config_schema() -> type:
    """The schema of the whole `testtask` config: `settings.Top` and each paper's `Paper.settings` under its key."""
    plugins = [papers.get(key) for key in papers.keys()]
    return _config_schema(tuple((p.config_key, p.settings) for p in plugins))


def typed(cfg: DictConfig | Any) -> Any:
    """The typed, frozen config of `cfg`; ConfigError naming every bad, missing and unknown key at once."""
    if not isinstance(cfg, DictConfig):
        return cfg
    config = schema.load(config_schema(), cfg, exclude=(HYDRA,))
    reads.label(config)  # so that a build records the settings it reads by their keys (`reuse`)
    return config


def check(cfg: DictConfig) -> Any:
    """`typed(cfg)` plus what only the pipeline knows: the paper and the action must exist."""
    config = typed(cfg)
    selected_papers(config)
    return config


def settings_of(config: Any, paper: str) -> Any:
    """Paper `paper`'s typed settings in the typed `config`."""
    return getattr(config, papers.get(paper).config_key)


@functools.cache
def configured(paper: str, overrides: tuple[str, ...] = ()) -> Any:
    """Paper `paper`'s typed settings as the YAML (and `overrides`) compose them, for notebooks and tests."""
    return settings_of(typed(compose(list(overrides))), paper)


# --- protocol presets and variants ---------------------------------------------------------------------------


def overrides_of(cfg: Any) -> list[str]:
    """The command line's overrides `cfg` was composed with (Hydra's record, kept by `compose` or of the running
    command); [] for a config built otherwise."""
    node = cfg.get(HYDRA) if isinstance(cfg, DictConfig) else None
    if node is not None:
        return [str(o) for o in node.overrides.task]
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return [str(o) for o in HydraConfig.get().overrides.task]
    return []


def with_protocol(overrides: Sequence[str], protocol: str) -> list[str]:
    """`overrides` with the protocol preset set to `protocol` (any other choice of it dropped)."""
    kept = [o for o in overrides if not re.match(r"^[+~]*protocol=", o)]
    return [*kept, f"protocol={protocol}"]


def compose_preset(cfg: DictConfig, protocol: str, own_files: bool = True) -> DictConfig:
    """`cfg`'s own command line composed again under protocol preset `protocol` (Hydra's compose API); without
    the user's own files where `own_files` is false."""
    overrides = with_protocol(overrides_of(cfg), protocol)
    if not own_files:
        overrides = [o for o in overrides if not re.match(r"^[+~]*own_files=", o)] + ["own_files=false"]
    return compose(overrides)


@functools.cache
def _preset_config(
    protocol: str, user_dir: str, root: str, files: tuple[tuple[str, str], ...], own: tuple[str, ...]
) -> Any:
    from testtask import user_files

    cfg = compose([f"protocol={protocol}", f"user_dir={user_dir}", "own_files=false"])
    user_files.apply(cfg, {name: user_files.ANALYSIS[name] for name in own})
    return typed(cfg)


def preset_config(protocol: str, user_dir: str, own: Sequence[str] = ()) -> Any:
    """The typed config of protocol preset `protocol` as the YAML has it, with the user's own files `own` (names
    in `user_files.ANALYSIS`) merged in."""
    from testtask import user_files

    files = user_files.digest(resolve(user_dir), user_files.ANALYSIS)
    chosen = tuple(sorted(name for name in own if name in files))
    return _preset_config(str(protocol), str(user_dir), str(conf_dir()), tuple(sorted(files.items())), chosen)


def own_files_read(config: Any, paper: str) -> dict[str, str]:
    """The user's own files merged into `config` that change what a build of `paper` reads (name -> SHA-256): a
    file that leaves the paper's settings as its preset has them (e.g. benchmark categories for a paper that has
    none) is not among them."""
    from testtask import user_files

    if not config.own_files:
        return {}
    present = user_files.digest(resolve(config.user_dir), user_files.ANALYSIS)
    protocol, user_dir = str(config.protocol), str(config.user_dir)
    plain = schema.to_plain(read_settings(preset_config(protocol, user_dir), paper))
    return {
        name: sha
        for name, sha in present.items()
        if schema.to_plain(read_settings(preset_config(protocol, user_dir, [name]), paper)) != plain
    }


def read_settings(config: Any, paper: str) -> dict[str, Any]:
    """Every setting a build of `paper` reads, by config key (its papers' sections, sampler, seed, diagnostics)."""
    plugin = papers.get(paper)
    keys = [plugin.config_key, *(papers.get(other).config_key for other in plugin.uses)]
    out = {key: getattr(config, key) for key in keys}
    out.update(sampler=config.sampler, seed=config.seed, diagnostics=config.diagnostics)
    return out


@dataclasses.dataclass(frozen=True)
class Variant:
    """How a build's settings stand to its preset's (`name`: the variant folder; None: the preset's own build)."""

    fingerprint: str
    preset_fingerprint: str
    differs: dict[str, Any]
    name: str | None
    # the user's own files that changed the settings: name -> SHA-256 (own_files_read)
    user_files: dict[str, str]

    def record(self) -> dict[str, Any]:
        """The sidecars' provenance entry `settings`."""
        return {
            "fingerprint": self.fingerprint,
            "preset_fingerprint": self.preset_fingerprint,
            "variant": self.name,
            "differs": self.differs,
            "user_files": self.user_files,
        }


def variant(config: Any, paper: str, overrides: Sequence[str] = ()) -> Variant:
    """Whether a build of `paper` under `config` is its preset's own build or a variant of it, and which. The
    preset is the papers' YAML alone: a build that the user's own files change is a variant too."""
    mine = schema.to_plain(read_settings(config, paper))
    theirs = schema.to_plain(read_settings(preset_config(str(config.protocol), config.user_dir), paper))
    ours, preset = schema.fingerprint(mine), schema.fingerprint(theirs)
    if ours == preset:
        return Variant(ours, preset, {}, None, {})
    own = own_files_read(config, paper)
    differs = {key: new for key, (_, new) in schema.differences(theirs, mine).items()}
    return Variant(ours, preset, differs, variant_name(overrides, differs, ours, own), own)


def _is_group(key: str) -> bool:
    return (conf_dir() / key).is_dir()


def variant_name(
    overrides: Sequence[str], differs: dict[str, Any], fingerprint: str, own: Sequence[str] = ()
) -> str:
    """The variant folder's name: the user's own files that changed the settings (`own=benchmarks`) and the
    overrides that did, else the settings that differ (a config changed in Python); long names end in the
    fingerprint."""
    roots = {key.split(".")[0] for key in differs}
    chosen = []
    for override in overrides:
        key = override.lstrip("+~").split("=", 1)[0]
        root = key.split(".")[0]
        if root == "protocol" or "=" not in override:
            continue
        if (_is_group(key) and key not in LOCATIONS) or (root in roots and root not in LOCATIONS):
            chosen.append(override.lstrip("+"))
    files = [f"own={'+'.join(sorted(Path(name).stem for name in own))}"] if own else []
    words = files + chosen or [f"{key}={value}" for key, value in differs.items()]
    name = re.sub(r"[^A-Za-z0-9_.,=+@-]+", "_", ",".join(sorted(words))).replace("_,", ",").strip("_")
    if len(name) > 100:
        name = f"{name[:80]}+{fingerprint[:12]}"
    return name


# --- contexts ------------------------------------------------------------------------------------------------


def selected_papers(cfg: Any) -> list[str]:
    if cfg.paper == "all":
        return papers.keys()
    if cfg.paper not in papers.keys():
        raise UsageError(papers.unknown(cfg.paper, also=" (or all)"))
    return [str(cfg.paper)]


def verify_published(config: Any, paper: str) -> None:
    """ReleaseError for a fetched release of `paper` (or of a paper it reads) that `make data` did not finish or
    that changed since; one not fetched at all is left to the builders (InputsUnavailable)."""
    from testtask.data.release import verify_release

    for key in [paper, *papers.get(paper).uses]:
        folder = resolve(config.data.dest) / key
        if key in config.data.sources and folder.exists():
            verify_release(folder, key, list(config.data.sources[key].json_drop_keys))


def overlay_roots(config: Any, plugin: Paper) -> tuple[Path, Path]:
    """(release, run) of source=published+results; a paper whose loaders read one root only, or a run that does
    not exist, is refused here, before anything is read."""
    if not plugin.overlay:
        able = [key for key in papers.keys() if papers.get(key).overlay]
        raise UsageError(
            f"source={sources.OVERLAY} is not supported for paper {plugin.key} (its loaders read one root); "
            f"supported: {', '.join(able)}. Use source=published or source=results"
        )
    run = run_root(config, plugin.key)
    if not run.is_dir():
        raise UsageError(
            f"source={sources.OVERLAY}: the run {run} does not exist (results_run={config.results_run!r}; "
            "make ... RUN=<run> names it)"
        )
    verify_published(config, plugin.key)
    return resolve(config.data.dest) / plugin.key, run


def out_dir(config: Any, paper: str, overrides: Sequence[str] = ()) -> Path:
    """Where `paper`'s outputs of `config` go: its source's folder under its preset, or a variant folder."""
    name = variant(config, paper, overrides).name
    return output_dir(
        config.figures_dir, config.source, config.results_run, paper, config.protocol, variant=name
    )


def make_context(cfg: DictConfig | Any, paper: str) -> Context:
    """Paper `paper`'s context for `cfg`: its inputs, outputs, typed settings and the papers it reads (`uses`)."""
    config = typed(cfg)
    plugin = papers.get(paper)
    overlay_root = None
    if config.source == sources.PUBLISHED:
        verify_published(config, paper)
        data_root = resolve(config.data.dest) / paper
    elif config.source == sources.RESULTS:
        data_root = run_root(config, paper)
    else:
        data_root, overlay_root = overlay_roots(config, plugin)

    def related(other: str) -> Context:
        if other not in plugin.uses:
            raise RuntimeError(f"{paper} asks for {other}'s context but does not list it in its PAPER.uses")
        with reads.paused():  # where the other paper's outputs would go is no setting its reader reads
            return make_context(config, other)

    return Context(
        paper=paper,
        source=str(config.source),
        data_root=data_root,
        overlay_root=overlay_root,
        out_dir=out_dir(config, paper, overrides_of(cfg)),
        sampler=config.sampler,
        seed=int(config.seed),
        cache_dir=resolve(config.cache_dir) / paper if config.cache_dir else None,
        settings=getattr(config, plugin.config_key),
        related=related,
        diagnostics=Thresholds(**schema.to_plain(config.diagnostics)),
        run=run_of(config.source, config.results_run),
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
    """Build figures or tables (`kind`) with the given numbers (None: all) for the selected papers; NothingBuilt
    for a numbered output of one paper that cannot be built, or when nothing is (otherwise what can be, is)."""
    config = typed(cfg)
    overrides = overrides_of(cfg)
    done: list[dict[str, Any]] = []
    skipped: list[str] = []
    chosen = selected_papers(config)
    if config.protocol != AUTHORS:  # a paper without released analysis code has one protocol: its text
        for paper in [p for p in chosen if not papers.get(p).paper_text]:
            log.info(
                "%s has no protocol preset %s (one protocol, no released analysis code): nothing to build",
                paper,
                config.protocol,
            )
        chosen = [p for p in chosen if papers.get(p).paper_text]
        if not chosen:
            return []
    commit, dirty = provenance.code_git_state()
    plain = schema.to_plain(config)  # what the reuse index compares an output's read settings with
    checksums: dict[str, dict[str, Any]] = {}  # data root -> its checksum entry, computed once per build
    known = {n for paper in chosen for n in papers.get(paper).outputs(kind)}
    if numbers is not None and not set(numbers) & known:
        raise UsageError(f"no paper among {chosen} has {kind} {numbers}; known: {sorted(known, key=_order)}")
    for paper in chosen:
        builders = papers.get(paper).outputs(kind)
        wanted = sorted(builders, key=_order) if numbers is None else [n for n in numbers if n in builders]
        settings = variant(config, paper, overrides)
        if wanted and settings.name:
            log.info(
                "%s: settings differ from those of protocol=%s (%s): outputs go to the variant folder %s",
                paper,
                config.protocol,
                ", ".join(f"{k}={v}" for k, v in settings.differs.items()),
                settings.name,
            )
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
                protocol=str(config.protocol),
                settings=settings.record(),
                cache=checksums,
            )
            index = reuse.locate(ctx, plain, kind, number, settings.user_files)
            reused = index.restore(stamp)
            if reused is not None:
                seconds = time.perf_counter() - start
                log.info(
                    "%s %s of %s reused from %s (same inputs, code and the %d setting(s) it reads) in %.1f s -> %s",
                    kind,
                    number,
                    paper,
                    in_repo(reused["out_dir"]),
                    len(reused["reads"]),
                    seconds,
                    ctx.out_dir,
                )
                done.append({"paper": paper, kind: number, "seconds": seconds, "reused": True})
                continue
            try:
                # every sidecar this builder writes carries `provenance`; the settings it reads and the files it
                # writes are noted for the reuse index
                with provenance.stamping(stamp), reads.recording() as read, noting_writes() as written:
                    builders[number](ctx)
            except InputsUnavailable as err:
                log.warning("skipped %s %s of %s: inputs not available (%s)", kind, number, paper, err)
                skipped.append(f"{kind} {number} of {paper}: {err}")
                continue
            seconds = time.perf_counter() - start
            index.record(read, written, stamp)
            log.info("%s %s of %s done in %.1f s -> %s", kind, number, paper, seconds, ctx.out_dir)
            done.append({"paper": paper, kind: number, "seconds": seconds})
    summary = (
        f"{kind}s for paper={config.paper} source={config.source}: {len(done)} built, {len(skipped)} skipped"
    )
    log.info("%s%s", summary, "".join(f"\n  skipped {reason}" for reason in skipped))
    # With one paper, a number names one output; with paper=all it names that number of each paper that has one.
    if numbers is not None and skipped and len(chosen) == 1:
        raise NothingBuilt(f"not built: {'; '.join(skipped)}")
    if not done:
        raise NothingBuilt(
            f"{summary}: nothing was built; the inputs are not available ({'; '.join(skipped)})"
        )
    return done


# Libraries whose INFO lines say nothing about the analysis (arviz announces its plotting backend and its preview
# packages on import): shown from WARNING unless log_level asks for DEBUG.
CHATTY_LIBRARIES = ("arviz",)


def configure_logging(level_name: str) -> None:
    """Log at `level_name`, keeping Hydra's job-log handlers (`basicConfig(force=True)` left <job>.log empty); a
    console handler only where there is none (a call from Python)."""
    level = getattr(logging, str(level_name))
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    root.setLevel(level)
    for name in CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(level if level <= logging.DEBUG else max(level, logging.WARNING))


def run(cfg: DictConfig) -> Any:
    """Carry out `cfg.action`. A release that fails verification stops the run with its message (exit 1)."""
    from testtask.data.fetch import ReleaseError

    config = check(cfg)  # every key checked before anything is read or written
    configure_logging(str(config.log_level))
    try:
        return _run(cfg, config)
    except ReleaseError as err:
        raise UsageError(f"refusing to analyse: {err}") from err


def _fetch(cfg: DictConfig, config: Any) -> Any:
    """`action=data` (`make data`): fetch the selected papers' releases (and those they read); none for
    source=results, which never reads them (offline, a fetch would fail)."""
    from testtask.data.fetch import fetch_from_config

    if config.source == sources.RESULTS:
        log.info("source=results reads %s: the published release is not fetched", resolve(config.results_dir))
        return {}
    return fetch_from_config(config.data, _with_uses(selected_papers(config)))


def _with_uses(keys: list[str]) -> list[str]:
    """`keys` and the papers their analyses read (`Paper.uses`), each once, in order."""
    return list(dict.fromkeys(p for key in keys for p in [key, *papers.get(key).uses]))


def _checksums(cfg: DictConfig, config: Any) -> Any:
    """`action=checksums` (maintainers): fetch the releases and record every file in their checksum manifests."""
    from testtask.data.fetch import fetch_from_config

    return fetch_from_config(config.data, _with_uses(selected_papers(config)), write_checksums=True)


def _lm_tasks(cfg: DictConfig, config: Any) -> list[str]:
    """`action=lm-tasks`: print our lm-eval task, group and tag names as lm-eval indexes them."""
    from testtask.lm import evaluation

    names = evaluation.our_task_names(
        evaluation.task_manager(include_defaults=config.lm_tasks.include_defaults)
    )
    for name in names:
        print(name)
    return names


def _assets(cfg: DictConfig, config: Any) -> Any:
    """`action=assets` (`make assets`): the GGUF checkpoints of `assets.dequantise` saved as float32 ones."""
    from testtask.assets import prepare

    return prepare(config.assets)


def _report(cfg: DictConfig, config: Any) -> Any:
    """`action=report` (`make report`): the claims ledgers evaluated on the sidecars built (testtask.report)."""
    from testtask.report.main import run as report

    return report(cfg, Builds())


def _assess_model(cfg: DictConfig, config: Any) -> Any:
    """`action=assess-model` (`make assess-model`): one page of verdicts per user model (testtask.assess)."""
    from testtask.assess.page import run as assess

    return assess(cfg, make_context)


@dataclasses.dataclass(frozen=True)
class Builds:
    """What the report needs of the pipeline, which it never imports."""

    def typed(self, cfg: DictConfig) -> Any:
        return typed(cfg)

    def preset(self, cfg: DictConfig, protocol: str, own_files: bool = True) -> DictConfig:
        """`cfg` under preset `protocol`; without the user's own files where `own_files` is false (a paper's
        claims are about the paper's settings)."""
        config = typed(cfg)
        if str(config.protocol) == protocol and bool(config.own_files) == own_files:
            return cfg
        return compose_preset(cfg, protocol, own_files and bool(config.own_files))

    def variant(self, cfg: DictConfig, paper: str) -> Variant:
        return variant(typed(cfg), paper, overrides_of(cfg))

    def overrides(self, cfg: DictConfig) -> list[str]:
        return overrides_of(cfg)

    def build(self, cfg: DictConfig, kind: str, numbers: list[Key] | None) -> Any:
        return build(cfg, kind, numbers)


# The actions every paper shares; a paper adds its own through PAPER.actions (fn(context, typed config)).
CORE_ACTIONS: dict[str, Any] = {
    "data": _fetch,
    "checksums": _checksums,
    "figure": lambda cfg, config: build(cfg, "figure", [output_key(config.figure)]),
    "table": lambda cfg, config: build(cfg, "table", [output_key(config.table)]),
    "figures": lambda cfg, config: build(cfg, "figure", None),
    "tables": lambda cfg, config: build(cfg, "table", None),
    "lm-tasks": _lm_tasks,
    "assets": _assets,
    "report": _report,
    "assess-model": _assess_model,
}


def paper_actions(config: Any) -> dict[str, tuple[Paper, Any]]:
    return {
        name: (plugin, fn)
        for plugin in map(papers.get, selected_papers(config))
        for name, fn in plugin.actions.items()
    }


def _run(cfg: DictConfig, config: Any) -> Any:
    action = str(config.action)
    if action in CORE_ACTIONS:
        return CORE_ACTIONS[action](cfg, config)
    extra = paper_actions(config)
    if action in extra:  # a paper's own action, e.g. pretrain-on-test's `bench`
        plugin, fn = extra[action]
        return fn(make_context(cfg, plugin.key), config)
    known = [*CORE_ACTIONS, *sorted(extra)]
    raise UsageError(f"unknown action {action!r} for paper={config.paper}; choose {', '.join(known)}")


# --- composing -----------------------------------------------------------------------------------------------


def compose(overrides: Sequence[str] | None = None, config_name: str = "config") -> DictConfig:
    """The config as the `testtask` command (or the runner of `config_name`) would see it, not yet typed, with
    Hydra's record of `overrides` in the `hydra` node; inside a running Hydra app its search path is used."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    wanted = list(overrides or [])
    if GlobalHydra.instance().is_initialized():
        cfg = hydra_compose(config_name=config_name, overrides=wanted, return_hydra_config=True)
    else:
        with initialize_config_dir(config_dir=str(Path(conf_dir())), version_base=None):
            cfg = hydra_compose(config_name=config_name, overrides=wanted, return_hydra_config=True)
    OmegaConf.set_struct(cfg, False)
    cfg[HYDRA] = {"overrides": {"task": list(cfg.hydra.overrides.task)}}
    if config_name == "config":
        with_user_files(cfg)
    return cfg


# Hydra flags after which the command composes another config, or none: the precheck leaves those to Hydra.
_OTHER_CONFIG = ("--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd", "--help", "-h")
_OTHER_CONFIG += ("--hydra-help", "--version", "--info", "-i", "--shell-completion", "-sc")


def checked_overrides(args: Sequence[str]) -> list[str] | None:
    """The overrides of the config that a command line's precheck composes: a sweep (`a=1,2`, launched with
    -m or by an experiment's sweeper) by its first value, Hydra's own settings (`hydra.launcher.partition=...`,
    `hydra/launcher=slurm`) and flags (-m, --cfg job) left out, as they change no job's config; None when a flag
    picks another config or asks for help (Hydra answers those)."""
    if any(a.partition("=")[0] in _OTHER_CONFIG for a in args):
        return None
    out = []
    for arg in args:
        if (
            arg.startswith("-")
            or "=" not in arg
            or arg.lstrip("+~").startswith(("hydra.", "hydra/", "hydra="))
        ):
            continue
        out.append(_first_value(arg) if _sweeps(arg) else arg)
    return out


def _first_value(arg: str) -> str:
    """`key=<first value>` of sweep override `arg` (its first job)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    override = OverridesParser.create().parse_override(arg)
    first = next(iter(override.sweep_iterator()))
    prefix = arg[: len(arg) - len(arg.lstrip("+~"))]
    return f"{prefix}{override.key_or_group}={first}"


def _sweeps(arg: str) -> bool:
    """Whether override `arg` sweeps (`a=1,2`, not `a=[1,2]`), as Hydra's parser says; one that does not parse
    does not (the precheck names it)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_override(arg).is_sweep_override()
    except HydraException:
        return False


def compose_checked(
    overrides: Sequence[str], config_name: str = "config"
) -> tuple[DictConfig | None, list[str]]:
    """(`compose`, or None; config-error lines for what Hydra refuses): an unknown key is composed as `+key=value`
    so that the schema names it with the keys there are; an unknown group option names the options."""
    from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException

    wanted = list(overrides)
    lines: list[str] = []
    for _ in range(len(wanted) + 1):
        try:
            return compose(wanted, config_name), lines
        except MissingConfigException as err:
            group, option, choices = _missing_option(str(err.missing_cfg_file or ""), wanted, err.options)
            lines.append(f"{group} = {option!r}: expected one of {', '.join(choices)}")
            wanted = [o for o in wanted if not re.match(rf"^[+~]*{re.escape(group)}=", o)]
        except ConfigCompositionException as err:
            match = re.search(r"Could not override '([^']+)'", str(err))
            if not match:
                lines.append(str(err).splitlines()[0])
                return None, lines
            key = match.group(1)
            wanted = [f"+{o}" if o.split("=", 1)[0] == key else o for o in wanted]
        except OverrideParseException as err:
            lines.append(f"an override does not parse: {str(err).splitlines()[0]}")
            return None, lines
    return None, lines


def _missing_option(
    missing: str, overrides: Sequence[str], options: Sequence[str] | None
) -> tuple[str, str, list[str]]:
    """(group, option, its choices) of a config group option that does not exist: `missing` is its path
    (`experiment/pretrain_on_test/papr`); a nested option (`experiment=pretrain_on_test/papr`) is named as on the
    command line, with the files of its folder as the choices."""
    for override in overrides:
        key, _, value = override.lstrip("+~").partition("=")
        if missing == f"{key}/{value}" and "/" in value:
            folder = Path(conf_dir()) / key / value.rpartition("/")[0]
            found = sorted(
                p.relative_to(Path(conf_dir()) / key).with_suffix("").as_posix()
                for p in folder.glob("*.yaml")
            )
            return key, value, found
    group, _, option = missing.rpartition("/")
    return group, option, list(options or [])


def precheck(args: Sequence[str], config_name: str, checker: Callable[[DictConfig], Any]) -> None:
    """Every bad, missing or unknown key of a command line's config (`checker` types it), at once, one line each
    (ConfigError), before Hydra sets up its run or anything is read."""
    cfg, lines = compose_checked(args, config_name)
    if cfg is not None:
        try:
            checker(cfg)
        except schema.ConfigError as err:
            lines += err.violations
    if lines:
        raise schema.ConfigError(lines)


def with_user_files(cfg: DictConfig) -> DictConfig:
    """`cfg` with the user's own files merged in (in place; none with own_files=false), once where it is composed,
    before it is typed."""
    from testtask import user_files

    if cfg.get("own_files", True):
        user_files.apply(cfg, user_files.ANALYSIS)
    return cfg
