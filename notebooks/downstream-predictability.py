# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Reviewer's notebook: *Why has predicting downstream capabilities of frontier AI models with scale remained elusive?*
#
# Schaeffer et al. (`downstream-predictability`) take per-sample lm-eval scores of several model families
# (Pythia, Cerebras-GPT, OLMo, INCITE, LLM360) and ask, for every benchmark question separately, how well its
# score tracks training compute across a family. Their claim: the score is computed from the model's
# loglikelihoods through a chain of transformations, and each step weakens the relation with compute,
#
# log p_vocab(correct) → p_vocab(correct) → p_choices(correct) → Brier score, accuracy,
#
# because from p_choices on, the score depends on how much probability the model puts on a few specific
# *incorrect* choices, and that mass fluctuates with scale.
#
# The authors released no per-sample logs, so this notebook runs the analysis on our own runs: the CPU
# mini-replication of `training-on-the-test-task` logged every question's loglikelihoods for SmolLM2-135M before
# fine-tuning, at LoRA checkpoints after 10, 20, 30 and 40 steps, and at the end of the epoch (50 steps)
# (`results/training-on-the-test-task/cpu-mini/samples/`). That is a family of six members whose compute grows
# only by the fine-tuning tokens (pretraining is the same model), on the six tasks every member was evaluated
# on: a small analogue of the paper's scaling families, not a replication of them. To show what the analysis
# does with a scaling family whose answer is known, the second half runs it on a *simulated* family.
#
# Every number comes from the `testtask` library through the CLI
# (`testtask action=figure figure=N paper=downstream-predictability source=results`); the figures' JSON files
# (`figures/downstream-predictability/results-cpu-mini/`) hold the numbers behind every panel. With `TESTTASK_NOTEBOOK_FAST=1` Figure 5 is skipped and the simulated
# family is smaller.

# %%
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from IPython.display import Image, display

from testtask.downstream_predictability.chain import LABELS, chain
from testtask.downstream_predictability.simulate import build_simulated
from testtask.notebook import Walkthrough
from testtask.pipeline import build, compose

PAPER = "downstream-predictability"
NB = Walkthrough(PAPER, fast_builds={"table": set(), "figure": {2, 3, 4, 6}})
CFG = NB.cfg.downstream_predictability
RESULTS = "source=results"  # the paper published nothing per sample: every figure reads our runs
pd.set_option("display.width", 200)
pd.set_option("display.max_columns", 30)

# %% [markdown]
# ## The chain, on one question
#
# lm-eval scores a multiple-choice question by the loglikelihood ℓ_i of each choice's continuation given the
# prompt. When a choice is several tokens long, ℓ_i is the *sum* of the tokens' log probabilities, so
# p_vocab(choice) = exp(ℓ_i) is the probability of the whole continuation over the model's vocabulary. Then
# p_choices renormalises over the offered choices, the Brier score is Σ_i (1[i = correct] − p_choices(i))²
# (lower is better) and accuracy is 1 when the correct choice has the largest p_choices.
#
# Below, three "models" give the correct choice (A) the *same* vocabulary mass, 0.02. The first two give it the
# same p_choices, 0.4 (as in the paper's example), but the first spreads the rest evenly over B, C and D
# (accuracy 1) while the second piles it on B (accuracy 0); the third puts more mass on every incorrect choice.
# Nothing about the correct choice changed, yet p_choices, the Brier score and accuracy all move.

# %%
masses = np.array([[0.02, 0.01, 0.01, 0.01], [0.02, 0.028, 0.001, 0.001], [0.02, 0.02, 0.02, 0.02]])
values = chain(np.log(masses), np.array([0]))
display(
    pd.DataFrame({LABELS[q]: values[q] for q in ("log_p_vocab", "p_vocab", "p_choices", "brier", "accuracy")})
    .rename(index=lambda i: f"model {i + 1}")
    .round(4)
)

