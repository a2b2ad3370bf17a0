"""The compiled log density equals the PyMC model's (up to a constant), and so do the gradients."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from tests.conftest import model_spec
from testtask.pretrain_on_test import kernel
from testtask.pretrain_on_test.hierarchical import (
    SCALE_ANGLE,
    SCALE_RADIUS,
    SIGMA_V_RAW,
    ModelData,
    Scales,
    build_marginal,
    resolve_spec,
)
from testtask.pretrain_on_test.simulate import TruePars, simulate_long

# PyMC's density, the reference, is evaluated at a few points: PyTensor's Python implementations give the same
# values without compiling C (about 3 minutes of the suite on a cold PyTensor cache, as in a fresh CI machine).
REFERENCE_MODE = "FAST_COMPILE"

# The raw coordinates of σ_U and σ_V (`hierarchical.Scales`) PyMC samples as the kernel's x[2], x[3].
RAW_SCALES = {
    f"{SCALE_RADIUS}_log__": 2,
    f"{SCALE_ANGLE}_interval__": 3,
    SIGMA_V_RAW: 3,
}


def _point(model: pm.Model, layout: kernel.Layout, x: np.ndarray) -> dict:
    values = layout.expand(x)
    point = {}
    for var in model.value_vars:
        name = var.name
        if name in RAW_SCALES:
            point[name] = x[RAW_SCALES[name]]
        elif name.endswith("_log__"):
            point[name] = np.log(values[name[: -len("_log__")]])
        else:
            point[name] = values[name]
    return point


@pytest.mark.parametrize(
    ("interaction", "noncentered", "lm_types", "collapsed"),
    [
        (True, False, 2, False),
        (True, True, 2, False),
        (False, False, 2, False),
        (True, False, 1, False),
        (True, True, 3, False),
        (True, False, 2, True),
        (True, True, 2, True),
        (False, False, 1, True),
    ],
)
def test_log_density_and_gradient_match_pymc(interaction, noncentered, lm_types, collapsed):
    """Also for s_j integrated out (`collapsed`), against PyMC's MvNormal with the compound-symmetric covariance."""
    long = simulate_long(TruePars(beta=0.2), datasets=3, subsamples=4, n=60, lm_types=lm_types, seed=2)
    long = long[~((long.dataset == "task02") & (long.subsample == 3))]  # one padded cell
    data = ModelData.from_long(long)
    spec = model_spec(interaction=interaction, noncentered_t=noncentered, collapse_s=collapsed)
    layout = kernel.Layout(data.shape, spec, noncentered, collapsed)
    model = build_marginal(data.shape, spec)
    with model:
        pm.set_data({"correct": data.correct.astype(float), "trials": data.trials.astype(float)})
    logp, dlogp = model.compile_logp(mode=REFERENCE_MODE), model.compile_dlogp(mode=REFERENCE_MODE)
    order = [v.name for v in model.value_vars]
    rng = np.random.default_rng(0)
    args = (
        data.correct.astype(float),
        data.trials.astype(float),
        kernel.priors_vector(spec),
        data.shape[2],
        interaction,
        noncentered,
        collapsed,
    )
    xs = [rng.normal(0, 0.5, layout.ndim) for _ in range(3)]
    ours = [kernel.log_density(x, *args) for x in xs]
    theirs = [(logp(_point(model, layout, x)), dlogp(_point(model, layout, x))) for x in xs]
    for (lp, _), (lp_ref, _) in zip(ours[1:], theirs[1:], strict=True):
        assert lp - ours[0][0] == pytest.approx(lp_ref - theirs[0][0], rel=1e-9, abs=1e-8)
    for x, (_, grad), (_, grad_ref) in zip(xs, ours, theirs, strict=True):
        point = _point(model, layout, x)
        sizes = [np.size(point[name]) for name in order]
        ref = dict(zip(order, np.split(grad_ref, np.cumsum(sizes)[:-1]), strict=True))
        mine = _point(model, layout, x)  # same names, now filled with our gradient pieces
        positions = {
            "Intercept": [0],
            "treatment": [1],
            "1|dataset_sigma_log__": [2],
            "1|dataset:subsample_sigma_log__": [3],
            "1|dataset:treatment_sigma_log__": [4],
            "lm_type": range(layout.alpha.start, layout.alpha.stop),
            "s": range(layout.s.start, layout.s.stop),
            "t": range(layout.t.start, layout.t.stop),
            "t_offset": range(layout.t.start, layout.t.stop),
            "c": range(layout.c.start, layout.c.stop),
        }
        for name in order:
            mine[name] = grad[list(positions[name])]
            np.testing.assert_allclose(mine[name], ref[name].ravel(), rtol=1e-7, atol=1e-7, err_msg=name)


