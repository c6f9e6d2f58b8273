"""The scikit-learn rankers: learning, query handling, model selection,
early stopping, persistence and bad input, on every backend available."""

import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, cross_validate

import rankkit._estimators as est
from rankkit._backends import BACKENDS, get_backend
from rankkit._metrics._api import evaluate_sorted
from rankkit._groups import make_groups
from rankkit.datasets import make_ranking, make_stochasticrank_toy
from rankkit.metrics import err_score, ndcg_score
from rankkit.objectives import LambdaMART

from ._backends import BACKENDS_UNDER_TEST



# name -> (class, objective params); small but representative settings.
RANKERS = {
    "queryrmse": (est.QueryRMSERanker, {}),
    "lambdamart": (est.LambdaMARTRanker, {"metric": "ndcg@10"}),
    "stochasticrank": (est.StochasticRankRanker, {"metric": "ndcg@10", "n_estimations": 1}),
    "yetirank": (est.YetiRanker, {"n_permutations": 4}),
    "yetiloss": (est.YetiRanker, {"metric": "mrr", "n_permutations": 4}),
    "xendcg": (est.XENDCGRanker, {}),
}
# Objectives without randomness: their models must not depend on row order at all.
DETERMINISTIC = ["queryrmse", "lambdamart"]

BOOST = {"n_estimators": 20, "max_depth": 4, "learning_rate": 0.2, "n_jobs": 1, "random_state": 0}


def _ranker(name, backend="xgboost", **params):
    cls, obj_params = RANKERS[name]
    return cls(**{**obj_params, **BOOST, "backend": backend, **params})


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=90, n_features=8, max_docs=30, random_state=0)
    train = qid < 60
    return X[train], y[train], qid[train], X[~train], y[~train], qid[~train]


def _mean_ndcg10(y, score, qid):
    g = make_groups(qid, len(y))
    v = evaluate_sorted("ndcg@10", g.sort(y), g.sort(score), g.group_ptr, ties="worst")
    return np.nanmean(v)


# -- learning ------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
@pytest.mark.parametrize("name", list(RANKERS))
def test_learns(data, name, backend):
    X, y, qid, Xt, yt, qt = data
    model = _ranker(name, backend).fit(X, y, qid=qid)
    rng = np.random.RandomState(1)
    random_ndcg = np.mean([_mean_ndcg10(yt, rng.rand(len(yt)), qt) for _ in range(5)])
    learned = _mean_ndcg10(yt, model.predict(Xt), qt)
    # make_ranking's signal is strong: 20 small trees must beat random ordering clearly.
    assert learned > random_ndcg + 0.1, (learned, random_ndcg)
    # score() is the ranker's own metric with worst-case ties; ndcg@10 for these settings
    # except YetiLoss-for-MRR, which scores MRR.
    if name != "yetiloss":
        assert model.score(Xt, yt, qid=qt) == pytest.approx(learned, rel=1e-12)


@pytest.mark.parametrize("backend", [b for b in BACKENDS_UNDER_TEST if b != "xgboost"])
def test_same_parameters_same_quality_as_xgboost(data, backend):
    # The same hyper-parameters mean the same thing on every backend: each model
    # reaches a held-out NDCG comparable with XGBoost's (different tree growers,
    # so not equal models), and both learned (far above random order).
    X, y, qid, Xt, yt, qt = data
    scores = {b: _ranker("lambdamart", b).fit(X, y, qid=qid).score(Xt, yt, qid=qt) for b in ("xgboost", backend)}
    assert abs(scores[backend] - scores["xgboost"]) < 0.08, scores
    rng = np.random.RandomState(1)
    random_ndcg = np.mean([_mean_ndcg10(yt, rng.rand(len(yt)), qt) for _ in range(5)])
    assert min(scores.values()) > random_ndcg + 0.1, (scores, random_ndcg)


# -- query handling --------------------------------------------------------------
def _interleaving_permutation(qid, rng):
    """Rows of all queries interleaved at random, each query's rows in their original order."""
    keys = rng.rand(len(qid))
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        keys[rows] = np.sort(keys[rows])
    return np.argsort(keys)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
@pytest.mark.parametrize("name", DETERMINISTIC)
def test_row_order_invariance(data, name, backend):
    X, y, qid, Xt, _, _ = data
    rng = np.random.RandomState(0)
    if name == "queryrmse":
        perm = rng.permutation(len(y))  # any order at all
    else:
        # Pairwise lambdas at tied scores (all scores tie at the first iteration)
        # follow the order of documents inside a query, as in XGBoost and LightGBM;
        # the order of queries and where their rows sit must not matter.
        perm = _interleaving_permutation(qid, rng)
    a = _ranker(name, backend).fit(X, y, qid=qid)
    b = _ranker(name, backend).fit(X[perm], y[perm], qid=qid[perm])
    # The same fitted function on the training rows, up to the summation order
    # of the histograms (float32 gradients on XGBoost and LightGBM) ...
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-5, atol=1e-6)
    if backend == "numba":
        # ... but not always the same trees: the numba GBDT sums float64 gains
        # and breaks only bit-exact ties (lowest feature first), so two features
        # that split a small node's rows identically (here 4 rows in tree 12 of
        # the QueryRMSE fit) can swap when the summation order changes, and
        # held-out rows then fall differently.
        return
    np.testing.assert_allclose(a.predict(Xt), b.predict(Xt), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
@pytest.mark.parametrize("name", list(RANKERS))
def test_predictions_in_callers_order(data, name, backend):
    X, y, qid, _, _, _ = data
    perm = np.random.RandomState(0).permutation(len(y))
    model = _ranker(name, backend, n_estimators=5).fit(X[perm], y[perm], qid=qid[perm])
    np.testing.assert_array_equal(model.predict(X[perm]), model.predict(X)[perm])


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
@pytest.mark.parametrize("name", ["queryrmse", "stochasticrank"])
def test_dataframe_with_qid_column_equals_numpy(data, name, backend):
    X, y, qid, Xt, yt, qt = data
    cols = [f"x{i}" for i in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols)
    df.insert(3, "qid", qid)  # the query column may sit anywhere
    a = _ranker(name, backend).fit(df, y)
    b = _ranker(name, backend).fit(X, y, qid=qid)
    assert list(a.feature_names_in_) == cols
    assert a.n_features_in_ == X.shape[1]
    dft = pd.DataFrame(Xt, columns=cols)
    np.testing.assert_array_equal(a.predict(dft), b.predict(Xt))
    dft.insert(0, "qid", qt)
    np.testing.assert_array_equal(a.predict(dft), b.predict(Xt))  # column dropped
    assert a.score(dft, yt) == b.score(Xt, yt, qid=qt)
    fi = a.feature_importances_
    assert fi.shape == (X.shape[1],) and fi.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_sparse_input(data, backend):
    import scipy.sparse as sp

    X, y, qid, Xt, _, _ = data
    model = _ranker("queryrmse", backend).fit(sp.csr_matrix(X), y, qid=qid)
    dense = _ranker("queryrmse", backend).fit(X, y, qid=qid)
    # Sparse and dense are the same data on every backend (absent entries are
    # zeros; tests/test_sparse.py checks it on data full of zeros and NaNs).
    np.testing.assert_array_equal(model.predict(sp.csc_matrix(Xt)), dense.predict(Xt))


# -- model selection -----------------------------------------------------------------
def _search(**kw):
    from rankkit.metrics import make_ranking_scorer
    from rankkit.model_selection import QueryKFold

    return GridSearchCV(
        est.QueryRMSERanker(n_estimators=5, random_state=0),
        {"max_depth": [1, 4]},
        cv=QueryKFold(n_splits=3),
        scoring=make_ranking_scorer("ndcg@10"),
        **kw,
    )


def test_gridsearch_with_dataframe_query_column(data):
    X, y, qid, _, _, _ = data
    df = pd.DataFrame(X).rename(columns=str)
    df["qid"] = qid
    search = _search().fit(df, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and scores[0] != scores[1]
    assert search.best_params_ == search.cv_results_["params"][int(np.argmax(scores))]
    # The refit model is a ranker trained on every row.
    assert search.best_estimator_.n_features_in_ == X.shape[1]


def test_gridsearch_with_metadata_routing(data):
    X, y, qid, _, _, _ = data
    df = pd.DataFrame(X).rename(columns=str)
    df["qid"] = qid
    reference = _search().fit(df, y).cv_results_["mean_test_score"]
    with sklearn.config_context(enable_metadata_routing=True):
        routed = _search().fit(X, y, qid=qid).cv_results_["mean_test_score"]
        cv = cross_validate(
            est.QueryRMSERanker(n_estimators=5, random_state=0), X, y,
            params={"qid": qid}, cv=_search().cv, scoring=_search().scoring,
        )
    # Both ways see the same folds and the same query ids.
    np.testing.assert_allclose(routed, reference, rtol=1e-12)
    assert np.all(np.isfinite(cv["test_score"]))


def _pipeline(max_depth=3):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), _ranker("lambdamart", n_estimators=8, max_depth=max_depth))


