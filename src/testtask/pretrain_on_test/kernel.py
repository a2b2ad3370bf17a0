"""A compiled log density and gradient of the marginal §6.1 model, for nutpie (`kernel_sampler.py`).

PyTensor's numba backend spends about 1 ms per gradient on a (25, 100, 2, 2) data array on two cores; here the
likelihood is one `exp` and one `log` per pair of arms, in loops LLVM vectorises, and the priors are those of
`hierarchical.build_marginal` in the same unconstrained coordinates. Compiled once and cached on disk by numba.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numba
import numpy as np

from testtask.pretrain_on_test.hierarchical import (
    INTERCEPT,
    LM_TYPE,
    SIGMA_U,
    SIGMA_V,
    SIGMA_W,
    TREATMENT,
    ModelData,
    ModelSpec,
    Scales,
    scale_coordinates,
)

# exp and log written out so that LLVM vectorises the likelihood's loops (pip's llvmlite has no vector math
# library, so a `math.exp` in a loop stays one scalar libm call per cell). Cody–Waite reduction with ln 2 split in
# two, then Taylor polynomials of degree 14 (exp, |r| ≤ ln2/2) and 23 (log via atanh, |s| ≤ 0.172): both within
# about one ulp of libm (tested in tests/pretrain_on_test/test_kernel.py).
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SQRT2 = 1.4142135623730951
_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000
_FAST_RANGE = 30.0  # |c + α| + |t/2| below this: no overflow in (1 + u₀)(1 + u₁) and the fast path is exact


@numba.njit(inline="always", fastmath=False, error_model="numpy")
def _exp_split(v):
    """exp(v) = p · 2^e for |v| ≤ 700: returns p and the bits of the double 2^e."""
    e = math.floor(v * _LOG2E + 0.5)
    r = (v - e * _LN2_HI) - e * _LN2_LO
    p = 1.0 / 87178291200.0
    p = p * r + 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    return p, (np.int64(e) + 1023) << 52


@numba.njit(inline="always", fastmath=False, error_model="numpy")
def _log_split(m, e):
    """log(m · 2^e) for m in [1, 2), e an integer: the mantissa folded into [√½, √2), then 2·atanh(s)."""
    big = m > _SQRT2
    m = m * 0.5 if big else m
    ef = float(e) + (1.0 if big else 0.0)
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    q = 2.0 / 23.0
    q = q * s2 + 2.0 / 21.0
    q = q * s2 + 2.0 / 19.0
    q = q * s2 + 2.0 / 17.0
    q = q * s2 + 2.0 / 15.0
    q = q * s2 + 2.0 / 13.0
    q = q * s2 + 2.0 / 11.0
    q = q * s2 + 2.0 / 9.0
    q = q * s2 + 2.0 / 7.0
    q = q * s2 + 2.0 / 5.0
    q = q * s2 + 2.0 / 3.0
    q = q * s2 + 2.0
    return ef * _LN2_HI + (s * q + ef * _LN2_LO)


@numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
def vexp(x, out):
    """`out[:] = exp(x)` with the likelihood's exp (for tests; |x| ≤ 700)."""
    bits = np.empty(x.size, np.int64)
    scale = bits.view(np.float64)
    for q in range(x.size):
        out[q], bits[q] = _exp_split(x[q])
    for q in range(x.size):
        out[q] *= scale[q]


@numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
def vlog(x, out):
    """`out[:] = log(x)` with the likelihood's log (for tests; x ≥ 1 and finite)."""
    bits = x.view(np.int64)
    mantissa = np.empty(x.size, np.int64)
    m = mantissa.view(np.float64)
    for q in range(x.size):
        mantissa[q] = (bits[q] & _MANTISSA) | _ONE_BITS
    for q in range(x.size):
        out[q] = _log_split(m[q], (bits[q] >> 52) - 1023)


