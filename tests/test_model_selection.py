import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, ShuffleSplit, cross_val_score, cross_validate

from rankkit.datasets import make_ranking
from rankkit.model_selection import QueryKFold, QueryShuffleSplit, query_train_test_split


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=37, n_features=5, min_docs=1, max_docs=25, random_state=3)


def _check_partition(splits, qid, n_splits=None):
    n = qid.shape[0]
    seen_test = np.zeros(n, dtype=np.int64)
    for train, test in splits:
        assert train.dtype.kind == "i" and test.dtype.kind == "i"
        assert np.intersect1d(train, test).size == 0
        # A query never straddles train and test.
        assert not set(qid[train]) & set(qid[test])
        assert len(test) > 0
        seen_test[test] += 1
        if n_splits is not None:  # K-fold: train is exactly the complement
            assert np.array_equal(np.sort(np.r_[train, test]), np.arange(n))
    return seen_test


@pytest.mark.parametrize("shuffle", [False, True])
def test_query_kfold_partitions_queries(data, shuffle):
    X, _, qid = data
    cv = QueryKFold(n_splits=4, shuffle=shuffle, random_state=0 if shuffle else None)
    seen = _check_partition(cv.split(X, qid=qid), qid, n_splits=4)
    assert np.all(seen == 1)  # every row tested exactly once
    assert cv.get_n_splits(X, qid=qid) == 4


def test_query_kfold_balances_documents(data):
    X, _, qid = data
    sizes = np.bincount(qid)
    for shuffle, seed in ((False, None), (True, 1), (True, 2)):
        folds = [len(test) for _, test in QueryKFold(5, shuffle=shuffle, random_state=seed).split(X, qid=qid)]
        # Cut where the running count crosses i * n / k: each fold is off by
        # less than two queries' worth of documents.
        assert max(abs(f - X.shape[0] / 5) for f in folds) <= 2 * sizes.max()


def test_query_kfold_one_query_per_fold_minimum():
    # A huge first query must not leave later folds empty.
    qid = np.r_[np.zeros(100, dtype=int), np.arange(1, 4)]
    X = np.zeros((qid.shape[0], 1))
    folds = [test for _, test in QueryKFold(4).split(X, qid=qid)]
    assert [len(np.unique(qid[t])) for t in folds] == [1, 1, 1, 1]


def test_query_kfold_unshuffled_keeps_query_order():
    qid = np.array([5, 5, 9, 9, 2, 2])
    folds = [test.tolist() for _, test in QueryKFold(3).split(np.zeros((6, 1)), qid=qid)]
    assert folds == [[0, 1], [2, 3], [4, 5]]


def test_query_kfold_determinism(data):
    X, _, qid = data
    a = [t.tolist() for _, t in QueryKFold(5, shuffle=True, random_state=11).split(X, qid=qid)]
    b = [t.tolist() for _, t in QueryKFold(5, shuffle=True, random_state=11).split(X, qid=qid)]
    c = [t.tolist() for _, t in QueryKFold(5, shuffle=True, random_state=12).split(X, qid=qid)]
    assert a == b and a != c


def test_query_ids_from_groups_qid_and_column_agree(data):
    X, _, qid = data
    frame = pd.DataFrame(X).assign(qid=qid)
    cv = QueryKFold(3, shuffle=True, random_state=0)
    via_qid = [t.tolist() for _, t in cv.split(X, qid=qid)]
    via_groups = [t.tolist() for _, t in cv.split(X, groups=qid)]
    via_column = [t.tolist() for _, t in cv.split(frame)]
    # String ids work too (factorised, same first-appearance order).
    via_str = [t.tolist() for _, t in cv.split(X, qid=np.array([f"q{q}" for q in qid]))]
    assert via_qid == via_groups == via_column == via_str


def test_unsorted_rows(data):
    X, _, qid = data
    perm = np.random.default_rng(0).permutation(qid.shape[0])
    q = qid[perm]
    seen = _check_partition(QueryKFold(4).split(X[perm], qid=q), q, n_splits=4)
    assert np.all(seen == 1)


