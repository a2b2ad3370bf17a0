"""A user's mistake prints one message from the command line, not a Hydra traceback.

The commands run in subprocesses, as a user runs them: the handler sits at the command-line edge, so only a real
process shows what reaches the terminal (stderr, exit status)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testtask.errors import InputError, message, reported

REPO = Path(__file__).resolve().parents[1]


def _run(args: list[str], tmp_path: Path, full_error: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env.update(MPLBACKEND="Agg")
    if full_error:
        env["HYDRA_FULL_ERROR"] = "1"
    hydra = [f"hydra.run.dir={tmp_path / 'hydra'}", "hydra.output_subdir=null"]
    return subprocess.run(
        [sys.executable, *args, *hydra], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def _cli(*overrides: str) -> list[str]:
    return ["-c", "from testtask.cli import main; main()", *overrides]


def test_a_bad_override_prints_one_message_and_exits_1(tmp_path):
    args = _cli("action=figure", "figure=3", "paper=pretrain-on-test", "sampler.draws=-10")
    done = _run([*args, f"figures_dir={tmp_path / 'figures'}"], tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: invalid config: sampler.draws = -10: expected a positive integer"
    ]
    assert "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "figures").exists()


def test_hydra_full_error_shows_the_traceback(tmp_path):
    args = _cli("action=figure", "figure=3", "paper=pretrain-on-test", "sampler.draws=-10")
    done = _run(args, tmp_path, full_error=True)
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "ConfigError: invalid config: sampler.draws = -10" in done.stderr


BAD_CLAIM = """\
paper: pretrain-on-test
claims:
  - id: pot.mine
    where: "Table 1"
    statement: "two values, one number"
    paper: 0
    ours: {output: table-1, path: ["rows[0].boost_mean", "rows[0].bias_mean"]}
    rule: {kind: tolerance, abs: 0.1}
"""


def test_a_claim_whose_paper_value_does_not_fit_its_rule_stops_the_report(tmp_path):
    """`paper: 0` for a two-value claim: a ledger error naming the file and the claim, not "not computable"."""
    ledger = tmp_path / "mine.yaml"
    ledger.write_text(BAD_CLAIM)
    # The report reads conf/claims/<paper>.yaml; the subprocess points it at the temporary ledger instead.
    code = (
        "import pathlib, testtask.report.main as m; "
        f"m.ledger_file = lambda paper: pathlib.Path({str(ledger)!r}); "
        "from testtask.cli import main; main()"
    )
    overrides = [
        "action=report",
        "paper=pretrain-on-test",
        f"report.out_dir={tmp_path / 'report'}",
        f"figures_dir={tmp_path / 'figures'}",
    ]
    done = _run(["-c", code, *overrides], tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: {ledger}: claim pot.mine, field 'paper': ours.path lists 2 paths, so ours is a list of 2 "
        "values: the paper's value must be a list of 2, got 0"
    ]
    assert not (tmp_path / "report").exists()


def test_a_runner_config_error_prints_one_message(tmp_path):
    """The experiment runners' entry point (`python experiments/<paper>/run.py`) reports the same way."""
    script = str(REPO / "experiments" / "pretrain_on_test" / "run.py")
    overrides = ["datasets=pypi_assets", "dataset=sms_spam", "device=cpu", "n=-5"]
    done = _run([script, *overrides, f"results_dir={tmp_path / 'results'}"], tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["error: invalid config: n = -5: expected a positive integer"]
    assert not (tmp_path / "results").exists()


def test_key_error_based_input_errors_print_without_quotes(monkeypatch):
    class Missing(InputError, KeyError):
        pass

    assert message(Missing("no field 'x' in a.yaml")) == "no field 'x' in a.yaml"
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(SystemExit) as stop, reported():
        raise Missing("no field 'x' in a.yaml")
    assert stop.value.code == "error: no field 'x' in a.yaml"
    with pytest.raises(ValueError), reported():  # not a user's input error: left to Hydra's report
        raise ValueError("a bug")
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    with pytest.raises(Missing), reported():
        raise Missing("x")


def test_the_input_error_classes_derive_from_input_error():
    from testtask.lm.results_layout import ResultsError
    from testtask.pretrain_on_test.runner.settings import SettingsError
    from testtask.report.ledger import LedgerError
    from testtask.schema import ConfigError

    for cls in (ConfigError, ResultsError, SettingsError, LedgerError):
        assert issubclass(cls, InputError), cls
    assert issubclass(ConfigError, ValueError) and issubclass(SettingsError, KeyError)  # callers unchanged
