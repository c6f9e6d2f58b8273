"""LambdaMART: pairwise logistic gradients weighted by metric swap differences."""

import math
from numbers import Integral, Real

import numba
import numpy as np
from numba import njit

from .._metrics._common import DCG, DEFAULT_DECAY, ERR, EXPDCG, NDCG, discount_table_for, worst_order
from .._validation import Interval
from ._base import MetricObjective
from ._swap import err_advance, err_delta, logistic_rho, query_setup, swap_delta, swap_prepare

#: Base ``b`` of ExpDCG (``sum_i b^{i-1} r``) when LambdaMART optimises it:
#: the metrics' default decay.
EXPDCG_DECAY = DEFAULT_DECAY
_LN2 = math.log(2.0)


@njit(cache=True)
def _dcg_family_pairs(lo, n, a_end, sigma, scale, raw, order, val, disc, ez_p, g_p, h_p):
    """The pair loop of :func:`lambdamart_kernel` for NDCG, DCG and ExpDCG.

    Their swap difference ``|(v_b - v_a)(d_a - d_b)| scale`` is 0 for equal
    labels and ``v`` rises with the label, so the loop needs no branch on the
    labels: the winner is chosen by a select and equal-label pairs add exact
    zeros. Same sums in the same order as :func:`_metric_pairs` would give
    (plus exact zeros), 1.3-1.7x faster on 1M documents
    (``benchmarks/bench_gradients.py``). Returns the query's
    ``S`` (sum of ``2 lambda``).
    """
    sum_lambda = 0.0
    s2 = sigma * sigma
    for a in range(a_end):
        va = val[lo + a]
        da = disc[lo + a]
        ea = ez_p[lo + a]
        ga = 0.0
        ha = 0.0
        for b in range(a + 1, n):
            vb = val[lo + b]
            d = abs((vb - va) * (da - disc[lo + b])) * scale
            eb = ez_p[lo + b]
            a_wins = va > vb
            den = ea + eb
            if den > 1e-250:
                rho = (eb if a_wins else ea) / den
            else:  # both exp underflowed: the exact form
                za = raw[order[lo + a]]
                zb = raw[order[lo + b]]
                rho = logistic_rho(sigma * (za - zb) if a_wins else sigma * (zb - za))
            lam = sigma * d * rho
            signed = lam if a_wins else -lam
            ga -= signed
            g_p[lo + b] += signed
            h = s2 * d * rho * (1.0 - rho)
            ha += h
            h_p[lo + b] += h
            sum_lambda += 2.0 * lam
        g_p[lo + a] += ga
        h_p[lo + a] += ha
    return sum_lambda


@njit(cache=True)
def _metric_pairs(metric, lo, n, a_end, sigma, scale, raw, order, val, disc, aux1, aux2, first, second,
                  lab_p, ez_p, g_p, h_p):
    """The pair loop of :func:`lambdamart_kernel` for ERR, MRR and MAP (any
    metric of :func:`~._swap.swap_delta`): pairs with equal labels or a zero
    swap difference are skipped. Returns the query's ``S`` (sum of ``2 lambda``).
    """
    sum_lambda = 0.0
    pi_a = 1.0
    for a in range(a_end):
        ra = lab_p[lo + a]
        ea = ez_p[lo + a]
        ga = 0.0
        ha = 0.0
        s_ab = 0.0
        q_ab = 1.0
        for b in range(a + 1, n):
            rb = lab_p[lo + b]
            if ra != rb:
                if metric == ERR:
                    d = err_delta(a, b, lo, val, disc, pi_a, s_ab, q_ab)
                else:
                    d = swap_delta(metric, a, b, lo, val, disc, aux1, aux2, first, second, scale)
                if d > 0.0:
                    eb = ez_p[lo + b]
                    # rho = e_lose / (e_win + e_lose): no exp per pair; the
                    # exact form only when both e underflow.
                    den = ea + eb
                    if den <= 1e-250:
                        den = -1.0
                    if ra > rb:
                        if den > 0.0:
                            rho = eb / den
                        else:
                            rho = logistic_rho(sigma * (raw[order[lo + a]] - raw[order[lo + b]]))
                        lam = sigma * d * rho
                        ga -= lam
                        g_p[lo + b] += lam
                    else:
                        if den > 0.0:
                            rho = ea / den
                        else:
                            rho = logistic_rho(sigma * (raw[order[lo + b]] - raw[order[lo + a]]))
                        lam = sigma * d * rho
                        ga += lam
                        g_p[lo + b] -= lam
                    h = sigma * sigma * d * rho * (1.0 - rho)
                    ha += h
                    h_p[lo + b] += h
                    sum_lambda += 2.0 * lam
            if metric == ERR:
                s_ab, q_ab = err_advance(b, lo, val, disc, s_ab, q_ab)
        g_p[lo + a] += ga
        h_p[lo + a] += ha
        if metric == ERR:
            pi_a *= 1.0 - val[lo + a]
    return sum_lambda


