"""SGLB gradient noise: scale, determinism, independence, wrapping any objective."""

import math

import numba
import numpy as np
import pytest

from rankkit._objectives.query_rmse import QueryRMSE
from rankkit._sglb import SGLB, RunningScale, fold_scales, shrink_factor, shrink_schedule
from rankkit._objectives.stochastic_rank import StochasticRank

from ._backends import BACKENDS_UNDER_TEST


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


def test_auto_temperature_is_the_rankers_rule_set_once_per_training_set():
    """``"auto"`` (the default, as on the rankers): ``beta`` from the first
    call's gradients, kept while the labels, queries and learning rate stay."""
    import inspect

    import rankkit
    from rankkit._sglb import auto_diffusion_temperature

    default = inspect.signature(SGLB).parameters["diffusion_temperature"].default
    assert default == "auto" == rankkit.StochasticRankRanker().diffusion_temperature
    y, raw, ptr = _data(400, 25)
    inner = QueryRMSE()
    obj = SGLB(inner, learning_rate=0.2, random_state=0)
    with pytest.raises(AttributeError, match="first call"):
        obj.noise_scale
    g0, _ = inner.gradient_hessian(y, raw, group_ptr=ptr)
    g, _ = obj.gradient_hessian(y, raw, group_ptr=ptr)
    beta = auto_diffusion_temperature(g0, 0.2)
    assert obj.diffusion_temperature_ == beta
    rms = math.sqrt(np.mean(g0 ** 2))
    assert abs((g - g0).std() / (0.1 * rms) - 1) <= 5 / math.sqrt(2 * g.size)
    # Later iterations (other scores, same labels and queries) keep it.
    obj.gradient_hessian(y, raw * 0.1, group_ptr=ptr)
    assert obj.diffusion_temperature_ == beta
    # Another training set, or another learning rate, sets it afresh.
    y2 = y.copy()
    y2[0] += 1
    obj.gradient_hessian(y2, raw * 0.1, group_ptr=ptr)
    assert obj.diffusion_temperature_ == auto_diffusion_temperature(inner.gradient_hessian(y2, raw * 0.1, group_ptr=ptr)[0], 0.2)
    obj.set_params(learning_rate=0.4)
    obj.gradient_hessian(y2, raw, group_ptr=ptr)
    assert obj.diffusion_temperature_ == auto_diffusion_temperature(inner.gradient_hessian(y2, raw, group_ptr=ptr)[0], 0.4)
    # Calls that alternate between training sets (xgboost.cv's folds) keep each set's own.
    def auto(labels):
        return auto_diffusion_temperature(inner.gradient_hessian(labels, raw, group_ptr=ptr)[0], 0.4)

    obj.gradient_hessian(y, raw, group_ptr=ptr)
    assert obj.diffusion_temperature_ == auto(y)
    obj.gradient_hessian(y2, raw * 0.1, group_ptr=ptr)
    assert obj.diffusion_temperature_ == auto(y2)
    # New labels in the same array are another training set.
    y2[:] = y[::-1]
    obj.gradient_hessian(y2, raw, group_ptr=ptr)
    assert obj.diffusion_temperature_ == auto(y2)
    # A number is used as given.
    fixed = SGLB(inner, diffusion_temperature=50.0)
    fixed.gradient_hessian(y, raw, group_ptr=ptr)
    assert fixed.diffusion_temperature_ == 50.0 and fixed.noise_scale == math.sqrt(2 / (0.1 * 50.0))


