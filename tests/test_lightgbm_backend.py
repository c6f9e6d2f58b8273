"""The LightGBM backend: equality with plain ``lightgbm.train``, exact SGLB,
serving with plain LightGBM, determinism.

SGLB shrinks the whole model before every iteration; LightGBM cannot rescale
old trees, so the backend tracks the shrunk raw scores and folds the factors
into the leaves of the model string at the end. The reference below
recomputes the shrunk model naively from the unscaled trees,
``F_T = sum_t (prod_{s>t} c_s) f_t``.
"""

import pickle

import numpy as np
import pytest

# rankkit before LightGBM: importing rankkit starts the OpenMP runtime that numba
# and LightGBM share with passive waiting (rankkit/_threads.py); loaded first by
# LightGBM it would spin, which on a busy machine slows LightGBM itself by orders
# of magnitude (docs/backends.md).
import rankkit._estimators as est
from rankkit._groups import make_groups
from rankkit.datasets import make_ranking
from rankkit.objectives import LambdaMART, QueryRMSE, YetiRank

lgb = pytest.importorskip("lightgbm")

from rankkit._backends.lightgbm import LightGBMBackend  # noqa: E402

from ._backends import fit_recording, in_query_units, ranking_data, small_backend  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return ranking_data()


def _backend(n_estimators=12, **kw):
    return small_backend(LightGBMBackend, n_estimators, **kw)


def _ptr(qid):
    return make_groups(qid, len(qid)).group_ptr


def _naive_shrunk_model(unfolded, X, factors, tree_iterations):
    """``F = sum_t (prod_{s > t} c_s) f_t`` from the unscaled trees, one by one."""
    booster = lgb.Booster(model_str=unfolded)
    total = np.zeros(X.shape[0])
    for i, t in enumerate(tree_iterations):
        tree = booster.predict(X, start_iteration=i, num_iteration=1, raw_score=True)
        total += np.prod(factors[t + 1:]) * tree
    return total


def _run(data, shrink, n_estimators=12, grad_scale=None, **kw):
    return fit_recording(_backend(n_estimators, **kw), data, shrink, grad_scale)


