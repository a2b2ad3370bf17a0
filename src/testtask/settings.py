"""The schema of the top-level config (conf/config.yaml and its groups): the keys every `testtask` run has; each
paper's own section has its schema in `<paper>/settings.py`, joined in by `pipeline.config_schema`."""

from __future__ import annotations

from typing import Annotated

from testtask.schema import (
    Choice,
    Flag,
    Name,
    NonNegativeInt,
    PositiveInt,
    PositiveNumber,
    Probability,
    Problem,
    Text,
    non_empty,
    require,
    section,
)


class Source(Choice):
    """What an analysis reads: the authors' release, our own runs, or our run laid over the release."""

    published = "published"
    results = "results"
    overlay = "published+results"  # our run read on top of the release (testtask.sources)


class Protocol(Choice):
    """A protocol preset, of analyses and runners alike: the authors' released code, or the paper's text."""

    authors = "authors"
    paper_text = "paper_text"


class SamplerName(Choice):
    nutpie = "nutpie"
    pymc = "pymc"
    numpyro = "numpyro"


class ChainMethod(Choice):
    """numpyro's `MCMC(chain_method=...)`."""

    parallel = "parallel"
    sequential = "sequential"
    vectorized = "vectorized"


class LogLevel(Choice):
    CRITICAL = "CRITICAL"
    FATAL = "FATAL"
    ERROR = "ERROR"
    WARN = "WARN"
    WARNING = "WARNING"
    INFO = "INFO"
    DEBUG = "DEBUG"
    NOTSET = "NOTSET"


OutputKey = Annotated[int | str, Text("a number or a name")]


@section
class Sampler:
    """The MCMC sampler every posterior fit uses (conf/sampler/<name>.yaml)."""

    name: SamplerName
    draws: PositiveInt
    tune: NonNegativeInt
    chains: PositiveInt
    cores: PositiveInt
    target_accept: Probability
    progressbar: Flag
    chain_method: ChainMethod | None  # numpyro only


@section
class Diagnostics:
    """Every MCMC fit is checked by these (testtask/diagnostics.py)."""

    max_r_hat: PositiveNumber
    min_ess_bulk: PositiveNumber
    max_divergences: NonNegativeInt


@section
class Assess:
    """`make assess-model`: a user's model's verdict beside the published cohort."""

    model_file: Name | None
    models: list[Name] | None
    level: Probability


@section
class LmTasks:
    include_defaults: Flag


@section
class Dequantise:
    wheel: Name
    gguf_file: Name
    out: Name


@section
class Assets:
    dir: Name
    dequantise: dict[str, Dequantise]


@section
class Release:
    """One paper's published raw results: where `make data` gets them (pinned)."""

    repo: Name
    commit: Annotated[str, Text("a 40-character commit hash")]
    subdir: Name
    mirror_subdir: Name
    dest_subdir: Name | None
    include: non_empty(Name)
    json_drop_keys: list[Name]

    def __post_init__(self) -> None:
        hexdigits = set("0123456789abcdef")
        ok = len(self.commit) == 40 and set(self.commit) <= hexdigits
        require(None if ok else Problem("commit", self.commit, "a 40-character commit hash"))


@section
class Data:
    dest: Name
    mirror_env: Name
    verify: Flag
    sources: dict[str, Release]


@section
class Report:
    out_dir: Name
    build_missing: Flag
    protocols: non_empty(Protocol)  # the presets every claim is judged under
    require_categories: Flag


@section
class Top:
    """The top-level keys of the `testtask` config; each paper adds its section (pipeline.schema)."""

    action: Name
    figure: OutputKey
    table: OutputKey
    paper: Name
    source: Source
    results_dir: Name
    results_run: Name | None
    figures_dir: Name
    cache_dir: Name | None
    user_dir: Name
    own_files: bool
    seed: NonNegativeInt
    log_level: LogLevel
    protocol: Protocol
    diagnostics: Diagnostics
    assess: Assess
    lm_tasks: LmTasks
    assets: Assets
    data: Data
    sampler: Sampler
    report: Report

    def __post_init__(self) -> None:
        run = self.results_run
        folder = run is None or ("/" not in run and run not in (".", ".."))
        require(None if folder else Problem("results_run", run, "a folder name (no '/')"))


# Keys that say where things are, not what is computed: they never make a build a variant of its preset.
LOCATIONS = (
    "action",
    "figure",
    "table",
    "paper",
    "source",
    "results_dir",
    "results_run",
    "figures_dir",
    "cache_dir",
    "user_dir",
    "own_files",
    "log_level",
    "protocol",
    "assess",
    "lm_tasks",
    "assets",
    "data",
    "report",
)
