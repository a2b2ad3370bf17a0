"""proxy-tasks: reading published matrices, the CLI builders, and the leave-one-model-out figure on the real
releases (real_mirror)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import built
from testtask.context import InputsUnavailable
from testtask.pipeline import build, compose, make_context, run
from testtask.proxy_tasks.matrices import train_before_test
from testtask.proxy_tasks.settings import Perplexity, TrainBeforeTestReader

PAPER = "proxy-tasks"
READER = TrainBeforeTestReader("all_results.json", ["wiki_2025"], Perplexity.exclude)


def _release(path: Path) -> Path:
    """A small all_results.json: three benchmarks, a perplexity corpus, one model lacking one benchmark."""
    models = [f"org/m{i}" for i in range(6)]
    rng = np.random.default_rng(0)
    direct = {b: {m: float(rng.uniform(0.2, 0.8)) for m in models} for b in ("a", "b", "c")}
    del direct["c"]["org/m5"]
    direct["wiki_2025"] = {m: float(rng.uniform(0.6, 0.9)) for m in models}
    stderr = {b: {m: 0.01 for m in v} for b, v in direct.items()}
    stderr["wiki_2025"] = {m: "N/A" for m in models}
    path.write_text(json.dumps({"direct_eval": direct, "direct_eval_stderr": stderr}))
    return path


def test_train_before_test_reader(tmp_path):
    path = _release(tmp_path / "all_results.json")
    m = train_before_test(path, "k", "tbt", "direct_eval", READER)
    assert list(m.scores.columns) == ["a", "b", "c"]
    assert m.dropped_models == {"org/m5": ["c"]}
    assert m.scores.shape == (5, 3) and not m.scores.isna().any().any()
    assert (m.stderr == 0.01).all().all()
    flipped = train_before_test(path, "k", "tbt", "direct_eval", replace(READER, perplexity=Perplexity.flip))
    raw = json.loads(path.read_text())["direct_eval"]["wiki_2025"]["org/m0"]
    assert flipped.scores.at["org/m0", "wiki_2025"] == -raw  # bits per byte: lower is better
    assert flipped.stderr["wiki_2025"].isna().all()  # "N/A" -> NaN


def test_train_before_test_reader_errors(tmp_path):
    with pytest.raises(InputsUnavailable):
        train_before_test(tmp_path / "missing.json", "k", "x", "direct_eval", READER)
    path = _release(tmp_path / "all_results.json")
    with pytest.raises(ValueError, match=r"all_results.json: field 'train_before_test' is missing"):
        train_before_test(path, "k", "x", "train_before_test", READER)
    data = json.loads(path.read_text())
    data["direct_eval"]["a"]["org/m1"] = "high"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"field direct_eval.a.org/m1 is not a number"):
        train_before_test(path, "k", "x", "direct_eval", READER)


def test_table_5_from_the_papers_ensembles(tmp_path):
    cfg = compose([f"paper={PAPER}", f"figures_dir={tmp_path}"])
    numbers = build(cfg, "table", [5])
    assert numbers and numbers[0]["table"] == 5
    out = json.loads((tmp_path / PAPER / "published" / "table-5.json").read_text())
    rows = out["rows"]
    assert set(rows) == {"C3", "CMNLI", "OCNLI", "CHID", "RTE", "CMMLU"}
    # C3 random-noise members 31.18, 30.36, 32.26: sample variance by hand
    c3 = np.array([31.18, 30.36, 32.26])
    assert rows["C3"]["var_noise"] == pytest.approx(((c3 - c3.mean()) ** 2).sum() / 2)
    assert rows["C3"]["n_data"] == 5 and rows["C3"]["n_noise"] == 3
    for task, r in rows.items():
        assert r["ratio"] == pytest.approx(r["var_data"] / r["var_noise"]), task
    assert out["paper_reported_table5"]["CMMLU"]["ratio"] == pytest.approx(10.79)
    assert rows["CMMLU"]["ratio"] == pytest.approx(10.79, abs=0.01)
    assert (tmp_path / PAPER / "published" / "table-5.md").is_file()


def test_tott_config_is_reachable_from_proxy_tasks():
    cfg = compose([f"paper={PAPER}"])
    ctx = make_context(cfg, PAPER)
    tott = ctx.context_of("training-on-the-test-task")  # built by the pipeline, with that paper's settings
    assert tott.settings.benchmark("gsm8k").metric == "exact_match,flexible-extract"
    assert ctx.paper_root("training-on-the-test-task").name == "training-on-the-test-task"


def test_real_releases_lomo_figure(real_mirror, tmp_path, monkeypatch):
    if (
        not (real_mirror / "train_before_test").is_dir()
        or not (real_mirror / "training_on_the_test_task").is_dir()
    ):
        pytest.skip("train-before-test or training-on-the-test-task not in the mirror")
    monkeypatch.setenv("TESTTASK_DATA_MIRROR", str(real_mirror))
    data, figures = tmp_path / "published", tmp_path / "figures"
    base = [f"paper={PAPER}", f"data.dest={data}", f"figures_dir={figures}"]
    run(compose([*base, "action=data"]))
    assert (data / "train-before-test" / "all_results.json").is_file()
    cfg = compose([*base, "action=figure", "figure=loo"])
    cfg.proxy_tasks.figure_loo.panels = [
        {"matrix": "tbt_direct", "target": "gsm8k"},
        {"matrix": "tott_base", "target": "gsm8k"},
    ]
    cfg.proxy_tasks.evaluation.bootstrap = 200
    assert run(cfg)
    folder = built(cfg, PAPER)  # the changed settings make a variant of the preset's build
    assert folder.parent.parent.parent.name == "variants"
    out = json.loads((folder / "figure-loo.json").read_text())
    assert (folder / "figure-loo.png").is_file()
    assert "stderr proxy" in out["robustness"]
    by = {p["matrix"]["key"]: p for p in out["panels"]}
    assert set(by) == {"tbt_direct", "tott_base"}
    assert by["tbt_direct"]["n_models"] == 61  # 24 benchmarks, perplexity corpora excluded, no model lacking
    assert len(by["tbt_direct"]["matrix"]["tasks"]) == 24
    assert 45 <= by["tott_base"]["n_models"] <= 53
    for key, panel in by.items():
        actual = np.array([p["actual"] for p in panel["predictions"]])
        assert len(actual) == panel["n_models"]
        errors = panel["errors"]
        assert set(errors) == {"proxy", "mean_of_tasks", "best_single"}
        # sanity: every predictor beats predicting the mean GSM8K score, and ranks models well
        spread = np.abs(actual - actual.mean()).mean()
        for name, e in errors.items():
            assert e["mae"] < 0.8 * spread, (key, name)
            assert e["kendall_tau"] > 0.4, (key, name)
        weights = panel["all_models_selection"]["selection"]["weights"]
        assert weights and sum(weights.values()) == pytest.approx(1.0)
        assert "gsm8k" not in weights
        assert panel["proxy_set"]["mean_size"] >= 1
        assert sum(panel["proxy_set"]["metric_counts"].values()) == panel["n_models"]