# %% [markdown]
# ## The CPU mini family
#
# Members are found in the folder tree (`samples/base`, `samples/e1/mcaux` and, when evaluated, intermediate
# fine-tuning checkpoints). Compute is 6·N·D for pretraining (N = 1.35·10⁸, D = 2·10¹² tokens from the
# SmolLM2-135M model card) plus 6·N·(fine-tuning tokens). The runner records the number of fine-tuning steps
# but not the tokens, so the tokens are steps × batch size × context length, an upper bound (labelled so in the
# JSON). Accuracy and Brier scores recomputed from the logged loglikelihoods are checked against the values
# lm-eval logged for every question.

# %%
numbers = NB.figure(2, RESULTS)
if numbers:
    for name, family in numbers["families"].items():
        print(f"{name}: {family['n_members']} members")
        display(
            pd.DataFrame(family["members"])[["name", "compute_flops", "finetuning_flops", "finetuning_steps"]]
        )
        basis = {m.get("finetuning_tokens_basis") for m in family["members"]} - {None}
        print("fine-tuning tokens:", *basis)
        checks = [
            (task, member, metric, check.get("n_agree", check.get("max_abs_diff")), check["n"])
            for task, info in family["tasks"].items()
            for member, metrics in info["lm_eval_check"].items()
            for metric, check in metrics.items()
        ]
        agree = [c for c in checks if c[2] != "brier_score"]
        print(
            f"lm-eval check: accuracy agrees on {sum(c[3] for c in agree)} of {sum(c[4] for c in agree)} "
            f"question-member pairs; largest Brier difference "
            f"{max(c[3] for c in checks if c[2] == 'brier_score'):.1e}"
        )
    for warning in numbers["warnings"]:
        print("WARNING:", warning)
    for name, panel in numbers["panels"].items():
        print(f"{name}, {panel['task']}: {panel['summary']}")

# %% [markdown]
# **Figure 2** (paper: distributions of the per-sample correlations and their complementary CDFs; top row
# schematic). With six members a Spearman correlation takes only a handful of values, hence the steps.
#
# **Figure 3** follows one benchmark (ARC Challenge in the paper, `arc_challenge` here) along the chain,
# Spearman correlations: A log p_vocab (p_vocab dashed: a monotone map, identical ranks), B p_choices, C Brier
# (negated, so positive means "improves with compute"), D accuracy. A question whose accuracy is the same for
# every member has no correlation; it is dropped from the distribution and counted (`undefined: drop`).

# %%
numbers = NB.figure(3, RESULTS)
if numbers:
    rows = {
        f"{quantity}": {
            key: panel[key] if key == "task" else panel["summary"][key]
            for key in ("task", "n_samples", "n_undefined", "fraction_above_0", "mean", "auc_ccdf")
        }
        for quantity, by_family in numbers["panels"].items()
        for panel in by_family.values()
    }
    display(pd.DataFrame(rows).T)

# %% [markdown]
# **Figure 4**: the four statistics of §3 for every benchmark and quantity, one column per correlation method:
# mean, median, area under the complementary CDF on [−1, 1] (= mean + 1) and −min(W(C, +1), W(C, −1)), the
# negative Wasserstein distance to perfect correlation or perfect anti-correlation, whichever is nearer
# (= |mean| − 1; the one-sided −W(C, +1) is in the JSON too). The paper's ordering is
# log p_vocab ≥ p_vocab > p_choices ≥ Brier > accuracy; the JSON counts in how many cases each step holds.

# %%
numbers = NB.figure(4, RESULTS)
if numbers:
    table = pd.DataFrame(numbers["rows"])
    spearman = table[table.method == CFG.focus.method]
    print(f"Mean over the {len(numbers['tasks'])} tasks ({CFG.focus.method}):")
    display(
        spearman.groupby(["family", "quantity"], sort=False)[
            ["mean", "median", "auc_ccdf", "neg_wasserstein", "n_undefined"]
        ]
        .agg(
            {
                "mean": "mean",
                "median": "mean",
                "auc_ccdf": "mean",
                "neg_wasserstein": "mean",
                "n_undefined": "sum",
            }
        )
        .round(3)
    )
    display(
        spearman.pivot(index="task", columns="quantity", values="mean")[list(CFG.figure_4.quantities)].round(
            2
        )
    )
    print({step: f"{o['n_holds']}/{o['n']}" for step, o in numbers["ordering"].items()})

