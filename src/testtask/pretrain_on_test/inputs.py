"""The raw results of pretrain-on-test: a collection's accuracies, loaded and validated (`accuracies.load`).

A collection that is not there is InputsUnavailable, so the pipeline skips what needs it. With
source=published+results it is read from the release and the run laid over it, which may only add files.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.errors import InputError
from testtask.pretrain_on_test import accuracies

# How figures and tables name the authors' LM types; any other LM type (an own one) is named as its folder is.
LM_LABELS = {
    "bert": "BERT",
    "gpt2": "GPT-2",
    "mistral-qlora-zero-shot": "Mistral-7B QLoRA",
    "mistral-qlora-zero-shot-packing": "Mistral-7B QLoRA",
}
PAPER_M = (50, 100)  # the few-shot m of the paper (Figure 3, Table 1); the offline mirror holds m = 50 only

# What the sidecars' numbers are in (their `units`): the figures draw accuracy points, the JSON keeps fractions.
ACCURACY_DIFFERENCE = "fraction (0.01 = 1 percentage point); the figure shows percentage points"
ACCURACY = "fraction (0.01 = 1 percentage point); the figure shows percentage points"
LOG_ODDS = "log-odds (the scale of the §6.1 model's coefficients)"
SHARE = "fraction (0.01 = 1%)"


def missing_paper_m(present: Iterable[int]) -> list[int]:
    """The paper's few-shot m values not among `present`."""
    have = {int(m) for m in present}
    return [m for m in PAPER_M if m not in have]


def collection_names(ctx: Context) -> dict[str, str]:
    """Collection key (few_shot, ...) → folder name, from the settings."""
    return ctx.settings.collections.names()


class RunLayoutError(InputError, ValueError):
    """A run laid over the release (source=published+results) holds none of the paper's collection folders."""


def _check_run(ctx: Context) -> None:
    """RunLayoutError when the run laid over the release has no collection folder at all: its files would be
    passed over in silence (e.g. written straight into the run as m50/n50/...)."""
    run = ctx.overlay_root
    if run is None:
        return
    known = [*collection_names(ctx).values(), ctx.settings.contamination.collection]
    if not any((run / name).is_dir() for name in known):
        raise RunLayoutError(
            f"source=published+results: the run {run} holds none of pretrain-on-test's collection folders "
            f"({', '.join(known)}); put its files at {run}/<collection>/m<m>/n<n>/<lm_type>/<dataset>/accuracies.csv"
        )


def collection_folders(ctx: Context, name: str) -> list[Path]:
    """The folders of collection `name` under the context's roots that exist (the release's first, then the run's
    laid over it), or InputsUnavailable when there is none."""
    _check_run(ctx)
    folders = [root / name for root in ctx.roots()]
    present = [folder for folder in folders if folder.is_dir()]
    if not present:
        where = " nor ".join(str(folder) for folder in folders)
        raise InputsUnavailable(f"{where} does not exist (source={ctx.source})")
    return present


def load_collection(ctx: Context, key: str, m: int | None = None, n: int | None = None) -> pd.DataFrame:
    """All accuracies of collection `key` (optionally one m, n), or InputsUnavailable when absent; with
    source=published+results the release's and the run's files together."""
    name = collection_names(ctx)[key]
    folders = collection_folders(ctx, name)
    try:
        data = accuracies.load(folders, m=m, n=n)
    except FileNotFoundError as err:
        where = " and ".join(str(folder) for folder in folders)
        raise InputsUnavailable(f"no accuracies for m={m}, n={n} under {where}: {err}") from err
    # Loading from the collection's own folder leaves the collection column empty.
    data["collection"] = name
    return data


def present_collections(ctx: Context) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Data of every configured collection that exists, and the keys of those that do not."""
    present, absent = {}, []
    for key in collection_names(ctx):
        try:
            present[key] = load_collection(ctx, key)
        except InputsUnavailable:
            absent.append(key)
    return present, absent


def lm_label(lm_type: str) -> str:
    """How tables and legends name an LM type (BERT, GPT-2; others as they are)."""
    return LM_LABELS.get(lm_type, lm_type)


def lm_names(lm_types: Iterable[str]) -> str:
    """The LM types as a title names them, in the order given, each label once: "BERT", "BERT and GPT-2",
    "BERT, GPT-2 and student-lm"."""
    labels = list(dict.fromkeys(lm_label(str(lm)) for lm in lm_types))
    if len(labels) <= 1:
        return "".join(labels)
    return f"{', '.join(labels[:-1])} and {labels[-1]}"
