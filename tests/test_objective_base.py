"""The shared objective contract, exercised through QueryRMSE."""

import numpy as np
import pytest

from rankkit.objectives import HESSIAN_FLOOR, QueryRMSE


def query_rmse_loss(y, z, qid):
    loss = 0.0
    for q in np.unique(qid):
        d = z[qid == q] - y[qid == q]
        loss += 0.5 * np.sum((d - d.mean()) ** 2)
    return loss


def random_queries(rng, n=40):
    qid = rng.integers(0, 6, size=n)
    y = rng.integers(0, 3, size=n).astype(float)
    z = rng.normal(size=n)
    return y, z, qid


def test_query_rmse_is_the_gradient_of_its_loss():
    rng = np.random.default_rng(0)
    y, z, qid = random_queries(rng)
    g, h = QueryRMSE().gradient_hessian(y, z, qid=qid)
    eps = 1e-6
    fd = np.empty_like(z)
    for i in range(z.size):
        e = np.zeros_like(z)
        e[i] = eps
        fd[i] = (query_rmse_loss(y, z + e, qid) - query_rmse_loss(y, z - e, qid)) / (2 * eps)
    np.testing.assert_allclose(g, fd, atol=1e-6)
    np.testing.assert_array_equal(h, 1.0)
    for q in np.unique(qid):
        assert abs(g[qid == q].sum()) < 1e-12


def test_qid_and_group_ptr_paths_agree():
    rng = np.random.default_rng(1)
    y, z, qid = random_queries(rng)
    g_unsorted, _ = QueryRMSE().gradient_hessian(y, z, qid=qid)
    order = np.argsort(qid, kind="stable")
    sizes = np.bincount(qid)
    ptr = np.concatenate([[0], np.cumsum(sizes[sizes > 0])])
    g_sorted, _ = QueryRMSE().gradient_hessian(y[order], z[order], group_ptr=ptr)
    np.testing.assert_allclose(g_unsorted[order], g_sorted)


def test_sample_weight_scales_rows():
    y, z, qid = np.array([1.0, 0.0]), np.zeros(2), np.array([3, 3])
    g, h = QueryRMSE().gradient_hessian(y, z, qid=qid, sample_weight=[2.0, 0.5])
    np.testing.assert_allclose(g, [-1.0, 0.25])
    np.testing.assert_allclose(h, [2.0, 0.5])


def test_xgboost_and_lightgbm_hooks():
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(2)
    qid = np.repeat(np.arange(20), 10)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] + 0.1 * rng.normal(size=200) > 0.5).astype(float) + (X[:, 0] > 1.2)
    obj = QueryRMSE()
    g_ref, h_ref = obj.gradient_hessian(y, np.zeros(200), qid=qid)
    g, h = obj(np.zeros(200), xgb.DMatrix(X, y, qid=qid))
    np.testing.assert_allclose(g, g_ref, rtol=1e-6)
    ds = lgb.Dataset(X, y, group=np.full(20, 10)).construct()
    g, h = obj(np.zeros(200), ds)
    np.testing.assert_allclose(g, g_ref, rtol=1e-6)
    booster = xgb.train(
        {"max_depth": 2, "base_score": 0.0, "verbosity": 0}, xgb.DMatrix(X, y, qid=qid), 20, obj=obj
    )
    pred = booster.predict(xgb.DMatrix(X), output_margin=True)
    assert np.corrcoef(pred, X[:, 0])[0, 1] > 0.8


def test_hook_errors_without_groups():
    xgb = pytest.importorskip("xgboost")
    with pytest.raises(ValueError, match="no query groups"):
        QueryRMSE()(np.zeros(3), xgb.DMatrix(np.zeros((3, 1)), np.zeros(3)))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(y=[np.nan, 1.0], raw=[0.0, 0.0], qid=[1, 1]), "NaN"),
        (dict(y=[-1.0, 1.0], raw=[0.0, 0.0], qid=[1, 1]), "negative"),
        (dict(y=[0.0, 1.0], raw=[np.inf, 0.0], qid=[1, 1]), "raw contains NaN or infinite"),
        (dict(y=[0.0, 1.0], raw=[0.0], qid=[1, 1]), "raw has 1 entries"),
        (dict(y=[0.0, 1.0], raw=[0.0, 0.0]), "exactly one of qid"),
        (dict(y=[0.0, 1.0], raw=[0.0, 0.0], group_ptr=[0, 1]), "group_ptr must rise"),
    ],
)
def test_bad_input(kwargs, match):
    y, raw = kwargs.pop("y"), kwargs.pop("raw")
    with pytest.raises(ValueError, match=match):
        QueryRMSE().gradient_hessian(y, raw, **kwargs)


def test_hessian_floor_is_positive():
    assert 0 < HESSIAN_FLOOR <= 1e-6
