import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, cross_val_score, cross_validate

from rankkit._metrics._api import METRICS
from rankkit._metrics._scorers import SCORER_METRICS, get_ranking_scorer, make_ranking_scorer
from rankkit.datasets import make_ranking
from rankkit.model_selection import QueryKFold

NAMES = ["ndcg", "ndcg@10", "dcg@5", "mrr", "map", "err@10", "expdcg", "map@3", "mrr@1", "expdcg@4"]


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.fixture(scope="module")
def data():
    # Single-document queries and all-zero queries included.
    X, y, qid = make_ranking(n_queries=40, n_features=5, min_docs=1, max_docs=20, random_state=5)
    return X, y, qid


class _DropQid(BaseEstimator, RegressorMixin):
    """A non-rankkit model that removes the query column itself, as documented."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def _features(self, X):
        return X.drop(columns="qid").to_numpy() if isinstance(X, pd.DataFrame) else X

    def fit(self, X, y):
        self.model_ = Ridge(alpha=self.alpha).fit(self._features(X), y)
        return self

    def predict(self, X):
        return self.model_.predict(self._features(X))


def _round_scores(X):
    # Coarse scores: many ties, so the tie policy matters.
    return np.round(X[:, 0] + 0.5 * X[:, 1])


def _reference(name, y, score, qid, **kw):
    base, _, k = name.partition("@")
    kw = dict(kw)
    if base == "err":
        kw.setdefault("err_mapping", "chapelle")
    return METRICS[base](y, score, qid=qid, k=int(k) if k else None, **kw)


@pytest.mark.parametrize("name", NAMES)
def test_scorer_equals_metric_function(data, name):
    X, y, qid = data
    est = Ridge().fit(X, y)
    test = qid % 3 == 0
    frame = pd.DataFrame(X[test]).assign(qid=qid[test])
    frame.columns = frame.columns.astype(str)
    wrapped = _DropQid().fit(X, y)
    expected = _reference(name, y[test], est.predict(X[test]), qid[test])
    assert get_ranking_scorer(name)(wrapped, frame, y[test]) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_scorer_with_routed_qid(data, name, routing):
    X, y, qid = data
    est = Ridge().fit(X, y)
    expected = _reference(name, y, est.predict(X), qid)
    assert get_ranking_scorer(name)(est, X, y, qid=qid) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("ties", ["worst", "best", "average", "input"])
def test_scorer_tie_policy(data, ties, routing):
    X, y, qid = data

    class Coarse(Ridge):
        def predict(self, X):
            return _round_scores(X)

    est = Coarse().fit(X, y)
    scorer = make_ranking_scorer("ndcg@5", ties=ties)
    expected = METRICS["ndcg"](y, _round_scores(X), qid=qid, k=5, ties=ties)
    assert scorer(est, X, y, qid=qid) == pytest.approx(expected, rel=1e-12)
    if ties == "worst":  # the default
        assert make_ranking_scorer("ndcg@5")(est, X, y, qid=qid) == pytest.approx(expected, rel=1e-12)
        best = METRICS["ndcg"](y, _round_scores(X), qid=qid, k=5, ties="best")
        assert best > expected  # the data really has ties


def test_err_scorer_defaults_to_chapelle(data, routing):
    X, y, qid = data
    est = Ridge().fit(X, y)
    assert y.max() > 1  # graded labels: err_mapping=None would be an error
    s = est.predict(X)
    chapelle = METRICS["err"](y, s, qid=qid, err_mapping="chapelle")
    assert make_ranking_scorer("err")(est, X, y, qid=qid) == pytest.approx(chapelle)
    fixed = METRICS["err"](y, s, qid=qid, err_mapping="chapelle", err_max_label=6)
    assert fixed != pytest.approx(chapelle)
    assert make_ranking_scorer("err", err_max_label=6)(est, X, y, qid=qid) == pytest.approx(fixed)
    with pytest.raises(ValueError, match="err_mapping"):
        make_ranking_scorer("err", err_mapping=None)(est, X, y, qid=qid)


def test_metric_kwargs_are_passed(data, routing):
    X, y, qid = data
    est = Ridge().fit(X, y)
    s = est.predict(X)
    cases = [
        ("ndcg@10", dict(gain="linear", empty=0.0)),
        ("mrr", dict(relevance_threshold=1.0, empty="exclude")),
        ("map@5", dict(relevance_threshold=2.0)),
        ("expdcg", dict(decay=0.5)),
    ]
    for name, kw in cases:
        expected = _reference(name, y, s, qid, **kw)
        assert make_ranking_scorer(name, **kw)(est, X, y, qid=qid) == pytest.approx(expected, rel=1e-12)
        assert expected != pytest.approx(_reference(name, y, s, qid))  # the kwarg changes the value
    expected = _reference("ndcg@3", y, s, qid)
    assert make_ranking_scorer("ndcg", k=3)(est, X, y, qid=qid) == pytest.approx(expected)


def test_missing_qid_is_an_error(data):
    X, y, qid = data
    est = Ridge().fit(X, y)
    with pytest.raises(ValueError, match="needs query ids"):
        get_ranking_scorer("ndcg@10")(est, X, y)
    with pytest.raises(ValueError, match="needs query ids"):
        cross_val_score(est, X, y, groups=qid, cv=QueryKFold(3), scoring=get_ranking_scorer("map"),
                        error_score="raise")
    # Without routing, qid cannot be passed as a keyword at all.
    with pytest.raises(ValueError, match="enable_metadata_routing"):
        get_ranking_scorer("ndcg")(est, X, y, qid=qid)


def test_missing_qid_message_gives_calls_that_work(data):
    """The message's calls are the working ones: cross_validate takes
    params={'qid': qid} (it has no fit, and refuses qid=), GridSearchCV's fit qid=."""
    X, y, qid = data
    scorer = get_ranking_scorer("ndcg@10")
    with pytest.raises(ValueError, match=r"needs query ids") as error:
        scorer(Ridge().fit(X, y), X, y)
    message = str(error.value)
    assert "GridSearchCV(...).fit(X, y, qid=qid)" in message
    assert "cross_validate(..., params={'qid': qid})" in message
    with sklearn.config_context(enable_metadata_routing=True):
        scores = cross_validate(Ridge(), X, y, cv=QueryKFold(3), scoring=scorer, params={"qid": qid})["test_score"]
        assert np.allclose(scores, _manual_cv("ndcg@10", X, y, qid, QueryKFold(3)), rtol=1e-12)
        with pytest.raises(TypeError, match="unexpected keyword argument 'qid'"):  # what the old message said
            cross_validate(Ridge(), X, y, cv=QueryKFold(3), scoring=scorer, qid=qid)
        search = GridSearchCV(Ridge(), {"alpha": [1.0]}, scoring=scorer, cv=QueryKFold(3)).fit(X, y, qid=qid)
        assert search.best_score_ == pytest.approx(scores.mean(), rel=1e-12)


