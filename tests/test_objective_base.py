"""The shared objective contract, exercised through QueryRMSE."""

import numpy as np
import pytest

from rankkit.objectives import HESSIAN_FLOOR, XENDCG, QueryRMSE, StochasticRank, YetiRank


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
        # A bare IndexError, a silent truncation to [0, 1, 2] and "must rise" before:
        (dict(y=[0.0, 1.0], raw=[0.0, 0.0], group_ptr=[]), "group_ptr must be a one-dimensional array of integer"),
        (dict(y=[0.0, 1.0], raw=[0.0, 0.0], group_ptr=[0.0, 1.5, 2.0]), "of integer offsets.*dtype float64"),
        (dict(y=[0.0, 1.0], raw=[0.0, 0.0], group_ptr=[[0, 2]]), r"one-dimensional.*shape \(1, 2\)"),
        (dict(y=[0.0, 1.0], raw=[0.0, 0.0], qid=[1, 1], sample_weight=[1.0, -1.0]),
         "row 1 has -1.0. Give that row a weight of 0"),
    ],
)
def test_bad_input(kwargs, match):
    y, raw = kwargs.pop("y"), kwargs.pop("raw")
    with pytest.raises(ValueError, match=match):
        QueryRMSE().gradient_hessian(y, raw, **kwargs)


def test_bad_seed_and_weight_types():
    y, raw = np.array([0.0, 1.0]), np.zeros(2)
    for seed in ("x", 1.7, True):  # int("x") failed without naming seed; 1.7 was truncated
        with pytest.raises(TypeError, match="seed must be an int"):
            QueryRMSE().gradient_hessian(y, raw, group_ptr=[0, 2], seed=seed)
    with pytest.raises(TypeError, match=r"sample_weight must be numeric, got text \(dtype <U1\)"):  # read as 1.0 before
        QueryRMSE().gradient_hessian(y, raw, group_ptr=[0, 2], sample_weight=["1", "1"])
    g, _ = QueryRMSE().gradient_hessian(y, raw, group_ptr=np.array([0, 2], dtype=np.uint32), seed=np.int64(3))
    assert g.shape == (2,)


@pytest.mark.parametrize("cls", [YetiRank, StochasticRank, XENDCG])
def test_seed_out_of_range_names_the_range(cls):
    """Each kernel converted the seed its own way: -1 overflowed YetiRank's
    uint64, 2**63 StochasticRank's int64, with errors that did not name seed."""
    y, raw = np.array([0.0, 1.0, 2.0]), np.zeros(3)
    for seed in (-1, 2**63, np.uint64(2**63 + 5), 2**64):
        with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*63 - 1\], got"):
            cls().gradient_hessian(y, raw, group_ptr=[0, 3], seed=seed)
    for seed in (0, 2**63 - 1, np.uint64(5)):
        g, _ = cls().gradient_hessian(y, raw, group_ptr=[0, 3], seed=seed)
        assert np.all(np.isfinite(g))


def test_engine_weights_all_zero_are_an_error():
    """The rankers refuse all-zero weights; the engine forms trained a constant
    model on them (every gradient and hessian 0)."""
    xgb = pytest.importorskip("xgboost")
    X, y, sizes = _ranking_data(n_queries=5)
    dtrain = xgb.DMatrix(X, y, qid=np.repeat(np.arange(len(sizes)), sizes), weight=np.zeros(len(sizes)))
    with pytest.raises(ValueError, match="weight is zero for every row"):
        QueryRMSE()(np.zeros(len(y)), dtrain)
    with pytest.raises(ValueError, match="weight is zero for every row"):
        QueryRMSE()(y, np.zeros(len(y)), np.zeros(len(y)), sizes)


def test_hessian_floor_is_positive():
    assert 0 < HESSIAN_FLOOR <= 1e-6


# -- the three engine call forms --------------------------------------------------
def _ranking_data(seed=3, n_queries=30, size=8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * size, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=X.shape[0]) + 1), 0, 3)
    sizes = np.full(n_queries, size)
    return X, y, sizes