@pytest.mark.parametrize(("interaction", "lm_types"), [(False, 2), (False, 1), (True, 2)])
def test_log_density_without_the_subsample_term_matches_pymc(interaction, lm_types):
    """Figure 7's slice model as the authors fit it (meta.py: `(1|pair)`, one intercept per task): no V term, one
    subsample per task, c_j ~ N(μ + β/2, τ_s); σ_V keeps only its prior."""
    long = simulate_long(TruePars(beta=0.2), datasets=5, subsamples=1, n=200, lm_types=lm_types, seed=5)
    data = ModelData.from_long(long)
    spec = resolve_spec(
        data, model_spec(interaction=interaction, noncentered_t=False, subsample_effect=False)
    )
    assert spec.collapse_s is True
    layout = kernel.Layout(data.shape, spec, False, True)
    model = build_marginal(data.shape, spec)
    assert {v.name for v in model.free_RVs} >= {"c", SIGMA_V_RAW} and "s" not in model.named_vars
    assert "1|dataset:subsample_sigma" in model.named_vars  # σ_V = h_V·|B|, a deterministic
    with model:
        pm.set_data({"correct": data.correct.astype(float), "trials": data.trials.astype(float)})
    args = (
        data.correct.astype(float),
        data.trials.astype(float),
        kernel.priors_vector(spec),
        data.shape[2],
        interaction,
        False,
        True,
        False,
        int(Scales.PRIOR_ONLY_V),
    )
    assert layout.scales is Scales.PRIOR_ONLY_V
    rng = np.random.default_rng(1)
    xs = [rng.normal(0, 0.5, layout.ndim) for _ in range(3)]
    scales = {"1|dataset_sigma_log__": [2], SIGMA_V_RAW: [3]}
    ours = _assert_matches_pymc(model, layout, args, xs, scales)
    # σ_V is free of the data: its coordinate B (σ_V = h_V·|B|) is a standard normal's alone.
    assert ours[0][1][3] == pytest.approx(-xs[0][3])
    assert layout.expand(xs[0])["1|dataset:subsample_sigma"] == pytest.approx(
        kernel.priors_vector(spec)[5] * abs(xs[0][3])
    )


@pytest.mark.parametrize(
    ("interaction", "noncentered", "lm_types"), [(True, False, 2), (True, True, 1), (False, False, 2)]
)
def test_polar_scales_of_one_subsample_per_task_match_pymc(interaction, noncentered, lm_types):
    """Figure 7's slices under protocol=paper_text: one subsample per task with the V term, σ_U and σ_V sampled
    as (log r, logit(2φ/π)); unequal HalfNormal scales so that the angle enters the likelihood too."""
    import dataclasses

    long = simulate_long(TruePars(beta=0.2), datasets=5, subsamples=1, n=200, lm_types=lm_types, seed=6)
    data = ModelData.from_long(long)
    base = model_spec(interaction=interaction, noncentered_t=noncentered)
    spec = resolve_spec(data, dataclasses.replace(base, priors=dataclasses.replace(base.priors, sigma_V=0.6)))
    layout = kernel.Layout(data.shape, spec, noncentered, True)
    assert layout.scales is Scales.POLAR
    model = build_marginal(data.shape, spec)
    with model:
        pm.set_data({"correct": data.correct.astype(float), "trials": data.trials.astype(float)})
    args = (data.correct.astype(float), data.trials.astype(float), kernel.priors_vector(spec), lm_types)
    args += (interaction, noncentered, True, True, int(Scales.POLAR))
    xs = [np.random.default_rng(seed).normal(0, 0.8, layout.ndim) for seed in range(4)]
    scales = {f"{SCALE_RADIUS}_log__": [2], f"{SCALE_ANGLE}_interval__": [3]}
    _assert_matches_pymc(model, layout, args, xs, scales)