def test_qid_given_twice_is_an_error(data, routing):
    X, y, qid = data
    frame = pd.DataFrame(X).assign(qid=qid)
    frame.columns = frame.columns.astype(str)
    est = _DropQid().fit(frame, y)
    with pytest.raises(ValueError, match="given twice"):
        get_ranking_scorer("ndcg")(est, frame, y, qid=qid)


def test_qid_col_parameter(data):
    X, y, qid = data
    frame = pd.DataFrame(X).assign(query=qid)
    frame.columns = frame.columns.astype(str)

    class DropQuery(Ridge):
        def predict(self, X):
            return super().predict(X.drop(columns="query").to_numpy())

    est = DropQuery().fit(X, y)
    expected = _reference("ndcg@5", y, est.predict(frame), qid)
    assert make_ranking_scorer("ndcg@5", qid_col="query")(est, frame, y) == pytest.approx(expected)
    with pytest.raises(ValueError, match="'qid' column"):
        make_ranking_scorer("ndcg@5")(est, frame, y)


def test_bad_names_and_parameters():
    with pytest.raises(ValueError, match="valid names"):
        get_ranking_scorer("auc@10")
    with pytest.raises(ValueError, match="k must be a positive"):
        get_ranking_scorer("ndcg@0")
    # '@' without a cut-off was the whole list, silently.
    with pytest.raises(ValueError, match=r"metric 'map@': '@' must be followed by the cut-off k, e\.g\. 'map@10'"):
        get_ranking_scorer("map@")
    with pytest.raises(ValueError, match=r"'precision@': '@' must be followed by the cut-off k"):
        make_ranking_scorer("precision@")
    with pytest.raises(ValueError, match=r"metric 'ndcg@99999999999999999999': k=99999999999999999999 is beyond"):
        get_ranking_scorer("ndcg@99999999999999999999")
    with pytest.raises(TypeError, match="unknown parameter"):
        make_ranking_scorer("ndcg", decay=0.5)
    with pytest.raises(TypeError, match="unknown parameter"):
        make_ranking_scorer("mrr", per_query=True)
    with pytest.raises(ValueError, match="ties"):
        make_ranking_scorer("ndcg", ties="random")
    with pytest.raises(TypeError, match="scoring"):
        get_ranking_scorer(3)
    scorer = make_ranking_scorer("mrr")
    assert get_ranking_scorer(scorer) is scorer
    assert set(SCORER_METRICS) == set(METRICS)


