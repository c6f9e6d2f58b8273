"""Quantile binning of features to uint8 codes.

Each feature gets at most ``max_bins <= 255`` bins for its non-missing values
(bin edges at quantiles of the training values, moved off the values
themselves to midpoints, or midpoints between distinct values when there are
few) and one reserved bin, :data:`MISSING_BIN` = 255,
for NaN. A value ``x`` falls in bin ``b = #{edges < x}``, so
``b <= t  <=>  x <= edges[t]``: a split found on bins is the same split on raw
features with threshold ``edges[t]``. Edges are fitted on the training set and
reused for eval sets and prediction (as XGBoost's ``hist``, LightGBM and
scikit-learn's ``HistGradientBoosting*`` do). :func:`fit_bin_edges` also fits
the edges of ``rankkit.dask``, whose codes may exceed 255.

Sparse matrices are handled in row blocks: each block is densified
(``BLOCK_ROWS`` rows, a few MB), binned and dropped, so memory is the uint8
matrix (``n_samples * n_features`` bytes) plus one block, never a dense float
copy of the data.
"""

import heapq
import math

import numba
import numpy as np
from numba import njit

from .._base import iter_row_blocks

MISSING_BIN = 255
#: Rows per densified block (dense float64 block of ``BLOCK_ROWS * n_features``).
BLOCK_ROWS = 8192
#: Rows used to fit quantiles (an evenly strided subset beyond this).
QUANTILE_ROWS = 200_000


#: Features whose sampled values are held as float64 at once while fitting edges.
EDGE_FEATURES = 16


def _sample_columns(X, idx, a, b):
    """Rows ``idx`` of features ``a:b`` as dense float64 (a few MB, never the whole sample)."""
    sub = X[idx, a:b]
    if hasattr(sub, "toarray"):
        sub = sub.toarray()
    return np.asarray(sub, dtype=np.float64)


def greedy_logsum_edges(distinct, counts, max_bins):
    """Edges splitting sorted ``distinct`` values (with ``counts``) into at most
    ``max_bins`` bins that greedily maximise ``sum(log(bin count))``
    (CatBoost's ``GreedyLogSum`` border selection).

    Starting from one bin, each step splits the bin whose best split raises
    the sum most; a bin's best split puts the count on each side as close to
    half as the distinct values allow. Heavily tied values thus get a bin of
    their own while the rest stay finely binned, where quantiles of the raw
    values would spend many of their edges on the tied value. Edges are
    midpoints between neighbouring distinct values.
    """
    cum = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))

    def best(a, b):  # bins hold distinct[a:b]; split before index s, a < s < b
        if b - a < 2:
            return None
        total = cum[b] - cum[a]
        s = int(np.searchsorted(cum, cum[a] + total / 2.0))
        options = [t for t in (s - 1, s, s + 1) if a < t < b]
        scores = [math.log(cum[t] - cum[a]) + math.log(cum[b] - cum[t]) for t in options]
        k = int(np.argmax(scores))  # first maximum: the lower split point
        return scores[k] - math.log(total), options[k]

    heap, splits, n_bins = [], [], 1
    first = best(0, distinct.size)
    if first is not None:
        heap.append((-first[0], 0, 0, distinct.size, first[1]))
    while heap and n_bins < max_bins:
        _, a, _, b, s = heapq.heappop(heap)  # ties: the lower segment first
        splits.append(s)
        n_bins += 1
        for lo, hi in ((a, s), (s, b)):
            found = best(lo, hi)
            if found is not None:
                heapq.heappush(heap, (-found[0], lo, lo, hi, found[1]))
    splits = np.sort(np.asarray(splits, dtype=np.int64))
    return _midpoint(distinct[splits - 1], distinct[splits])


def _midpoint(a, b):
    """Halfway between ``a < b``, also when ``b - a`` overflows (values of
    both signs beyond half of float64's range); ``a`` itself when ``b`` is
    the next float after it and the halfway point rounds to ``b`` (a bin
    counts the edges below a value, so an edge at ``b`` would put ``b`` in
    ``a``'s bin)."""
    with np.errstate(over="ignore", invalid="ignore"):
        mid = a + (b - a) / 2.0
    mid = np.where(np.isfinite(mid), mid, a / 2.0 + b / 2.0)
    return np.where(mid < b, mid, a)


