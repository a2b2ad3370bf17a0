"""Run one experiment cell (dataset × m × n × LM type) repetition by repetition, resumably."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from testtask.errors import InputError
from testtask.io import atomic_write_text
from testtask.lm.hf import pick_device
from testtask.paths import resolve
from testtask.pretrain_on_test.runner import subsample as subsampling
from testtask.pretrain_on_test.runner.datasets import DatasetSpec, load_dataset, registry
from testtask.pretrain_on_test.runner.estimate import estimate
from testtask.pretrain_on_test.runner.settings import effective_lm
from testtask.pretrain_on_test.runner.store import CellStore, cell_dir, majority_share

log = logging.getLogger("testtask.runner")


class ResumeError(InputError, RuntimeError):
    pass


def make_protocol(lm: Mapping[str, Any], spec: DatasetSpec, device: str, show_progress: bool) -> Any:
    protocol = str(lm["protocol"])
    if protocol == "few_shot":
        from testtask.pretrain_on_test.runner.fewshot import FewShot

        return FewShot(lm, num_classes=spec.num_classes, device=device, show_progress=show_progress)
    if protocol == "zero_shot":
        from testtask.pretrain_on_test.runner.zeroshot import ZeroShot

        return ZeroShot(lm, spec, device=device, show_progress=show_progress)
    raise ValueError(f"lm.protocol must be few_shot or zero_shot, got {protocol!r}")


def _identity(cfg: DictConfig, lm: Mapping[str, Any]) -> dict[str, Any]:
    """What must not change between a run and its resumption (`lm`: the effective settings for this dataset)."""
    return {
        "dataset": cfg.dataset,
        "m": int(cfg.m),
        "n": int(cfg.n),
        "seed": int(cfg.seed),
        "stratification": str(cfg.stratification),
        "lm": dict(lm),
        "dataset_spec": OmegaConf.to_container(cfg.datasets[cfg.dataset], resolve=True),
    }


def baseline_columns(labels: np.ndarray, test: np.ndarray, num_classes: int) -> dict[str, float]:
    """The authors' `majority` (majority-class share of test), `num_classes` and `majority_all` (of all data)."""
    return {
        "majority": majority_share(labels[test]),
        "num_classes": num_classes,
        "majority_all": majority_share(labels),
    }


def _check_resume(store: CellStore, identity: dict[str, Any]) -> None:
    path = store.directory / "cell.yaml"
    if not path.exists():
        atomic_write_text(path, OmegaConf.to_yaml(OmegaConf.create(identity)))
        return
    before = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    if before != identity and store.done() > 0:
        changed = sorted(k for k in identity if before.get(k) != identity[k])
        raise ResumeError(
            f"{store.directory} holds {store.done()} repetitions run with a different {changed}; "
            "move it away or restore the old settings to resume"
        )
    atomic_write_text(path, OmegaConf.to_yaml(OmegaConf.create(identity)))


def run_cell(cfg: DictConfig) -> Path:
    """Compute the missing repetitions of one cell; returns the cell's `accuracies.csv`."""
    from tqdm.auto import tqdm

    specs = registry(cfg.datasets)
    if cfg.dataset not in specs:
        raise KeyError(f"dataset {cfg.dataset!r} is not in the registry; known: {', '.join(specs)}")
    spec = specs[cfg.dataset]
    m, n, seed = int(cfg.m), int(cfg.n), int(cfg.seed)
    repetitions = (
        int(cfg.repetitions)
        if cfg.get("repetitions") is not None
        else subsampling.repetitions_for(n, {int(k): int(v) for k, v in cfg.repetitions_by_n.items()})
    )
    stratification = str(cfg.stratification)
    lm = effective_lm(cfg.lm, spec.key)
    store = CellStore(cell_dir(resolve(cfg.results_dir), m, n, str(lm["lm_type"]), spec.key))
    _check_resume(store, _identity(cfg, lm))
    done = store.done()
    if done >= repetitions:
        log.info("%s: all %d repetitions done, nothing to run", store.csv, repetitions)
        return store.csv
    data = load_dataset(spec, cfg.assets_dir)
    labels = data["label"].to_numpy()
    records = store.log_records()
    if records:  # the same seed and data must redraw the same subsample, else the rows would not pair
        last = records[-1]
        again = subsampling.draw(
            labels,
            m,
            n,
            seed=seed,
            dataset=spec.key,
            repetition=int(last["repetition"]),
            stratification=stratification,
        )
        if again.as_dict() != last.get("subsample"):
            raise ResumeError(
                f"{store.log}: the dataset changed since repetition {last['repetition']} was drawn"
            )
    device = pick_device(str(cfg.device))
    protocol = make_protocol(lm, spec, device, bool(cfg.show_step_progress))
    log.info("%s: %d/%d repetitions done; running on %s", store.directory, done, repetitions, device)
    # Said before the first repetition: at the paper's 100 repetitions a CPU cell takes half an hour or more.
    guess = estimate(resolve(cfg.results_dir), lm, device, m, n)
    log.info("%s", guess.message(spec.key, repetitions - done, device))
    bar = tqdm(
        range(done, repetitions),
        initial=done,
        total=repetitions,
        desc=f"{lm['lm_type']}/{spec.key} m{m} n{n}",
    )
    for k in bar:
        sub = subsampling.draw(
            labels, m, n, seed=seed, dataset=spec.key, repetition=k, stratification=stratification
        )
        start = time.perf_counter()
        acc, record = protocol.run(data, sub, subsampling.training_seed(seed, k))
        seconds = time.perf_counter() - start
        row = {**acc, **baseline_columns(labels, sub.test, spec.num_classes)}
        store.append(k, row, {"seconds": seconds, "device": device, "subsample": sub.as_dict(), **record})
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