def test_a_model_without_the_subsample_term_needs_one_subsample_per_task():
    long = simulate_long(TruePars(beta=0.2), datasets=3, subsamples=2, n=60, lm_types=2, seed=2)
    with pytest.raises(ValueError, match="one subsample per task"):
        resolve_spec(ModelData.from_long(long), model_spec(subsample_effect=False))


@pytest.mark.parametrize(
    ("interaction", "noncentered", "lm_types", "collapsed", "n_k", "subsample_effect"),
    [
        (True, True, 2, False, 4, True),
        (True, False, 3, True, 4, True),
        (False, False, 1, False, 4, True),
        (False, False, 2, True, 4, True),
        (True, False, 2, True, 1, True),  # POLAR scales
        (False, False, 2, True, 1, False),  # PRIOR_ONLY_V
    ],
)
def test_compiled_expansion_is_the_layouts(
    interaction, noncentered, lm_types, collapsed, n_k, subsample_effect
):
    """What nutpie stores per draw (the compiled `expand_into`) is `Layout.expand`, value for value, in order."""
    spec = model_spec(
        interaction=interaction,
        noncentered_t=noncentered,
        collapse_s=collapsed,
        subsample_effect=subsample_effect,
    )
    shape = (3, n_k, lm_types, 2)
    layout = kernel.Layout(shape, spec, noncentered, collapsed)
    x = np.random.default_rng(1).normal(0, 0.7, layout.ndim)
    expected = np.concatenate([np.ravel(v) for v in layout.expand(x).values()])
    flags = (3, n_k, lm_types, interaction, noncentered, collapsed)
    scales = (int(layout.scales), spec.priors.sigma_U, spec.priors.sigma_V)
    out = np.full(expected.size, np.nan)
    assert kernel.expand_into(x, out, *flags, False, *scales) == expected.size
    np.testing.assert_array_equal(out, expected)
    hyper = np.full(expected.size, np.nan)
    written = kernel.expand_into(x, hyper, *flags, True, *scales)
    assert written == (5 if interaction else 4)
    np.testing.assert_array_equal(hyper[:written], expected[:written])


