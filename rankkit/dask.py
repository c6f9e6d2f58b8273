"""Rankers that train on a Dask cluster, through ``xgboost.dask``.

``DaskLambdaMARTRanker``, ``DaskStochasticRankRanker``, ``DaskYetiRanker``,
``DaskXENDCGRanker``, ``DaskQueryRMSERanker`` and ``DaskRanker(objective=...)``
take the parameters of their in-memory rankers (derived from them, plus
``client``), fit on dask collections and return dask predictions, the pattern
of ``xgboost.dask`` and LightGBM's Dask estimators::

    from distributed import Client
    from rankkit.dask import DaskLambdaMARTRanker

    client = Client(...)                      # or client=... in the ranker
    df = dask.dataframe.read_parquet(...)     # features, a "qid" column, labels
    model = DaskLambdaMARTRanker(metric="ndcg@10", n_estimators=500)
    model.fit(df.drop(columns="label"), df["label"])
    scores = model.predict(df.drop(columns="label"))   # partitioned like df
    local = model.to_local()                  # a LambdaMARTRanker, pickles

How training works, and why:

1. **Whole queries per partition.** A list-wise gradient needs all the
   documents of a query at once, and ``xgboost.dask.train`` hands the custom
   objective each worker's rows with no regard for queries. So the rows
   (features, label, query id, weight) are first shuffled by a hash of the
   query id, so that each query lives in one partition, and each partition is
   sorted by query, the rows of a query in the caller's order. Rows may arrive
   in any order across partitions.
2. **Queries travel with their rows.** Each row carries its query's place
   ``(partition, query within the partition)`` in the DMatrix's label-bound
   fields (``label_lower_bound``/``label_upper_bound``: float32, exact for
   integers below 2^24, read by XGBoost only for survival objectives). On a
   worker the objective reads the query boundaries from them, whatever
   partitions XGBoost gave that worker and in whatever order, and checks that
   no query is cut.
3. **Randomness independent of the layout.** A random objective keys each
   query's draws by a hash of the query id's value (:mod:`rankkit._random`),
   and every worker seeds iteration ``t`` as the in-memory ranker does, so a
   query gets the same gradients for the same scores on any worker.
4. **Exact global eval metrics.** XGBoost averages a custom metric over
   workers without weights; here each worker sums its queries' metric values,
   the sums and counts are all-reduced (``xgboost.collective``), and every
   worker reports the exact mean over all queries. Early stopping follows the
   in-memory rule (strict improvement on the last eval set).
5. **Exact SGLB.** With ``model_shrink_rate > 0`` each worker tracks the
   shrunk model on its own rows (training and eval) from XGBoost's margins;
   the driver folds the shrink factors into the leaves once, as the in-memory
   XGBoost backend does, so the saved model predicts what training used.

Only ``backend="xgboost"`` trains here. With ``sample_weight``, XGBoost also
weights its quantile sketch (the bins) by the weights, which the in-memory
ranker does not. Within a query, documents tied on score and label take the
caller's row order (as in memory); across partitions XGBoost sums histograms
in a layout-dependent order, so models on different layouts agree up to
floating-point rounding, not bit for bit.
"""

from __future__ import annotations

import inspect
import json

import numpy as np

try:
    import dask
    import dask.array as da
    import dask.dataframe as dd
    import distributed
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "rankkit.dask needs dask[dataframe] and distributed: pip install 'rankkit[dask]'."
    ) from error

import pandas as pd
import xgboost
import xgboost.dask as dxgb
from sklearn.base import _fit_context
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted
from xgboost import collective
from xgboost.callback import TrainingCallback

from . import _estimators
from ._estimators import (
    BaseRanker,
    _EvalMonitor,
    _iteration_seed,
    _metric_sum_count,
    _QueryData,
    _store_arguments,
)
from ._groups import factorize_qid, missing_qid_error
from ._random import query_keys, seed_from
from ._sglb import shrink_factor, shrink_schedule
from ._validation import check_sample_weight

__all__ = [
    "DaskRanker",
    "DaskStochasticRankRanker",
    "DaskYetiRanker",
    "DaskLambdaMARTRanker",
    "DaskXENDCGRanker",
    "DaskQueryRMSERanker",
]

# Columns of the laid-out frame besides the features ("f0", "f1", ...).
_Y, _W, _QID, _KEY = "_rankkit_y", "_rankkit_w", "_rankkit_qid", "_rankkit_key"
_SOURCE, _ROW = "_rankkit_source", "_rankkit_row"  # input partition and row: the caller's order
_PART, _LOCAL = "_rankkit_part", "_rankkit_local"  # a query's place, sent in the label bounds
#: float32 holds every integer below 2^24 exactly: the limit of both parts of a query's place.
_PLACE_LIMIT = 2**24


