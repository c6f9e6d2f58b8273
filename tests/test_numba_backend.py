"""backend="numba" through the Backend contract (rankkit/_backends/_base.py)."""

import pickle
import subprocess
import sys

import numba
import numpy as np
import pytest

from rankkit._backends.numba import NumbaBackend
from rankkit.objectives import QueryRMSE

PARAMS = dict(n_estimators=20, learning_rate=0.3, max_depth=4, min_child_weight=1.0, reg_lambda=1.0,
              subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=0)


def backend(**kw):
    return NumbaBackend(**{**PARAMS, **kw})


def regression_data(n=3000, F=8, seed=0, n_values=40):
    """Integer-valued features (fewer than 256 distinct values, so every engine
    bins them identically) with NaNs, and a non-linear target."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=(n, F)).astype(np.float64)
    y = np.sin(X[:, 0] / 6) + 0.05 * X[:, 1] * (X[:, 2] > 20) + 0.1 * rng.normal(size=n)
    X[rng.random((n, F)) < 0.05] = np.nan
    return X, y


def squared_error(y):
    return lambda raw, t: (raw - y, np.ones_like(raw))


def trees_equal(a, b):
    return len(a.booster_.trees) == len(b.booster_.trees) and all(
        x.tobytes() == y.tobytes() for x, y in zip(a.booster_.trees, b.booster_.trees))


def test_training_loss_matches_xgboost_hist():
    xgb = pytest.importorskip("xgboost")
    X, y = regression_data()
    # XGBoost's learner: depth-wise trees, splits by their gain alone.
    ours = backend(backend_params={"grow_policy": "depthwise", "random_strength": 0.0}).fit(X, squared_error(y))
    params = {"tree_method": "hist", "max_depth": 4, "eta": 0.3, "lambda": 1.0, "min_child_weight": 1.0,
              "max_bin": 256, "base_score": 0.0, "nthread": 1}
    bst = xgb.train(params, xgb.DMatrix(X, label=y), 20,
                    obj=lambda p, d: (p.astype(np.float64) - y, np.ones_like(y)))
    loss_ours = np.mean((ours.predict(X) - y) ** 2)
    loss_xgb = np.mean((bst.predict(xgb.DMatrix(X)).astype(np.float64) - y) ** 2)
    start = np.mean(y ** 2)
    assert loss_ours < 0.2 * start
    # Same bins, same greedy algorithm: the same loss up to XGBoost's float32 gradients.
    assert abs(loss_ours - loss_xgb) <= 1e-3 * loss_xgb


def test_min_split_gain_is_xgboosts_gamma():
    """The same value prunes the same splits: XGBoost compares ``gamma`` with
    twice the gain (``S_L + S_R - S``), not with the gain."""
    xgb = pytest.importorskip("xgboost")
    X, y = regression_data()
    params = {"tree_method": "hist", "max_depth": 4, "eta": 0.3, "lambda": 1.0, "min_child_weight": 1.0,
              "max_bin": 256, "base_score": 0.0, "nthread": 1, "gamma": 2.0}
    bst = xgb.train(params, xgb.DMatrix(X, label=y), 10,
                    obj=lambda p, d: (p.astype(np.float64) - y, np.ones_like(y)))
    xgb_leaves = [t.count('"leaf"') for t in bst.get_dump(dump_format="json")]
    ours = backend(n_estimators=10, backend_params={"grow_policy": "depthwise", "random_strength": 0.0,
                                                    "min_split_gain": 2.0}).fit(X, squared_error(y))
    our_leaves = [int(np.sum(t["left"] < 0)) for t in ours.booster_.trees]
    assert xgb_leaves == our_leaves and min(our_leaves) < 16  # gamma pruned some splits
    np.testing.assert_allclose(ours.predict(X), bst.predict(xgb.DMatrix(X)), atol=1e-5)


@pytest.mark.parametrize("policy, random_strength, sampling", [
    ("depthwise", 0.0, "uniform"), ("depthwise", 1.0, "uniform"), ("oblivious", 0.0, "uniform"),
    ("oblivious", 1.0, "uniform"), ("oblivious", 1.0, "mvs"), ("depthwise", 0.0, "mvs")])
def test_same_trees_for_any_thread_count(policy, random_strength, sampling):
    X, y = regression_data(n=4000, F=10)
    kw = dict(subsample=0.7, colsample_bytree=0.6, random_state=3,
              backend_params={"grow_policy": policy, "random_strength": random_strength, "sampling": sampling})
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = backend(**kw).fit(X, squared_error(y))
        p1 = one.predict(X)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = backend(**kw).fit(X, squared_error(y))
        p2 = two.predict(X)
    finally:
        numba.set_num_threads(old)
    assert trees_equal(one, two)
    np.testing.assert_array_equal(p1, p2)
    other = backend(**{**kw, "random_state": 4}).fit(X, squared_error(y))
    assert not trees_equal(one, other)


@pytest.mark.parametrize("rate", [0.05, 0.5, 0.8, 0.99])
def test_mvs_probabilities_match_their_definition(rate):
    from rankkit._backends.numba import mvs_probabilities

    from ._reference_gbm import ref_mvs_probabilities

    rng = np.random.default_rng(1)
    # Heavy tails, ties and zeros: a few rows are kept surely, the rest in proportion.
    cases = [rng.standard_cauchy(500), np.round(rng.normal(size=300), 1), np.r_[np.zeros(40), 5.0, -5.0],
             np.zeros(30), np.array([3.0])]
    for grad in cases:
        p = mvs_probabilities(grad, rate)
        np.testing.assert_allclose(p, ref_mvs_probabilities(grad, rate), rtol=1e-9, atol=1e-12)
        assert p.sum() == pytest.approx(rate * grad.size, rel=1e-12)
        assert np.all((p > 0) & (p <= 1))


def test_mvs_grows_on_a_weighted_sample_and_sets_leaves_from_all_rows():
    """sampling="mvs": the tree's splits come from the rows drawn with MVS
    probabilities (gradients and hessians divided by them), every leaf value
    from all the rows that reach it, -lr * G / (H + reg_lambda)."""
    from ._reference_gbm import ref_leaf_of_rows

    X, y = regression_data(n=2000, F=6)
    kw = dict(n_estimators=1, subsample=0.3, random_state=5, reg_lambda=2.0, learning_rate=0.3,
              backend_params={"grow_policy": "depthwise", "random_strength": 0.0})
    mvs = backend(**{**kw, "backend_params": {**kw["backend_params"], "sampling": "mvs"}}).fit(X, squared_error(y))
    uniform = backend(**kw).fit(X, squared_error(y))
    nodes = mvs.booster_.trees[0]
    leaf = ref_leaf_of_rows(nodes, X)
    grad, hess = squared_error(y)(np.zeros(len(y)), 0)
    for node in np.unique(leaf):
        rows = leaf == node
        assert nodes["count"][node] == rows.sum()
        expected = -0.3 * grad[rows].sum() / (hess[rows].sum() + 2.0)
        assert nodes["value"][node] == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert not trees_equal(mvs, uniform)
    # The split search saw a sample: the root's count is the sample's, not all rows.
    assert 0 < nodes["count"][0] < len(y)


def uneven_hessians(X, y):
    """Squared error with hessians far from equal (large where feature 0 is), so
    that scoring splits on them chooses other splits than on row weights."""
    hess = np.where(np.nan_to_num(X[:, 0]) > 30, 8.0, 0.25)
    return lambda raw, t: ((raw - y) * hess, hess.copy())


@pytest.mark.parametrize("policy", ["depthwise", "oblivious"])
def test_gradient_split_score_chooses_splits_on_row_weights_and_leaves_on_hessians(policy):
    """split_score="gradient" scores the splits with each row's
    weight times the mean hessian per unit of weight, and sets every leaf to
    -lr * G / (H + reg_lambda) from the true hessians of the rows in it;
    "newton" scores them with the hessians (XGBoost's gain)."""
    from ._reference_gbm import ref_leaf_of_rows

    X, y = regression_data(n=2000, F=6)
    w = np.random.default_rng(2).choice([0.0, 1.0, 2.0], len(y))
    grad_fn = uneven_hessians(X, y)
    grad, hess = grad_fn(np.zeros(len(y)), 0)
    kw = dict(n_estimators=1, reg_lambda=2.0, learning_rate=0.3, random_state=0)
    params = {"grow_policy": policy, "random_strength": 0.0}
    fitted = backend(**kw, backend_params={**params, "split_score": "gradient"}).fit(X, grad_fn, row_weight=w)
    newton = backend(**kw, backend_params={**params, "split_score": "newton"}).fit(X, grad_fn, row_weight=w)
    # The structure of the Newton gain on the weights' hessians c * w.
    c = hess.sum() / w.sum()
    on_weights = backend(**kw, backend_params={**params, "split_score": "newton"}).fit(
        X, lambda raw, t: (grad, c * w))
    nodes = fitted.booster_.trees[0]

    def same_structure(a, b):
        return a.shape == b.shape and all(
            np.array_equal(a[f], b[f]) for f in ("feature", "bin_threshold", "missing_left", "left", "right"))

    assert same_structure(nodes, on_weights.booster_.trees[0])
    assert not same_structure(nodes, newton.booster_.trees[0])
    leaf = ref_leaf_of_rows(nodes, X)
    for node in np.unique(leaf):
        rows = leaf == node
        expected = -0.3 * grad[rows].sum() / (hess[rows].sum() + 2.0)
        assert nodes["value"][node] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_gradient_split_score_changes_nothing_when_the_hessians_are_constant():
    """Gradient leaves (hess = 1, StochasticRank) and squared error: both split
    scores grow the same trees, bit for bit."""
    X, y = regression_data(n=2000, F=6)
    kw = dict(subsample=0.7, random_state=1)
    for sampling in ("uniform", "mvs"):
        a = backend(**kw, backend_params={"sampling": sampling, "split_score": "gradient"}).fit(X, squared_error(y))
        b = backend(**kw, backend_params={"sampling": sampling, "split_score": "newton"}).fit(X, squared_error(y))
        assert trees_equal(a, b)


@pytest.mark.parametrize("sampling", ["uniform", "mvs"])
def test_gradient_split_score_grows_the_same_trees_for_any_thread_count(sampling):
    X, y = regression_data(n=4000, F=10)
    w = np.random.default_rng(3).choice([0.5, 1.0, 2.0], len(y))
    kw = dict(subsample=0.7, colsample_bytree=0.6, random_state=3,
              backend_params={"sampling": sampling, "split_score": "gradient"})
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = backend(**kw).fit(X, uneven_hessians(X, y), row_weight=w)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = backend(**kw).fit(X, uneven_hessians(X, y), row_weight=w)
    finally:
        numba.set_num_threads(old)
    assert trees_equal(one, two)


def test_random_strength_follows_catboosts_schedule(monkeypatch):
    """Tree t gets noise sd = random_strength * sqrt(sum(grad^2) / sum(hess)) * n / (n + exp(t * lr))
    (CatBoost's rms(grad) when the hessians are 1), a fresh key per tree; random_strength=0 grows
    the noiseless trees."""
    from rankkit._backends._gbm.grower import TreeGrower

    X, y = regression_data(n=1000)
    seen = []
    grow = TreeGrower.grow

    def recording(self, grad, hess, feats, noise_sd=0.0, noise_key=0, sampled=None, leaf_hess=None):
        seen.append((float(np.sqrt(np.sum(grad ** 2) / np.sum(hess))), noise_sd, int(noise_key)))
        return grow(self, grad, hess, feats, noise_sd, noise_key, sampled, leaf_hess)

    def hessians_of_two(raw, t):  # the noise is not rms(grad) alone
        return raw - y, np.full_like(raw, 2.0)

    monkeypatch.setattr(TreeGrower, "grow", recording)
    noisy = backend(learning_rate=0.3, backend_params={"random_strength": 2.0}).fit(X, hessians_of_two)
    n = X.shape[0]
    for t, (scale, sd, _) in enumerate(seen):
        assert sd == pytest.approx(2.0 * scale * n / (n + np.exp(t * 0.3)), rel=1e-12)
    assert len({k for _, _, k in seen}) == len(seen)
    seen.clear()
    plain = backend(learning_rate=0.3, backend_params={"random_strength": 0.0}).fit(X, hessians_of_two)
    assert {sd for _, sd, _ in seen} == {0.0}
    assert not trees_equal(noisy, plain)
    # A regulariser: the noisy trees still fit the data, less closely.
    loss = [np.mean((b.predict(X) - y) ** 2) for b in (noisy, plain)]
    assert loss[1] < loss[0] < 0.25 * np.mean(y ** 2)


@pytest.mark.parametrize("policy", ["oblivious", "depthwise"])
def test_split_noise_does_not_depend_on_the_unit_of_the_loss(policy):
    """A loss multiplied by c has the same Newton steps; its split scores sqrt(G^2 / H) grow by
    sqrt(c), and so must the noise, or the unit of the hessians (the rankers count them in
    queries) would decide how random the trees are. c = 16 keeps every product exact."""
    X, y = regression_data(n=2000)
    rng = np.random.default_rng(1)
    h = rng.uniform(0.05, 3.0, size=y.shape[0])
    kw = dict(reg_lambda=0.0, min_child_weight=0.0, random_state=5,
              backend_params={"grow_policy": policy, "random_strength": 1.0})
    one = backend(**kw).fit(X, lambda raw, t: (h * (raw - y), h.copy()))
    scaled = backend(**kw).fit(X, lambda raw, t: (16.0 * h * (raw - y), 16.0 * h))
    assert len(one.booster_.trees) == len(scaled.booster_.trees) == PARAMS["n_estimators"]
    pairs = list(zip(one.booster_.trees, scaled.booster_.trees))
    for field in ["feature", "bin_threshold", "missing_left", "left", "right", "count", "value"]:
        assert all(np.array_equal(a[field], b[field]) for a, b in pairs), field
    assert all(np.array_equal(16.0 * a["sum_hessian"], b["sum_hessian"]) for a, b in pairs)
    # The noise is on: without it the trees differ.
    plain = backend(**{**kw, "backend_params": {"grow_policy": policy, "random_strength": 0.0}})
    assert not trees_equal(one, plain.fit(X, lambda raw, t: (h * (raw - y), h.copy())))


def test_sglb_shrinkage_is_exact_and_truncation_recovers_each_iteration():
    X, y = regression_data(n=1500)
    E = X[::3] + 0.5
    seen = []

    def cb(t, raw, raw_evals):
        seen.append((raw.copy(), raw_evals[0].copy()))

    factors = [0.9, 0.5, 1.0, 0.99] * 5
    b = backend().fit(X, squared_error(y), eval_X=[E], shrink=lambda t: factors[t], callback=cb)
    # The model is never rewritten: one stored tree per iteration, one running scale.
    assert len(b.booster_.trees) == 20 and b.booster_.scales[-1] == pytest.approx(np.prod(factors))
    np.testing.assert_allclose(b.predict(X), seen[-1][0], rtol=1e-12, atol=1e-14)
    for k in (1, 7, 13):
        np.testing.assert_allclose(b.predict(X, n_iterations=k), seen[k - 1][0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(b.predict(E, n_iterations=k), seen[k - 1][1], rtol=1e-12, atol=1e-14)
    b.truncate(7)
    np.testing.assert_allclose(b.predict(E), seen[6][1], rtol=1e-12, atol=1e-14)


def test_extreme_shrinkage_renormalises_without_losing_exactness():
    X, y = regression_data(n=500)
    seen = []
    b = backend(n_estimators=12).fit(X, squared_error(y), shrink=lambda t: 1e-30,
                                     callback=lambda t, raw, ev: seen.append(raw.copy()))
    for k in (3, 8, 12):  # the running scale passed 1e-150 and was folded into the leaves
        np.testing.assert_allclose(b.predict(X, n_iterations=k), seen[k - 1], rtol=1e-12, atol=1e-300)


def test_staged_predictions_survive_many_folds_of_the_running_scale():
    """Over 300 decades of shrinkage the running scale is folded several
    times: the early models stay finite and exact (they predicted NaN when
    the folds were multiplied into the stored trees: early trees underflowed
    to 0, their scales overflowed to inf), also after truncation, pickling
    and a save/load round trip."""
    X, y = regression_data(n=500)
    seen = []
    b = backend(n_estimators=40).fit(X, squared_error(y), shrink=lambda t: 1e-30,
                                     callback=lambda t, raw, ev: seen.append(raw.copy()))
    for k in (1, 2, 6, 20, 40):
        np.testing.assert_allclose(b.predict(X, n_iterations=k), seen[k - 1], rtol=1e-12, atol=1e-300)
    assert len(b.booster_.folds) == 6  # 1170 decades, a fold every 180
    # A later iteration's contribution to a model with earlier trees in it: (start, n).
    np.testing.assert_allclose(b.predict(X, 3, start_iteration=2), seen[2] - 1e-30 * seen[1],
                               rtol=1e-12, atol=1e-300)
    loaded = NumbaBackend.load(*b.save())
    unpickled = pickle.loads(pickle.dumps(b))
    for k in (1, 6, 40):
        np.testing.assert_array_equal(loaded.predict(X, n_iterations=k), b.predict(X, n_iterations=k))
        np.testing.assert_array_equal(unpickled.predict(X, n_iterations=k), b.predict(X, n_iterations=k))
    full = b.predict(X)
    b.truncate(5)  # early stopping's cut back to an early model
    np.testing.assert_allclose(b.predict(X), seen[4], rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(NumbaBackend.load(*b.save()).predict(X), b.predict(X))
    # The whole model is the one the stored trees folded together predict (served without rankkit).
    np.testing.assert_array_equal(loaded.predict(X), full)


def test_callback_stops_and_eval_scores_match_predict():
    X, y = regression_data(n=1000)
    E = regression_data(n=300, seed=1)[0]
    stop = []
    b = backend().fit(X, squared_error(y), eval_X=[E, X[:50]],
                      callback=lambda t, raw, ev: stop.append(ev[0].copy()) or t == 4)
    assert len(b.booster_) == 5
    np.testing.assert_allclose(b.predict(E), stop[-1], rtol=1e-12)


def test_gradient_leaves_are_minus_mean_gradient():
    X = np.array([[0.0], [0.0], [1.0], [1.0], [1.0]])
    g = np.array([1.0, 3.0, -2.0, -2.0, -5.0])
    b = backend(n_estimators=1, max_depth=1, learning_rate=0.5, reg_lambda=1.0).fit(
        X, lambda raw, t: (g, np.ones(5)))
    np.testing.assert_allclose(b.predict(X), 0.5 * np.array([-4 / 3, -4 / 3, 9 / 4, 9 / 4, 9 / 4]))
    assert b.booster_.trees[0]["threshold"][0] == 0.5


def test_pickle_round_trip():
    X, y = regression_data(n=800)
    b = backend(backend_params={"grow_policy": "oblivious"}).fit(X, squared_error(y))
    c = pickle.loads(pickle.dumps(b))
    np.testing.assert_array_equal(c.predict(X), b.predict(X))
    assert trees_equal(b, c)


def test_sparse_input_equals_dense():
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1200, 6)) * (rng.random((1200, 6)) < 0.4)
    y = X[:, 0] - 2 * (X[:, 1] > 0)
    dense = backend().fit(X, squared_error(y))
    sparse = backend().fit(sp.csr_matrix(X), squared_error(y))
    assert trees_equal(dense, sparse)
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(X)), dense.predict(X))
    np.testing.assert_array_equal(dense.predict(X.astype(np.float32)), dense.predict(X.astype(np.float32).astype(float)))


