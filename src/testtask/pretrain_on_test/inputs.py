"""The raw results of pretrain-on-test: a collection's accuracies, loaded and validated (`accuracies.load`).

Collections are the folders of the authors' release (`settings.collections`: few_shot, overtrained, zero_shot,
zero_shot_packing); a collection that is not there is InputsUnavailable, so the pipeline skips what needs it.
"""

from __future__ import annotations

import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.pretrain_on_test import accuracies

LM_LABELS = {"bert": "BERT", "gpt2": "GPT-2"}


def collection_names(ctx: Context) -> dict[str, str]:
    """Collection key (few_shot, ...) → folder name, from the settings."""
    return ctx.settings.collections.names()


def load_collection(ctx: Context, key: str, m: int | None = None, n: int | None = None) -> pd.DataFrame:
    """All accuracies of collection `key` (optionally one m, n), or InputsUnavailable when absent."""
    name = collection_names(ctx)[key]
    root = ctx.collection_root(name)
    try:
        data = accuracies.load(root, m=m, n=n)
    except FileNotFoundError as err:
        raise InputsUnavailable(f"no accuracies for m={m}, n={n} under {root}: {err}") from err
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
