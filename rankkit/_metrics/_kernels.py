"""Numba kernels for tie-aware ranking metrics.

Every kernel works on the query-sorted layout: flat ``y`` and ``score``
(float64) and ``group_ptr`` (int64 offsets). Queries are independent, so the
driver :func:`evaluate_kernel` runs them in parallel with ``prange``; each
query only touches its own slice ``[group_ptr[q], group_ptr[q + 1])`` of the
caller-allocated scratch arrays, so nothing is allocated per query and the
result does not depend on the number of threads.

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

from numba import njit, prange

from rankkit._metrics._common import (
    AVERAGE,
    DCG,
    ERR,
    EXPDCG,
    MAP,
    MRR,
    NDCG,
    SMALL_K,
    WORST,
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
    sum of precisions is returned; the caller divides.
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
    return acc


@njit(cache=True)
def _err_block(y, idx, lo, a, t, kk, err_scale, m):
    """Expected ERR contribution of one tied block, before the prefix factor.

    The block holds ``t`` documents (``idx[lo + a : lo + a + t]``, labels
    ascending) at positions ``a .. a + t - 1``. Under a uniformly random order,
    a document ``u`` placed at block offset ``j`` (probability ``1/t``) is
    preceded by a uniformly random ``j``-subset ``S`` of the other documents,
    so its expected contribution is

    ``R_u / t * sum_{j: a + j < k} E[prod_{v in S} (1 - R_v)] / (a + j + 1)``.

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
                inner += m[j] / (a + j + 1.0)
            inner /= t
        total += ru * inner
    return total


@njit(cache=True)
def _average_value(metric, y, score, idx, lo, hi, kk, exp_gain, threshold, err_scale, decay, m):
    """Expected metric over uniformly random orders of every tied block.

    ``idx[lo:hi]`` is sorted by score descending. Blocks ``[a, a + t)`` of
    equal scores are handled in closed form:

    * DCG/NDCG/ExpDCG (linear in the per-position weights): every document of
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
    * ERR: the prefix product over earlier blocks is order-free; inside the
      block see :func:`_err_block`.

    For MAP the expected sum of precisions is returned; the caller divides.
    """
    n = hi - lo
    acc = 0.0
    not_stopped = 1.0
    c = 0
    a = 0
    while a < n:
        b = a + 1
        s0 = score[idx[lo + a]]
        while b < n and score[idx[lo + b]] == s0:
            b += 1
        t = b - a
        if a >= kk and metric != ERR:
            break
        if metric == DCG or metric == NDCG or metric == EXPDCG:
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
            acc += gsum * wsum / t
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
        else:  # ERR
            if a >= kk or not_stopped == 0.0:
                break
            acc += not_stopped * _err_block(y, idx, lo, a, t, kk, err_scale, m)
            for p in range(a, b):
                not_stopped *= 1.0 - err_probability(y[idx[lo + p]], err_scale)
        a = b
    return acc


@njit(cache=True, parallel=True)
def evaluate_kernel(
    metric,
    y,
    score,
    group_ptr,
    k,
    ties,
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
    """Per-query metric values written into ``out`` (length ``n_queries``).

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
    exp_gain : bool
        DCG gain ``2^r - 1`` (True) or ``r`` (False).
    empty : float
        Value of an NDCG/MRR/MAP query without relevant document (``nan``
        excludes it).
    threshold : float
        MRR/MAP relevance threshold (relevant iff label > threshold).
    err_scale : float
        ``<= 0``: ERR labels are probabilities; else Chapelle's ``2^{r_max}``.
    decay : float
        ExpDCG decay.
    idx, buf : ndarray of int64, m : ndarray of float64
        Scratch, length ``n_samples`` each; query ``q`` uses only its slice.
    out : ndarray of float64
        Output, length ``n_queries``.
    """
    n_queries = group_ptr.shape[0] - 1
    for q in prange(n_queries):
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        n = hi - lo
        kk = n if (k <= 0 or k > n) else k
        n_relevant = 0
        if metric == MRR or metric == MAP:
            for i in range(lo, hi):
                if is_relevant(y[i], threshold):
                    n_relevant += 1
            if n_relevant == 0:
                out[q] = empty
                continue
        mode = WORST if ties == AVERAGE else ties
        if ties != AVERAGE and kk <= SMALL_K and kk < n:
            top_k(idx, lo, hi, kk, score, y, mode)
        else:
            for i in range(lo, hi):
                idx[i] = i
            stable_sort(idx, buf, lo, hi, score, y, mode)
        if ties == AVERAGE:
            value = _average_value(
                metric, y, score, idx, lo, hi, kk, exp_gain, threshold, err_scale, decay, m[lo:hi]
            )
        else:
            value = _ordered_value(metric, y, idx, lo, hi, kk, exp_gain, threshold, err_scale, decay)
        if metric == MAP:
            # AP@k = sum of precisions at relevant positions <= k / min(R, k).
            value /= min(n_relevant, kk)
        elif metric == NDCG:
            ideal = ideal_dcg(y, lo, hi, kk, exp_gain, idx, buf, m)
            value = empty if ideal <= 0.0 else value / ideal
        out[q] = value
