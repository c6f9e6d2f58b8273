"""Swap differences ``|M(swap a, b) - M|`` of ranking metrics, O(1) per pair.

LambdaMART (Burges 2010) and YetiLoss (Lyzhin et al. 2022) weight a pair of
documents at positions ``a < b`` of a ranking by how much the metric changes
when the two documents trade places. This module computes that change for
every metric of ``rankkit.metrics`` with an optional
cut-off ``k``, after an O(n) per-query preparation, using the shared
quantities of :mod:`rankkit._metrics._common` (per-document values, the
discount table, the normalisers, the ``worst`` order), so an objective and the
metric it optimises share one definition.

Positions are 0-based (position ``p`` is rank ``p + 1``). A query occupies
``lo:hi`` of the flat arrays; ``order[lo + p]`` is the row shown at position
``p``. ``doc_values`` computes each document's metric value once per
query (labels do not change between the rounds of a call) and
``discount_table`` the DCG discounts once per call; :func:`swap_prepare`
then writes per-position values into caller-allocated float scratch arrays
``val``, ``disc``, ``aux1``, ``aux2`` (same layout):

==========  ===================  ======================  =====================
metric      ``val[p]``           ``disc[p]`` (0 if p>=k)  extra
==========  ===================  ======================  =====================
DCG, NDCG   ``G(r)``             ``1 / log2(p + 2)``
ExpDCG      ``r``                ``decay^p``
ERR         ``R`` (stop prob.)   ``1 / (p + 1)``
MRR         ``1[r > t]``         ``1 / (p + 1)``         first/second relevant
MAP         ``1[r > t]``         ``1 / (p + 1)``         ``aux1[p] = c(p)``,
                                                         ``aux2[p] = H(p)``
==========  ===================  ======================  =====================

with ``c(p)`` the number of relevant documents in positions ``0..p`` and
``H(p) = sum_{i <= p, i relevant, i < k} 1/(i + 1)``. The closed forms, for the
document ``x`` at ``a`` and ``y`` at ``b`` (``a < b``):

* DCG/NDCG/ExpDCG: ``(v_y - v_x)(d_a - d_b)``, divided by the ideal DCG@k
  for NDCG.
* MRR: with ``f`` the first and ``f2`` the second relevant position, the
  reciprocal rank changes only if ``x`` is the first relevant document
  (it becomes ``min(b, f2)``) or ``y`` is relevant and ``f > a`` (it
  becomes ``a``).
* MAP (numerator ``sum_{i relevant, i < k} c(i)/(i + 1)``): moving a relevant
  document from ``a`` down to ``b`` changes it by
  ``-c(a) d_a + c(b) d_b - (H(b-1) - H(a))``; moving one up from ``b`` to ``a``
  by ``(c(a) + 1) d_a - c(b) d_b + (H(b-1) - H(a))``. Divided by
  ``min(R, k)`` (``R`` relevant documents), the AP@k of the ideal ranking.
* ERR: with ``Pi(a) = prod_{j<a}(1 - R_j)``,
  ``Q(a,b) = prod_{a<j<b}(1 - R_j)`` and
  ``S(a,b) = sum_{a<p<b} d_p R_p prod_{a<j<p}(1 - R_j)``, the change is
  ``Pi(a) (R_x - R_y) (S(a,b) + Q(a,b) d_b - d_a)``. ``S`` and ``Q`` are
  accumulated while ``b`` ascends for a fixed ``a`` (:func:`err_advance`), and
  ``Pi`` while ``a`` ascends: a closed form for arbitrary ``(a, b)`` would need
  to divide by ``1 - R_j``, which is 0 for a perfect document (``R = 1``). Pair
  loops in rankkit visit ``b`` in ascending order for each ``a``, so this costs
  O(1) per pair as well.

Swapping two positions both at or beyond ``k`` never changes a metric@k, so
pair loops only need ``a < k``.
"""

import math

from numba import njit

from .._metrics._common import DCG, ERR, EXPDCG, MAP, METRIC_IDS, MRR, NDCG, doc_values, inverse_normaliser

#: Internal metric id used only by tests: every pair's difference is 1, which
#: turns LambdaMART into RankNet (Burges et al. 2005). Past every metric id, so
#: that no metric's per-document values (:func:`doc_values`) are taken for it.
PAIRWISE = max(METRIC_IDS.values()) + 1

#: ``k`` value used by kernels for "no cut-off".
NO_CUTOFF = 2**62