def test_auto_temperature_in_xgboost_train_equals_the_rankers():
    """``xgboost.train(obj=SGLB(QueryRMSE()))`` and
    ``QueryRMSERanker(langevin=True)`` on XGBoost resolve the same ``beta``
    (QueryRMSE is shift invariant, so XGBoost's base margin does not matter)."""
    xgboost = pytest.importorskip("xgboost")
    import rankkit

    rng = np.random.default_rng(3)
    qid = np.repeat(np.arange(60), 12)
    X = rng.normal(size=(qid.size, 4))
    y = rng.integers(0, 4, qid.size).astype(float)
    obj = SGLB(QueryRMSE(), learning_rate=0.1, random_state=0)
    xgboost.train({"eta": 0.1, "max_depth": 3, "nthread": 1}, xgboost.DMatrix(X, y, qid=qid), num_boost_round=3, obj=obj)
    ranker = rankkit.QueryRMSERanker(langevin=True, backend="xgboost", n_estimators=3, learning_rate=0.1,
                                     random_state=0).fit(X, y, qid=qid)
    assert obj.diffusion_temperature_ == pytest.approx(ranker.diffusion_temperature_, rel=1e-12)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(learning_rate=0.0), "learning_rate"),
        (dict(learning_rate=-1.0), "learning_rate"),
        (dict(diffusion_temperature=0.0), "diffusion_temperature"),
        (dict(diffusion_temperature=float("inf")), "diffusion_temperature"),
        (dict(diffusion_temperature="warm"), "diffusion_temperature"),
    ],
)
def test_bad_params(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SGLB(QueryRMSE(), **kwargs).gradient_hessian([1, 0], [0.0, 0.0], qid=[0, 0])


def test_noise_scale_overflow_is_a_clear_error_not_zero_division():
    """``learning_rate * diffusion_temperature`` underflowing to 0 (both tiny),
    or "auto" on gradients so large that ``beta`` underflows, is the named
    overflow error, on the objective and on a ranker, not ZeroDivisionError."""
    from rankkit import QueryRMSERanker
    from rankkit._sglb import langevin_noise_scale

    assert langevin_noise_scale(1e-200, 1e-200) == math.inf
    with pytest.raises(ValueError, match="diffusion_temperature"):
        SGLB(QueryRMSE(), learning_rate=1e-200, diffusion_temperature=1e-200).gradient_hessian(
            [1, 0], [0.0, 0.0], qid=[0, 0])
    with pytest.raises(ValueError, match="pass diffusion_temperature as a number"):
        SGLB(QueryRMSE()).gradient_hessian([1e200, 0], [0.0, 0.0], qid=[0, 0])
    X = np.arange(8.0).reshape(-1, 1)
    with pytest.raises(ValueError, match="diffusion_temperature"):
        QueryRMSERanker(langevin=True, learning_rate=1e-200, diffusion_temperature=1e-200, n_estimators=2,
                        backend="numba", n_jobs=1).fit(X, [0, 1, 2, 3] * 2, qid=[0] * 4 + [1] * 4)


def test_auto_temperature_in_xgboost_cv_is_one_per_fold():
    """``xgboost.cv`` calls the objective for each fold in turn, every round:
    each fold's ``beta`` is the one its first round set, as in a
    ``xgboost.train`` of that fold alone."""
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(4)
    qid = np.repeat(np.arange(30), 10)
    X = rng.normal(size=(qid.size, 3))
    y = rng.integers(0, 4, qid.size).astype(float)
    betas = []

    class Recording(SGLB):
        def _gradient_hessian_sorted(self, *args, **kwargs):
            out = super()._gradient_hessian_sorted(*args, **kwargs)
            betas.append(self.diffusion_temperature_)
            return out

    obj = Recording(QueryRMSE(), learning_rate=0.1, random_state=0)
    xgboost.cv({"eta": 0.1, "max_depth": 2, "nthread": 1}, xgboost.DMatrix(X, y, qid=qid), num_boost_round=4,
               nfold=3, obj=obj, seed=0)
    per_fold = np.array(betas).reshape(4, 3)  # rounds x folds
    assert np.unique(per_fold[0]).size == 3
    np.testing.assert_array_equal(per_fold, np.tile(per_fold[0], (4, 1)))


def test_bad_objective_and_inner_validation():
    xgboost = pytest.importorskip("xgboost")
    dtrain = xgboost.DMatrix(np.zeros((2, 1)), np.array([1.0, 0.0]), qid=[0, 0])
    for bad in ("ndcg", QueryRMSE):
        with pytest.raises(TypeError, match="objective"):
            SGLB(bad).gradient_hessian([1, 0], [0.0, 0.0], qid=[0, 0])
        with pytest.raises(TypeError, match="objective"):
            SGLB(bad)(np.zeros(2), dtrain)  # the engine hook names it too
    with pytest.raises(ValueError, match="sigma"):
        SGLB(StochasticRank(sigma=-1.0)).gradient_hessian([1, 0], [0.0, 0.0], qid=[0, 0])
    with pytest.raises(ValueError, match="err_mapping"):
        SGLB(StochasticRank("err")).gradient_hessian([3, 0], [0.0, 0.0], qid=[0, 0])


# -- the schedule and the shrinkage bookkeeping ------------------------------------
def test_shrink_schedule_follows_catboost():
    # CatBoost: no shrinkage at iteration 0, then 1 - gamma * eta or 1 - gamma / t.
    s = shrink_schedule(0.2, "constant", 0.5)
    assert s(0) is None and s(1) == pytest.approx(0.9) and s(7) == pytest.approx(0.9)
    s = shrink_schedule(0.2, "decreasing", 0.5)
    assert s(0) is None and s(1) == pytest.approx(0.8) and s(4) == pytest.approx(0.95)
    assert shrink_schedule(0.0, "constant", 0.5) is None
    with pytest.raises(ValueError, match="model_shrink_rate"):
        shrink_schedule(20.0, "constant", 0.2)  # 20 * 0.2 >= 1
    with pytest.raises(ValueError, match="model_shrink_rate"):
        shrink_schedule(1.0, "decreasing", 0.2)


def test_shrink_factor_reads_the_schedule():
    assert shrink_factor(None, 3) == 1.0
    assert shrink_factor(lambda t: None, 0) == 1.0
    assert shrink_factor(lambda t: 0.25, 0) == 0.25
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="shrink"):
            shrink_factor(lambda t: bad, 2)


