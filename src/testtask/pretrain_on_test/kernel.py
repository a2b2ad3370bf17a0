"""A compiled log density and gradient of the marginal §6.1 model, for nutpie.

PyTensor's numba backend spends about 1 ms per gradient on a (25, 100, 2, 2) data array here (no AVX, two cores),
three times the cost of one fused loop with one `exp` and one `log1p` per cell. This module is that loop, plus the
priors of `hierarchical.build_marginal`, in the same unconstrained coordinates (log σ's). It is compiled once and
cached on disk by numba, so no fit pays a per-shape compile. `tests/pretrain_on_test/test_kernel.py` checks log density differences
and gradients against the PyMC model at random points.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from testtask.parallel import process_pool
from testtask.pretrain_on_test.hierarchical import (
    INTERCEPT,
    LM_TYPE,
    SIGMA_U,
    SIGMA_V,
    SIGMA_W,
    TREATMENT,
    ModelData,
    ModelSpec,
)


@numba.njit(cache=True, nogil=True, fastmath=False)
def _likelihood(c, t, alpha, y, n, g_c, g_t, g_alpha):
    """Σ y·η − n·softplus(η) over cells, η = c_jk + α_i + (l − ½)·t_j; writes gradients in place."""
    n_j, n_k, n_i, _ = y.shape
    total = 0.0
    for i in range(n_i):
        g_alpha[i] = 0.0
    for j in range(n_j):
        acc_t = 0.0
        for k in range(n_k):
            acc_c = 0.0
            for i in range(n_i):
                base = c[j, k] + alpha[i]
                for arm in range(2):
                    trials = n[j, k, i, arm]
                    if trials == 0.0:
                        continue
                    offset = arm - 0.5
                    eta = base + offset * t[j]
                    e = math.exp(-abs(eta))
                    if eta > 0.0:
                        softplus = eta + math.log1p(e)
                        sigmoid = 1.0 / (1.0 + e)
                    else:
                        softplus = math.log1p(e)
                        sigmoid = e / (1.0 + e)
                    count = y[j, k, i, arm]
                    total += count * eta - trials * softplus
                    r = count - trials * sigmoid
                    acc_c += r
                    acc_t += offset * r
                    g_alpha[i] += r
            g_c[j, k] = acc_c
        g_t[j] = acc_t
    return total


@numba.njit(cache=True, nogil=True, fastmath=False)
def log_density(x, y, n, priors, n_i, interaction, noncentered):
    """Log density (up to a constant) and gradient at unconstrained `x`; layout in `Layout`."""
    n_j, n_k = y.shape[0], y.shape[1]
    a_sd, b_mu, b_sd, lm_sd, h_u, h_v, h_w = (
        priors[0],
        priors[1],
        priors[2],
        priors[3],
        priors[4],
        priors[5],
        priors[6],
    )
    grad = np.zeros_like(x)
    mu, beta, x_u, x_v = x[0], x[1], x[2], x[3]
    sig_u, sig_v = math.exp(x_u), math.exp(x_v)
    pos = 4
    sig_w, x_w = 0.0, 0.0
    if interaction:
        x_w = x[4]
        sig_w = math.exp(x_w)
        pos = 5
    alpha_full = np.zeros(n_i)
    a_pos = pos
    for i in range(1, n_i):
        alpha_full[i] = x[pos]
        pos += 1
    s_pos = pos
    s = x[s_pos : s_pos + n_j]
    t_pos = s_pos + n_j
    c_pos = t_pos + (n_j if interaction else 0)
    c = x[c_pos : c_pos + n_j * n_k].reshape(n_j, n_k)

    lp = -0.5 * mu * mu / (a_sd * a_sd) - 0.5 * (beta - b_mu) ** 2 / (b_sd * b_sd)
    grad[0] = -mu / (a_sd * a_sd)
    grad[1] = -(beta - b_mu) / (b_sd * b_sd)
    # HalfNormal(h) on σ = exp(x): −σ²/(2h²) + x (Jacobian).
    lp += -0.5 * sig_u * sig_u / (h_u * h_u) + x_u - 0.5 * sig_v * sig_v / (h_v * h_v) + x_v
    grad[2] = -sig_u * sig_u / (h_u * h_u) + 1.0
    grad[3] = -sig_v * sig_v / (h_v * h_v) + 1.0
    if interaction:
        lp += -0.5 * sig_w * sig_w / (h_w * h_w) + x_w
        grad[4] = -sig_w * sig_w / (h_w * h_w) + 1.0
    for i in range(1, n_i):
        lp += -0.5 * alpha_full[i] ** 2 / (lm_sd * lm_sd)
        grad[a_pos + i - 1] = -alpha_full[i] / (lm_sd * lm_sd)

    # s_j ~ N(μ + β/2, τ_s), τ_s² = σ_U² + σ_W²/2 (σ_U² alone without W).
    m_s = mu + 0.5 * beta
    var_s = sig_u * sig_u + (0.5 * sig_w * sig_w if interaction else 0.0)
    ss = 0.0
    for j in range(n_j):
        d = s[j] - m_s
        ss += d * d
        grad[s_pos + j] = -d / var_s
        grad[0] += d / var_s
        grad[1] += 0.5 * d / var_s
    lp += -0.5 * ss / var_s - 0.5 * n_j * math.log(var_s)
    q_s = 0.5 * ss / (var_s * var_s) - 0.5 * n_j / var_s  # d/d(τ_s²)
    grad[2] += q_s * 2.0 * sig_u * sig_u
    if interaction:
        grad[4] += q_s * sig_w * sig_w

    # t_j: N(β, √2 σ_W), centred or as β + √2 σ_W e_j; without W, t_j = β.
    t = np.empty(n_j)
    tau_t = math.sqrt(2.0) * sig_w
    if interaction and noncentered:
        for j in range(n_j):
            e = x[t_pos + j]
            t[j] = beta + tau_t * e
            lp += -0.5 * e * e
            grad[t_pos + j] = -e
    elif interaction:
        var_t = tau_t * tau_t
        st = 0.0
        for j in range(n_j):
            t[j] = x[t_pos + j]
            d = t[j] - beta
            st += d * d
            grad[t_pos + j] = -d / var_t
            grad[1] += d / var_t
        lp += -0.5 * st / var_t - 0.5 * n_j * math.log(var_t)
        grad[4] += (0.5 * st / (var_t * var_t) - 0.5 * n_j / var_t) * 2.0 * var_t
    else:
        for j in range(n_j):
            t[j] = beta

    # c_jk ~ N(s_j, σ_V), every cell including padding (whose prior integrates to one).
    var_v = sig_v * sig_v
    sc = 0.0
    for j in range(n_j):
        for k in range(n_k):
            d = c[j, k] - s[j]
            sc += d * d
            grad[c_pos + j * n_k + k] = -d / var_v
            grad[s_pos + j] += d / var_v
    lp += -0.5 * sc / var_v - 0.5 * n_j * n_k * math.log(var_v)
    grad[3] += (0.5 * sc / (var_v * var_v) - 0.5 * n_j * n_k / var_v) * 2.0 * var_v

    g_c = np.empty((n_j, n_k))
    g_t = np.empty(n_j)
    g_alpha = np.empty(n_i)
    lp += _likelihood(c, t, alpha_full, y, n, g_c, g_t, g_alpha)
    for j in range(n_j):
        for k in range(n_k):
            grad[c_pos + j * n_k + k] += g_c[j, k]
    for i in range(1, n_i):
        grad[a_pos + i - 1] += g_alpha[i]
    if interaction and noncentered:
        for j in range(n_j):
            grad[t_pos + j] += g_t[j] * tau_t
            grad[1] += g_t[j]
            grad[4] += g_t[j] * x[t_pos + j] * tau_t
    elif interaction:
        for j in range(n_j):
            grad[t_pos + j] += g_t[j]
    else:
        for j in range(n_j):
            grad[1] += g_t[j]
    return lp, grad


class Layout:
    """Positions of each parameter in the unconstrained vector."""

    def __init__(self, shape: tuple[int, ...], spec: ModelSpec, noncentered: bool):
        n_j, n_k, n_i, _ = shape
        self.shape, self.interaction, self.noncentered = shape, spec.interaction, noncentered
        pos = 5 if spec.interaction else 4
        self.alpha = slice(pos, pos + n_i - 1)
        self.s = slice(self.alpha.stop, self.alpha.stop + n_j)
        self.t = slice(self.s.stop, self.s.stop + (n_j if spec.interaction else 0))
        self.c = slice(self.t.stop, self.t.stop + n_j * n_k)
        self.ndim = self.c.stop

    def expand(self, x: np.ndarray) -> dict[str, np.ndarray]:
        n_j, n_k, n_i, _ = self.shape
        out = {
            INTERCEPT: np.asarray(x[0]),
            TREATMENT: np.asarray(x[1]),
            SIGMA_U: np.asarray(math.exp(x[2])),
            SIGMA_V: np.asarray(math.exp(x[3])),
        }
        if self.interaction:
            sig_w = math.exp(x[4])
            out[SIGMA_W] = np.asarray(sig_w)
            if self.noncentered:
                out["t_offset"] = x[self.t].copy()
                out["t"] = x[1] + math.sqrt(2.0) * sig_w * x[self.t]
            else:
                out["t"] = x[self.t].copy()
        else:
            out["t"] = np.full(n_j, x[1])
        if n_i > 1:
            out[LM_TYPE] = x[self.alpha].copy()
        out["s"] = x[self.s].copy()
        out["c"] = x[self.c].reshape(n_j, n_k).copy()
        return out


def priors_vector(spec: ModelSpec) -> np.ndarray:
    p = spec.priors
    return np.array(
        [
            p.intercept_sigma,
            p.treatment_mu,
            p.treatment_sigma,
            p.lm_type_sigma,
            p.sigma_U,
            p.sigma_V,
            p.sigma_W,
        ]
    )


def initial_point(data: ModelData, layout: Layout, rng: np.random.Generator) -> np.ndarray:
    """Start near the data: c at each subsample's empirical logit, s at the task mean, jittered like PyMC."""
    x = rng.uniform(-0.5, 0.5, layout.ndim) * 0.2
    trials = data.trials.sum(axis=(2, 3))
    rate = (data.correct.sum(axis=(2, 3)) + 0.5) / (trials + 1.0)
    c = np.log(rate / (1 - rate))
    observed = trials > 0
    s = np.array([c[j, observed[j]].mean() if observed[j].any() else 0.0 for j in range(c.shape[0])])
    c = np.where(observed, c, s[:, None])
    x[layout.s] += s
    x[layout.c] += c.ravel()
    x[0] += s.mean()
    x[2] += math.log(max(s.std(), 0.1))
    x[3] += math.log(max(float((c - s[:, None])[observed].std()) if observed.sum() > 1 else 0.1, 0.05))
    if layout.interaction:
        x[4] += math.log(0.1)
    return x


