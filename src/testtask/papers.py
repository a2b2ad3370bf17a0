"""The paper plug-in: each paper package exports one `PAPER` (in its `registry.py`), through which the pipeline,
the protocol tables and the command line dispatch everything; nothing is hard-wired to one paper."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from testtask.context import Context

Key = int | str  # outputs are numbered as in the paper; our additions (e.g. `mini`, `loo`) are named
Builder = Callable[[Context], dict]
Action = Callable[[Context, Any], Any]  # (the paper's context, the whole config) -> result


def resolve(target: str) -> Any:
    """The object a "module:attribute" string names, imported now."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


class Lazy:
    """A function named by "module:attribute", imported on its first call: reading a registry (to check a config)
    imports no figure module, so a config error is reported before PyMC or torch loads."""

    def __init__(self, target: str) -> None:
        self.target = target

    @cached_property
    def function(self) -> Callable[..., Any]:
        return resolve(self.target)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Lazy({self.target!r})"


def lazy_in(package: str) -> Callable[[str], Lazy]:
    """`_("module:function")` for the builders of `package`: each a `Lazy`."""
    return lambda target: Lazy(f"{package}.{target}")


class LazyMapping(Mapping[str, Any]):
    """A mapping named by "module:attribute" (e.g. a report hook's FUNCTIONS), imported on first use."""

    def __init__(self, target: str) -> None:
        self.target = target

    @cached_property
    def mapping(self) -> Mapping[str, Any]:
        return resolve(self.target)

    def __getitem__(self, key: str) -> Any:
        return self.mapping[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.mapping)

    def __len__(self) -> int:
        return len(self.mapping)

    def __repr__(self) -> str:
        return f"LazyMapping({self.target!r})"


@dataclass(frozen=True)
class Runner:
    """A paper's experiment runner: the Hydra config it reads, its schema and the function that runs one job."""

    config_name: str  # conf/<config_name>.yaml
    run: str  # "module:function", imported when the runner starts (keeps torch out of analysis imports)
    settings: type  # the schema of that config (a testtask.schema.section); the job reads one of it
    # The user's own files merged into the composed config before it is typed: file -> "module:function"
    # (testtask.user_files.apply), e.g. own datasets joining the registry.
    user_files: Mapping[str, str] = field(default_factory=dict)
    # Extra entry points of the same process, by first command-line argument (e.g. the `--train-job` worker that a
    # multi-process launcher starts): "module:function" taking the remaining arguments.
    subcommands: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Paper:
    key: str  # e.g. "pretrain-on-test": the `paper=` value and the folder name under data/ and figures/
    config_key: str  # the config group with this paper's analysis settings (conf/<config_key>/analysis.yaml)
    settings: type  # the schema of that section (a testtask.schema.section); ctx.settings is one of it
    figures: Mapping[Key, Builder]
    tables: Mapping[Key, Builder]
    actions: Mapping[str, Action] = field(default_factory=dict)  # `testtask action=<name> paper=<key>`
    # The reproduction report's hook: the functions its claims ledger (conf/claims/<key>.yaml) names in
    # `ours: {function: <name>}`, each given the paper's loaded sidecars (a mapping file name -> JSON / CSV rows).
    report: Mapping[str, Callable[[Mapping[str, Any]], Any]] | None = None
    runner: Runner | None = None
    uses: tuple[str, ...] = ()  # other papers whose releases this paper's analyses read (Context.related)
    # Its loaders read source=published+results (a run over the release; testtask.sources).
    overlay: bool = False
    # Its protocols ("analysis", "runner") with a `protocol=paper_text` preset and a protocol table
    # (docs/protocols/<key>-analysis.md, <key>.md); a paper without released code has one protocol, its text.
    paper_text: tuple[str, ...] = ()

    def outputs(self, kind: str) -> Mapping[Key, Builder]:
        if kind == "figure":
            return self.figures
        if kind == "table":
            return self.tables
        raise ValueError(f"kind must be figure or table, got {kind!r}")


# Paper key -> module that exports PAPER. Adding a paper is one line here (and its package).
MODULES: dict[str, str] = {
    "pretrain-on-test": "testtask.pretrain_on_test.registry",
    "training-on-the-test-task": "testtask.training_on_the_test_task.registry",
    "train-before-test": "testtask.train_before_test.registry",
    "downstream-predictability": "testtask.downstream_predictability.registry",
    "proxy-tasks": "testtask.proxy_tasks.registry",
}


def unknown(key: Any, also: str = "") -> str:
    """The message for a paper key that is not registered: the nearest known key first (the config's section
    names spell papers with underscores, `paper=` with hyphens), then every known one."""
    near = difflib.get_close_matches(str(key).replace("_", "-").lower(), MODULES, n=1, cutoff=0.6)
    hint = f"did you mean paper={near[0]}? " if near else ""
    return f"unknown paper {key!r}; {hint}known: {', '.join(MODULES)}{also}"


def get(key: str) -> Paper:
    """The plug-in of paper `key` (KeyError naming the known papers when there is none)."""
    if key not in MODULES:
        raise KeyError(unknown(key))
    paper = importlib.import_module(MODULES[key]).PAPER
    if paper.key != key:
        raise RuntimeError(f"{MODULES[key]}.PAPER has key {paper.key!r}, registered as {key!r}")
    return paper


def keys() -> list[str]:
    return list(MODULES)