@pytest.mark.parametrize("name", list(METRICS))
def test_a_metric_function_is_not_taken_for_a_scorer(name):
    # It is callable, so it passed through and failed at scoring time with
    # "takes 2 positional arguments but 3 ... were given".
    with pytest.raises(TypeError, match=rf"scoring={name}_score is a metric function .*make_ranking_scorer\('{name}'"):
        get_ranking_scorer(METRICS[name])


def test_repr_and_pickle(data):
    X, y, qid = data
    scorer = make_ranking_scorer("ndcg@10", gain="linear")
    assert repr(scorer) == "make_ranking_scorer('ndcg@10', gain='linear', ties='worst')"
    clone = pickle.loads(pickle.dumps(scorer))
    est = _DropQid().fit(X, y)
    frame = pd.DataFrame(X).assign(qid=qid)
    frame.columns = frame.columns.astype(str)
    assert clone(est, frame, y) == scorer(est, frame, y)


# ---------------------------------------------------------------------------
# In scikit-learn's CV tools


def _manual_cv(name, X, y, qid, cv, alpha=1.0):
    out = []
    for train, test in cv.split(X, qid=qid):
        s = Ridge(alpha=alpha).fit(X[train], y[train]).predict(X[test])
        out.append(_reference(name, y[test], s, qid[test]))
    return np.array(out)


def test_cross_val_score_routed(data, routing):
    X, y, qid = data
    scorer = get_ranking_scorer("ndcg@10")
    scores = cross_val_score(Ridge(), X, y, cv=QueryKFold(4), scoring=scorer, params={"qid": qid})
    assert np.allclose(scores, _manual_cv("ndcg@10", X, y, qid, QueryKFold(4)), rtol=1e-12)


def test_cross_val_score_dataframe_without_routing(data):
    X, y, qid = data
    frame = pd.DataFrame(X).assign(qid=qid)
    frame.columns = frame.columns.astype(str)
    scores = cross_val_score(_DropQid(), frame, y, cv=QueryKFold(4), scoring=get_ranking_scorer("map"))
    assert np.allclose(scores, _manual_cv("map", X, y, qid, QueryKFold(4)), rtol=1e-12)


@pytest.mark.parametrize("use_routing", [True, False])
def test_cross_validate_multimetric(data, use_routing):
    X, y, qid = data
    scoring = {name: get_ranking_scorer(name) for name in ("ndcg@5", "mrr", "err@10")}
    cv = QueryKFold(3, shuffle=True, random_state=0)
    if use_routing:
        with sklearn.config_context(enable_metadata_routing=True):
            res = cross_validate(Ridge(), X, y, cv=cv, scoring=scoring, params={"qid": qid},
                                 return_train_score=True)
    else:
        frame = pd.DataFrame(X).assign(qid=qid)
        frame.columns = frame.columns.astype(str)
        res = cross_validate(_DropQid(), frame, y, cv=cv, scoring=scoring, return_train_score=True)
    for name in scoring:
        assert np.allclose(res[f"test_{name}"], _manual_cv(name, X, y, qid, cv), rtol=1e-12)
    train_ndcg = []
    for train, _ in cv.split(X, qid=qid):
        s = Ridge().fit(X[train], y[train]).predict(X[train])
        train_ndcg.append(_reference("ndcg@5", y[train], s, qid[train]))
    assert np.allclose(res["train_ndcg@5"], train_ndcg, rtol=1e-12)


