"""eval_metric as a callable f(y_true, y_score, qid) or a scikit-learn scorer, on every in-memory backend."""

import numpy as np
import pytest
from sklearn.metrics import get_scorer

from rankkit import LambdaMARTRanker, QueryRMSERanker
from rankkit.datasets import make_ranking
from rankkit.metrics import make_ranking_scorer, ndcg_score, precision_score
from tests._backends import BACKENDS_UNDER_TEST


def my_ndcg(y_true, y_score, qid):
    return ndcg_score(y_true, y_score, qid=qid, k=5)


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(60, random_state=0)
    X_val, y_val, q_val = make_ranking(30, random_state=1)
    return X, y, qid, X_val, y_val, q_val


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_callables_record_what_the_named_metrics_record(backend, data):
    X, y, qid, X_val, y_val, q_val = data
    metrics = ["ndcg@5", my_ndcg, make_ranking_scorer("precision@3"), get_scorer("neg_mean_squared_error")]
    model = LambdaMARTRanker(n_estimators=8, max_depth=3, backend=backend, eval_metric=metrics)
    model.fit(X, y, qid=qid, eval_set=[(X_val, y_val)], eval_qid=[q_val])
    history = model.evals_result_["validation_0"]
    assert list(history) == ["ndcg@5", "my_ndcg", "precision@3", "neg_mean_squared_error"]
    assert history["my_ndcg"] == history["ndcg@5"]
    pred = model.predict(X_val)
    assert history["precision@3"][-1] == pytest.approx(precision_score(y_val, pred, qid=q_val, k=3), abs=1e-12)
    assert history["neg_mean_squared_error"][-1] == pytest.approx(-np.mean((y_val - pred) ** 2), rel=1e-9)


def test_a_callable_drives_early_stopping_and_score(data):
    X, y, qid, X_val, y_val, q_val = data
    kw = dict(n_estimators=60, max_depth=3, learning_rate=0.3, early_stopping_rounds=3, random_state=0)
    by_name = QueryRMSERanker(eval_metric="ndcg@5", **kw).fit(X, y, qid=qid, eval_set=[(X_val, y_val)],
                                                              eval_qid=[q_val])
    by_callable = QueryRMSERanker(eval_metric=my_ndcg, **kw).fit(X, y, qid=qid, eval_set=[(X_val, y_val)],
                                                                 eval_qid=[q_val])
    assert by_callable.best_iteration_ == by_name.best_iteration_ < 59
    assert by_callable.best_score_ == by_name.best_score_
    assert by_callable.score(X_val, y_val, qid=q_val) == by_name.score(X_val, y_val, qid=q_val)


def test_a_rankkit_metric_function_is_an_eval_metric(data):
    # rankkit's metric functions take qid by keyword only: called f(y_true, y_score, qid) they failed
    # with "ndcg_score() takes 2 positional arguments but 3 were given".
    X, y, qid, X_val, y_val, q_val = data
    model = QueryRMSERanker(n_estimators=4, max_depth=3, eval_metric=["ndcg", ndcg_score, precision_score])
    model.fit(X, y, qid=qid, eval_set=[(X_val, y_val)], eval_qid=[q_val])
    history = model.evals_result_["validation_0"]
    assert list(history) == ["ndcg", "ndcg_score", "precision_score"]
    assert history["ndcg_score"] == history["ndcg"]
    pred = model.predict(X_val)
    assert history["precision_score"][-1] == pytest.approx(precision_score(y_val, pred, qid=q_val), abs=1e-12)


def test_score_of_no_query_warns(data):
    # A main metric that excludes queries without a relevant document, on labels
    # that are all 0: nan, with the warning the metric functions give (it was silent).
    from sklearn.exceptions import UndefinedMetricWarning

    X, y, qid, X_val, y_val, q_val = data
    model = QueryRMSERanker(n_estimators=2, max_depth=2, eval_metric=make_ranking_scorer("ndcg@10", empty="exclude"))
    model.fit(X, y, qid=qid)
    with pytest.warns(UndefinedMetricWarning, match="every query was excluded"):
        assert np.isnan(model.score(X_val, np.zeros_like(y_val), qid=q_val))


def test_bad_callables_are_clear_errors(data):
    X, y, qid, X_val, y_val, q_val = data
    fit = dict(eval_set=[(X_val, y_val)], eval_qid=[q_val])
    with pytest.raises(ValueError, match="eval_metric 'nan_metric' returned nan; it must return a finite number"):
        def nan_metric(y_true, y_score, qid):
            return float("nan")
        QueryRMSERanker(n_estimators=2, eval_metric=nan_metric).fit(X, y, qid=qid, **fit)
    with pytest.raises(TypeError, match="eval_metric 'pair' returned .* one number"):
        def pair(y_true, y_score, qid):
            return (1.0, 2.0)
        QueryRMSERanker(n_estimators=2, eval_metric=pair).fit(X, y, qid=qid, **fit)
    with pytest.raises(ValueError, match="lists 'my_ndcg' twice"):
        QueryRMSERanker(n_estimators=2, eval_metric=[my_ndcg, my_ndcg]).fit(X, y, qid=qid, **fit)
    with pytest.raises(TypeError, match="names such as 'ndcg@10' or callables"):
        QueryRMSERanker(n_estimators=2, eval_metric=["ndcg", 3]).fit(X, y, qid=qid, **fit)