def test_pipeline_score_and_gridsearch_with_routed_qid(data):
    # Pipeline.score hands the final step sample_weight=None under routing: a
    # ranker's score must take it (it used to raise "unexpected argument(s)").
    from sklearn.model_selection import GridSearchCV
    from sklearn.preprocessing import StandardScaler
    from rankkit.model_selection import QueryKFold

    X, y, qid, Xt, yt, qt = data
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = _pipeline().fit(X, y, qid=qid)
        score = pipe.score(Xt, yt, qid=qt)
        # The same as the ranker on scaled features.
        scaler = StandardScaler().fit(X)
        alone = _ranker("lambdamart", n_estimators=8, max_depth=3).fit(scaler.transform(X), y, qid=qid)
        assert score == alone.score(scaler.transform(Xt), yt, qid=qt)
        # scoring=None: GridSearchCV scores with Pipeline.score, i.e. the ranker's own metric.
        search = GridSearchCV(_pipeline(), {"lambdamartranker__max_depth": [2, 4]}, cv=QueryKFold(3),
                              error_score="raise").fit(X, y, qid=qid)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and scores[0] != scores[1]


def test_pipeline_gridsearch_with_dataframe_query_column(data):
    # A transformer would turn the query column into a feature (or drop it): a
    # ColumnTransformer passes it through under its own name, as docs/user_guide.md shows.
    from sklearn.compose import make_column_transformer
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from rankkit.model_selection import QueryKFold

    X, y, qid, _, _, _ = data
    df = pd.DataFrame(X).rename(columns=lambda c: f"f{c}")
    features = list(df.columns)
    df["qid"] = qid
    pre = make_column_transformer((StandardScaler(), features), remainder="passthrough",
                                  verbose_feature_names_out=False).set_output(transform="pandas")
    pipe = make_pipeline(pre, _ranker("lambdamart", n_estimators=8))
    grid = {"lambdamartranker__max_depth": [2, 4]}
    plain = GridSearchCV(pipe, grid, cv=QueryKFold(3), error_score="raise").fit(df, y)
    with sklearn.config_context(enable_metadata_routing=True):
        routed = GridSearchCV(pipe, grid, cv=QueryKFold(3), error_score="raise").fit(df, y)
        by_qid = GridSearchCV(_pipeline(), grid, cv=QueryKFold(3), error_score="raise").fit(X, y, qid=qid)
    assert list(plain.best_estimator_[-1].feature_names_in_) == features  # the query column is not a feature
    np.testing.assert_array_equal(plain.cv_results_["mean_test_score"], routed.cv_results_["mean_test_score"])
    np.testing.assert_allclose(plain.cv_results_["mean_test_score"], by_qid.cv_results_["mean_test_score"],
                               rtol=1e-12)


def test_score_with_sample_weight_is_a_query_weighted_mean(data):
    from rankkit.metrics import ndcg_score

    X, y, qid, Xt, yt, qt = data
    model = _ranker("queryrmse").fit(X, y, qid=qid)
    per_query = ndcg_score(yt, model.predict(Xt), qid=qt, k=10, per_query=True)
    rng = np.random.default_rng(0)
    w = rng.uniform(0, 2, size=len(yt))
    queries = pd.unique(qt)
    query_weight = np.array([w[qt == q].mean() for q in queries])  # a query weighs its rows' mean weight
    assert model.score(Xt, yt, qid=qt, sample_weight=w) == pytest.approx(
        np.dot(query_weight, per_query) / query_weight.sum(), rel=1e-12)
    # A constant weight per query is that query's weight; equal weights change nothing.
    per_row = np.repeat(np.arange(len(queries), dtype=float) + 1, pd.Series(qt).value_counts(sort=False))
    expect = np.dot(np.arange(len(queries)) + 1.0, per_query) / (np.arange(len(queries)) + 1.0).sum()
    assert model.score(Xt, yt, qid=qt, sample_weight=per_row) == pytest.approx(expect, rel=1e-12)
    assert model.score(Xt, yt, qid=qt, sample_weight=np.full(len(yt), 3.0)) == pytest.approx(
        model.score(Xt, yt, qid=qt), rel=1e-12)
    with pytest.raises(ValueError, match="zero for every row"):
        model.score(Xt, yt, qid=qt, sample_weight=np.zeros(len(yt)))


def test_sample_weight_routed_to_fit_and_score_in_a_pipeline(data):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from rankkit.model_selection import QueryKFold

    X, y, qid, _, _, _ = data
    w = np.random.default_rng(1).uniform(0.5, 2, size=len(y))
    folds = list(QueryKFold(3).split(X, qid=qid))
    with sklearn.config_context(enable_metadata_routing=True):
        ranker = _ranker("queryrmse").set_fit_request(sample_weight=True).set_score_request(sample_weight=True)
        pipe = make_pipeline(StandardScaler().set_fit_request(sample_weight=False), ranker)
        cv = cross_validate(pipe, X, y, params={"qid": qid, "sample_weight": w}, cv=folds)
    for (train, test), got in zip(folds, cv["test_score"]):
        scaler = StandardScaler().fit(X[train])
        alone = _ranker("queryrmse").fit(scaler.transform(X[train]), y[train], qid=qid[train],
                                         sample_weight=w[train])
        assert got == alone.score(scaler.transform(X[test]), y[test], qid=qid[test], sample_weight=w[test])


def test_fit_and_score_request_qid_by_default():
    ranker = est.QueryRMSERanker()
    with sklearn.config_context(enable_metadata_routing=True):
        routing = ranker.get_metadata_routing()
    assert routing.fit.requests["qid"] is True
    assert routing.score.requests["qid"] is True


def test_gridsearch_without_routing_says_how(data):
    # Without routing, GridSearchCV hands qid to fit but not to the scorer; the
    # failure must explain the two ways that work.
    X, y, qid, _, _, _ = data
    with pytest.raises(Exception) as info:
        _search(error_score="raise").fit(X, y, qid=qid)
    msg = str(info.value)
    assert "enable_metadata_routing" in msg or "DataFrame" in msg, msg


