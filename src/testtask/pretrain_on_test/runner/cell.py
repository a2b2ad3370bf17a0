"""Run one experiment cell (dataset × m × n × LM type) repetition by repetition, resumably."""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from testtask import schema
from testtask.errors import InputError
from testtask.io import atomic_write_text
from testtask.lm.hf import pick_device
from testtask.paths import resolve
from testtask.pretrain_on_test.runner import subsample as subsampling
from testtask.pretrain_on_test.runner.datasets import load_dataset
from testtask.pretrain_on_test.runner.estimate import estimate
from testtask.pretrain_on_test.runner.settings import (
    DatasetSpec,
    FewShotLm,
    Settings,
    ZeroShotLm,
    effective_lm,
)
from testtask.pretrain_on_test.runner.store import CellStore, cell_dir, majority_share
from testtask.provenance import code_record

log = logging.getLogger("testtask.runner")


class ResumeError(InputError, RuntimeError):
    pass


def make_protocol(lm: FewShotLm | ZeroShotLm, spec: DatasetSpec, device: str, show_progress: bool) -> Any:
    if isinstance(lm, FewShotLm):
        from testtask.pretrain_on_test.runner.fewshot import FewShot

        return FewShot(lm, num_classes=spec.num_classes, device=device, show_progress=show_progress)
    from testtask.pretrain_on_test.runner.zeroshot import ZeroShot

    return ZeroShot(lm, spec, device=device, show_progress=show_progress)


def identity(settings: Settings, config: DictConfig) -> dict[str, Any]:
    """What must not change between a run and its resumption (cell.yaml): the cell, the LM's settings for its
    dataset and the dataset's spec as the composed config `config` writes them."""
    return {
        "dataset": settings.dataset,
        "m": settings.m,
        "n": settings.n,
        "seed": settings.seed,
        "stratification": settings.stratification.value,
        "lm": effective_lm(config.lm, settings.dataset),
        "dataset_spec": OmegaConf.to_container(config.datasets[settings.dataset], resolve=True),
    }


def baseline_columns(labels: np.ndarray, test: np.ndarray, num_classes: int) -> dict[str, float]:
    """The authors' `majority` (majority-class share of test), `num_classes` and `majority_all` (of all data)."""
    return {
        "majority": majority_share(labels[test]),
        "num_classes": num_classes,
        "majority_all": majority_share(labels),
    }


def _check_resume(store: CellStore, identity: dict[str, Any]) -> None:
    """ResumeError where the cell holds repetitions run with settings other than `identity`."""
    path = store.directory / "cell.yaml"
    if path.exists():
        before = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
        if before != identity and store.done() > 0:
            changed = ", ".join(
                f"{key} ({then!r} then, {now!r} now)"
                for key, (then, now) in schema.differences(before, identity).items()
            )
            raise ResumeError(
                f"{store.directory} holds {store.done()} repetitions run with other settings: {changed}; "
                "move it away or restore the old settings to resume"
            )


def _record_identity(store: CellStore, identity: dict[str, Any]) -> None:
    """cell.yaml, written with the cell's first results: a run refused or failed before them leaves no folder."""
    atomic_write_text(store.directory / "cell.yaml", OmegaConf.to_yaml(OmegaConf.create(identity)))


def data_digest(data: pd.DataFrame) -> str:
    """SHA-256 of a data set's texts and labels in order: a repetition records it, and a resumed cell whose data
    changed (an own CSV edited, labels or not) is refused instead of pairing rows of two data sets."""
    return hashlib.sha256(pd.util.hash_pandas_object(data, index=False).to_numpy().tobytes()).hexdigest()


def run_cell(settings: Settings, config: DictConfig) -> Path:
    """Compute the missing repetitions of one cell; returns the cell's `accuracies.csv`. `config`: the composed
    config `settings` were read from, which cell.yaml records."""
    from tqdm.auto import tqdm

    spec = settings.spec
    m, n, seed = settings.m, settings.n, settings.seed
    repetitions = settings.repetitions_of_cell()
    lm = settings.lm_for_task()
    store = CellStore(cell_dir(resolve(settings.results_dir), m, n, lm.lm_type, spec.key))
    settings_record = identity(settings, config)
    _check_resume(store, settings_record)
    done = store.done()
    if done >= repetitions:
        log.info("%s: all %d repetitions done, nothing to run", store.csv, repetitions)
        return store.csv
    data = load_dataset(spec, settings.assets_dir)
    labels = data["label"].to_numpy()

    def draw(k: int) -> subsampling.Subsample:
        return subsampling.draw(
            labels, m, n, seed=seed, dataset=spec.key, repetition=k, stratification=settings.stratification
        )

    digest = data_digest(data)
    records = store.log_records()
    if records:  # the same seed and data must redraw the same subsample, else the rows would not pair
        last = records[-1]
        if (
            draw(int(last["repetition"])).as_dict() != last.get("subsample")
            or last.get("data_sha256", digest) != digest
        ):
            raise ResumeError(
                f"{store.log}: the dataset {spec.key} changed (its texts or labels) since repetition "
                f"{last['repetition']} was drawn; move the cell away or restore the data to resume"
            )
    # the checkout's commit, per repetition (cell.yaml, the resume identity, leaves it out)
    code = code_record()
    device = pick_device(settings.device)
    protocol = make_protocol(lm, spec, device, settings.show_step_progress)
    log.info("%s: %d/%d repetitions done; running on %s", store.directory, done, repetitions, device)
    # Said before the first repetition: at the paper's 100 repetitions a CPU cell takes half an hour or more.
    guess = estimate(resolve(settings.results_dir), lm, device, m, n)
    log.info("%s", guess.message(spec.key, repetitions - done, device))
    bar = tqdm(
        range(done, repetitions),
        initial=done,
        total=repetitions,
        desc=f"{lm.lm_type}/{spec.key} m{m} n{n}",
    )
    for k in bar:
        sub = draw(k)
        start = time.perf_counter()
        acc, record = protocol.run(data, sub, subsampling.training_seed(seed, k))
        seconds = time.perf_counter() - start
        row = {**acc, **baseline_columns(labels, sub.test, spec.num_classes)}
        meta = {
            "seconds": seconds,
            "device": device,
            "subsample": sub.as_dict(),
            "data_sha256": digest,
            "code": code,
        }
        if k == done:
            _record_identity(store, settings_record)
        store.append(k, row, {**meta, **record})
        bar.set_postfix(
            base=f"{acc['base']:.2f}",
            extra=f"{acc['extra']:.2f}",
            test=f"{acc['test']:.2f}",
            s=f"{seconds:.0f}",
        )
    log.info(
        "%s: %d repetitions, mean seconds %.1f",
        store.csv,
        repetitions,
        np.mean([r["seconds"] for r in store.log_records()]),
    )
    return store.csv
