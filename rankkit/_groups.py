"""Query ids: validation, factorisation, sorting rows by query, ``group_ptr``.

This is the only module that turns a per-row query id into the contiguous
layout that kernels work on. Everything else calls :func:`make_groups` (and
:func:`split_qid` for a DataFrame's query column) and never re-implements it.

Layout: kernels see rows sorted so that each query is one contiguous block;
``group_ptr`` (``int64``, length ``n_queries + 1``) holds block offsets. Queries
keep the order of their first appearance, rows keep their order inside a
query (a stable sort), so contiguous input -- even with non-monotonic ids such
as MQ2008's -- needs no reordering at all.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import _num_samples

from ._random import index_query_keys, query_keys

__all__ = ["QueryGroups", "make_groups", "check_qid", "factorize_qid", "split_qid", "missing_qid_error", "qid_column_advice", "qid_from_group_sizes",
           "group_ptr_from_sizes", "qid_from_sizes", "split_column"]


def is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "iloc")


def check_qid(qid, n_samples=None, *, name="qid"):
    """Validate a per-row query id and factorise it.

    Accepts ints, strings, objects or a pandas categorical. NaN/None ids are
    an error. Returns ``codes`` (int64, one per row) numbered in order of first
    appearance.
    """
    return factorize_qid(qid, n_samples, name=name)[0]


def factorize_qid(qid, n_samples=None, *, name="qid"):
    """:func:`check_qid` plus the query id values: ``(codes, uniques)`` with
    ``uniques[c]`` the id of code ``c`` (what :func:`~rankkit._random.query_keys`
    hashes)."""
    if qid is None:
        raise ValueError(
            f"{name} is required: pass one query id per row (qid=...), or a DataFrame "
            "with a query column (qid_col)."
        )
    categories = None
    if hasattr(qid, "cat") and hasattr(qid, "dtype") and str(qid.dtype) == "category":
        values = np.asarray(qid.cat.codes, dtype=np.int64)
        if (values < 0).any():
            raise ValueError(f"{name} contains missing values (NaN); every row needs a query id.")
        categories = qid.cat.categories
    else:
        values = np.asarray(qid)
        if values.ndim == 2 and 1 in values.shape:
            values = values.ravel()
    if values.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {values.shape}.")
    if n_samples is not None and values.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {values.shape[0]} entries but there are {n_samples} rows; "
            "pass one query id per row."
        )
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name} contains NaN or infinite values; every row needs a query id.")
    elif values.dtype.kind == "O":
        import pandas as pd

        if pd.isna(values).any():
            raise ValueError(f"{name} contains missing values (None/NaN); every row needs a query id.")
    elif values.dtype.kind == "M":
        # pd.factorize codes NaT as -1, which QueryGroups would read as a
        # query (a crash, or the row silently joining another query).
        if np.isnat(values).any():
            raise ValueError(f"{name} contains missing values (NaT); every row needs a query id.")
    elif values.dtype.kind not in "iubUS":
        raise TypeError(f"{name} has unsupported dtype {values.dtype}; use ints or strings.")
    import pandas as pd

    codes, uniques = pd.factorize(values, sort=False)
    if categories is not None:  # codes of the categories -> the category values
        uniques = categories.take(uniques)
    return codes.astype(np.int64, copy=False), uniques


def group_ptr_from_sizes(sizes, *, name="group sizes"):
    """``group_ptr`` from a sequence of query sizes (LightGBM/XGBoost ``group``).

    Sizes must be whole numbers >= 0 (a float such as ``3.0`` is accepted, ``2.5``
    is an error, not truncated).
    """
    values = np.asarray(sizes)
    if values.ndim == 2 and 1 in values.shape:
        values = values.ravel()
    ok = values.ndim == 1 and (values.dtype.kind in "iu" or (
        values.dtype.kind == "f" and np.all(np.isfinite(values)) and np.all(values == np.round(values))))
    if not ok or (values < 0).any():
        raise ValueError(
            f"{name} must be a one-dimensional array of non-negative ints (documents per query, "
            f"in row order), got {_describe(values)}."
        )
    ptr = np.zeros(values.shape[0] + 1, dtype=np.int64)
    np.cumsum(values.astype(np.int64), out=ptr[1:])
    return ptr


def qid_from_sizes(sizes, n_samples=None, *, name="group"):
    """Per-row query ids ``0, 0, 1, 1, 1, ...`` from query sizes: query ``i``
    holds the next ``sizes[i]`` rows. With ``n_samples``, the sizes must add
    up to it."""
    ptr = group_ptr_from_sizes(sizes, name=f"{name} (query sizes)")
    if n_samples is not None and ptr[-1] != n_samples:
        raise ValueError(
            f"{name} sizes add up to {ptr[-1]} rows but there are {n_samples}: {name}= holds the number "
            "of rows of each query, in row order, and must add up to the number of rows. Group sizes "
            "cannot be split with the rows (e.g. by cross-validation): pass a per-row qid= instead "
            "(rankkit.model_selection.qid_from_group(sizes) converts them)."
        )
    return np.repeat(np.arange(ptr.shape[0] - 1, dtype=np.int64), np.diff(ptr))


def _describe(values):
    if values.ndim != 1:
        return f"shape {values.shape}"
    if values.dtype.kind not in "iuf":
        return f"dtype {values.dtype}"
    return f"{values[:5].tolist()}{' ...' if values.shape[0] > 5 else ''}"


class QueryGroups:
    """Rows grouped by query.

    Attributes
    ----------
    codes : ndarray of int64
        Query code of every row, in the caller's row order.
    order : ndarray of int64 or None
        Permutation sorting rows by query (stable); ``None`` when rows already
        form contiguous blocks, so no copy is needed.
    group_ptr : ndarray of int64
        Block offsets in the sorted layout.
    query_keys : ndarray of uint64
        Key of every query in the sorted layout: the stable hash of its id's
        value (:func:`rankkit._random.query_keys`), which seeds the query's
        random draws; the keys of ``0, 1, ...`` when the ids are unknown.
    """

    def __init__(self, codes, uniques=None):
        self.codes = codes
        self._uniques = uniques
        n = codes.shape[0]
        if n == 0:
            raise ValueError("qid is empty: there are no rows.")
        # Contiguous blocks <=> the number of value changes equals n_queries - 1.
        n_queries = int(codes.max()) + 1
        changes = np.flatnonzero(codes[1:] != codes[:-1]) + 1
        if changes.shape[0] == n_queries - 1:
            self.order = None
            starts = changes
        else:
            self.order = np.argsort(codes, kind="stable").astype(np.int64)
            sorted_codes = codes[self.order]
            starts = np.flatnonzero(sorted_codes[1:] != sorted_codes[:-1]) + 1
        ptr = np.empty(n_queries + 1, dtype=np.int64)
        ptr[0] = 0
        ptr[1:-1] = starts
        ptr[-1] = n
        self.group_ptr = ptr

    @property
    def query_keys(self):
        # Computed on first use: metrics and splitters never need them.
        if getattr(self, "_query_keys", None) is None:
            if self._uniques is None:
                self._query_keys = index_query_keys(self.n_queries)
            else:
                self._query_keys = query_keys(self._uniques)
        return self._query_keys

    @property
    def n_queries(self):
        return self.group_ptr.shape[0] - 1

    @property
    def n_samples(self):
        return self.codes.shape[0]

    @property
    def is_sorted(self):
        return self.order is None

    def sort(self, a):
        """Rows of ``a`` (array, sparse matrix or DataFrame) in query-sorted layout."""
        if a is None or self.order is None:
            return a
        if is_dataframe(a):
            return a.iloc[self.order]
        return a[self.order]

    def unsort(self, a):
        """Inverse of :meth:`sort` for an array computed in sorted layout."""
        if self.order is None:
            return a
        out = np.empty_like(a)
        out[self.order] = a
        return out

    def sorted_codes(self):
        return self.codes if self.order is None else self.codes[self.order]


def make_groups(qid, n_samples=None, *, name="qid"):
    """Validate ``qid`` and return a :class:`QueryGroups`."""
    return QueryGroups(*factorize_qid(qid, n_samples, name=name))


def split_qid(X, qid=None, qid_col="qid", *, where="X", qid_name="qid"):
    """Query ids from ``qid=`` or from the ``qid_col`` column of a DataFrame ``X``.

    Returns ``(X without the query column, qid)``; ``qid`` is None when there
    is neither (the caller decides whether that is an error:
    :func:`missing_qid_error`). Giving both is an error, naming ``where``
    and ``qid_name`` (an eval set's). Non-DataFrame inputs pass through.
    """
    return split_column(X, qid, qid_col, what="Query ids", name=qid_name, col_param="qid_col", where=where)


def split_column(X, values, col, *, what, name, col_param, where="X"):
    """``(X without column col, values)``: the ``col`` column of a DataFrame
    ``X`` when it has one, else ``values`` (``name=``) as given; both is an
    error naming ``col_param``, the ranker parameter naming the column."""
    if is_dataframe(X) and col is not None and col in X.columns:
        if values is not None:
            raise ValueError(
                f"{what} given twice: {where} has a '{col}' column and {name}= was passed. "
                f"Drop the column from {where}, or pass {col_param}=None to use {name}= (for every set)."
            )
        return X.drop(columns=[col]), X[col]
    return X, values


def qid_column_advice(qid_col, what="X"):
    """How to pass query ids as a column of ``what``; with ``qid_col=None`` no
    column is read, so the advice names the parameter, not a column ``'None'``."""
    if qid_col is None:
        return f"set qid_col to the query column of a DataFrame {what} (it is None: no column is read)"
    return f"a DataFrame {what} with a '{qid_col}' column"


def missing_qid_error(X, qid_col="qid", *, where="X", qid_name="qid"):
    """The error for rows without query ids, saying every way to pass them."""
    column = (
        f"{where} is a DataFrame without a {qid_col!r} column"
        if is_dataframe(X) and qid_col is not None
        else f"{where} has no query column"
    )
    frame = f"a DataFrame with a {qid_col or 'qid'!r} column (qid_col)"
    if "[" in qid_name:  # an eval set's: eval_qid[i]
        listed = qid_name.split("[")[0]
        return ValueError(
            f"Missing query ids: {column} and no {qid_name} was given. A ranker needs one query id "
            f"per row: pass {listed}=[...] with one array per eval set, or make {where} {frame}."
        )
    return ValueError(
        f"Missing query ids: {column} and no {qid_name}= was given. A ranker needs one "
        f"query id per row: pass {qid_name}=..., or {frame}. Inside a Pipeline, GridSearchCV or "
        "cross_validate, either use such a DataFrame or enable metadata routing "
        "(sklearn.set_config(enable_metadata_routing=True)) and pass qid= to "
        "Pipeline.fit / Pipeline.score or GridSearchCV(...).fit(X, y, qid=qid), or params={'qid': qid} to "
        "cross_validate / cross_val_score: without routing scikit-learn drops qid= on the way."
    )


def qid_from_group_sizes(X, qid, group, qid_col, *, where="X", qid_name="qid", group_name="group"):
    """Per-row query ids from LightGBM-style ``group`` sizes, or ``qid`` as given
    (``qid_col``: the ranker's query column, which ``group`` must not repeat).

    Sizes describe consecutive rows, so they cannot be combined with
    another source of query ids, and must add up to the number of rows.
    """
    if group is None:
        return qid
    if qid is not None:
        raise ValueError(
            f"Query ids given twice: {qid_name}= and {group_name}= were both passed; pass one "
            f"(per-row {qid_name}= works inside cross-validation, group sizes do not)."
        )
    if is_dataframe(X) and qid_col is not None and qid_col in X.columns:
        raise ValueError(
            f"Query ids given twice: {where} has a '{qid_col}' column and {group_name}= was passed. "
            f"Drop the column or pass qid_col=None to use {group_name}=."
        )
    return qid_from_sizes(group, _num_samples(X), name=group_name)


def query_weights(weight, group_ptr):
    """Each query's weight: the mean of its rows' weights (LightGBM's query
    weights), so giving every row of a query ``w`` weighs the query ``w``."""
    if group_ptr.shape[0] < 2:
        return np.zeros(0)
    return np.add.reduceat(weight, group_ptr[:-1]) / np.diff(group_ptr)