def test_grid_search_routed(data, routing):
    X, y, qid = data
    search = GridSearchCV(
        Ridge(), {"alpha": [0.01, 1000.0]}, scoring=make_ranking_scorer("ndcg@10"), cv=QueryKFold(3)
    ).fit(X, y, qid=qid)
    for i, alpha in enumerate([0.01, 1000.0]):
        manual = _manual_cv("ndcg@10", X, y, qid, QueryKFold(3), alpha=alpha)
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(manual.mean(), rel=1e-12)
    # search.score routes qid to the scorer as well.
    assert search.score(X, y, qid=qid) == pytest.approx(_reference("ndcg@10", y, search.predict(X), qid))


def test_grid_search_dataframe_without_routing(data):
    X, y, qid = data
    frame = pd.DataFrame(X).assign(qid=qid)
    frame.columns = frame.columns.astype(str)
    search = GridSearchCV(
        _DropQid(), {"alpha": [0.01, 1000.0]}, scoring=get_ranking_scorer("mrr"), cv=QueryKFold(3)
    ).fit(frame, y)
    for i, alpha in enumerate([0.01, 1000.0]):
        manual = _manual_cv("mrr", X, y, qid, QueryKFold(3), alpha=alpha)
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(manual.mean(), rel=1e-12)


def test_score_request_alias(data, routing):
    X, y, qid = data
    scorer = make_ranking_scorer("ndcg@5").set_score_request(qid="query_id")
    scores = cross_val_score(Ridge(), X, y, cv=QueryKFold(3).set_split_request(qid="query_id"),
                             scoring=scorer, params={"query_id": qid})
    assert np.allclose(scores, _manual_cv("ndcg@5", X, y, qid, QueryKFold(3)), rtol=1e-12)


def test_rankkit_ranker_with_query_column_and_routing():
    # The user path of the README: a DataFrame from make_ranking(as_frame=True)
    # goes through QueryKFold, the ranker and the scorer with no qid= at all.
    import rankkit

    if hasattr(rankkit, "QueryRMSERanker"):
        estimators = rankkit
    else:
        estimators = pytest.importorskip("rankkit._estimators")

    F, y, qid = make_ranking(n_queries=30, n_features=4, max_docs=15, random_state=0, as_frame=True)
    scorer = get_ranking_scorer("ndcg@5")
    cv = QueryKFold(3)
    ranker = estimators.QueryRMSERanker(n_estimators=5, max_depth=2, random_state=0)
    scores = cross_val_score(ranker, F, y, cv=cv, scoring=scorer)
    X = F.drop(columns="qid")
    manual = []
    for train, test in cv.split(F):
        fitted = estimators.QueryRMSERanker(n_estimators=5, max_depth=2, random_state=0)
        fitted.fit(X.iloc[train], y.iloc[train], qid=qid.iloc[train])
        manual.append(_reference("ndcg@5", y.iloc[test], fitted.predict(X.iloc[test]), qid.iloc[test]))
    assert np.allclose(scores, manual, rtol=1e-12)
    with sklearn.config_context(enable_metadata_routing=True):
        routed = cross_val_score(ranker, X, y, cv=cv, scoring=scorer, params={"qid": qid})
    assert np.allclose(routed, manual, rtol=1e-12)


def test_scorers_of_the_evaluation_metrics_and_trec_ties_refused():
    from sklearn.dummy import DummyRegressor

    from rankkit.metrics import make_ranking_scorer, precision_score

    frame = pd.DataFrame({"qid": [0, 0, 0, 1, 1], "x": [0.0, 1.0, 2.0, 0.0, 3.0]})
    y = np.array([0, 1, 2, 1, 0])
    est = DummyRegressor().fit(frame[["x"]], y)
    pred = est.predict(frame)
    assert make_ranking_scorer("precision@2")(est, frame, y) == precision_score(y, pred, qid=frame.qid, k=2)
    assert 0.0 <= make_ranking_scorer("pfound")(est, frame, y) <= 1.0
    with pytest.raises(ValueError, match="ties='trec' needs document ids"):
        make_ranking_scorer("ndcg", ties="trec")
    with pytest.raises(TypeError, match="unknown parameter.*doc_ids"):
        make_ranking_scorer("ndcg", doc_ids=[1])