# ---------------------------------------------------------------------------
# Laying out rows: whole queries per partition, sorted by query.
# ---------------------------------------------------------------------------
def _is_dask(x):
    return isinstance(x, (dd.DataFrame, dd.Series, da.Array))


def _row_blocks(x, name):
    """One delayed block per row partition of a dask DataFrame, Series or array."""
    if isinstance(x, (dd.DataFrame, dd.Series)):
        return list(x.to_delayed())
    if isinstance(x, da.Array):
        if x.ndim == 2:
            return list(x.rechunk({1: -1}).to_delayed()[:, 0])
        if x.ndim == 1:
            return list(x.to_delayed())
        raise ValueError(f"{name} must be one- or two-dimensional, got {x.ndim} dimensions.")
    raise TypeError(
        f"{name} must be a dask collection (dask.dataframe or dask.array), got {type(x).__name__}; "
        "for data in memory use the in-memory ranker (rankkit.LambdaMARTRanker, ...)."
    )


def _check_aligned(X, other, name, where):
    """``other`` is partitioned like ``X`` (same number of partitions; chunk
    sizes too when both are dask arrays), or a clear error."""
    n_x = X.npartitions if isinstance(X, dd.DataFrame) else X.numblocks[0]
    n_o = other.npartitions if isinstance(other, (dd.DataFrame, dd.Series)) else other.numblocks[0]
    hint = (
        f"{name} must be partitioned like {where}: one partition (chunk) per partition of {where}, "
        f"with the same rows (e.g. {name} = {where}_frame[column], or a dask array rechunked to "
        f"{where}'s row chunks)."
    )
    if n_x != n_o:
        raise ValueError(f"{name} has {n_o} partitions but {where} has {n_x}: {hint}")
    if isinstance(X, da.Array) and isinstance(other, da.Array) and other.chunks[0] != X.chunks[0]:
        raise ValueError(f"{name} has row chunks {other.chunks[0]} but {where} has {X.chunks[0]}: {hint}")


def _assemble(x, y, qid, w, source, *, n_features, dtype, objective, where, qid_name):
    """One input partition as a pandas frame: features ``f0..``, label,
    weight, query id, its key, and the row's place in the caller's order."""
    x = check_array(x, dtype=(np.float64, np.float32), ensure_all_finite="allow-nan", ensure_min_samples=0,
                    input_name=where)
    n = x.shape[0]
    if x.shape[1] != n_features:
        raise ValueError(f"{where} has {x.shape[1]} features in partition {source}, expected {n_features}.")
    for name, values in (("y", y), (qid_name, qid), ("sample_weight", w)):
        if values is not None and len(values) != n:
            raise ValueError(
                f"{name} is not partitioned like {where}: partition {source} of {where} has {n} rows but "
                f"{len(values)} entries of {name}. Pass {name} with the same partitions (chunks) as {where}."
            )
    labels = BaseRanker._check_y(np.asarray(y).ravel(), n, where)
    labels = objective._check_labels(labels) if n else labels.astype(np.float64)
    frame = pd.DataFrame(x.astype(dtype, copy=False), columns=[f"f{j}" for j in range(n_features)])
    frame[_Y] = labels
    if w is not None:
        frame[_W] = check_sample_weight(np.asarray(w).ravel(), n)
    if n:
        codes, uniques = factorize_qid(qid, n, name=qid_name)
        frame[_QID] = np.asarray(uniques)[codes]
        frame[_KEY] = query_keys(uniques)[codes]
    else:
        frame[_QID] = np.asarray(qid).ravel()
        frame[_KEY] = np.zeros(0, dtype=np.uint64)
    frame[_SOURCE] = np.int64(source)
    frame[_ROW] = np.arange(n, dtype=np.int64)
    return frame


def _assemble_frames(x, *columns, present, partition_info=None, **settings):
    """:func:`_assemble` for ``dask.dataframe.map_partitions`` over X and
    whichever of y, qid, sample_weight are given (``present``)."""
    given = iter(columns)
    y, qid, w = (next(given) if p else None for p in present)
    number = 0 if partition_info is None else int(partition_info["number"])
    return _assemble(x, y, qid, w, number, **settings)