def test_float32_serving_predicts_as_float64_training():
    """Features with more distinct values than bins, heavily tied: a quantile
    falls on a tied value, and the edge is moved off it, so the training
    values predict the same served as float32 (an edge equal to a value that
    float32 rounds up or down sent it to the other side)."""
    rng = np.random.default_rng(2)
    X = rng.integers(0, 2000, size=(6000, 4)) / 7.0
    X[rng.random(X.shape) < 0.3] = 1.0 / 3.0  # a tied value, 30% of each column
    y = np.sin(X[:, 0] / 40) + (X[:, 1] > 140) - X[:, 2] / 300
    model = backend(n_estimators=40, max_depth=6).fit(X, squared_error(y))
    np.testing.assert_array_equal(model.predict(X.astype(np.float32)), model.predict(X))


def test_oblivious_trees_are_symmetric_and_learn():
    X, y = regression_data(n=2000)
    b = backend(backend_params={"grow_policy": "oblivious"}).fit(X, squared_error(y))
    for t in b.booster_.trees:
        internal = t["left"] >= 0
        depth = int(np.log2(t.shape[0] + 1)) - 1
        assert t.shape[0] == 2 ** (depth + 1) - 1 and internal.sum() == 2 ** depth - 1
    assert np.mean((b.predict(X) - y) ** 2) < 0.3 * np.mean(y ** 2)


