"""The train-before-test runner end to end on a tiny random Llama and an offline fixture benchmark.

Two cells of the `tiny` preset (2 learning rates × 2 epochs; the benchmark with its own validation split and with
validation carved out of train) are run in process. The tests read every number back from the lm-eval JSONs the
runner wrote: all_results.json in the published format, the selected checkpoint is the best point of the
recorded validation curve, the caps are applied, a rerun skips finished cells and a changed config is refused.
"""

from __future__ import annotations

import json
import math

import pytest

from tests.conftest import offline_single_thread
from tests.fixtures.tbt_runner import cheap_env_info, tiny_config
from testtask.train_before_test.runner import tiny
from testtask.train_before_test.runner.main import run
from testtask.train_before_test.runner.store import KEYS, SettingsChanged

pytest.importorskip("lm_eval")
MODEL = "tiny/llama"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Both fixture cells, run once for the module."""
    root = tmp_path_factory.mktemp("tbt_runner")
    mp = pytest.MonkeyPatch()
    mp.setattr("lm_eval.evaluator.add_env_info", cheap_env_info)
    with offline_single_thread():
        tiny.build(root / "fixture")
        records = {b: run(tiny_config(root, f"benchmark={b}")) for b in ("tbt_tiny", "tbt_tiny_carved")}
        yield root, records
    mp.undo()


def _metric(path) -> tuple[float, float, int]:
    out = json.loads(path.read_text())
    res = out["results"]["tbt_tiny"]
    return res["acc,none"], res["acc_stderr,none"], out["n-samples"]["tbt_tiny"]["effective"]


def test_all_results_has_the_published_structure(runs):
    root, records = runs
    merged = json.loads((root / "results" / "all_results.json").read_text())
    assert list(merged) == list(KEYS)
    for key in KEYS:
        assert set(merged[key]) == {"tbt_tiny", "tbt_tiny_carved"}
        for benchmark in merged[key]:
            assert list(merged[key][benchmark]) == [MODEL]
    for benchmark, record in records.items():
        direct, _, _ = _metric(root / "results" / record["direct_eval"]["file"])
        tuned, stderr, n = _metric(root / "results" / record["train_before_test"]["file"])
        assert merged["direct_eval"][benchmark][MODEL] == direct
        assert merged["train_before_test"][benchmark][MODEL] == tuned
        # acc's closed-form standard error over the 16 capped test documents
        assert merged["train_before_test_stderr"][benchmark][MODEL] == pytest.approx(
            math.sqrt(tuned * (1 - tuned) / (n - 1))
        )
        assert n == 16


def test_best_checkpoint_is_the_best_validation_point(runs):
    root, records = runs
    for record in records.values():
        curve = record["curve"]
        # the base model, then 2 learning rates × 2 epochs, each read back from its own lm-eval file
        assert [(p["learning_rate"], p["epoch"]) for p in curve] == [
            (None, 0),
            (1e-3, 1),
            (1e-3, 2),
            (3e-2, 1),
            (3e-2, 2),
        ]
        for point in curve:
            score, _, n = _metric(root / "results" / point["file"])
            assert point["score"] == score and n == 8
        top = max(p["score"] for p in curve)
        first_best = next(p for p in curve if p["score"] == top)
        chosen = record["train_before_test"]
        assert (chosen["learning_rate"], chosen["epoch"], chosen["validation"]) == (
            first_best["learning_rate"],
            first_best["epoch"],
            top,
        )
        if chosen["learning_rate"] is not None:
            assert chosen["file"].endswith(
                f"lr_{chosen['learning_rate']:g}/epoch_{chosen['epoch']}/test.json"
            )
            assert chosen["step"] == 3 * chosen["epoch"]  # 24 training texts / batch 8
        assert record["direct_eval"]["validation"] == curve[0]["score"]


def test_caps_and_carving_are_applied_and_recorded(runs):
    root, records = runs
    own = records["tbt_tiny"]["counts"]
    assert {s: (own[s]["available"], own[s]["used"]) for s in own} == {
        "train": (40, 24),
        "validation": (12, 8),
        "test": (24, 16),
    }
    carved = records["tbt_tiny_carved"]["counts"]  # 20% of the 40 training documents become validation
    assert {s: (carved[s]["available"], carved[s]["used"]) for s in carved} == {
        "train": (32, 24),
        "validation": (8, 8),
        "test": (24, 16),
    }
    assert carved["validation"]["source"] == "train (carved)"
    indices = json.loads(
        (root / "work" / "tbt_tiny_carved" / "tiny__llama" / "data" / "indices.json").read_text()
    )
    assert not set(indices["train"]) & set(indices["validation"])
    for record in records.values():
        for run_info in record["finetune"].values():
            assert run_info["training_texts"] == 24 and run_info["steps_per_epoch"] == 3


def test_only_the_selected_checkpoint_is_kept(runs):
    root, records = runs
    record = records["tbt_tiny"]
    chosen = record["train_before_test"]
    kept = sorted(p.relative_to(root / "work") for p in (root / "work").glob("tbt_tiny/*/*/*/checkpoint-*"))
    if chosen["learning_rate"] is None:
        assert kept == []
    else:
        name = f"tbt_tiny/tiny__llama/plain/lr_{chosen['learning_rate']:g}/checkpoint-{chosen['step']}"
        assert [str(p) for p in kept] == [name]


def test_a_rerun_skips_finished_cells(runs, monkeypatch):
    root, records = runs

    def refuse(*args, **kwargs):
        raise AssertionError("a finished cell was scored again")

    monkeypatch.setattr("testtask.train_before_test.runner.scoring.Scorer.score", refuse)
    monkeypatch.setattr("testtask.train_before_test.runner.cell.train_epochs", refuse)
    # The patches above are the check that nothing ran again; a wall-clock bound would only add noise.
    with offline_single_thread():
        again = run(tiny_config(root, "benchmark=tbt_tiny"))
    assert again == records["tbt_tiny"]


def test_a_changed_config_is_refused(runs):
    root, _ = runs
    with (
        offline_single_thread(),
        pytest.raises(SettingsChanged, match=r"learning_rates: \[0\.001, 0\.03\] ->"),
    ):
        run(tiny_config(root, "benchmark=tbt_tiny", "learning_rates=[1e-3,1e-2]"))
    with offline_single_thread(), pytest.raises(SettingsChanged, match="caps.test: 16 -> 12"):
        run(tiny_config(root, "benchmark=tbt_tiny", "caps.test=12"))


def test_an_interrupted_cell_resumes_without_retraining(runs, monkeypatch):
    """Lose a cell's record and its final test score: the rerun retrains nothing and scores only what is gone."""
    from testtask.train_before_test.runner.scoring import Scorer

    root, records = runs
    record = records["tbt_tiny"]
    (root / "results" / "cells" / "tbt_tiny" / "tiny__llama.json").unlink()
    lost = root / "results" / record["train_before_test"]["file"]
    lost.unlink()
    scored, original = [], Scorer.score

    def spy(self, spec, config, out, **kwargs):
        if not out.is_file():
            scored.append(out)
        return original(self, spec, config, out, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError("a finished fine-tuning run was trained again")

    monkeypatch.setattr(Scorer, "score", spy)
    monkeypatch.setattr("transformers.Trainer.train", refuse)
    with offline_single_thread():
        again = run(tiny_config(root, "benchmark=tbt_tiny"))
    assert scored == [lost]
    for key in ("curve", "counts", "direct_eval", "train_before_test"):
        assert again[key] == record[key]
    # the record says it was resumed: its `seconds` are the second attempt's alone
    assert (record["attempts"], again["attempts"]) == (1, 2)