# -- early stopping and progress ---------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_early_stopping_keeps_best_iteration(data, capsys, backend):
    X, y, qid, Xt, yt, qt = data
    model = _ranker("lambdamart", backend, n_estimators=200, learning_rate=0.8, max_depth=6,
                    early_stopping_rounds=4).fit(X, y, qid=qid, eval_set=[(Xt, yt)], eval_qid=[qt], verbose=5)
    history = model.evals_result_["validation_0"]["ndcg@10"]
    assert len(history) < 200  # it stopped
    assert len(history) == model.best_iteration_ + 1 + 4
    assert model.best_iteration_ == int(np.argmax(history))
    assert model.best_score_ == max(history)
    assert model.backend_.n_iterations_ == model.best_iteration_ + 1
    # predict uses the best model: same as training exactly that many trees.
    best = _ranker("lambdamart", backend, n_estimators=model.best_iteration_ + 1, learning_rate=0.8,
                   max_depth=6).fit(X, y, qid=qid)
    np.testing.assert_array_equal(model.predict(Xt), best.predict(Xt))
    assert model.score(Xt, yt, qid=qt) == pytest.approx(model.best_score_, rel=1e-6)
    out = capsys.readouterr().out.strip().splitlines()
    # XGBoost's format, the training metric first; a line every 5 iterations,
    # the last iteration's, then the final line.
    assert out[0].startswith("[0]\ttraining-ndcg@10:") and "\tvalidation_0-ndcg@10:" in out[0]
    assert out[1].startswith("[5]\t")
    last = len(history) - 1
    assert out[-2].startswith(f"[{last}]\t")
    assert out[-1] == (f"stopped at iteration {last} by early stopping, best iteration {model.best_iteration_}, "
                       f"best validation_0-ndcg@10 {model.best_score_:.5f}")


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_eval_set_from_dataframe_and_eval_metric(data, backend):
    X, y, qid, Xt, yt, qt = data
    dft = pd.DataFrame(Xt)
    dft.columns = [str(c) for c in dft.columns]
    df = pd.DataFrame(X, columns=dft.columns)
    df["qid"] = qid
    dft["qid"] = qt
    model = _ranker("queryrmse", backend, eval_metric="mrr@5").fit(df, y, eval_set=[(df, y), (dft, yt)])
    res = model.evals_result_
    # (df, y) is the training data itself: recorded as "training", from the training scores.
    assert set(res) == {"training", "validation_1"}
    assert res["training"]["mrr@5"][-1] == pytest.approx(model.score(df, y), rel=1e-6)
    assert len(res["validation_1"]["mrr@5"]) == BOOST["n_estimators"]
    assert res["validation_1"]["mrr@5"][-1] == pytest.approx(model.score(dft, yt), rel=1e-6)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_score_and_early_stopping_use_ndcg10_unless_eval_metric_says_otherwise(data, backend):
    """Every ranker scores, and stops, on NDCG@10 by default, whatever it
    optimises; eval_metric="expdcg" on YetiLoss for ExpDCG with decay 0.5
    scores on ExpDCG with decay 0.5: the objective's metric settings are the
    metric's."""
    from rankkit.metrics import expdcg_score

    X, y, qid, Xt, yt, qt = data
    fit = dict(eval_set=[(Xt, yt)], eval_qid=[qt])
    model = _ranker("yetiloss", backend, metric="expdcg", decay=0.5).fit(X, y, qid=qid, **fit)
    pred = model.predict(Xt)
    want = _mean_ndcg10(yt, pred, qt)
    assert model.score(Xt, yt, qid=qt) == pytest.approx(want, rel=1e-12)
    assert list(model.evals_result_["validation_0"]) == ["ndcg@10"]
    model = _ranker("yetiloss", backend, metric="expdcg", decay=0.5, eval_metric="expdcg").fit(X, y, qid=qid, **fit)
    pred = model.predict(Xt)
    want = expdcg_score(yt, pred, qid=qt, decay=0.5)
    assert model.score(Xt, yt, qid=qt) == pytest.approx(want, rel=1e-12)
    assert model.evals_result_["validation_0"]["expdcg"][-1] == pytest.approx(want, rel=1e-12)
    assert abs(want - expdcg_score(yt, pred, qid=qt, decay=0.85)) > 0.1  # the decay matters here


@pytest.mark.parametrize("name, params", [("lambdamart", {"metric": "ndcg"}), ("stochasticrank", {"metric": "ndcg"}),
                                          ("yetiloss", {}), ("xendcg", {}), ("queryrmse", {})])
def test_every_ranker_scores_ndcg10_by_default(data, name, params):
    """One default metric, whatever the ranker optimises (full NDCG, MRR, ...):
    GridSearchCV(scoring=None) over rankers compares like with like."""
    X, y, qid, Xt, yt, qt = data
    model = _ranker(name, **params).fit(X, y, qid=qid)
    assert model.score(Xt, yt, qid=qt) == pytest.approx(_mean_ndcg10(yt, model.predict(Xt), qt), rel=1e-12)


@pytest.mark.parametrize("name", ["yetiloss", "lambdamart", "stochasticrank"])
def test_score_does_not_change_the_fitted_objective(data, name):
    """Scoring keeps no state: on labels with another maximum (up to 1, against
    the training labels' 4, which fit set as err_max_label) the fitted
    objective's gradients and parameters stay as they were."""
    X, y, qid, Xt, yt, qt = data
    assert y.max() == 4
    model = _ranker(name, metric="err@10", err_mapping="chapelle").fit(X, y, qid=qid)
    groups = make_groups(qid, len(y))
    ys, ptr = np.ascontiguousarray(groups.sort(y.astype(float))), groups.group_ptr
    raw = np.random.default_rng(0).normal(size=len(y))
    before = model.objective_._gradient_hessian_sorted(ys, raw, ptr, 7)
    state = dict(vars(model.objective_))
    model.score(Xt, np.minimum(yt, 1), qid=qt)
    after = model.objective_._gradient_hessian_sorted(ys, raw, ptr, 7)
    np.testing.assert_array_equal(before[0], after[0])
    np.testing.assert_array_equal(before[1], after[1])
    assert vars(model.objective_) == state
    # Nothing but its parameters: no label-dependent attribute at all.
    assert set(vars(model.objective_)) == set(model.objective_._get_params())


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_eval_set_does_not_change_the_training_objective(data, backend):
    """ERR's Chapelle scale 2^{r_max} comes from the training labels, not the
    eval set's, so adding an eval set cannot change the model."""
    X, y, qid, Xt, yt, qt = data
    params = dict(metric="err@10", err_mapping="chapelle", n_permutations=2)
    plain = _ranker("yetirank", backend, **params).fit(X, y, qid=qid)
    low = yt.copy()
    low[low > 1] = 1  # an eval set with a smaller maximum label
    with_eval = _ranker("yetirank", backend, **params).fit(X, y, qid=qid, eval_set=[(Xt, low)], eval_qid=[qt])
    np.testing.assert_array_equal(plain.predict(Xt), with_eval.predict(Xt))