def test_feature_importances():
    X, y = regression_data(n=2000)
    b = backend().fit(X, squared_error(y))
    gain, split = b.feature_importances("gain"), b.feature_importances("split")
    assert gain.sum() == pytest.approx(1) and split.sum() == pytest.approx(1)
    assert np.argmax(gain) == 0 and gain[3:].sum() < 0.1
    with pytest.raises(ValueError, match="importance_type"):
        b.feature_importances("cover")


def test_split_importance_counts_the_splits_that_rows_reach():
    """Oblivious trees split every node of a level, empty ones included, and
    nodes whose rows all go one way: only nodes whose training rows reach
    both children count as splits (those divide the data)."""
    X, y = regression_data(n=60, F=4)
    b = backend(n_estimators=5, max_depth=6, min_child_weight=0.0,
                backend_params={"grow_policy": "oblivious"}).fit(X, squared_error(y))
    counts, empty = np.zeros(X.shape[1]), 0
    for t in b.booster_.trees:
        reached = set()
        for x in X:  # walk every training row down the tree
            i = 0
            while t["left"][i] >= 0:
                reached.add(i)
                v = x[t["feature"][i]]
                left = t["missing_left"][i] if np.isnan(v) else v <= t["threshold"][i]
                i = t["left"][i] if left else t["right"][i]
            reached.add(i)  # the leaf too
        divides = [i for i in reached if t["left"][i] >= 0 and {t["left"][i], t["right"][i]} <= reached]
        for i in divides:
            counts[t["feature"][i]] += 1
        empty += int(np.sum(t["left"] >= 0)) - len(divides)
    assert empty > 0  # the case this checks
    np.testing.assert_allclose(b.feature_importances("split"), counts / counts.sum(), rtol=1e-12)


