"""Laying out a dask collection by query, for :mod:`rankkit.dask`.

1. **Whole queries per partition.** A list-wise gradient needs all the
   documents of a query at once, and ``xgboost.dask.train`` hands the custom
   objective each worker's rows with no regard for queries. So the rows
   (features, label, query id, weight) are shuffled by a hash of the query id,
   so that each query lives in one partition, and each partition is sorted by
   query, the rows of a query in the caller's order (:func:`assemble`,
   :func:`lay_out_partition`).
2. **Queries travel with their rows.** Each row carries its query's place
   ``(partition, query within the partition)`` in the DMatrix's label-bound
   fields (``label_lower_bound``/``label_upper_bound``: float32, exact for
   integers below 2^24, read by XGBoost only for survival objectives). On a
   worker :class:`LocalReader` reads the query boundaries from them, whatever
   partitions XGBoost gave that worker and in whatever order, and checks that
   no query is cut.

:func:`dmatrix_factory` and :class:`LocalReader` are the data factory of the
Dask backend (:mod:`rankkit._backends.xgboost_dask`).
"""

from __future__ import annotations

import contextlib
import logging

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import xgboost.dask as dxgb
from sklearn.utils import check_array

from ._backends._base import _FLOAT32_MAX
from ._backends._gbm.binning import QUANTILE_ROWS, fit_bin_edges
from ._backends.xgboost import check_float32_range
from ._clicks import check_debiased_labels, check_unique_positions, debias_partition, ipw_labels
from ._groups import factorize_qid
from ._random import _GOLDEN, _mix64_array, query_keys
from ._training import QueryData, check_y, metric_sum_count, weighted_counts
from ._validation import check_labels, check_sample_weight

# Columns of the laid-out frame besides the features ("f0", "f1", ...).
_Y, _W, _QID, KEY = "_rankkit_y", "_rankkit_w", "_rankkit_qid", "_rankkit_key"
_SOURCE, _ROW = "_rankkit_source", "_rankkit_row"  # input partition and row: the caller's order
_PART, _LOCAL = "_rankkit_part", "_rankkit_local"  # a query's place, sent in the label bounds
_POS = "_rankkit_position"  # click data: the rank a row was shown at
#: float32 holds every integer below 2^24 exactly: the limit of both parts of a query's place.
_PLACE_LIMIT = 2**24


# ---------------------------------------------------------------------------
# Laying out rows: whole queries per partition, sorted by query.
# ---------------------------------------------------------------------------
def is_dask(x):
    return isinstance(x, (dd.DataFrame, dd.Series, da.Array))


def row_blocks(x, name):
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


def check_aligned(X, other, name, where):
    """``other`` is partitioned like ``X`` (same number of partitions; chunk
    sizes too when both are dask arrays), or a clear error."""
    n_x = X.npartitions if isinstance(X, dd.DataFrame) else X.numblocks[0]
    n_o = other.npartitions if isinstance(other, (dd.DataFrame, dd.Series)) else other.numblocks[0]
    hint = (
        f"{name} must be partitioned like {where}: one partition (chunk) per partition of {where}, "
        f"with the same rows (e.g. a column of the same dask DataFrame, or a dask array rechunked to "
        f"{where}'s row chunks)."
    )
    if n_x != n_o:
        raise ValueError(f"{name} has {n_o} partitions but {where} has {n_x}: {hint}")
    # Unknown chunk sizes (NaN: a DataFrame's to_dask_array(), a boolean mask) are checked
    # partition by partition when the rows are read (assemble).
    if (isinstance(X, da.Array) and isinstance(other, da.Array) and other.chunks[0] != X.chunks[0]
            and not np.isnan(X.chunks[0] + other.chunks[0]).any()):
        raise ValueError(f"{name} has row chunks {other.chunks[0]} but {where} has {X.chunks[0]}: {hint}")