@pytest.mark.parametrize("n_k", [2, 12])  # 12: the row-by-row vectorised path (at least 8 subsamples)
def test_likelihood_is_the_binomial_log_likelihood_far_from_zero_too(n_k):
    """The paired-arms path (equal n), arms of unequal n and the stable path (|η| large) all equal the plain
    binomial log-likelihood (without its constant), and the gradient its finite differences."""
    rng = np.random.default_rng(3)
    trials = np.full((3, n_k, 2, 2), 40.0)
    trials[2, 1] = 0.0  # a padded cell
    trials[0, 0, 1, 1] = 25.0  # arms of unequal n: that row is computed in the stable form
    y = np.floor(rng.uniform(0, 1, trials.shape) * trials)
    for scale in (0.5, 40.0):  # 40: every |η| beyond the fast path's range
        c, t, alpha = rng.normal(0, scale, (3, n_k)), rng.normal(0, 1, 3), np.array([0.0, 0.4])
        if scale == 0.5:
            c[1, -1] = (
                35.0  # one far cell sends its task's rows to the stable form; the other tasks stay fast
            )
        eta = (
            c[:, :, None, None] + alpha[None, None, :, None] + t[:, None, None, None] * np.array([-0.5, 0.5])
        )
        expected = float((y * eta - trials * np.logaddexp(0.0, eta)).sum())
        g_c, g_t, g_alpha = np.empty((3, n_k)), np.empty(3), np.empty(2)
        assert kernel._likelihood(c, t, alpha, y, trials, g_c, g_t, g_alpha) == pytest.approx(
            expected, rel=1e-12
        )
        step = 1e-6

        def value(c_, t_, alpha_):
            return kernel._likelihood(c_, t_, alpha_, y, trials, np.empty((3, n_k)), np.empty(3), np.empty(2))

        for spot_c in ((1, 0), (2, n_k - 1), (0, 0)):
            for got, args, index in (
                (g_c, (c, t, alpha), 0),
                (g_t, (c, t, alpha), 1),
                (g_alpha, (c, t, alpha), 2),
            ):
                bumped = [a.copy() for a in args]
                spot = spot_c if index == 0 else (spot_c[0],) if index == 1 else (1,)
                bumped[index][spot] += step
                numeric = (value(*bumped) - expected) / step
                assert got[spot] == pytest.approx(numeric, rel=1e-4, abs=1e-4), (scale, index, spot)