# ---------------------------------------------------------------------------
# sample_weight: the rankers' query-weighted mean


@pytest.fixture(scope="module")
def ranker_data():
    from rankkit import LambdaMARTRanker

    X, y, qid = make_ranking(n_queries=20, n_features=4, max_docs=12, random_state=2)
    est = LambdaMARTRanker(n_estimators=3, max_depth=2, n_jobs=1, random_state=0).fit(X, y, qid=qid)
    return est, X, y, qid


@pytest.mark.parametrize("within_query", [False, True])
def test_scorer_sample_weight_equals_ranker_score(ranker_data, within_query, routing):
    est, X, y, qid = ranker_data
    rng = np.random.default_rng(0)
    w = rng.uniform(0.1, 3, qid.max() + 1)[qid]  # one weight per query
    if within_query:  # a query weighs the mean of its rows' weights, for both
        w = w * rng.uniform(0.5, 2, len(y))
    scorer = get_ranking_scorer("ndcg@10")
    expected = est.score(X, y, qid=qid, sample_weight=w)
    assert scorer(est, X, y, qid=qid, sample_weight=w) == pytest.approx(expected, rel=1e-12)
    assert expected != pytest.approx(est.score(X, y, qid=qid))  # the weights change the mean
    # A DataFrame with the query column, without routing: the same number.
    frame = pd.DataFrame(X).assign(qid=qid)
    frame.columns = frame.columns.astype(str)
    with sklearn.config_context(enable_metadata_routing=False), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "X has feature names")  # est was fitted on the arrays
        assert scorer(est, frame, y, sample_weight=w) == pytest.approx(expected, rel=1e-12)


def test_a_weighted_score_of_no_query_warns(ranker_data, routing):
    """Every query with a relevant document has weight 0, the others are
    excluded: nan, with the warning the unweighted mean gives (it was silent)."""
    from sklearn.exceptions import UndefinedMetricWarning

    est, X, y, qid = ranker_data
    relevant = np.array([y[qid == q].max() > 0 for q in range(qid.max() + 1)])
    assert relevant.any() and not relevant.all()
    w = np.where(relevant[qid], 0.0, 1.0)
    with pytest.warns(UndefinedMetricWarning, match="every query was excluded .* or has weight 0"):
        value = make_ranking_scorer("ndcg@10", empty="exclude")(est, X, y, qid=qid, sample_weight=w)
    assert np.isnan(value)


@pytest.mark.parametrize("weight", [np.zeros, lambda n: -np.ones(n), lambda n: np.ones(n - 1)])
def test_scorer_and_ranker_refuse_the_same_sample_weight(ranker_data, weight, routing):
    est, X, y, qid = ranker_data
    w = weight(len(y))
    with pytest.raises(ValueError) as from_ranker:
        est.score(X, y, qid=qid, sample_weight=w)
    with pytest.raises(ValueError) as from_scorer:
        get_ranking_scorer("ndcg@10")(est, X, y, qid=qid, sample_weight=w)
    assert str(from_scorer.value) == str(from_ranker.value)


