"""The hierarchical binomial model of §6.1: its data, its two parameterisations, and what a fit returns.

    Y_ijkl ~ Binomial(n, λ_ijkl)
    logit λ = μ + α z_i + U_j + V_jk + W_jl + β x_l
    μ ~ N(0, 1), α ~ N(0, 5), β ~ N(0, 1), U_j ~ N(0, σ_U), V_jk ~ N(0, σ_V), W_jl ~ N(0, σ_W)
    σ_U, σ_V ~ HalfNormal(1), σ_W ~ HalfNormal(3.5355)

Two backends build it:

- ``bambi``: the formula as written, non-centred. Its chains mix slowly: μ trades off against all U_j, and β
  against all W_j1 − W_j0 (r̂ of μ ≈ 1.3–1.6 at the paper's 1,000 draws).
- ``marginal`` (default): the same posterior in coordinates the data identify. Only s_j = μ + β/2 + U_j +
  (W_j0 + W_j1)/2 and t_j = β + W_j1 − W_j0 enter the likelihood, so logit λ = c_jk + α z_i + (x_l − ½) t_j with
  c_jk = s_j + V_jk, and the split into U and W is integrated out in closed form:
  s_j ~ N(μ + β/2, sqrt(σ_U² + σ_W²/2)), t_j ~ N(β, sqrt(2)·σ_W), independent; c_jk ~ N(s_j, σ_V).

Data enter as a dense (dataset, subsample, lm_type, arm) array; padded cells carry zero trials, so their c_jk
sees only its prior (which integrates to one) and one compiled model serves every fit of a shape.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from enum import IntEnum

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from testtask.pretrain_on_test.settings import ModelSpec

log = logging.getLogger(__name__)

# Names as bambi gives them, so both backends' posteriors read the same.
INTERCEPT, LM_TYPE, TREATMENT = "Intercept", "lm_type", "treatment"
SIGMA_U, SIGMA_V, SIGMA_W = "1|dataset_sigma", "1|dataset:subsample_sigma", "1|dataset:treatment_sigma"
DIAGNOSED = (TREATMENT, SIGMA_U, SIGMA_V, SIGMA_W)
ARM_OFFSET = np.array([-0.5, 0.5])  # x_l − ½ for control, treatment
# The raw coordinates of σ_U and σ_V where they are not sampled as log σ's (`Scales`).
SCALE_RADIUS, SCALE_ANGLE, SIGMA_V_RAW = "scale_radius", "scale_angle", "1|dataset:subsample_sigma_raw"


class Scales(IntEnum):
    """The coordinates σ_U and σ_V are sampled in: the same prior and posterior, another geometry.

    - LOG: log σ_U, log σ_V (tasks with several subsamples).
    - POLAR: one subsample per task with the V term. The data see only σ_U² + σ_V², an L-shaped ridge in log
      coordinates (divergences in most slice fits). a = σ_U/h_U = r·cos φ, b = σ_V/h_V = r·sin φ: r is Rayleigh(1)
      and φ Uniform(0, π/2), independent; log r and logit(2φ/π) are sampled.
    - PRIOR_ONLY_V: no V term: σ_V = h_V·|B|, B ~ N(0, 1), as log σ_V's doubly exponential tail breaks leapfrog.
    """

    LOG = 0
    POLAR = 1
    PRIOR_ONLY_V = 2


def scale_coordinates(shape: tuple[int, ...], subsample_effect: bool, collapsed: bool) -> Scales:
    """The `Scales` of a fit of data of `shape`, s_j `collapsed` or not."""
    if not subsample_effect:
        return Scales.PRIOR_ONLY_V
    if collapsed and shape[1] == 1:
        return Scales.POLAR
    return Scales.LOG


@dataclass
class ModelData:
    """Counts as a dense (dataset, subsample, lm_type, arm) array; padded cells have zero trials."""

    correct: np.ndarray
    trials: np.ndarray
    datasets: list[str]
    lm_types: list[str]
    n_subsamples: np.ndarray  # per dataset

    @property
    def shape(self) -> tuple[int, ...]:
        return self.correct.shape

    @property
    def observed(self) -> np.ndarray:
        """Mask of (dataset, subsample, lm_type) cells that hold data."""
        return self.trials[..., 0] > 0

    @classmethod
    def from_long(cls, long: pd.DataFrame) -> ModelData:
        """From `accuracies.paired_long` output (columns lm_type, dataset, subsample, treatment, correct, trials)."""
        datasets = sorted(long["dataset"].unique())
        lm_types = sorted(long["lm_type"].unique())
        j = pd.Categorical(long["dataset"], categories=datasets).codes
        i = pd.Categorical(long["lm_type"], categories=lm_types).codes
        k = long["subsample"].to_numpy().astype(int)
        l_ = long["treatment"].to_numpy().astype(int)
        n_sub = np.array([long.loc[long.dataset == d, "subsample"].max() + 1 for d in datasets])
        shape = (len(datasets), int(n_sub.max()), len(lm_types), 2)
        correct = np.zeros(shape, dtype=np.int64)
        trials = np.zeros(shape, dtype=np.int64)
        correct[j, k, i, l_] = long["correct"].to_numpy()
        trials[j, k, i, l_] = long["trials"].to_numpy()
        return cls(correct, trials, datasets, lm_types, n_sub)

    def to_long(self) -> pd.DataFrame:
        j, k, i, l_ = np.nonzero(self.trials)
        return pd.DataFrame(
            {
                "dataset": np.asarray(self.datasets)[j],
                "subsample": k,
                "lm_type": np.asarray(self.lm_types)[i],
                "treatment": l_,
                "correct": self.correct[j, k, i, l_],
                "trials": self.trials[j, k, i, l_],
            }
        )


def build_marginal(shape: tuple[int, int, int, int], spec: ModelSpec) -> pm.Model:
    """The §6.1 model in identified coordinates; data go in through `pm.Data` named correct/trials."""
    n_j, n_k, n_i, _ = shape
    p = spec.priors
    coords = {"dataset": np.arange(n_j), "subsample": np.arange(n_k)}
    with pm.Model(coords=coords) as model:
        correct = pm.Data("correct", np.zeros(shape))
        trials = pm.Data("trials", np.zeros(shape))
        mu = pm.Normal(INTERCEPT, 0.0, p.intercept_sigma)
        beta = pm.Normal(TREATMENT, p.treatment_mu, p.treatment_sigma)
        sigma_u, sigma_v = _scales(shape, spec, p)
        lm_term = 0.0
        if n_i > 1:
            alpha = pm.Normal(LM_TYPE, 0.0, p.lm_type_sigma, shape=n_i - 1)
            lm_term = pt.concatenate([pt.zeros(1), alpha])[None, None, :, None]
        s = None
        if spec.interaction:
            sigma_w = pm.HalfNormal(SIGMA_W, p.sigma_W)
            tau_s = pt.sqrt(sigma_u**2 + sigma_w**2 / 2)
        else:
            tau_s = sigma_u
        if spec.collapse_s is not True and spec.subsample_effect:
            s = pm.Normal("s", mu + beta / 2, tau_s, dims="dataset")
        if not spec.interaction:
            t = pm.Deterministic("t", pt.repeat(beta[None], n_j), dims="dataset")
        elif spec.noncentered_t:
            e = pm.Normal("t_offset", 0.0, 1.0, dims="dataset")
            t = pm.Deterministic("t", beta + np.sqrt(2.0) * sigma_w * e, dims="dataset")
        else:
            t = pm.Normal("t", beta, np.sqrt(2.0) * sigma_w, dims="dataset")
        if not spec.subsample_effect:
            # No V term (one subsample per task): c_j ~ N(μ + β/2, τ_s); σ_V has only its prior.
            c = pm.Normal("c", mu + beta / 2, tau_s, dims=("dataset", "subsample"))
        elif s is None:
            # c_j· ~ N((μ + β/2)·1, σ_V²·I + τ_s²·J): s_j integrated out.
            cov = sigma_v**2 * pt.eye(n_k) + tau_s**2 * pt.ones((n_k, n_k))
            c = pm.MvNormal("c", pt.ones(n_k) * (mu + beta / 2), cov=cov, dims=("dataset", "subsample"))
        else:
            c = pm.Normal("c", s[:, None], sigma_v, dims=("dataset", "subsample"))
        eta = c[:, :, None, None] + lm_term + t[:, None, None, None] * ARM_OFFSET[None, None, None, :]
        # Binomial log-likelihood without its constant; padded cells have zero trials and add nothing.
        pm.Potential("likelihood", pt.sum(correct * eta - trials * pt.softplus(eta)))
    return model


def _scales(
    shape: tuple[int, int, int, int], spec: ModelSpec, p
) -> tuple[pt.TensorVariable, pt.TensorVariable]:
    """σ_U and σ_V (HalfNormal(h_U), HalfNormal(h_V)) in the coordinates `scale_coordinates` picks."""
    collapsed = spec.collapse_s is True or not spec.subsample_effect
    scales = scale_coordinates(shape, spec.subsample_effect, collapsed)
    if scales is Scales.POLAR:
        # Rayleigh(1) is Weibull(2, √2); PyMC samples log r and logit(2φ/π), the kernel's coordinates.
        radius = pm.Weibull(SCALE_RADIUS, alpha=2.0, beta=np.sqrt(2.0))
        angle = pm.Uniform(SCALE_ANGLE, 0.0, np.pi / 2)
        sigma_u = pm.Deterministic(SIGMA_U, p.sigma_U * radius * pt.cos(angle))
        sigma_v = pm.Deterministic(SIGMA_V, p.sigma_V * radius * pt.sin(angle))
        return sigma_u, sigma_v
    sigma_u = pm.HalfNormal(SIGMA_U, p.sigma_U)
    if scales is Scales.PRIOR_ONLY_V:
        return sigma_u, pm.Deterministic(SIGMA_V, p.sigma_V * pt.abs(pm.Normal(SIGMA_V_RAW, 0.0, 1.0)))
    return sigma_u, pm.HalfNormal(SIGMA_V, p.sigma_V)


def build_bambi(long: pd.DataFrame, spec: ModelSpec):
    """The §6.1 formula in bambi, family binomial, with the paper's priors."""
    import bambi as bmb

    p = spec.priors
    data = long.copy()
    data["treatment"] = data["treatment"].astype(float)
    data["subsample"] = data["subsample"].astype(str)
    formula = spec.formula
    priors = {
        "Intercept": bmb.Prior("Normal", mu=0, sigma=p.intercept_sigma),
        "treatment": bmb.Prior("Normal", mu=p.treatment_mu, sigma=p.treatment_sigma),
        "1|dataset": bmb.Prior("Normal", mu=0, sigma=bmb.Prior("HalfNormal", sigma=p.sigma_U)),
        "1|dataset:subsample": bmb.Prior("Normal", mu=0, sigma=bmb.Prior("HalfNormal", sigma=p.sigma_V)),
    }
    if data["lm_type"].nunique() > 1:
        priors["lm_type"] = bmb.Prior("Normal", mu=0, sigma=p.lm_type_sigma)
    else:
        formula = formula.replace("+ lm_type ", "")
    if not spec.subsample_effect:
        formula = formula.replace(" + (1|dataset:subsample)", "")
        del priors["1|dataset:subsample"]
    if spec.interaction:
        priors["1|dataset:treatment"] = bmb.Prior(
            "Normal", mu=0, sigma=bmb.Prior("HalfNormal", sigma=p.sigma_W)
        )
    else:
        formula = formula.replace(" + (1|dataset:treatment)", "")
    return bmb.Model(formula, data, family="binomial", priors=priors, center_predictors=False)