def assemble(x, y, qid, w, source, pos=None, *, n_features, dtype, objective, where, qid_name, clicks=None):
    """One input partition as a pandas frame: features ``f0..``, label,
    weight, query id, its key, and the row's place in the caller's order;
    with ``clicks`` (:func:`rankkit._clicks.dask_click_settings`), the
    labels debiased at the positions ``pos``, kept beside them. The labels
    follow ``objective``'s rules (training rows) or, with None, those of
    every metric (eval sets, ``score``)."""
    x = check_array(x, dtype=(np.float64, np.float32), ensure_all_finite="allow-nan", ensure_min_samples=0,
                    input_name=where)
    check_float32_range(x, in_memory=False)
    n = x.shape[0]
    if x.shape[1] != n_features:
        raise ValueError(f"{where} has {x.shape[1]} features in partition {source}, expected {n_features}.")
    for name, values in (("y", y), (qid_name, qid), ("sample_weight", w), ("position", pos)):
        if values is not None and len(values) != n:
            raise ValueError(
                f"{name} is not partitioned like {where}: partition {source} of {where} has {n} rows but "
                f"{len(values)} entries of {name}. Pass {name} with the same partitions (chunks) as {where}."
            )
    labels = check_y(np.asarray(y).ravel(), n, where)
    if clicks is not None:  # the objective checks the debiased labels, not the clicks
        if pos is None:
            raise ValueError(f"position_bias is set but {where} came without positions: pass position= "
                             "(partitioned like X) or a DataFrame with the position column.")
        labels, pos = debias_partition(labels, np.asarray(pos).ravel(), clicks, n)
    if objective is None:  # eval sets and score: the metrics check what they need
        labels = check_labels(labels, name="y" if where == "X" else f"y of {where}")
    elif clicks is not None and clicks.get("estimate"):
        if n:  # the clicks stay the labels; the objective's rules on the labels of unit propensities
            check_debiased_labels(objective, ipw_labels(labels, 1.0, clicks["gain"]))
    elif clicks is not None:
        labels = check_debiased_labels(objective, labels) if n else labels.astype(np.float64)
    else:
        labels = objective._check_labels(labels) if n else labels.astype(np.float64)
    if n and np.abs(labels).max() > _FLOAT32_MAX:
        # The labels ride to the workers in XGBoost's DMatrix, as float32.
        raise ValueError(
            f"y of {where} holds labels beyond float32's range (|y| > 3.4e38), and rankkit.dask passes the "
            "labels to the workers in XGBoost's float32 DMatrix. Rescale them (divide by a constant)."
        )
    frame = pd.DataFrame(x.astype(dtype, copy=False), columns=[f"f{j}" for j in range(n_features)])
    frame[_Y] = labels
    if pos is not None:
        frame[_POS] = pos
    if w is not None:
        frame[_W] = check_sample_weight(np.asarray(w).ravel(), n)
    if n:
        codes, uniques = factorize_qid(qid, n, name=qid_name)
        kind = pd.api.types.infer_dtype(uniques, skipna=False)
        if kind.startswith("mixed") and kind != "mixed-integer-float":
            # Dask's shuffle by query cannot carry such a column ("P2P ... failed" from a worker).
            raise ValueError(
                f"{qid_name} of {where} holds query ids of several types ({kind}: e.g. ints and strings, or "
                f"tuples) in partition {source}; rankkit.dask shuffles the rows by query id, which takes ids of "
                f"one type. Convert them (e.g. {qid_name}.astype(str), if no two ids then read alike)."
            )
        frame[_QID] = np.asarray(uniques)[codes]
        frame[KEY] = query_keys(uniques)[codes]
    else:
        frame[_QID] = np.asarray(qid).ravel()
        frame[KEY] = np.zeros(0, dtype=np.uint64)
    frame[_SOURCE] = np.int64(source)
    frame[_ROW] = np.arange(n, dtype=np.int64)
    return frame


def assemble_frames(x, *columns, present, partition_info=None, **settings):
    """:func:`assemble` for ``dask.dataframe.map_partitions`` over X and
    whichever of y, qid, sample_weight are given (``present``)."""
    given = iter(columns)
    y, qid, w, pos = (next(given) if p else None for p in present)
    number = 0 if partition_info is None else int(partition_info["number"])
    return assemble(x, y, qid, w, number, pos, **settings)


def _quiet_shuffle_logger(enter):
    """Run on the scheduler: silence its shuffle logger below ERROR while any
    fit lays out rows (``enter``), and give it back its level when the last
    one is done. A count, not a saved level per fit: two fits at once would
    otherwise restore each other's ERROR."""
    logger = logging.getLogger("distributed.shuffle._scheduler_plugin")
    quiet = getattr(logger, "rankkit_quiet", None)  # [fits laying out rows, the level before them]
    if enter:
        if quiet is None:
            logger.rankkit_quiet = [1, logger.level]
            logger.setLevel(logging.ERROR)
        else:
            quiet[0] += 1
    elif quiet is not None:
        quiet[0] -= 1
        if quiet[0] == 0:
            logger.setLevel(quiet[1])
            del logger.rankkit_quiet