def test_cross_validate_with_a_weighted_scorer(ranker_data, routing):
    from rankkit import LambdaMARTRanker

    _, X, y, qid = ranker_data
    w = np.random.default_rng(1).uniform(0.1, 3, len(y))
    scorer = get_ranking_scorer("ndcg@10").set_score_request(sample_weight=True)
    # Asking for sample_weight keeps the default request of qid.
    assert scorer.get_metadata_routing().score.requests == {"qid": True, "sample_weight": True, "position": None}
    est = LambdaMARTRanker(n_estimators=3, max_depth=2, n_jobs=1, random_state=0).set_fit_request(sample_weight=True)
    cv = QueryKFold(3)
    res = cross_validate(est, X, y, cv=cv, scoring=scorer, params={"qid": qid, "sample_weight": w},
                         error_score="raise")
    manual = []
    for train, test in cv.split(X, qid=qid):
        fitted = LambdaMARTRanker(n_estimators=3, max_depth=2, n_jobs=1, random_state=0)
        fitted.fit(X[train], y[train], qid=qid[train], sample_weight=w[train])
        manual.append(fitted.score(X[test], y[test], qid=qid[test], sample_weight=w[test]))
    assert np.all(np.isfinite(res["test_score"]))
    np.testing.assert_allclose(res["test_score"], manual, rtol=1e-12)


# ---------------------------------------------------------------------------
# Unknown metric names


def test_unknown_metric_lists_what_the_caller_accepts():
    from rankkit._metrics._common import SWAP_METRICS, parse_metric

    accepted = [*SWAP_METRICS, "classic"]  # what YetiRank takes
    with pytest.raises(ValueError) as error:
        parse_metric("clasic", accepted=accepted)
    assert str(error.value) == (
        f"Unknown metric 'clasic' (did you mean 'classic'?); valid metrics are {accepted} "
        "(optionally with @k, e.g. 'ndcg@10')."
    )
    # By default every metric, and no guess when nothing is close.
    with pytest.raises(ValueError, match=r"Unknown metric 'ndgc@10' \(did you mean 'ndcg'\?\); valid metrics "
                                         r"are \['dcg', 'err', 'expdcg', 'map', 'mrr', 'ndcg', 'pfound'"):
        make_ranking_scorer("ndgc@10")
    with pytest.raises(ValueError, match=r"Unknown metric 'auc'; valid metrics are"):
        parse_metric("auc")
    # A known metric parses; the caller refuses it with its own reason if it does not take it.
    assert parse_metric("precision@5", accepted=SWAP_METRICS) == ("precision", 5)


def test_a_later_score_request_keeps_sample_weight(ranker_data, routing):
    # scikit-learn's set_score_request replaces every request: a later call for
    # qid alone dropped sample_weight=True, and cross_validate, whose ranker
    # still consumed the weights in fit, silently scored without them.
    from rankkit import LambdaMARTRanker

    _, X, y, qid = ranker_data
    w = np.random.default_rng(1).uniform(0.1, 3, len(y))
    weighted = get_ranking_scorer("ndcg@10").set_score_request(sample_weight=True)
    again = get_ranking_scorer("ndcg@10").set_score_request(sample_weight=True).set_score_request(qid=True)
    assert again.get_metadata_routing().score.requests == {"qid": True, "sample_weight": True, "position": None}
    aliased = get_ranking_scorer("ndcg@10").set_score_request(sample_weight=True).set_score_request(qid="q")
    assert aliased.get_metadata_routing().score.requests == {"qid": "q", "sample_weight": True, "position": None}
    # An unrequested sample_weight stays known, so routing it is scikit-learn's error.
    assert get_ranking_scorer("mrr").set_score_request(qid="q").get_metadata_routing().score.requests == {
        "qid": "q", "sample_weight": None, "position": None}
    est = LambdaMARTRanker(n_estimators=3, max_depth=2, n_jobs=1, random_state=0).set_fit_request(sample_weight=True)
    params = {"qid": qid, "sample_weight": w}
    expected = cross_validate(est, X, y, cv=QueryKFold(3), scoring=weighted, params=params)["test_score"]
    got = cross_validate(est, X, y, cv=QueryKFold(3), scoring=again, params=params)["test_score"]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_missing_qid_message_with_qid_col_none(data):
    X, y, qid = data
    frame = pd.DataFrame(X).assign(qid=qid)
    frame.columns = frame.columns.astype(str)
    scorer = make_ranking_scorer("ndcg", qid_col=None)
    with pytest.raises(ValueError, match="needs query ids") as error:
        scorer(_DropQid().fit(frame, y), frame, y)
    # No column is read: the message names qid_col, not a column 'None'.
    assert "'None' column" not in str(error.value)
    assert "set qid_col to the query column" in str(error.value)
