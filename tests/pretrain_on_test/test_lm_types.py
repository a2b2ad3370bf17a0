"""`pretrain_on_test.lm_types`: which LM types the posterior figures read, pooled in one fit per panel (the
paper's) or fitted and drawn side by side; titles and sidecars say what was read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import built, tmp_config, write_accuracies
from testtask.pipeline import NothingBuilt, build
from testtask.pretrain_on_test.inputs import lm_names

FEW = "accuracies_from_paper"
FAST = ["sampler.draws=300", "sampler.tune=300", "sampler.chains=2", "sampler.progressbar=false", "seed=5"]
SIDE = "pretrain_on_test.lm_types.fit=side_by_side"


@pytest.fixture
def two_lm_types(tmp_path) -> Path:
    """Our results with two LM types on the same tasks: `even` has no bias, `biased` a bias of +0.8 logit (the
    boost of both +0.3 logit, `write_accuracies`)."""
    results = tmp_path / "results" / "pretrain-on-test"
    write_accuracies(results, FEW, 50, 100, ["even"], datasets=4, subsamples=6, bias=0.0, seed=1)
    write_accuracies(results, FEW, 50, 100, ["biased"], datasets=4, subsamples=6, bias=0.8, seed=2)
    return tmp_path


def _figure(tmp_path: Path, number: int, *extra: str) -> dict:
    cfg = tmp_config(tmp_path, *FAST, "source=results", *extra)
    build(cfg, "figure", [number])
    return json.loads((built(cfg) / f"figure-{number}.json").read_text())


def _panels(numbers: dict, effect: str) -> dict[tuple[str, ...], dict]:
    return {tuple(p["lm_types"]): p for p in numbers["panels"] if p["effect"] == effect}


def test_titles_name_the_lm_types_read():
    assert lm_names(["bert"]) == "BERT"
    assert lm_names(["bert", "gpt2"]) == "BERT and GPT-2"
    assert lm_names(["bert", "gpt2", "student-lm"]) == "BERT, GPT-2 and student-lm"
    # the two zero-shot collections' LM types are one model: named once
    assert lm_names(["mistral-qlora-zero-shot", "mistral-qlora-zero-shot-packing"]) == "Mistral-7B QLoRA"


def test_pooled_and_side_by_side_on_simulated_lm_types(two_lm_types):
    pooled = _figure(two_lm_types, 3)
    side = _figure(two_lm_types, 3, SIDE)
    # pooled (the default): one fit per (m, n, effect) of both LM types, titled from them
    assert set(_panels(pooled, "bias")) == {("biased", "even")}
    assert pooled["title"] == "Figure 3: average accuracy differences (biased and even pooled)"
    assert pooled["lm_types_read"] == ["biased", "even"]
    assert pooled["lm_types_setting"] == {"read": None, "fit": "pooled"}
    # side by side: one fit per LM type and (m, n, effect), each panel naming the LM type it read
    assert set(_panels(side, "bias")) == {("biased",), ("even",)}
    assert side["title"] == "Figure 3: average accuracy differences (biased and even side by side)"
    bias = {lm: panel["average_difference"] for (lm,), panel in _panels(side, "bias").items()}
    # the known answer: +0.8 logit of bias for `biased` only
    assert bias["biased"]["hdi_89"][0] > 0.05, bias
    assert bias["even"]["hdi_89"][0] < 0 < bias["even"]["hdi_89"][1], bias
    pooled_bias = _panels(pooled, "bias")[("biased", "even")]["average_difference"]["mean"]
    assert bias["even"]["mean"] < pooled_bias < bias["biased"]["mean"]
    # one LM type's own fit is the pooled fit of that LM type read alone (same data, same seed)
    alone = _figure(two_lm_types, 3, "pretrain_on_test.lm_types.read=[biased]")
    assert set(_panels(alone, "bias")) == {("biased",)}
    assert alone["title"] == "Figure 3: average accuracy differences (biased)"
    for effect in ("boost", "bias"):
        theirs, ours = _panels(alone, effect)[("biased",)], _panels(side, effect)[("biased",)]
        assert theirs["average_difference"] == ours["average_difference"]
        assert theirs["beta"] == ours["beta"]


def test_figure_4_reads_the_selected_lm_types_fitted_side_by_side(two_lm_types):
    numbers = _figure(two_lm_types, 4, SIDE, "pretrain_on_test.lm_types.read=[biased]")
    assert numbers["selected_lm_types"] == ["biased"]
    assert {row["lm_type"] for row in numbers["all_task_means"]} == {"biased"}


def test_an_lm_type_the_data_lack_names_the_setting_and_those_present(two_lm_types):
    with pytest.raises(NothingBuilt) as err:
        _figure(two_lm_types, 3, "pretrain_on_test.lm_types.read=[even,student-lm]")
    message = str(err.value)
    assert "\n" not in message
    assert "pretrain_on_test.lm_types.read = [even, student-lm]" in message
    assert "has no student-lm; its LM types are biased, even" in message


def _result(n: int, effect: str, lm_types: list[str]) -> dict:
    from types import SimpleNamespace

    import numpy as np

    average = {"mean": 0.01, "hdi_89": [0.0, 0.02]}
    panel = {"m": 50, "n": n, "effect": effect, "lm_types": lm_types}
    panel |= {"average_difference": average, "raw_mean_difference": 0.01}
    return {"panel": panel, "predictive": SimpleNamespace(average=np.linspace(0, 0.02, 50))}


def test_labels_name_the_lm_types_of_a_fit_that_read_fewer():
    """Pooled, an own LM type at n = 50 only: the n = 100 fits name the two LM types they pooled; side by side, the
    legend names every LM type read."""
    import matplotlib.pyplot as plt

    from testtask.pretrain_on_test.boost_bias_figures import average_difference_figure

    three, two = ["bert", "gpt2", "student-lm"], ["bert", "gpt2"]
    pooled = [_result(50, "boost", three), _result(100, "boost", two)]
    fig = average_difference_figure(pooled, "t")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["n = 50", "n = 100\n(BERT and GPT-2)"]
    plt.close(fig)
    side = [_result(50, "boost", [lm]) for lm in three] + [_result(100, "boost", [lm]) for lm in two]
    fig = average_difference_figure(side, "t", fit="side_by_side")
    legend = fig.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["student-lm", "GPT-2", "BERT"]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["n = 50", "n = 100"]
    plt.close(fig)