def _lay_out_partition(frame, partition_info=None):
    """Sort a shuffled partition by query (rows of a query in the caller's
    order) and number its queries: the query's place goes in ``_PART`` and
    ``_LOCAL`` (float32, for the DMatrix's label bounds)."""
    part = 0 if partition_info is None else int(partition_info["number"])
    if part >= _PLACE_LIMIT:
        raise ValueError(f"rankkit.dask handles fewer than {_PLACE_LIMIT} partitions; repartition the data.")
    try:
        ids, _ = pd.factorize(frame[_QID], sort=True)
    except TypeError:  # ids of mixed types: any fixed order will do
        ids, _ = pd.factorize(frame[_QID], sort=False)
    keys = frame[_KEY].to_numpy()
    order = np.lexsort((frame[_ROW].to_numpy(), frame[_SOURCE].to_numpy(), ids, keys))
    frame = frame.iloc[order]
    ids = ids[order]
    starts = np.ones(len(frame), dtype=bool)
    starts[1:] = ids[1:] != ids[:-1]
    local = np.cumsum(starts) - 1
    if len(local) and local[-1] >= _PLACE_LIMIT:
        raise ValueError(
            f"Partition {part} holds {local[-1] + 1} queries; rankkit.dask handles fewer than {_PLACE_LIMIT} "
            "per partition: use more partitions."
        )
    # One new frame, the features one 2-D block: a shuffle hands back one
    # block per column, which makes every later step slower.
    features = [c for c in frame.columns if not c.startswith("_rankkit_")]
    others = {c: frame[c].to_numpy() for c in (_Y, _W, _KEY) if c in frame.columns}
    others[_PART] = np.full(len(frame), part, dtype=np.float32)
    others[_LOCAL] = local.astype(np.float32)
    return pd.concat([pd.DataFrame(frame[features].to_numpy(), columns=features), pd.DataFrame(others)], axis=1)


def _partition_summary(frame):
    """What the driver needs of a laid-out partition: the keys of its queries
    (in order), its largest label and its weight sum."""
    starts = np.ones(len(frame), dtype=bool)
    local = frame[_LOCAL].to_numpy()
    starts[1:] = local[1:] != local[:-1]
    keys = frame[_KEY].to_numpy()[starts]
    max_label = float(frame[_Y].max()) if len(frame) else -np.inf
    weight_sum = float(frame[_W].sum()) if _W in frame.columns else None
    return keys, max_label, weight_sum


class _LaidOut:
    """A dask set laid out by query, persisted, with its summary."""

    def __init__(self, frame, n_features, query_keys, max_label, has_weight):
        self.frame = frame
        self.features = [f"f{j}" for j in range(n_features)]
        self.query_keys = query_keys  # list: per partition, the keys of its queries
        self.max_label = max_label
        self.has_weight = has_weight

    def dmatrix(self, client, max_bin, ref=None):
        f = self.frame
        return dxgb.DaskQuantileDMatrix(
            client, f[self.features], label=f[_Y], weight=f[_W] if self.has_weight else None,
            label_lower_bound=f[_PART], label_upper_bound=f[_LOCAL], max_bin=max_bin, ref=ref,
        )


# ---------------------------------------------------------------------------
# What runs on the workers.
# ---------------------------------------------------------------------------
def _local_queries(dmat):
    """``(labels, group_ptr, places, weights)`` of a worker's DMatrix, from the
    query places in its label bounds; an error if a query is cut."""
    y = np.asarray(dmat.get_label(), dtype=np.float64)
    part = np.asarray(dmat.get_float_info("label_lower_bound"), dtype=np.int64)
    local = np.asarray(dmat.get_float_info("label_upper_bound"), dtype=np.int64)
    if part.shape[0] != y.shape[0] or local.shape[0] != y.shape[0]:
        raise RuntimeError("rankkit.dask: the DMatrix lost its query places (label bounds).")
    place = part * _PLACE_LIMIT + local
    starts = np.flatnonzero(np.diff(place)) + 1 if place.size else np.zeros(0, dtype=np.int64)
    group_ptr = np.concatenate([[0], starts, [place.size]]).astype(np.int64) if place.size else \
        np.zeros(1, dtype=np.int64)
    first = place[group_ptr[:-1]]
    if np.unique(first).size != first.size:
        raise RuntimeError(
            "rankkit.dask: a query's rows are not contiguous on a worker (the DMatrix reordered rows); "
            "list-wise gradients need whole queries."
        )
    w = dmat.get_weight()
    w = None if w is None or len(w) == 0 else np.asarray(w, dtype=np.float64)
    return y, group_ptr, first, w


