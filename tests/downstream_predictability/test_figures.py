"""Figures 2–6 through the CLI on simulated families with known effects, on the CPU mini-run, and without inputs."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from tests.conftest import REPO
from testtask.downstream_predictability.analysis import correlation_results, family_tasks
from testtask.downstream_predictability.family import load_family
from testtask.downstream_predictability.settings import FamilySpec, Settings
from testtask.downstream_predictability.simulate import build_simulated, simulate_family
from testtask.pipeline import NothingBuilt, build, compose
from testtask.schema import load

PAPER = "downstream-predictability"
KEY = "downstream_predictability"
# The default settings (negate brier, drop undefined, log10 compute), Spearman only.
SETTINGS = replace(load(Settings, compose()[KEY], KEY), methods=["spearman"])


def _build(overrides: list[str], numbers: list[int]) -> list[dict]:
    """The pipeline's build of figures `numbers` under the config of `overrides` (simulate.build_simulated's)."""
    return build(compose(overrides), "figure", numbers)


SIMULATED = "results-simulated"  # build_simulated's source and run (paths.source_folder)


def _folder(figures):
    """The simulated family's outputs: a variant folder, as its family differs from the preset's settings."""
    (folder,) = figures.glob(f"variants/*/{PAPER}/{SIMULATED}")
    return folder


def _numbers(figures, number):
    return json.loads((_folder(figures) / f"figure-{number}.json").read_text())


def _mean_spearman(tmp_path, rho):
    """Mean per-sample Spearman correlation of each quantity for a simulated family with coupling rho."""
    root = tmp_path / f"rho{rho}"
    family = simulate_family(root, PAPER, n_members=6, n_docs=200, rho=rho, seed=11)
    spec = load(FamilySpec, family.spec, f"{KEY}.families.{family.name}")
    data = family_tasks(load_family(family.name, spec, lambda paper: root), SETTINGS)
    results = correlation_results(data.tasks["sim_task"], SETTINGS)
    return {r.quantity: r.summary["mean"] for r in results}, family


def test_published_source_builds_nothing():
    cfg = compose([f"paper={PAPER}", "source=published"])
    with pytest.raises(NothingBuilt, match="nothing was built"):
        build(cfg, "figure", None)


def test_chain_degrades_when_incorrect_mass_covaries(tmp_path):
    coupled, family = _mean_spearman(tmp_path, rho=0.9)
    independent, _ = _mean_spearman(tmp_path, rho=0.0)
    # The correct-choice mass is the same in both (same seed): so are its correlations.
    assert coupled["log_p_vocab"] == pytest.approx(independent["log_p_vocab"])
    assert coupled["p_vocab"] == pytest.approx(coupled["log_p_vocab"])  # a monotone map keeps ranks
    # Renormalising over choices whose mass moves with compute loses much of the relation ...
    assert coupled["p_choices"] < coupled["log_p_vocab"] - 0.15
    # ... and more so than when the incorrect choices' mass does not co-vary with compute.
    assert coupled["p_choices"] < independent["p_choices"] - 0.1
    rising = np.mean(family.slopes["sim_task"] > 0)
    assert coupled["log_p_vocab"] == pytest.approx(2 * rising - 1, abs=0.15)  # ±1 per sample, by design


def test_simulated_family_through_the_cli(tmp_path):
    family, built = build_simulated(
        tmp_path / "work", tmp_path / "figures", _build, n_members=5, n_docs=80, tasks=("sim_a",), seed=4
    )
    assert [b["figure"] for b in built] == [2, 3, 4, 5, 6]
    figures = tmp_path / "figures"
    for number in (2, 3, 4, 5, 6):
        assert (_folder(figures) / f"figure-{number}.png").stat().st_size > 10_000
    fig2 = _numbers(figures, 2)
    assert fig2["families"]["simulated"]["n_members"] == 5 and fig2["warnings"] == []
    panel = fig2["panels"]["simulated"]
    rising = np.mean(family.slopes[panel["task"]] > 0)
    # Rising documents are perfectly rank-correlated (noise is small against the slope).
    assert panel["summary"]["fraction_above_0.75"] >= rising - 1e-9
    assert sum(panel["histogram"]["percent"]) == pytest.approx(100.0)
    fig3 = _numbers(figures, 3)
    a, vocab = fig3["panels"]["log_p_vocab"]["simulated"], fig3["panels"]["p_vocab"]["simulated"]
    assert a["summary"] == vocab["summary"]
    fig4 = _numbers(figures, 4)
    for method in ("pearson", "spearman", "kendall"):
        means = {
            q: fig4["mean_over_tasks"][f"simulated|{method}|{q}"]["mean"]
            for q in ("log_p_vocab", "p_choices")
        }
        assert means["p_choices"] < means["log_p_vocab"]
    order = fig4["ordering"]["p_vocab > p_choices"]
    assert order["n"] == 3 * 4  # 1 task × 3 methods × 4 statistics
    assert order["n_holds"] >= 0.75 * order["n"]
    accuracy_rows = [r for r in fig4["rows"] if r["quantity"] == "accuracy"]
    assert all(r["n_defined"] + r["n_undefined"] == r["n_samples"] == 80 for r in accuracy_rows)
    assert any(r["n_undefined_constant"] > 0 for r in accuracy_rows)  # samples always right or always wrong
    fig5 = _numbers(figures, 5)
    to_accuracy = [p for p in fig5["panels"] if p["y"] == "accuracy"]
    assert all(p["accuracy_where_p_choices_above_half"] in (1.0, None) for p in to_accuracy)
    fig6 = _numbers(figures, 6)
    assert all(p["per_sample_co_movement"]["mean"] > 0.3 for p in fig6["panels"])  # rho = 0.8 by default


def test_two_members_give_signs_only_and_say_so(tmp_path):
    build_simulated(
        tmp_path / "work", tmp_path / "figures", _build, figures=(3,), n_members=2, n_docs=60, seed=2
    )
    fig3 = _numbers(tmp_path / "figures", 3)
    assert fig3["families"]["simulated"]["n_members"] == 2
    assert any("2 members" in w for w in fig3["warnings"])
    for quantity in ("log_p_vocab", "p_choices", "brier", "accuracy"):
        summary = fig3["panels"][quantity]["simulated"]["summary"]
        assert summary["fraction_above_0"] == summary["fraction_above_0.75"]  # every correlation is ±1
        assert summary["auc_ccdf"] == pytest.approx(2 * summary["fraction_above_0"])


MMLU_SUBJECTS = ("high_school_biology", "marketing", "us_foreign_policy", "world_religions")


@pytest.mark.skipif(
    not (REPO / "results" / "training-on-the-test-task" / "cpu-mini" / "samples").is_dir(),
    reason="the committed CPU mini-run samples are absent",
)
def test_cpu_mini_family(tmp_path):
    cfg = compose([f"paper={PAPER}", "source=results", f"figures_dir={tmp_path}"])
    assert [b["figure"] for b in build(cfg, "figure", [3])] == [3]
    numbers = json.loads((tmp_path / PAPER / "results-cpu-mini" / "figure-3.json").read_text())
    family = numbers["families"]["smollm2-135m-cpu-mini"]
    steps = [f"intermediate/mcaux/evals/smollm2-135m/step_{k}" for k in (10, 20, 30, 40)]
    assert [m["name"] for m in family["members"]] == ["base", *steps, "e1/mcaux"]
    assert family["n_members"] == 6
    flops = [m["flops"] for m in family["members"]]
    assert flops == sorted(flops) and len(set(flops)) == 6  # compute grows with every fine-tuning step
    assert numbers["panels"]["log_p_vocab"]["smollm2-135m-cpu-mini"]["task"] == "arc_challenge"
    # only the tasks every member was evaluated on (the checkpoints skip HellaSwag and the cloze MMLU)
    assert sorted(family["tasks"]) == sorted(
        ["arc_challenge", "arc_challenge_mc"] + [f"mmlu_{s}_mc" for s in MMLU_SUBJECTS]
    )
    assert all(t["n_samples"] == 100 for t in family["tasks"].values())


def test_ordering_checks_count_ties_within_tolerance():
    from testtask.downstream_predictability.distribution_figures import ordering_checks

    def row(quantity, value):
        stats = {s: value for s in ("mean", "median", "auc_ccdf", "neg_wasserstein")}
        return {"family": "f", "task": "t", "method": "pearson", "quantity": quantity, **stats}

    table = [row("log_p_vocab", 1.0), row("p_vocab", 1.0 + 3e-15), row("p_choices", 0.2), row("brier", 0.2)]
    out = ordering_checks(
        table,
        [["log_p_vocab", ">=", "p_vocab"], ["p_vocab", ">", "p_choices"], ["p_choices", ">", "brier"]],
        1e-9,
    )
    assert out["log_p_vocab >= p_vocab"]["n_holds"] == 4  # equal up to rounding
    assert out["p_vocab > p_choices"]["n_holds"] == 4
    assert out["p_choices > brier"]["n_holds"] == 0 and out["p_choices > brier"]["n"] == 4
