"""SGLB gradient noise: scale, determinism, independence, wrapping any objective."""

import math

import numba
import numpy as np
import pytest

from rankkit._objectives.query_rmse import QueryRMSE
from rankkit._objectives.sglb import SGLB
from rankkit._objectives.stochastic_rank import StochasticRank


def _data(n_q=2000, size=50, seed=0):
    rng = np.random.default_rng(seed)
    ptr = np.arange(n_q + 1, dtype=np.int64) * size
    y = rng.integers(0, 3, n_q * size).astype(float)
    raw = rng.normal(size=n_q * size)
    return y, raw, ptr


@pytest.mark.parametrize("eta,beta", [(0.1, 1e4), (0.5, 20.0), (1.0, 1e8)])
def test_noise_scale(eta, beta):
    """Empirical std of (SGLB - wrapped) over 100k rows vs sqrt(2 / (eta beta)).

    For normal draws the sample std has relative standard error 1/sqrt(2N) = 0.22%;
    the check allows 5 of them (1.1%). The mean is within 5 standard errors of 0.
    """
    y, raw, ptr = _data()
    inner = QueryRMSE()
    g0, h0 = inner.gradient_hessian(y, raw, group_ptr=ptr, seed=3)
    g, h = SGLB(inner, learning_rate=eta, diffusion_temperature=beta).gradient_hessian(
        y, raw, group_ptr=ptr, seed=3)
    noise = g - g0
    scale = math.sqrt(2.0 / (eta * beta))
    N = noise.size
    assert abs(noise.std() / scale - 1.0) <= 5 / math.sqrt(2 * N)
    assert abs(noise.mean()) <= 5 * scale / math.sqrt(N)
    np.testing.assert_array_equal(h, h0)
    # No serial correlation between neighbouring rows (independent draws).
    r = np.corrcoef(noise[:-1], noise[1:])[0, 1]
    assert abs(r) <= 5 / math.sqrt(N)


def test_deterministic_per_seed_and_fresh_each_call():
    y, raw, ptr = _data(200, 10)
    a, _ = SGLB(QueryRMSE(), random_state=0).gradient_hessian(y, raw, group_ptr=ptr)
    b, _ = SGLB(QueryRMSE(), random_state=0).gradient_hessian(y, raw, group_ptr=ptr)
    np.testing.assert_array_equal(a, b)
    obj = SGLB(QueryRMSE(), learning_rate=0.1, diffusion_temperature=10.0, random_state=0)
    g0, _ = QueryRMSE().gradient_hessian(y, raw, group_ptr=ptr)
    n1 = obj.gradient_hessian(y, raw, group_ptr=ptr)[0] - g0
    n2 = obj.gradient_hessian(y, raw, group_ptr=ptr)[0] - g0
    assert not np.array_equal(n1, n2)
    # Independent across calls: correlation of consecutive calls' noise near 0.
    assert abs(np.corrcoef(n1, n2)[0, 1]) <= 5 / math.sqrt(n1.size)


def test_independent_of_the_wrapped_objective_noise():
    """StochasticRank gets the call's seed unchanged; the Langevin draw is separate."""
    y, raw, ptr = _data(500, 20)
    sr = StochasticRank("ndcg@5", sfa=False)
    sglb = SGLB(sr, learning_rate=0.1, diffusion_temperature=50.0)
    g_sr, _ = sr.gradient_hessian(y, raw, group_ptr=ptr, seed=42)
    g, h = sglb.gradient_hessian(y, raw, group_ptr=ptr, seed=42)
    noise = g - g_sr
    eps = sr.sampled_noise(y, raw, ptr, 42)[0]
    assert abs(np.corrcoef(noise, eps)[0, 1]) <= 5 / math.sqrt(len(y))
    assert abs(noise.std() / sglb.noise_scale - 1) <= 5 / math.sqrt(2 * len(y))
    np.testing.assert_array_equal(h, 1.0)
    assert sglb.uses_hessian is False and SGLB(QueryRMSE()).uses_hessian is True
    assert sglb.translation_invariant is True


def test_thread_count_does_not_change_noise():
    y, raw, ptr = _data(300, 30)
    before = numba.get_num_threads()
    try:
        out = []
        for t in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(t)
            out.append(SGLB(QueryRMSE()).gradient_hessian(y, raw, group_ptr=ptr, seed=9)[0])
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(out[0], out[1])


def test_xgboost_style_call_and_qid_order():
    """``obj(preds, dtrain)`` hook and the qid path (rows in any order) both add noise."""
    rng = np.random.default_rng(0)
    qid = rng.integers(0, 30, 600)
    y = rng.integers(0, 3, 600)
    raw = rng.normal(size=600)
    g0, _ = QueryRMSE().gradient_hessian(y, raw, qid=qid)
    g, _ = SGLB(QueryRMSE(), diffusion_temperature=2.0, learning_rate=1.0).gradient_hessian(
        y, raw, qid=qid, seed=5)
    assert abs((g - g0).std() - 1.0) < 0.15  # 600 draws, scale 1: 5 s.e. = 0.145

    xgboost = pytest.importorskip("xgboost")
    yy, rr, ptr = _data(100, 10)
    dtrain = xgboost.DMatrix(np.zeros((yy.shape[0], 1)), label=yy, qid=np.repeat(np.arange(100), np.diff(ptr)))
    obj = SGLB(QueryRMSE(), random_state=1)
    g1, h1 = obj(rr, dtrain)
    g2, _ = obj(rr, dtrain)
    assert g1.shape == yy.shape and not np.array_equal(g1, g2)
    np.testing.assert_array_equal(h1, 1.0)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(learning_rate=0.0), "learning_rate"),
        (dict(learning_rate=-1.0), "learning_rate"),
        (dict(diffusion_temperature=0.0), "diffusion_temperature"),
        (dict(diffusion_temperature=float("inf")), "diffusion_temperature"),
    ],
)
def test_bad_params(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SGLB(QueryRMSE(), **kwargs).gradient_hessian([1, 0], [0.0, 0.0], qid=[0, 0])


def test_bad_objective_and_inner_validation():
    with pytest.raises(TypeError, match="objective"):
        SGLB("ndcg").gradient_hessian([1, 0], [0.0, 0.0], qid=[0, 0])
    with pytest.raises(TypeError, match="objective"):
        SGLB(QueryRMSE).gradient_hessian([1, 0], [0.0, 0.0], qid=[0, 0])
    with pytest.raises(ValueError, match="sigma"):
        SGLB(StochasticRank(sigma=-1.0)).gradient_hessian([1, 0], [0.0, 0.0], qid=[0, 0])
    with pytest.raises(ValueError, match="err_mapping"):
        SGLB(StochasticRank("err")).gradient_hessian([3, 0], [0.0, 0.0], qid=[0, 0])
