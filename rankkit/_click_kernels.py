"""Numba kernels of position-bias estimation (``rankkit._clicks``)."""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit


@njit(cache=True)
def _softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit(cache=True, parallel=True)
def pair_click_losses(clicks, raw, position, group_ptr, t_plus, t_minus, loss_plus, loss_minus, discount):
    """Per-row sums of the pairwise losses of Unbiased LambdaMART (Hu et al. 2019, eqs. 30-31).

    For every pair of one query group with ``c_i > c_j`` (``i`` clicked more
    than ``j``), the cost ``C_ij = (c_i - c_j) |d_i - d_j| log(1 + exp(-(z_i - z_j)))``
    (LambdaMART's loss with linear gain on the clicks, whatever the
    objective: ``d`` are the DCG discounts of the rows' ranks by the current
    scores, :func:`model_rank_discounts`) adds
    ``C_ij / t-[k_j]`` to ``loss_plus[i]`` and ``C_ij / t+[k_i]`` to
    ``loss_minus[j]``, ``k`` the 1-based positions. Outputs are overwritten;
    each query writes only its own rows, in a fixed order, so the sums do
    not depend on the thread count. O(n^2) per query, no allocation.
    """
    for q in numba.prange(group_ptr.shape[0] - 1):
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        for i in range(lo, hi):
            loss_plus[i] = 0.0
            loss_minus[i] = 0.0
        for i in range(lo, hi):
            ci = clicks[i]
            if ci <= 0.0:
                continue
            tp = t_plus[position[i] - 1]
            for j in range(lo, hi):
                cj = clicks[j]
                if cj >= ci:
                    continue
                cost = (ci - cj) * abs(discount[i] - discount[j]) * _softplus(raw[j] - raw[i])
                loss_plus[i] += cost / t_minus[position[j] - 1]
                loss_minus[j] += cost / tp


def model_rank_discounts(raw, group_ptr, clicks, position):
    """``1 / log2(1 + r)`` of every row's rank ``r`` (1-based) in its query by
    the current scores: the DCG discount of the model's ranking, which weighs
    a pair's cost by how much swapping it changes DCG, as LambdaMART's loss
    does in Unbiased LambdaMART. Ties (all of them at the first iteration)
    follow LambdaMART's ``worst`` rule, fewer clicks first, then the shown
    position, which is unique in a group: the discounts do not depend on the
    order of the rows."""
    query = np.repeat(np.arange(group_ptr.shape[0] - 1), np.diff(group_ptr))
    order = np.lexsort((position, clicks, -raw, query))
    rank = np.empty(raw.shape[0], dtype=np.int64)
    rank[order] = np.arange(raw.shape[0]) - group_ptr[query[order]]
    return 1.0 / np.log2(2.0 + rank)


def pairwise_propensities(clicks, raw, position, group_ptr, t_plus, t_minus, norm, work, total=None,
                          row_weight=None):
    """One update of ``(t+, t-)``: ``t[k] = (L[k] / L[1]) ** (1 / (1 + norm))``,
    ``L`` the per-position sums of :func:`pair_click_losses`, each row's
    losses times ``row_weight`` (its query's weight: a query of weight 2
    counts its pairs twice; None: 1) (XGBoost's
    ``lambdarank_bias_norm`` is ``norm``). A position whose sum is 0 (no
    pair: no click there, or no document unclicked below a click) has no
    evidence of its own and takes the value of the position above it (it
    kept the starting value 1, as if it were examined as often as position
    1). ``work`` is (2, n) float64 scratch.
    ``total([L+, L-]) -> [L+, L-]`` sums the per-position sums over all the
    parts of the rows when these rows are a part (``rankkit.dask``); pairs
    never cross queries, and a query lives in one part."""
    discount = model_rank_discounts(raw, group_ptr, clicks, position)
    pair_click_losses(clicks, raw, position, group_ptr, t_plus, t_minus, work[0], work[1], discount)
    if row_weight is not None:
        work *= row_weight
    n_positions = t_plus.shape[0]
    sums = [np.bincount(position - 1, weights=work[0], minlength=n_positions),
            np.bincount(position - 1, weights=work[1], minlength=n_positions)]
    if total is not None:
        sums = total(sums)
    out = []
    for per_position, previous in zip(sums, (t_plus, t_minus)):
        if per_position[0] <= 0.0:
            out.append(previous.copy())
            continue
        t = (per_position / per_position[0]) ** (1.0 / (1.0 + norm))
        for k in np.flatnonzero(per_position <= 0.0):  # ascending: runs carry the last observed value
            t[k] = t[k - 1]
        out.append(np.clip(t, 1e-6, None))
    return out[0], out[1]