def test_fold_scales_and_running_scale_describe_the_same_model():
    """F_T = sum_t (prod_{t<s<T} c_s) f_t, by folding and by a running scale."""
    rng = np.random.default_rng(0)
    c = rng.uniform(0.5, 1.0, 9)
    f = rng.normal(size=(9, 4))  # tree outputs on 4 rows
    naive = np.zeros(4)
    for t in range(9):
        naive = c[t] * naive + f[t]
    np.testing.assert_allclose(fold_scales(c) @ f, naive, rtol=1e-13)
    scale, stored = RunningScale(), []
    for t in range(9):
        assert scale.shrink(c[t]) is None
        stored.append(f[t] / scale.value)
    np.testing.assert_allclose(scale.value * np.sum(stored, axis=0), naive, rtol=1e-13)
    # Below 1e-150 the running scale asks to be folded into the stored trees.
    tiny = RunningScale()
    assert tiny.shrink(1e-100) is None
    fold = tiny.shrink(1e-100)
    assert fold == pytest.approx(1e-200) and tiny.value == 1.0


# -- ranker level ------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_ranker_decreasing_mode_is_one_minus_gamma_over_t(backend):
    """model_shrink_mode='decreasing' shrinks by 1 - gamma / t before iteration
    t >= 1: the ranker's model equals the backend trained on that schedule
    written out here, and differs from constant shrinkage and from none."""
    from rankkit import QueryRMSERanker
    from rankkit._backends import get_backend
    from rankkit._groups import make_groups
    from rankkit._random import seed_from
    from rankkit.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=40, n_features=5, max_docs=20, random_state=1)
    params = dict(n_estimators=8, max_depth=3, learning_rate=0.3, random_state=0, backend=backend, n_jobs=1)
    gamma = 0.5
    model = QueryRMSERanker(model_shrink_rate=gamma, model_shrink_mode="decreasing", **params).fit(X, y, qid=qid)

    groups = make_groups(qid, len(y))
    ys, ptr = np.ascontiguousarray(groups.sort(y.astype(float))), groups.group_ptr
    manual = get_backend(backend)(n_estimators=8, max_depth=3, learning_rate=0.3, n_jobs=1,
                                  random_state=seed_from(0) % 2**31)  # the ranker's engine seed
    manual.fit(groups.sort(X), lambda raw, t: QueryRMSE()._gradient_hessian_sorted(ys, raw, ptr, t),
               shrink=lambda t: None if t == 0 else 1.0 - gamma / t)
    np.testing.assert_array_equal(model.predict(X), manual.predict(X))

    constant = QueryRMSERanker(model_shrink_rate=gamma, **params).fit(X, y, qid=qid).predict(X)
    plain = QueryRMSERanker(**params).fit(X, y, qid=qid).predict(X)
    for other in (constant, plain):
        assert np.max(np.abs(model.predict(X) - other)) > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_toy_global_optimum(backend):
    """StochasticRank's Table 1 toy (global optimum NDCG@3 = 0.917, local 0.903)
    with the paper's settings, seeds 0..9: StochasticRank + SGLB ends at the
    global optimum for at least 8 seeds (9 measured, ``benchmarks/README.md``),
    LambdaMART (no split limit) at the local optimum for every seed."""
    from rankkit import LambdaMARTRanker, StochasticRankRanker
    from rankkit.datasets import make_stochasticrank_toy
    from rankkit.metrics import ndcg_score

    X, y, qid = make_stochasticrank_toy()
    paper = dict(n_estimators=1000, max_depth=3, learning_rate=0.1, backend=backend, n_jobs=1)

    def final_ndcg(cls, seed, **kw):
        model = cls(metric="ndcg", k=3, **paper, random_state=seed, **kw).fit(X, y, qid=qid)
        return round(ndcg_score(y, model.predict(X), qid=qid, k=3), 3)

    sglb = [final_ndcg(StochasticRankRanker, s, langevin=True, diffusion_temperature=1e3, model_shrink_rate=1e-3)
            for s in range(10)]
    assert set(sglb) <= {0.917, 0.903}, sglb
    assert sglb.count(0.917) >= 8, sglb
    lambdamart = [final_ndcg(LambdaMARTRanker, s, min_child_weight=0.0) for s in range(10)]
    assert lambdamart == [0.903] * 10, lambdamart


def test_sglb_of_an_sglb_objective_is_refused():
    from rankkit.objectives import QueryRMSE

    with pytest.raises(ValueError, match="already an SGLB wrapper"):
        SGLB(SGLB(QueryRMSE())).gradient_hessian([1.0, 0.0], [0.0, 0.0], qid=[0, 0])
