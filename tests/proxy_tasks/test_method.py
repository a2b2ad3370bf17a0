"""proxy-tasks: normalisation, correlations, Algorithm 1, robustness, weights and leave-one-model-out prediction
on hand-computed cases and simulated score matrices with known structure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau, pearsonr, spearmanr

from testtask.proxy_tasks.combine import select_proxies, sigmoid
from testtask.proxy_tasks.consistency import Consistency, sampling_consistency
from testtask.proxy_tasks.correlation import correlate
from testtask.proxy_tasks.normalise import Normaliser
from testtask.proxy_tasks.predict import leave_one_model_out
from testtask.proxy_tasks.robustness import stderr_proxy, validate_ensembles, variance_ratio
from testtask.proxy_tasks.selection import fit_proxies
from testtask.proxy_tasks.settings import IfNone, Method

LABELS = {"data": "data_variability", "noise": "random_noise"}


def settings(**changes) -> Method:
    base = Method(
        normalisation="two_step",
        metrics=("pearson", "spearman", "kendall"),
        metric="auto",
        fallback_metric="kendall",
        eps_c=0.3,
        n_models=10,
        samples=25,
        top_t=3,
        min_top_frequency=0.0,
        robustness="none",
        eps_r=1.0,
        sigmoid_k=1.0,
        max_proxies=None,
        if_none_selected="best_single",
    )
    return base.with_(**changes)


def frame(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    return pd.DataFrame(columns, index=[f"m{i:03d}" for i in range(n)])


# --- normalisation -------------------------------------------------------------------------------------------


def test_two_step_normalisation_matches_hand_computation():
    scores = pd.DataFrame(
        {"a": [1.0, 2.0, 3.0], "b": [10.0, 40.0, 20.0], "y": [0.0, 1.0, 5.0]}, index=["p", "q", "r"]
    )
    norm = Normaliser.fit(scores, ["a", "b"], "two_step")
    # feature step: population mean and sd per task
    assert norm.task_mean.to_dict() == pytest.approx({"a": 2.0, "b": 70 / 3, "y": 2.0})
    sd_a = np.sqrt(2 / 3)
    assert norm.task_sd["a"] == pytest.approx(sd_a)
    out = norm.transform(scores)
    fa = np.array([-1, 0, 1]) / sd_a
    fb = np.array([-40 / 3, 50 / 3, -10 / 3]) / np.sqrt(((40 / 3) ** 2 + (50 / 3) ** 2 + (10 / 3) ** 2) / 3)
    mu = (fa + fb) / 2
    sigma = np.abs(fa - fb) / 2  # population sd of two numbers
    assert out.model_mean.to_numpy() == pytest.approx(mu)
    assert out.model_sd.to_numpy() == pytest.approx(sigma)
    assert out.values["a"].to_numpy() == pytest.approx((fa - mu) / sigma)
    fy = (scores["y"].to_numpy() - 2.0) / scores["y"].std(ddof=0)
    assert out.values["y"].to_numpy() == pytest.approx((fy - mu) / sigma)
    # per model over the candidates: mean 0, sd 1; the target is not part of those statistics
    cand = out.values[["a", "b"]]
    assert cand.mean(axis=1).to_numpy() == pytest.approx(0.0, abs=1e-12)
    assert cand.std(axis=1, ddof=0).to_numpy() == pytest.approx(1.0)
    back = norm.invert(out.values["y"], "y", out.model_mean, out.model_sd)
    assert back.to_numpy() == pytest.approx(scores["y"].to_numpy())


def test_feature_normalisation_and_flat_task_error():
    scores = pd.DataFrame({"a": [1.0, 3.0], "b": [2.0, 2.0]}, index=["p", "q"])
    with pytest.raises(ValueError, match="no spread.*'b'"):
        Normaliser.fit(scores, ["a"], "feature")
    ok = pd.DataFrame({"a": [1.0, 3.0], "b": [2.0, 6.0]}, index=["p", "q"])
    out = Normaliser.fit(ok, ["a"], "feature").transform(ok)
    assert out.values.to_numpy() == pytest.approx(np.array([[-1.0, -1.0], [1.0, 1.0]]))
    assert (out.model_sd == 1.0).all() and (out.model_mean == 0.0).all()


# --- correlations --------------------------------------------------------------------------------------------


def test_correlations_match_scipy_with_ties():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, size=(15, 5)).astype(float)  # many ties
    y = rng.integers(0, 5, size=15).astype(float)
    for metric, ref in (("pearson", pearsonr), ("spearman", spearmanr), ("kendall", kendalltau)):
        got = correlate(y, x, metric)
        want = [ref(y, x[:, j]).statistic for j in range(5)]
        assert got == pytest.approx(want), metric
    flat = correlate(y, np.ones((15, 1)), "kendall")
    assert np.isnan(flat).all()


# --- relevance on a simulated matrix -------------------------------------------------------------------------


def latent_matrix(m: int, seed: int) -> tuple[pd.DataFrame, list[str]]:
    """General ability g and the target's own skill s; informative tasks load on s with growing noise,
    distractors on g and unrelated skills. Returns scores and the informative tasks, least noisy first."""
    rng = np.random.default_rng(seed)
    g, s = rng.normal(size=m), rng.normal(size=m)
    cols = {"target": g + s + 0.3 * rng.normal(size=m)}
    informative = []
    for k, noise in enumerate((0.3, 0.7, 1.2)):
        cols[f"inf{k}"] = g + s + noise * rng.normal(size=m)
        informative.append(f"inf{k}")
    for k in range(6):
        cols[f"other{k}"] = g + rng.normal(size=m) + 0.3 * rng.normal(size=m)
    return frame(cols), informative


@pytest.mark.parametrize("normalisation", ["two_step", "feature"])
def test_relevance_ranks_recover_informative_proxies(normalisation):
    scores, informative = latent_matrix(300, seed=1)
    fit = fit_proxies(scores, "target", settings(normalisation=normalisation), np.random.default_rng(0))
    order = fit.relevance.sort_values(ascending=False).index.tolist()
    assert order[:3] == informative  # ranked by their noise
    assert set(fit.selection.weights.index) == set(informative)
    for metric in ("pearson", "spearman", "kendall"):
        assert set(fit.consistency.baseline_top[metric]) == set(informative)


# --- Algorithm 1 ---------------------------------------------------------------------------------------------


def test_algorithm_1_indices_are_one_when_every_subset_agrees():
    rng = np.random.default_rng(0)
    y = pd.Series(rng.normal(size=30))
    # monotone in y with different slopes, then unrelated tasks: every subset ranks the first three on top
    cands = pd.DataFrame(
        {"a": 3 * y, "b": y**3, "c": np.exp(y), "d": rng.normal(size=30), "e": rng.normal(size=30)}
    )
    res = sampling_consistency(cands, y, ("spearman", "kendall"), 8, 10, 3, np.random.default_rng(1))
    for metric in ("spearman", "kendall"):
        assert res.s[metric] == 1.0 and res.r[metric] == 1.0
        assert set(res.baseline_top[metric]) == {"a", "b", "c"}
        assert res.top_frequency[metric].to_dict() == {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0, "e": 0.0}


def test_algorithm_1_overlap_ratios_by_hand():
    # target and two candidates over 4 models; subsets of 3 models; t = 1
    y = pd.Series([1.0, 2.0, 3.0, 4.0])
    cands = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [4.0, 1.0, 2.0, 5.0]})
    # every subset of 3 models: 'a' is perfectly correlated, 'b' never exceeds it -> top-1 is always 'a'
    res = sampling_consistency(cands, y, ("pearson",), 3, 6, 1, np.random.default_rng(0))
    assert res.s["pearson"] == 1.0 and res.r["pearson"] == 1.0
    # t = 2 = all candidates: overlap is 1 whatever the ranking
    res2 = sampling_consistency(cands, y, ("pearson",), 3, 6, 2, np.random.default_rng(0))
    assert res2.s["pearson"] == 1.0 and res2.r["pearson"] == 1.0


def test_metric_choice_rule():
    def cons(s, r):
        keys = ("pearson", "spearman", "kendall")
        return Consistency(
            keys, ("a",), dict(zip(keys, s, strict=True)), dict(zip(keys, r, strict=True)), {}, {}, 10, 25, 10
        )

    assert cons((0.5, 0.6, 0.6), (0.4, 0.45, 0.5)).choose("pearson") == ("kendall", "dominates")
    # s ties are allowed (>=), r must be strictly greater
    assert cons((0.6, 0.6, 0.5), (0.5, 0.4, 0.3)).choose("kendall") == ("pearson", "dominates")
    # best s and best r held by different metrics: nobody dominates
    assert cons((0.7, 0.6, 0.5), (0.4, 0.5, 0.3)).choose("kendall") == ("kendall", "fallback")
    assert cons((0.5, 0.5, 0.5), (0.4, 0.4, 0.4)).choose("spearman") == ("spearman", "fallback")


def test_algorithm_1_drops_a_proxy_that_correlates_only_in_some_models():
    rng = np.random.default_rng(7)
    m = 200
    a = rng.normal(size=m)
    cluster = np.arange(m) < 40  # the proxy 'local' tracks the target only in these 40 models
    cols = {"target": a + 0.3 * rng.normal(size=m)}
    for k in range(3):
        cols[f"steady{k}"] = a + 0.8 * rng.normal(size=m)
    cols["local"] = np.where(cluster, 3 * a, 0.0) + 0.3 * rng.normal(size=m)
    for k in range(3):
        cols[f"noise{k}"] = rng.normal(size=m)
    scores = frame(cols)
    base = settings(normalisation="feature", metric="pearson", top_t=3, max_proxies=4, samples=50)
    plain = fit_proxies(scores, "target", base, np.random.default_rng(0))
    # over all models 'local' is relevant enough to pass eps_C, so without the consistency filter it is kept
    assert plain.relevance["local"] > base.eps_c
    assert "local" in plain.selection.weights.index
    filtered = fit_proxies(scores, "target", base.with_(min_top_frequency=0.5), np.random.default_rng(0))
    freq = filtered.consistency.top_frequency["pearson"]
    assert freq["local"] < 0.5 <= freq[["steady0", "steady1", "steady2"]].min()
    assert set(filtered.selection.weights.index) == {"steady0", "steady1", "steady2"}
    assert filtered.selection.table.at["local", "reason"] == "not consistently in the top t"


# --- robustness ----------------------------------------------------------------------------------------------


def ensemble_table(rows: list[tuple[str, str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["ensemble", "member", "task", "score"])


def test_variance_ratio_by_hand():
    rows = [("data_variability", f"d{i}", "t", v) for i, v in enumerate([1.0, 2.0, 3.0, 4.0])]
    rows += [("random_noise", f"r{i}", "t", v) for i, v in enumerate([0.0, 2.0])]
    out = variance_ratio(validate_ensembles(ensemble_table(rows), LABELS, "x"), LABELS)
    assert out.at["t", "var_data"] == pytest.approx(5 / 3)  # ddof = 1
    assert out.at["t", "var_noise"] == pytest.approx(2.0)
    assert out.at["t", "ratio"] == pytest.approx(5 / 6)
    assert (out.at["t", "n_data"], out.at["t", "n_noise"]) == (4, 2)


def test_variance_ratio_recovers_simulated_ensemble_variances():
    rng = np.random.default_rng(11)
    truth = {"robust": (4.0, 0.25), "fragile": (1.0, 2.0)}  # (sigma_d^2, sigma_r^2)
    rows = []
    for task, (vd, vr) in truth.items():
        rows += [("data_variability", f"d{i}", task, 50 + rng.normal(0, np.sqrt(vd))) for i in range(4000)]
        rows += [("random_noise", f"r{i}", task, 50 + rng.normal(0, np.sqrt(vr))) for i in range(4000)]
    out = variance_ratio(ensemble_table(rows), LABELS)
    for task, (vd, vr) in truth.items():
        assert out.at[task, "var_data"] == pytest.approx(vd, rel=0.06)
        assert out.at[task, "var_noise"] == pytest.approx(vr, rel=0.06)
        assert out.at[task, "ratio"] == pytest.approx(vd / vr, rel=0.1)


def test_ensemble_table_validation_names_the_field():
    good = [("data_variability", "d", "t", 1.0), ("random_noise", "r", "t", 1.0)]
    with pytest.raises(ValueError, match="lacks column"):
        validate_ensembles(ensemble_table(good).drop(columns="member"), LABELS, "ens.csv")
    bad = ensemble_table([*good, ("data_variability", "e", "t", "n/a")])
    with pytest.raises(ValueError, match=r"ens.csv: field 'score' is not a number.*member='e'"):
        validate_ensembles(bad, LABELS, "ens.csv")
    with pytest.raises(ValueError, match="no rows of kind 'random_noise'"):
        validate_ensembles(ensemble_table(good[:1]), LABELS, "ens.csv")
    with pytest.raises(ValueError, match="several scores"):
        validate_ensembles(ensemble_table([*good, good[0]]), LABELS, "ens.csv")


def test_stderr_proxy_by_hand():
    scores = pd.DataFrame({"t": [0.1, 0.2, 0.3], "u": [0.5, 0.6, 0.9]}, index=list("abc"))
    se = pd.DataFrame({"t": [0.01, 0.02, 0.02], "u": [0.01, np.nan, 0.01]}, index=list("abc"))
    out = stderr_proxy(scores, se)
    assert out.at["t", "var_data"] == pytest.approx(0.01)
    assert out.at["t", "var_noise"] == pytest.approx(3e-4)
    assert out.at["t", "ratio"] == pytest.approx(100 / 3)
    assert np.isnan(out.at["u", "ratio"])  # a missing standard error: no proxy R


def test_ensemble_robustness_filters_a_fragile_proxy_in_prediction():
    scores, informative = latent_matrix(80, seed=2)
    rows = []
    for task in scores.columns:
        fragile = task == informative[0]  # the best proxy varies more with seeds than with data
        vd, vr = (1.0, 4.0) if fragile else (4.0, 1.0)
        rows += [
            ("data_variability", f"d{i}", task, v)
            for i, v in enumerate(np.sqrt(vd) * np.array([-1.5, -0.5, 0.5, 1.5]))
        ]
        rows += [
            ("random_noise", f"r{i}", task, v) for i, v in enumerate(np.sqrt(vr) * np.array([-1.0, 0.0, 1.0]))
        ]
    ens = ensemble_table(rows)
    ratio = variance_ratio(ens, LABELS)
    assert ratio.at[informative[0], "ratio"] < 1 < ratio.at[informative[1], "ratio"]
    fit_on = fit_proxies(
        scores, "target", settings(robustness="ensembles"), np.random.default_rng(0), ensemble_ratio=ratio
    )
    fit_off = fit_proxies(scores, "target", settings(robustness="none"), np.random.default_rng(0))
    assert informative[0] in fit_off.selection.weights.index
    assert informative[0] not in fit_on.selection.weights.index
    assert fit_on.selection.table.at[informative[0], "reason"] == "robustness below threshold"
    lomo = leave_one_model_out(
        scores, "target", settings(robustness="ensembles"), 0, ensembles=ens, ensemble_labels=LABELS
    )
    assert all(informative[0] not in f["weights"] for f in lomo.folds)


# --- thresholds and sigmoid weights --------------------------------------------------------------------------


def test_sigmoid_weights_closed_form():
    rel = pd.Series({"a": 0.8, "b": 0.6, "c": 0.4, "d": 0.2})
    rob = pd.Series({"a": 2.0, "b": 3.0, "c": 0.5, "d": 4.0})
    sel = select_proxies(rel, rob, eps_c=0.3, eps_r=1.0, k=1.0, max_proxies=None, if_none=IfNone.best_single)
    s_a = 0.8 / (1 + np.exp(-2.0))
    s_b = 0.6 / (1 + np.exp(-3.0))
    assert sel.weights.to_dict() == pytest.approx({"a": s_a / (s_a + s_b), "b": s_b / (s_a + s_b)})
    assert list(sel.weights.index) == ["a", "b"]  # highest S first
    assert sel.table.at["c", "reason"] == "robustness below threshold"
    assert sel.table.at["d", "reason"] == "relevance below threshold"
    assert sigmoid(0.0, 3.0) == 0.5 and sigmoid(2.0, 0.5) == pytest.approx(1 / (1 + np.exp(-1.0)))
    # k scales the transform: a larger k flattens the weights towards the relevance ratio
    steep = select_proxies(
        rel, rob, eps_c=0.3, eps_r=1.0, k=50.0, max_proxies=None, if_none=IfNone.best_single
    )
    assert steep.weights["a"] == pytest.approx(0.8 / 1.4)
    top1 = select_proxies(rel, rob, eps_c=0.3, eps_r=1.0, k=1.0, max_proxies=1, if_none=IfNone.best_single)
    assert top1.weights.to_dict() == {"a": 1.0}
    assert top1.table.at["b", "reason"] == "outside the 1 highest scores"


def test_no_candidate_passing_falls_back_or_raises():
    rel = pd.Series({"a": 0.1, "b": 0.25})
    sel = select_proxies(rel, None, eps_c=0.3, eps_r=1.0, k=1.0, max_proxies=None, if_none=IfNone.best_single)
    assert sel.fallback and sel.weights.to_dict() == {"b": 1.0}
    with pytest.raises(ValueError, match="no candidate task passed"):
        select_proxies(rel, None, eps_c=0.3, eps_r=1.0, k=1.0, max_proxies=None, if_none=IfNone.error)


# --- leave-one-model-out prediction --------------------------------------------------------------------------


def linear_target_matrix(m: int = 60, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=m)
    cols = {"proxy": 0.5 + 0.1 * ability + 0.05 * rng.normal(size=m)}
    cols["target"] = 2.0 * cols["proxy"] + 0.1  # exactly linear in one proxy
    for k in range(5):  # tasks that track general ability but not the target's deviations
        cols[f"other{k}"] = 0.5 + 0.1 * ability + 0.05 * rng.normal(size=m)
    return frame(cols)


# Two-step normalisation removes the shared ability, so only the exact proxy is relevant; after the feature step
# alone the other tasks correlate with the target through that ability, so the proxy set is capped at one.
@pytest.mark.parametrize(("normalisation", "cap"), [("two_step", None), ("feature", 1)])
def test_lomo_exact_linear_target_is_predicted_exactly(normalisation, cap):
    scores = linear_target_matrix()
    cfg = settings(normalisation=normalisation, eps_c=0.5, max_proxies=cap)
    lomo = leave_one_model_out(scores, "target", cfg, seed=0)
    pred = lomo.predictions
    proxy_mae = (pred["proxy"] - pred["actual"]).abs().mean()
    base_mae = (pred["mean_of_tasks"] - pred["actual"]).abs().mean()
    assert proxy_mae < 1e-10
    assert base_mae > 0.05  # the level of the other tasks misses the proxy's own noise
    assert (pred["best_single"] - pred["actual"]).abs().max() < 1e-10
    assert all(f["weights"] == {"proxy": pytest.approx(1.0)} for f in lomo.folds)


def test_lomo_never_sees_the_held_out_target():
    scores = linear_target_matrix()
    first = leave_one_model_out(scores, "target", settings(eps_c=0.5), seed=0).predictions.iloc[0]
    changed = scores.copy()
    changed.iloc[0, changed.columns.get_loc("target")] = 1e6
    again = leave_one_model_out(changed, "target", settings(eps_c=0.5), seed=0).predictions.iloc[0]
    for col in ("proxy", "mean_of_tasks", "best_single"):
        assert again[col] == pytest.approx(first[col])
    assert again["actual"] == 1e6


def test_lomo_rejects_incomplete_or_small_matrices():
    scores = linear_target_matrix(m=12)
    with pytest.raises(ValueError, match="too few"):
        leave_one_model_out(scores.iloc[:8], "target", settings(), seed=0)
    holey = scores.copy()
    holey.iloc[3, 0] = np.nan
    with pytest.raises(ValueError, match="complete score matrix"):
        leave_one_model_out(holey, "target", settings(), seed=0)
    with pytest.raises(KeyError, match="nope"):
        leave_one_model_out(scores, "nope", settings(), seed=0)


def test_the_proxy_set_is_capped_at_top_t_unless_max_proxies_is_set():
    # (the settings' values are checked by their schema: tests/proxy_tasks/test_settings.py)
    assert settings(max_proxies=None).proxies_cap == 3 and settings(max_proxies=7).proxies_cap == 7


def test_read_ensembles_csv(tmp_path):
    from testtask.proxy_tasks.robustness import read_ensembles

    path = tmp_path / "ensembles.csv"
    path.write_text(
        "ensemble,member,task,score\n"
        "data_variability,D,t,1\ndata_variability,E,t,3\nrandom_noise,A,t,2\nrandom_noise,B,t,2.5\n"
    )
    out = variance_ratio(read_ensembles(path, LABELS), LABELS)
    assert out.at["t", "ratio"] == pytest.approx(2.0 / 0.125)
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        read_ensembles(tmp_path / "missing.csv", LABELS)
