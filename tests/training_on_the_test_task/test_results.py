"""The lm-eval results loader: layout, metrics, the authors' MMLU average, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testtask.lm.results import ResultsError, load_results


def lm_eval_json(benchmark: str, value: float, subtasks: dict[str, float] | None = None) -> dict:
    results = {benchmark: {"acc,none": value, "acc_stderr,none": 0.01, "alias": benchmark}}
    for name, acc in (subtasks or {}).items():
        results[name] = {"acc,none": acc, "acc_stderr,none": "N/A", "alias": f" - {name}"}
    return {"results": results, "versions": {}, "n-shot": {}}


def write(root: Path, relative: str, payload) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return path


def test_layout_metrics_and_entries_mean(tmp_path):
    write(tmp_path, "base/llama-2-7b-mmlu.json", lm_eval_json("mmlu", 0.40, {"mmlu_a": 0.2, "mmlu_b": 0.9}))
    write(tmp_path, "e3/mmluaux/llama-2-7b-mmlu.json", lm_eval_json("mmlu", 0.5))
    write(tmp_path, "intermediate/gsm8kaux/evals/llama-2-7b/step_250/gsm8k.json", lm_eval_json("gsm8k", 0.1))
    write(
        tmp_path, "new_evals/mmluaux/llama-2-7b-leaderboard_musr.json", lm_eval_json("leaderboard_musr", 0.3)
    )
    df = load_results(tmp_path)
    base = df[(df.adjustment == "base") & (df.benchmark == "mmlu")].set_index("metric")
    assert base.loc["acc,none", "value"] == pytest.approx(0.40)
    assert base.loc["acc,none", "stderr"] == pytest.approx(0.01)
    # the authors' MMLU score: every entry of `results` weighs the same
    assert base.loc["acc,none|entries_mean", "value"] == pytest.approx((0.40 + 0.2 + 0.9) / 3)
    step = df[df.adjustment == "intermediate"].iloc[0]
    assert (step.model, step.finetune, step.step, step.benchmark) == ("llama-2-7b", "gsm8kaux", 250, "gsm8k")
    v2 = df[df.suite == "v2"].iloc[0]
    assert (v2.adjustment, v2.finetune, v2.benchmark) == ("e3", "mmluaux", "leaderboard_musr")
    assert df[(df.adjustment == "e3") & (df.suite == "v1")].iloc[0].stderr == pytest.approx(0.01)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("{not json", "not valid JSON"),
        ({"versions": {}}, "missing the 'results' object"),
        ({"results": {"other": {"acc,none": 0.3}}}, "has no entry 'mmlu'"),
        ({"results": {"mmlu": {"acc,none": "high"}}}, "'results.mmlu.acc,none' is 'high'"),
        ({"results": {"mmlu": {"alias": "mmlu"}}}, "holds no metric"),
    ],
)
def test_malformed_files_name_file_and_field(tmp_path, payload, message):
    path = write(tmp_path, "base/pythia-70m-mmlu.json", payload)
    with pytest.raises(ResultsError) as err:
        load_results(tmp_path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_unexpected_place_and_unknown_model(tmp_path):
    write(tmp_path, "e3/pythia-70m-mmlu.json", lm_eval_json("mmlu", 0.3))
    with pytest.raises(ResultsError, match="not a place the layout expects"):
        load_results(tmp_path)
    (tmp_path / "e3" / "pythia-70m-mmlu.json").unlink()
    path = write(tmp_path, "base/mystery-7b-mmlu.json", lm_eval_json("mmlu", 0.3))
    with pytest.raises(ResultsError) as err:
        load_results(tmp_path, known_model=lambda name: name != "mystery-7b")
    assert "mystery-7b" in str(err.value) and str(path) in str(err.value)


def test_published_release_loads(real_mirror):
    root = real_mirror / "training_on_the_test_task" / "evaluations"
    if not root.is_dir():
        pytest.skip("training-on-the-test-task evaluations not in the mirror")
    df = load_results(root)
    mmlu = df[(df.adjustment == "base") & (df.benchmark == "mmlu") & (df.metric == "acc,none")]
    assert mmlu.model.nunique() == 53
    assert mmlu.value.between(0.2, 0.8).all()
    assert set(df.adjustment) == {"base", "e1", "e2", "e1+2", "e3", "intermediate"}