def test_queryrmse_on_mq2008(shared_data):
    from sklearn.datasets import load_svmlight_file

    X, y, qid = load_svmlight_file(str(shared_data / "MQ2008" / "Fold1" / "train.txt.gz"), query_id=True)
    _, starts = np.unique(qid, return_index=True)
    ptr = np.append(np.sort(starts), len(qid)).astype(np.int64)
    obj = QueryRMSE()

    def grad_fn(raw, t):
        return obj._gradient_hessian_sorted(y, raw, ptr, t)

    seen = []
    b = backend(n_estimators=15).fit(X, grad_fn, callback=lambda t, raw, ev: seen.append(raw.copy()))
    loss = lambda raw: np.mean(grad_fn(raw, 0)[0] ** 2)  # noqa: E731
    assert loss(seen[-1]) < 0.85 * loss(np.zeros_like(y))
    np.testing.assert_allclose(b.predict(X), seen[-1], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("param,value,match", [
    ("max_bin", 1, "max_bin"), ("max_depth", 0, "max_depth"), ("subsample", 0.0, "subsample"),
    ("learning_rate", -1, "learning_rate"), ("colsample_bytree", 2.0, "colsample_bytree"),
    ("n_jobs", 0, "n_jobs"), ("backend_params", {"grow": "x"}, "valid keys"),
    ("backend_params", {"leaf_noise_temperature": 1e3}, "valid keys"),  # SGLB noise is langevin=True
    ("backend_params", {"grow_policy": "lossguide"}, "grow_policy"),
])
def test_bad_parameters_are_named(param, value, match):
    X, y = regression_data(n=50)
    with pytest.raises(ValueError, match=match):
        backend(**{param: value}).fit(X, squared_error(y))


def test_max_bin_above_255_is_capped():
    """Bins are bytes: a max_bin tuned for XGBoost or LightGBM (512, 1023)
    trains with 255, as documented, instead of failing."""
    X, y = regression_data(n=600)
    capped = backend(n_estimators=5, max_bin=255).fit(X, squared_error(y))
    for max_bin in (256, 1023):
        np.testing.assert_array_equal(backend(n_estimators=5, max_bin=max_bin).fit(X, squared_error(y)).predict(X),
                                      capped.predict(X))


def test_bad_inputs():
    X, y = regression_data(n=100)
    with pytest.raises(ValueError, match="grad_fn must return"):
        backend().fit(X, lambda raw, t: (np.zeros(3), np.ones(3)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        backend().fit(X, lambda raw, t: (np.full(100, np.nan), np.ones(100)))
    with pytest.raises(ValueError, match="shrink"):
        backend().fit(X, squared_error(y), shrink=lambda t: 1.5)
    with pytest.raises(RuntimeError, match="not fitted"):
        backend().predict(X)
    b = backend(n_estimators=2).fit(X, squared_error(y))
    with pytest.raises(ValueError, match="trained on 8"):
        b.predict(X[:, :3])
    with pytest.raises(ValueError, match="two-dimensional"):
        backend().fit(X[:, 0], squared_error(y))


def test_numba_path_never_imports_xgboost():
    code = (
        "import sys; sys.modules['xgboost'] = None; sys.modules['lightgbm'] = None\n"
        "import numpy as np\n"
        "from rankkit._backends.numba import NumbaBackend\n"
        "X = np.random.default_rng(0).normal(size=(200, 3)); y = X[:, 0]\n"
        "b = NumbaBackend(n_estimators=3, learning_rate=0.1, max_depth=2, min_child_weight=1.0, reg_lambda=1.0,"
        " subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=0)\n"
        "b.fit(X, lambda r, t: (r - y, np.ones_like(r))); b.predict(X); print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_values_spanning_more_than_float64s_range_get_finite_edges():
    """Halfway between -1e308 and 1e308 is 0, not ``inf`` (``b - a``
    overflows): with an infinite edge the feature could never be split."""
    from rankkit import QueryRMSERanker
    from rankkit._backends._gbm.binning import fit_bin_edges

    rng = np.random.default_rng(0)
    s = np.sign(rng.normal(size=400))
    many = np.concatenate([-np.logspace(300, 308, 300), np.logspace(300, 308, 300)])[:, None]
    for X, max_bins in ((s[:, None] * 1e308, 255), (many, 255), (many, 16)):
        edges, _ = fit_bin_edges(X, max_bins)
        assert np.all(np.isfinite(edges)) and edges.size >= 1
        assert np.all(np.diff(edges) > 0)
    qid = np.repeat(np.arange(40), 10)
    y = 3 * (s > 0)
    kw = dict(n_estimators=5, backend="numba", random_state=0)
    small = QueryRMSERanker(**kw).fit(s[:, None], y, qid=qid).predict(s[:, None])
    huge = QueryRMSERanker(**kw).fit(s[:, None] * 1e308, y, qid=qid).predict(s[:, None] * 1e308)
    np.testing.assert_array_equal(huge, small)


def test_adjacent_floats_get_separate_bins():
    """Halfway between a float and the next one rounds to one of them (to the
    upper one for about half of all floats): the edge must stay below the
    upper value, or both share a bin and the feature cannot split them."""
    from rankkit import QueryRMSERanker
    from rankkit._backends._gbm.binning import fit_bin_edges, transform

    for a in (0.1 + 0.7, 0.7, 0.3, 123.456, -2.5, 1e-300):
        b = np.nextafter(a, np.inf)
        for border_type in ("quantile", "greedy_logsum"):
            edges, edges_ptr = fit_bin_edges(np.array([[a], [b], [a]]), 255, border_type)
            bins = transform(np.array([[a], [b]]), edges, edges_ptr)[0, :, 0]
            assert bins[0] < bins[1], (a, edges)
    a = 0.1 + 0.7  # 0.7999999999999999, whose halfway point to 0.8 rounds to 0.8
    X = np.array([[a], [0.8]] * 20)
    y = np.array([0.0, 1.0] * 20)
    scores = QueryRMSERanker(n_estimators=5, backend="numba", n_jobs=1).fit(X, y, qid=np.repeat(np.arange(10), 4))
    assert scores.predict(X[:2])[0] < scores.predict(X[:2])[1]


def test_histograms_beyond_memory_are_refused_before_they_are_allocated(monkeypatch):
    """An oblivious level holds every node, empty ones too (2 ** depth of them
    whatever the rows): on 20,000 features depth 16 needed terabytes and the
    process was killed. The bound is half of the machine's memory, set low
    here so that the test does not fill this machine's."""
    from rankkit import QueryRMSERanker
    from rankkit._backends._gbm import grower

    monkeypatch.setattr(grower, "HISTOGRAM_BYTES_LIMIT", 20 * 2**20)
    rng = np.random.default_rng(0)
    X, y, qid = rng.normal(size=(500, 8)), rng.integers(0, 4, 500).astype(float), np.repeat(np.arange(25), 20)
    kw = dict(n_estimators=2, backend="numba", n_jobs=1, min_child_weight=0.0)
    with pytest.raises(ValueError, match=r"reached \d+ nodes in one level.*more than half of this machine's memory"
                                         r".*depthwise"):
        QueryRMSERanker(max_depth=12, **kw).fit(X, y, qid=qid)  # level 11: 2048 nodes x 8 features, 67 MB
    QueryRMSERanker(max_depth=6, **kw).fit(X, y, qid=qid)
    QueryRMSERanker(max_depth=12, **kw, backend_params={"grow_policy": "depthwise"}).fit(X, y, qid=qid)


def test_max_depth_beyond_16_is_refused_naming_the_other_backends():
    """Trees' tables grow as 2 ** max_depth (depth 30 asked for 112 GiB)."""
    from sklearn.utils._param_validation import InvalidParameterError

    from rankkit import LambdaMARTRanker
    from rankkit.datasets import make_ranking

    X, y, qid = make_ranking(10, random_state=0)
    with pytest.raises(InvalidParameterError, match=r"max_depth.*backend='numba'.*\[1, 16\].*backend=\"xgboost\""):
        LambdaMARTRanker(max_depth=17, n_estimators=2).fit(X, y, qid=qid)


def test_diverging_scores_name_the_learning_rate():
    from rankkit import QueryRMSERanker
    from rankkit.datasets import make_ranking

    X, y, qid = make_ranking(10, random_state=0)
    # The scores overflow, or first the split gains (the gradients' sums squared): either way, the rate.
    with pytest.raises(ValueError, match=r"iteration [12] .*diverged.*(Lower|lower) learning_rate"):
        QueryRMSERanker(learning_rate=1e300, n_estimators=5).fit(X, y, qid=qid)


def curved_error(y, record=None):
    """Squared error with hessians that vary by row and iteration: sums of
    such hessians round, so sibling histograms (parent minus built child)
    hold rounding leftovers where the sibling has no row."""
    def grad_fn(raw, t):
        hess = 0.3 + np.abs(np.sin(3.7 * raw + 0.1 * np.arange(raw.shape[0]) + t))
        grad = hess * (raw - y)
        if record is not None:
            record.append((grad, hess))
        return grad, hess
    return grad_fn


def node_rows(t, X):
    """The training rows that reach each node of tree ``t``."""
    rows = {0: np.arange(X.shape[0])}
    for i in range(t.shape[0]):  # children come after their parent
        if t["left"][i] < 0 or i not in rows:
            continue
        v = X[rows[i], t["feature"][i]]
        left = np.where(np.isnan(v), t["missing_left"][i] == 1, v <= t["threshold"][i])
        rows[t["left"][i]], rows[t["right"][i]] = rows[i][left], rows[i][~left]
    return rows


@pytest.mark.parametrize("policy", ["oblivious", "depthwise"])
def test_a_leaf_of_no_row_is_zero_and_no_split_leaves_a_child_empty(policy):
    """With reg_lambda=0 an empty leaf's value -G / H was the ratio of two
    rounding leftovers (up to 40 times a typical leaf), and with
    min_child_weight=0 depth-wise trees split off children of no row."""
    X, y = regression_data(n=1500, F=6)
    b = backend(n_estimators=15, max_depth=7, reg_lambda=0.0, min_child_weight=0.0,
                backend_params={"grow_policy": policy}).fit(X, curved_error(y))
    n_empty = 0
    for t in b.booster_.trees:
        rows = node_rows(t, X)
        for i in range(t.shape[0]):
            assert t["count"][i] == len(rows.get(i, ()))
        empty = (t["left"] < 0) & (t["count"] == 0)
        n_empty += empty.sum()
        assert np.all(t["value"][empty] == 0.0)
        if policy == "depthwise":
            internal = t["left"] >= 0
            assert np.all(t["count"][t["left"][internal]] > 0) and np.all(t["count"][t["right"][internal]] > 0)
    assert policy == "depthwise" or n_empty > 0  # oblivious levels split empty nodes: the case checked


def test_missing_values_unseen_in_a_node_follow_its_heavier_child():
    """Depth-wise trees: where a node's training rows have no missing value
    of its split feature, a missing one at predict goes to the child of the
    larger hessian sum (docs/backends.md). A rounding leftover in the
    sibling's missing bin used to count as missing rows there."""
    X, y = regression_data(n=3000, F=6)
    X[:, 1:] = np.where(np.isnan(X[:, 1:]) & (X[:, [0]] <= 20), 0.0, X[:, 1:])  # missing only where x0 > 20
    b = backend(n_estimators=30, max_depth=6, backend_params={"grow_policy": "depthwise"}).fit(X, curved_error(y))
    n_checked = 0
    for t in b.booster_.trees:
        rows = node_rows(t, X)
        for i in np.flatnonzero(t["left"] >= 0):
            if not np.isnan(X[rows[i], t["feature"][i]]).any():
                heavier_left = t["sum_hessian"][t["left"][i]] >= t["sum_hessian"][t["right"][i]]
                assert t["missing_left"][i] == heavier_left
                n_checked += 1
    assert n_checked > 100


def test_gain_importance_is_the_total_gain_of_the_splits():
    """Oblivious trees: each node carries its own gain (0 for a node that
    cannot use the level's split), so the importance is the summed gain of
    the splits, recomputed here from the gradients of each iteration."""
    X, y = regression_data(n=400, F=6)
    record = []
    lam, mcw = 1.0, 2.0
    b = backend(n_estimators=8, max_depth=7, reg_lambda=lam, min_child_weight=mcw,
                backend_params={"grow_policy": "oblivious"}).fit(X, curved_error(y, record))

    def score(g, h):
        return g * g / (h + lam)

    want = np.zeros(X.shape[1])
    for t, (grad, hess) in zip(b.booster_.trees, record):
        rows = node_rows(t, X)
        for i in np.flatnonzero(t["left"] >= 0):
            sums = [(grad[rows[c]].sum(), hess[rows[c]].sum()) for c in (i, t["left"][i], t["right"][i])]
            if min(sums[1][1], sums[2][1]) >= mcw:
                want[t["feature"][i]] += 0.5 * (score(*sums[1]) + score(*sums[2]) - score(*sums[0]))
    np.testing.assert_allclose(b.feature_importances("gain"), want / want.sum(), rtol=1e-9)


def test_an_edited_tree_is_what_predict_and_save_model_use(tmp_path):
    """predict keeps flattened copies of the trees between calls: an edit
    in place used to be ignored by predict after the first call (but
    written by save_model). The trees are read-only; an edited copy put in
    a tree's place is used by predict, staged predictions and the file."""
    import rankkit
    from rankkit.datasets import make_ranking

    X, y, qid = make_ranking(40, n_features=5, random_state=0)
    model = rankkit.QueryRMSERanker(n_estimators=6, random_state=0).fit(X, y, qid=qid)
    before = model.predict(X)
    trees = model.booster_.trees
    with pytest.raises(ValueError, match="read-only"):
        trees[0]["value"] *= 2
    first = model.predict(X, iteration_range=(0, 1))
    edited = trees[0].copy()
    edited["value"] *= 2
    trees[0] = edited
    np.testing.assert_allclose(model.predict(X), before + first, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model.predict(X, iteration_range=(0, 1)), 2 * first, rtol=1e-12)
    model.save_model(tmp_path / "m.rkm")
    np.testing.assert_allclose(rankkit.load_model(tmp_path / "m.rkm").predict(X), before + first, rtol=1e-12,
                               atol=1e-12)
    assert not pickle.loads(pickle.dumps(model)).booster_.trees[1].flags.writeable
    with pytest.raises(ValueError, match="read-only"):  # the copy put in place is frozen at the next predict
        edited["value"] *= 2


@pytest.mark.parametrize("policy", ["depthwise", "oblivious"])
def test_a_missing_row_of_tiny_hessian_is_a_row(policy):
    """A real row is never taken for a rounding leftover, however small its
    hessian next to the tree's (a misranked document at the hessian floor):
    every leaf holds exactly the sums of the rows that reach it."""
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.integers(0, 40, size=(n, 1)).astype(np.float64)
    X[0, 0] = np.nan
    y = (X[:, 0] < 30).astype(np.float64)

    def grad_fn(raw, t):
        grad, hess = raw - y, np.full(n, 1e4)
        grad[0], hess[0] = 1000.0, 1e-6  # 1e-6 is below 1e-11 of the tree's hessian sum, 3e7
        return grad, hess

    b = backend(n_estimators=1, max_depth=2, learning_rate=1.0, reg_lambda=1.0, min_child_weight=1.0,
                backend_params={"grow_policy": policy, "random_strength": 0.0}).fit(X, grad_fn)
    t = b.booster_.trees[0]
    grad, hess = grad_fn(np.zeros(n), 0)
    for i, rows in node_rows(t, X).items():
        if t["left"][i] < 0:
            assert t["value"][i] == pytest.approx(-grad[rows].sum() / (hess[rows].sum() + 1.0), rel=1e-9, abs=1e-15)


def test_colsample_bytree_counts_columns_as_xgboost_does(monkeypatch):
    """colsample_bytree * n_features rounded down in float32, as XGBoost counts:
    0.29 * 100 is 28.999999999999996 in float64, and the engine kept 28 columns."""
    from rankkit._backends._gbm import grower

    seen = []
    grow = grower.TreeGrower.grow
    monkeypatch.setattr(grower.TreeGrower, "grow", lambda self, g, h, feats, *a: seen.append(len(feats))
                        or grow(self, g, h, feats, *a))
    X, y = regression_data(n=200, F=100)
    for fraction, n_features, want in ((0.29, 100, 29), (0.57, 100, 57), (0.58, 50, 29), (0.005, 100, 1)):
        seen.clear()
        backend(n_estimators=2, colsample_bytree=fraction).fit(X[:, :n_features], squared_error(y))
        assert seen == [want, want]


def _kernel_signature_counts():
    """Every numba kernel of rankkit and the number of array types it is compiled for."""
    counts = {}
    for name, module in list(sys.modules.items()):
        if name == "rankkit" or name.startswith("rankkit."):
            for attr, obj in vars(module).items():
                if isinstance(obj, numba.core.registry.CPUDispatcher):
                    counts[f"{obj.py_func.__module__}.{obj.py_func.__qualname__}"] = len(obj.signatures)
    return counts


@pytest.mark.parametrize("ranker", ["YetiRanker", "StochasticRankRanker"])
def test_read_only_inputs_reuse_the_kernels_compiled_for_writable_ones(ranker):
    """pandas 3 hands out read-only views of a DataFrame's values; numba would
    compile every kernel again for them (seconds each on first use)."""
    import pandas as pd

    import rankkit
    from rankkit.datasets import make_ranking
    from rankkit.metrics import ndcg_score

    X, y, qid = make_ranking(n_queries=30, n_features=5, random_state=0)
    model = getattr(rankkit, ranker)(n_estimators=3, n_jobs=1)
    model.fit(X, y, qid=qid).score(X, y, qid=qid)
    ndcg_score(y, model.predict(X), qid=qid, k=10)
    before = _kernel_signature_counts()

    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frozen = [np.array(a) for a in (X, y, qid)]
    for a in frozen:
        a.flags.writeable = False
    Xr, yr, qr = frozen
    model.fit(Xr, yr, qid=qr).score(Xr, yr, qid=qr)
    ndcg_score(yr, model.predict(Xr), qid=qr, k=10)
    model.fit(df, pd.Series(y), qid=pd.Series(qid)).predict(df)
    after = _kernel_signature_counts()
    assert {k: (before.get(k, 0), n) for k, n in after.items() if n != before.get(k, 0)} == {}
