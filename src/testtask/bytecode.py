"""Cache the bytecode of what the project imports, at install: `make install` installs the packages without
compiling them and calls `compile_imported()`.

pip compiles every file of every package it installs, one file at a time: about 60 s of a fresh install on 2 cores,
most of it for modules nothing here imports (transformers' hundreds of model files, jax, IPython). Importing every
module of the package instead makes Python write the bytecode of exactly the modules the code and its libraries
load; a module imported only later (a library's rarely used corner) is compiled by Python on its first import, as
always.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import testtask

# Libraries the code or the tests import inside functions only, which the walk over the package does not reach,
# and the parts of libraries loaded on first use: jax and numpyro (the numpyro sampler), statsmodels.api (the
# regression tests' reference), fontTools (matplotlib's PDF fonts), zarr (arviz's stores), hypothesis' strategies.
LAZY_IMPORTS = (
    "bambi",
    "deepspeed",
    "fontTools.subset",
    "hypothesis.strategies",
    "jax",
    "jupytext",
    "lm_eval",
    "lm_eval.api.registry",
    "lm_eval.evaluator",
    "lm_eval.tasks",
    "nbclient",
    "numpyro",
    "statsmodels.api",
    "submitit",
    "xdist",
    "zarr",
)


def package_modules() -> list[str]:
    """Every module of the package, but `__main__` ones (importing those runs their command)."""
    walk = pkgutil.walk_packages(testtask.__path__, f"{testtask.__name__}.")
    return [m.name for m in walk if m.name.rpartition(".")[2] != "__main__"]


def compile_imported() -> tuple[int, float]:
    """Import every module of the package and the lazily imported libraries, so that Python caches their bytecode
    (and that of everything they import); returns how many modules are loaded and the seconds it took."""
    start = time.perf_counter()
    for name in [*package_modules(), *LAZY_IMPORTS]:
        importlib.import_module(name)
    return len(sys.modules), time.perf_counter() - start
