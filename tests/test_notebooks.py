"""Every jupytext notebook in notebooks/ executes top to bottom on small settings (TESTTASK_NOTEBOOK_FAST=1)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.py"))
KERNEL = "python3"
# Every notebook runs with `make test-slow` and `make notebooks` (13-30 s each on 2 cores), keeping `make test`
# under its 10 minutes (the CPU ZeRO-3 and QLoRA runs, the worked examples and the two analysis presets each made
# `make test` longer; it measured 9 min 24 s before the last one moved here); the figures they draw are built
# and checked by the pipeline tests, and tests/test_source_separation.py runs the notebook helper's sidecar check.
SLOW = {
    "training-on-the-test-task",
    "pretrain-on-test",
    "proxy-tasks",
    "train-before-test",
    "downstream-predictability",
}
PARAMS = [pytest.param(p, id=p.stem, marks=[pytest.mark.slow] if p.stem in SLOW else []) for p in NOTEBOOKS]


def _ensure_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the `python3` kernel findable; if this environment has none, install one for this interpreter
    under `tmp_path` and put it on JUPYTER_PATH (the venv itself is left untouched)."""
    from jupyter_client.kernelspec import KernelSpecManager

    if KERNEL in KernelSpecManager().find_kernel_specs():
        return
    from ipykernel.kernelspec import install

    prefix = tmp_path / "jupyter"
    install(kernel_name=KERNEL, prefix=str(prefix))
    # The spec's argv starts with "python", which jupyter_client maps to sys.executable (this venv).
    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    assert KERNEL in KernelSpecManager().find_kernel_specs(), sys.executable


@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks/*.py")
@pytest.mark.parametrize("path", PARAMS)
def test_notebook_executes(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_mirror: Path):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")

    figures = tmp_path / "figures"
    monkeypatch.setenv("TESTTASK_NOTEBOOK_FAST", "1")
    monkeypatch.setenv("TESTTASK_NOTEBOOK_FIGURES", str(figures))
    monkeypatch.setenv("TESTTASK_NOTEBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TESTTASK_NOTEBOOK_DATA", str(tmp_path / "published"))
    monkeypatch.setenv("TESTTASK_DATA_MIRROR", str(real_mirror))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    _ensure_kernel(tmp_path, monkeypatch)

    nb = jupytext.read(path)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name=KERNEL, resources={"metadata": {"path": str(REPO)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell

    errors = [
        output
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors, errors
    if path.stem == "pretrain-on-test":  # FAST's small settings: a variant of the preset's build
        (folder,) = figures.glob("variants/*/pretrain-on-test/published")
        assert (folder / "figure-3.json").is_file() and (folder / "figure-3.png").is_file()