def test_missing_and_duplicate_query_ids(data):
    X, _, qid = data
    for cv in (QueryKFold(3), QueryShuffleSplit(2)):
        with pytest.raises(ValueError, match="Missing query ids"):
            next(cv.split(X))
        with pytest.raises(ValueError, match="more than once"):
            next(cv.split(X, groups=qid, qid=qid))
        with pytest.raises(ValueError, match="more than once"):
            next(cv.split(pd.DataFrame(X).assign(qid=qid), qid=qid))
        with pytest.raises(ValueError, match="entries but there are"):
            next(cv.split(X, qid=qid[:-1]))


def test_query_kfold_parameter_errors(data):
    X, _, qid = data
    with pytest.raises(ValueError, match="larger than the number of queries"):
        next(QueryKFold(38).split(X, qid=qid))
    with pytest.raises(ValueError, match="n_splits"):
        next(QueryKFold(1).split(X, qid=qid))
    with pytest.raises(ValueError, match="random_state"):
        next(QueryKFold(3, random_state=0).split(X, qid=qid))


def test_query_shuffle_split(data):
    X, _, qid = data
    cv = QueryShuffleSplit(n_splits=6, test_size=0.25, random_state=0)
    splits = list(cv.split(X, qid=qid))
    assert len(splits) == cv.get_n_splits() == 6
    _check_partition(splits, qid)
    for train, test in splits:
        assert len(np.unique(qid[test])) == 10  # ceil(0.25 * 37) queries
        assert len(np.unique(qid[train])) == 27
    again = list(QueryShuffleSplit(n_splits=6, test_size=0.25, random_state=0).split(X, qid=qid))
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(splits, again))
    assert len({tuple(t) for _, t in splits}) > 1
    small = next(QueryShuffleSplit(1, test_size=3, train_size=5, random_state=0).split(X, qid=qid))
    assert len(np.unique(qid[small[0]])) == 5 and len(np.unique(qid[small[1]])) == 3


def test_split_sizes_count_queries():
    # 20 rows in 5 queries: sizes are numbers of queries, and the errors say so
    # (scikit-learn's own check, fed the query count, speaks of samples).
    qid = np.repeat(np.arange(5), 4)
    X = np.zeros((20, 2))
    for kwargs in (dict(test_size=10), dict(test_size=0.2, train_size=5), dict(test_size=3, train_size=3),
                   dict(test_size=0.9, train_size=0.2)):
        message = r"the samples here are the data's 5 queries, and an int test_size or train_size is a number"
        with pytest.raises(ValueError, match=message):
            query_train_test_split(X, qid=qid, **kwargs)
        with pytest.raises(ValueError, match=message):
            next(QueryShuffleSplit(2, **kwargs).split(X, qid=qid))


@pytest.mark.parametrize("n_splits", [0, -1, 1.0])
def test_query_shuffle_split_n_splits(data, n_splits):
    X, _, qid = data
    with pytest.raises(ValueError, match=rf"n_splits must be an int >= 1, got {n_splits}"):
        next(QueryShuffleSplit(n_splits).split(X, qid=qid))
    with pytest.raises(ValueError, match="n_splits must be an int >= 1"):
        QueryShuffleSplit(n_splits).get_n_splits()
    assert len(list(QueryShuffleSplit(1, random_state=0).split(X, qid=qid))) == 1


def test_query_train_test_split(data):
    X, y, qid = data
    X_tr, X_te, y_tr, y_te, q_tr, q_te = query_train_test_split(X, y, qid=qid, test_size=0.3, random_state=0)
    assert not set(q_tr) & set(q_te)
    assert len(np.unique(q_te)) == 12  # ceil(0.3 * 37)
    assert X_tr.shape[0] + X_te.shape[0] == X.shape[0]
    # Rows keep their relative order: contiguous queries stay contiguous.
    assert np.all(np.diff(q_tr) >= 0) and np.all(np.diff(q_te) >= 0)
    rows = {tuple(r) for r in X_te}
    assert rows == {tuple(r) for r, q in zip(X, qid) if q in set(q_te)}
    again = query_train_test_split(X, y, qid=qid, test_size=0.3, random_state=0)
    assert np.array_equal(again[5], q_te)
    # No shuffling: the last queries in order of appearance go to test.
    *_, q_tr2, q_te2 = query_train_test_split(X, qid=qid, test_size=0.3, shuffle=False)
    assert set(q_te2) == set(range(25, 37))