class _ShrunkMargin:
    """The SGLB-shrunk model on one set of rows, tracked from XGBoost's
    unshrunk margins: with ``P_k`` the margin of trees ``0..k-1`` and ``c_k``
    the factor applied before tree ``k``, ``F_{k+1} = c_k F_k + (P_{k+1} - P_k)``
    (the in-memory backend's recursion, :mod:`rankkit._backends.xgboost`).
    Without shrinkage ``F_k`` is ``P_k`` itself."""

    def __init__(self, shrink):
        self.shrink = shrink
        self.model = None  # F_k once a factor differed from 1
        self.margin = None  # P_k
        self.k = 0

    def advance(self, margin):
        """``F_{k+1}`` from ``P_{k+1}`` (one more tree than last time)."""
        previous = np.zeros_like(margin) if self.margin is None else self.margin
        factor = shrink_factor(self.shrink, self.k)
        if self.model is not None or factor != 1.0:
            base = previous if self.model is None else self.model
            self.model = base * factor + (margin - previous)
        self.margin = margin
        self.k += 1
        return margin if self.model is None else self.model

    def start(self, margin):
        """Record ``P_0`` (the model before any tree)."""
        self.margin = margin

    def before_next_tree(self):
        """``c_k F_k``: the model the gradients of iteration ``k`` see."""
        factor = shrink_factor(self.shrink, self.k)
        current = self.margin if self.model is None else self.model
        return current if factor == 1.0 else current * factor