def test_exp_and_log_of_the_vectorised_likelihood_are_within_an_ulp_or_two_of_libm():
    """The polynomial exp and log the vectorised rows use, against NumPy's over their whole working ranges."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-700, 700, 200_000), rng.uniform(-1, 1, 100_000), [0.0, -40.0, 40.0]])
    got = np.empty_like(x)
    kernel.vexp(x, got)
    assert np.max(np.abs(got / np.exp(x) - 1.0)) <= 2 * np.finfo(float).eps
    # log of (1 + u0)(1 + u1) ≥ 1: near 1 (tiny u), around the mantissa fold at √2, and up to e^700.
    v = np.concatenate(
        [
            1.0 + rng.uniform(0, 1e-6, 50_000),
            rng.uniform(1.0, 4.0, 100_000),
            np.sqrt(2.0) * (1.0 + rng.uniform(-1e-12, 1e-12, 1000)),
            np.exp(rng.uniform(0, 700, 100_000)),
        ]
    )
    got = np.empty_like(v)
    kernel.vlog(v, got)
    exact = np.log(v)
    assert np.max(np.abs(got - exact) / np.maximum(exact, 1.0)) <= 2 * np.finfo(float).eps


def test_the_c_callback_nutpie_calls_is_the_log_density():
    """What nutpie's Rust sampler calls (the C callback over the packed data buffer) returns `log_density`'s value and
    gradient, and flags a non-finite density instead of passing it on."""
    import ctypes

    from testtask.pretrain_on_test import kernel_sampler

    long = simulate_long(TruePars(beta=0.2), datasets=3, subsamples=4, n=60, lm_types=2, seed=2)
    data = ModelData.from_long(long)
    spec = model_spec(noncentered_t=True, collapse_s=False)
    model = kernel_sampler.kernel_model(data, spec)
    x = np.random.default_rng(4).normal(0, 0.5, model.n_dim)
    grad, value = np.empty_like(x), np.empty(1)

    def call(point):
        doubles = ctypes.POINTER(ctypes.c_double)
        return kernel.callbacks()[0].ctypes(
            ctypes.c_uint64(point.size),
            point.ctypes.data_as(doubles),
            grad.ctypes.data_as(doubles),
            value.ctypes.data_as(doubles),
            model.buffer.ctypes.data_as(doubles),
        )

    assert call(x) == 0
    expected, expected_grad = kernel.log_density(
        x,
        data.correct.astype(float),
        data.trials.astype(float),
        kernel.priors_vector(spec),
        2,
        True,
        True,
        False,
    )
    assert value[0] == expected
    np.testing.assert_array_equal(grad, expected_grad)
    x[2] = 800.0  # σ_U = exp(800): the density is not finite
    assert call(x) in (3, 4)


def test_a_seed_gives_the_same_chains_on_one_core_and_on_two():
    """nutpie with the vectorised likelihood (12 subsamples per task): one thread or two, the same draws bit for
    bit. (A fast-math likelihood, whose sums' order could vary, broke this on real data.)"""
    from testtask.pretrain_on_test import kernel_sampler

    long = simulate_long(TruePars(beta=0.2), datasets=6, subsamples=12, n=80, lm_types=2, seed=3)
    data = ModelData.from_long(long)
    spec = model_spec(noncentered_t=True, collapse_s=False)
    draws = [
        kernel_sampler.sample_hyper(
            data, spec, seed=11, settings=kernel_sampler.NutsSettings(200, 200, 4, cores, 0.8)
        ).values
        for cores in (1, 2)
    ]
    assert draws[0].keys() == draws[1].keys()
    for name in draws[0]:
        np.testing.assert_array_equal(draws[0][name], draws[1][name])


def test_a_chains_start_depends_on_its_seed_not_on_which_thread_asks_first():
    """nutpie asks for each chain's start from that chain's thread, in whatever order the threads run: the start
    must be a function of the chain's seed alone, or a rerun with the same seed can give other draws."""
    from testtask.pretrain_on_test import kernel_sampler

    data = ModelData.from_long(
        simulate_long(TruePars(beta=0.2), datasets=3, subsamples=4, n=60, lm_types=2, seed=2)
    )
    spec = model_spec(noncentered_t=True, collapse_s=False)
    first, second = 11, 12
    one = kernel_sampler.kernel_model(data, spec)
    in_order = {first: one.initial(first), second: one.initial(second)}
    other = kernel_sampler.kernel_model(data, spec)
    swapped = {second: other.initial(second), first: other.initial(first)}
    for seed in (first, second):
        np.testing.assert_array_equal(in_order[seed], swapped[seed])
    assert not np.array_equal(in_order[first], in_order[second])  # chains still start apart


def _assert_matches_pymc(model, layout, args, xs, scales: dict[str, list[int]]):
    """`kernel.log_density` at each point of `xs` against the PyMC model's compiled log density (up to its
    constant) and gradient, per value variable; `scales` names the two scale coordinates (2 and 3) of this
    layout. Returns ours, (log density, gradient) per point."""
    logp, dlogp = model.compile_logp(mode=REFERENCE_MODE), model.compile_dlogp(mode=REFERENCE_MODE)
    ours = [kernel.log_density(x, *args) for x in xs]
    theirs = [(logp(_point(model, layout, x)), dlogp(_point(model, layout, x))) for x in xs]
    for (lp, _), (lp_ref, _) in zip(ours[1:], theirs[1:], strict=True):
        assert lp - ours[0][0] == pytest.approx(lp_ref - theirs[0][0], rel=1e-9, abs=1e-8)
    order = [v.name for v in model.value_vars]
    positions = {
        "Intercept": [0],
        "treatment": [1],
        **scales,
        "1|dataset:treatment_sigma_log__": [4],
        "lm_type": list(range(layout.alpha.start, layout.alpha.stop)),
        "t": list(range(layout.t.start, layout.t.stop)),
        "t_offset": list(range(layout.t.start, layout.t.stop)),
        "c": list(range(layout.c.start, layout.c.stop)),
    }
    for x, (_, grad), (_, grad_ref) in zip(xs, ours, theirs, strict=True):
        point = _point(model, layout, x)
        sizes = [np.size(point[name]) for name in order]
        ref = dict(zip(order, np.split(grad_ref, np.cumsum(sizes)[:-1]), strict=True))
        for name in order:
            np.testing.assert_allclose(
                grad[positions[name]], ref[name].ravel(), rtol=1e-7, atol=1e-7, err_msg=name
            )
    return ours