@numba.njit(inline="always", fastmath=False, error_model="numpy")
def _likelihood_cells(c, t, alpha, y, n, g_c, g_t, g_alpha):
    """`_likelihood` cell by cell: for tasks with few subsamples (Figure 7's slices have one), where rows are too
    short to vectorise."""
    n_j, n_k, n_i, _ = y.shape
    total = 0.0
    for i in range(n_i):
        g_alpha[i] = 0.0
    for j in range(n_j):
        acc_t = 0.0
        half = 0.5 * t[j]
        up, down = math.exp(half), math.exp(-half)
        for k in range(n_k):
            acc_c = 0.0
            for i in range(n_i):
                n0, n1 = n[j, k, i, 0], n[j, k, i, 1]
                if n0 == 0.0 and n1 == 0.0:
                    continue  # padding
                base = c[j, k] + alpha[i]
                eta0, eta1 = base - half, base + half
                y0, y1 = y[j, k, i, 0], y[j, k, i, 1]
                if abs(base) + abs(half) < 30.0 and n0 == n1:
                    shared = math.exp(base)
                    u0, u1 = shared * down, shared * up
                    both = u0 + u1 + u0 * u1  # (1 + u₀)(1 + u₁) − 1
                    inv = 1.0 / (1.0 + both)
                    total += y0 * eta0 + y1 * eta1 - n0 * math.log1p(both)
                    r0, r1 = y0 - n0 * u0 * (1.0 + u1) * inv, y1 - n1 * u1 * (1.0 + u0) * inv
                    acc_c += r0 + r1
                    acc_t += 0.5 * (r1 - r0)
                    g_alpha[i] += r0 + r1
                    continue
                if abs(base) + abs(half) < 30.0:
                    shared = math.exp(base)
                    u0, u1 = shared * down, shared * up
                    softplus0, softplus1 = math.log1p(u0), math.log1p(u1)
                    sigmoid0, sigmoid1 = u0 / (1.0 + u0), u1 / (1.0 + u1)
                else:
                    softplus0 = max(eta0, 0.0) + math.log1p(math.exp(-abs(eta0)))
                    softplus1 = max(eta1, 0.0) + math.log1p(math.exp(-abs(eta1)))
                    sigmoid0 = 1.0 / (1.0 + math.exp(-eta0))
                    sigmoid1 = 1.0 / (1.0 + math.exp(-eta1))
                total += y0 * eta0 - n0 * softplus0 + y1 * eta1 - n1 * softplus1
                r0, r1 = y0 - n0 * sigmoid0, y1 - n1 * sigmoid1
                acc_c += r0 + r1
                acc_t += 0.5 * (r1 - r0)
                g_alpha[i] += r0 + r1
            g_c[j, k] = acc_c
        g_t[j] = acc_t
    return total


@numba.njit(inline="always", fastmath=False, error_model="numpy")
def _stable_row(c, t, alpha, y, n, j, i, g_c):
    """Row (task j, LM type i) cell by cell in the stable form, any n: adds to g_c[j], returns
    (log-likelihood, ∂/∂t_j, ∂/∂α_i)."""
    half = 0.5 * t[j]
    total, acc_t, acc_a = 0.0, 0.0, 0.0
    for k in range(c.shape[1]):
        n0, n1 = n[j, k, i, 0], n[j, k, i, 1]
        if n0 == 0.0 and n1 == 0.0:
            continue  # padding
        eta0, eta1 = c[j, k] + alpha[i] - half, c[j, k] + alpha[i] + half
        y0, y1 = y[j, k, i, 0], y[j, k, i, 1]
        softplus0 = max(eta0, 0.0) + math.log1p(math.exp(-abs(eta0)))
        softplus1 = max(eta1, 0.0) + math.log1p(math.exp(-abs(eta1)))
        r0 = y0 - n0 / (1.0 + math.exp(-eta0))
        r1 = y1 - n1 / (1.0 + math.exp(-eta1))
        total += y0 * eta0 - n0 * softplus0 + y1 * eta1 - n1 * softplus1
        g_c[j, k] += r0 + r1
        acc_t += 0.5 * (r1 - r0)
        acc_a += r0 + r1
    return total, acc_t, acc_a


_LANES = 8  # one AVX-512 register of doubles


