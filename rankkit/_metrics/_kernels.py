"""Numba kernels for tie-aware ranking metrics.

Every kernel works on the query-sorted layout: flat ``y`` and ``score``
(float64) and ``group_ptr`` (int64 offsets). Queries are independent, so the
drivers :func:`evaluate_kernel` and :func:`evaluate_average_kernel` run them
in parallel with ``prange``; each query only touches its own slice
``[group_ptr[q], group_ptr[q + 1])`` of the caller-allocated scratch arrays,
so nothing is allocated per query and the result does not depend on the
number of threads.

Documents are ordered by the stable merge sort of
:mod:`rankkit._metrics._common` (``O(n log n)`` per query; bounded insertion
for a small cut-off) on score, descending. Within a block of equal scores the
tie policy decides:

* ``worst``: less relevant first (label ascending);
* ``best``: more relevant first (label descending);
* ``input``: input row order (the sort is stable);
* ``average``: the exact expectation over a uniformly random order of every
  tied block, in closed form (see :func:`_average_value`).

Positions are 0-based here (position ``p`` is rank ``p + 1``); ``k <= 0``
means the whole list. Metric and tie ids, gains, discounts, stop
probabilities, relevance, the sort and the ideal DCG come from
:mod:`rankkit._metrics._common`, which the objectives share.
"""

import math

from numba import njit, prange

from rankkit._metrics._common import (
    DCG,
    ERR,
    EXPDCG,
    MAP,
    MRR,
    NDCG,
    PFOUND,
    PRECISION,
    RECALL,
    RPRECISION,
    SMALL_K,
    WORST,
    ZERO,
    discount,
    err_probability,
    gain,
    ideal_dcg,
    is_relevant,
    stable_sort,
    top_k,
)


@njit(cache=True)
def _ordered_value(metric, y, idx, lo, hi, kk, exp_gain, threshold, err_scale, decay):
    """Metric of the explicit order ``idx[lo:hi]`` (unnormalised for NDCG).

    ``kk`` is the cut-off already clipped to the query length. For MAP the
    sum of precisions is returned, for precision, recall and R-precision the
    number of relevant documents in the top ``kk``; the caller divides.
    """
    acc = 0.0
    if metric == DCG or metric == NDCG:
        for p in range(kk):
            acc += gain(y[idx[lo + p]], exp_gain) * discount(p)
    elif metric == EXPDCG:
        w = 1.0
        for p in range(kk):
            acc += w * y[idx[lo + p]]
            w *= decay
    elif metric == ERR:
        not_stopped = 1.0
        for p in range(kk):
            r = err_probability(y[idx[lo + p]], err_scale)
            acc += not_stopped * r / (p + 1.0)
            not_stopped *= 1.0 - r
    elif metric == MRR:
        for p in range(kk):
            if is_relevant(y[idx[lo + p]], threshold):
                return 1.0 / (p + 1.0)
    elif metric == MAP:
        c = 0
        for p in range(kk):
            if is_relevant(y[idx[lo + p]], threshold):
                c += 1
                acc += c / (p + 1.0)
    elif metric == PRECISION or metric == RECALL or metric == RPRECISION:
        for p in range(kk):
            if is_relevant(y[idx[lo + p]], threshold):
                acc += 1.0
    elif metric == PFOUND:
        look = 1.0
        for p in range(kk):
            r = err_probability(y[idx[lo + p]], err_scale)
            acc += look * r
            look *= (1.0 - r) * decay
    return acc


@njit(cache=True, inline="always")
def _cascade_weight(metric, p, decay):
    """Position weight of the cascade metrics at 0-based position ``p``:
    ``1 / (p + 1)`` for ERR, ``decay^p`` for PFound (whose look probability
    is the ERR-style product of ``1 - R`` times ``decay`` per position)."""
    if metric == PFOUND:
        return math.pow(decay, p)
    return 1.0 / (p + 1.0)


