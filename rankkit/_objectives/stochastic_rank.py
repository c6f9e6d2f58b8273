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
import numbers

import numba
import numpy as np
from numba import njit

from .._metrics._common import (
    DCG,
    ERR,
    MAP,
    MRR,
    NDCG,
    METRIC_IDS,
    chapelle_scale,
    discount,
    err_probability,
    gain,
    is_relevant,
    parse_metric,
)
from .._random import key, normal
from .._validation import check_k, check_labels
from ._base import RankingObjective
from ._swap import WORST_ORDER, noise_ranks, stable_sort

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

#: Metrics StochasticRank smooths (ExpDCG needs a decay parameter this
#: objective does not take; YetiRank optimises it).
SUPPORTED_METRICS = ("ndcg", "dcg", "err", "mrr", "map")


# ---------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------
@njit(cache=True)
def _sort_desc(keys, idx, kbuf, ibuf, n):
    """Sort ``keys[:n]`` descending, carrying ``idx``; ties keep ``idx`` order.

    Stable bottom-up merge sort (insertion-sorted runs of 16) in the caller's
    scratch: no allocation, deterministic tie order (``idx`` starts ascending,
    so equal keys come out by ascending index).
    """
    run = 16
    for lo in range(0, n, run):
        hi = min(lo + run, n)
        for i in range(lo + 1, hi):
            kv = keys[i]
            iv = idx[i]
            m = i - 1
            while m >= lo and keys[m] < kv:
                keys[m + 1] = keys[m]
                idx[m + 1] = idx[m]
                m -= 1
            keys[m + 1] = kv
            idx[m + 1] = iv
    src_k, src_i, dst_k, dst_i = keys, idx, kbuf, ibuf
    in_buf = False
    width = run
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, m, out = lo, mid, lo
            while i < mid and m < hi:
                # ">=" keeps the left run first among equal keys (stability).
                if src_k[i] >= src_k[m]:
                    dst_k[out] = src_k[i]
                    dst_i[out] = src_i[i]
                    i += 1
                else:
                    dst_k[out] = src_k[m]
                    dst_i[out] = src_i[m]
                    m += 1
                out += 1
            while i < mid:
                dst_k[out] = src_k[i]
                dst_i[out] = src_i[i]
                i += 1
                out += 1
            while m < hi:
                dst_k[out] = src_k[m]
                dst_i[out] = src_i[m]
                m += 1
                out += 1
        src_k, dst_k = dst_k, src_k
        src_i, dst_i = dst_i, src_i
        in_buf = not in_buf
        width *= 2
    if in_buf:
        for i in range(n):
            keys[i] = kbuf[i]
            idx[i] = ibuf[i]


@njit(cache=True, parallel=True)
def draw_noise(seed, y, raw, group_ptr, n_estimations, eps, iwork):
    """Fill ``eps[e, i]`` with the N(0, 1) draw the CCS kernel uses.

    Row ``i`` of query ``q`` in sample ``e`` gets
    ``normal(key(seed, q * n_estimations + e), rank[i])`` with ``rank`` from
    :func:`~._swap.noise_ranks` (its place in the query sorted by ``raw``):
    a pure function of (seed, query, sample, document), identical for any
    thread count, and permuted with the rows. ``iwork``: (3, n) int64 scratch.
    """
    rank = iwork[2]
    for q in numba.prange(group_ptr.shape[0] - 1):
        a = group_ptr[q]
        b = group_ptr[q + 1]
        noise_ranks(raw, y, a, b, iwork[0], iwork[1], rank)
        for e in range(n_estimations):
            kq = key(seed, q * n_estimations + e)
            for i in range(a, b):
                eps[e, i] = normal(kq, rank[i])


