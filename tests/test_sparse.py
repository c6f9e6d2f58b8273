"""Sparse input means what it means in scikit-learn, on every backend.

An entry absent from a sparse matrix is the value 0 and NaN is a missing
value, as in a dense array. Each backend is trained on the same data dense,
as CSR without the zeros, as CSR with the zeros stored, as CSC, and as
CSR and CSC storing every entry twice (halves, which SciPy sums), with
NaNs among the values and eval sets in the same format; what must be
identical: the engine's model bit for bit (XGBoost's JSON, LightGBM's model
string, the numba engine's tree arrays), the eval scores tracked during
training, and the predictions on dense and on sparse rows.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from rankkit import LambdaMARTRanker, QueryRMSERanker

from ._backends import BACKENDS_UNDER_TEST, installed


def _data(n_queries, seed):
    """Features with many zeros (zeros carry signal: 0 < small positive values
    and 0 > negative ones) and a few NaNs."""
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(n_queries), 12)
    n = qid.size
    X = rng.normal(size=(n, 6))
    X[rng.random((n, 6)) < 0.5] = 0.0
    X[rng.random((n, 6)) < 0.05] = np.nan
    score = np.nan_to_num(X[:, 0]) + (X[:, 1] == 0) - 0.5 * (X[:, 2] > 0) + 0.3 * rng.normal(size=n)
    y = np.digitize(score, [0.0, 1.0, 2.0]).astype(np.float64)
    return X, y, qid


@pytest.fixture(scope="module")
def data():
    return _data(60, 0), _data(20, 1)


def _with_stored_zeros(X):
    """CSR holding every entry, zeros included (explicitly stored)."""
    rows, cols = np.nonzero(np.ones_like(X))
    M = sp.csr_matrix((X[rows, cols], (rows, cols)), shape=X.shape)
    assert M.nnz == X.size and np.count_nonzero(M.data == 0) > 0
    return M


def _csr_with_duplicates(X):
    """CSR storing each entry twice, as two halves: SciPy (and scikit-learn)
    read duplicate entries as their sum."""
    C = sp.csr_matrix(X)
    M = sp.csr_matrix((np.repeat(C.data / 2, 2), np.repeat(C.indices, 2), 2 * C.indptr), shape=X.shape)
    assert not M.has_canonical_format and np.array_equal(M.toarray(), X, equal_nan=True)
    return M


FORMATS = {
    "csr": sp.csr_matrix,  # zeros absent, NaN stored
    "csr_stored_zeros": _with_stored_zeros,
    "csc": sp.csc_matrix,
    "csr_duplicates": _csr_with_duplicates,
    "csc_duplicates": lambda X: _csr_with_duplicates(X.T).T,  # the transpose keeps the arrays: CSC
}


def _engine_model(ranker):
    """The fitted model as bytes, in the engine's own form."""
    booster = ranker.booster_
    if ranker.backend == "xgboost":
        return bytes(booster.save_raw("json"))
    if ranker.backend == "lightgbm":
        return booster.model_to_string().encode()
    return b"".join(t.tobytes() for t in booster.trees)


def _fit(backend, X, y, qid, Xe, ye, qe):
    ranker = LambdaMARTRanker(metric="ndcg@5", n_estimators=10, max_depth=3, learning_rate=0.3,
                              min_child_weight=1e-3, model_shrink_rate=0.1, n_jobs=1, random_state=0,
                              backend=backend)
    return ranker.fit(X, y, qid=qid, eval_set=[(Xe, ye)], eval_qid=[qe])


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_sparse_trains_the_model_dense_trains(data, backend, fmt):
    (X, y, qid), (Xt, yt, qt) = data
    assert sp.csr_matrix(X).nnz < X.size  # the zeros really are absent from the plain CSR
    dense = _fit(backend, X, y, qid, Xt, yt, qt)
    to_sparse = FORMATS[fmt]
    sparse = _fit(backend, to_sparse(X), y, qid, to_sparse(Xt), yt, qt)
    assert _engine_model(sparse) == _engine_model(dense)
    assert sparse.evals_result_ == dense.evals_result_
    expected = dense.predict(Xt)
    np.testing.assert_array_equal(sparse.predict(Xt), expected)
    for other in FORMATS.values():
        np.testing.assert_array_equal(dense.predict(other(Xt)), expected)


@pytest.mark.skipif(not installed("xgboost"), reason="xgboost not installed")
def test_xgboost_reads_absent_entries_as_zeros_not_missing(data):
    """The backend on CSR equals plain XGBoost on the dense array, and not
    plain XGBoost on the CSR (where XGBoost reads absent entries as missing):
    the data tell the two meanings apart."""
    import xgboost

    from rankkit.objectives import QueryRMSE

    (X, y, qid), _ = data
    ranker = QueryRMSERanker(backend="xgboost", n_estimators=8, learning_rate=0.1, max_depth=3, n_jobs=1)
    ranker.fit(sp.csr_matrix(X), y, qid=qid)
    params = {"tree_method": "hist", "eta": 0.1, "max_depth": 3, "lambda": 3.0, "base_score": 0.0, "nthread": 1,
              "disable_default_eval_metric": 1}

    def plain(data):
        return xgboost.train(params, xgboost.DMatrix(data, y, qid=qid), 8, obj=QueryRMSE())

    on_dense, on_csr = plain(X), plain(sp.csr_matrix(X))
    np.testing.assert_array_equal(ranker.predict(X), on_dense.inplace_predict(X))
    assert not np.array_equal(on_csr.inplace_predict(sp.csr_matrix(X)), on_dense.inplace_predict(X))