@pytest.mark.parametrize("name", ["yetiloss", "lambdamart", "stochasticrank"])
def test_err_scale_is_the_training_labels(data, name):
    """err_max_label=None: fit sets it to the largest training label, and eval
    sets and score map labels with it, whatever their own largest label (so a
    query's ERR does not depend on the other queries scored with it); an eval
    set with a larger label asks for err_max_label."""
    X, y, qid, Xt, yt, qt = data
    low = np.minimum(yt, 2)
    params = dict(metric="err@10", err_mapping="chapelle", eval_metric="err@10")
    model = _ranker(name, **params).fit(X, y, qid=qid, eval_set=[(Xt, low)], eval_qid=[qt])
    assert model.objective_.err_max_label == y.max() == 4
    expected = err_score(low, model.predict(Xt), qid=qt, k=10, err_mapping="chapelle", err_max_label=4)
    assert model.evals_result_["validation_0"]["err@10"][-1] == pytest.approx(expected, rel=1e-12)
    assert model.score(Xt, low, qid=qt) == pytest.approx(expected, rel=1e-12)
    assert expected != pytest.approx(err_score(low, model.predict(Xt), qid=qt, k=10, err_mapping="chapelle"))
    with pytest.raises(ValueError, match=r"eval_set\[0\] has the label 4: pass err_max_label=4"):
        _ranker(name, **params).fit(X, np.minimum(y, 2), qid=qid, eval_set=[(Xt, yt)], eval_qid=[qt])
    explicit = _ranker(name, **params, err_max_label=4).fit(X, np.minimum(y, 2), qid=qid, eval_set=[(Xt, yt)],
                                                           eval_qid=[qt])
    assert explicit.objective_.err_max_label == 4
    # The ERR scale binds ERR, not the labels a ranker can be scored on: NDCG
    # (score's default) takes labels above it, as a cross-validation fold
    # whose top grade was not in training would; ERR says what to pass.
    capped = _ranker(name, metric="err@10", err_mapping="chapelle").fit(X, np.minimum(y, 2), qid=qid)
    assert capped.score(Xt, yt, qid=qt) == pytest.approx(
        ndcg_score(yt, capped.predict(Xt), qid=qt, k=10), rel=1e-12)
    with pytest.raises(ValueError, match=r"largest training label, 2 \(err_max_label=None\), and y has the label 4: "
                                         r"refit with err_max_label"):
        capped.set_params(eval_metric="err@10").score(Xt, yt, qid=qt)


@pytest.mark.parametrize("cls", [est.XENDCGRanker, est.QueryRMSERanker])
def test_err_eval_metric_without_an_err_mapping_says_how(data, cls):
    """These objectives have no err_mapping: ERR on graded labels is refused
    at fit with the scorer that maps them (score failed later, advising a
    parameter the ranker does not have); labels in [0, 1] train."""
    X, y, qid, Xt, yt, qt = data
    from rankkit.metrics import make_ranking_scorer

    with pytest.raises(ValueError, match=r"no parameter for: pass eval_metric=rankkit.metrics.make_ranking_scorer"):
        cls(n_estimators=3, n_jobs=1, eval_metric=["ndcg@10", "err@10"]).fit(X, y, qid=qid)
    cls(n_estimators=3, n_jobs=1, eval_metric="err@10").fit(X, y / y.max(), qid=qid)
    scored = cls(n_estimators=3, n_jobs=1, eval_metric=make_ranking_scorer("err@10")).fit(X, y, qid=qid)
    assert scored.score(Xt, yt, qid=qt) == pytest.approx(
        err_score(yt, scored.predict(Xt), qid=qt, k=10, err_mapping="chapelle"), rel=1e-12)


def test_exp_gain_overflow_on_a_ranker_without_gain_says_how(data):
    """QueryRMSE has no gain parameter: NDCG's advice, gain='linear', was a
    TypeError there; the message names the scorer that takes it."""
    from rankkit.metrics import make_ranking_scorer

    X, y, qid, _, _, _ = data
    big = y * 400.0
    model = est.QueryRMSERanker(n_estimators=3, n_jobs=1).fit(X, big, qid=qid)
    with pytest.raises(ValueError, match=r"no gain parameter: pass eval_metric=rankkit.metrics.make_ranking_scorer"
                                         r"\('ndcg@10', gain='linear'\)"):
        model.score(X, big, qid=qid)
    model.set_params(eval_metric=make_ranking_scorer("ndcg@10", gain="linear"))
    assert np.isfinite(model.score(X, big, qid=qid))


def test_exp_gain_overflow_under_stochasticrank_gain_none_advises_its_gain(data):
    """StochasticRank's gain=None smooths the linear gain and reports the exp
    gain: an overflow of the reported metric advises its own gain='linear',
    not the rankers without a gain parameter."""
    X, y, qid, _, _, _ = data
    big = y * 400.0
    params = dict(mu=0, n_estimators=3, n_jobs=1, random_state=0)
    model = est.StochasticRankRanker(gain=None, **params).fit(X, big, qid=qid)
    with pytest.raises(ValueError, match=r"pass gain='linear'") as error:
        model.score(X, big, qid=qid)
    assert "no gain parameter" not in str(error.value)
    assert np.isfinite(est.StochasticRankRanker(gain="linear", **params).fit(X, big, qid=qid).score(X, big, qid=qid))


def test_eval_set_errors_name_the_set(data):
    X, y, qid, Xt, yt, qt = data
    model = _ranker("queryrmse")

    def fit_with(X_eval, y_eval, eval_qid=(qt,)):
        return model.fit(X, y, qid=qid, eval_set=[(X_eval, y_eval)], eval_qid=None if eval_qid is None else [*eval_qid])

    bad_y = yt.copy()
    bad_y[0] = np.nan
    with pytest.raises(ValueError, match=r"y of eval_set\[0\] contains NaN"):
        fit_with(Xt, bad_y)
    with pytest.raises(ValueError, match=r"y of eval_set\[0\] contains negative labels"):
        fit_with(Xt, yt - 5)
    with pytest.raises(ValueError, match=r"eval_set\[0\]: X has 3 features"):
        fit_with(Xt[:, :3], yt)
    bad_X = Xt.copy()
    bad_X[0, 0] = np.inf
    with pytest.raises(ValueError, match=r"eval_set\[0\]: Input X contains infinity"):
        fit_with(bad_X, yt)
    with pytest.raises(ValueError, match=r"no eval_qid\[0\] was given.*pass eval_qid=\[\.\.\.\] with one array"):
        fit_with(Xt, yt, eval_qid=None)
    # Named the training data's y_true and X before.
    with pytest.raises(ValueError, match=r"ndcg@10 on eval_set\[0\]: y_true has the label 2000"):
        _ranker("lambdamart").fit(X, y, qid=qid, eval_set=[(Xt, np.where(yt == yt.max(), 2000, yt))],
                                  eval_qid=[qt])
    frame = pd.DataFrame(Xt, columns=[f"f{j}" for j in range(Xt.shape[1])]).assign(qid=qt)
    with pytest.raises(ValueError, match=r"eval_set\[0\] has a 'qid' column and eval_qid\[0\]= was passed"):
        model.fit(frame.drop(columns="qid"), yt, qid=qt, eval_set=[(frame, yt)], eval_qid=[qt])


# -- persistence -------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_pickle_round_trip(data, backend, tmp_path):
    import joblib

    X, y, qid, Xt, _, _ = data
    model = _ranker("stochasticrank", backend, langevin=True, model_shrink_rate=0.01).fit(X, y, qid=qid)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(Xt), model.predict(Xt))
    joblib.dump(model, tmp_path / "m.joblib")
    np.testing.assert_array_equal(joblib.load(tmp_path / "m.joblib").predict(Xt), model.predict(Xt))