# -- SGLB shrinkage ------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "decreasing"])
def test_sglb_shrinkage_is_exact(data, mode, tmp_path):
    X, _, _ = data
    gamma = 0.5
    if mode == "constant":
        shrink = lambda t: None if t == 0 else 1.0 - gamma * 0.3  # noqa: E731
    else:
        shrink = lambda t: None if t == 0 else 1.0 - gamma / t  # noqa: E731
    backend, seen = _run(data, shrink)
    factors = np.array([1.0] + [shrink(t) for t in range(1, 12)])
    np.testing.assert_array_equal(backend.shrink_factors_, factors)
    np.testing.assert_array_equal(backend.tree_iterations_, np.arange(12))
    reference = _naive_shrunk_model(backend._unfolded, X, factors, backend.tree_iterations_)
    # Tracked scores (float64, from LightGBM's own running sums) equal the naive model ...
    np.testing.assert_allclose(seen["train"][-1], reference, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(seen["eval"][-1], reference[::3], rtol=1e-12, atol=1e-12)
    # ... gradients at iteration t saw c_t times the model after t - 1 iterations ...
    for t in range(1, 12):
        np.testing.assert_allclose(seen["grad_raw"][t], factors[t] * seen["train"][t - 1], rtol=1e-12)
    # ... and the folded booster, also saved and loaded by plain LightGBM, predicts
    # that same model to float64 precision (LightGBM keeps leaves in float64).
    np.testing.assert_allclose(backend.predict(X), reference, rtol=1e-12, atol=1e-12)
    served = lgb.Booster(model_str=backend.booster_.model_to_string())
    np.testing.assert_allclose(served.predict(X, raw_score=True), reference, rtol=1e-12, atol=1e-12)
    backend.booster_.save_model(str(tmp_path / "m.txt"))
    from_file = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    np.testing.assert_allclose(from_file.predict(X, raw_score=True), reference, rtol=1e-12, atol=1e-12)
    # The shrinkage really changed the model (the test would pass vacuously otherwise).
    unshrunk = lgb.Booster(model_str=backend._unfolded).predict(X, raw_score=True)
    assert np.max(np.abs(unshrunk - reference)) > 0.1


def test_shrinkage_folds_internal_values_too(data):
    # dump_model's node values follow the leaves, so the saved model stays self-consistent.
    backend, _ = _run(data, lambda t: 0.5, n_estimators=3)
    unfolded = lgb.Booster(model_str=backend._unfolded).dump_model()["tree_info"]
    folded = backend.booster_.dump_model()["tree_info"]
    for t, scale in enumerate([0.25, 0.5, 1.0]):  # prod of the factors after tree t
        a, b = unfolded[t]["tree_structure"], folded[t]["tree_structure"]
        assert b["internal_value"] == pytest.approx(scale * a["internal_value"], rel=1e-5)
        assert b["left_child"].get("leaf_value", b["left_child"].get("internal_value")) == pytest.approx(
            scale * a["left_child"].get("leaf_value", a["left_child"].get("internal_value")), rel=1e-5)


def test_truncate_and_staged_predictions_refold_shrinkage(data):
    X, _, _ = data
    backend, seen = _run(data, lambda t: None if t == 0 else 0.8)
    for k in (1, 4, 9):
        np.testing.assert_allclose(backend.predict(X, n_iterations=k), seen["train"][k - 1], rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(backend.predict(X, n_iterations=0), 0.0)
    backend.truncate(5)
    np.testing.assert_allclose(backend.predict(X), seen["train"][4], rtol=1e-12, atol=1e-14)
    assert backend.booster_.num_trees() == 5 and backend.n_iterations_ == 5
    served = lgb.Booster(model_str=backend.booster_.model_to_string())
    np.testing.assert_allclose(served.predict(X, raw_score=True), seen["train"][4], rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="n_iterations must be in"):
        backend.truncate(6)


def test_iterations_without_a_tree(data):
    """An iteration whose gradients allow no split adds no tree to a LightGBM model;
    SGLB factors still apply to it, and truncation counts iterations, not trees."""
    X, _, _ = data
    silent = {3, 4, 8}  # zero gradients: no split gains anything
    backend, seen = _run(data, lambda t: None if t == 0 else 0.9,
                         grad_scale=lambda t: 0.0 if t in silent else 1.0)
    expected = [t for t in range(12) if t not in silent]
    np.testing.assert_array_equal(backend.tree_iterations_, expected)
    assert backend.booster_.num_trees() == len(expected) and backend.n_iterations_ == 12
    # Shrinkage of the silent iterations is part of the model.
    np.testing.assert_allclose(seen["train"][4], 0.9 ** 2 * seen["train"][2], rtol=1e-12)
    for k in (3, 4, 5, 9, 12):
        np.testing.assert_allclose(backend.predict(X, n_iterations=k), seen["train"][k - 1], rtol=1e-12, atol=1e-14)
    backend.truncate(5)  # iterations 0..4: trees of 0, 1, 2
    assert backend.booster_.num_trees() == 3
    np.testing.assert_allclose(backend.predict(X), seen["train"][4], rtol=1e-12, atol=1e-14)


def test_callback_stops_and_eval_scores_match_predict(data):
    X, y, qid = data
    ptr = _ptr(qid)
    E = X[::2] + 0.25
    stop = []

    def grad_fn(raw, t):
        return QueryRMSE()._gradient_hessian_sorted(y, raw, ptr, 0)

    b = _backend().fit(X, grad_fn, eval_X=[E, X[:50]],
                       callback=lambda t, raw, ev: stop.append((raw.copy(), ev[0].copy())) or t == 4)
    assert b.n_iterations_ == 5 and b.booster_.num_trees() == 5
    np.testing.assert_allclose(b.predict(E), stop[-1][1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b.predict(X), stop[-1][0], rtol=1e-12, atol=1e-14)


# -- the same model as plain LightGBM ------------------------------------------------------
@pytest.mark.parametrize("name", ["queryrmse", "lambdamart", "yetirank"])
def test_matches_plain_lightgbm_train(data, name):
    """Without SGLB the ranker is ``lightgbm.train(params={"objective": obj})``
    with the objective's hessians in query units, as rankers hand them over:
    same trees, bit for bit, also for a randomised objective with the same seed."""
    X, y, qid = data
    kw = dict(n_estimators=10, max_depth=4, random_state=0, backend="lightgbm", subsample=0.8)
    if name == "queryrmse":
        ranker, obj = est.QueryRMSERanker(**kw), QueryRMSE()
    elif name == "lambdamart":
        ranker, obj = est.LambdaMARTRanker("ndcg", 10, **kw), LambdaMART("ndcg", 10)
    else:
        ranker, obj = est.YetiRanker(n_permutations=3, **kw), YetiRank(n_permutations=3, random_state=0)
    ranker.fit(X, y, qid=qid)
    params = {**ranker.backend_.params_, "objective": in_query_units(obj)}
    booster = lgb.train(params, lgb.Dataset(X, y, group=np.diff(_ptr(qid))), num_boost_round=10)
    np.testing.assert_array_equal(ranker.predict(X), booster.predict(X, raw_score=True))


def test_predictions_start_from_zero(data):
    X, y, qid = data
    ptr = _ptr(qid)
    first = []
    _backend(n_estimators=1).fit(X, lambda raw, t: first.append(raw.copy()) or
                                 QueryRMSE()._gradient_hessian_sorted(y, raw, ptr, 0))
    np.testing.assert_array_equal(first[0], 0.0)


# -- served by plain LightGBM, through the ranker ----------------------------------------------
def test_ranker_model_served_by_plain_lightgbm(data, tmp_path):
    X, y, qid = data
    Xt, yt, qt = make_ranking(n_queries=30, n_features=6, max_docs=25, random_state=4)
    params = dict(n_estimators=300, learning_rate=0.5, max_depth=5, backend="lightgbm", langevin=True,
                  model_shrink_rate=0.05, diffusion_temperature=1e3, random_state=1, early_stopping_rounds=5)
    model = est.LambdaMARTRanker("ndcg@10", **params).fit(X, y, qid=qid, eval_set=[(Xt, yt)], eval_qid=[qt])
    assert model.best_iteration_ + 1 < 300  # early stopping truncated the model
    assert isinstance(model.booster_, lgb.Booster)
    served = lgb.Booster(model_str=model.booster_.model_to_string())
    np.testing.assert_allclose(served.predict(Xt, raw_score=True), model.predict(Xt), rtol=1e-12, atol=1e-14)
    model.booster_.save_model(str(tmp_path / "model.txt"))
    from_file = lgb.Booster(model_file=str(tmp_path / "model.txt"))
    np.testing.assert_allclose(from_file.predict(Xt, raw_score=True), model.predict(Xt), rtol=1e-12, atol=1e-14)
    # The truncated, re-folded model is the model trained for exactly that many iterations.
    again = est.LambdaMARTRanker("ndcg@10", **{**params, "n_estimators": model.best_iteration_ + 1,
                                               "early_stopping_rounds": None})
    again.fit(X, y, qid=qid)
    np.testing.assert_allclose(again.predict(Xt), model.predict(Xt), rtol=1e-12, atol=1e-14)
    assert model.score(Xt, yt, qid=qt) == pytest.approx(model.best_score_, rel=1e-9)


# -- determinism -----------------------------------------------------------------------------
def _trees(booster):
    return booster.model_to_string().split("end of trees")[0]


def test_same_seed_same_model_any_thread_count(data):
    X, y, qid = data
    kw = dict(n_estimators=15, max_depth=4, subsample=0.7, colsample_bytree=0.6, langevin=True,
              model_shrink_rate=0.01, backend="lightgbm", random_state=7)
    one = est.YetiRanker(n_jobs=1, **kw).fit(X, y, qid=qid)
    two = est.YetiRanker(n_jobs=2, **kw).fit(X, y, qid=qid)
    assert _trees(one.booster_) == _trees(two.booster_)
    np.testing.assert_array_equal(one.predict(X), two.predict(X))
    other = est.YetiRanker(n_jobs=2, **{**kw, "random_state": 8}).fit(X, y, qid=qid)
    assert _trees(other.booster_) != _trees(one.booster_)


# -- parameters ----------------------------------------------------------------------------------
def test_common_params_map_to_lightgbm_names():
    p = _backend(n_jobs=2, subsample=0.5, colsample_bytree=0.7, reg_lambda=3.0, max_bin=32, max_depth=5,
                 min_child_weight=0.01, backend_params={"num_leaves": 7, "min_child_samples": 20})._params()
    assert p["lambda_l2"] == 3.0 and p["bagging_fraction"] == 0.5 and p["bagging_freq"] == 1
    assert p["feature_fraction"] == 0.7 and p["num_threads"] == 2 and p["max_bin"] == 32
    assert p["seed"] == 0 and p["learning_rate"] == 0.3 and p["max_depth"] == 5
    assert p["min_sum_hessian_in_leaf"] == 0.01
    # backend_params override, under LightGBM's main names (min_child_samples is an alias).
    assert p["num_leaves"] == 7 and p["min_data_in_leaf"] == 20 and "min_child_samples" not in p
    assert p["objective"] == "none" and p["deterministic"] and p["force_col_wise"]
    p = _backend(subsample=1.0, max_depth=30, backend_params={"force_row_wise": True})._params()
    assert p["bagging_freq"] == 0 and p["num_leaves"] == 131072
    assert p["force_row_wise"] and "force_col_wise" not in p


@pytest.mark.parametrize("cls", [est.LambdaMARTRanker, est.YetiRanker, est.XENDCGRanker])
def test_min_child_weight_zero_trains(cls):
    """min_child_weight=0 ("no bound") trains as the smallest positive bound
    LightGBM accepts; passed through as 0, every one of these fits fails
    inside LightGBM."""
    X, y, qid = make_ranking(100, n_features=5, random_state=0)
    kw = dict(n_estimators=10, backend="lightgbm", random_state=0, n_jobs=1)
    zero = cls(**kw, min_child_weight=0).fit(X, y, qid=qid)
    assert zero.backend_.params_["min_sum_hessian_in_leaf"] == 1e-12
    np.testing.assert_array_equal(zero.predict(X), cls(**kw, min_child_weight=1e-12).fit(X, y, qid=qid).predict(X))
    assert np.ptp(zero.predict(X)) > 0


def test_rows_of_weight_zero_do_not_bound_the_leaves():
    """LightGBM bounds a leaf's rows by a count it estimates from the
    hessians (rows times the leaf's share of the hessian), which rows of
    weight 0 change: with min_data_in_leaf=1 and small leaves, queries of
    weight 0 gave another first tree (19 leaves against 23) than dropping
    them. min_data_in_leaf is 0, as on the other backends."""
    X, y, qid = make_ranking(40, n_features=5, random_state=3)
    X = np.clip(np.round(X), -2, 2)  # few values: the same bins with or without the dropped rows
    drop = np.isin(qid, np.unique(qid)[:30])
    kw = dict(n_estimators=1, backend="lightgbm", n_jobs=1, random_state=0, reg_lambda=1.0, min_child_weight=0.01)
    weighted = est.LambdaMARTRanker(**kw).fit(X, y, qid=qid, sample_weight=np.where(drop, 0.0, 1.0))
    dropped = est.LambdaMARTRanker(**kw).fit(X[~drop], y[~drop], qid=qid[~drop])
    assert weighted.backend_.params_["min_data_in_leaf"] == 0
    np.testing.assert_allclose(weighted.predict(X[~drop]), dropped.predict(X[~drop]), rtol=0, atol=1e-9)


def test_tiny_subsample_keeps_one_row():
    """LightGBM bags int(bagging_fraction * n) rows and cannot train on none;
    the backend keeps one, as the numba engine does."""
    X = np.random.default_rng(0).normal(size=(12, 3))
    y = X[:, 0]
    b = _backend(n_estimators=3, subsample=0.01)
    b.fit(X, lambda raw, t: (raw - y, np.ones_like(raw)))
    assert b.params_["bagging_freq"] == 1 and int(b.params_["bagging_fraction"] * 12) == 1
    assert np.all(np.isfinite(b.predict(X)))


@pytest.mark.parametrize("key", ["bagging_freq", "subsample_freq"])
def test_bagging_turned_off_while_subsample_is_set_is_refused(data, key):
    """bagging_freq=0 (or its alias) turns LightGBM's bagging off: with the
    ranker's subsample below 1 it trained on every row, silently the model of
    subsample=1.0. Another frequency is kept."""
    X, y, qid = data
    kw = dict(n_estimators=3, backend="lightgbm", random_state=0, n_jobs=1)
    with pytest.raises(ValueError, match="bagging_freq.*subsample=0.5 would be ignored"):
        est.QueryRMSERanker(subsample=0.5, backend_params={key: 0}, **kw).fit(X, y, qid=qid)
    every_rows = est.QueryRMSERanker(backend_params={key: 0}, **kw).fit(X, y, qid=qid)
    assert every_rows.backend_.params_["bagging_freq"] == 0
    other = est.QueryRMSERanker(subsample=0.5, backend_params={key: 2}, **kw).fit(X, y, qid=qid)
    assert other.backend_.params_["bagging_freq"] == 2


def test_alias_given_twice():
    with pytest.raises(ValueError, match="'min_data_in_leaf' twice"):
        _backend(backend_params={"min_data_in_leaf": 1, "min_child_samples": 2})._params()


def test_linear_tree_with_shrinkage_is_refused(data):
    X, y, qid = data
    with pytest.raises(ValueError, match="linear_tree.*model_shrink_rate"):
        est.QueryRMSERanker(backend="lightgbm", model_shrink_rate=0.1,
                            backend_params={"linear_tree": True}).fit(X, y, qid=qid)


# -- persistence, importances, bad input -----------------------------------------------------------
def test_pickle_round_trip_keeps_refolding(data):
    X, _, _ = data
    backend, seen = _run(data, lambda t: None if t == 0 else 0.7)
    again = pickle.loads(pickle.dumps(backend))
    np.testing.assert_array_equal(again.predict(X), backend.predict(X))
    again.truncate(6)
    np.testing.assert_allclose(again.predict(X), seen["train"][5], rtol=1e-12, atol=1e-14)


def test_feature_importances(data):
    X, y, qid = data
    rng = np.random.default_rng(0)
    Xn = np.column_stack([X, rng.normal(size=(X.shape[0], 2))])
    model = est.QueryRMSERanker(backend="lightgbm", n_estimators=20, random_state=0).fit(Xn, y, qid=qid)
    gain, split = model.backend_.feature_importances("gain"), model.backend_.feature_importances("split")
    assert gain.sum() == pytest.approx(1) and split.sum() == pytest.approx(1)
    np.testing.assert_array_equal(model.feature_importances_, gain)
    assert gain[-2:].sum() < gain[:-2].sum()
    with pytest.raises(ValueError, match="importance_type"):
        model.backend_.feature_importances("cover")


def test_bad_inputs(data):
    X, y, qid = data
    n = X.shape[0]
    with pytest.raises(ValueError, match="grad_fn must return"):
        _backend().fit(X, lambda raw, t: (np.zeros(3), np.ones(3)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        _backend().fit(X, lambda raw, t: (np.full(n, np.nan), np.ones(n)))
    with pytest.raises(ValueError, match="shrink"):
        _backend().fit(X, lambda raw, t: (raw, np.ones(n)), shrink=lambda t: 1.5)
    with pytest.raises(RuntimeError, match="not fitted"):
        _backend().predict(X)


def test_constant_features_give_the_constant_model(data):
    """LightGBM drops features that are constant on the training rows and cannot
    train a callable objective without any; the backend then keeps the constant
    0 model, as the other backends do (and the ranker warns)."""
    X, y, qid = data
    Xc = np.ones_like(X)
    seen = []
    with pytest.warns(UserWarning, match="grew no split in 4 trees"):
        model = est.QueryRMSERanker(backend="lightgbm", n_estimators=4, model_shrink_rate=0.5).fit(
            Xc, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid], verbose=False)
    np.testing.assert_array_equal(model.predict(X), 0.0)
    assert len(model.evals_result_["validation_0"]["ndcg@10"]) == 4
    served = lgb.Booster(model_str=model.booster_.model_to_string())
    np.testing.assert_array_equal(served.predict(X, raw_score=True), 0.0)
    backend = _backend(n_estimators=3).fit(Xc, lambda raw, t: seen.append(raw.copy()) or (raw - y, np.ones_like(y)))
    assert len(seen) == 3 and backend.n_iterations_ == 3
    with pytest.raises(ValueError, match="NaN or infinite"):
        _backend(n_estimators=2).fit(Xc, lambda raw, t: (np.full_like(y, np.nan), np.ones_like(y)))


def test_reference_reproduces_lightgbm_rank_xendcg():
    """tests._reference_objectives.xendcg_lightgbm, with LightGBM's own gamma
    stream, is what LightGBM's ``rank_xendcg`` hands its first tree: every
    leaf is ``-sum lambda / sum h`` over its documents (learning rate 1, no
    regularisation). rankkit's exact gradient ``g = rho - phi`` is not: the two
    objectives compute different vectors (tests/test_objectives.py says which
    is which; benchmarks/bench_xendcg.py measures what it costs)."""
    from . import _reference_objectives as ref

    sizes = [6, 5, 7]
    y = np.array([0, 0, 1, 2, 0, 3, 1, 1, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0], dtype=float)
    n = y.size
    z = np.random.default_rng(3).normal(0, 2.0, n)  # a concentrated softmax
    X = np.arange(n, dtype=float)[:, None]
    params = dict(objective="rank_xendcg", objective_seed=0, num_leaves=n, min_data_in_leaf=1,
                  min_sum_hessian_in_leaf=0.0, lambda_l2=0.0, learning_rate=1.0, min_data_in_bin=1,
                  verbosity=-1, num_threads=1)
    booster = lgb.train(params, lgb.Dataset(X, y, group=sizes, init_score=z, params=params), num_boost_round=1)
    leaf = booster.predict(X, pred_leaf=True).ravel()
    value = booster.predict(X, raw_score=True)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    lam, g, h = np.empty(n), np.empty(n), np.empty(n)
    for q in range(len(sizes)):
        lo, hi = ptr[q], ptr[q + 1]
        gamma = ref.lightgbm_uniforms(params["objective_seed"] + q, hi - lo)
        lam[lo:hi], h[lo:hi] = ref.xendcg_lightgbm(y[lo:hi], z[lo:hi], gamma)
        g[lo:hi], _ = ref.xendcg(y[lo:hi], z[lo:hi], gamma)
    leaves = np.unique(leaf)
    assert leaves.size >= n // 2
    newton = {k: -lam[leaf == k].sum() / h[leaf == k].sum() for k in leaves}
    exact = {k: -g[leaf == k].sum() / h[leaf == k].sum() for k in leaves}
    np.testing.assert_allclose(value, [newton[k] for k in leaf], rtol=1e-5, atol=1e-6)
    assert np.abs(value - [exact[k] for k in leaf]).max() > 0.05


def test_nan_in_a_feature_trained_without_nan_reads_as_zero():
    """LightGBM's rule, documented in docs/backends.md ("What a feature means"):
    a feature with no NaN in training has no missing direction, and a NaN in
    it at prediction is read as 0; with NaN in training it has one."""
    X, y, qid = make_ranking(40, n_features=3, random_state=0)
    X = X + 5.0  # 0 is far from every training value
    ranker = est.LambdaMARTRanker(backend="lightgbm", n_estimators=10, n_jobs=1, random_state=0).fit(X, y, qid=qid)
    nan, zero = X[:200].copy(), X[:200].copy()
    nan[:, 0], zero[:, 0] = np.nan, 0.0
    np.testing.assert_array_equal(ranker.predict(nan), ranker.predict(zero))
    with_nan = X.copy()
    with_nan[::5, 0] = np.nan
    ranker.fit(with_nan, y, qid=qid)
    assert not np.array_equal(ranker.predict(nan), ranker.predict(zero))