def test_query_train_test_split_dataframe(data):
    X, y, qid = data
    frame = pd.DataFrame(X, columns=list("abcde")).assign(qid=qid)
    F_tr, F_te, y_tr, y_te, q_tr, q_te = query_train_test_split(frame, pd.Series(y), random_state=1)
    assert isinstance(F_tr, pd.DataFrame) and isinstance(y_te, pd.Series)
    assert np.array_equal(F_te["qid"].to_numpy(), np.asarray(q_te))
    assert not set(F_tr["qid"]) & set(F_te["qid"])
    with pytest.raises(ValueError, match="Missing query ids"):
        query_train_test_split(X, y)
    with pytest.raises(ValueError, match="same number of rows"):
        query_train_test_split(X, y[:-1], qid=qid)


# ---------------------------------------------------------------------------
# Inside scikit-learn's CV tools


def test_pipeline_score_without_routing_names_the_cause(data):
    """Without metadata routing Pipeline.score drops qid= on the way to the
    ranker: the error says so, where it only named GridSearchCV."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from rankkit import LambdaMARTRanker

    X, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(StandardScaler(), LambdaMARTRanker(n_estimators=3, max_depth=2)).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="Pipeline.score.*scikit-learn drops qid= on the way"):
        pipe.score(X, y, qid=qid)


class _SeenQueries(BaseEstimator, RegressorMixin):
    """Ridge that records the query ids it was trained on, and drops a qid column."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        if isinstance(X, pd.DataFrame):
            self.train_qids_ = set(X["qid"])
            X = X.drop(columns="qid").to_numpy()
        self.model_ = Ridge(alpha=self.alpha).fit(X, y)
        return self

    def predict(self, X):
        if isinstance(X, pd.DataFrame):
            self.test_qids_ = set(X["qid"])
            X = X.drop(columns="qid").to_numpy()
        return self.model_.predict(X)


def _overlap_score(est, X, y):
    """A scorer whose value is the number of queries seen in both train and test."""
    est.predict(X)
    return float(len(est.train_qids_ & est.test_qids_))


def test_cross_val_score_with_groups(data):
    X, y, qid = data
    scores = cross_val_score(Ridge(), X, y, groups=qid, cv=QueryKFold(4))
    assert scores.shape == (4,) and np.all(np.isfinite(scores))
    # Same folds as splitting by hand.
    manual = [Ridge().fit(X[tr], y[tr]).score(X[te], y[te]) for tr, te in QueryKFold(4).split(X, groups=qid)]
    assert np.allclose(scores, manual)


def test_cross_validate_with_dataframe_column(data):
    X, y, qid = data
    frame = pd.DataFrame(X).assign(qid=qid)
    frame.columns = frame.columns.astype(str)
    res = cross_validate(_SeenQueries(), frame, y, cv=QueryKFold(3), scoring=_overlap_score)
    assert np.array_equal(res["test_score"], np.zeros(3))
    # The check can fail: a plain KFold cuts queries.
    from sklearn.model_selection import KFold

    res = cross_validate(_SeenQueries(), frame, y, cv=KFold(3), scoring=_overlap_score)
    assert res["test_score"].sum() > 0


def test_grid_search_with_dataframe_column(data):
    X, y, qid = data
    frame = pd.DataFrame(X).assign(qid=qid)
    frame.columns = frame.columns.astype(str)
    search = GridSearchCV(_SeenQueries(), {"alpha": [0.1, 10.0]}, cv=QueryShuffleSplit(3, random_state=0),
                          scoring=_overlap_score).fit(frame, y)
    assert np.all(search.cv_results_["mean_test_score"] == 0)