def test_a_ranker_with_a_callable_metric_is_not_saved_silently(data, tmp_path):
    X, y, qid, *_ = data
    model = QueryRMSERanker(n_estimators=2, eval_metric=my_ndcg).fit(X, y, qid=qid)
    with pytest.raises(TypeError, match="never code"):
        model.save_model(tmp_path / "model.rkm")


def test_two_scorers_of_one_metric_with_their_own_names():
    """A scorer object's own __name__ is its name in evals_result_, so the
    same metric with two settings can be watched together."""
    from rankkit import LambdaMARTRanker
    from rankkit.datasets import make_ranking
    from rankkit.metrics import make_ranking_scorer, ndcg_score

    X, y, qid = make_ranking(30, n_features=4, random_state=0)
    linear = make_ranking_scorer("ndcg@5", gain="linear")
    linear.__name__ = "ndcg5_linear"
    model = LambdaMARTRanker(n_estimators=3, n_jobs=1, eval_metric=["ndcg@5", linear])
    model.fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid])
    recorded = model.evals_result_["training"]
    assert set(recorded) == {"ndcg@5", "ndcg5_linear"}
    assert recorded["ndcg5_linear"][-1] == pytest.approx(ndcg_score(y, model.predict(X), qid=qid, k=5, gain="linear"))


def test_a_scorer_that_excludes_queries_counts_only_the_queries_it_keeps():
    """A ranking scorer with empty="exclude" is a mean over the queries with a
    relevant document: a part of the queries adds their sum and number (the
    Dask workers' parts combine to the exact mean), and a part without such a
    query adds nothing (its scorer value is nan, which was an error)."""
    from rankkit._metrics._callable import callable_sum_count, metric_function

    rng = np.random.default_rng(0)
    sizes = np.array([4, 3, 5, 2, 4, 3])
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    y = rng.integers(0, 3, ptr[-1]).astype(float)
    y[ptr[0]:ptr[2]] = 0.0  # queries 0 and 1: no relevant document
    y[ptr[4]:ptr[5]] = 0.0  # query 4 too
    raw = rng.normal(size=ptr[-1])
    qid = np.repeat(np.arange(sizes.size), sizes)
    scorer = make_ranking_scorer("ndcg@3", empty="exclude")
    function = metric_function(scorer)
    parts = [(0, 2), (2, 4), (4, 6)]  # queries of each part: the first has no query it keeps
    sums = [callable_sum_count("ndcg@3", function, y[ptr[a]:ptr[b]], raw[ptr[a]:ptr[b]], ptr[a:b + 1] - ptr[a])
            for a, b in parts]
    assert sums[0] == (0.0, 0)
    assert [count for _, count in sums] == [0, 2, 1]
    total, count = np.sum(sums, axis=0)
    assert total / count == pytest.approx(ndcg_score(y, raw, qid=qid, k=3, empty="exclude"), rel=1e-15)
    # The same counts without exclusion: every query.
    assert callable_sum_count("ndcg@3", metric_function(make_ranking_scorer("ndcg@3")), y, raw, ptr)[1] == 6


def test_an_eval_set_whose_queries_are_all_excluded_records_nan(data):
    """As the named metrics do for an eval set with no query to average (the
    scorer's own mean is nan there); the other eval sets are recorded as usual."""
    X, y, qid, X_val, y_val, q_val = data
    scorer = make_ranking_scorer("ndcg@5", empty="exclude")
    zeros = np.zeros_like(y_val)
    model = QueryRMSERanker(n_estimators=3, eval_metric=scorer).fit(
        X, y, qid=qid, eval_set=[(X_val, zeros), (X_val, y_val)], eval_qid=[q_val, q_val])
    assert np.isnan(model.evals_result_["validation_0"]["ndcg@5"]).all()
    assert model.evals_result_["validation_1"]["ndcg@5"][-1] == pytest.approx(
        ndcg_score(y_val, model.predict(X_val), qid=q_val, k=5, empty="exclude"), rel=1e-12)


def test_a_ranking_scorer_weighs_scores_queries_as_the_named_metric(data):
    """score(..., sample_weight=) with a ranking scorer as eval_metric used to
    drop the weights silently (0.7569 against the named metric's 0.7745 on
    the sweep's data); a plain callable still gives one unweighted number."""
    X, y, qid, X_val, y_val, q_val = data
    weight = np.random.default_rng(0).uniform(0.0, 3.0, size=y_val.shape[0])
    kw = dict(n_estimators=5, max_depth=3, random_state=0)
    named = LambdaMARTRanker(eval_metric="map@5", **kw).fit(X, y, qid=qid)
    scorer = LambdaMARTRanker(eval_metric=make_ranking_scorer("map@5"), **kw).fit(X, y, qid=qid)
    weighted = named.score(X_val, y_val, qid=q_val, sample_weight=weight)
    assert weighted != pytest.approx(named.score(X_val, y_val, qid=q_val))
    assert scorer.score(X_val, y_val, qid=q_val, sample_weight=weight) == pytest.approx(weighted, rel=1e-12)