@contextlib.contextmanager
def quiet_shuffle_log(client):
    """Without distributed's two WARNING lines per shuffle ("initialized by
    task", "deactivated due to stimulus"): routine events of laying out the
    rows by query, not problems. The scheduler's logger is restored after."""
    client.run_on_scheduler(_quiet_shuffle_logger, True)
    try:
        yield
    finally:
        client.run_on_scheduler(_quiet_shuffle_logger, False)


def lay_out_partition(frame, partition_info=None, position_modulus=None, position_name="position"):
    """Sort a shuffled partition by query (rows of a query in the caller's
    order) and number its queries: the query's place goes in ``_PART`` and
    ``_LOCAL`` (float32, for the DMatrix's label bounds).

    With ``position_modulus`` (``M``: the deepest training position plus
    one; ``position_bias="estimate"``, whose workers need every row's
    position), ``_PART`` carries the row's position too:
    ``part * M + min(position, M - 1)`` (0 for a set without positions); a
    deeper eval position is debiased as the deepest training one anyway
    (:func:`rankkit._clicks.theta_at`). :class:`LocalReader` decodes both.
    ``position_name``: the positions' name in errors (``eval_position[0]``, ...)."""
    part = 0 if partition_info is None else int(partition_info["number"])
    modulus = 1 if position_modulus is None else int(position_modulus)
    if (part + 1) * modulus > _PLACE_LIMIT:
        if modulus == 1:
            raise ValueError(f"rankkit.dask handles fewer than {_PLACE_LIMIT} partitions; repartition the data.")
        raise ValueError(
            f"rankkit.dask with position_bias=\"estimate\" handles partitions x (deepest position + 1) below "
            f"{_PLACE_LIMIT}; partition {part} with positions down to {modulus - 1} is beyond it: use fewer "
            "partitions (repartition), or keep the positions you train on shallower."
        )
    try:
        ids, _ = pd.factorize(frame[_QID], sort=True)
    except TypeError:  # ids of mixed types: any fixed order will do
        ids, _ = pd.factorize(frame[_QID], sort=False)
    keys = frame[KEY].to_numpy()
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
    if _POS in frame.columns:  # one impression list per query: a rank at most once
        check_unique_positions(frame[_POS].to_numpy(), np.concatenate([np.flatnonzero(starts), [len(frame)]]),
                               name=position_name, query_ids=frame[_QID].to_numpy()[starts])
    others = {c: frame[c].to_numpy() for c in (_Y, _W, KEY) if c in frame.columns}
    code = np.full(len(frame), part * modulus, dtype=np.int64)
    if position_modulus is not None and _POS in frame.columns:
        code += np.minimum(frame[_POS].to_numpy(), modulus - 1)
    others[_PART] = code.astype(np.float32)
    others[_LOCAL] = local.astype(np.float32)
    return pd.concat([pd.DataFrame(frame[features].to_numpy(), columns=features), pd.DataFrame(others)], axis=1)


def partition_summary(frame):
    """What the driver needs of a laid-out partition: the keys of its queries
    (in order), its largest label, its queries and rows counted by weight
    (:func:`rankkit._training.weighted_counts`), and its rows."""
    starts = np.ones(len(frame), dtype=bool)
    local = frame[_LOCAL].to_numpy()
    starts[1:] = local[1:] != local[:-1]
    keys = frame[KEY].to_numpy()[starts]
    max_label = float(frame[_Y].max()) if len(frame) else -np.inf
    ptr = np.append(np.flatnonzero(starts), len(frame))
    weight = frame[_W].to_numpy() if _W in frame.columns else None
    return (keys, max_label, *weighted_counts(ptr, weight), len(frame))


class LaidOut:
    """A dask set laid out by query, persisted, with its summary."""

    def __init__(self, frame, n_features, query_keys, max_label, has_weight, counted, n_rows, debiased=False):
        self.frame = frame
        self.debiased = debiased  # labels debiased from clicks (rankkit._clicks.debias_partition)
        self.features = [f"f{j}" for j in range(n_features)]
        self.query_keys = query_keys  # list: per partition, the keys of its queries
        # The largest label as the workers read the labels, in float32 (XGBoost's DMatrix): float32(3.2)
        # exceeds 3.2, and ERR's err_max_label pinned to it must not be below a worker's label.
        rounded = float(np.float32(max_label)) if abs(max_label) <= np.finfo(np.float32).max else max_label
        self.max_label = max(max_label, rounded)
        self.has_weight = has_weight
        self.counted = counted  # (queries, rows) counted by weight, over all the partitions
        self.n_rows = n_rows

    def dmatrix(self, client, max_bin, edges, ref=None):
        """The ``DaskQuantileDMatrix`` of the set, its features as bin codes
        of the training set's ``edges`` (:class:`BinEdges`)."""
        f = self.frame
        codes = f[self.features].map_partitions(edges.codes, meta=f[self.features]._meta.astype(edges.dtype))
        # The names given, not read from the frame: a worker holding rows of an
        # eval set and none of the training set builds an empty training
        # DMatrix, which has no frame to read them from (and XGBoost then
        # refuses to predict on it).
        return dxgb.DaskQuantileDMatrix(
            client, codes, label=f[_Y], weight=f[_W] if self.has_weight else None,
            label_lower_bound=f[_PART], label_upper_bound=f[_LOCAL], max_bin=max_bin, ref=ref, missing=edges.missing,
            feature_names=self.features,
        )