def test_xgboost_booster_served_without_rankkit(data, tmp_path):
    import xgboost

    X, y, qid, Xt, _, _ = data
    model = _ranker("lambdamart", langevin=True, model_shrink_rate=0.05).fit(X, y, qid=qid)
    model.booster_.save_model(tmp_path / "m.json")
    served = xgboost.Booster(model_file=str(tmp_path / "m.json"))
    pred = served.predict(xgboost.DMatrix(Xt), output_margin=True)
    np.testing.assert_allclose(pred, model.predict(Xt), rtol=1e-6, atol=1e-6)


# -- bad input ------------------------------------------------------------------------------
def test_missing_qid(data):
    X, y, _, _, _, _ = data
    with pytest.raises(ValueError, match="Missing query ids.*qid="):
        _ranker("queryrmse").fit(X, y)
    with pytest.raises(ValueError, match="DataFrame without a 'qid' column"):
        _ranker("queryrmse").fit(pd.DataFrame(X), y)


def test_qid_given_twice(data):
    X, y, qid, _, _, _ = data
    df = pd.DataFrame(X)
    df["qid"] = qid
    with pytest.raises(ValueError, match="Query ids given twice"):
        _ranker("queryrmse").fit(df, y, qid=qid)


def test_nan_labels(data):
    X, y, qid, _, _, _ = data
    y = y.astype(float).copy()
    y[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _ranker("queryrmse").fit(X, y, qid=qid)


def test_labels_whose_exp_gain_overflows(data):
    X, y, qid, _, _, _ = data
    big = y * 600.0  # up to 2400: 2^2400 is not a float64
    for name in ("lambdamart", "stochasticrank", "yetiloss"):
        with pytest.raises(ValueError, match=r"label 2400\b.*overflows float64.*gain='linear'"):
            _ranker(name, metric="ndcg", gain="exp").fit(X, big, qid=qid)
    model = _ranker("lambdamart", gain="linear").fit(X, big, qid=qid)
    assert np.isfinite(model.score(X, big, qid=qid))
    # StochasticRank with gain=None smooths linear gains; its score is the exp-gain NDCG@10 of every ranker.
    model = _ranker("stochasticrank", metric="ndcg", gain=None).fit(X, big, qid=qid)
    with pytest.raises(ValueError, match=r"label 2400\b.*overflows float64.*gain='linear'"):
        model.score(X, big, qid=qid)


def test_eval_set_without_eval_qid(data):
    X, y, qid, Xt, yt, _ = data
    with pytest.raises(ValueError, match=r"no eval_qid\[0\] was given.*pass eval_qid=\[\.\.\.\]"):
        _ranker("queryrmse").fit(X, y, qid=qid, eval_set=[(Xt, yt)])
    with pytest.raises(ValueError, match="needs an eval_set"):
        _ranker("queryrmse", early_stopping_rounds=3).fit(X, y, qid=qid)
    # The training data alone cannot drive early stopping.
    with pytest.raises(ValueError, match="needs an eval_set other than the training data"):
        _ranker("queryrmse", early_stopping_rounds=3).fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid])


def test_unknown_backend(data):
    X, y, qid, _, _, _ = data
    with pytest.raises(ValueError, match="backend.*'numba'.*'xgboost'|backend.*'xgboost'.*'numba'"):
        _ranker("queryrmse", backend="catboost").fit(X, y, qid=qid)


@pytest.mark.parametrize("engine", ["xgboost", "lightgbm"])
def test_backend_engine_not_installed(monkeypatch, data, engine):
    import sys

    monkeypatch.delitem(sys.modules, f"rankkit._backends.{engine}", raising=False)
    monkeypatch.setitem(sys.modules, engine, None)  # makes `import <engine>` fail
    with pytest.raises(ImportError, match=f"backend='{engine}' needs the {engine} package.*pip install {engine}"):
        get_backend(engine)
    X, y, qid, _, _, _ = data
    with pytest.raises(ImportError, match=f"pip install {engine}"):
        _ranker("queryrmse", engine).fit(X, y, qid=qid)


def test_extras_named_in_messages_exist():
    """Every ``rankkit[extra]`` an install hint names is an extra of the package."""
    import re

    tomllib = pytest.importorskip("tomllib")
    import rankkit
    from rankkit._backends import _ENGINE_INSTALL

    root = Path(rankkit.__file__).resolve().parent
    with open(root.parent / "pyproject.toml", "rb") as f:
        extras = set(tomllib.load(f)["project"]["optional-dependencies"])
    hints = " ".join(filter(None, _ENGINE_INSTALL.values()))
    hints += " ".join(path.read_text() for path in root.glob("*.py"))
    named = set(re.findall(r"rankkit\[(\w+)\]", hints))
    assert {"lightgbm", "plot", "dask"} <= named
    assert named <= extras


def test_predict_before_fit(data):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        _ranker("queryrmse").predict(data[0])


def test_feature_count_mismatch(data):
    X, y, qid, _, _, _ = data
    model = _ranker("queryrmse", n_estimators=2).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :-1])


def test_invalid_hyper_parameters(data):
    X, y, qid, _, _, _ = data
    with pytest.raises(ValueError, match="model_shrink_mode"):
        _ranker("queryrmse", model_shrink_mode="linear").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="model_shrink_rate"):
        _ranker("queryrmse", model_shrink_rate=20.0).fit(X, y, qid=qid)  # 20 * 0.2 >= 1


def test_default_backend_is_the_numba_engine_with_catboosts_learner(data):
    """backend="auto" on numeric data: the numba engine's oblivious trees (one
    split per level) and random split strength, reproducible by random_state."""
    from rankkit import QueryRMSERanker

    X, y, qid, Xt, _, _ = data
    kw = dict(n_estimators=10, max_depth=3, n_jobs=1)
    model = QueryRMSERanker(random_state=0, **kw).fit(X, y, qid=qid)
    assert model.backend == "auto" and model.backend_.name == "numba"
    for nodes in model.backend_.booster_.trees:
        inner = nodes[nodes["left"] >= 0]
        for depth in np.unique(inner["depth"]):
            level = inner[inner["depth"] == depth]
            assert len(set(zip(level["feature"], level["bin_threshold"], level["missing_left"]))) == 1
    np.testing.assert_array_equal(QueryRMSERanker(random_state=0, **kw).fit(X, y, qid=qid).predict(Xt),
                                  model.predict(Xt))
    noiseless = QueryRMSERanker(random_state=0, backend_params={"random_strength": 0.0}, **kw).fit(X, y, qid=qid)
    assert not np.array_equal(noiseless.predict(Xt), model.predict(Xt))


