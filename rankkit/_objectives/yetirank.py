"""YetiRank and YetiLoss: pairwise logistic weights from noisy rankings."""

import math
from numbers import Integral, Real

import numba
import numpy as np
from numba import njit
from sklearn.utils._param_validation import Options, StrOptions

from .._metrics._common import DCG, DECAY_RANGE, DEFAULT_DECAY, ERR, NDCG, discount_table_for, worst_order
from .._random import logistic, noise_ranks, normal, query_stream
from .._validation import Interval
from ._base import MetricObjective
from ._swap import NO_CUTOFF, err_advance, err_delta, pair_rho, query_setup, swap_delta, swap_prepare

#: ``mode`` value of the kernel for YetiRank's classic weights.
CLASSIC = -1

NOISES = {"none": 0, "logistic": 1, "gaussian": 2}


@njit(cache=True, inline="always")
def _noise(kind, scale, k, index):
    if kind == 1:
        return scale * logistic(k, index)
    if kind == 2:
        return scale * normal(k, index)
    return 0.0


@njit(cache=True)
def yeti_noisy_scores(raw, rank, group_ptr, noise, noise_scale, seed, query_key, q, perm, out):
    """Scores of query ``q`` in permutation ``perm``: ``raw + eps`` into
    ``out[lo:hi]``. ``eps`` of row ``i`` is drawn from
    ``query_stream(seed, query_key, perm)`` (``query_key``: the query's key,
    :func:`~rankkit._random.query_keys`) at counter ``rank[i]``
    (:func:`~rankkit._random.noise_ranks`), so it follows the document when rows are
    permuted and does not depend on how queries are spread over threads,
    arrays or workers."""
    lo = group_ptr[q]
    kk = query_stream(seed, query_key, perm)
    for i in range(lo, group_ptr[q + 1]):
        out[i] = raw[i] + _noise(noise, noise_scale, kk, rank[i])


@njit(cache=True)
def bucket_worst_order(score, y, lo, hi, order, key, count):
    """:func:`~rankkit._metrics._common.worst_order` of ``score[lo:hi]`` by a
    bucket sort: the same ``order[lo:hi]`` (score descending, ties by label
    ascending, then by row), in ``O(n)`` for spread-out scores instead of a
    merge sort's ``O(n log n)`` indirect comparisons.

    Rows go, in row order, to ``n`` equal-width buckets of
    ``(max - score) / (max - min)`` (monotone in the score: equal scores share a
    bucket, a higher score never lands in a later one), then one insertion
    pass with the ``worst`` comparison on the bucketed keys (``key``) finishes
    the order. Insertion is stable and the bucketing keeps row order, so ties
    keep ascending rows: the result is the unique ``worst`` order, whatever the
    bucket boundaries. ``count`` (int) and ``key`` (float) are scratch over
    ``lo:hi``.

    Returns False, with ``order`` undefined, when it does not apply: a
    non-finite score, all scores equal, a span beyond float64's range (its
    buckets would be ``inf * 0``), or a distribution so skewed that the
    insertion pass would take more than ``8 n`` moves; the caller then runs
    ``worst_order``.
    """
    n = hi - lo
    top = score[lo]
    bottom = top
    for i in range(lo, hi):
        v = score[i]
        if not (v - v == 0.0):  # NaN or infinite
            return False
        if v > top:
            top = v
        if v < bottom:
            bottom = v
    span = top - bottom
    if not (0.0 < span < math.inf):  # all equal, or scores of both signs beyond float64's range apart
        return False
    scale = n / span
    if not (scale < math.inf):
        return False
    for i in range(lo, hi):
        count[i] = 0
    for i in range(lo, hi):
        count[lo + min(int((top - score[i]) * scale), n - 1)] += 1
    start = lo
    for i in range(lo, hi):
        c = count[i]
        count[i] = start
        start += c
    for i in range(lo, hi):  # the same buckets, recomputed rather than stored
        b = lo + min(int((top - score[i]) * scale), n - 1)
        p = count[b]
        count[b] = p + 1
        order[p] = i
        key[p] = score[i]
    budget = 8 * n
    for p in range(lo + 1, hi):
        v = key[p]
        row = order[p]
        j = p - 1
        # ``worst``: move left past lower scores, and past equal scores with
        # a higher label (rows of equal score and label keep their order).
        while j >= lo and (key[j] < v or (key[j] == v and y[order[j]] > y[row])):
            key[j + 1] = key[j]
            order[j + 1] = order[j]
            j -= 1
        budget -= p - 1 - j
        if budget < 0:
            return False
        key[j + 1] = v
        order[j + 1] = row
    return True



