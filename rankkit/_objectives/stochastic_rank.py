"""StochasticRank: coordinate-conditional-sampling gradients of smoothed metrics.

Ustimenko & Prokhorenkova, *StochasticRank: Global Optimization of Scale-Free
Discrete Functions*, ICML 2020 (Theorem 3, Corollary 1, Statement 3 and
Section 4.4). The kernels live at module level and work on flat arrays plus
``group_ptr``; the class only validates parameters and calls them.

One swap formula serves every metric. With the other documents of a query in
sampled order and ``j`` inserted between positions ``p`` and ``p + 1``
(0-based), the adjacent-swap difference is

    M_j(p) - M_j(p+1) = (x_j - x_o) * w(p) * (d(p) - d(p+1)) / norm

where ``o`` is the other document at ``p``, ``d(p) = 0`` from the cut-off
``k`` on, and, for each metric, with "above" meaning the other documents in
sampled order before slot ``p``:

* DCG: ``x = G(r)``, ``d(p) = 1 / log2(p + 2)``, ``w = 1``;
* NDCG: as DCG, ``norm`` = ideal DCG@k (0: the query's gradient is zero);
* ERR: ``x = R(r)`` (stop probability), ``d(p) = 1 / (p + 1)``,
  ``w = prod (1 - R)`` over the documents above;
* MRR: ``x`` = relevant (0/1), ``d(p) = 1 / (p + 1)``, ``w = 1`` if none of
  the documents above is relevant, else 0 (and so are all later slots);
* MAP: ``x`` = relevant (0/1), ``d(p) = 1 / (p + 1)``, ``w = 1 +`` the number
  of relevant documents above, ``norm = min(#relevant, k)``.

(ERR: ``P R_j/(p+1) + P (1-R_j) R_o/(p+2) - [j <-> o] = P (R_j - R_o)(1/(p+1) - 1/(p+2))``;
MAP: the relevant one of the pair contributes ``(c + 1)/rank`` with ``c`` relevant
documents above it, so the swap moves it one rank.) Every ``w(p)`` is a
prefix product or prefix count over the sampled order, read in O(1) with
the "``j`` removed" shift done by index arithmetic.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numba
import numpy as np
from numba import njit

from .._metrics._common import (
    DCG,
    ERR,
    INPUT,
    MAP,
    MRR,
    NDCG,
    ZERO,
    discount,
    doc_value,
    inverse_normaliser,
    stable_sort,
)
from .._random import index_query_keys, noise_ranks, normal, query_stream
from .._validation import Interval, kernel_array
from ._base import MetricObjective

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

#: Metrics StochasticRank smooths (ExpDCG needs a decay parameter this
#: objective does not take; YetiRank optimises it).
SUPPORTED_METRICS = ("ndcg", "dcg", "err", "mrr", "map")


# ---------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------
@njit(cache=True, parallel=True)
def draw_noise(seed, y, raw, group_ptr, query_key, n_estimations, eps, iwork):
    """Fill ``eps[e, i]`` with the N(0, 1) draw the CCS kernel uses.

    Row ``i`` of query ``q`` in sample ``e`` gets
    ``normal(query_stream(seed, query_key[q], e), rank[i])`` with ``rank`` from
    :func:`~rankkit._random.noise_ranks` (its place in the query sorted by ``raw``):
    a pure function of (seed, query id, sample, document), identical for any
    thread count and any placement of the query, and permuted with the rows.
    ``iwork``: (3, n) int64 scratch.
    """
    rank = iwork[2]
    for q in numba.prange(group_ptr.shape[0] - 1):
        a = group_ptr[q]
        b = group_ptr[q + 1]
        noise_ranks(raw, y, a, b, iwork[0], iwork[1], rank)
        for e in range(n_estimations):
            kq = query_stream(seed, query_key[q], e)
            for i in range(a, b):
                eps[e, i] = normal(kq, rank[i])


@njit(cache=True)
def _ccs_query(
    y, raw, a, n, qkey, metric, kk, sigma, mu, n_est, exp_gain, threshold, err_scale,
    seed, eps_in, use_eps, dd, xs, sh, s, top, order, ibuf, pos, rank, pre, acc,
):
    """CCS estimate of ``dE[M]/dz`` (metric, not loss) for one query into ``acc[:n]``.

    Returns the query's normaliser (0 when the gradient is identically zero).
    """
    # Per-document metric values x and the mu-shifted scores z - sigma mu r.
    all_equal = True
    for i in range(n):
        r = y[a + i]
        xs[i] = doc_value(metric, r, exp_gain, threshold, err_scale)
        if xs[i] != xs[0]:
            all_equal = False
        sh[i] = raw[a + i] - sigma * mu * r
        acc[i] = 0.0
    # Every swap difference is (x_j - x_o) * ...: equal values, zero gradient.
    if n <= 1 or all_equal:
        return 0.0
    # 1 / IDCG@k (NDCG), 1 / min(R, k) (MAP), 1 otherwise (scratch indexed 0..n-1).
    norm = inverse_normaliser(metric, y[a:a + n], ZERO, n, kk, exp_gain, threshold, order, ibuf, top)
    if norm == 0.0:
        return 0.0
    n_pos = min(kk, n - 1)  # swap slots p = 0 .. n_pos-1 can change the metric
    inv_sigma = 1.0 / sigma
    if not use_eps:
        # Noise counters as in draw_noise: each document's place in the query
        # sorted by raw score, so the draws follow the documents, not the rows.
        noise_ranks(raw[a:a + n], y[a:a + n], ZERO, n, order, ibuf, rank)
    for e in range(n_est):
        kq = query_stream(seed, qkey, e)
        for i in range(n):
            eps = eps_in[e, a + i] if use_eps else normal(kq, rank[i])
            s[i] = sh[i] + sigma * eps
            order[i] = i
        # Sampled order: s descending, ties by index (the stable sort's input order).
        stable_sort(order, ibuf, ZERO, n, s, s, INPUT)
        for p in range(n):
            pos[order[p]] = p
        # Prefix over the sampled order: pre[p] covers order[0 .. p-1].
        if metric == ERR:
            pre[0] = 1.0
            for p in range(n):
                pre[p + 1] = pre[p] * (1.0 - xs[order[p]])
        elif metric == MRR or metric == MAP:
            pre[0] = 0.0
            for p in range(n):
                pre[p + 1] = pre[p] + xs[order[p]]
        for j in range(n):
            qj = pos[j]
            xj = xs[j]
            aj = sh[j]
            total = 0.0
            w_after = pre[qj]  # ERR: product over others above slot p > qj
            for p in range(n_pos):
                # Others in sampled order with j removed: shift by one past j.
                o = order[p] if p < qj else order[p + 1]
                if metric == ERR:
                    if p <= qj:
                        w = pre[p]
                    else:
                        w_after *= 1.0 - xs[order[p]]
                        w = w_after
                elif metric == MRR or metric == MAP:
                    c = pre[p] if p <= qj else pre[p + 1] - xj
                    if metric == MRR:
                        if c > 0.0:
                            break  # a relevant document above: no swap matters below
                        w = 1.0
                    else:
                        w = c + 1.0
                else:
                    w = 1.0
                diff = xj - xs[o]
                if diff != 0.0:
                    u = (s[o] - aj) * inv_sigma
                    total += diff * w * (dd[p] - dd[p + 1]) * math.exp(-0.5 * u * u)
            acc[j] += total
    return norm


@njit(cache=True, parallel=True)
def stochastic_rank_kernel(
    y, raw, group_ptr, query_key, metric, k, sigma, mu, nu, sfa, n_est, exp_gain, threshold,
    err_scale, seed, eps_in, n_chunks, grad,
):
    """Gradient of the loss ``-E M(z - sigma mu r + sigma eps)`` (CCS, optional SFA).

    Parameters
    ----------
    y, raw : float64 arrays, rows grouped by query (``group_ptr``).
    query_key : uint64 array (n_queries,), keys of the queries' random streams
        (:func:`rankkit._random.query_keys`).
    metric : int, one of ``_metrics._common`` NDCG, DCG, ERR, MRR, MAP.
    k : int, cut-off (``<= 0`` or larger than every query for the whole list).
    sigma, mu, nu : float, smoothing scale, relevance shift, SFA damping.
    sfa : bool, apply scale-free acceleration.
    n_est : int, number of noise samples averaged.
    exp_gain : bool, DCG gain ``2^r - 1`` (else ``r``).
    threshold : float, MRR/MAP relevance threshold.
    err_scale : float, ERR mapping (``<= 0``: labels are probabilities).
    seed : int, this call's seed.
    eps_in : float64 array (n_est, n) of noise to use instead of drawing it
        (test path), or shape (0, 0) to draw it with :func:`draw_noise`'s rule.
    n_chunks : int, number of scratch slots; query ``q`` uses slot
        ``q % n_chunks``, so each slot is touched by one thread only.
    grad : float64 array (n,), output.
    """
    n_q = group_ptr.shape[0] - 1
    max_n = 1
    for q in range(n_q):
        max_n = max(max_n, group_ptr[q + 1] - group_ptr[q])
    kk = max_n if k <= 0 else k
    use_eps = eps_in.shape[0] > 0
    # Discounts d(p) with d(p) = 0 from the cut-off on (index up to max_n).
    dd = np.zeros(max_n + 2)
    for p in range(min(kk, max_n + 2)):
        if metric == NDCG or metric == DCG:
            dd[p] = discount(p)
        else:
            dd[p] = 1.0 / (p + 1.0)
    # Scratch per slot, allocated once (no allocation per query).
    fsc = np.empty((n_chunks, 6, max_n + 1))
    isc = np.empty((n_chunks, 4, max_n + 1), dtype=np.int64)
    for c in numba.prange(n_chunks):
        xs, sh, s, top, pre, acc = fsc[c, 0], fsc[c, 1], fsc[c, 2], fsc[c, 3], fsc[c, 4], fsc[c, 5]
        order, ibuf, pos, rank = isc[c, 0], isc[c, 1], isc[c, 2], isc[c, 3]
        for q in range(c, n_q, n_chunks):
            a = group_ptr[q]
            n = group_ptr[q + 1] - a
            norm = _ccs_query(
                y, raw, a, n, query_key[q], metric, kk, sigma, mu, n_est, exp_gain, threshold,
                err_scale, seed, eps_in, use_eps, dd, xs, sh, s, top, order,
                ibuf, pos, rank, pre, acc,
            )
            if norm == 0.0:
                for i in range(n):
                    grad[a + i] = 0.0
                continue
            # Loss = -metric; phi's 1/sqrt(2 pi) and 1/sigma folded in here.
            scale = -norm * _INV_SQRT_2PI / (sigma * n_est)
            for i in range(n):
                grad[a + i] = acc[i] * scale
            if sfa:
                _sfa(raw, grad, a, n, nu)


@njit(cache=True)
def _sfa(raw, grad, a, n, nu):
    """Scale-free acceleration (Section 4.4, Theorem 4, Corollary 2).

    ``g <- g - mean(g)``; ``c = z - mean(z)``; ``g <- g - <g, c> / (||c|| + nu)^2 c``.
    """
    gm = 0.0
    zm = 0.0
    for i in range(n):
        gm += grad[a + i]
        zm += raw[a + i]
    gm /= n
    zm /= n
    dot = 0.0
    cc = 0.0
    for i in range(n):
        grad[a + i] -= gm
        c = raw[a + i] - zm
        dot += grad[a + i] * c
        cc += c * c
    den = math.sqrt(cc) + nu
    den *= den
    # All scores equal and nu = 0: c is the zero vector, nothing to remove.
    if den > 0.0:
        f = dot / den
        for i in range(n):
            grad[a + i] -= f * (raw[a + i] - zm)


# ---------------------------------------------------------------------------
# objective
# ---------------------------------------------------------------------------
class StochasticRank(MetricObjective):
    r"""StochasticRank: CCS gradients of a Gaussian-smoothed ranking metric.

    The loss of a query is ``L_sigma(z) = -E M(z - sigma mu r + sigma eps)``,
    ``eps ~ N(0, I)``, for a metric ``M`` (NDCG@k, DCG@k, ERR@k, MRR@k,
    MAP@k). One noise draw gives sampled scores ``s``; for each document ``j``
    its own noise is integrated exactly (coordinate conditional sampling,
    Ustimenko & Prokhorenkova 2020, Theorem 3 and Corollary 1):

    .. math::

        \frac{\partial E[M]}{\partial z_j} = \frac{1}{\sigma} \sum_{p=1}^{n-1}
        (M_j(p) - M_j(p+1))\, \varphi\!\left(\frac{t_p - (z_j - \sigma\mu r_j)}{\sigma}\right)

    with the other documents in sampled order ``o_1..o_{n-1}`` (scores
    ``t_p``), ``M_j(p)`` the metric with ``j`` inserted at position ``p`` and
    ``phi`` the standard normal density. The estimate is averaged over
    ``n_estimations`` draws; one draw costs ``O(n log n + n min(n, k))``
    (Statement 3). With ``sfa=True`` the estimate is centred and
    orthogonalised against the centred scores ``c`` (Section 4.4):
    ``g <- g - <g, c> / (||c|| + nu)^2 c``. Hessians are 1 (gradient leaves).

    Parameters
    ----------
    metric : {"ndcg", "dcg", "err", "mrr", "map"}, default="ndcg"
        Metric to smooth, optionally with a cut-off suffix (``"ndcg@10"``).
    k : int, "auto" or None, default="auto"
        Cut-off; must agree with an ``@k`` suffix. ``None``: whole list.
        ``"auto"``: 10 for ``metric="ndcg"`` (the NDCG@10 that ``score`` and
        early stopping report; smoothing NDCG@10 scored 0.37 NDCG@10 points
        higher than the whole list, on average over the learning curves of
        ``docs/user_guide.md``, section 9), else the suffix or the whole list.
    sigma : float, default=1.0
        Noise scale (> 0).
    mu : float, default=0.1
        Shift ``sigma mu r`` of relevant documents downwards (>= 0); ``mu > 0``
        makes the smoothing consistent with the ``worst`` tie rule that the
        metrics use (the paper's SR-R1; ``mu = 0`` is SR-R1soft, CatBoost's
        default). The default 0.1 lies in the range the papers tune over
        ([0.01, 0.2]); it raised test NDCG@10 on MQ2008, ClueWeb09 and Yahoo
        under early stopping (``docs/user_guide.md``, section 9).
    nu : float, default=0.01
        SFA damping (>= 0) of the score norm.
    sfa : bool, default=True
        Apply scale-free acceleration.
    n_estimations : int, default=1
        Noise samples averaged per call.
    gain : {"exp", "linear"} or None, default="exp"
        DCG gain ``2^r - 1`` or ``r`` of the smoothed metric and of the NDCG
        that a ranker's ``score`` and early stopping report. ``None`` smooths
        the linear-gain metric (CatBoost's default surrogate) and reports
        rankkit's exp-gain NDCG like every other ranker; it scored higher on
        ``make_ranking`` data and lower on the LETOR sets under early stopping
        (``docs/user_guide.md``, section 9). On click labels
        (``position_bias`` set) ``None`` trains in the exp form: the debiased
        gains are ``clicks / theta`` in either.
    relevance_threshold : float, default=0.0
        MRR/MAP binarise graded labels: relevant iff ``label > threshold``.
    err_mapping : {None, "chapelle"}, default=None
        ERR stop probabilities: ``None`` needs labels in [0, 1];
        ``"chapelle"`` maps ``(2^r - 1) / 2^{r_max}``.
    err_max_label : float, optional
        ``r_max`` of the Chapelle mapping (default: the largest label seen).
    random_state : int, RandomState instance or None, default=0
        Source of the per-call seeds (0: the same gradients in every run,
        as XGBoost's and LightGBM's own seeds; None: fresh ones).

    Notes
    -----
    Noise is keyed by (call seed, the query id's value, sample, the
    document's place in the query sorted by raw score with ties less relevant
    first, then row order; :mod:`rankkit._random`), so results do not depend
    on the thread count nor on where the query sits among the others, and
    permuting the rows of a query permutes the estimate exactly.

    MAP@k is normalised by ``min(#relevant, k)`` (a perfect top-k scores 1).

    Examples
    --------
    >>> from rankkit._objectives.stochastic_rank import StochasticRank
    >>> obj = StochasticRank("ndcg@3", random_state=0)
    >>> g, h = obj.gradient_hessian([2, 0, 1], [0.0, 0.0, 0.0], qid=[1, 1, 1], seed=1)
    >>> bool(g[0] < 0 < g[1])  # raise the relevant document, lower the other
    True
    """

    uses_hessian = False

    def __init__(
        self, metric="ndcg", k="auto", *, sigma=1.0, mu=0.1, nu=0.01, sfa=True,
        n_estimations=1, gain="exp", relevance_threshold=0.0, err_mapping=None,
        err_max_label=None, random_state=0,
    ):
        self.metric = metric
        self.k = k
        self.sigma = sigma
        self.mu = mu
        self.nu = nu
        self.sfa = sfa
        self.n_estimations = n_estimations
        self.gain = gain
        self.relevance_threshold = relevance_threshold
        self.err_mapping = err_mapping
        self.err_max_label = err_max_label
        self.random_state = random_state

    _parameter_constraints = {
        **MetricObjective._parameter_constraints,
        "gain": [*MetricObjective._parameter_constraints["gain"], None],
        "sigma": [Interval(Real, 0, np.inf, closed="neither")],
        "mu": [Interval(Real, 0, np.inf, closed="left")],
        "nu": [Interval(Real, 0, np.inf, closed="left")],
        "sfa": ["boolean"],
        "n_estimations": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }
    _metric_names = SUPPORTED_METRICS
    #: The gain smoothed when ``gain=None``.
    label_gain = "linear"
    _other_metrics_hint = " (ExpDCG is YetiRank's metric: use YetiRank)"

    def _unused(self, metric_id):
        unused = super()._unused(metric_id)
        if not self.sfa:
            unused["nu"] = ("sfa=False", "sfa=True (the scale-free acceleration)")
        return unused

    def _eval_metric_settings(self):
        settings = super()._eval_metric_settings()
        settings.setdefault("gain", "exp")  # gain=None smooths the linear gain and reports the exp gain
        return settings

    def _compute(self, y, raw, group_ptr, seed, grad, hess, query_keys, eps=None):
        metric_id, k, exp_gain = self._metric()
        group_ptr = kernel_array(group_ptr, np.int64)
        n_q = group_ptr.shape[0] - 1
        if n_q <= 0:
            return
        if eps is None:
            eps = np.empty((0, 0), dtype=np.float64)
        n_chunks = max(1, min(n_q, 4 * numba.get_num_threads()))
        stochastic_rank_kernel(
            y, raw, group_ptr, query_keys, metric_id, k, float(self.sigma), float(self.mu), float(self.nu),
            bool(self.sfa), int(self.n_estimations), exp_gain, float(self.relevance_threshold),
            float(self._err_scale(y, metric_id)), np.int64(seed), eps, n_chunks, grad,
        )
        hess[:] = 1.0

    def sampled_noise(self, y, raw, group_ptr, seed, query_keys=None):
        """The ``(n_estimations, n)`` N(0, 1) draws a call on ``(y, raw)`` with
        ``seed`` uses (``query_keys=None``: the queries' places, as with ``group_ptr=``)."""
        y = kernel_array(y, np.float64)
        raw = kernel_array(raw, np.float64)
        group_ptr = kernel_array(group_ptr, np.int64)
        n = y.shape[0]
        eps = np.empty((int(self.n_estimations), n), dtype=np.float64)
        query_keys = index_query_keys(group_ptr.shape[0] - 1) if query_keys is None else query_keys
        draw_noise(np.int64(seed), y, raw, group_ptr, query_keys, int(self.n_estimations), eps,
                   np.empty((3, n), dtype=np.int64))
        return eps
