"""training-on-the-test-task's claims ledger (conf/claims/training-on-the-test-task.yaml) and its report functions:
the ledger validates, each named function gives a known answer on small synthetic sidecars, the claims resolve on
a synthetic figures folder (or say which sidecar is missing and how to build it), and on the real sidecars, when
they have been built, no claim fails with a path or rule error.

The real sidecars are looked for in `figures/training-on-the-test-task/published/` (`make figures tables
PAPER=training-on-the-test-task`) or in `$TESTTASK_REPORT_FIGURES/training-on-the-test-task/published/`; absent, that test
is skipped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from testtask.report import evaluate, paths, rules
from testtask.report.ledger import thaw
from testtask.report.main import ledger_file, load_ledger
from testtask.training_on_the_test_task import registry
from testtask.training_on_the_test_task import report as functions

PAPER = "training-on-the-test-task"
REPO = Path(__file__).resolve().parents[2]
N_CLAIMS = 100
RELEASE_FOLDERS = {"base", "e1", "e2", "e1+2", "e3", "intermediate", "new_evals"}


def test_ledger_validates_and_uses_every_function():
    loaded = load_ledger(PAPER)
    assert loaded is not None and loaded.file == ledger_file(PAPER)
    ids = [c.id for c in loaded.claims]
    assert len(ids) == len(set(ids)) == N_CLAIMS
    assert all(i.startswith("tott.") for i in ids)
    assert loaded.functions() == set(registry.PAPER.report) == set(functions.FUNCTIONS)
    for claim in loaded.claims:
        for need in claim.needs:
            folder, *rest = need.split("/")
            assert folder == "evaluations" and rest and rest[0] in RELEASE_FOLDERS, (claim.id, need)
        # Figures 9 and 20 are not built from the authors' release: no input of it can make them
        if claim.shown_beside in ("figure-9", "figure-20"):
            assert not claim.needs and claim.note and "not in the authors' release" in claim.note


# ---------------------------------------------------------------- synthetic sidecars


def _pt(model: str, log10_compute: float, group: int, value: float) -> dict:
    return {"model": model, "log10_compute": log10_compute, "group": group, "value": value}


POINTS = [
    _pt("pythia-70m", 20.1, 0, 0.25),
    _pt("llama-2-70b", 23.9, 0, 0.69),
    _pt("llama-3-8b", 23.86, 1, 0.66),
    _pt("qwen-1.5-4b", 21.9, 1, 0.55),
]


def _panel(benchmark: str, adjusted: bool, theta: float, p: float, **extra) -> dict:
    return {
        "benchmark": benchmark,
        "adjusted": adjusted,
        "theta": theta,
        "theta_p": p,
        "r2": 0.95,
        "c_e": 22.0,
        "chance": 0.25 if benchmark != "gsm8k" else 0.0,
        "n_models": 4,
        "relative_difference": 0.15,
        "points": POINTS,
        **extra,
    }


def _families(
    qwen: list[tuple[float, float]], llama: list[tuple[float, float]], pythia_values: list[float]
) -> dict:
    def family(prefix: str, rows: list[tuple[float, float]], slope: float) -> dict:
        return {
            "models": [f"{prefix}-{i}" for i in range(len(rows))],
            "log10_compute": [c for c, _ in rows],
            "values": [v for _, v in rows],
            "log_linear_slope": slope,
        }

    pythia = [(20.0 + i, v) for i, v in enumerate(pythia_values)]
    return {
        "Pythia": family("pythia", pythia, 0.1),
        "Llama 2": family("llama-2", llama, 0.15),
        "Qwen 1.5": family("qwen-1.5", qwen, 0.16),
    }


def _checkpoints(rows: list[tuple[int, int, float, float]]) -> list[dict]:
    return [
        {"examples": ex, "n_models": n, "c_e_log10": c, "c_e_flops": 10**c, "log_linear_r2": r2}
        for ex, n, c, r2 in rows
    ]


@pytest.fixture(scope="module")
def sidecars() -> dict:
    """A small synthetic set of the sidecars the named functions read."""
    qwen = [(21.0, 0.40), (22.0, 0.50), (23.0, 0.60)]
    return {
        "figure-1.json": {
            "figure": 1,
            "panels": [
                _panel("mmlu", False, 0.05, 0.01),
                _panel("gsm8k", False, 0.2, 0.001),
                _panel("mmlu", True, -0.002, 0.8),
                _panel("gsm8k", True, 0.003, 0.9),
            ],
        },
        "figure-2.json": {
            "panels": [
                {"benchmark": "mmlu", "mean_gain_group_0": 0.11, "mean_gain_group_1": 0.03},
                {"benchmark": "gsm8k", "mean_gain_group_0": 0.10, "mean_gain_group_1": 0.12},
            ]
        },
        "figure-3.json": {
            "figure": 3,
            "panels": [_panel("mmlu", False, 0.06, 0.01), _panel("gsm8k", False, 0.1, 0.01)],
        },
        "figure-4.json": {
            "figure": 4,
            "panels": [
                _panel("arc_challenge_mc", False, 0.1, 0.02),
                _panel("hellaswag_mc", False, -0.01, 0.5),
            ],
        },
        "figure-5.json": {"figure": 5, "panels": [_panel("mmlu_brier", False, -0.04, 0.04, c_e=22.3)]},
        "figure-6.json": {
            "panels": [
                # Llama 2's largest (23.5, 0.61) beats every Qwen at no more compute; Pythia below 21 is ignored
                {
                    "benchmark": "mmlu",
                    "adjusted": False,
                    "families": _families(qwen, [(21.5, 0.3), (23.5, 0.61)], [0.25, 0.27]),
                },
                {
                    "benchmark": "mmlu",
                    "adjusted": True,
                    "families": _families(qwen, [(21.5, 0.3), (22.5, 0.5)], [0.25, 0.27]),
                },
            ]
        },
        "figure-15.json": {
            "figure": 15,
            "panels": [
                *[
                    _panel(b, False, t, 0.01)
                    for b, t in zip(functions.V2, (0.04, 0.02, 0.015, 0.02, 0.016), strict=True)
                ],
                *[
                    _panel(b, True, t, 0.5)
                    for b, t in zip(functions.V2, (0.03, 0.0015, -0.001, 0.025, 0.012), strict=True)
                ],
            ],
        },
        "figure-18.json": {
            "figure": 18,
            "panels": [
                _panel("arc_challenge", False, 0.0, 0.9, c_e=21.3),  # above the smallest model (20.1): a kink
                _panel("hellaswag", False, 0.0, 0.9, c_e=19.9),
                _panel("arc_challenge_mc", False, 0.1, 0.01, c_e=22.1),
                _panel("hellaswag_mc", False, 0.1, 0.01, c_e=23.2),
                _panel("arc_challenge_mc_brier", False, 0.1, 0.01, c_e=22.4),
                _panel("hellaswag_mc_brier", False, 0.1, 0.01, c_e=22.6),
            ],
        },
        "figure-19.json": {
            "figure": 19,
            "checkpoints": _checkpoints(
                [
                    (0, 30, 22.5, 0.5),
                    (64000, 30, 21.8, 0.78),
                    (1600000, 30, 20.8, 0.85),
                    (1760000, 10, 23.0, 0.2),
                ]
            ),
        },
        "figure-20.json": {
            "figure": 20,
            "panels": [_panel("mmlu", False, 0.03, 0.04), _panel("gsm8k", False, 0.25, 0.01)],
        },
    }


def test_cohort_functions(sidecars):
    gain = functions.older_gain_larger(sidecars)
    assert gain["older_gain_larger"] is False  # GSM8K: newer gain larger
    assert gain["mean_gain_older"] == {"mmlu": 0.11, "gsm8k": 0.1}
    assert functions.smallest_newer_compute(sidecars) == pytest.approx(10**21.9)
    assert functions.treatment_vs_newer(sidecars) == {
        "larger_than_fig1": False,
        "ratio": {"mmlu": 1.2, "gsm8k": 0.5},
    }
    mc = functions.mc_vs_mmlu(sidecars)
    assert mc["positive"] is False and mc["ratio_to_mmlu"] == {"arc_challenge_mc": 2.0, "hellaswag_mc": -0.2}
    assert functions.llama_3_vs_llama_2(sidecars) == {"mmlu": -3.0, "gsm8k": -3.0}
    gap = functions.instruct_gap_smaller(sidecars)
    assert gap["smaller_than_base"] is False and gap["theta_instruct"] == {"mmlu": 0.03, "gsm8k": 0.25}


def test_emergence_functions(sidecars):
    brier = functions.brier_emergence(sidecars)
    assert brier["kink_inside_range"] is True and (brier["c_e_log10"], brier["smallest_log10_compute"]) == (
        22.3,
        20.1,
    )
    cloze = functions.cloze_emergence(sidecars)
    assert cloze["kink_inside_range"] == ["arc_challenge"]
    assert functions.mc_emergence_accuracy(sidecars) == {
        "outside": ["hellaswag_mc"],
        "c_e_log10": {"arc_challenge_mc": 22.1, "hellaswag_mc": 23.2},
    }
    assert functions.mc_emergence_brier(sidecars)["outside"] == []
    gsm = functions.gsm8k_emergence(sidecars)
    # the last checkpoint (10 of 30 models) is left out: judged on base -> 64,000 -> 1,600,000 examples
    assert gsm["examples"] == [0, 64000, 1600000] and gsm["checkpoints_left_out"] == 1
    assert gsm["c_e_falls"] is True and gsm["log_linear_r2_rises"] is True
    assert gsm["c_e_log10"] == [22.5, 21.8, 20.8] and gsm["log_linear_r2"] == [0.5, 0.78, 0.85]
    rising = {"checkpoints": _checkpoints([(0, 30, 21.0, 0.5), (64000, 30, 21.8, 0.4)])}
    got = functions.gsm8k_emergence({"figure-19.json": rising})
    assert got["c_e_falls"] is False and got["log_linear_r2_rises"] is False


def test_pareto_functions(sidecars):
    mmlu = functions.FUNCTIONS["qwen_dominates_mmlu"](sidecars)
    assert mmlu["not_dominated"] == ["llama-2-1"]
    assert mmlu["dominated"] == {"Llama 2": "1 of 2", "Pythia": "1 of 2"}  # pythia-0 is below every Qwen
    assert mmlu["at_or_above_smallest_qwen"] == {"Llama 2": 2, "Pythia": 1}
    with pytest.raises(evaluate.NotComputable, match="0 panels of gsm8k"):
        functions.FUNCTIONS["qwen_dominates_gsm8k"](sidecars)
    after = functions.similar_after_adjustment(sidecars)
    assert after["qwen_dominates_mmlu"] is True  # every Llama 2 and Pythia model dominated
    assert after["slopes_mmlu"] == {"Pythia": 0.1, "Llama 2": 0.15, "Qwen 1.5": 0.16}
    assert functions.pythia_above_chance(
        {**sidecars, "figure-6.json": {"panels": [*sidecars["figure-6.json"]["panels"], _gsm8k_panel()]}}
    ) == {"mmlu": 2.0, "gsm8k": 4.0}


def _gsm8k_panel() -> dict:
    return {
        "benchmark": "gsm8k",
        "adjusted": False,
        "families": _families([(21.0, 0.1)], [(22.0, 0.05)], [0.01, 0.04]),
    }


def test_v2_functions(sidecars):
    smaller = functions.v2_smaller_than_mmlu(sidecars)
    assert smaller == {
        "all_smaller": True,
        "max_theta": 0.04,
        "max_benchmark": "mmlu_pro",
        "mmlu_theta": 0.05,
    }
    reduced = functions.v2_reduced(sidecars)
    assert reduced["not_reduced"] == ["bbh"] and reduced["theta"]["musr"] == [0.015, -0.001]
    assert functions.v2_adjusted_abs_theta(sidecars) == pytest.approx({"gpqa": 0.0015, "musr": 0.001})
    assert functions.FUNCTIONS["v2_reduction_mmlu_pro"](sidecars) == pytest.approx(25.0)
    assert functions.FUNCTIONS["v2_reduction_bbh"](sidecars) == pytest.approx(-25.0)
    zero = {"figure": 15, "panels": [_panel("bbh", False, 1e-15, 0.5), _panel("bbh", True, 0.01, 0.5)]}
    with pytest.raises(evaluate.NotComputable, match="before adjustment is 0"):
        functions.reduction(zero, "bbh")


def test_missing_sidecar_names_it():
    with pytest.raises(evaluate.MissingOutput) as err:
        functions.v2_reduced(evaluate.Sidecars(Path("/nonexistent")))
    assert err.value.file == "figure-15.json"


# ---------------------------------------------------------------- the ledger on a synthetic figures folder


def test_claims_on_a_synthetic_folder(sidecars, tmp_path):
    """Sidecars written to a folder, inputs present: every claim is judged or names the sidecar it lacks."""
    folder = tmp_path / "figures" / PAPER
    folder.mkdir(parents=True)
    for name in ("figure-1.json", "figure-2.json", "figure-15.json", "figure-18.json"):
        (folder / name).write_text(json.dumps(sidecars[name]))
    data_root = tmp_path / "published" / PAPER
    for sub in RELEASE_FOLDERS:
        (data_root / "evaluations" / sub).mkdir(parents=True)
    verdicts = {
        v.claim.id: v for v in evaluate.evaluate(load_ledger(PAPER), folder, data_root, registry.PAPER.report)
    }
    assert len(verdicts) == N_CLAIMS
    assert verdicts["tott.fig1.mmlu.theta"].status == evaluate.DIFFERS  # 0.050 against 0.073
    assert verdicts["tott.fig1.gsm8k.significant"].status == evaluate.MATCHES
    assert verdicts["tott.s31.smallest_newer_compute"].status == evaluate.DIFFERS  # 10^21.9 ≈ 7.9·10^21 → 8
    assert verdicts["tott.fig2.older_gain_larger"].status == evaluate.DIFFERS
    assert verdicts["tott.appe.reduces_all_five"].status == evaluate.DIFFERS
    assert verdicts["tott.fig18.cloze_no_emergence"].difference.startswith("kink_inside_range: ours adds")
    built = {"figure-1.json", "figure-2.json", "figure-15.json", "figure-18.json"}
    for verdict in verdicts.values():
        if verdict.status == evaluate.NOT_COMPUTABLE:
            # only a sidecar not built; named, with the command that builds it
            assert len(verdict.missing) == 1 and verdict.missing[0] not in built, verdict
            assert verdict.command == f"make {Path(verdict.missing[0]).stem} PAPER={PAPER}"
    assert verdicts["tott.fig9.theta"].missing == ("figure-9.json",)
    assert verdicts["tott.fig20.smaller_than_base"].missing == ("figure-20.json",)


# ---------------------------------------------------------------- the ledger on the real sidecars


def _real_folder() -> Path | None:
    roots = [Path(os.environ["TESTTASK_REPORT_FIGURES"])] if os.environ.get("TESTTASK_REPORT_FIGURES") else []
    roots.append(REPO / "figures")
    for root in roots:
        folder = root / PAPER / "published"  # paths.output_dir
        if (folder / "figure-1.json").is_file() and (folder / "table-3.json").is_file():
            return folder
    return None


def test_real_sidecars_have_no_path_or_rule_errors():
    folder = _real_folder()
    if folder is None:
        pytest.skip(f"no built sidecars of {PAPER} (make figures tables PAPER={PAPER})")
    loaded = load_ledger(PAPER)
    sidecars = evaluate.Sidecars(folder)
    not_built = []
    for claim in loaded.claims:
        try:
            value = evaluate.compute(claim, sidecars, registry.PAPER.report)
        except evaluate.MissingOutput as err:
            not_built.append(err.file)
            continue
        except (
            paths.PathError,
            evaluate.NotComputable,
            LookupError,
        ) as err:  # pragma: no cover - the failure
            pytest.fail(f"{claim.id}: {err}")
        rules.apply(claim.rule.kind, value, thaw(claim.paper), claim.rule.params)  # no RuleError
    # only the figures the authors' release cannot give may be absent
    assert set(not_built) <= {"figure-9.json", "figure-20.json"}, sorted(set(not_built))
    data_root = REPO / "data" / "published" / PAPER
    if (data_root / "evaluations" / "base").is_dir():
        for verdict in evaluate.evaluate(loaded, folder, data_root, registry.PAPER.report):
            if verdict.status == evaluate.NOT_COMPUTABLE:
                assert verdict.missing and verdict.missing[0] in ("figure-9.json", "figure-20.json"), verdict
