"""source=published+results for pretrain-on-test: a run's accuracies files laid over the release's, read by every
loader of a collection; a file in both roots is refused naming both."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import built, stamp_release, tmp_config, write_accuracies
from testtask.pipeline import build
from testtask.pretrain_on_test import accuracies
from testtask.sources import OverlayConflict

RUN = "mine"
FEW = "accuracies_from_paper"
FAST = ["sampler.draws=150", "sampler.tune=150", "sampler.chains=2", "sampler.progressbar=false", "seed=5"]


def _release(tmp_path: Path) -> Path:
    """A synthetic release (bert and gpt2 on three tasks at m = 50, n = 50), stamped as `make data` would."""
    root = tmp_path / "published" / "pretrain-on-test"
    write_accuracies(root, FEW, 50, 50, ["bert", "gpt2"], datasets=3, subsamples=5)
    stamp_release(root)
    return root


def _run(tmp_path: Path) -> Path:
    return tmp_path / "results" / "pretrain-on-test" / RUN


def _config(tmp_path: Path, *extra: str):
    return tmp_config(tmp_path, *FAST, "source=published+results", f"results_run={RUN}", *extra)


def test_two_roots_load_as_one_with_the_run_added(tmp_path):
    release = _release(tmp_path)
    write_accuracies(_run(tmp_path), FEW, 50, 50, ["student-lm"], datasets=2, subsamples=5, seed=3)
    data = accuracies.load([release / FEW, _run(tmp_path) / FEW])
    assert sorted(data.lm_type.unique()) == ["bert", "gpt2", "student-lm"]
    assert len(data) == (3 * 2 + 2) * 5
    alone = accuracies.load(release / FEW)
    pd.testing.assert_frame_equal(
        data[data.lm_type != "student-lm"].reset_index(drop=True), alone, check_like=False
    )


def test_a_file_in_both_roots_is_refused_naming_both(tmp_path):
    release = _release(tmp_path)
    run = _run(tmp_path)
    write_accuracies(run, FEW, 50, 50, ["bert"], datasets=1, subsamples=5, seed=9)  # fake_task_0 again
    with pytest.raises(OverlayConflict) as err:
        accuracies.load([release / FEW, run / FEW])
    message = str(err.value)
    assert str(release / FEW / "m50/n50/bert/fake_task_0/accuracies.csv") in message
    assert str(run / FEW / "m50/n50/bert/fake_task_0/accuracies.csv") in message
    assert "\n" not in message and "LM type bert, dataset fake_task_0, m=50, n=50" in message
    # ... and so is every output that reads the collection, before anything is drawn
    with pytest.raises(OverlayConflict, match="remove one of them"):
        build(_config(tmp_path, "action=table"), "table", [1])


def test_a_run_adding_an_lm_type_is_read_beside_the_release(tmp_path):
    _release(tmp_path)
    write_accuracies(_run(tmp_path), FEW, 50, 50, ["student-lm"], datasets=2, subsamples=5, seed=3)
    build(_config(tmp_path), "table", [1])
    build(_config(tmp_path), "figure", [3, 8])
    out = built(_config(tmp_path))
    assert out.name == f"published+results-{RUN}"
    table = pd.read_csv(out / "table-1.csv")
    assert sorted(table.lm_type) == ["bert", "gpt2", "student-lm"]
    figure_3 = json.loads((out / "figure-3.json").read_text())
    assert all(p["lm_types"] == ["bert", "gpt2", "student-lm"] for p in figure_3["panels"])
    assert figure_3["title"] == "Figure 3: average accuracy differences (BERT, GPT-2 and student-lm pooled)"
    # both roots, each with its checksum
    assert {"published", "results"} <= set(figure_3["provenance"]["data"])
    # Figure 8 correlates BERT with GPT-2: the run's LM type leaves it as the release alone gives it
    figure_8 = json.loads((out / "figure-8.json").read_text())
    build(tmp_config(tmp_path, *FAST), "figure", [8])
    alone = json.loads((built(tmp_config(tmp_path, *FAST)) / "figure-8.json").read_text())
    assert figure_8["panels"] == alone["panels"]


def test_a_collection_only_the_run_has_is_read(tmp_path):
    """The release lacks the overtrained collection; the run's is read alone (Figure 5's input)."""
    from testtask.pipeline import make_context
    from testtask.pretrain_on_test.inputs import load_collection

    _release(tmp_path)
    write_accuracies(_run(tmp_path), "accuracies_gpt2_epochs_2", 50, 50, ["gpt2"], datasets=2, subsamples=4)
    ctx = make_context(_config(tmp_path), "pretrain-on-test")
    data = load_collection(ctx, "overtrained")
    assert sorted(data.lm_type.unique()) == ["gpt2"] and data.dataset.nunique() == 2
    assert all(str(_run(tmp_path)) in path for path in data.path)


def test_a_run_file_outside_the_layout_is_named_not_passed_over(tmp_path):
    _release(tmp_path)
    lost = _run(tmp_path) / FEW / "m50" / "student-lm" / "fake_task_0" / "accuracies.csv"  # no n level
    lost.parent.mkdir(parents=True)
    lost.write_text("base,extra,test,majority,num_classes,majority_all\n0.5,0.6,0.6,0.5,2,0.5\n")
    with pytest.raises(accuracies.AccuracyDataError) as err:
        build(_config(tmp_path), "table", [1])
    message = str(err.value)
    assert str(lost) in message and "m<m>/n<n>/<lm_type>/<dataset>/accuracies.csv" in message
    assert "\n" not in message


def test_a_run_without_any_collection_folder_says_where_files_go(tmp_path):
    from testtask.pretrain_on_test.inputs import RunLayoutError

    _release(tmp_path)
    # the files written straight into the run, without the collection folder
    write_accuracies(tmp_path / "results" / "pretrain-on-test", RUN, 50, 50, ["student-lm"], 1, 5)
    with pytest.raises(RunLayoutError) as err:
        build(_config(tmp_path), "table", [1])
    message = str(err.value)
    assert str(_run(tmp_path)) in message and f"({FEW}, " in message and "\n" not in message
