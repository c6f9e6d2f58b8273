"""Rankers learn with their defaults where the old defaults failed, and a
constant model is explained.

* Long lists with graded labels (ClueWeb09-like: few queries of 300-500
  documents): YetiLoss NDCG@10's hessians are about 1e-5 per document there,
  far below any ``min_child_weight`` in document units; in query units
  (:func:`rankkit._objectives._base.query_hessian_units`) every ranker learns.
* ``diffusion_temperature="auto"`` follows its formula.
* When a model ends constant, the warning names the actual cause.

Quality figures themselves are benchmarks (``benchmarks/bench_quality.py``),
not tests.
"""

import warnings

import numpy as np

from rankkit._training import gradient_function, iteration_seed
import pytest

import rankkit._estimators as est
from rankkit import metrics
from rankkit._objectives._base import HESSIAN_FLOOR, query_hessian_units
from rankkit._random import seed_from
from rankkit._sglb import AUTO_NOISE_TO_GRADIENT, auto_diffusion_temperature
from rankkit.datasets import make_ranking
from rankkit.model_selection import query_train_test_split
from rankkit.objectives import OBJECTIVES, QueryRMSE, StochasticRank, YetiRank

from ._backends import BACKENDS_UNDER_TEST

# Every named ranker as a user would first write it for NDCG@10.
DEFAULT_RANKERS = {
    "stochasticrank": lambda **kw: est.StochasticRankRanker(metric="ndcg", k=10, **kw),
    "yetirank": lambda **kw: est.YetiRanker(**kw),
    "yetiloss": lambda **kw: est.YetiRanker(metric="ndcg", k=10, **kw),
    "lambdamart": lambda **kw: est.LambdaMARTRanker(metric="ndcg", k=10, **kw),
    "xendcg": lambda **kw: est.XENDCGRanker(**kw),
    "queryrmse": lambda **kw: est.QueryRMSERanker(**kw),
}


@pytest.fixture(scope="module")
def long_lists():
    X, y, qid = make_ranking(
        24, n_features=8, min_docs=300, max_docs=500, duplicate_fraction=0.0, empty_query_fraction=0.0,
        random_state=3,
    )
    return query_train_test_split(X, y, qid=qid, test_size=0.25, random_state=0)


def _random_order_ndcg(y, qid, draws=30):
    rng = np.random.default_rng(0)
    return float(np.mean([metrics.ndcg_score(y, rng.random(len(y)), qid=qid, k=10) for _ in range(draws)]))


def test_yetiloss_hessians_on_long_lists_are_tiny(long_lists):
    """The premise: in document units these hessians could never fill a leaf
    of min_child_weight=1 (they sum to less than 1 over the whole set)."""
    X, _, y, _, qid, _ = long_lists
    _, h = YetiRank("ndcg", 10, random_state=0).gradient_hessian(y, np.zeros(len(y)), qid=qid, seed=1)
    assert h.sum() < 1.0
    assert h.mean() < 1e-3


@pytest.mark.parametrize("name", list(DEFAULT_RANKERS))
def test_every_ranker_learns_on_long_lists(long_lists, name):
    X, Xt, y, yt, qid, qt = long_lists
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "grew no split" would fail the test
        model = DEFAULT_RANKERS[name](n_estimators=40, random_state=0, n_jobs=1).fit(X, y, qid=qid)
    learned = metrics.ndcg_score(yt, model.predict(Xt), qid=qt, k=10)
    chance = _random_order_ndcg(yt, qt)
    assert learned > chance + 0.15, (name, learned, chance)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_yetiloss_learns_on_long_lists_on_every_backend(long_lists, backend):
    X, Xt, y, yt, qid, qt = long_lists
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = DEFAULT_RANKERS["yetiloss"](n_estimators=40, random_state=0, n_jobs=1, backend=backend)
        model.fit(X, y, qid=qid)
    assert metrics.ndcg_score(yt, model.predict(Xt), qid=qt, k=10) > _random_order_ndcg(yt, qt) + 0.15


# -- hessians in query units -----------------------------------------------------
def test_query_hessian_units_keeps_newton_steps_and_counts_queries():
    rng = np.random.default_rng(1)
    g, h = rng.normal(size=50), rng.uniform(1e-4, 1e-2, size=50)
    g0, h0 = g.copy(), h.copy()
    factor = query_hessian_units(g, h, n_queries=7)
    assert h.sum() == pytest.approx(7.0)
    assert factor == pytest.approx(7.0 / h0.sum())
    np.testing.assert_allclose(g / h, g0 / h0, rtol=1e-12)
    # the floor holds in the new units, and a zero hessian is left alone
    g, h = np.ones(4), np.full(4, 1e-3)
    query_hessian_units(g, h, n_queries=1e-5)
    assert np.all(h >= HESSIAN_FLOOR)
    g, h = np.ones(3), np.zeros(3)
    assert query_hessian_units(g, h, 3) == 1.0 and np.all(g == 1.0)


def test_which_objectives_are_measured_in_queries():
    """Per-query (pairwise, list-wise) losses are; QueryRMSE sums over
    documents and StochasticRank uses gradient leaves, so neither changes."""
    per_query = {name: cls().per_query_loss for name, cls in OBJECTIVES.items()}
    assert per_query.pop("query_rmse") is False
    assert all(per_query.values())
    assert StochasticRank().uses_hessian is False


