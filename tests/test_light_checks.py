"""A config error and `--help` come before any heavy library is imported.

A person who mistypes a value waits for the check alone: the command line composes and types the config, and the
papers' registries name their builders lazily (`testtask.papers.Lazy`), so that neither the analysis command nor a
runner loads torch, PyMC, arviz, pandas, matplotlib, statsmodels or transformers before it reports the error.
Each case runs in a fresh interpreter, the way a person meets it, and reads `sys.modules` at exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

HEAVY = (
    "torch",
    "pymc",
    "arviz",
    "pandas",
    "matplotlib",
    "statsmodels",
    "transformers",
    "scipy",
    "pytensor",
    "deepspeed",
)

# Runs `main` with `argv`, then prints the heavy modules that were imported and the exit status.
PROBE = """
import atexit, json, sys
HEAVY = {heavy!r}
def report():
    loaded = sorted(m for m in HEAVY if m in sys.modules)
    print("LOADED=" + json.dumps(loaded), file=sys.__stderr__)
atexit.register(report)
sys.argv = {argv!r}
from {module} import main
main(*{args!r})
"""


def _probe(module: str, argv: list[str], args: tuple = ()) -> tuple[int, list[str], str]:
    code = PROBE.format(heavy=HEAVY, argv=argv, module=module, args=args)
    env = {**os.environ, "MPLBACKEND": "Agg", "TESTTASK_ROOT": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED="))
    return done.returncode, json.loads(line.removeprefix("LOADED=")), done.stdout + done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["testtask", "action=figure", "figure=3", "paper=pretrain-on-test", "pretrain_on_test.counts=floor"],
        ["testtask", "action=figures", "paper=all", "training_on_the_test_task.cutoff=2023-13"],
        ["testtask", "action=tables", "paper=proxy-tasks", "proxy_tasks.table_3.metrics=[pearson,cosine]"],
        ["testtask", "action=figure", "figure=2", "paper=train-before-test", "sampler.chians=3"],
    ],
    ids=["pretrain-on-test", "training-on-the-test-task", "proxy-tasks", "misspelled"],
)
def test_a_config_error_imports_no_heavy_library(argv):
    status, loaded, printed = _probe("testtask.cli", argv)
    assert status != 0 and "invalid config" in printed, printed
    assert loaded == [], f"imported before the error: {loaded}"


def test_help_imports_no_heavy_library():
    status, loaded, printed = _probe("testtask.cli", ["testtask", "--help"])
    assert status == 0 and "Configuration groups" in printed, printed
    assert loaded == []


@pytest.mark.parametrize(
    ("paper", "override"),
    [
        ("pretrain-on-test", "stratification=random"),
        ("training-on-the-test-task", "learning_rate=-1"),
        ("train-before-test", "epochs=0"),
    ],
)
def test_a_runner_config_error_imports_no_heavy_library(paper, override):
    status, loaded, printed = _probe("testtask.runners", ["run.py", override], (paper, [override]))
    assert status != 0 and override.split("=")[0] in printed, printed
    assert loaded == [], f"imported before the error: {loaded}"


def test_a_lazy_builder_is_imported_when_it_runs():
    """The registry's entry is the builder itself once called: the same function, found by its name."""
    from testtask import papers
    from testtask.pretrain_on_test.boost_bias_figures import figure_3

    lazy = papers.get("pretrain-on-test").figures[3]
    assert isinstance(lazy, papers.Lazy) and lazy.function is figure_3
    with pytest.raises(ModuleNotFoundError):
        papers.Lazy("testtask.no_such_module:f")()


@pytest.mark.parametrize(
    ("kind", "module", "enum"),
    [("optim", "training_args", "OptimizerNames"), ("scheduler", "trainer_utils", "SchedulerType")],
)
def test_transformers_names_read_without_importing_it_are_its_enums(kind, module, enum):
    """The optimizer and scheduler names a runner config may name, read from transformers' source, are exactly
    the members of the enums TrainingArguments checks them against."""
    import importlib

    from testtask.lm.settings import transformers_names

    members = getattr(importlib.import_module(f"transformers.{module}"), enum)
    assert transformers_names(kind) == tuple(member.value for member in members)


def test_the_sweeps_plan_loads_no_training_stack():
    """The plan is arithmetic over the configs and the recipe rules (`testtask.lm.recipe_rules`): it prints its
    table without torch, transformers or DeepSpeed."""
    status, loaded, printed = _probe(
        "testtask.cli", ["testtask", "action=plan", "paper=training-on-the-test-task"]
    )
    assert status == 0 and "estimated GPU-hours" in printed, printed[-2000:]
    assert loaded == [], f"imported by the plan: {loaded}"