@njit(cache=True, parallel=True)
def lambdamart_kernel(
    y, raw, group_ptr, metric, k, trunc, sigma, normalize, exp_gain, threshold, err_scale, decay,
    grad, hess, iwork, work, dtab,
):
    """LambdaMART gradients and hessians, added into ``grad``/``hess``.

    Per query: sort by ``raw`` (ties: ``worst`` rule), then for every pair of
    positions ``a < b`` with ``a < min(trunc, k)`` and different labels,
    ``Delta = |M(swap a, b) - M|`` (:mod:`._swap`), ``rho = 1/(1 + exp(sigma
    (z_i - z_j)))`` with ``i`` the more relevant document:
    ``g_i -= sigma Delta rho``, ``g_j += sigma Delta rho``,
    ``h_i, h_j += sigma^2 Delta rho (1 - rho)``. With ``normalize``, the
    query's ``g`` and ``h`` are multiplied by ``log2(1 + S) / S``,
    ``S = sum_pairs 2 sigma Delta rho``.

    Scratch, indexed like ``y`` so each query uses its own slice (no
    allocation per query, nothing shared between threads): ``iwork`` (2, n)
    int64, ``work`` (9, n) float64; ``dtab`` is the discount table
    (length >= the longest query).
    """
    order, buf = iwork[0], iwork[1]
    val, disc, aux1, aux2, dval = work[0], work[1], work[2], work[3], work[4]
    lab_p, ez_p, g_p, h_p = work[5], work[6], work[7], work[8]
    n_queries = group_ptr.shape[0] - 1
    for q in numba.prange(n_queries):
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        n = hi - lo
        if n < 2:
            continue
        scale = query_setup(metric, y, lo, hi, k, exp_gain, threshold, err_scale, order, buf, val, dval)
        if scale == 0.0:
            continue
        worst_order(raw, y, lo, hi, order, buf)
        first, second = swap_prepare(metric, dval, order, lo, hi, k, decay, dtab, val, disc, aux1, aux2)
        # Position-ordered copies keep the pair loop on contiguous memory.
        z_max = raw[order[lo]]
        for p in range(lo, hi):
            i = order[p]
            lab_p[p] = y[i]
            ez_p[p] = math.exp(sigma * (raw[i] - z_max))
            g_p[p] = 0.0
            h_p[p] = 0.0
        # Pairs with both positions at or beyond k leave a metric@k unchanged.
        a_end = min(n - 1, trunc, k)
        if metric == NDCG or metric == DCG or metric == EXPDCG:
            sum_lambda = _dcg_family_pairs(lo, n, a_end, sigma, scale, raw, order, val, disc, ez_p, g_p, h_p)
        else:
            sum_lambda = _metric_pairs(
                metric, lo, n, a_end, sigma, scale, raw, order, val, disc, aux1, aux2, first, second,
                lab_p, ez_p, g_p, h_p,
            )
        f = 1.0
        if normalize and sum_lambda > 0.0:
            # log1p: log2(1 + S) rounds to 0 for S below about 1e-16 (well separated queries).
            f = math.log1p(sum_lambda) / (_LN2 * sum_lambda)
        for p in range(lo, hi):
            i = order[p]
            grad[i] += f * g_p[p]
            hess[i] += f * h_p[p]


def lambdamart_gradients(y, raw, group_ptr, metric_id, k, trunc, sigma, normalize, exp_gain, threshold,
                         err_scale, decay, grad, hess):
    """Allocate the O(n) scratch once and run :func:`lambdamart_kernel`."""
    n = y.shape[0]
    lambdamart_kernel(
        y, raw, group_ptr, metric_id, k, trunc, float(sigma), bool(normalize), bool(exp_gain),
        float(threshold), float(err_scale), float(decay), grad, hess,
        np.empty((2, n), dtype=np.int64), np.empty((9, n)), discount_table_for(group_ptr),
    )