class _WorkerObjective:
    """The custom objective each worker runs on its local DMatrix: the
    in-memory ranker's gradient step (same per-iteration seeds, query keys by
    id value), on the SGLB-shrunk model."""

    def __init__(self, objective, seed_base, query_keys, shrink_args):
        self.objective = objective
        self.seed_base = seed_base
        # Keys of all queries, partition after partition; query q of partition p is offsets[p] + q.
        self.keys = np.concatenate(query_keys).astype(np.uint64)
        self.offsets = np.concatenate([[0], np.cumsum([k.size for k in query_keys])]).astype(np.int64)
        self.shrink_args = shrink_args

    def __call__(self, preds, dtrain):
        preds = np.asarray(preds, dtype=np.float64).ravel()
        if not hasattr(self, "_data"):
            y, group_ptr, places, w = _local_queries(dtrain)
            keys = self.keys[self.offsets[places // _PLACE_LIMIT] + places % _PLACE_LIMIT]
            self._data = _QueryData(None, y, group_ptr, w, keys)
            self._step = BaseRanker._gradient_function(self.objective, self._data, self.seed_base)
            self._model = _ShrunkMargin(shrink_schedule(*self.shrink_args))
            self._model.start(preds)
            t = 0
        else:
            t = self._model.k + 1
            self._model.advance(preds)
        if preds.shape[0] == 0:
            return np.zeros(0), np.zeros(0)
        return self._step(self._model.before_next_tree(), t)


class _WorkerMetric:
    """The eval metric each worker runs: its queries' metric values summed and
    all-reduced with the other workers', so every worker reports the exact
    mean over all queries of the eval set (on the SGLB-shrunk model)."""

    def __init__(self, label, settings, shrink_args):
        self.label = label
        self.settings = settings  # one dict per eval set
        self.shrink_args = shrink_args

    def __call__(self, predt, dmat):
        if not hasattr(self, "_sets"):
            self._sets = {}
        handle = dmat.handle.value
        if handle not in self._sets:  # eval sets come in order at the first iteration
            y, group_ptr, _, _ = _local_queries(dmat)
            self._sets[handle] = (len(self._sets), y, group_ptr, _ShrunkMargin(shrink_schedule(*self.shrink_args)))
        index, y, group_ptr, model = self._sets[handle]
        # XGBoost evaluates after each tree: the model with one more tree than last time.
        raw = model.advance(np.asarray(predt, dtype=np.float64).ravel())
        total, count = (_metric_sum_count(self.label, y, raw, group_ptr, self.settings[index])
                        if y.size else (0.0, 0))
        total, count = collective.allreduce(np.array([total, count], dtype=np.float64), collective.Op.SUM)
        value = float(total / count) if count else float("nan")
        # XGBoost keeps a custom metric's value with six digits: the exact
        # values go to _WorkerEvalLog, which shares this object on the worker.
        if not hasattr(self, "values"):
            self.values = {}
        self.values.setdefault(index, []).append(value)
        return self.label, value


class _WorkerEvalLog(TrainingCallback):
    """The exact eval history on every worker, and early stopping by the
    in-memory rule (:meth:`rankkit._estimators._EvalMonitor.record`): the
    metric is the same on every worker, so all stop together. At the end the
    history rides back to the driver in the booster (attribute
    ``rankkit_evals``, JSON, exact floats).

    It reads the values from the :class:`_WorkerMetric` it is given:
    ``xgboost.dask.train`` ships the objective, the metric and the callbacks to
    a worker in one pickle (the training function's closure), so on the
    worker they are the same object (checked)."""

    ATTRIBUTE = "rankkit_evals"

    def __init__(self, metric, n_evals, rounds, n_estimators):
        super().__init__()
        self.metric = metric
        self.monitor = _EvalMonitor([None] * n_evals, metric.label, {}, early_stopping_rounds=rounds,
                                    verbose=False, n_estimators=n_estimators)

    def after_iteration(self, model, epoch, evals_log):
        values = getattr(self.metric, "values", {})
        if len(values) != len(self.monitor.history) or any(len(v) != epoch + 1 for v in values.values()):
            raise RuntimeError("rankkit.dask: the eval metric's values did not reach the eval callback.")
        return self.monitor.record(epoch, [values[i][-1] for i in range(len(values))])

    def after_training(self, model):
        model.set_attr(**{self.ATTRIBUTE: json.dumps([h[self.metric.label] for h in self.monitor.history.values()])})
        return model


# ---------------------------------------------------------------------------
# The rankers.
# ---------------------------------------------------------------------------
def _predict_partition(x, booster):
    """Raw scores of one partition (float64), as the in-memory ranker computes them."""
    index = getattr(x, "index", None)
    x = check_array(x, dtype=(np.float64, np.float32), ensure_all_finite="allow-nan", ensure_min_samples=0)
    out = (np.asarray(booster.inplace_predict(x, predict_type="margin"), dtype=np.float64) if x.shape[0]
           else np.zeros(0))
    return out if index is None else pd.Series(out, index=index)


def _score_partition(frame, booster, features, label, settings):
    """``(sum, count)`` of the metric over the queries of a laid-out partition."""
    if not len(frame):
        return pd.DataFrame({"sum": [0.0], "count": [0]})
    raw = np.asarray(booster.inplace_predict(frame[features].to_numpy(), predict_type="margin"), dtype=np.float64)
    local = frame[_LOCAL].to_numpy()
    ptr = np.concatenate([[0], np.flatnonzero(np.diff(local)) + 1, [local.size]]).astype(np.int64)
    total, count = _metric_sum_count(label, frame[_Y].to_numpy(), raw, ptr, settings)
    return pd.DataFrame({"sum": [total], "count": [count]})


def _with_err_max_label(settings, max_label):
    """ERR's Chapelle mapping scales by the largest label: of all the rows, not
    of one worker's (the in-memory ranker sees all of them)."""
    if settings.get("err_mapping") is not None and settings.get("err_max_label") is None:
        return {**settings, "err_max_label": max_label}
    return settings


class _DaskRanker:
    """The Dask half of every ``rankkit.dask`` ranker; the other half is the
    in-memory ranker (``_local_class``), whose parameters, objective and
    fitted attributes it shares."""

    _local_class = None

    # -- client and checks -------------------------------------------------------
    def _get_client(self):
        if self.client is not None:
            return self.client
        try:
            return distributed.default_client()
        except ValueError:
            raise ValueError(
                f"{type(self).__name__} found no Dask client: start one (distributed.Client(...) or "
                "distributed.LocalCluster) before fit/predict, or pass client=."
            ) from None

    def __getstate__(self):
        # A client cannot be pickled; the unpickled ranker uses the current client.
        state = dict(super().__getstate__())
        state["client"] = None
        return state

    def _split_qid(self, X, qid, *, where, qid_name):
        """``(features, qid)`` of a dask input: the query column of a dask
        DataFrame or ``qid=``; a clear error when there are none or both."""
        if not _is_dask(X):
            _row_blocks(X, where)  # raises the type error
        if isinstance(X, dd.DataFrame) and self.qid_col is not None and self.qid_col in X.columns:
            if qid is not None:
                raise ValueError(
                    f"Query ids given twice: {where} has a '{self.qid_col}' column and {qid_name}= was passed. "
                    f"Drop the column or pass qid_col=None to use {qid_name}=."
                )
            return X.drop(columns=[self.qid_col]), X[self.qid_col]
        if qid is None:
            raise missing_qid_error(X._meta if isinstance(X, dd.DataFrame) else X, self.qid_col, where=where,
                                    qid_name=qid_name)
        return X, qid

    def _n_features(self, X):
        if isinstance(X, dd.DataFrame):
            return len(X.columns)
        if X.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got {X.ndim} dimensions.")
        return int(X.shape[1])

    def _set_feature_names(self, X):
        columns = list(X.columns) if isinstance(X, dd.DataFrame) else None
        if columns is not None and columns and all(isinstance(c, str) for c in columns):
            self.feature_names_in_ = np.asarray(columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _check_features(self, X):
        n = self._n_features(X)
        if n != self.n_features_in_:
            raise ValueError(f"X has {n} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        names = getattr(self, "feature_names_in_", None)
        if names is not None and isinstance(X, dd.DataFrame) and list(X.columns) != list(names):
            raise ValueError(
                f"The feature names should match those that were passed during fit: got {list(X.columns)}, "
                f"expected {list(names)}."
            )

    # -- layout ----------------------------------------------------------------------
    def _lay_out(self, client, X, y, qid, objective, *, sample_weight=None, where="X", qid_name="qid"):
        """Shuffle the rows so that each query lives in one partition, sorted
        by query; persist; summarise (query keys, largest label, weights)."""
        X, qid = self._split_qid(X, qid, where=where, qid_name=qid_name)
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None: "
                             "pass the relevance labels.")
        n_features = self._n_features(X)
        others = {"y": y, qid_name: qid, "sample_weight": sample_weight}
        for name, values in others.items():
            if values is None:
                continue
            if not _is_dask(values):
                raise TypeError(f"{name} must be a dask collection partitioned like {where} "
                                f"(a dask Series or array), got {type(values).__name__}.")
            _check_aligned(X, values, name, where)
        dtypes = X.dtypes if isinstance(X, dd.DataFrame) else [X.dtype]
        dtype = np.float32 if all(np.dtype(d) == np.float32 for d in dtypes) else np.float64
        settings = dict(n_features=n_features, dtype=dtype, objective=objective, where=where, qid_name=qid_name)
        qid_meta = (qid._meta if isinstance(qid, (dd.Series, dd.DataFrame)) else np.zeros(0, dtype=qid.dtype))
        meta = _assemble(np.zeros((0, n_features), dtype=dtype), np.zeros(0), np.asarray(qid_meta).ravel(),
                         None if sample_weight is None else np.zeros(0), 0, **settings)
        if isinstance(X, dd.DataFrame) and all(v is None or isinstance(v, (dd.Series, dd.DataFrame))
                                               for v in others.values()):
            # One expression for all of them: dask optimises it as a whole, so
            # the partitions stay aligned (optimised separately, a column read
            # from Parquet alone may come in fewer, fused partitions).
            present = tuple(v is not None for v in others.values())
            frame = dd.map_partitions(_assemble_frames, X, *[v for v in others.values() if v is not None],
                                      present=present, **settings, meta=meta, align_dataframes=False)
        else:
            x_blocks = _row_blocks(X, where)
            blocks = [[None] * len(x_blocks) if v is None else _row_blocks(v, name) for name, v in others.items()]
            assemble = dask.delayed(_assemble, pure=True)
            frame = dd.from_delayed([assemble(xb, yb, qb, wb, i, **settings)
                                     for i, (xb, yb, qb, wb) in enumerate(zip(x_blocks, *blocks))],
                                    meta=meta, verify_meta=False)
        frame = frame.shuffle(on=_KEY, npartitions=frame.npartitions)
        frame = frame.map_partitions(_lay_out_partition, meta=_lay_out_partition(meta))
        frame = client.persist(frame)
        summaries = client.compute([dask.delayed(_partition_summary)(p) for p in frame.to_delayed()], sync=True)
        keys = [s[0] for s in summaries]
        if sum(k.size for k in keys) == 0:
            raise ValueError(f"{where} has no rows.")
        if sample_weight is not None and not sum(s[2] for s in summaries) > 0:
            raise ValueError("sample_weight is zero for every row: at least one weight must be positive.")
        return _LaidOut(frame, n_features, keys, max(s[1] for s in summaries), sample_weight is not None), X

    # -- fit -----------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, qid=None, sample_weight=None, eval_set=None, eval_qid=None, early_stopping_rounds=None):
        """Fit on a Dask cluster.

        Parameters
        ----------
        X : dask DataFrame or dask array of shape (n_samples, n_features)
            Features; a DataFrame may carry the query ids in its ``qid_col``
            column. Rows may be in any order across partitions.
        y : dask Series or array, partitioned like ``X``
            Relevance labels.
        qid : dask Series or array, partitioned like ``X``, optional
            Query id of every row, unless ``X`` has the query column.
        sample_weight : dask Series or array, partitioned like ``X``, optional
            Per-row weights multiplying gradients and hessians.
        eval_set : list of (X, y) pairs of dask collections, optional
            Sets evaluated every iteration (exact mean over all their
            queries); the last one drives early stopping.
        eval_qid : list of dask Series or arrays, optional
            Query ids of each eval set (unless it carries the query column).
        early_stopping_rounds : int, optional
            Stop when the last eval set's metric has not improved for this
            many iterations; the model keeps the best iteration.

        Returns
        -------
        self
        """
        client = self._get_client()
        if self.backend != "xgboost":
            raise ValueError(
                f"{type(self).__name__} trains through xgboost.dask: backend must be 'xgboost', got "
                f"{self.backend!r}. The numba and lightgbm backends train in memory "
                f"({self._local_class.__name__})."
            )
        objective = self._objective_for_fit()
        train, X_features = self._lay_out(client, X, y, qid, objective, sample_weight=sample_weight)
        self.n_features_in_ = len(train.features)
        self._set_feature_names(X_features)
        objective = _pin_err_max_label(objective, train.max_label)
        evals = self._dask_eval_sets(client, eval_set, eval_qid, objective)
        label, settings = self._eval_metric(objective)
        monitor = _EvalMonitor(evals, label, settings, early_stopping_rounds=early_stopping_rounds, verbose=False,
                               n_estimators=self.n_estimators)
        seed_base = seed_from(self.random_state)
        backend = self._make_backend(seed_base)
        params = backend._params()
        backend.params_ = params
        shrink_args = (self.model_shrink_rate, self.model_shrink_mode, self.learning_rate)
        metric = None
        if evals:
            metric = _WorkerMetric(label, [_with_err_max_label(settings, e.max_label) for e in evals], shrink_args)
        # xgboost.dask (3.2) asks distributed for the current client even when
        # given one (xgboost.dask._get_client calls distributed.get_client() to
        # check the type): make ours the current one while it runs.
        with client.as_current():
            dtrain = train.dmatrix(client, int(self.max_bin))
            devals = [(e.dmatrix(client, int(self.max_bin), ref=dtrain), f"validation_{i}")
                      for i, e in enumerate(evals)]
            result = dxgb.train(
                client, params, dtrain, num_boost_round=int(self.n_estimators), evals=devals or None,
                obj=_WorkerObjective(objective, seed_base, train.query_keys, shrink_args),
                custom_metric=metric,
                callbacks=[_WorkerEvalLog(metric, len(evals), early_stopping_rounds, int(self.n_estimators))]
                if evals else None,
                verbose_eval=False,
            )
        booster = result["booster"]
        # Trained on frames with columns f0, f1, ...: drop the names, as a
        # booster trained in memory on arrays has none.
        booster.feature_names = None
        booster.feature_types = None
        if evals:
            history = json.loads(booster.attr(_WorkerEvalLog.ATTRIBUTE))
            booster.set_attr(**{_WorkerEvalLog.ATTRIBUTE: None})
            for t in range(booster.num_boosted_rounds()):
                monitor.record(t, [values[t] for values in history])
        schedule = shrink_schedule(*shrink_args)
        backend._keep(booster, [shrink_factor(schedule, t) for t in range(booster.num_boosted_rounds())])
        return self._finish(backend, objective, monitor, early_stopping_rounds)

    def _dask_eval_sets(self, client, eval_set, eval_qid, objective):
        out = []
        for i, X, y, q in self._eval_pairs(eval_set, eval_qid):
            laid, X_features = self._lay_out(client, X, y, q, objective, where=f"eval_set[{i}]",
                                             qid_name=f"eval_qid[{i}]")
            self._check_features(X_features)
            out.append(laid)
        return out

    # -- predict / score / to_local ------------------------------------------------
    def _features(self, X):
        if not _is_dask(X) or isinstance(X, dd.Series):
            raise TypeError(f"{type(self).__name__}.predict takes a dask DataFrame or array, got "
                            f"{type(X).__name__}; for data in memory use to_local().predict(X).")
        if isinstance(X, dd.DataFrame) and self.qid_col is not None and self.qid_col in X.columns:
            X = X.drop(columns=[self.qid_col])
        self._check_features(X)
        return X

    def predict(self, X):
        """Raw ranking scores (higher ranks first), a dask collection
        partitioned like ``X``: a Series for a DataFrame (same index), an
        array for an array. A DataFrame's query column, if present, is dropped.
        """
        check_is_fitted(self, "backend_")
        X = self._features(X)
        booster = dask.delayed(self.booster_, pure=True)
        if isinstance(X, dd.DataFrame):
            return X.map_partitions(_predict_partition, booster, meta=pd.Series(dtype=np.float64))
        X = X.rechunk({1: -1})
        return X.map_blocks(_predict_partition, booster, drop_axis=1, dtype=np.float64,
                            meta=np.zeros(0, dtype=np.float64))

    def score(self, X, y, *, qid=None):
        """Mean per-query ranking metric over all queries, computed on the
        cluster (as :meth:`rankkit.LambdaMARTRanker.score`: ``eval_metric`` or
        the ranker's own, worst-case ties).

        Returns
        -------
        float
        """
        check_is_fitted(self, "backend_")
        client = self._get_client()
        laid, X_features = self._lay_out(client, X, y, qid, self.objective_)
        self._check_features(X_features)
        label, settings = self._eval_metric(self.objective_)
        settings = _with_err_max_label(settings, laid.max_label)
        booster = dask.delayed(self.booster_, pure=True)
        sums = laid.frame.map_partitions(_score_partition, booster, laid.features, label, settings,
                                         meta=pd.DataFrame({"sum": [0.0], "count": [0]}).iloc[:0])
        sums = client.compute(sums).result()
        count = int(sums["count"].sum())
        return float(sums["sum"].sum()) / count if count else float("nan")

    def to_local(self):
        """The equivalent in-memory ranker (same parameters but ``client``,
        same fitted model): it pickles and predicts on arrays and DataFrames
        exactly as this ranker predicts on dask collections."""
        check_is_fitted(self, "backend_")
        params = {k: v for k, v in self.get_params(deep=False).items() if k != "client"}
        local = self._local_class(**params)
        for name, value in self.__dict__.items():
            if name.endswith("_") and not name.startswith("_") and name not in params:
                setattr(local, name, value)
        return local


def _pin_err_max_label(objective, max_label):
    """The objective with ERR's ``err_max_label`` set to the largest training
    label when it is left to the data (every worker must use the same)."""
    inner = objective
    while hasattr(inner, "objective") and not hasattr(inner, "err_mapping"):
        inner = inner.objective
    if getattr(inner, "err_mapping", None) is not None and getattr(inner, "err_max_label", 0) is None:
        inner.err_max_label = float(max_label)
    return objective


def _dask_class(local_class):
    """``Dask<Name>``: the Dask half over the in-memory ranker, with its
    ``__init__`` signature plus ``client=None``."""
    signature = inspect.signature(local_class.__init__)
    client = inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None)
    signature = signature.replace(parameters=[*signature.parameters.values(), client])

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        _store_arguments(self, bound.arguments)

    __init__.__signature__ = signature
    name = f"Dask{local_class.__name__}"
    summary = (local_class.__doc__ or "").strip().splitlines()[0]
    doc = f"""{summary} On a Dask cluster.

    Trains through ``xgboost.dask`` with whole queries per worker (see
    :mod:`rankkit.dask`); takes the parameters of :class:`rankkit.{local_class.__name__}`
    plus ``client``, fits on dask collections, predicts dask collections, and
    :meth:`to_local` returns the equivalent :class:`rankkit.{local_class.__name__}`.

    Parameters
    ----------
    (all of :class:`rankkit.{local_class.__name__}`'s)
    client : distributed.Client or None, default=None
        The cluster's client; None uses the current one (``distributed.default_client()``).
    """
    __init__.__qualname__ = f"{name}.__init__"
    cls = type(name, (_DaskRanker, local_class), {
        "__init__": __init__,
        "__doc__": doc,
        "__module__": __name__,
        "_local_class": local_class,
        "_parameter_constraints": {**local_class._parameter_constraints, "client": "no_validation"},
    })
    return cls


DaskRanker = _dask_class(_estimators.Ranker)
DaskStochasticRankRanker = _dask_class(_estimators.StochasticRankRanker)
DaskYetiRanker = _dask_class(_estimators.YetiRanker)
DaskLambdaMARTRanker = _dask_class(_estimators.LambdaMARTRanker)
DaskXENDCGRanker = _dask_class(_estimators.XENDCGRanker)
DaskQueryRMSERanker = _dask_class(_estimators.QueryRMSERanker)

#: In-memory ranker -> its Dask ranker.
DASK_RANKERS = {cls._local_class: cls for cls in (DaskRanker, DaskStochasticRankRanker, DaskYetiRanker,
                                                   DaskLambdaMARTRanker, DaskXENDCGRanker, DaskQueryRMSERanker)}