@numba.njit(inline="always", fastmath=False, error_model="numpy")
def _lane_sum(x, lanes):
    """Σ x in a fixed order: element q goes to lane q mod 8, the lanes are added pairwise. Vectorisable without
    reassociation, and the same bits whichever way LLVM splits the loop (a reassociated reduction's order
    depends on the buffers' alignment, so the same seed could give different chains)."""
    size = x.size
    for lane in range(_LANES):
        lanes[lane] = 0.0
    full = size - size % _LANES
    for block in range(0, full, _LANES):
        for lane in range(_LANES):
            lanes[lane] += x[block + lane]
    for q in range(full, size):
        lanes[q - full] += x[q]
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))


@numba.njit(inline="always", fastmath=False, error_model="numpy")
def _likelihood_rows(c, t, alpha, y, n, g_c, g_t, g_alpha):
    """`_likelihood` row by row (a task and an LM type, all its subsamples), in loops LLVM vectorises.

    A row with arms of unequal n, or where max |c_j·| + |α_i| + |t_j/2| reaches `_FAST_RANGE`, is computed again
    by `_stable_row` (the bound is taken beforehand: a running max inside the loop stops LLVM vectorising it).
    """
    n_j, n_k, n_i, _ = y.shape
    total = 0.0
    y0r, y1r, nr, rc = np.empty(n_k), np.empty(n_k), np.empty(n_k), np.empty(n_k)
    u0s, u1s, products = np.empty(n_k), np.empty(n_k), np.empty(n_k)
    bits, exponent, mantissa = np.empty(n_k, np.int64), np.empty(n_k, np.int64), np.empty(n_k, np.int64)
    scale, m, product_bits = bits.view(np.float64), mantissa.view(np.float64), products.view(np.int64)
    lanes = np.empty(_LANES)
    for i in range(n_i):
        g_alpha[i] = 0.0
    for j in range(n_j):
        half = 0.5 * t[j]
        up, down = math.exp(half), math.exp(-half)
        acc_t = 0.0
        cj = c[j]
        worst = 0.0
        for k in range(n_k):
            g_c[j, k] = 0.0
            worst = max(worst, abs(cj[k]))
        for i in range(n_i):
            a = alpha[i]
            unequal = 0.0
            for k in range(n_k):
                y0r[k], y1r[k], nr[k] = y[j, k, i, 0], y[j, k, i, 1], n[j, k, i, 0]
                unequal += abs(n[j, k, i, 1] - n[j, k, i, 0])
            for k in range(n_k):
                u0s[k], bits[k] = _exp_split(min(max(cj[k] + a, -40.0), 40.0))
            for k in range(n_k):
                u = u0s[k] * scale[k]
                u0, u1 = u * down, u * up
                u0s[k], u1s[k] = u0, u1
                products[k] = (1.0 + u0) * (1.0 + u1)
            for k in range(n_k):
                exponent[k] = (product_bits[k] >> 52) - 1023
                mantissa[k] = (product_bits[k] & _MANTISSA) | _ONE_BITS
            for k in range(n_k):  # per cell: log-likelihood into u0s, ∂/∂t_j into u1s, ∂/∂c_jk into rc
                u0, u1 = u0s[k], u1s[k]
                base = cj[k] + a
                y0, y1, nn = y0r[k], y1r[k], nr[k]
                inv = 1.0 / products[k]
                r0 = y0 - nn * u0 * (1.0 + u1) * inv
                r1 = y1 - nn * u1 * (1.0 + u0) * inv
                u0s[k] = y0 * (base - half) + y1 * (base + half) - nn * _log_split(m[k], exponent[k])
                u1s[k] = 0.5 * (r1 - r0)
                rc[k] = r0 + r1
            if worst + abs(a) + abs(half) < _FAST_RANGE and unequal == 0.0:
                row_total, row_t, row_a = _lane_sum(u0s, lanes), _lane_sum(u1s, lanes), _lane_sum(rc, lanes)
                for k in range(n_k):
                    g_c[j, k] += rc[k]
            else:
                row_total, row_t, row_a = _stable_row(c, t, alpha, y, n, j, i, g_c)
            total += row_total
            acc_t += row_t
            g_alpha[i] += row_a
        g_t[j] = acc_t
    return total


@numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
def _likelihood(c, t, alpha, y, n, g_c, g_t, g_alpha):
    """Σ y·η − n·softplus(η) over cells, η = c_jk + α_i + (l − ½)·t_j; writes gradients in place.

    The two arms of a cell share u = exp(c_jk + α_i) up to the factors exp(±t_j/2), and with the same n (the
    design: both arms are scored on the same test set) their softplus terms are one log, n·log((1 + u₀)(1 + u₁)),
    and their sigmoids share one division. Far from 0, where the products could overflow, or with arms of unequal
    n, a cell takes the stable form softplus(η) = max(η, 0) + log1p(exp(−|η|)). Tasks with at least 8 subsamples
    go row by row through vectorised loops, several times faster. No fast-math: sums run in a fixed order
    (`_lane_sum`), so a seed gives the same chains bit for bit, whatever the alignment or the number of threads.
    """
    if y.shape[1] >= 8:
        return _likelihood_rows(c, t, alpha, y, n, g_c, g_t, g_alpha)
    return _likelihood_cells(c, t, alpha, y, n, g_c, g_t, g_alpha)


@numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
def _collapsed_c_prior(c, m_s, var_s, var_v, g_c):
    """log N(c_j· | m_s·1, σ_V²·I + τ_s²·J) summed over tasks j, s_j integrated out; gradients as
    (d/dc written into g_c, d/dm_s, d/dτ_s², d/dσ_V²).

    Compound symmetry has a closed form: with A = σ_V² + K·τ_s², d = c_j· − m_s and S = Σ_k d_k,
    the quadratic form is (Σ d_k² − τ_s²·S²/A)/σ_V² and the log determinant (K − 1)·log σ_V² + log A.
    """
    n_j, n_k = c.shape
    big_a = var_v + n_k * var_s
    lp, g_m, g_s, g_v = 0.0, 0.0, 0.0, 0.0
    for j in range(n_j):
        total, squares = 0.0, 0.0
        for k in range(n_k):
            d = c[j, k] - m_s
            total += d
            squares += d * d
        shrink = var_s * total / big_a
        for k in range(n_k):
            g_c[j, k] = -(c[j, k] - m_s - shrink) / var_v
        lp += -0.5 * (squares - var_s * total * total / big_a) / var_v
        g_m += total / big_a
        g_s += 0.5 * total * total / (big_a * big_a) - 0.5 * n_k / big_a
        g_v += (
            0.5 * squares / (var_v * var_v)
            - 0.5 * var_s * total * total * (big_a + var_v) / (big_a * big_a * var_v * var_v)
            - 0.5 * (n_k - 1) / var_v
            - 0.5 / big_a
        )
    lp += -0.5 * n_j * ((n_k - 1) * math.log(var_v) + math.log(big_a))
    return lp, g_m, g_s, g_v


@numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
def _polar(r_log, z):
    """The POLAR coordinates (log r, logit(2φ/π)) of `Scales`: returns (r·cos φ, r·sin φ, tan φ·dφ/dz,
    cot φ·dφ/dz, dφ/dz). The two products stay finite at the ends (they tend to 1 as φ → π/2 or 0)."""
    sg = 1.0 / (1.0 + math.exp(-z))
    phi = 0.5 * math.pi * sg
    dphi = 0.5 * math.pi * sg * (1.0 - sg)
    r = math.exp(r_log)
    cos_phi, sin_phi = math.cos(phi), math.sin(phi)
    return r * cos_phi, r * sin_phi, sin_phi / cos_phi * dphi, cos_phi / sin_phi * dphi, dphi


@numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
def scale_values(x2, x3, h_u, h_v, scales):
    """(σ_U, σ_V) at the coordinates x[2], x[3] of `scales` (`hierarchical.Scales`)."""
    if scales == 1:
        a, b, _, _, _ = _polar(x2, x3)
        return h_u * a, h_v * b
    if scales == 2:
        return math.exp(x2), h_v * abs(x3)
    return math.exp(x2), math.exp(x3)


@numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
def log_density(
    x, y, n, priors, n_i, interaction, noncentered, collapsed=False, subsample_effect=True, scales=0
):
    """Log density (up to a constant) and gradient at unconstrained `x`; layout in `Layout`.

    `scales` (`hierarchical.Scales`): the density is computed in log σ coordinates, then carried to POLAR ones by
    the chain rule and the log Jacobian. `collapsed`: s_j integrated out, the c_j· jointly normal around μ + β/2.
    Without `subsample_effect` each c_j ~ N(μ + β/2, τ_s) on its own: the authors' slice model, `(1|pair)`.
    """
    n_j, n_k = y.shape[0], y.shape[1]
    a_sd, b_mu, b_sd, lm_sd = priors[0], priors[1], priors[2], priors[3]
    h_u, h_v, h_w = priors[4], priors[5], priors[6]
    grad = np.zeros_like(x)
    mu, beta = x[0], x[1]
    sig_u, sig_v = scale_values(x[2], x[3], h_u, h_v, scales)
    x_u = math.log(sig_u)
    x_v = math.log(sig_v) if scales != 2 else 0.0
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
    s = x[s_pos : s_pos + (0 if collapsed else n_j)]
    t_pos = s_pos + (0 if collapsed else n_j)
    c_pos = t_pos + (n_j if interaction else 0)
    c = x[c_pos : c_pos + n_j * n_k].reshape(n_j, n_k)

    lp = -0.5 * mu * mu / (a_sd * a_sd) - 0.5 * (beta - b_mu) ** 2 / (b_sd * b_sd)
    grad[0] = -mu / (a_sd * a_sd)
    grad[1] = -(beta - b_mu) / (b_sd * b_sd)
    # HalfNormal(h) on σ = exp(x): −σ²/(2h²) + x (Jacobian).
    lp += -0.5 * sig_u * sig_u / (h_u * h_u) + x_u
    grad[2] = -sig_u * sig_u / (h_u * h_u) + 1.0
    if scales == 2:  # σ_V = h_V·|B|, B ~ N(0, 1): σ_V is in nothing else (no V term)
        lp += -0.5 * x[3] * x[3]
        grad[3] = -x[3]
    else:
        lp += -0.5 * sig_v * sig_v / (h_v * h_v) + x_v
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
    if not collapsed:
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

    # c_jk ~ N(s_j, σ_V), every cell including padding (whose prior integrates to one); with s_j integrated out,
    # jointly normal around μ + β/2; without the V term, independent N(μ + β/2, τ_s).
    var_v = sig_v * sig_v
    if collapsed and not subsample_effect:
        sc = 0.0
        for j in range(n_j):
            for k in range(n_k):
                d = c[j, k] - m_s
                sc += d * d
                grad[c_pos + j * n_k + k] = -d / var_s
                grad[0] += d / var_s
                grad[1] += 0.5 * d / var_s
        lp += -0.5 * sc / var_s - 0.5 * n_j * n_k * math.log(var_s)
        q_c = 0.5 * sc / (var_s * var_s) - 0.5 * n_j * n_k / var_s  # d/d(τ_s²)
        grad[2] += q_c * 2.0 * sig_u * sig_u
        if interaction:
            grad[4] += q_c * sig_w * sig_w
    elif collapsed:
        g_prior = np.empty((n_j, n_k))
        lp_c, g_m, g_tau, g_var_v = _collapsed_c_prior(c, m_s, var_s, var_v, g_prior)
        lp += lp_c
        for j in range(n_j):
            for k in range(n_k):
                grad[c_pos + j * n_k + k] = g_prior[j, k]
        grad[0] += g_m
        grad[1] += 0.5 * g_m
        grad[2] += g_tau * 2.0 * sig_u * sig_u
        if interaction:
            grad[4] += g_tau * sig_w * sig_w
        grad[3] += g_var_v * 2.0 * var_v
    else:
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
    if scales == 1:
        # grad[2], grad[3] hold ∂/∂log σ_U, ∂/∂log σ_V. With log σ_U = log h_U + log r + log cos φ and
        # log σ_V = log h_V + log r + log sin φ, the Jacobian of (log σ_U, log σ_V) by (log r, z) is
        # dφ/dz / (sin φ cos φ); with it the prior becomes r²·exp(−r²/2)·dφ/dz.
        _, _, tan_d, cot_d, dphi = _polar(x[2], x[3])
        sg = 1.0 / (1.0 + math.exp(-x[3]))
        g_u, g_v = grad[2], grad[3]
        grad[2] = g_u + g_v
        grad[3] = -tan_d * g_u + cot_d * g_v + (1.0 - 2.0 * sg) - (cot_d - tan_d)
        lp += math.log(dphi) - x_u - x_v + math.log(h_u * h_v) + 2.0 * x[2]
    return lp, grad