def test_ranker_hands_over_hessians_in_query_units(long_lists):
    """What the backend receives: the objective's g and h times n_queries / sum(h)."""
    X, _, y, _, qid, _ = long_lists
    model = est.YetiRanker(metric="ndcg", k=10, n_estimators=1, random_state=0, n_jobs=1)
    objective = model._objective_for_fit()
    train = model._prepare(X, y, qid, objective, reset=True)
    seed_base = seed_from(0)
    g, h = gradient_function(objective, train, seed_base)(np.zeros(len(y)), 0)
    g_raw, h_raw = objective._gradient_hessian_sorted(train.y, np.zeros(len(y)), train.group_ptr,
                                                      iteration_seed(seed_base, 0), train.query_keys)
    n_queries = train.group_ptr.shape[0] - 1
    assert h.sum() == pytest.approx(n_queries, rel=1e-6)
    np.testing.assert_allclose(g, g_raw * n_queries / h_raw.sum(), rtol=1e-12)
    # QueryRMSE: untouched (its hessians count documents already)
    q = est.QueryRMSERanker(n_estimators=1)
    qo = q._objective_for_fit()
    g, h = gradient_function(qo, q._prepare(X, y, qid, qo, reset=True), seed_base)(np.zeros(len(y)), 0)
    assert np.all(h == 1.0)


# -- SGLB's automatic temperature ------------------------------------------------
def test_auto_diffusion_temperature_formula():
    g = np.array([0.3, -0.4, 0.0, 0.0])  # rms 0.25
    beta = auto_diffusion_temperature(g, learning_rate=0.05)
    assert beta == pytest.approx(2.0 / (0.05 * (AUTO_NOISE_TO_GRADIENT * 0.25) ** 2))
    # the per-document noise is then 0.1 x the gradient rms
    assert np.sqrt(2.0 / (0.05 * beta)) == pytest.approx(AUTO_NOISE_TO_GRADIENT * 0.25)
    assert auto_diffusion_temperature(np.zeros(5), 0.1) == np.inf


@pytest.mark.parametrize("name", ["stochasticrank", "lambdamart"])
def test_ranker_resolves_auto_temperature_from_the_first_gradients(long_lists, name):
    X, _, y, _, qid, _ = long_lists
    model = DEFAULT_RANKERS[name](n_estimators=3, langevin=True, random_state=4, n_jobs=1).fit(X, y, qid=qid)
    objective = model._objective_for_fit()
    train = model._prepare(X, y, qid, objective, reset=True)
    g0, _ = gradient_function(objective, train, seed_from(4))(np.zeros(len(y)), 0)
    assert model.diffusion_temperature_ == pytest.approx(auto_diffusion_temperature(g0, model.learning_rate))
    fixed = DEFAULT_RANKERS[name](n_estimators=3, langevin=True, diffusion_temperature=1e6, n_jobs=1)
    assert fixed.fit(X, y, qid=qid).diffusion_temperature_ == 1e6
    assert DEFAULT_RANKERS[name](n_estimators=3, n_jobs=1).fit(X, y, qid=qid).diffusion_temperature_ is None


# -- a constant model says why ----------------------------------------------------
@pytest.fixture(scope="module")
def small():
    return make_ranking(20, n_features=4, max_docs=15, empty_query_fraction=0.0, random_state=0)


def _warning_of(model, X, y, qid):
    with pytest.warns(UserWarning, match="grew no split") as record:
        model.fit(X, y, qid=qid)
    assert record[0].filename == __file__  # points at the caller's fit
    return str(record[0].message)


def test_constant_model_with_nothing_to_rank(small):
    X, y, qid = small
    msg = _warning_of(est.LambdaMARTRanker(n_estimators=2), X, np.ones_like(y), qid)
    assert "No query has two documents with different labels" in msg


def test_constant_model_with_zero_gradients(small):
    X, y, qid = small
    model = est.LambdaMARTRanker(metric="mrr", relevance_threshold=float(y.max()), n_estimators=2)
    msg = _warning_of(model, X, y, qid)
    assert "every gradient of the objective is zero" in msg and "relevance_threshold" in msg


def test_constant_model_of_stochasticrank_on_huge_labels(small):
    # Labels in the thousands shift the relevant documents far below the
    # noise's reach; the warning pointed at relevance_threshold and k before.
    X, y, qid = small
    msg = _warning_of(est.StochasticRankRanker(gain="linear", n_estimators=2), X, 1000 * y, qid)
    assert "shifts each document down by sigma * mu * label" in msg and "lower mu" in msg


def test_constant_model_with_constant_features(small):
    X, y, qid = small
    msg = _warning_of(est.QueryRMSERanker(n_estimators=2), np.ones_like(X), y, qid)
    assert "Every feature is constant" in msg


def test_constant_model_from_min_child_weight(small):
    X, y, qid = small
    msg = _warning_of(est.YetiRanker(n_estimators=2, min_child_weight=15.0), X, y, qid)
    assert "less than twice min_child_weight=15.0" in msg and "in queries" in msg
    msg = _warning_of(est.QueryRMSERanker(n_estimators=2, min_child_weight=1e6), X, y, qid)
    assert "min_child_weight=1000000.0" in msg and "in documents" in msg