@njit(cache=True)
def _ccs_query(
    y, raw, a, n, q, metric, kk, sigma, mu, n_est, exp_gain, threshold, err_scale,
    seed, eps_in, use_eps, dd, xs, sh, s, keys, order, kbuf, ibuf, pos, rank, pre, acc,
):
    """CCS estimate of ``dE[M]/dz`` (metric, not loss) for one query into ``acc[:n]``.

    Returns the query's normaliser (0 when the gradient is identically zero).
    """
    # Per-document metric values x and the mu-shifted scores z - sigma mu r.
    all_equal = True
    n_rel = 0
    for i in range(n):
        r = y[a + i]
        if metric == NDCG or metric == DCG:
            xs[i] = gain(r, exp_gain)
        elif metric == ERR:
            xs[i] = err_probability(r, err_scale)
        else:
            xs[i] = 1.0 if is_relevant(r, threshold) else 0.0
            n_rel += int(xs[i])
        if xs[i] != xs[0]:
            all_equal = False
        sh[i] = raw[a + i] - sigma * mu * r
        acc[i] = 0.0
    # Every swap difference is (x_j - x_o) * ...: equal values, zero gradient.
    if n <= 1 or all_equal:
        return 0.0
    norm = 1.0
    if metric == NDCG:
        # Ideal DCG@k from the gains sorted descending (labels, not scores).
        m = min(kk, n)
        if m == n:
            for i in range(n):
                keys[i] = xs[i]
                order[i] = i
            _sort_desc(keys, order, kbuf, ibuf, n)
        else:
            # Only the k largest gains matter: keep them sorted in keys[:m]
            # (O(n) when k is small next to n, O(n k) at worst).
            filled = 0
            for i in range(n):
                v = xs[i]
                if filled == m:
                    if v <= keys[m - 1]:
                        continue
                    filled -= 1
                t = filled
                while t > 0 and keys[t - 1] < v:
                    keys[t] = keys[t - 1]
                    t -= 1
                keys[t] = v
                filled += 1
        ideal = 0.0
        for p in range(m):
            ideal += keys[p] * dd[p]
        if ideal <= 0.0:
            return 0.0
        norm = 1.0 / ideal
    elif metric == MAP:
        norm = 1.0 / min(n_rel, kk)
    n_pos = min(kk, n - 1)  # swap slots p = 0 .. n_pos-1 can change the metric
    inv_sigma = 1.0 / sigma
    if not use_eps:
        # Noise counters as in draw_noise: each document's place in the query
        # sorted by raw score, so the draws follow the documents, not the rows.
        for i in range(n):
            order[i] = a + i
        stable_sort(order, ibuf, 0, n, raw, y, WORST_ORDER)
        for p in range(n):
            rank[order[p] - a] = p
    for e in range(n_est):
        kq = key(seed, q * n_est + e)
        for i in range(n):
            eps = eps_in[e, a + i] if use_eps else normal(kq, rank[i])
            s[i] = sh[i] + sigma * eps
            keys[i] = s[i]
            order[i] = i
        _sort_desc(keys, order, kbuf, ibuf, n)
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
    y, raw, group_ptr, metric, k, sigma, mu, nu, sfa, n_est, exp_gain, threshold,
    err_scale, seed, eps_in, n_chunks, grad,
):
    """Gradient of the loss ``-E M(z - sigma mu r + sigma eps)`` (CCS, optional SFA).

    Parameters
    ----------
    y, raw : float64 arrays, rows grouped by query (``group_ptr``).
    metric : int, one of ``_metrics._common`` NDCG, DCG, ERR, MRR, MAP.
    k : int, cut-off (``<= 0`` for the whole list).
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
    fsc = np.empty((n_chunks, 7, max_n + 1))
    isc = np.empty((n_chunks, 4, max_n + 1), dtype=np.int64)
    for c in numba.prange(n_chunks):
        xs, sh, s, keys = fsc[c, 0], fsc[c, 1], fsc[c, 2], fsc[c, 3]
        kbuf, pre, acc = fsc[c, 4], fsc[c, 5], fsc[c, 6]
        order, ibuf, pos, rank = isc[c, 0], isc[c, 1], isc[c, 2], isc[c, 3]
        for q in range(c, n_q, n_chunks):
            a = group_ptr[q]
            n = group_ptr[q + 1] - a
            norm = _ccs_query(
                y, raw, a, n, q, metric, kk, sigma, mu, n_est, exp_gain, threshold,
                err_scale, seed, eps_in, use_eps, dd, xs, sh, s, keys, order, kbuf,
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
def _is_real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


class StochasticRank(RankingObjective):
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
    k : int, optional
        Cut-off; must agree with an ``@k`` suffix. ``None``: whole list.
    sigma : float, default=1.0
        Noise scale (> 0).
    mu : float, default=0.0
        Shift ``sigma mu r`` of relevant documents downwards (>= 0); large
        ``mu`` makes the smoothing consistent with the ``worst`` tie rule
        (the paper's SR-R1; ``mu = 0`` is SR-R1soft).
    nu : float, default=0.01
        SFA damping (>= 0) of the score norm.
    sfa : bool, default=True
        Apply scale-free acceleration.
    n_estimations : int, default=1
        Noise samples averaged per call.
    gain : {"exp", "linear"}, default="exp"
        DCG gain ``2^r - 1`` or ``r``.
    relevance_threshold : float, default=0.0
        MRR/MAP binarise graded labels: relevant iff ``label > threshold``.
    err_mapping : {None, "chapelle"}, default=None
        ERR stop probabilities: ``None`` needs labels in [0, 1];
        ``"chapelle"`` maps ``(2^r - 1) / 2^{r_max}``.
    err_max_label : float, optional
        ``r_max`` of the Chapelle mapping (default: the largest label seen).
    random_state : int, Generator or None
        Source of the per-call seeds.

    Notes
    -----
    Noise is keyed by (call seed, query index, sample, the document's place
    in the query sorted by raw score with ties less relevant first, then row
    order), so results do not depend on the thread count, and permuting the
    rows of a query permutes the estimate exactly.

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
        self, metric="ndcg", k=None, *, sigma=1.0, mu=0.0, nu=0.01, sfa=True,
        n_estimations=1, gain="exp", relevance_threshold=0.0, err_mapping=None,
        err_max_label=None, random_state=None,
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

    def _resolved(self):
        """Validated ``(metric name, k)``."""
        k = check_k(self.k, name="k")
        name, k = parse_metric(self.metric, k)
        if name not in SUPPORTED_METRICS:
            raise ValueError(
                f"metric={self.metric!r} is not supported by StochasticRank; use one of "
                f"{list(SUPPORTED_METRICS)} (ExpDCG is YetiRank's metric: use YetiRank)."
            )
        return name, k

    def _check_params(self):
        self._resolved()
        if not _is_real(self.sigma) or self.sigma <= 0:
            raise ValueError(f"sigma must be a finite float > 0 (noise scale), got {self.sigma!r}.")
        if not _is_real(self.mu) or self.mu < 0:
            raise ValueError(f"mu must be a finite float >= 0 (0 disables the shift), got {self.mu!r}.")
        if not _is_real(self.nu) or self.nu < 0:
            raise ValueError(f"nu must be a finite float >= 0 (SFA damping, e.g. 0.01), got {self.nu!r}.")
        if not isinstance(self.sfa, (bool, np.bool_)):
            raise ValueError(f"sfa must be True or False, got {self.sfa!r}.")
        n_est = self.n_estimations
        if isinstance(n_est, bool) or not isinstance(n_est, numbers.Integral) or n_est < 1:
            raise ValueError(f"n_estimations must be an int >= 1, got {n_est!r}.")
        if self.gain not in ("exp", "linear"):
            raise ValueError(f"gain must be 'exp' (2^r - 1) or 'linear' (r), got {self.gain!r}.")
        if not _is_real(self.relevance_threshold):
            raise ValueError(
                f"relevance_threshold must be a finite float, got {self.relevance_threshold!r}."
            )
        if self.err_mapping not in (None, "chapelle"):
            raise ValueError(
                f"err_mapping must be None (labels are probabilities in [0, 1]) or 'chapelle', "
                f"got {self.err_mapping!r}."
            )
        if self.err_max_label is not None and (not _is_real(self.err_max_label) or self.err_max_label < 0):
            raise ValueError(f"err_max_label must be a float >= 0 or None, got {self.err_max_label!r}.")

    def _check_labels(self, y):
        self._check_params()
        name, _ = self._resolved()
        if name == "err" and self.err_mapping is None:
            y = check_labels(y, name="y", unit_interval=True)
        else:
            y = check_labels(y, name="y")
        if name == "err" and self.err_mapping == "chapelle" and self.err_max_label is not None:
            if y.size and y.max() > self.err_max_label:
                raise ValueError(
                    f"y has labels up to {y.max():g} but err_max_label={self.err_max_label!r}; "
                    "raise err_max_label or leave it None to use the largest label."
                )
        return y

    def _err_scale(self, y):
        if self.err_mapping is None:
            return 0.0
        if self.err_max_label is not None:
            return float(2.0 ** self.err_max_label)
        return chapelle_scale(y)

    def _compute(self, y, raw, group_ptr, seed, grad, hess, eps=None):
        name, k = self._resolved()
        group_ptr = np.ascontiguousarray(group_ptr, dtype=np.int64)
        n_q = group_ptr.shape[0] - 1
        if n_q <= 0:
            return
        if eps is None:
            eps = np.empty((0, 0), dtype=np.float64)
        n_chunks = max(1, min(n_q, 4 * numba.get_num_threads()))
        stochastic_rank_kernel(
            y, raw, group_ptr, METRIC_IDS[name], 0 if k is None else int(k),
            float(self.sigma), float(self.mu), float(self.nu), bool(self.sfa),
            int(self.n_estimations), self.gain == "exp", float(self.relevance_threshold),
            float(self._err_scale(y)), np.int64(seed), eps, n_chunks, grad,
        )
        hess[:] = 1.0

    def sampled_noise(self, y, raw, group_ptr, seed):
        """The ``(n_estimations, n)`` N(0, 1) draws a call on ``(y, raw)`` with ``seed`` uses."""
        y = np.ascontiguousarray(y, dtype=np.float64)
        raw = np.ascontiguousarray(raw, dtype=np.float64)
        group_ptr = np.ascontiguousarray(group_ptr, dtype=np.int64)
        n = y.shape[0]
        eps = np.empty((int(self.n_estimations), n), dtype=np.float64)
        draw_noise(np.int64(seed), y, raw, group_ptr, int(self.n_estimations), eps,
                   np.empty((3, n), dtype=np.int64))
        return eps