def fit_bin_edges(X, max_bins, border_type="quantile", sample_rows=QUANTILE_ROWS):
    """Bin edges of every feature.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix of shape (n_samples, n_features)
    max_bins : int
        Most bins for non-missing values, at least 2 (at most 255 for the
        numba engine's uint8 codes; ``rankkit.dask`` takes more).
    border_type : {"quantile", "greedy_logsum"}
        With more distinct values than ``max_bins``: edges at quantiles of
        the values, or :func:`greedy_logsum_edges` (CatBoost's default).
    sample_rows : int or None
        Beyond this many rows the edges are fitted on an evenly strided
        subset of them; None: on every row (the edges then depend on the
        rows' values only, not on their order).

    Returns
    -------
    edges : ndarray of float64
        All features' edges, concatenated (increasing within a feature).
    edges_ptr : ndarray of int64, shape (n_features + 1,)
        Feature ``f`` has edges ``edges[edges_ptr[f]:edges_ptr[f + 1]]`` and
        ``edges_ptr[f + 1] - edges_ptr[f] + 1`` non-missing bins.
    """
    n, n_features = X.shape
    # Beyond QUANTILE_ROWS, an evenly strided subset: deterministic, no random state needed.
    strided = sample_rows is not None and n > sample_rows
    idx = np.linspace(0, n - 1, sample_rows).astype(np.int64) if strided else slice(None)
    if hasattr(X, "toarray"):
        X = X.tocsr()[idx]  # the sampled rows, still sparse
        idx = slice(None)
    parts = []
    ptr = np.zeros(n_features + 1, dtype=np.int64)
    for f in range(n_features):
        if f % EDGE_FEATURES == 0:
            sample = _sample_columns(X, idx, f, f + EDGE_FEATURES)
        col = sample[:, f % EDGE_FEATURES]
        col = np.sort(col[~np.isnan(col)])
        distinct, counts = np.unique(col, return_counts=True)
        if distinct.size <= 1:
            e = np.empty(0)
        elif distinct.size <= max_bins:
            e = _midpoint(distinct[:-1], distinct[1:])
        elif border_type == "greedy_logsum":
            e = greedy_logsum_edges(distinct, counts, max_bins)
        else:
            p = np.linspace(0.0, 1.0, max_bins + 1)[1:-1]
            with np.errstate(over="ignore", invalid="ignore"):
                q = np.quantile(col, p, method="midpoint")
            if not np.all(np.isfinite(q)):
                q = _midpoint(np.quantile(col, p, method="lower"), np.quantile(col, p, method="higher"))
            e = np.unique(q)
            # An edge equal to the largest value would leave an empty last bin.
            e = e[e < distinct[-1]]
            # A quantile on a tied value (or on an order statistic) is that
            # value: move it halfway to the next one. The training rows keep
            # their bins, and a value seen in training stays on its side when
            # served in another precision (float32 rounds it across an edge
            # equal to it).
            at = np.searchsorted(distinct, e)
            tied = distinct[at] == e
            e[tied] = _midpoint(distinct[at[tied]], distinct[at[tied] + 1])
            e = np.unique(e)
        parts.append(e.astype(np.float64))
        ptr[f + 1] = ptr[f] + e.size
    edges = np.concatenate(parts) if parts else np.empty(0)
    return np.ascontiguousarray(edges), ptr


#: Rows binned together: their binary searches run side by side.
SEARCH_ROWS = 32


@njit(cache=True, parallel=True)
def bin_block(block, edges, edges_ptr, out, row0):
    """Write the bins of ``block`` (float32/float64, C order) into rows
    ``row0:`` of ``out``, the grower's layout ``out[f // 8, row, f % 8]``
    (:func:`transform`).

    The bin, the number of edges strictly below ``x``, comes from a binary
    search. One search is a chain of dependent loads (each step's address
    needs the last step's comparison), so a task searches one feature for
    :data:`SEARCH_ROWS` rows step by step, side by side: the steps of
    different rows are independent and overlap. Each step is arithmetic, not
    a branch, and the number of steps depends on the feature only. Parallel
    over groups of rows.
    """
    n, n_features = block.shape
    n_tasks = (n + SEARCH_ROWS - 1) // SEARCH_ROWS
    search = np.empty((n_tasks, SEARCH_ROWS), dtype=np.int64)  # each task's positions, allocated once
    for task in numba.prange(n_tasks):
        i0 = task * SEARCH_ROWS
        rows = min(SEARCH_ROWS, n - i0)
        pos = search[task]
        for f in range(n_features):
            a = edges_ptr[f]
            m = edges_ptr[f + 1] - a
            for j in range(rows):
                pos[j] = 0
            # The answer lies in [pos, pos + m]: halve the range until one edge is left.
            while m > 1:
                half = m >> 1
                for j in range(rows):
                    pos[j] += half * np.int64(edges[a + pos[j] + half] < block[i0 + j, f])
                m -= half
            g = f >> 3
            lane = f & 7
            for j in range(rows):
                x = block[i0 + j, f]
                b = pos[j] + np.int64(m == 1 and edges[a + pos[j]] < x)
                out[g, row0 + i0 + j, lane] = MISSING_BIN if np.isnan(x) else b


def transform(X, edges, edges_ptr):
    """uint8 bins of ``X`` in the grower's feature-group layout:
    ``Xg[f // 8, i, f % 8]`` is feature ``f`` of row ``i``, shape
    ``(ceil(n_features / 8), n, 8)``, C order, padding lanes 0
    (:mod:`.grower` explains the layout)."""
    n, n_features = X.shape
    out = np.zeros(((n_features + 7) // 8, n, 8), dtype=np.uint8)
    for a, blk in iter_row_blocks(X, BLOCK_ROWS):
        bin_block(blk, edges, edges_ptr, out, a)
    return out