class LambdaMART(MetricObjective):
    r"""LambdaMART gradients for any rankkit metric (Burges 2010; Wu et al. 2010).

    For the current ranking (raw scores descending, ties broken by the
    ``worst`` rule: the less relevant document first) and every pair of
    documents with :math:`r_i > r_j`,

    .. math::

        \Delta_{ij} = |M(\text{swap } i, j) - M|, \qquad
        \rho_{ij} = \frac{1}{1 + e^{\sigma (z_i - z_j)}},

        g_i \mathrel{-}= \sigma \Delta_{ij} \rho_{ij}, \quad
        g_j \mathrel{+}= \sigma \Delta_{ij} \rho_{ij}, \quad
        h_i, h_j \mathrel{+}= \sigma^2 \Delta_{ij} \rho_{ij} (1 - \rho_{ij}).

    :math:`\Delta` comes in O(1) per pair from prefix arrays (see
    ``rankkit._objectives._swap``), so a query costs
    :math:`O(n \log n + n \min(n, T, k))`; memory is O(n) (11 scratch
    values per document, allocated once per call).

    Parameters
    ----------
    metric : {"ndcg", "dcg", "err", "mrr", "map", "expdcg"}, default="ndcg"
        Metric whose swap differences weight the pairs; ``"ndcg@10"`` sets
        ``k``. NDCG divides by the ideal DCG@k (a query whose ideal is 0 gets
        no gradient); MAP divides by ``min(R, k)``; ExpDCG uses the base
        ``b = 0.85`` (:data:`EXPDCG_DECAY`, the metrics' default ``decay``).
    k : int, "auto" or None, default="auto"
        Metric cut-off. Pairs with both documents at positions ``>= k`` do
        not change the metric and are skipped. ``None``: the whole list.
        ``"auto"``: 30 for ``metric="ndcg"``, else the ``@k`` suffix or the
        whole list. Deeper than StochasticRank's and YetiLoss's 10: pairs
        below the cut-off give LambdaMART no gradient, which starves it on
        long lists. On the learning curves of ``docs/user_guide.md``,
        section 9, NDCG@30 scored 0.16 NDCG@10 points higher than the whole
        list on average, and NDCG@10 lost on long lists (by up to 1.5 points)
        what it won on short ones (up to 0.5).
    sigma : float, default=1.0
        Slope of the pairwise logistic.
    truncation : int, optional
        LightGBM's ``lambdarank_truncation_level``: only pairs with at least
        one document in the top ``truncation`` positions; cost O(n T).
    normalize : bool, default=True
        LightGBM-style query normalisation: multiply the query's gradients
        and hessians by :math:`\log_2(1 + S) / S` with
        :math:`S = \sum_{\text{pairs}} 2 \sigma \Delta_{ij} \rho_{ij}` (each
        pair's lambda counted once for each of its two documents), which
        damps queries with many mis-ordered pairs. LightGBM's ``lambdarank``
        with ``lambdarank_norm=True`` additionally divides each
        :math:`\Delta_{ij}` by :math:`0.01 + |z_i - z_j|`; rankkit does not,
        so that :math:`g` stays the gradient of a weighted pairwise
        logistic loss.
    gain : {"exp", "linear"}, default="exp"
        DCG gain :math:`2^r - 1` or :math:`r`.
    relevance_threshold : float, default=0.0
        Labels above it are relevant (MRR, MAP).
    err_mapping : {None, "chapelle"}, default=None
        ERR stop probabilities: the labels themselves (must lie in [0, 1])
        or :math:`(2^r - 1) / 2^{r_{max}}`.
    err_max_label : float, optional
        :math:`r_{max}` of the Chapelle mapping; default the largest label.

    References
    ----------
    C. J. C. Burges, "From RankNet to LambdaRank to LambdaMART: An Overview",
    MSR-TR-2010-82, 2010. Q. Wu, C. J. C. Burges, K. Svore, J. Gao, "Adapting
    boosting for information retrieval measures", Information Retrieval 2010.

    Examples
    --------
    >>> from rankkit._objectives.lambdamart import LambdaMART
    >>> g, h = LambdaMART(metric="ndcg", normalize=False).gradient_hessian(
    ...     [0, 1], [0.0, 0.0], qid=[1, 1])
    >>> bool(g[1] < 0 < g[0])
    True
    """

    _parameter_constraints = {
        **MetricObjective._parameter_constraints,
        "sigma": [Interval(Real, 0, np.inf, closed="neither")],
        "truncation": [Interval(Integral, 1, None, closed="left"), None],
        "normalize": ["boolean"],
    }
    #: NDCG@30 for ``k="auto"``: see ``k`` above.
    _auto_ndcg_cutoff = 30

    def __init__(
        self, metric="ndcg", k="auto", *, sigma=1.0, truncation=None, normalize=True, gain="exp",
        relevance_threshold=0.0, err_mapping=None, err_max_label=None,
    ):
        self.metric = metric
        self.k = k
        self.sigma = sigma
        self.truncation = truncation
        self.normalize = normalize
        self.gain = gain
        self.relevance_threshold = relevance_threshold
        self.err_mapping = err_mapping
        self.err_max_label = err_max_label

    def _compute(self, y, raw, group_ptr, seed, grad, hess, query_keys):
        metric_id, k, exp_gain = self._metric()
        trunc = y.shape[0] if self.truncation is None else int(self.truncation)
        lambdamart_gradients(
            y, raw, group_ptr, metric_id, k, trunc, self.sigma, self.normalize, exp_gain,
            self.relevance_threshold, self._err_scale(y, metric_id), EXPDCG_DECAY, grad, hess,
        )