@njit(cache=True)
def _err_block(metric, y, idx, lo, a, t, kk, err_scale, decay, m):
    """Expected ERR (or PFound) contribution of one tied block, before the prefix factor.

    The block holds ``t`` documents (``idx[lo + a : lo + a + t]``, labels
    ascending) at positions ``a .. a + t - 1``. Under a uniformly random order,
    a document ``u`` placed at block offset ``j`` (probability ``1/t``) is
    preceded by a uniformly random ``j``-subset ``S`` of the other documents,
    so its expected contribution is

    ``R_u / t * sum_{j: a + j < k} E[prod_{v in S} (1 - R_v)] w(a + j)``

    with ``w(p) = 1 / (p + 1)`` for ERR and ``decay^p`` for PFound
    (:func:`_cascade_weight`).

    ``E[prod_{v in S}(1 - R_v)]`` over ``j``-subsets is the normalised
    elementary symmetric polynomial ``e_j / C(t - 1, j)`` of the other
    documents' ``1 - R``. It is built with the convex recursion
    ``m_j <- (s + 1 - j)/(s + 1) m_j + j/(s + 1) x m_{j-1}`` (no binomials, no
    overflow, no cancellation), once per distinct label in the block: the cost
    is ``O(L t^2)`` for ``L`` distinct relevant labels among ``t`` tied
    documents. ``m`` is scratch of length ``>= t``.
    """
    total = 0.0
    prev_label = -1.0
    inner = 0.0
    for ui in range(t):
        u = idx[lo + a + ui]
        ru = err_probability(y[u], err_scale)
        if ru == 0.0:
            continue
        if y[u] != prev_label:
            prev_label = y[u]
            # Normalised elementary symmetric means of the other t - 1 docs.
            m[0] = 1.0
            s = 0
            for vi in range(t):
                if vi == ui:
                    continue
                x = 1.0 - err_probability(y[idx[lo + a + vi]], err_scale)
                m[s + 1] = x * m[s]
                for j in range(s, 0, -1):
                    m[j] = ((s + 1.0 - j) * m[j] + j * x * m[j - 1]) / (s + 1.0)
                s += 1
            inner = 0.0
            for j in range(t):
                if a + j >= kk:
                    break
                inner += m[j] * _cascade_weight(metric, a + j, decay)
            inner /= t
        total += ru * inner
    return total


@njit(cache=True, inline="always")
def _equal_labels(y, idx, lo, a, b):
    """Whether the documents at positions ``a .. b - 1`` of ``idx[lo:]`` all have the same label."""
    r = y[idx[lo + a]]
    for p in range(a + 1, b):
        if y[idx[lo + p]] != r:
            return False
    return True