def test_all_backends_registered():
    assert set(BACKENDS) >= {"xgboost", "numba", "lightgbm"}


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_warns_when_no_tree_splits(backend):
    """The StochasticRank paper's toy: two queries, so the hessians (in query
    units) sum to 2 and no split leaves min_child_weight=1 on both sides; the
    user is told why and what to change."""
    X, y, qid = make_stochasticrank_toy()
    params = dict(n_estimators=5, max_depth=3, backend=backend, random_state=0)
    with pytest.warns(UserWarning, match=r"grew no split in 5 trees.*min_child_weight=1.0.*in queries.*lower"):
        model = est.LambdaMARTRanker(**params).fit(X, y, qid=qid)
    assert np.ptp(model.predict(X)) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = est.LambdaMARTRanker(**params, min_child_weight=0.0).fit(X, y, qid=qid)
    assert np.ptp(model.predict(X)) > 0.0


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_missing_feature_values(data, backend):
    """NaN features are missing values on every backend (each split learns where
    they go); an informative feature with holes still ranks; infinity is an error."""
    X, y, qid, Xt, yt, qt = data
    rng = np.random.default_rng(0)
    Xm, Xtm = X.copy(), Xt.copy()
    Xm[rng.random(Xm.shape) < 0.2] = np.nan
    Xtm[rng.random(Xtm.shape) < 0.2] = np.nan
    model = _ranker("queryrmse", backend).fit(Xm, y, qid=qid)
    pred = model.predict(Xtm)
    assert np.all(np.isfinite(pred))
    rand = np.random.default_rng(1).random(len(yt))
    assert _mean_ndcg10(yt, pred, qt) > _mean_ndcg10(yt, rand, qt) + 0.05
    # A row whose features are all missing gets one score: the all-NaN path.
    all_missing = model.predict(np.full((2, X.shape[1]), np.nan))
    assert np.isfinite(all_missing).all() and all_missing[0] == all_missing[1]
    Xinf = X.copy()
    Xinf[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        _ranker("queryrmse", backend).fit(Xinf, y, qid=qid)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_a_query_of_weight_zero_trains_as_a_dropped_query(backend):
    """Query units and the curvature unit count queries and rows by their
    weights: a query of weight 0 is no query, one of weight 2 two copies.
    Features of few distinct values, so every subset bins alike; the numba
    engine without split noise, whose scale counts every row."""
    X, y, qid = make_ranking(40, n_features=4, random_state=0)
    X = np.round(X * 2)
    keep = qid % 2 == 0
    kw = dict(n_estimators=20, max_depth=3, n_jobs=1, random_state=0, backend=backend,
              backend_params={"random_strength": 0} if backend == "numba" else None)
    weighted = est.LambdaMARTRanker(**kw).fit(X, y, qid=qid, sample_weight=keep.astype(float)).predict(X)
    dropped = est.LambdaMARTRanker(**kw).fit(X[keep], y[keep], qid=qid[keep]).predict(X)
    # Rows of weight 0 keep the hessian floor (1e-6 of a query each); before,
    # the units counted them and the predictions differed by 0.3.
    np.testing.assert_allclose(weighted, dropped, rtol=0, atol=1e-4)
    twice = qid < 10
    doubled = est.LambdaMARTRanker(**kw).fit(X, y, qid=qid, sample_weight=np.where(twice, 2.0, 1.0)).predict(X)
    copies = est.LambdaMARTRanker(**kw).fit(np.vstack([X, X[twice]]), np.concatenate([y, y[twice]]),
                                            qid=np.concatenate([qid, qid[twice] + 1000])).predict(X)
    # The floor again: a doubled row holds it once, two copies twice.
    np.testing.assert_allclose(doubled, copies, rtol=0, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_a_refused_refit_leaves_the_model_as_it_was(backend):
    """A second fit that raises (a negative label) must not leave the old
    model with the refused data's categories and columns: its predictions
    and its saved file stay those of the first fit."""
    import io

    from rankkit import load_model

    df, y, _ = make_ranking(60, n_features=3, as_frame=True, random_state=0)
    df["site"] = pd.Categorical(np.random.default_rng(0).choice(["news", "shop", "wiki"], len(df)))
    if backend == "numba":  # no categorical splits: a numeric column instead
        df["site"] = df["site"].cat.codes.astype(float)
    ranker = est.LambdaMARTRanker(n_estimators=10, backend=backend, random_state=0).fit(df, y)
    state = dict(vars(ranker))
    before = ranker.predict(df)
    new = df.rename(columns={"f0": "other"})
    if backend != "numba":
        new["site"] = pd.Categorical(df["site"].astype(str), categories=["wiki", "shop", "news"])
    bad = y.copy()
    bad[0] = -1
    with pytest.raises(ValueError, match="negative"):
        ranker.fit(new, bad)
    assert vars(ranker).keys() == state.keys() and all(vars(ranker)[k] is v for k, v in state.items())
    np.testing.assert_array_equal(ranker.predict(df), before)
    buffer = io.BytesIO()
    ranker.save_model(buffer)
    np.testing.assert_array_equal(load_model(io.BytesIO(buffer.getvalue())).predict(df), before)


def test_a_query_of_weight_zero_trains_as_if_left_out():
    """A copy of a query given weight 0 leaves the model as it was without it:
    every split, and the leaf values up to float summation order. Its rows get
    no hessian floor (the floor is for documents in no pair) and, with
    split_score="gradient", no weight in the split scores (the rankers pass the
    sample weights to the engine). Integer features keep the bin edges the
    same; no split noise, whose scale counts rows."""
    rng = np.random.default_rng(0)
    sizes = rng.integers(5, 15, 30)
    qid = np.repeat(np.arange(30), sizes)
    X = rng.integers(0, 20, (qid.size, 5)).astype(float)
    y = np.clip(np.round(X[:, 0] / 5 + rng.normal(0, 1, qid.size)), 0, 4)
    copy = qid == 3
    X2, y2 = np.vstack([X, X[copy]]), np.r_[y, y[copy]]
    q2 = np.r_[qid, np.full(copy.sum(), 99)]
    w2 = np.r_[np.ones(qid.size), np.zeros(copy.sum())]
    for split_score in ("newton", "gradient"):
        kw = dict(n_estimators=15, random_state=0, n_jobs=1,
                  backend_params={"random_strength": 0.0, "split_score": split_score})
        for cls in (est.LambdaMARTRanker, est.YetiRanker):
            alone = cls(**kw).fit(X, y, qid=qid)
            padded = cls(**kw).fit(X2, y2, qid=q2, sample_weight=w2)
            trees = [m.backend_.booster_.trees for m in (alone, padded)]
            assert len(trees[0]) == len(trees[1]) == 15
            for a, b in zip(*trees):
                assert np.array_equal(a["feature"], b["feature"]) and np.array_equal(a["threshold"], b["threshold"])
            np.testing.assert_allclose(alone.predict(X), padded.predict(X), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("ranker", ["StochasticRankRanker", "LambdaMARTRanker"])
def test_a_query_of_weight_zero_gets_no_langevin_noise(ranker):
    """With SGLB a copy of a query given weight 0 still leaves the model as
    it was without it: its rows get no Langevin noise, and
    diffusion_temperature="auto" measures the gradients of the rows that
    train. (Before, the noise reached the leaves through those rows, and
    their zero gradients lowered the measured root mean square.)"""
    rng = np.random.default_rng(1)
    sizes = rng.integers(5, 15, 30)
    qid = np.repeat(np.arange(30), sizes)
    X = rng.integers(0, 20, (qid.size, 5)).astype(float)
    y = np.clip(np.round(X[:, 0] / 5 + rng.normal(0, 1, qid.size)), 0, 4)
    copy = qid < 10
    X2, y2 = np.vstack([X, X[copy]]), np.r_[y, y[copy]]
    q2 = np.r_[qid, qid[copy] + 100]
    w2 = np.r_[np.ones(qid.size), np.zeros(copy.sum())]
    kw = dict(n_estimators=15, random_state=0, n_jobs=1, langevin=True,
              backend_params={"random_strength": 0.0})
    cls = getattr(est, ranker)
    alone = cls(**kw).fit(X, y, qid=qid)
    padded = cls(**kw).fit(X2, y2, qid=q2, sample_weight=w2)
    assert alone.diffusion_temperature_ == pytest.approx(padded.diffusion_temperature_, rel=1e-12)
    np.testing.assert_allclose(alone.predict(X), padded.predict(X), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_a_backend_refuses_infinite_features_by_name(backend):
    """The backends' own fit refuses infinite features as the rankers do, in
    the training rows, the eval rows and sparse matrices alike, naming the
    features (before, the numba and LightGBM engines binned them at an end
    and XGBoost called them finite values beyond float32's range)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    target = X[:, 1].copy()

    def grad_fn(raw, t):
        return raw - target, np.ones_like(raw)

    Xinf = X.copy()
    Xinf[5, 2], Xinf[250, 0] = np.inf, -np.inf
    cls = get_backend(backend)
    for kwargs, match in [
        (dict(X=Xinf), r"X holds infinite values in features \[0, 2\]"),
        (dict(X=sp.csr_matrix(Xinf)), r"X holds infinite values in features \[0, 2\]"),
        (dict(X=X, eval_X=[X, Xinf[:, ::-1]]), r"eval_X\[1\] holds infinite values in features \[1, 3\]"),
    ]:
        with pytest.raises(ValueError, match=match):
            cls(n_estimators=2, max_depth=2).fit(grad_fn=grad_fn, **kwargs)
    assert np.isfinite(cls(n_estimators=2, max_depth=2).fit(X, grad_fn, eval_X=[X]).predict(X)).all()


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_gradients_beyond_float32_are_an_error_on_the_float32_engines(backend):
    """XGBoost and LightGBM take the gradients in float32: a gradient of
    1e39 used to become infinite there and the model silently constant."""
    pytest.importorskip(backend)
    X = np.random.default_rng(0).normal(size=(200, 3))

    def huge(raw, t):
        return 1e39 * np.sign(X[:, 0]), np.ones(200)

    with pytest.raises(ValueError, match=r"iteration 0 exceed float32's range.*backend='numba'"):
        get_backend(backend)(n_estimators=2, min_child_weight=1e-3).fit(X, huge)
    model = get_backend("numba")(n_estimators=2, min_child_weight=1e-3, learning_rate=1e-40).fit(X, huge)
    assert np.ptp(model.predict(X)) > 0  # float64 gradients: the same data grows a split


def test_duplicate_column_names_are_an_error(data):
    # pandas allows them; a dependency's DuplicateError named neither X nor the fix before.
    X, y, qid = data[:3]
    frame = pd.DataFrame(X, columns=["a", "a", *[f"f{j}" for j in range(2, X.shape[1])]])
    with pytest.raises(ValueError, match=r"X has duplicate column names \['a'\]: rename them"):
        _ranker("queryrmse").fit(frame, y, qid=qid)


def test_a_huge_lambdamart_sigma_is_named_not_blamed_on_a_tiny_one():
    X, y, qid = make_ranking(20, n_features=3, random_state=0)
    with pytest.raises(ValueError, match=r"first iteration.*LambdaMART's hessians as sigma \*\* 2"):
        est.LambdaMARTRanker(sigma=1e300, n_estimators=2, n_jobs=1).fit(X, y, qid=qid)


@pytest.mark.parametrize("backend, key", [("numba", "min_split_gain"), ("xgboost", "gamma"),
                                          ("lightgbm", "min_gain_to_split")])
def test_no_split_under_a_minimum_split_gain_names_it(backend, key):
    """The warning advised only min_child_weight when a minimum split gain in
    backend_params was what stopped every split."""
    if backend not in BACKENDS_UNDER_TEST:
        pytest.skip(f"{backend} not installed")
    X, y, qid = make_ranking(30, n_features=4, random_state=0)
    with pytest.warns(UserWarning, match=rf"grew no split.*lower min_child_weight or backend_params' {key}\."):
        est.QueryRMSERanker(n_estimators=2, n_jobs=1, backend=backend, backend_params={key: 1e30}).fit(X, y, qid=qid)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_no_split_warning_names_weights_and_subsample(backend):
    """The warning blamed min_child_weight (even at 0) or the metric when the
    cause was queries of weight 0 or a subsample of one row."""
    rng = np.random.default_rng(0)
    X, y, qid = rng.normal(size=(60, 2)), rng.integers(0, 3, 60).astype(float), np.repeat(np.arange(12), 5)
    weight = np.zeros(60)
    weight[:5] = 1.0
    y_one = y.copy()
    y_one[:5] = 1.0  # the only query of positive weight has one label
    kw = dict(n_estimators=2, n_jobs=1, backend=backend, random_state=0)
    with pytest.warns(UserWarning, match=r"Only queries of sample_weight 0 have documents with different labels"):
        est.LambdaMARTRanker(**kw).fit(X, y_one, qid=qid, sample_weight=weight)
    if backend == "lightgbm":
        return  # it bags two rows of this data at least, and they split
    for min_child_weight in (1.0, 0.0):
        with pytest.warns(UserWarning, match=r"grew no split.*raise subsample"):
            est.QueryRMSERanker(**kw, subsample=1e-9, min_child_weight=min_child_weight).fit(X, y, qid=qid)


def test_metric_settings_no_metric_reads_are_refused():
    """relevance_threshold beside NDCG (objective and eval metric), err_mapping
    without ERR, YetiLoss's decay, gain without NDCG or DCG: ignored before. Read by an eval metric, or
    by a callable one (which may read anything), they are taken."""
    X, y, qid = make_ranking(30, n_features=4, random_state=0)
    kw = dict(n_estimators=2, n_jobs=1, random_state=0)
    for ranker, param in ((est.LambdaMARTRanker(relevance_threshold=1.5, **kw), "relevance_threshold"),
                          (est.StochasticRankRanker(err_mapping="chapelle", **kw), "err_mapping"),
                          (est.YetiRanker(metric="ndcg", decay=0.5, **kw), "decay"),
                          (est.YetiRanker(metric="mrr", gain="linear", eval_metric="mrr", **kw), "gain")):
        with pytest.raises(ValueError, match=rf"{param}=.* is read by no metric here: the objective optimises"):
            ranker.fit(X, y, qid=qid)
    est.LambdaMARTRanker(relevance_threshold=1.5, eval_metric=["ndcg@10", "mrr@10"], **kw).fit(X, y, qid=qid)
    est.LambdaMARTRanker(metric="map", relevance_threshold=1.5, **kw).fit(X, y, qid=qid)
    est.YetiRanker(decay=0.5, **kw).fit(X, y, qid=qid)  # the classic weights read it
    est.YetiRanker(metric="mrr", gain="linear", **kw).fit(X, y, qid=qid)  # the default score, NDCG@10, reads it
    est.LambdaMARTRanker(relevance_threshold=1.5, eval_metric=lambda y, s: 0.0, **kw).fit(X, y, qid=qid)
    # The generic Ranker's objective holds them: the same rule.
    with pytest.raises(ValueError, match=r"Ranker's objective: relevance_threshold=1.5 is read by no metric here"):
        est.Ranker(LambdaMART(relevance_threshold=1.5), **kw).fit(X, y, qid=qid)
    est.Ranker(LambdaMART(relevance_threshold=1.5), eval_metric=["ndcg@10", "mrr@10"], **kw).fit(X, y, qid=qid)


def test_numba_gradients_whose_sums_square_past_float64_are_an_error():
    """Labels of 1e155 gave a model of two distinct scores without a word
    (the split gains overflowed); 1e200 blamed min_child_weight."""
    X, y, qid = make_ranking(30, n_features=4, random_state=0)
    for scale in (1e155, 1e200):
        with pytest.raises(ValueError, match=r"gradients of iteration 0 reach .*split gains square them.*"
                                             r"divide them by a constant"):
            est.QueryRMSERanker(n_estimators=3, n_jobs=1, backend="numba").fit(X, y * scale, qid=qid)
    # Up to 1e148 the model is the model of the labels at scale 1, scaled.
    params = dict(n_estimators=3, n_jobs=1, backend="numba", random_state=0)
    reference = est.QueryRMSERanker(**params).fit(X, y, qid=qid).predict(X)
    model = est.QueryRMSERanker(**params).fit(X, y * 1e148, qid=qid)
    np.testing.assert_allclose(model.predict(X) / 1e148, reference, rtol=1e-9)


def test_score_takes_group_sizes_as_fit_does():
    """LightGBM's group= worked in fit but not in score."""
    X, y, qid = make_ranking(30, random_state=0)
    sizes = np.unique(qid, return_counts=True)[1]  # make_ranking's rows come query by query, qid sorted
    ranker = est.LambdaMARTRanker(n_estimators=5).fit(X, y, group=sizes)
    assert ranker.score(X, y, group=sizes) == ranker.score(X, y, qid=qid)
    with pytest.raises(ValueError, match="group"):
        ranker.score(X, y, group=sizes[:-1])


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_eval_sample_weight_weighs_the_eval_metrics_as_score_does(data, backend):
    """eval_sample_weight (LightGBM's name): the eval sets' metrics, early
    stopping and best_score_ are query-weighted means, as score(sample_weight=);
    the training entry is weighted by sample_weight. They were unweighted."""
    X, y, qid, Xt, yt, qt = data
    rng = np.random.default_rng(0)
    queries = np.unique(qt)
    by_query = rng.uniform(0.0, 3.0, queries.size)
    by_query[:5] = 0.0
    wt = by_query[np.searchsorted(queries, qt)]
    w = rng.uniform(0.5, 2.0, y.size)
    model = _ranker("lambdamart", backend, n_estimators=40, early_stopping_rounds=5).fit(
        X, y, qid=qid, sample_weight=w, eval_set=[(X, y), (Xt, yt)], eval_qid=[qid, qt],
        eval_sample_weight=[None, wt])
    history = model.evals_result_["validation_1"]["ndcg@10"]
    assert model.best_score_ == max(history) and model.best_iteration_ == int(np.argmax(history))
    assert model.score(Xt, yt, qid=qt, sample_weight=wt) == pytest.approx(model.best_score_, rel=0, abs=1e-12)
    assert model.score(Xt, yt, qid=qt) != pytest.approx(model.best_score_, rel=0, abs=1e-6)
    training = model.evals_result_["training"]["ndcg@10"]
    full = _ranker("lambdamart", backend, n_estimators=len(training)).fit(X, y, qid=qid, sample_weight=w)
    assert full.score(X, y, qid=qid, sample_weight=w) == pytest.approx(training[-1], rel=0, abs=1e-12)
    # The training entry with its own weights given again is the same entry.
    again = _ranker("lambdamart", backend, n_estimators=2).fit(
        X, y, qid=qid, sample_weight=w, eval_set=[(X, y)], eval_qid=[qid], eval_sample_weight=[w])
    assert list(again.evals_result_) == ["training"]


def test_eval_sample_weight_errors(data):
    X, y, qid, Xt, yt, qt = data
    ranker = est.LambdaMARTRanker(n_estimators=2)
    with pytest.raises(ValueError, match=r"eval_sample_weight has 2 entries but eval_set has 1"):
        ranker.fit(X, y, qid=qid, eval_set=[(Xt, yt)], eval_qid=[qt], eval_sample_weight=[None, None])
    with pytest.raises(ValueError, match=r"eval_sample_weight must be a list with one array per eval set"):
        ranker.fit(X, y, qid=qid, eval_set=[(Xt, yt)], eval_qid=[qt], eval_sample_weight=np.ones(yt.size))
    with pytest.raises(ValueError, match=r"eval_sample_weight\[0\] must be None or the sample_weight object"):
        ranker.fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid], eval_sample_weight=[np.ones(y.size)])
    with pytest.raises(ValueError, match="eval_sample_weight was given without eval_set"):
        ranker.fit(X, y, qid=qid, eval_sample_weight=[np.ones(yt.size)])
    with pytest.raises(ValueError, match="sample_weight"):
        ranker.fit(X, y, qid=qid, eval_set=[(Xt, yt)], eval_qid=[qt], eval_sample_weight=[-np.ones(yt.size)])


def test_submodules_load_on_first_use_after_import_rankkit():
    """``import rankkit`` then ``rankkit.metrics...``: an AttributeError before
    (only ``rankkit.callback`` was loaded by the rankers), in a fresh process."""
    import subprocess
    import sys

    code = (
        "import sys, rankkit\n"
        "assert 'rankkit.metrics' not in sys.modules and 'rankkit.trec' not in sys.modules\n"
        "print(rankkit.metrics.ndcg_score([1, 0], [0.2, 0.1], qid=[0, 0]), rankkit.trec.read_run.__name__)\n"
        "print(all(m in dir(rankkit) for m in ('metrics', 'objectives', 'model_selection', 'datasets')))\n"
        "try:\n    rankkit.not_a_module\nexcept AttributeError as error:\n    print(error)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["1.0 read_run", "True", "module 'rankkit' has no attribute 'not_a_module'"]


def test_default_fits_are_the_same_model():
    """random_state=0 by default, as XGBoost, LightGBM and CatBoost: the
    default learner's split noise gave another model on every fit."""
    X, y, qid = make_ranking(40, random_state=0)
    first, second = (est.LambdaMARTRanker(n_estimators=10).fit(X, y, qid=qid).predict(X) for _ in range(2))
    np.testing.assert_array_equal(first, second)
    fresh = [est.LambdaMARTRanker(n_estimators=10, random_state=None).fit(X, y, qid=qid).predict(X) for _ in range(2)]
    assert not np.array_equal(*fresh)


@pytest.mark.parametrize("keyword, names, on_dask", [
    ("eval_at", "eval_metric=['ndcg@5', 'ndcg@10']", None),
    ("eval_metric", "set_params(eval_metric=", None),
    ("callbacks", "TrainingCallback", "run no callbacks, as their iterations run on the workers"),
    ("init_score", "starts from scores of 0", None),
    ("base_margin", "starts from scores of 0", None),
    ("group_id", "qid=", None),
    ("xgb_model", "does not continue", None),
    ("categorical_feature", "'category' dtype", "numeric columns only"),
    ("sample_weight_eval_set", "eval_sample_weight=", None),
])
def test_fit_keywords_of_other_libraries_say_where_rankkit_takes_them(data, keyword, names, on_dask):
    """XGBoost's, LightGBM's and CatBoost's fit keywords that rankkit's fit does
    not take: a TypeError saying where rankkit takes them (where rankkit.dask
    differs, where it does), before any training, with fit's own signature
    kept (scikit-learn reads it for metadata routing)."""
    import inspect

    from rankkit.dask import DaskLambdaMARTRanker

    X, y, qid = data[:3]
    for ranker, says in ((est.LambdaMARTRanker(n_estimators=2), names),
                         (DaskLambdaMARTRanker(n_estimators=2), on_dask or names)):
        with pytest.raises(TypeError, match=rf"fit\(\) got an unexpected keyword argument '{keyword}': .*"
                                            rf"{re.escape(says)}"):
            ranker.fit(X, y, qid=qid, **{keyword: None})
        assert not hasattr(ranker, "booster_")
        assert "kwargs" not in str(inspect.signature(type(ranker).fit))
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'eval_st'$"):  # a typo: Python's own message
        est.LambdaMARTRanker(n_estimators=2).fit(X, y, qid=qid, eval_st=None)
