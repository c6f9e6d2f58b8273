"""The engines' own datasets, read at the engine boundary.

An objective is also a custom-objective callable for the engines' own APIs
(:meth:`rankkit.objectives.RankingObjective.__call__`): XGBoost's
``obj(preds, dtrain)``, LightGBM's ``obj(preds, dataset)`` and
``LGBMRanker``'s ``obj(y_true, y_pred, weight, group)``. What each engine
hands over is read here, not in the objective (which knows queries, never
engines): :class:`EngineInputs` turns it into ``(labels, group_ptr, row
weights or None)``, by duck typing (an ``xgboost.DMatrix`` has
``get_uint_info``, a ``lightgbm.Dataset`` ``get_group``), so neither engine
is imported.

Checking the labels (exp-gain limits, ERR's scale) costs more than reading
them, so the checked result is kept between calls; it is reused only while
the engine's labels, query boundaries and weights are equal to those it was
made from, so ``dtrain.set_label(...)`` between two calls is seen (the same
dataset object, new labels).
"""

from __future__ import annotations

import numpy as np

from .._groups import group_ptr_from_sizes
from .._validation import check_sample_weight

__all__ = ["EngineInputs", "row_weights"]


def row_weights(w, group_ptr, n_rows):
    """Per-row weights from an engine's weights: one per row, or one per query
    (XGBoost's convention for ranking), repeated over the query's rows."""
    w = np.asarray(w, dtype=np.float64).ravel()
    n_queries = group_ptr.shape[0] - 1
    if w.shape[0] == n_queries and n_queries != n_rows:
        w = np.repeat(w, np.diff(group_ptr))
    return check_sample_weight(w, n_rows, name="weight", positive=True)


def _raw_engine_data(data):
    """``(labels, query boundaries, weights)`` as the engine's dataset holds them."""
    if hasattr(data, "get_uint_info"):  # xgboost.DMatrix
        ptr = np.asarray(data.get_uint_info("group_ptr"), dtype=np.int64)
        if ptr.size == 0:
            raise ValueError(
                "The DMatrix has no query groups: build it with DMatrix(X, y, qid=qid) "
                "(rows grouped by query)."
            )
    elif hasattr(data, "get_group"):  # lightgbm.Dataset
        sizes = data.get_group()
        if sizes is None:
            raise ValueError("The LightGBM Dataset has no query groups: build it with group=sizes.")
        ptr = np.asarray(sizes)
    else:
        raise TypeError(
            f"Expected an xgboost.DMatrix or lightgbm.Dataset, got {type(data).__name__}; "
            "LGBMRanker's form is obj(y_true, y_pred, weight, group)."
        )
    return data.get_label(), ptr, data.get_weight()


def _same(a, b):
    if a is None or b is None:
        return a is b
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a, b)


class EngineInputs:
    """``(labels, group_ptr, row weights or None)`` of an engine's call,
    kept while the engine's inputs stay equal. The labels are checked by
    ``check_labels`` on every call, kept or not: the check depends on the
    objective's parameters, which may change between calls (``set_params``)."""

    def __init__(self):
        self._raw = None  # (kind, labels, groups, weights) the result was made from
        self._result = None

    def _hit(self, raw, check_labels):
        if self._raw is None or self._raw[0] != raw[0]:
            return None
        if all(_same(a, b) for a, b in zip(self._raw[1:], raw[1:])):
            check_labels(self._result[0])
            return self._result
        return None

    def _keep(self, raw, result):
        # Copies: an engine may hand over its own buffers and change them in place.
        self._raw = (raw[0], *(None if v is None else np.array(v, copy=True) for v in raw[1:]))
        self._result = result
        return result

    def engine_data(self, data, check_labels):
        """Of a DMatrix or Dataset (``obj(preds, data)``)."""
        raw = ("engine", *_raw_engine_data(data))
        hit = self._hit(raw, check_labels)
        if hit is not None:
            return hit
        labels, ptr, w = raw[1:]
        if not hasattr(data, "get_uint_info"):  # LightGBM: query sizes
            ptr = group_ptr_from_sizes(ptr)
        y = check_labels(np.asarray(labels, dtype=np.float64))
        w = None if w is None or len(w) == 0 else row_weights(w, ptr, y.shape[0])
        return self._keep(raw, (y, ptr, w))

    def sklearn_data(self, y_true, weight, group, check_labels):
        """Of ``LGBMRanker``'s call ``obj(y_true, y_pred, weight, group)``."""
        raw = ("sklearn", y_true, group, weight)
        hit = self._hit(raw, check_labels)
        if hit is not None:
            return hit
        if group is None:
            raise ValueError(
                "A ranking objective needs query groups, and this call passed none. With LightGBM use "
                "lightgbm.LGBMRanker(objective=obj).fit(X, y, group=sizes); with XGBoost use "
                "xgboost.train(params, xgboost.DMatrix(X, y, qid=qid), obj=obj) (XGBoost's scikit-learn "
                "estimators do not pass query groups to a callable objective); or call "
                "obj(y_true, y_pred, weight, group)."
            )
        y = check_labels(y_true)
        ptr = group_ptr_from_sizes(group)
        if ptr[-1] != y.shape[0]:
            raise ValueError(f"group sizes sum to {ptr[-1]} but there are {y.shape[0]} labels.")
        w = check_sample_weight(weight, y.shape[0], name="weight", positive=True)
        return self._keep(raw, (y, ptr, w))