@njit(cache=True)
def _average_value(metric, y, score, idx, lo, hi, kk, exp_gain, threshold, err_scale, decay, m):
    """Expected metric over uniformly random orders of every tied block.

    ``idx[lo:hi]`` is sorted by score descending. Blocks ``[a, a + t)`` of
    equal scores are handled in closed form:

    * DCG/NDCG/ExpDCG and the relevant counts of precision, recall and
      R-precision (linear in the per-position weights): every document of
      the block gets the block's mean weight over positions ``a .. a + t - 1``,
      positions ``>= k`` weighing 0 (McSherry & Najork, 2008).
    * MRR: in the first block holding ``m >= 1`` relevant documents, the
      number ``X`` of non-relevant documents before the first relevant one
      has ``P(X = 0) = m/t`` and ``P(X = x + 1)/P(X = x) = (t - m - x)/(t - 1 - x)``,
      so ``E[RR] = sum_x P(X = x) / (a + x + 1)`` over ``a + x < k``.
    * MAP: by linearity, a relevant document of the block, at uniform offset
      ``J`` with ``E[B | J = j] = j (m - 1)/(t - 1)`` relevant block-mates
      before it and ``c`` relevant documents in earlier blocks, has expected
      precision ``(1/t) sum_{j: a + j < k} (c + 1 + j (m - 1)/(t - 1)) / (a + j + 1)``.
    * ERR, PFound: the prefix product over earlier blocks is order-free
      (PFound's ``decay`` depends on the position only); inside the block see
      :func:`_err_block`.

    For MAP the expected sum of precisions is returned; the caller divides.
    """
    n = hi - lo
    acc = 0.0
    not_stopped = 1.0
    c = 0
    a = ZERO
    while a < n:
        b = a + 1
        s0 = score[idx[lo + a]]
        while b < n and score[idx[lo + b]] == s0:
            b += 1
        t = b - a
        if a >= kk:
            break
        if (metric == DCG or metric == NDCG) and _equal_labels(y, idx, lo, a, b):
            # Every order of the block is the same list of gains: add them
            # position by position, as the ideal DCG does, so that a ranking
            # that is ideal up to ties among equal labels scores exactly 1
            # (the block mean below rounds differently: 1 +- 2e-16).
            g = gain(y[idx[lo + a]], exp_gain)
            for p in range(a, min(b, kk)):
                acc += g * discount(p)
        elif metric == DCG or metric == NDCG or metric == EXPDCG:
            wsum = 0.0
            for p in range(a, min(b, kk)):
                if metric == EXPDCG:
                    wsum += decay**p
                else:
                    wsum += discount(p)
            gsum = 0.0
            for p in range(a, b):
                r = y[idx[lo + p]]
                if metric == EXPDCG:
                    gsum += r
                else:
                    gsum += gain(r, exp_gain)
            # wsum / t first: the mean weight is at most 1, while gsum * wsum
            # can overflow for a block whose gain sum is finite.
            acc += gsum * (wsum / t)
        elif metric == PRECISION or metric == RECALL or metric == RPRECISION:
            hits = 0.0
            for p in range(a, b):
                if is_relevant(y[idx[lo + p]], threshold):
                    hits += 1.0
            acc += hits * (min(b, kk) - a) / t
        elif metric == MRR or metric == MAP:
            mrel = 0
            for p in range(a, b):
                if is_relevant(y[idx[lo + p]], threshold):
                    mrel += 1
            if mrel > 0:
                if metric == MRR:
                    prob = mrel / t
                    for x in range(t - mrel + 1):
                        if a + x >= kk:
                            break
                        acc += prob / (a + x + 1.0)
                        if t - 1 - x > 0:
                            prob *= (t - mrel - x) / (t - 1.0 - x)
                    return acc
                inner = 0.0
                for j in range(t):
                    if a + j >= kk:
                        break
                    before = 0.0 if t == 1 else j * (mrel - 1.0) / (t - 1.0)
                    inner += (c + 1.0 + before) / (a + j + 1.0)
                acc += mrel * inner / t
                c += mrel
        else:  # ERR, PFound
            if not_stopped == 0.0:
                break
            acc += not_stopped * _err_block(metric, y, idx, lo, a, t, kk, err_scale, decay, m)
            for p in range(a, b):
                not_stopped *= 1.0 - err_probability(y[idx[lo + p]], err_scale)
        a = b
    return acc


@njit(cache=True)
def _query_setup(metric, y, group_ptr, q, k, threshold):
    """Query ``q``'s rows ``lo..hi-1``, its relevant documents for the binary
    metrics (-1 for the others: they need none; 0: the ``empty`` rule applies)
    and its cut-off clipped to the list (``k <= 0``: the whole list)."""
    lo = group_ptr[q]
    hi = group_ptr[q + 1]
    kk = hi - lo if (k <= 0 or k > hi - lo) else k
    n_relevant = -1
    if metric == MRR or metric == MAP or metric == PRECISION or metric == RECALL or metric == RPRECISION:
        n_relevant = 0
        for i in range(lo, hi):
            if is_relevant(y[i], threshold):
                n_relevant += 1
        if metric == RPRECISION:
            # R-precision@k: precision at min(R, k), so a perfect ranking scores 1.
            kk = min(kk, n_relevant)
    return lo, hi, n_relevant, kk


@njit(cache=True)
def _normalised(metric, value, y, lo, hi, k, kk, n_relevant, exp_gain, empty, idx, buf, m):
    """The query's metric from :func:`_ordered_value` or :func:`_average_value`."""
    if metric == MAP:
        # AP@k = sum of precisions at relevant positions <= k / min(R, k).
        return value / min(n_relevant, kk)
    if metric == PRECISION:
        # trec_eval's P@k: the positions past the end of a short list
        # count as non-relevant, so divide by k, not by the list length.
        return value / (k if k > 0 else hi - lo)
    if metric == RECALL:
        return value / n_relevant
    if metric == RPRECISION:
        return value / kk
    if metric == NDCG:
        ideal = ideal_dcg(y, lo, hi, kk, exp_gain, idx, buf, m)
        return empty if ideal <= 0.0 else value / ideal
    return value