# The kernel's rules for YetiRank's classic weights and for YetiLoss's metric
# weights, passed to the shared per-query code as functions: each kernel then
# compiles only its own rules (YetiRank's first call compiles 40% faster).
@njit(cache=True, inline="always")
def _classic_setup(mode, y, lo, hi, k, exp_gain, threshold, err_scale, order, buf, val, dval):
    """Classic weights need no per-query metric values: scale 1."""
    return 1.0


@njit(cache=True, inline="always")
def _classic_prepare(mode, dval, order, lo, hi, k, decay, dtab, val, disc, aux1, aux2):
    """Nothing to prepare per round: ``first, second`` unused."""
    return hi - lo, hi - lo


@njit(cache=True, inline="always")
def _classic_weight(mode, a, b, lo, ra, rb, decay_a, inv_p, val, disc, aux1, aux2, first, second, scale, pi_a,
                    s_ab, q_ab):
    """``|r_a - r_b| decay^a / P`` (``decay_a`` holds ``decay^a / P``)."""
    return abs(ra - rb) * decay_a


@njit(cache=True, inline="always")
def _metric_weight(mode, a, b, lo, ra, rb, decay_a, inv_p, val, disc, aux1, aux2, first, second, scale, pi_a,
                   s_ab, q_ab):
    """``|M(swap a, b) - M| / P`` on the noisy ranking, for the pair at positions ``a < b``."""
    if mode == ERR:
        return err_delta(a, b, lo, val, disc, pi_a, s_ab, q_ab) * inv_p
    return swap_delta(mode, a, b, lo, val, disc, aux1, aux2, first, second, scale) * inv_p


@njit(cache=True, inline="always")
def _adjacent_pairs(y, raw, ez, order, grad, hess, mode, a_end, lo, inv_p, decay, val, disc, aux1, aux2, first,
                    second, scale, weight):
    """One round's pairs ``(a, a + 1)`` (``num_neighbors=1``, the default): the document at
    position ``a + 1`` meets pair ``(a, a + 1)``, then pair ``(a + 1, a + 2)``; its sums are
    carried in registers from one to the next rather than stored and reloaded. Same additions
    in the same order as :func:`_neighbour_pairs`."""
    pi_a = 1.0
    decay_a = inv_p
    ia = order[lo]
    ra = y[ia]
    g_a = grad[ia]
    h_a = hess[ia]
    for a in range(a_end):
        ib = order[lo + a + 1]
        rb = y[ib]
        g_b = grad[ib]
        h_b = hess[ib]
        if mode == CLASSIC or ra != rb:
            # Classic weights are |r_a - r_b| decay^a: 0 for equal labels, so those pairs
            # add zeros and the loop needs no branch on the labels.
            w = weight(mode, a, a + 1, lo, ra, rb, decay_a, inv_p, val, disc, aux1, aux2, first, second, scale,
                       pi_a, 0.0, 1.0)
            if mode == CLASSIC or w > 0.0:
                up = ra > rb  # the upper document is the more relevant
                # Selects, not branches: ``up`` is a coin flip.
                win = ia if up else ib
                lose = ib if up else ia
                rho = pair_rho(ez[win], ez[lose], raw[win], raw[lose], 1.0)
                wr = w * rho
                signed = wr if up else -wr  # x - (-wr) == x + wr exactly
                g_a -= signed
                g_b += signed
                h = wr * (1.0 - rho)
                h_a += h
                h_b += h
        grad[ia] = g_a
        hess[ia] = h_a
        if mode == ERR:
            pi_a *= 1.0 - val[lo + a]
        decay_a *= decay
        ia, ra, g_a, h_a = ib, rb, g_b, h_b
    grad[ia] = g_a
    hess[ia] = h_a