# %% [markdown]
# **Figure 5** (paper: MathQA, MMLU Conceptual Physics, SciQ): each question × member as a point, for the metrics
# on both sides of a transformation. p_vocab says little about p_choices; p_choices above ½ forces accuracy 1
# but below ½ says little; the Brier score follows p_choices more closely.

# %%
numbers = NB.figure(5, RESULTS)
if numbers:
    display(
        pd.DataFrame(
            [{k: p.get(k) for k in ("task", "x", "y", "n_points", "spearman")} for p in numbers["panels"]]
        ).round(3)
    )

# %% [markdown]
# **Figure 6**: vocabulary mass on the correct choice against the summed mass on the incorrect ones. The paper
# finds them positively related but with a spread of orders of magnitude. `per_sample_co_movement` is, per
# question, the correlation over members of the two masses.

# %%
numbers = NB.figure(6, RESULTS)
if numbers:
    display(
        pd.DataFrame(
            [
                {
                    "task": p["task"],
                    "spearman (pooled)": p["spearman_log_masses"],
                    "co-movement mean": p["per_sample_co_movement"]["mean"],
                    "co-moving share": p["per_sample_co_movement"]["fraction_above_0"],
                    "incorrect mass rises with compute": p["per_sample_incorrect_mass_vs_compute"][
                        "fraction_above_0"
                    ],
                }
                for p in numbers["panels"]
            ]
        ).round(3)
    )

# %% [markdown]
# ## A simulated family with a known answer
#
# `testtask.downstream_predictability.simulate` writes lm-eval samples files for K members with log compute
# evenly spaced. For 70% of the questions the correct choice's log mass rises linearly with log compute, for
# the rest it is flat or falls; the incorrect choices' log mass rises with the same slope times ρ = 0.8 plus
# member-specific noise (the co-variation the paper's Figure 6 reports). By construction log p_vocab(correct)
# correlates with compute at +1 for the rising questions, while p_choices, which compares the correct choice with
# the fluctuating incorrect ones, correlates much less: the paper's mechanism. `build_simulated` writes the
# family into a temporary results tree and builds the figures from it through the same CLI.

# %%
SIMULATED = f"{NB.figures_dir}/variants/simulated"
with tempfile.TemporaryDirectory() as work:
    family, built = build_simulated(
        work,
        SIMULATED,
        lambda overrides, numbers: build(compose(overrides), "figure", numbers),
        figures=(3, 4) if NB.fast else (2, 3, 4, 5, 6),
        n_members=6 if NB.fast else 10,
        n_docs=120 if NB.fast else 400,
        seed=int(NB.cfg.seed) % 2**32,
    )
print(f"built {[b['figure'] for b in built]}; rising questions: {np.mean(family.slopes['sim_task'] > 0):.2f}")
# the family's own settings make its build a variant: its folder is the one under SIMULATED holding Figure 4
SIM_OUT = next(Path(SIMULATED).rglob("figure-4.json")).parent
display(Image(filename=str(SIM_OUT / "figure-3.png")))
sim = json.loads((SIM_OUT / "figure-4.json").read_text())
sim_table = pd.DataFrame(sim["rows"])
display(
    sim_table[sim_table.method == CFG.focus.method]
    .set_index("quantity")[["mean", "median", "auc_ccdf", "neg_wasserstein", "n_undefined", "n_samples"]]
    .round(3)
)
print({step: f"{o['n_holds']}/{o['n']}" for step, o in sim["ordering"].items()})

# %% [markdown]
# Reading the simulated table: log p_vocab and p_vocab share their rank correlations; p_choices and the Brier
# score fall well below them. Accuracy's mean can come out *higher* than p_choices' because the questions a
# family always gets right or always wrong have no correlation and are dropped; with
# `downstream_predictability.undefined=zero` they count as uncorrelated instead (shown below outside FAST mode).

# %%
if not NB.fast:
    ZERO = "downstream_predictability.undefined=zero"  # a variant: its own folder
    if NB.build("figure", 4, RESULTS, ZERO):
        zero = pd.DataFrame(NB.numbers("figure-4", None, RESULTS, ZERO)["rows"])
        display(
            zero[zero.method == CFG.focus.method]
            .groupby("quantity", sort=False)[["mean", "auc_ccdf"]]
            .mean()
            .round(3)
        )
