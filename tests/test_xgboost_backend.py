"""The XGBoost backend: equality with plain ``xgboost.train`` and exact SGLB.

SGLB shrinks the whole model before every iteration; XGBoost cannot rescale
old trees, so the backend tracks the shrunk raw scores and folds the factors
into the leaves at the end. The reference below recomputes the shrunk model
naively from the unscaled trees, ``F_T = sum_t (prod_{s>t} c_s) f_t``.
"""

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

xgboost = pytest.importorskip("xgboost")

import rankkit._estimators as est  # noqa: E402
from rankkit._backends.xgboost import XGBoostBackend  # noqa: E402
from rankkit._objectives.query_rmse import QueryRMSE  # noqa: E402

from ._backends import fit_recording, in_query_units, ranking_data, small_backend  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return ranking_data()


def _backend(n_estimators=12, **kw):
    return small_backend(XGBoostBackend, n_estimators, **kw)


def _naive_shrunk_model(booster, dmat, factors):
    """``F = sum_t (prod_{s > t} c_s) f_t`` from the unscaled trees, one by one."""
    total = np.zeros(dmat.num_row())
    for t in range(len(factors)):
        tree = booster.predict(dmat, output_margin=True, iteration_range=(t, t + 1)).astype(np.float64)
        total += np.prod(factors[t + 1:]) * tree
    return total


def _run_with_shrink(data, shrink, n_estimators=12):
    return fit_recording(_backend(n_estimators), data, shrink)