def nutpie_model(data: ModelData, spec: ModelSpec, noncentered: bool, seed: int):
    """A nutpie model over the compiled log density, with posterior variables named as in the PyMC model."""
    from nutpie.compiled_pyfunc import from_pyfunc

    layout = Layout(data.shape, spec, noncentered)
    y = np.ascontiguousarray(data.correct, dtype=np.float64)
    n = np.ascontiguousarray(data.trials, dtype=np.float64)
    priors = priors_vector(spec)
    n_i = data.shape[2]
    template = layout.expand(np.zeros(layout.ndim))
    dims = {"s": ("dataset",), "t": ("dataset",), "c": ("dataset", "subsample"), "t_offset": ("dataset",)}

    def make_logp():
        def logp(x, **_):
            value, grad = log_density(x, y, n, priors, n_i, spec.interaction, noncentered)
            return value, grad

        return logp

    def make_expand(*_):
        return lambda x, **__: layout.expand(x)

    rng = np.random.default_rng(seed)
    return from_pyfunc(
        ndim=layout.ndim,
        make_logp_fn=make_logp,
        make_expand_fn=make_expand,
        expanded_dtypes=[np.dtype("float64")] * len(template),
        expanded_shapes=[v.shape for v in template.values()],
        expanded_names=list(template),
        coords={"dataset": np.arange(data.shape[0]), "subsample": np.arange(data.shape[1])},
        dims={k: v for k, v in dims.items() if k in template},
        make_initial_point_fn=lambda _seed: initial_point(data, layout, rng),
    )