def test_routing_qid_reaches_splitter(data, routing):
    X, y, qid = data
    assert QueryKFold().get_metadata_routing().split.requests == {"groups": True, "qid": True}
    scores = cross_val_score(Ridge(), X, y, cv=QueryKFold(4), params={"qid": qid})
    manual = [Ridge().fit(X[tr], y[tr]).score(X[te], y[te]) for tr, te in QueryKFold(4).split(X, qid=qid)]
    assert np.allclose(scores, manual)
    res = cross_validate(Ridge(), X, y, cv=QueryKFold(3), params={"qid": qid}, return_indices=True)
    for tr, te in zip(res["indices"]["train"], res["indices"]["test"]):
        assert not set(qid[tr]) & set(qid[te])
    search = GridSearchCV(Ridge(), {"alpha": [0.1, 10.0]}, cv=QueryKFold(3)).fit(X, y, qid=qid)
    assert search.n_splits_ == 3


def test_routing_with_unsorted_rows(data, routing):
    X, y, qid = data
    # Rows out of query order, as after a ShuffleSplit: still whole queries.
    train, _ = next(ShuffleSplit(1, test_size=0.2, random_state=0).split(X))
    Xs, ys, qs = X[train], y[train], qid[train]
    res = cross_validate(Ridge(), Xs, ys, cv=QueryKFold(3, shuffle=True, random_state=0),
                         params={"qid": qs}, return_indices=True)
    for tr, te in zip(res["indices"]["train"], res["indices"]["test"]):
        assert not set(qs[tr]) & set(qs[te])


def test_missing_query_ids_messages(data):
    X, y, qid = data
    frame = pd.DataFrame(X).assign(qid=qid)
    frame.columns = frame.columns.astype(str)
    # cross_validate has no fit (it takes params=, and refuses qid=): the message says so.
    with pytest.raises(ValueError, match="Missing query ids") as error:
        next(QueryKFold(3).split(X))
    assert "cross_validate(..., params={'qid': qid})" in str(error.value)
    assert "fit(X, y, qid=qid) of GridSearchCV/cross_validate" not in str(error.value)
    # qid_col=None reads no column: the messages name the parameter, not a column 'None'.
    for call in (lambda: next(QueryKFold(3, qid_col=None).split(frame)),
                 lambda: next(QueryShuffleSplit(2, qid_col=None).split(frame)),
                 lambda: query_train_test_split(frame, y, qid_col=None)):
        with pytest.raises(ValueError, match="Missing query ids") as error:
            call()
        assert "'None'" not in str(error.value) and "set qid_col to the query column" in str(error.value)


def test_train_size_alone_leaves_the_rest_for_testing():
    # Defaults test_size=0.2 / 0.25 made train_size=0.9 alone an error (0.9 + 0.2 > 1) and
    # train_size=0.5 alone drop a fifth of the queries: scikit-learn's test_size=None is the complement.
    qid = np.repeat(np.arange(10), 3)
    X = np.zeros((30, 2))
    for train_size, n_train in ((0.9, 9), (0.5, 5), (7, 7)):
        train, test = next(QueryShuffleSplit(1, train_size=train_size, random_state=0).split(X, qid=qid))
        assert (len(np.unique(qid[train])), len(np.unique(qid[test]))) == (n_train, 10 - n_train)
        *_, q_train, q_test = query_train_test_split(X, qid=qid, train_size=train_size, random_state=0)
        assert (len(np.unique(q_train)), len(np.unique(q_test))) == (n_train, 10 - n_train)
    # Without either size, the documented defaults: 20% and 25% of the queries (rounded up).
    train, test = next(QueryShuffleSplit(1, random_state=0).split(X, qid=qid))
    assert len(np.unique(qid[test])) == 2 and len(np.unique(qid[train])) == 8
    *_, q_train, q_test = query_train_test_split(X, qid=qid, random_state=0)
    assert len(np.unique(q_test)) == 3 and len(np.unique(q_train)) == 7