def test_lgbmranker_accepts_an_objective_instance():
    """``LGBMRanker(objective=LambdaMART())`` trains through the sklearn form
    obj(y_true, y_pred, weight, group), and gives the same model as
    ``lightgbm.train`` with the same parameters and the form obj(preds, dataset)."""
    lgb = pytest.importorskip("lightgbm")
    from sklearn.base import clone

    from rankkit.metrics import ndcg_score
    from rankkit.objectives import LambdaMART

    X, y, sizes = _ranking_data()
    qid = np.repeat(np.arange(len(sizes)), sizes)
    ranker = lgb.LGBMRanker(objective=LambdaMART("ndcg@10"), n_estimators=15, num_leaves=8,
                            min_child_samples=5, verbose=-1, n_jobs=1)
    ranker.fit(X, y, group=sizes)
    before = ndcg_score(y, np.zeros(len(y)), qid=qid, k=10, ties="worst")
    after = ndcg_score(y, ranker.predict(X, raw_score=True), qid=qid, k=10, ties="worst")
    assert after > before + 0.15, (before, after)
    params = {**ranker.booster_.params, "objective": LambdaMART("ndcg@10")}
    booster = lgb.train(params, lgb.Dataset(X, y, group=sizes), num_boost_round=15)
    np.testing.assert_array_equal(booster.predict(X, raw_score=True), ranker.predict(X, raw_score=True))
    # scikit-learn's clone (GridSearchCV) copies the objective as a parameter; the
    # objective's own arguments stay out of LightGBM's parameters.
    copy = clone(ranker)
    assert copy.objective is not ranker.objective and repr(copy.objective) == repr(ranker.objective)
    assert not any(key.startswith("objective__") for key in ranker.get_params(deep=True))
    np.testing.assert_array_equal(copy.fit(X, y, group=sizes).predict(X), ranker.predict(X))


def test_the_three_forms_give_the_weighted_gradients():
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    from rankkit.objectives import LambdaMART

    X, y, sizes = _ranking_data(n_queries=6)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    rng = np.random.default_rng(0)
    raw = rng.normal(size=len(y))
    w_row = rng.uniform(0.5, 2.0, size=len(y))
    obj = LambdaMART("ndcg@5")
    g_ref, h_ref = obj.gradient_hessian(y, raw, group_ptr=ptr, sample_weight=w_row)
    # LGBMRanker's form: per-row weights, group sizes.
    g, h = obj(y, raw, w_row, sizes)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12)
    np.testing.assert_allclose(h, h_ref, rtol=1e-12)
    # lightgbm.train's form: the Dataset's per-row weights (LightGBM stores them as float32).
    ds = lgb.Dataset(X, y, weight=w_row, group=sizes).construct()
    g, _ = obj(raw, ds)
    g32, _ = obj.gradient_hessian(y, raw, group_ptr=ptr, sample_weight=w_row.astype(np.float32))
    np.testing.assert_allclose(g, g32, rtol=1e-12)
    # XGBoost's form: one weight per query (its ranking convention), spread over the rows.
    w_query = np.arange(1.0, len(sizes) + 1)
    dtrain = xgb.DMatrix(X, y, weight=w_query, qid=np.repeat(np.arange(len(sizes)), sizes))
    g, _ = obj(raw, dtrain)
    g_q, _ = obj.gradient_hessian(y, raw, group_ptr=ptr, sample_weight=np.repeat(w_query, sizes))
    np.testing.assert_allclose(g, g_q, rtol=1e-6)
    assert not np.allclose(g, obj.gradient_hessian(y, raw, group_ptr=ptr)[0])  # the weights mattered