# -- what runs on the workers --------------------------------------------------
def _local_queries(dmat, position_modulus=None):
    """``(labels, group_ptr, places, weights, positions)`` of a worker's
    DMatrix, from the query places in its label bounds; an error if a query
    is cut. ``positions`` (int64) only with ``position_modulus`` and a set
    laid out with positions (:func:`lay_out_partition`), else None."""
    y = np.asarray(dmat.get_label(), dtype=np.float64)
    part = np.asarray(dmat.get_float_info("label_lower_bound"), dtype=np.int64)
    position = None
    if position_modulus is not None:
        part, position = np.divmod(part, int(position_modulus))
        if position.size and position.min() == 0:
            position = None  # a set without positions (graded labels)
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
    return y, group_ptr, first, w, position


class LocalReader:
    """Run on a worker: its part of a laid-out set's DMatrix as
    :class:`~rankkit._training.QueryData`; for the training rows with the
    keys of the queries' random draws, found from their places
    (``query_keys``: per partition, the keys of its queries, in order).
    ``position_modulus``: the sets carry their rows' positions
    (:func:`lay_out_partition`), read into ``QueryData.position``."""

    def __init__(self, query_keys, position_modulus=None):
        self.position_modulus = position_modulus
        # Keys of all queries, partition after partition; query q of partition p is offsets[p] + q.
        self.keys = np.concatenate(query_keys).astype(np.uint64)
        self.offsets = np.concatenate([[0], np.cumsum([k.size for k in query_keys])]).astype(np.int64)

    def __call__(self, dmat, with_keys=True):
        y, group_ptr, places, w, position = _local_queries(dmat, self.position_modulus)
        keys = self.keys[self.offsets[places // _PLACE_LIMIT] + places % _PLACE_LIMIT] if with_keys else None
        return QueryData(None, y, group_ptr, w, keys, position)


def dmatrix_factory(client, max_bin, edges, laid, ref=None):
    """The data factory of the Dask backend: a laid-out set's ``DaskQuantileDMatrix``."""
    return laid.dmatrix(client, max_bin, edges, ref=ref)


def score_partition(frame, backend, features, metric, settings):
    """``(sum, count)`` of the metric over the queries of a laid-out partition
    (query-weighted with the rows' weights, as :func:`rankkit._training.mean_metric`)."""
    if not len(frame):
        return pd.DataFrame({"sum": [0.0], "count": [0.0]})
    raw = backend.predict(frame[features].to_numpy())
    local = frame[_LOCAL].to_numpy()
    ptr = np.concatenate([[0], np.flatnonzero(np.diff(local)) + 1, [local.size]]).astype(np.int64)
    weight = frame[_W].to_numpy() if _W in frame.columns else None
    total, count = metric_sum_count(metric, frame[_Y].to_numpy(), raw, ptr, settings, weight, part=True)
    return pd.DataFrame({"sum": [total], "count": [float(count)]})


# ---------------------------------------------------------------------------
# Bin edges that do not depend on the layout.
# ---------------------------------------------------------------------------
#: Mixed into the rows' hashes that pick the edges' sample, so that the
#: sample is no pattern of the random draws (which start from the same keys).
_EDGE_SAMPLE_SALT = np.uint64(0x5DEECE66D2545F49)


class BinEdges:
    """Bin edges of every feature, fitted by rankkit on the driver, and the
    bin codes they give (``fit_bin_edges``'s rule: a value's code is the
    number of edges below it; NaN gets the code :attr:`missing`).

    XGBoost's distributed quantile sketch merges the workers' summaries, so
    its cuts (and the trees) depend on which worker holds which rows. Given
    the codes instead (at most ``max_bin`` distinct values per feature) its
    cuts are exact on any layout: the trees depend on the rows only.
    :meth:`raw_thresholds` then turns a trained booster's cuts on codes into
    the same splits on the features themselves, so that the model predicts
    on raw features as any XGBoost model does.
    """

    def __init__(self, edges, edges_ptr):
        self.edges, self.edges_ptr = edges, edges_ptr
        # The codes in the smallest unsigned type that also holds a code for
        # missing values (XGBoost's ``missing``): the workers keep them beside
        # the laid-out rows while XGBoost builds its matrices.
        n_codes = int(np.diff(edges_ptr).max(initial=0)) + 1
        self.dtype = next(t for t in (np.uint8, np.uint16, np.uint32) if n_codes <= np.iinfo(t).max)
        self.missing = np.iinfo(self.dtype).max

    @classmethod
    def fit(cls, client, laid, max_bin):
        """Edges of the training set ``laid`` (:class:`LaidOut`) at quantiles
        of its rows (:func:`~rankkit._backends._gbm.binning.fit_bin_edges`,
        ``max_bin`` bins at most): of every row up to
        :data:`~rankkit._backends._gbm.binning.QUANTILE_ROWS` rows, beyond
        them of about that many rows picked by a hash of their query id and
        their values. Neither the layout, nor the partitions, nor the rows'
        order change them."""
        n_rows = laid.n_rows
        limit = None if n_rows <= QUANTILE_ROWS else np.uint64(int(QUANTILE_ROWS / n_rows * 2.0**64))
        parts = client.compute([dask.delayed(_edge_sample)(p, laid.features, limit)
                                for p in laid.frame.to_delayed()], sync=True)
        edges, edges_ptr = fit_bin_edges(np.concatenate(parts), int(max_bin), sample_rows=None)
        return cls(edges, edges_ptr)

    def codes(self, features):
        """A partition's features (a pandas frame) as bin codes (:attr:`missing` for NaN)."""
        x = features.to_numpy(dtype=np.float32)
        out = np.empty(x.shape, dtype=self.dtype)
        for f in range(x.shape[1]):
            e = self.edges[self.edges_ptr[f]:self.edges_ptr[f + 1]]
            col = x[:, f].astype(np.float64)
            out[:, f] = np.where(np.isnan(col), self.missing, np.searchsorted(e, col, side="left"))
        return pd.DataFrame(out, columns=features.columns, index=features.index)

    def raw_thresholds(self, model):
        """An XGBoost JSON model (a dict) trained on :meth:`codes`, its numeric
        splits moved onto the raw features, in place. XGBoost sends a row
        left when its value is below the split condition ``c``: a code
        ``< c`` is a code ``< j = ceil(c)``, that is at most ``j - 1`` edges
        below the value, ``x32 <= edges[j - 1]``, which is ``x32 < t`` for
        ``t`` the smallest float32 above that edge (``-inf``/``+inf`` when
        ``j`` leaves no row/every row left)."""
        for tree in model["learner"]["gradient_booster"]["model"]["trees"]:
            left = np.asarray(tree["left_children"])
            kinds = np.asarray(tree.get("split_type", np.zeros(left.size)), dtype=np.int64)
            feature = np.asarray(tree["split_indices"], dtype=np.int64)
            conditions = np.asarray(tree["split_conditions"], dtype=np.float64)
            for node in np.flatnonzero((left != -1) & (kinds == 0)):
                f = feature[node]
                e = self.edges[self.edges_ptr[f]:self.edges_ptr[f + 1]]
                j = int(np.ceil(conditions[node]))
                if j <= 0:
                    t = -np.inf
                elif j > e.size:
                    t = np.inf
                else:
                    t = _float32_above(e[j - 1])
                conditions[node] = t
            tree["split_conditions"] = [float(c) for c in conditions]
        return model


def _float32_above(edge):
    """The smallest float32 above ``edge`` (a float64)."""
    t = np.float32(edge)
    if float(t) <= edge:
        t = np.nextafter(t, np.float32(np.inf))
    return float(t)


def _edge_sample(frame, features, limit):
    """The features (float32, as XGBoost reads them) of the rows of a
    laid-out partition in the edges' sample: those whose hash of query key
    and feature values is below ``limit``, every row when it is None."""
    x = frame[features].to_numpy(dtype=np.float32)
    if limit is not None and len(frame):
        with np.errstate(over="ignore"):
            h = _mix64_array(frame[KEY].to_numpy(dtype=np.uint64) ^ _EDGE_SAMPLE_SALT)
            for bits in np.ascontiguousarray(x.T).view(np.uint32):
                h = _mix64_array(h + bits.astype(np.uint64) * _GOLDEN)
        x = x[h < limit]
    return x
