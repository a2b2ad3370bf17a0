"""How `make test` spreads the tests over its xdist workers (a pytest hook; tests/conftest.py installs it)."""

from __future__ import annotations

import pytest

# The tests that start two or more ranks at once (torchrun, or the runner's accelerate launch): modules, or single
# tests by their id. `make test` runs them on one worker, one after another: two launches at once put four processes
# in lock-step on two cores, where a collective waits whenever one of its ranks is descheduled (the ZeRO-3 fixture
# took 30 s alone, 46 s beside one busy core, 105 s in a suite run).
RANK_LAUNCHING_TESTS = (
    "tests/test_distributed.py",
    "tests/training_on_the_test_task/test_zero3.py",
    "tests/training_on_the_test_task/test_zero3_resume.py",
    "tests/training_on_the_test_task/test_runner.py::test_a_real_two_process_accelerate_launch_from_the_job",
)


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under `--dist loadscope` (`make test`), each module on one worker, so its module fixtures are built once,
    and the rank-launching tests together on one worker. (xdist's own `xdist_group` marks do not reach its
    scheduler under pytest 9, whose node ids no longer take the group suffix xdist 3.8 sets.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesAndRanks(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if any(nodeid == t or nodeid.startswith((f"{t}::", f"{t}[")) for t in RANK_LAUNCHING_TESTS):
                return "rank-launching tests"
            return super()._split_scope(nodeid)

    return ModulesAndRanks(config, log)