# Two drivers, one per kind of tie policy, so that a metric with ordered ties
# does not compile the closed-form tie averages (a third of the first call).
@njit(cache=True, parallel=True)
def evaluate_kernel(
    metric,
    y,
    score,
    group_ptr,
    k,
    ties,
    tie_key,
    exp_gain,
    empty,
    threshold,
    err_scale,
    decay,
    idx,
    buf,
    m,
    out,
):
    """Per-query metric values written into ``out`` (length ``n_queries``),
    documents in one order: ``ties`` is ``worst``, ``best`` or ``input``
    (:func:`evaluate_average_kernel` takes ``average``).

    Parameters
    ----------
    metric : int
        Metric id from ``rankkit._metrics._common.METRIC_IDS``.
    y, score : ndarray of float64
        Labels and scores in query-sorted layout.
    group_ptr : ndarray of int64
        Query offsets, length ``n_queries + 1``.
    k : int
        Cut-off; ``<= 0`` means the whole list.
    ties : int
        Tie policy id from ``rankkit._metrics._common.TIES``.
    tie_key : ndarray of float64
        What the ``worst`` and ``best`` policies compare among equal scores:
        the labels ``y``, or for ``ties="trec"`` the rank of every document
        id (with ``best``: larger id first, trec_eval's rule).
    exp_gain : bool
        DCG gain ``2^r - 1`` (True) or ``r`` (False).
    empty : float
        Value of a query without relevant document for the metrics of
        ``EMPTY_RULE_METRICS`` (``nan`` excludes it).
    threshold : float
        Relevance threshold of the binary metrics (relevant iff label > threshold).
    err_scale : float
        ``<= 0``: ERR/PFound labels are probabilities; else Chapelle's ``2^{r_max}``.
    decay : float
        ExpDCG and PFound decay.
    idx, buf : ndarray of int64, m : ndarray of float64
        Scratch, length ``n_samples`` each; query ``q`` uses only its slice.
    out : ndarray of float64
        Output, length ``n_queries``.
    """
    for q in prange(group_ptr.shape[0] - 1):
        lo, hi, n_relevant, kk = _query_setup(metric, y, group_ptr, q, k, threshold)
        if n_relevant == 0:
            out[q] = empty
            continue
        if kk <= SMALL_K and kk < hi - lo:
            top_k(idx, lo, hi, kk, score, tie_key, ties)
        else:
            for i in range(lo, hi):
                idx[i] = i
            stable_sort(idx, buf, lo, hi, score, tie_key, ties)
        value = _ordered_value(metric, y, idx, lo, hi, kk, exp_gain, threshold, err_scale, decay)
        out[q] = _normalised(metric, value, y, lo, hi, k, kk, n_relevant, exp_gain, empty, idx, buf, m)


@njit(cache=True, parallel=True)
def evaluate_average_kernel(metric, y, score, group_ptr, k, exp_gain, empty, threshold, err_scale, decay, idx, buf,
                            m, out):
    """:func:`evaluate_kernel` with ``ties="average"``: the expectation over
    uniformly random orders of the tied documents (:func:`_average_value`)."""
    for q in prange(group_ptr.shape[0] - 1):
        lo, hi, n_relevant, kk = _query_setup(metric, y, group_ptr, q, k, threshold)
        if n_relevant == 0:
            out[q] = empty
            continue
        for i in range(lo, hi):
            idx[i] = i
        stable_sort(idx, buf, lo, hi, score, y, WORST)
        value = _average_value(metric, y, score, idx, lo, hi, kk, exp_gain, threshold, err_scale, decay, m[lo:hi])
        out[q] = _normalised(metric, value, y, lo, hi, k, kk, n_relevant, exp_gain, empty, idx, buf, m)