@njit(cache=True, inline="always")
def _neighbour_pairs(y, raw, ez, order, grad, hess, n, reach, mode, a_end, lo, inv_p, decay, val, disc, aux1, aux2,
                     first, second, scale, weight):
    """One round's pairs ``(a, b)``, ``a < b <= a + reach``, folded into ``grad`` and ``hess``."""
    pi_a = 1.0
    decay_a = inv_p
    for a in range(a_end):
        ia = order[lo + a]
        ra = y[ia]
        s_ab = 0.0
        q_ab = 1.0
        for b in range(a + 1, min(n, a + reach + 1)):
            ib = order[lo + b]
            rb = y[ib]
            if ra != rb:
                w = weight(mode, a, b, lo, ra, rb, decay_a, inv_p, val, disc, aux1, aux2, first, second, scale,
                           pi_a, s_ab, q_ab)
                if w > 0.0:
                    if ra > rb:
                        win, lose = ia, ib
                    else:
                        win, lose = ib, ia
                    rho = pair_rho(ez[win], ez[lose], raw[win], raw[lose], 1.0)
                    wr = w * rho
                    grad[win] -= wr
                    grad[lose] += wr
                    h = wr * (1.0 - rho)
                    hess[win] += h
                    hess[lose] += h
            if mode == ERR:
                s_ab, q_ab = err_advance(b, lo, val, disc, s_ab, q_ab)
        if mode == ERR:
            pi_a *= 1.0 - val[lo + a]
        decay_a *= decay

@njit(cache=True, inline="always")
def _yeti_queries(y, raw, group_ptr, query_key, mode, k, n_permutations, noise, noise_scale, num_neighbors, decay,
                  exp_gain, threshold, err_scale, seed, grad, hess, iwork, work, dtab, setup, prepare, weight):
    """The body of :func:`yetirank_kernel` and :func:`yetiloss_kernel`, with their rules."""
    order, buf, rank = iwork[0], iwork[1], iwork[2]
    val, disc, aux1, aux2, dval = work[0], work[1], work[2], work[3], work[4]
    noisy, ez, key = work[5], work[6], work[7]
    n_queries = group_ptr.shape[0] - 1
    inv_p = 1.0 / n_permutations
    for q in numba.prange(n_queries):
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        n = hi - lo
        if n < 2:
            continue
        scale = setup(mode, y, lo, hi, k, exp_gain, threshold, err_scale, order, buf, val, dval)
        if scale == 0.0:
            continue
        # rho needs only the noise-free scores: exp once per document.
        z_max = raw[lo]
        for i in range(lo + 1, hi):
            z_max = max(z_max, raw[i])
        for i in range(lo, hi):
            ez[i] = math.exp(raw[i] - z_max)
        reach = n - 1 if num_neighbors < 0 else min(num_neighbors, n - 1)
        a_end = n - 1 if mode == CLASSIC else min(n - 1, k)
        if noise != 0:  # without noise the counters are never read
            # noise_ranks, with the bucket sort.
            if bucket_worst_order(raw, y, lo, hi, order, key, buf):
                for p in range(lo, hi):
                    rank[order[p]] = p - lo
            else:
                noise_ranks(raw, y, lo, hi, order, buf, rank)
        for perm in range(n_permutations):
            yeti_noisy_scores(raw, rank, group_ptr, noise, noise_scale, seed, query_key[q], q, perm, noisy)
            if not bucket_worst_order(noisy, y, lo, hi, order, key, buf):
                worst_order(noisy, y, lo, hi, order, buf)
            first, second = prepare(mode, dval, order, lo, hi, k, decay, dtab, val, disc, aux1, aux2)
            if reach == 1:
                _adjacent_pairs(y, raw, ez, order, grad, hess, mode, a_end, lo, inv_p, decay, val, disc, aux1,
                                aux2, first, second, scale, weight)
            else:
                _neighbour_pairs(y, raw, ez, order, grad, hess, n, reach, mode, a_end, lo, inv_p, decay, val,
                                 disc, aux1, aux2, first, second, scale, weight)


