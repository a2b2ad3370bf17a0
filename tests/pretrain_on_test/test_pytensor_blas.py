"""analysis/pytensor_blas.py: PyTensor's profile of the bambi model, read by op class, and which ops run in Python
when no C BLAS is linked (the docs' caveat on `make bench-vs-authors` quotes it)."""

from __future__ import annotations

import warnings

import pytest

from tests.conftest import analysis_script, mirror_dir


def test_the_profile_is_read_by_op_class_and_gemv_runs_in_python_without_a_blas() -> None:
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("no data mirror (TESTTASK_DATA_MIRROR)")
    script = analysis_script("pytensor_blas")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pytensor

        rows = script.op_classes(50, 500, "bias", calls=50, root=mirror / "pretrain_on_test")
        linked = bool(pytensor.config.blas__ldflags)
    assert 99.0 <= sum(share for share, _, _ in rows) <= 100.5  # every class of the table, none twice
    assert {kind for _, kind, _ in rows} <= {"C", "Py"}
    python = {name for _, kind, name in rows if kind == "Py"}
    assert ("pytensor.tensor.blas.Gemv" in python) is not linked