@dataclass
class Fit:
    idata: az.InferenceData
    data: ModelData
    spec: ModelSpec
    seconds: float
    sampler: str
    from_cache: bool = False  # read from the posterior cache: `seconds` is then the original fit's time

    def summary(self, var_names: tuple[str, ...] = DIAGNOSED) -> pd.DataFrame:
        names = [v for v in var_names if v in self.idata.posterior]
        return az.summary(self.idata, var_names=names, hdi_prob=0.89, round_to="none")

    @property
    def divergences(self) -> int:
        stats = self.idata.sample_stats
        key = "diverging" if "diverging" in stats else "divergences"
        return int(stats[key].sum()) if key in stats else 0

    def diagnostics(self) -> dict[str, dict[str, float]]:
        """Posterior mean, sd, r̂, bulk/tail ESS of β and the σ's."""
        table = self.summary()
        return {
            name: {
                "mean": float(row["mean"]),
                "sd": float(row["sd"]),
                "hdi_89": [float(row["hdi_5.5%"]), float(row["hdi_94.5%"])],
                "r_hat": float(row["r_hat"]),
                "ess_bulk": float(row["ess_bulk"]),
                "ess_tail": float(row["ess_tail"]),
            }
            for name, row in table.iterrows()
        }


def identified_draws(fit: Fit, max_draws: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior draws of (c_jk, t_j, α_i) with logit λ_ijkl = c_jk + α_i + (x_l − ½)·t_j, for either backend
    (bambi: c = μ + U_j + V_jk + (W_j0 + W_j1)/2 + β/2 and t = β + W_j1 − W_j0)."""
    post = fit.idata.posterior.stack(sample=("chain", "draw")).transpose("sample", ...)
    total = post.sizes["sample"]
    if max_draws and max_draws < total:
        # evenly spaced over every chain (8,000 -> 4,000: every second draw of each), not the first chains alone
        post = post.isel(sample=np.linspace(0, total, int(max_draws), endpoint=False).astype(int))
    n_draws = post.sizes["sample"]
    n_j, n_k, n_i, _ = fit.data.shape
    alpha = np.zeros((n_draws, n_i))
    if LM_TYPE in post and n_i > 1:
        alpha[:, 1:] = post[LM_TYPE].values.reshape(n_draws, -1)
    if "c" in post:
        return post["c"].values, post["t"].values, alpha
    beta = post[TREATMENT].values
    datasets = fit.data.datasets
    u = post["1|dataset"].sel({"dataset__factor_dim": datasets}).values
    v_post = post["1|dataset:subsample"]
    present = set(v_post.coords["dataset:subsample__factor_dim"].values.tolist())
    v = np.zeros((n_draws, n_j, n_k))
    for j, d in enumerate(datasets):
        for k in range(n_k):
            if f"{d}:{k}" in present:
                v[:, j, k] = v_post.sel({"dataset:subsample__factor_dim": f"{d}:{k}"}).values
    w = np.zeros((n_draws, n_j, 2))
    if "1|dataset:treatment" in post:
        w_post = post["1|dataset:treatment"]
        for j, d in enumerate(datasets):
            for arm in (0, 1):
                w[:, j, arm] = w_post.sel({"dataset:treatment__factor_dim": f"{d}:{float(arm)}"}).values
    c = (
        post[INTERCEPT].values[:, None, None]
        + u[:, :, None]
        + v
        + (w.mean(axis=2) + beta[:, None] / 2)[:, :, None]
    )
    t = beta[:, None] + w[:, :, 1] - w[:, :, 0]
    return c, t, alpha


def choose_noncentered(data: ModelData) -> bool:
    """Non-centre t_j when the between-task variance of the log odds ratios (a moment estimate, their binomial
    noise removed) is below that noise: the centred funnel between t_j and σ_W then stalls the sampler."""
    y = data.correct.sum(axis=(1, 2)).astype(float)  # (dataset, arm)
    n = data.trials.sum(axis=(1, 2)).astype(float)
    keep = (n > 0).all(axis=1)
    if keep.sum() < 2:
        return True
    y, n = y[keep] + 0.5, n[keep] + 1.0
    log_odds = np.log(y / (n - y))
    contrast = log_odds[:, 1] - log_odds[:, 0]
    noise = (1 / y + 1 / (n - y)).sum(axis=1)
    between = max(0.0, contrast.var(ddof=1) - noise.mean())
    return bool(between < noise.mean())


def resolve_spec(data: ModelData, spec: ModelSpec) -> ModelSpec:
    """`spec` with `noncentered_t` (False when there is no W term) and `collapse_s` decided (always collapsed
    without the V term, whose one-subsample tasks have c_j ~ N(μ + β/2, σ_U))."""
    if not spec.subsample_effect and data.shape[1] != 1:
        raise ValueError(
            f"a model without the (1|dataset:subsample) term needs one subsample per task, got {data.shape[1]}"
        )
    collapse = data.shape[1] == 1 if spec.collapse_s == "auto" else bool(spec.collapse_s)
    collapse = collapse or not spec.subsample_effect
    if not spec.interaction:
        noncentered = False
    elif spec.noncentered_t == "auto":
        noncentered = choose_noncentered(data)
    else:
        noncentered = bool(spec.noncentered_t)
    return replace(spec, noncentered_t=noncentered, collapse_s=collapse)