def _sample_chains(data: ModelData, spec: ModelSpec, noncentered: bool, seed: int, settings: dict):
    import nutpie

    model = nutpie_model(data, spec, noncentered, seed)
    return nutpie.sample(model, seed=seed, cores=1, progress_bar=False, save_warmup=False, **settings)


def sample(
    data: ModelData,
    spec: ModelSpec,
    noncentered: bool,
    seed: int,
    draws: int,
    tune: int,
    chains: int,
    cores: int,
    target_accept: float,
):
    """Run `chains` chains split over `cores` processes and join them into one InferenceData.

    nutpie runs Python-function models under the GIL, so chains in threads would not overlap; processes do.
    """
    import arviz as az

    groups = [
        len(part) for part in np.array_split(np.arange(chains), max(1, min(cores, chains))) if len(part)
    ]
    settings = {"draws": draws, "tune": tune, "target_accept": target_accept}
    if len(groups) == 1:
        return _sample_chains(data, spec, noncentered, seed, {**settings, "chains": chains})
    futures = [
        process_pool(len(groups)).submit(
            _sample_chains, data, spec, noncentered, seed + 7919 * g, {**settings, "chains": size}
        )
        for g, size in enumerate(groups)
    ]
    parts, first = [], 0
    for future in futures:
        part = future.result()
        n_chains = part.posterior.sizes["chain"]
        parts.append(
            part.assign_coords(chain=np.arange(first, first + n_chains), groups=["posterior", "sample_stats"])
        )
        first += n_chains
    return az.concat(*parts, dim="chain")