@njit(cache=True, parallel=True)
def yetirank_kernel(
    y, raw, group_ptr, query_key, mode, k, n_permutations, noise, noise_scale, num_neighbors, decay, exp_gain,
    threshold, err_scale, seed, grad, hess, iwork, work, dtab,
):
    """YetiRank's gradients (``mode = CLASSIC``; :func:`yetiloss_kernel` takes
    YetiLoss's, ``mode`` a metric id).

    For each query and each of the ``P = n_permutations`` rounds: add noise,
    sort (``worst`` ties), and for every pair of positions ``a < b <= a + d``
    (``d = num_neighbors``, -1 for all) with different labels, weight
    ``w = |r_a - r_b| decay^a`` (classic) or ``|M(swap a, b) - M|`` on the noisy
    ranking, then fold ``w / P`` at once into the pairwise logistic gradient
    with ``rho = 1/(1 + exp(z_win - z_lose))`` of the noise-free scores. No
    pair matrix: O(n) memory, ``O(P (n log n + n d))`` time per query.

    The sorts are :func:`bucket_worst_order` (``worst_order`` as fallback),
    which gives exactly ``worst_order``'s ranking.

    Scratch indexed like ``y``: ``iwork`` (3, n) int64, ``work`` (8, n)
    float64; ``dtab`` the discount table (length >= the longest query).
    """
    _yeti_queries(y, raw, group_ptr, query_key, mode, k, n_permutations, noise, noise_scale, num_neighbors, decay,
                  exp_gain, threshold, err_scale, seed, grad, hess, iwork, work, dtab, _classic_setup, _classic_prepare,
                  _classic_weight)


@njit(cache=True, parallel=True)
def yetiloss_kernel(
    y, raw, group_ptr, query_key, mode, k, n_permutations, noise, noise_scale, num_neighbors, decay, exp_gain,
    threshold, err_scale, seed, grad, hess, iwork, work, dtab,
):
    """:func:`yetirank_kernel` with a metric's weights (``mode`` a metric id: YetiLoss)."""
    _yeti_queries(y, raw, group_ptr, query_key, mode, k, n_permutations, noise, noise_scale, num_neighbors, decay,
                  exp_gain, threshold, err_scale, seed, grad, hess, iwork, work, dtab, query_setup, swap_prepare,
                  _metric_weight)