class Layout:
    """Positions of each parameter in the unconstrained vector."""

    def __init__(self, shape: tuple[int, ...], spec: ModelSpec, noncentered: bool, collapsed: bool = False):
        n_j, n_k, n_i, _ = shape
        self.shape, self.interaction, self.noncentered = shape, spec.interaction, noncentered
        self.collapsed = collapsed
        self.scales = scale_coordinates(shape, spec.subsample_effect, collapsed)
        self.scale_priors = (spec.priors.sigma_U, spec.priors.sigma_V)
        pos = 5 if spec.interaction else 4
        self.alpha = slice(pos, pos + n_i - 1)
        self.s = slice(self.alpha.stop, self.alpha.stop + (0 if collapsed else n_j))
        self.t = slice(self.s.stop, self.s.stop + (n_j if spec.interaction else 0))
        self.c = slice(self.t.stop, self.t.stop + n_j * n_k)
        self.ndim = self.c.stop

    def expand(self, x: np.ndarray) -> dict[str, np.ndarray]:
        n_j, n_k, n_i, _ = self.shape
        sig_u, sig_v = scale_values(x[2], x[3], *self.scale_priors, int(self.scales))
        out = {
            INTERCEPT: np.asarray(x[0]),
            TREATMENT: np.asarray(x[1]),
            SIGMA_U: np.asarray(sig_u),
            SIGMA_V: np.asarray(sig_v),
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
        if not self.collapsed:
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
    if not layout.collapsed:
        x[layout.s] += s
    x[layout.c] += c.ravel()
    x[0] += s.mean()
    spread = max(s.std(), 0.1)
    if layout.scales is Scales.POLAR:  # r with σ_U at the spread of tasks, φ = π/4 (x[3] = 0) plus jitter
        x[2] += math.log(spread / layout.scale_priors[0])
    else:
        x[2] += math.log(spread)
    if layout.scales is Scales.LOG:
        x[3] += math.log(max(float((c - s[:, None])[observed].std()) if observed.sum() > 1 else 0.1, 0.05))
    if layout.interaction:
        x[4] += math.log(0.1)
    return x


@numba.njit(cache=True, nogil=True, error_model="numpy")
def expand_into(
    x, out, n_j, n_k, n_i, interaction, noncentered, collapsed, hyper_only, scales=0, h_u=1.0, h_v=1.0
):
    """`Layout.expand(x)` flattened into `out`, in the same order (what nutpie stores per draw).

    `hyper_only` stops after μ, β and the σ's: a fit that needs only those (Figure 7's slices) then stores
    5 numbers per draw instead of ~80. `scales`, `h_u`, `h_v`: the `Scales` of x[2], x[3] and the σ priors.
    """
    out[0] = x[0]
    out[1] = x[1]
    out[2], out[3] = scale_values(x[2], x[3], h_u, h_v, scales)
    a_src = 5 if interaction else 4  # where α starts in x, and where the scalars end in `out`
    pos = a_src
    if interaction:
        sig_w = math.exp(x[4])
        out[4] = sig_w
    if hyper_only:
        return pos
    s_src = a_src + n_i - 1
    t_src = s_src + (0 if collapsed else n_j)
    if interaction:
        for j in range(n_j):
            out[pos + j] = x[t_src + j]
        pos += n_j
    if interaction and noncentered:
        tau = math.sqrt(2.0) * sig_w
        for j in range(n_j):
            out[pos + j] = x[1] + tau * x[t_src + j]
        pos += n_j
    elif not interaction:
        for j in range(n_j):
            out[pos + j] = x[1]
        pos += n_j
    for i in range(n_i - 1):
        out[pos + i] = x[a_src + i]
    pos += n_i - 1
    if not collapsed:
        for j in range(n_j):
            out[pos + j] = x[s_src + j]
        pos += n_j
    c_src = t_src + (n_j if interaction else 0)
    for q in range(n_j * n_k):
        out[pos + q] = x[c_src + q]
    return pos + n_j * n_k


# C callbacks for nutpie (`kernel_sampler.py`). They live in this file because numba's on-disk cache of a function
# is invalidated only by edits to the function's own file: a callback cached in another module would keep running
# an old `log_density` after this file changed.
# The packed buffer's header: n_j, n_k, n_i, interaction, noncentered, collapsed, hyper_only, subsample_effect,
# scales (`Scales`), then the 7 prior scales.
HEADER = 16

_LOGP_SIGNATURE = numba.types.int64(
    numba.types.uint64,
    numba.types.CPointer(numba.types.float64),
    numba.types.CPointer(numba.types.float64),
    numba.types.CPointer(numba.types.float64),
    numba.types.CPointer(numba.types.float64),  # nutpie's void* user data: our packed float64 buffer
)
_EXPAND_SIGNATURE = numba.types.int64(
    numba.types.uint64,
    numba.types.uint64,
    numba.types.CPointer(numba.types.float64),
    numba.types.CPointer(numba.types.float64),
    numba.types.CPointer(numba.types.float64),
)


@numba.njit(cache=True)
def _unpack(buffer_ptr):
    header = numba.carray(buffer_ptr, (HEADER,))
    n_j, n_k, n_i = int(header[0]), int(header[1]), int(header[2])
    size = n_j * n_k * n_i * 2
    whole = numba.carray(buffer_ptr, (HEADER + 2 * size,))
    y = whole[HEADER : HEADER + size].reshape((n_j, n_k, n_i, 2))
    n = whole[HEADER + size :].reshape((n_j, n_k, n_i, 2))
    return header, y, n


@functools.cache
def callbacks() -> tuple[Any, Any]:
    """The C callbacks (log density, draw expansion), compiled on first use rather than at import (a few seconds
    on a cold numba cache), then read from numba's on-disk cache."""

    @numba.cfunc(_LOGP_SIGNATURE, cache=True, error_model="numpy")
    def _logp_callback(dim, x_ptr, grad_ptr, logp_ptr, buffer_ptr):
        # Return codes as nutpie's own numba models use them: 0 ok, 3 non-finite gradient, 4 non-finite density.
        header, y, n = _unpack(buffer_ptr)
        x = numba.carray(x_ptr, (dim,))
        grad_out = numba.carray(grad_ptr, (dim,))
        logp_out = numba.carray(logp_ptr, (1,))
        value, grad = log_density(
            x,
            y,
            n,
            header[9:16],
            int(header[2]),
            header[3] > 0,
            header[4] > 0,
            header[5] > 0,
            header[7] > 0,
            int(header[8]),
        )
        logp_out[0] = value
        for q in range(dim):
            grad_out[q] = grad[q]
        if not np.all(np.isfinite(grad)):
            return 3
        if not np.isfinite(value):
            return 4
        return 0

    @numba.cfunc(_EXPAND_SIGNATURE, cache=True, error_model="numpy")
    def _expand_callback(dim, n_expanded, x_ptr, out_ptr, buffer_ptr):
        header, _, _ = _unpack(buffer_ptr)
        x = numba.carray(x_ptr, (dim,))
        out = numba.carray(out_ptr, (n_expanded,))
        written = expand_into(
            x,
            out,
            int(header[0]),
            int(header[1]),
            int(header[2]),
            header[3] > 0,
            header[4] > 0,
            header[5] > 0,
            header[6] > 0,
            int(header[8]),
            header[13],
            header[14],
        )
        return 0 if written == n_expanded else -1

    return _logp_callback, _expand_callback