@pytest.mark.parametrize("mode", ["constant", "decreasing"])
def test_sglb_shrinkage_is_exact(data, mode, tmp_path):
    X, _, _ = data
    gamma = 0.5
    if mode == "constant":
        shrink = lambda t: None if t == 0 else 1.0 - gamma * 0.3  # noqa: E731
    else:
        shrink = lambda t: None if t == 0 else 1.0 - gamma / t  # noqa: E731
    backend, seen = _run_with_shrink(data, shrink)
    factors = np.array([1.0] + [shrink(t) for t in range(1, 12)])
    np.testing.assert_array_equal(backend.shrink_factors_, factors)
    dtrain = xgboost.DMatrix(X)
    reference = _naive_shrunk_model(backend._unfolded, dtrain, factors)
    # Tracked scores (float64 sums of float32 trees) equal the naive model ...
    np.testing.assert_allclose(seen["train"][-1], reference, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(seen["eval"][-1], reference[::3], rtol=1e-12, atol=1e-12)
    # ... gradients at iteration t saw c_t times the model after t - 1 iterations ...
    for t in range(1, 12):
        np.testing.assert_allclose(seen["grad_raw"][t], factors[t] * seen["train"][t - 1], rtol=1e-12)
    # ... and the folded booster, also once saved as JSON, predicts that same model
    # (to float32 precision: XGBoost stores leaves and sums in float32).
    np.testing.assert_allclose(backend.predict(X), reference, rtol=1e-5, atol=1e-6)
    backend.booster_.save_model(tmp_path / "m.json")
    served = xgboost.Booster(model_file=str(tmp_path / "m.json"))
    np.testing.assert_allclose(served.predict(dtrain, output_margin=True), reference, rtol=1e-5, atol=1e-6)
    # The shrinkage really changed the model (the test would pass vacuously otherwise).
    unshrunk = backend._unfolded.predict(dtrain, output_margin=True)
    assert np.max(np.abs(unshrunk - reference)) > 0.1


def test_truncate_refolds_shrinkage(data):
    X, _, _ = data
    backend, seen = _run_with_shrink(data, lambda t: None if t == 0 else 0.8)
    backend.truncate(5)
    np.testing.assert_allclose(backend.predict(X), seen["train"][4], rtol=1e-5, atol=1e-6)
    assert backend.booster_.num_boosted_rounds() == 5


@pytest.mark.parametrize("name", ["queryrmse", "lambdamart"])
def test_matches_plain_xgboost_train(data, name):
    from rankkit._objectives.lambdamart import LambdaMART

    X, y, qid = data
    if name == "queryrmse":
        ranker = est.QueryRMSERanker(n_estimators=10, learning_rate=0.1, max_depth=4, random_state=0, backend="xgboost")
        obj = QueryRMSE()
    else:
        ranker = est.LambdaMARTRanker("ndcg", 10, n_estimators=10, learning_rate=0.1, max_depth=4, random_state=0,
                                      backend="xgboost")
        obj = LambdaMART("ndcg", 10)
    ranker.fit(X, y, qid=qid)
    params = {"tree_method": "hist", "eta": 0.1, "max_depth": 4, "min_child_weight": 1.0, "lambda": 3.0,
              "max_bin": 256, "base_score": 0.0, "disable_default_eval_metric": 1}
    # the ranker hands per-query losses over in query units (query_hessian_units)
    booster = xgboost.train(params, xgboost.DMatrix(X, y, qid=qid), 10, obj=in_query_units(obj))
    np.testing.assert_array_equal(ranker.predict(X), booster.predict(xgboost.DMatrix(X), output_margin=True))


def _sglb_ranker(**kw):
    return est.StochasticRankRanker("ndcg", 10, n_estimators=8, max_depth=3, langevin=True,
                                    diffusion_temperature=1e3, model_shrink_rate=0.01, random_state=7, backend="xgboost",
                                    **kw)


def test_sglb_same_seed_same_model_any_thread_count(data):
    X, y, qid = data
    numba.set_num_threads(1)
    try:
        one = _sglb_ranker().fit(X, y, qid=qid).predict(X)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    two = _sglb_ranker().fit(X, y, qid=qid).predict(X)
    np.testing.assert_array_equal(one, two)
    other_seed = _sglb_ranker().set_params(random_state=8).fit(X, y, qid=qid).predict(X)
    assert not np.array_equal(one, other_seed)


def test_langevin_noise_changes_gradients(data):
    # langevin=True must add noise: with the same seed the model differs from langevin=False.
    X, y, qid = data
    kw = dict(n_estimators=5, random_state=0, backend="xgboost")
    noisy = est.QueryRMSERanker(langevin=True, diffusion_temperature=10.0, **kw).fit(X, y, qid=qid).predict(X)
    plain = est.QueryRMSERanker(**kw).fit(X, y, qid=qid).predict(X)
    assert np.max(np.abs(noisy - plain)) > 1e-3


def test_common_params_map_to_xgboost_names():
    b = _backend(n_jobs=2, subsample=0.5, colsample_bytree=0.7, reg_lambda=3.0, max_bin=32,
                 backend_params={"max_leaves": 5, "grow_policy": "lossguide"})
    p = b._params()
    assert p["lambda"] == 3.0 and p["subsample"] == 0.5 and p["colsample_bytree"] == 0.7
    assert p["nthread"] == 2 and p["max_bin"] == 32 and p["seed"] == 0 and p["eta"] == 0.3
    assert p["max_leaves"] == 5 and p["grow_policy"] == "lossguide"  # backend_params add XGBoost's own
    assert p["base_score"] == 0.0 and p["tree_method"] == "hist"


def test_values_beyond_float32_are_refused_naming_the_features(data):
    """XGBoost trains on float32: a finite float64 value above its range,
    in the training rows or an eval set's, is a clear error (it was an
    XGBoost internal error) naming the feature and the other backends."""
    X, y, qid = data
    big = X.copy()
    big[3, 2] = -1e39
    ranker = est.QueryRMSERanker(backend="xgboost", n_estimators=2, n_jobs=1)
    message = r"Features \[2\] hold finite values beyond float32's range.*backend='numba'"
    with pytest.raises(ValueError, match=message):
        ranker.fit(big, y, qid=qid)
    with pytest.raises(ValueError, match=message):
        ranker.fit(X, y, qid=qid, eval_set=[(big, y)], eval_qid=[qid])
    fitted = ranker.fit(X, y, qid=qid)
    assert np.isfinite(fitted.predict(big)).all()  # serving reads it as float32's infinity, as XGBoost does


_THREADS_STARTED = """
    import os, sys, time
    import rankkit
    from rankkit.datasets import make_ranking

    def threads():
        time.sleep(0.1)  # a thread that has just ended leaves /proc a moment later
        return len(os.listdir("/proc/self/task"))

    X, y, qid = make_ranking(30, random_state=0)
    path = sys.argv[2]
    if sys.argv[1] == "fit":
        before = threads()
        ranker = rankkit.LambdaMARTRanker(n_estimators=5, backend="xgboost", n_jobs=1, model_shrink_rate=0.05,
                                          random_state=0)
        ranker.fit(X, y, qid=qid).predict(X, iteration_range=(1, 3))
        ranker.save_model(path)
    else:
        before = threads()
        rankkit.load_model(path).predict(X)
    print(before, threads())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc/self/task")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenMP's default is one thread")
def test_n_jobs_1_starts_no_engine_thread(tmp_path):
    """In a fresh process, a fit with ``n_jobs=1`` (SGLB shrinkage folded at
    the end, a staged prediction) and loading and serving the saved model
    start no thread: XGBoost ran the first iteration's gradients of an
    unconfigured booster, the list of valid parameters' probe and every model
    load on every core, whatever ``nthread`` said."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")}
    path = str(tmp_path / "m.rkm")
    for step in ("fit", "load"):
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_THREADS_STARTED), step, path], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        before, after = map(int, proc.stdout.split()[-2:])
        assert after == before, f"{step} with n_jobs=1 started {after - before} thread(s)"
