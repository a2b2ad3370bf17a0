"""§9.2 table (`make table-contamination`): the contamination test's p-value per pretraining arm and the cell's
evaluation bias, from our `task=contamination` runs' contamination.json files, with the paper's numbers beside them.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pandas as pd

from testtask.context import Context, InputsUnavailable
from testtask.errors import InputError
from testtask.io import atomic_save, atomic_write_text
from testtask.outputs import save_numbers
from testtask.pretrain_on_test.inputs import collection_folders
from testtask.sources import OverlayConflict

log = logging.getLogger(__name__)

ARMS = ("extra", "test")
NAME = "table-contamination"


class ContaminationInputError(InputError, ValueError):
    """A contamination.json that cannot be read (the message names the file and the field)."""


def _number(path: Path, record: dict[str, Any], field: str, *, nan_ok: bool = False) -> float:
    node: Any = record
    for key in field.split("."):
        if not isinstance(node, dict) or key not in node:
            raise ContaminationInputError(f"{path}: field {field!r} is missing")
        node = node[key]
    if isinstance(node, bool) or not isinstance(node, int | float):
        if nan_ok and node is None:  # json writes NaN as null via to_jsonable
            return math.nan
        raise ContaminationInputError(f"{path}: field {field!r} = {node!r} is not a number")
    value = float(node)
    if math.isnan(value) and nan_ok:
        return value
    if not 0.0 <= value <= 1.0:
        raise ContaminationInputError(f"{path}: field {field!r} = {value!r} is outside [0, 1]")
    return value


def load_runs(root: Path) -> list[dict[str, Any]]:
    """One row per (cell, arm) of every finished contamination.json under `root`."""
    rows = []
    for path in sorted(root.glob("m*/n*/*/*/contamination.json")):
        try:
            record = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise ContaminationInputError(f"{path}: not valid JSON ({error})") from error
        if record.get("complete") is not True:
            raise ContaminationInputError(
                f"{path}: field 'complete' is not true (an unfinished run; rerun the runner to finish it)"
            )
        for key in ("dataset", "lm_type", "m", "n"):
            if key not in record:
                raise ContaminationInputError(f"{path}: field {key!r} is missing")
        accuracy = {a: _number(path, record, f"accuracies.{a}") for a in ("base", *ARMS)}
        for arm in ARMS:
            rows.append(
                {
                    "source": "ours",
                    "dataset": str(record["dataset"]),
                    "m": int(record["m"]),
                    "n": int(record["n"]),
                    "lm_type": str(record["lm_type"]),
                    "arm": arm,
                    "p_value": _number(path, record, f"arms.{arm}.p_value", nan_ok=True),
                    "shards": int(record["arms"][arm].get("shards", 0)),
                    "mean_difference": float(record["arms"][arm].get("mean_difference", math.nan)),
                    "acc_base": accuracy["base"],
                    "acc_extra": accuracy["extra"],
                    "acc_test": accuracy["test"],
                    "bias": accuracy["test"] - accuracy["extra"],
                    "seconds": float(record.get("seconds", math.nan)),
                    "file": str(path.relative_to(root)),
                }
            )
    return rows


def runs_of(folders: list[Path]) -> list[dict[str, Any]]:
    """`load_runs` of each folder; one cell's file in two folders is an OverlayConflict naming both."""
    rows, seen = [], {}
    for folder in folders:
        mine = load_runs(folder)
        for cell in dict.fromkeys(row["file"] for row in mine):
            if cell in seen:
                raise OverlayConflict(f"contamination.json {cell}", seen[cell] / cell, folder / cell)
            seen[cell] = folder
        rows += mine
    return rows


def paper_rows(paper: Any) -> list[dict[str, Any]]:
    """The paper's two p-values (§9.2) with the tested cell's accuracies from the authors' release."""
    return [
        {
            "source": "paper",
            "dataset": paper.dataset,
            "n": paper.n,
            "lm_type": paper.lm_type,
            "arm": arm,
            "p_value": paper.p_extra if arm == "extra" else paper.p_test,
            "acc_extra": paper.acc_extra,
            "acc_test": paper.acc_test,
            "bias": paper.acc_test - paper.acc_extra,
        }
        for arm in ARMS
    ]


def markdown(frame: pd.DataFrame, alpha: float) -> str:
    shown = frame.assign(
        p_value=[f"{p:.3g}" if not math.isnan(p) else "n/a" for p in frame["p_value"]],
        flagged=["yes" if f else "no" for f in frame["flagged"]],
        bias=[f"{100 * b:+.1f}%" for b in frame["bias"]],
        acc_extra=[f"{a:.3f}" for a in frame["acc_extra"]],
        acc_test=[f"{a:.3f}" for a in frame["acc_test"]],
    )[["source", "dataset", "n", "lm_type", "arm", "p_value", "flagged", "acc_extra", "acc_test", "bias"]]
    return "\n".join(
        [
            "§9.2: p-value of Oren et al.'s sharded likelihood comparison test on test's text-label pairs, per "
            f"pretraining arm (unlabeled extra or test text); flagged = p < {alpha:g}. Bias = acc_test − acc_extra "
            "of the tested cell (one subsample).",
            "",
            shown.to_markdown(index=False),
            "",
        ]
    )


def table_contamination(ctx: Context) -> dict:
    """§9.2 → table-contamination.{csv,md,json}."""
    settings = ctx.settings.contamination
    folders = collection_folders(ctx, settings.collection)
    ours = runs_of(folders)
    if not ours:
        where = " or ".join(str(folder) for folder in folders)
        raise InputsUnavailable(
            f"no contamination.json under {where} (run experiment=pretrain_on_test/contamination)"
        )
    frame = pd.DataFrame(ours + paper_rows(settings.paper))
    frame["flagged"] = frame["p_value"] < settings.alpha
    atomic_save(ctx.out_dir / f"{NAME}.csv", lambda p: frame.to_csv(p, index=False))
    text = markdown(frame, settings.alpha)
    atomic_write_text(ctx.out_dir / f"{NAME}.md", text)
    log.info("%s\n%s", NAME, text)  # the command shows the table, not only where it went
    numbers = {
        "test": "sharded likelihood comparison test (Oren et al. 2024): one-sided t-test over shards of "
        "log p(canonical order) - mean log p(random orders)",
        "collection": settings.collection,
        "alpha": settings.alpha,
        "units": "p_value: probability; acc_*, bias (acc_test - acc_extra): accuracy, fraction",
        "rows": frame.to_dict(orient="records"),
        "paper": {
            "section": "§9.2",
            "p_extra": settings.paper.p_extra,
            "p_test": settings.paper.p_test,
            "cell_accuracies_from": "kddubey/pretrain-on-test@80fd183:analysis/contamination/saved_models_in_hf",
        },
    }
    save_numbers(ctx.out_dir / f"{NAME}.json", numbers)
    return numbers