def test_query_train_test_split_refuses_qid_given_twice():
    # qid= used to win over the DataFrame's query column silently, so the column's queries
    # (which the split frames keep) were cut across train and test. The splitters refuse it too.
    frame = pd.DataFrame({"qid": np.repeat(np.arange(4), 2), "x": np.arange(8.0)})
    other = np.array([0, 1, 0, 1, 2, 3, 2, 3])
    with pytest.raises(ValueError, match="Query ids given more than once"):
        query_train_test_split(frame, qid=other, test_size=2, random_state=0)
    with pytest.raises(ValueError, match="Query ids given more than once"):
        next(QueryKFold(2).split(frame, qid=other))
    # Either source alone works, and qid_col=None ignores the column.
    train, test, q_train, q_test = query_train_test_split(frame, qid=other, qid_col=None, test_size=2,
                                                          random_state=0)
    assert not set(q_train) & set(q_test)
    train, test = query_train_test_split(frame, test_size=2, random_state=0)[:2]
    assert not set(train["qid"]) & set(test["qid"])


def test_query_kfold_shares_the_rest_evenly_after_a_huge_query():
    # One query of 1,000 documents, then ten of 100: the huge one is a fold,
    # and the other four share the remaining 1,000 documents (250 each up to
    # a query), instead of 100, 100, 400, 400.
    qid = np.repeat(np.arange(11), [1000] + [100] * 10)
    X = np.zeros((qid.shape[0], 1))
    folds = [len(test) for _, test in QueryKFold(5).split(X, qid=qid)]
    assert folds[0] == 1000
    assert sum(folds) == qid.shape[0] and max(folds[1:]) - min(folds[1:]) <= 100
    # ...every fold after it, not only while the even share stays above the first targets
    # (300 then 10 x 30 in 5 folds gave 300 / 80 / 80 / 20 / 120).
    for sizes, k, after in (([300] + [10] * 30, 5, 10), ([200] + [20] * 9, 4, 20), ([100] + [5] * 20, 5, 5)):
        qid = np.repeat(np.arange(len(sizes)), sizes)
        folds = [len(test) for _, test in QueryKFold(k).split(np.zeros((qid.shape[0], 1)), qid=qid)]
        assert folds[0] == sizes[0] and max(folds[1:]) - min(folds[1:]) <= after, folds


def test_query_kfold_a_query_longer_than_a_fold_starts_one():
    # Queries of 5, 5, 50, 5, 5, 5, 5 documents in 3 folds of 26.7: the long
    # query used to end the first fold with the two before it (60 / 10 / 10).
    qid = np.repeat(np.arange(7), [5, 5, 50, 5, 5, 5, 5])
    X = np.zeros((qid.shape[0], 1))
    folds = [np.unique(qid[test]).tolist() for _, test in QueryKFold(3).split(X, qid=qid)]
    assert folds == [[0, 1], [2], [3, 4, 5, 6]]
    qid = np.repeat(np.arange(11), [100] * 3 + [1000] + [100] * 7)
    folds = [len(test) for _, test in QueryKFold(5).split(np.zeros((qid.shape[0], 1)), qid=qid)]
    assert folds[:2] == [300, 1000] and sorted(folds[2:]) == [200, 200, 300]
    # ...but not when the fold is nearer its target with it: 99 / 89, not 2 / 186.
    qid = np.repeat(np.arange(3), [2, 97, 89])
    assert [len(test) for _, test in QueryKFold(2).split(np.zeros((188, 1)), qid=qid)] == [99, 89]


def test_query_kfold_without_long_queries_cuts_at_the_global_targets():
    # The cuts of every fold at i * n / k, as before the rebalancing rule:
    # it only acts once a query has carried the count past a target.
    rng = np.random.default_rng(3)
    sizes = rng.integers(5, 60, 200)
    qid = np.repeat(np.arange(200), sizes)
    X = np.zeros((qid.shape[0], 1))
    for seed in (0, 1, 2):
        cv = QueryKFold(5, shuffle=True, random_state=seed)
        order = np.random.RandomState(seed).permutation(200)
        cum = np.cumsum(sizes[order])
        cuts = np.searchsorted(cum, np.arange(1, 5) * qid.shape[0] / 5, side="left") + 1
        expected = np.split(order, cuts)
        for (_, test), queries in zip(cv.split(X, qid=qid), expected):
            assert np.array_equal(np.unique(qid[test]), np.sort(queries))
