"""`make install` compiles the §6.1 fits' numba code ahead of use (`precompile.precompile()`):
in an empty numba cache, it caches the callbacks and the predictive loop, and a fit and its predictive draws
afterwards (one and two workers, thinned or not) compile nothing more."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

MAKE_INSTALL_STEP = re.search(
    r'-c "([^"]*precompile import precompile[^"]*)"', (REPO / "Makefile").read_text()
)[1]
FIT_AND_DRAW = """
from tests.conftest import SMALL_SAMPLER, model_spec, small_model_data
from testtask.pretrain_on_test import predictive
from testtask.pretrain_on_test.sampling import fit

result = fit(small_model_data(0.2, seed=1), model_spec(), SMALL_SAMPLER, seed=2)
for workers in (1, 2):
    for max_draws in (None, 100):
        predictive.simulate(result, seed=3, max_draws=max_draws, workers=workers)
"""


def _cached(folder: Path) -> set[str]:
    return {p.name for p in folder.rglob("*.nb[ic]")}


@pytest.mark.slow
def test_a_fit_after_the_install_step_compiles_nothing(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    step = subprocess.run(
        [sys.executable, "-c", MAKE_INSTALL_STEP],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "compiled and cached" in step.stdout
    after_install = _cached(tmp_path)
    for function in ("_logp_callback", "_expand_callback", "predictive._draw", "kernel.log_density"):
        assert any(function in name for name in after_install), (function, sorted(after_install))
    subprocess.run([sys.executable, "-c", FIT_AND_DRAW], env=env, cwd=REPO, check=True, capture_output=True)
    assert _cached(tmp_path) == after_install