class YetiRank(MetricObjective):
    r"""YetiRank (Gulin et al. 2011) and YetiLoss (Lyzhin et al. 2022).

    Each call, per query, repeats ``n_permutations`` times: add noise
    :math:`\epsilon` to the scores, sort by :math:`z + \epsilon` (ties:
    ``worst`` rule), and give every pair of documents at most
    ``num_neighbors`` positions apart with different labels (``a`` the more
    relevant, :math:`p` 0-based positions) the weight

    * ``metric="classic"`` (YetiRank):
      :math:`w_{ab} = |r_a - r_b| \, \text{decay}^{\min(p_a, p_b)}`;
    * ``metric=<name>`` (YetiLoss): :math:`w_{ab} = |M(\text{swap } a, b) - M|`
      on the noisy ranking (exact swap differences, ``rankkit._objectives._swap``).

    With :math:`\bar w` the average over the rounds, the loss is
    :math:`\sum \bar w_{ab} \log(1 + e^{-(z_a - z_b)})`, so with
    :math:`\rho = 1 / (1 + e^{z_a - z_b})` of the noise-free scores:
    :math:`g_a \mathrel{-}= \bar w \rho`, :math:`g_b \mathrel{+}= \bar w \rho`,
    :math:`h_a, h_b \mathrel{+}= \bar w \rho (1 - \rho)`. Each round is folded
    into ``g``, ``h`` at once: O(n) memory, :math:`O(P (n \log n + n d))` time.

    Parameters
    ----------
    metric : str, default="classic"
        ``"classic"`` for YetiRank, or a metric name (``"ndcg"``, ``"dcg"``,
        ``"err"``, ``"mrr"``, ``"map"``, ``"expdcg"``, optionally ``@k``) for
        YetiLoss.
    k : int, "auto" or None, default="auto"
        Metric cut-off (YetiLoss): pairs whose upper position is ``>= k``
        are skipped (their swap does not change the metric). ``None``: whole
        list. ``"auto"``: 10 for ``metric="ndcg"`` (the NDCG@10 that ``score``
        and early stopping report; see :class:`StochasticRank`), else the
        suffix or the whole list; YetiRank (``"classic"``) has no cut-off.
    n_permutations : int, default=10
        Noisy rankings per query and call.
    noise : {"logistic", "gaussian", "none"}, default="logistic"
        :math:`\epsilon = s \log(u / (1 - u))` with :math:`u \sim U(0, 1)`,
        :math:`\epsilon \sim N(0, s^2)`, or no noise; :math:`s` = ``noise_scale``.
    noise_scale : float, default=1.0
    num_neighbors : int or "auto", default="auto"
        Largest position distance of a pair; -1 for all pairs. ``"auto"``
        is 2 for YetiLoss with NDCG or DCG and 1 otherwise (YetiRank and
        the other YetiLoss metrics): measured on every dataset at hand,
        second neighbours help NDCG@10 with the default engine's trees (about
        neutral with XGBoost's and LightGBM's) and not MRR or MAP
        (``docs/user_guide.md``, section 9).
    decay : float in (0, 1], default=0.85
        Position decay of the classic weights (and the ExpDCG base of YetiLoss
        with ``metric="expdcg"``).
    gain, relevance_threshold, err_mapping, err_max_label
        Metric parameters, as in :class:`~rankkit._objectives.lambdamart.LambdaMART`.
    random_state : int, RandomState instance or None, default=0
        Seeds the per-call noise (None: fresh seeds every run); a fixed value gives identical gradients
        whatever the number of threads. The noise of a document in round ``p``
        is a function of ``(seed, the query id's value, p)`` and of its place
        in the query sorted by score (ties: less relevant first, then row
        order; :mod:`rankkit._random`), so permuting the rows of a query
        permutes the gradients, and a query's gradients do not depend on the
        other queries or on where it sits.

    Notes
    -----
    Relation to CatBoost's ``YetiRank``/``YetiLoss`` (``yetirank_helpers.cpp``):

    * CatBoost's noise multiplies ``exp(z)`` by ``u / (1 - u)``: standard
      logistic noise on ``z`` with no scale, as here with ``noise_scale=1``;
      its Gaussian noise uses ``noise_power`` as the standard deviation, like
      ``noise_scale`` here.
    * CatBoost's classic weights use adjacent pairs only, a constant factor
      0.15 and ``decay`` 0.99 by default; rankkit honours ``num_neighbors``
      for the classic weights too (1 by default, CatBoost's choice), drops
      the constant (a rescaling of the learning rate) and follows
      the YetiRank paper's default 0.85.
    * Neither normalises weights per query; both average over permutations.
    * CatBoost's YetiLoss weights for MRR and MAP are approximations (e.g.
      MRR pairs only before the first relevant document, ``1/a - 1/b``);
      rankkit uses the exact swap difference of every metric.
    * CatBoost stores an n x n weight matrix per query; rankkit folds each
      round into the gradients directly.

    References
    ----------
    A. Gulin, I. Kuralenok, D. Pavlov, "Winning the transfer learning track of
    Yahoo!'s learning to rank challenge with YetiRank", JMLR W&CP 14, 2011.
    I. Lyzhin, A. Ustimenko, A. Gulin, L. Prokhorenkova, "Which Tricks are
    Important for Learning to Rank?", 2022.

    Examples
    --------
    >>> from rankkit._objectives.yetirank import YetiRank
    >>> g, h = YetiRank(random_state=0).gradient_hessian([0, 2, 1], [0.0, 0.0, 0.0], qid=[5, 5, 5])
    >>> bool(abs(g.sum()) < 1e-12 and g[1] < 0)
    True
    """

    _parameter_constraints = {
        **MetricObjective._parameter_constraints,
        "n_permutations": [Interval(Integral, 1, None, closed="left")],
        "noise": [StrOptions(set(NOISES))],
        "noise_scale": [Interval(Real, 0, np.inf, closed="left")],
        "num_neighbors": [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1}), StrOptions({"auto"})],
        "decay": [DECAY_RANGE],
        "random_state": ["random_state"],
    }
    _other_metrics_hint = " or 'classic' (YetiRank)"
    _own_metric_names = ("classic",)

    def __init__(
        self, metric="classic", k="auto", *, n_permutations=10, noise="logistic", noise_scale=1.0,
        num_neighbors="auto", decay=DEFAULT_DECAY, gain="exp", relevance_threshold=0.0, err_mapping=None,
        err_max_label=None, random_state=0,
    ):
        self.metric = metric
        self.k = k
        self.n_permutations = n_permutations
        self.noise = noise
        self.noise_scale = noise_scale
        self.num_neighbors = num_neighbors
        self.decay = decay
        self.gain = gain
        self.relevance_threshold = relevance_threshold
        self.err_mapping = err_mapping
        self.err_max_label = err_max_label
        self.random_state = random_state

    def _is_classic(self):
        return self.metric.lower().strip() == "classic"

    def _metric(self):
        """``(mode, kernel cut-off, exp_gain)``: ``CLASSIC`` or a YetiLoss metric id."""
        if not self._is_classic():
            if self.metric.lower().strip().startswith("classic@"):  # parse_metric would not know "classic"
                raise ValueError(
                    f"YetiRank: metric={self.metric!r}: 'classic' takes no cut-off, it uses the position decay; "
                    "pass metric='classic', or a YetiLoss metric with a cut-off such as 'ndcg@10'."
                )
            return super()._metric()
        if self.k not in (None, "auto"):
            raise ValueError(
                f"YetiRank: k applies to YetiLoss metrics (got k={self.k!r}); metric='classic' uses the "
                "position decay instead. Leave k at its default or pass a metric such as 'ndcg'."
            )
        super()._check_err_options()
        self._check_unused(CLASSIC)
        return CLASSIC, NO_CUTOFF, True

    def _unused(self, metric_id):
        unused = super()._unused(metric_id)
        if self.noise == "none":
            unused["noise_scale"] = ("noise='none'", "noise='gaussian' or 'logistic'")
        return unused

    def _neighbors(self, mode):
        """``num_neighbors`` with ``"auto"`` resolved for the metric ``mode``."""
        if self.num_neighbors != "auto":
            return int(self.num_neighbors)
        return 2 if mode in (NDCG, DCG) else 1

    def _compute(self, y, raw, group_ptr, seed, grad, hess, query_keys):
        mode, k, exp_gain = self._metric()
        n = y.shape[0]
        kernel = yetirank_kernel if mode == CLASSIC else yetiloss_kernel
        kernel(
            y, raw, group_ptr, query_keys, mode, k, int(self.n_permutations), NOISES[self.noise],
            float(self.noise_scale), self._neighbors(mode), float(self.decay), exp_gain,
            float(self.relevance_threshold), self._err_scale(y, mode), np.uint64(seed), grad, hess,
            np.empty((3, n), dtype=np.int64), np.empty((8, n)), discount_table_for(group_ptr),
        )
