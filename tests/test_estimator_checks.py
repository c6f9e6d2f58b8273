"""scikit-learn's estimator checks on every ranker.

The checks call ``fit(X, y)`` without query ids. A ranker cannot rank without
knowing which rows belong together, and guessing (e.g. "all rows are one
query") would silently train the wrong model, so rankkit raises a clear
error. That makes the checks that fit without ``qid`` inapplicable to the real
classes; they are listed in :data:`NEEDS_QID` with the reason.

To still exercise everything else those checks test (pickling, idempotence,
dtype handling, sparse input, n_features_in_, ...), the same checks also run
on thin test-only subclasses whose only difference is that a missing ``qid``
means one query holding every row. Only the query-id policy differs; every
other line of the ranker is the one users get.
"""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import rankkit._estimators as est

from ._backends import installed_backends

RANKER_CLASSES = [
    est.Ranker,
    est.QueryRMSERanker,
    est.LambdaMARTRanker,
    est.StochasticRankRanker,
    est.YetiRanker,
    est.XENDCGRanker,
]

_NO_QID = "fit(X, y) without query ids raises: a ranker needs qid= or a query column"

# Checks that fit without query ids: they cannot apply to the real classes.
NEEDS_QID = {
    name: _NO_QID
    for name in [
        "check_fit_score_takes_y",
        "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters",
        "check_estimators_fit_returns_self",
        "check_readonly_memmap_input",
        "check_n_features_in_after_fitting",
        "check_positive_only_tag_during_fit",
        "check_estimators_dtypes",
        "check_sample_weights_pandas_series",
        "check_sample_weights_not_an_array",
        "check_sample_weights_list",
        "check_sample_weights_shape",
        "check_sample_weights_not_overwritten",
        "check_sample_weight_equivalence_on_dense_data",
        "check_sample_weight_equivalence_on_sparse_data",
        "check_dtype_object",
        "check_pipeline_consistency",
        "check_estimator_sparse_tag",
        "check_estimator_sparse_array",
        "check_estimator_sparse_matrix",
        "check_estimators_pickle",
        "check_f_contiguous_array_estimator",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_fit2d_1sample",
        "check_fit2d_1feature",
        "check_dict_unchanged",
        "check_fit_idempotent",
        "check_fit_check_is_fitted",
        "check_n_features_in",
        "check_fit2d_predict1d",
    ]
}

# Failures that remain with query ids supplied, and why they are right for rankers.
_WEIGHT_REASON = (
    "ranking losses are functions of whole lists: a weight scales one document's gradient, "
    "while repeating the document adds it to its query's list (new pairs, a different "
    "normalisation), so weighting cannot equal repetition"
)
RANKING_SEMANTICS = {
    "check_sample_weight_equivalence_on_dense_data": _WEIGHT_REASON,
    "check_sample_weight_equivalence_on_sparse_data": _WEIGHT_REASON,
}


def _one_query_class(cls):
    """``cls`` with "no qid means one query of all rows" (test-only policy)."""

    def _default_qid(self, X, n_rows, *, where, qid_name):
        return np.zeros(n_rows, dtype=np.int64)

    name = f"OneQuery{cls.__name__}"
    sub = type(name, (cls,), {"_default_qid": _default_qid, "__module__": __name__, "__doc__": cls.__doc__})
    # Module-level name, so the checks can pickle instances.
    globals()[name] = sub
    return sub


def _small(cls, backend="xgboost"):
    return cls(n_estimators=3, max_depth=3, n_jobs=1, random_state=0, backend=backend)


def _expected(estimator):
    if type(estimator) in RANKER_CLASSES:
        return NEEDS_QID
    return RANKING_SEMANTICS


ONE_QUERY_CLASSES = [_one_query_class(cls) for cls in RANKER_CLASSES]
ONE_QUERY_OF = dict(zip(RANKER_CLASSES, ONE_QUERY_CLASSES))


def _other_backends():
    """The checks on the one-query classes again, on every other installed backend."""
    out = []
    for name in installed_backends():
        if name == "xgboost":
            continue
        # QueryRMSE and StochasticRank (hessian 1): with 3 small trees they split,
        # where LambdaMART's small hessians would leave a constant model.
        out += [_small(ONE_QUERY_OF[est.QueryRMSERanker], name), _small(ONE_QUERY_OF[est.StochasticRankRanker], name)]
    return out


@parametrize_with_checks(
    [_small(cls) for cls in RANKER_CLASSES] + [_small(cls) for cls in ONE_QUERY_CLASSES] + _other_backends(),
    expected_failed_checks=_expected,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_one_query_subclass_differs_only_in_qid_policy():
    # The test-only subclasses must not weaken the real policy: the real class raises.
    X = np.random.RandomState(0).rand(10, 3)
    y = np.arange(10) % 3
    with pytest.raises(ValueError, match="Missing query ids"):
        _small(est.QueryRMSERanker).fit(X, y)
    sub = _small(ONE_QUERY_OF[est.QueryRMSERanker]).fit(X, y)
    ref = _small(est.QueryRMSERanker).fit(X, y, qid=np.zeros(10))
    np.testing.assert_array_equal(sub.predict(X), ref.predict(X))