@njit(cache=True)
def query_setup(metric, y, lo, hi, k, exp_gain, threshold, err_scale, order, buf, val, dval):
    """What a query's swap differences need before any ranking: the factor of
    :func:`swap_delta` (``inverse_normaliser``: 1 / IDCG@k, 1 / min(R, k) or
    1; 0 means the query gets no gradient) and, unless it is 0, the
    per-document values in ``dval[lo:hi]`` (``doc_values``). ``order``,
    ``buf`` and ``val`` serve as scratch."""
    scale = inverse_normaliser(metric, y, lo, hi, k, exp_gain, threshold, order, buf, val)
    if scale != 0.0:
        doc_values(metric, y, lo, hi, exp_gain, threshold, err_scale, dval)
    return scale


@njit(cache=True)
def swap_prepare(metric, dval, order, lo, hi, k, decay, dtab, val, disc, aux1, aux2):
    """Fill the per-position arrays of the ranking ``order[lo:hi]`` from the
    per-document values ``dval`` (``doc_values``) and the discount table
    ``dtab`` (``discount_table``, length at least ``hi - lo``).

    Returns ``(first, second)``: positions of the first and second relevant
    documents (``hi - lo`` when absent); meaningful for MRR only.
    """
    n = hi - lo
    first = n
    second = n
    count = 0.0
    hsum = 0.0
    dpow = 1.0
    for p in range(n):
        v = dval[order[lo + p]]
        val[lo + p] = v
        inside = p < k
        if metric == NDCG or metric == DCG:
            disc[lo + p] = dtab[p] if inside else 0.0
        elif metric == EXPDCG:
            disc[lo + p] = dpow if inside else 0.0
            dpow *= decay
        elif metric == ERR:
            disc[lo + p] = 1.0 / (p + 1.0) if inside else 0.0
        elif metric == MRR or metric == MAP:
            disc[lo + p] = 1.0 / (p + 1.0) if inside else 0.0
            if v > 0.0:
                count += 1.0
                if first == n:
                    first = p
                elif second == n:
                    second = p
                if inside:
                    hsum += 1.0 / (p + 1.0)
            aux1[lo + p] = count
            aux2[lo + p] = hsum
        else:  # PAIRWISE
            disc[lo + p] = 1.0
    return first, second


@njit(cache=True, inline="always")
def swap_delta(metric, a, b, lo, val, disc, aux1, aux2, first, second, scale):
    """``|M(swap a, b) - M|`` for ``a < b``, every metric but ERR (see
    :func:`err_delta`), after :func:`swap_prepare`; ``scale`` from
    ``inverse_normaliser``."""
    vx = val[lo + a]
    vy = val[lo + b]
    if vx == vy:
        return 0.0
    if metric == NDCG or metric == DCG or metric == EXPDCG:
        return abs((vy - vx) * (disc[lo + a] - disc[lo + b])) * scale
    if metric == MRR:
        if vx > vy:  # the relevant document at a moves down to b
            if a != first:
                return 0.0
            f2 = min(b, second)
            return disc[lo + a] - disc[lo + f2]
        if first < a:  # a relevant document above a keeps the first place
            return 0.0
        return disc[lo + a] - disc[lo + first]
    if metric == MAP:
        mid = aux2[lo + b - 1] - aux2[lo + a]
        if vx > vy:
            d = -aux1[lo + a] * disc[lo + a] + aux1[lo + b] * disc[lo + b] - mid
        else:
            d = (aux1[lo + a] + 1.0) * disc[lo + a] - aux1[lo + b] * disc[lo + b] + mid
        return abs(d) * scale
    return 1.0  # PAIRWISE


@njit(cache=True, inline="always")
def err_delta(a, b, lo, val, disc, pi_a, s_ab, q_ab):
    """``|ERR(swap a, b) - ERR|`` given the running ``Pi(a)``, ``S(a,b)``,
    ``Q(a,b)`` (module docstring)."""
    return abs(pi_a * (val[lo + a] - val[lo + b]) * (s_ab + q_ab * disc[lo + b] - disc[lo + a]))


@njit(cache=True, inline="always")
def err_advance(b, lo, val, disc, s_ab, q_ab):
    """``(S(a, b+1), Q(a, b+1))`` from ``(S(a, b), Q(a, b))``."""
    r = val[lo + b]
    return s_ab + disc[lo + b] * r * q_ab, q_ab * (1.0 - r)


@njit(cache=True, inline="always")
def pair_rho(e_win, e_lose, z_win, z_lose, sigma):
    """``1 / (1 + exp(sigma (z_win - z_lose)))`` from ``e = exp(sigma (z - z_max))``
    precomputed per document: ``e_lose / (e_win + e_lose)``, one division
    instead of one ``exp`` per pair. Falls back to the exponential when both
    ``e`` are so small that the ratio would lose precision."""
    den = e_win + e_lose
    if den > 1e-250:
        return e_lose / den
    return logistic_rho(sigma * (z_win - z_lose))


@njit(cache=True, inline="always")
def logistic_rho(diff):
    """``1 / (1 + exp(diff))`` without overflow."""
    if diff >= 0.0:
        e = math.exp(-diff)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(diff))