def test_engine_forms_bad_calls():
    xgb = pytest.importorskip("xgboost")
    y = np.array([1.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="needs query groups.*LGBMRanker"):
        QueryRMSE()(y, np.zeros(3))  # LightGBM's regressors call obj(y_true, y_pred): no groups
    with pytest.raises(ValueError, match="group sizes sum to 2"):
        QueryRMSE()(y, np.zeros(3), None, np.array([2]))
    with pytest.raises(TypeError, match="weight= and group= belong to"):
        QueryRMSE()(np.zeros(3), xgb.DMatrix(np.zeros((3, 1)), y, qid=[0, 0, 0]), None, [3])
    with pytest.raises(ValueError, match="preds has 2 entries"):
        QueryRMSE()(y, np.zeros(2), None, np.array([3]))


def test_pickle_after_an_engine_call():
    """The engine hook caches the dataset it was called with; a pickled
    objective leaves that cache behind (a DMatrix cannot be pickled) and
    gives the same gradients afterwards, its seed sequence included."""
    import pickle

    xgb = pytest.importorskip("xgboost")
    from rankkit.objectives import YetiRank

    X, y, sizes = _ranking_data(n_queries=5)
    dtrain = xgb.DMatrix(X, y, qid=np.repeat(np.arange(len(sizes)), sizes))
    raw = np.random.default_rng(1).normal(size=len(y))
    # Every seed (ints above 256 restarted the sequence in a copy: compared by identity).
    for seed in (0, 12345, np.int64(12345), 2**32 - 1):
        obj = YetiRank(random_state=seed)
        obj(raw, dtrain)
        copy = pickle.loads(pickle.dumps(obj))
        assert not hasattr(copy, "_hook_cache")
        for a, b in zip(obj(raw, dtrain), copy(raw, dtrain)):
            np.testing.assert_array_equal(a, b)
    # set_params to the same value carries on; another value restarts.
    first = YetiRank(random_state=12345)(raw, dtrain)[0]
    obj = YetiRank(random_state=12345)
    obj(raw, dtrain)
    second = obj(raw, dtrain)[0]
    assert not np.array_equal(first, second)
    obj.set_params(random_state=int("12345"))
    third = obj(raw, dtrain)[0]
    assert not np.array_equal(third, first) and not np.array_equal(third, second)
    obj.set_params(random_state=7)
    np.testing.assert_array_equal(obj(raw, dtrain)[0], YetiRank(random_state=7)(raw, dtrain)[0])


def test_multi_output_predictions_name_the_cause():
    xgb = pytest.importorskip("xgboost")
    from rankkit.objectives import LambdaMART

    X, y, sizes = _ranking_data(n_queries=5)
    dtrain = xgb.DMatrix(X, y, qid=np.repeat(np.arange(len(sizes)), sizes))
    with pytest.raises(ValueError, match=r"3 scores per row, as a multi-class or multi-output model gives"):
        LambdaMART()(np.zeros(3 * len(y)), dtrain)
    with pytest.raises(ValueError, match=rf"preds has 0 entries but there are {len(y)} labels\.$"):
        LambdaMART()(np.zeros(0), dtrain)


@pytest.mark.parametrize("engine", ["xgboost", "lightgbm", "sklearn"])
def test_engine_hook_sees_labels_changed_on_the_same_dataset(engine):
    """The hook keeps the checked labels between calls, but not past a
    ``set_label`` (or new contents of the same arrays): the gradients are
    those of the new labels, as from a fresh objective."""
    rng = np.random.default_rng(3)
    y, z, qid = random_queries(rng)
    order = np.argsort(qid, kind="stable")
    y, z, qid = y[order], z[order], qid[order]
    sizes = np.bincount(qid)[np.unique(qid)]
    X = rng.normal(size=(y.size, 2))
    y2 = y[::-1].copy()
    if engine == "xgboost":
        xgb = pytest.importorskip("xgboost")
        data = xgb.DMatrix(X, y, qid=qid)
        call = lambda obj: obj(z, data)  # noqa: E731
        relabel = lambda: data.set_label(y2)  # noqa: E731
    elif engine == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        data = lgb.Dataset(X, y, group=sizes, free_raw_data=False).construct()
        call = lambda obj: obj(z, data)  # noqa: E731
        relabel = lambda: data.set_label(y2)  # noqa: E731
    else:
        labels = y.copy()
        call = lambda obj: obj(labels, z, None, sizes)  # noqa: E731
        relabel = lambda: labels.__setitem__(slice(None), y2)  # noqa: E731
    obj = QueryRMSE()
    g_before, _ = call(obj)
    relabel()
    g_after, _ = call(obj)
    g_fresh, _ = call(QueryRMSE())
    expected, _ = QueryRMSE().gradient_hessian(y2, z, qid=qid)
    np.testing.assert_array_equal(g_after, g_fresh)
    np.testing.assert_allclose(g_after, expected, rtol=1e-12, atol=1e-12)
    assert not np.allclose(g_before, g_after)


@pytest.mark.parametrize("engine", ["xgboost", "lightgbm", "sklearn"])
def test_engine_hook_checks_the_labels_against_each_calls_parameters(engine):
    """The hook keeps a dataset's labels between calls, but checks them again
    on every call: after ``set_params(gain="exp")`` a label of 2000, fine for
    the linear gain, is refused as from a fresh objective (its exp gain
    overflows; kept unchecked, its query got zero gradients)."""
    from rankkit.objectives import LambdaMART

    y = np.array([2000.0, 1.0, 0.0, 2.0, 1.0, 0.0])
    sizes = np.array([3, 3])
    X = np.arange(12.0).reshape(6, 2)
    z = np.zeros(6)
    if engine == "xgboost":
        xgb = pytest.importorskip("xgboost")
        data = xgb.DMatrix(X, y, qid=np.repeat([0, 1], sizes))
        call = lambda obj: obj(z, data)  # noqa: E731
    elif engine == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        data = lgb.Dataset(X, y, group=sizes, free_raw_data=False).construct()
        call = lambda obj: obj(z, data)  # noqa: E731
    else:
        call = lambda obj: obj(y, z, None, sizes)  # noqa: E731
    obj = LambdaMART(gain="linear")
    call(obj)
    obj.set_params(gain="exp")
    with pytest.raises(ValueError, match="overflow"):
        call(LambdaMART(gain="exp"))
    with pytest.raises(ValueError, match="overflow"):
        call(obj)
