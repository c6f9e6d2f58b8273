"""LambdaMART, YetiRank/YetiLoss, XE-NDCG and the swap differences they share.

Every kernel is compared with its naive twin in ``tests/_reference_objectives.py``
on random queries full of ties (labels and scores), single-document queries,
all-equal-label and all-zero-label queries.
"""

import math
import re

import numba
import numpy as np
import pytest
from sklearn.base import clone

from rankkit._metrics._common import METRIC_IDS, SWAP_METRICS, discount_table, doc_values, inverse_normaliser, worst_order
from rankkit._objectives._base import HESSIAN_FLOOR, MetricObjective
from rankkit._objectives._swap import (
    NO_CUTOFF,
    PAIRWISE,
    err_advance,
    err_delta,
    swap_delta,
    swap_prepare,
)
from rankkit._random import noise_ranks
from rankkit._objectives.lambdamart import LambdaMART, lambdamart_gradients
from rankkit._objectives.stochastic_rank import StochasticRank
from rankkit._objectives.xendcg import XENDCG
from rankkit._objectives.yetirank import NOISES, YetiRank, bucket_worst_order, yeti_noisy_scores
from rankkit._sglb import SGLB
from rankkit.objectives import OBJECTIVES

from . import _reference_objectives as ref
from . import _reference_random as ref_random

METRICS = list(SWAP_METRICS)  # the metrics with O(1) swap differences


def make_queries(seed, n_queries=14, max_size=9, n_levels=4, score_levels=3):
    """Sorted-layout data: random sizes (incl. 1), few label and score values
    (ties everywhere), plus an all-zero-label and an all-equal-label query."""
    rng = np.random.default_rng(seed)
    sizes = list(rng.integers(1, max_size + 1, size=n_queries)) + [1, 5, 6]
    ys, zs = [], []
    for i, s in enumerate(sizes):
        if i == len(sizes) - 2:
            y = np.zeros(s)
        elif i == len(sizes) - 1:
            y = np.full(s, 2.0)
        else:
            y = rng.integers(0, n_levels, size=s).astype(float)
        ys.append(y)
        zs.append(rng.integers(0, score_levels, size=s) * 0.5 + rng.normal(0, 0.01, size=s).round(1))
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return np.concatenate(ys), np.concatenate(zs), ptr


def metric_kw(metric):
    """Metric parameters for the reference and the objectives: ERR maps graded
    labels with Chapelle's mapping (r_max = 3 as in make_queries)."""
    if metric == "err":
        return dict(err_mapping="chapelle", err_max_label=3.0), dict(err_scale=8.0)
    return {}, {}


# -- swap differences -------------------------------------------------------


def kernel_swaps(metric, labels, k, *, exp_gain=True, threshold=0.0, err_scale=-1.0, decay=0.85):
    """All ``(a, b)`` swap differences from the O(1) kernels (b ascending per a)."""
    n = len(labels)
    y = np.asarray(labels, dtype=float)
    order = np.arange(n, dtype=np.int64)
    buf = np.empty(n, dtype=np.int64)
    val, disc, aux1, aux2, dval = (np.empty(n) for _ in range(5))
    dtab = np.empty(n)
    discount_table(dtab)
    mid = METRIC_IDS[metric]
    kk = NO_CUTOFF if k is None else k
    scale = inverse_normaliser(mid, y, 0, n, kk, exp_gain, threshold, order, buf, np.empty(n))
    order[:] = np.arange(n)
    doc_values(mid, y, 0, n, exp_gain, threshold, err_scale, dval)
    first, second = swap_prepare(mid, dval, order, 0, n, kk, decay, dtab, val, disc, aux1, aux2)
    out = {}
    pi = 1.0
    for a in range(n):
        s, q = 0.0, 1.0
        for b in range(a + 1, n):
            if metric == "err":
                out[a, b] = err_delta(a, b, 0, val, disc, pi, s, q)
                s, q = err_advance(b, 0, val, disc, s, q)
            else:
                out[a, b] = swap_delta(mid, a, b, 0, val, disc, aux1, aux2, first, second, scale)
        pi *= 1.0 - val[a]
    return out


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("k", [None, 1, 3, 5])
def test_swap_difference_matches_recompute(metric, k):
    rng = np.random.default_rng(METRICS.index(metric) * 10 + (k or 0))
    err_scale = -1.0
    for trial in range(25):
        n = int(rng.integers(1, 10))
        if metric == "err" and trial % 2 == 0:
            labels = list(rng.choice([0.0, 0.25, 0.5, 1.0], size=n))  # probabilities, R = 1 included
            err_scale = -1.0
        else:
            labels = list(rng.integers(0, 4, size=n).astype(float))
            err_scale = 8.0
        if trial == 0:
            labels = [0.0] * n
        threshold = 0.0 if trial % 3 else 1.0
        exp_gain = trial % 4 != 1
        got = kernel_swaps(metric, labels, k, exp_gain=exp_gain, threshold=threshold, err_scale=err_scale, decay=0.7)
        for (a, b), d in got.items():
            want = ref.swap_difference(
                metric, labels, a, b, k, exp_gain=exp_gain, threshold=threshold, err_scale=err_scale, decay=0.7
            )
            assert d == pytest.approx(want, rel=1e-12, abs=1e-12), (labels, a, b)


def test_err_swap_with_certain_stop():
    """R = 1 above, between and at the swapped positions (the case a closed form
    with divisions by 1 - R would get wrong)."""
    for labels in ([1.0, 0.5, 1.0, 0.0, 0.25], [0.0, 1.0, 1.0, 0.5], [0.5, 0.0, 1.0, 1.0, 0.0]):
        got = kernel_swaps("err", labels, None)
        for (a, b), d in got.items():
            assert d == pytest.approx(ref.swap_difference("err", labels, a, b), abs=1e-15)


# -- LambdaMART -------------------------------------------------------------


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("k", [None, 3])
@pytest.mark.parametrize("truncation,normalize", [(None, False), (2, False), (None, True), (4, True)])
def test_lambdamart_matches_reference(metric, k, truncation, normalize):
    y, z, ptr = make_queries(1)
    obj_kw, ref_kw = metric_kw(metric)
    obj = LambdaMART(metric, k, sigma=1.3, truncation=truncation, normalize=normalize, **obj_kw)
    g, h = obj.gradient_hessian(y, z, group_ptr=ptr)
    g_ref, h_ref = ref.lambdamart(y, z, ptr, metric, k, sigma=1.3, truncation=truncation, normalize=normalize, **ref_kw)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, np.maximum(h_ref, HESSIAN_FLOOR), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("metric", METRICS)
def test_lambdamart_scores_far_below_the_top(metric):
    """exp(sigma (z - z_max)) underflows to 0 for both documents of a pair far
    below the top score: rho then comes from the exact logistic."""
    y = np.array([0.0, 2.0, 1.0, 3.0, 0.0, 2.0])
    z = np.array([0.0, -800.0, -801.0, -1500.0, -0.5, -2000.0])
    ptr = np.array([0, 6], dtype=np.int64)
    obj_kw, ref_kw = metric_kw(metric)
    g, h = LambdaMART(metric, normalize=False, **obj_kw).gradient_hessian(y, z, group_ptr=ptr)
    g_ref, h_ref = ref.lambdamart(y, z, ptr, metric, None, normalize=False, **ref_kw)
    assert np.all(np.isfinite(g)) and np.abs(g).max() > 0
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, np.maximum(h_ref, HESSIAN_FLOOR), rtol=1e-10, atol=1e-13)


def test_lambdamart_normalisation_of_a_well_separated_query():
    """The factor log2(1 + S) / S tends to 1 / ln 2 as S -> 0; computed as
    written it rounds to 0 below S ~ 1e-16 (a gap of 38 in the scores) and
    the query's gradients vanished."""
    sigma = 1.0
    for gap in (20.0, 38.0, 60.0):
        g, _ = LambdaMART(normalize=True, sigma=sigma).gradient_hessian([1.0, 0.0], [gap, 0.0], qid=[0, 0])
        delta = 1.0 - 1.0 / np.log2(3.0)  # NDCG of the swap: the relevant document drops to rank 2
        rho = 1.0 / (1.0 + np.exp(sigma * gap))
        s = 2.0 * sigma * delta * rho
        want = sigma * delta * rho * np.log1p(s) / np.log(2.0) / s
        np.testing.assert_allclose(g, [-want, want], rtol=1e-12)


def test_lambdamart_err_probabilities_and_linear_gain_and_threshold():
    y, z, ptr = make_queries(2)
    yp = y / 3.0
    g, _ = LambdaMART("err", normalize=False).gradient_hessian(yp, z, group_ptr=ptr)
    np.testing.assert_allclose(g, ref.lambdamart(yp, z, ptr, "err", normalize=False)[0], rtol=1e-10, atol=1e-13)
    g, _ = LambdaMART("ndcg@4", gain="linear", normalize=False).gradient_hessian(y, z, group_ptr=ptr)
    np.testing.assert_allclose(g, ref.lambdamart(y, z, ptr, "ndcg", 4, normalize=False, exp_gain=False)[0], rtol=1e-10)
    g, _ = LambdaMART("map", relevance_threshold=1.0, normalize=False).gradient_hessian(y, z, group_ptr=ptr)
    np.testing.assert_allclose(g, ref.lambdamart(y, z, ptr, "map", normalize=False, threshold=1.0)[0], rtol=1e-10)


def _pair_loss(y, z, ptr, sigma):
    """sum over r_i > r_j of log(1 + exp(-sigma (z_i - z_j)))."""
    total = 0.0
    for q in range(len(ptr) - 1):
        for i in range(ptr[q], ptr[q + 1]):
            for j in range(ptr[q], ptr[q + 1]):
                if y[i] > y[j]:
                    total += math.log1p(math.exp(-sigma * (z[i] - z[j])))
    return total


def test_lambdamart_with_unit_delta_is_ranknet():
    y, z, ptr = make_queries(3)
    z = z + np.random.default_rng(0).normal(0, 0.3, size=z.shape)
    n = y.shape[0]
    g, h = np.zeros(n), np.zeros(n)
    lambdamart_gradients(y, z, ptr, PAIRWISE, NO_CUTOFF, n, 0.7, False, True, 0.0, -1.0, 0.85, g, h)
    g_ref, h_ref = ref.ranknet(y, z, ptr, sigma=0.7)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h, h_ref, rtol=1e-12, atol=1e-14)
    # ... and both are the derivative of the pairwise logistic loss.
    eps = 1e-6
    for i in range(0, n, 3):
        zp, zm = z.copy(), z.copy()
        zp[i] += eps
        zm[i] -= eps
        fd = (_pair_loss(y, zp, ptr, 0.7) - _pair_loss(y, zm, ptr, 0.7)) / (2 * eps)
        assert g[i] == pytest.approx(fd, rel=1e-6, abs=1e-8)


# -- YetiRank / YetiLoss ----------------------------------------------------


def yeti_noisy_rounds(obj, y, z, ptr, seed):
    """``rounds[p][i]``: the noisy score of row ``i`` in round ``p``, noise
    drawn by the independent generator of ``tests._reference_random``."""
    return [z + np.array(ref_random.yetirank_noise(y, z, ptr, seed, p, obj.noise, float(obj.noise_scale)))
            for p in range(obj.n_permutations)]


def yeti_reference(obj, y, z, ptr, seed):
    """Reference gradients: independently drawn noise and a naive full
    pair-weight matrix."""
    _, ref_kw = metric_kw(obj.metric.split("@")[0])
    g = np.zeros(y.shape[0])
    h = np.zeros(y.shape[0])
    k = obj.k
    metric = obj.metric
    if k == "auto":  # the documented rule: 10 for "ndcg" without a cut-off of its own, else none
        k = 10 if metric == "ndcg" else None
    if "@" in metric:
        metric, k = metric.split("@")[0], int(metric.split("@")[1])
    rounds = yeti_noisy_rounds(obj, y, z, ptr, seed)
    neighbors = obj.num_neighbors
    if neighbors == "auto":  # the documented rule: 2 for YetiLoss with NDCG or DCG, else 1
        neighbors = 2 if metric in ("ndcg", "dcg") else 1
    for q in range(len(ptr) - 1):
        lo, hi = ptr[q], ptr[q + 1]
        W = ref.yeti_weights(list(y[lo:hi]), [r[lo:hi] for r in rounds], metric, k,
                             num_neighbors=neighbors, decay=obj.decay, **ref_kw)
        g[lo:hi], h[lo:hi] = ref.pairwise_logistic_grad(W, z[lo:hi])
    return g, h, W


@pytest.mark.parametrize(
    "metric,k,num_neighbors,noise",
    [
        ("classic", None, 1, "logistic"),
        ("classic", None, 3, "gaussian"),
        ("classic", None, -1, "none"),
        ("ndcg", None, 1, "logistic"),
        ("ndcg", 3, 2, "gaussian"),
        ("dcg", None, -1, "logistic"),
        ("err", None, 2, "logistic"),
        ("err", 4, -1, "gaussian"),
        ("mrr", None, 1, "logistic"),
        ("mrr", 3, -1, "logistic"),
        ("map", None, 2, "logistic"),
        ("map", 2, -1, "gaussian"),
        ("expdcg", 5, 1, "logistic"),
    ],
)
def test_yetirank_matches_reference(metric, k, num_neighbors, noise):
    y, z, ptr = make_queries(4)
    obj_kw, _ = metric_kw(metric)
    scale = {} if noise == "none" else {"noise_scale": 0.8}  # noise_scale is refused with noise="none"
    decay = {"decay": 0.7} if metric in ("classic", "expdcg") else {}  # refused where the metric does not read it
    obj = YetiRank(metric, k, n_permutations=4, noise=noise, num_neighbors=num_neighbors, **decay, **scale, **obj_kw)
    seed = 123456789
    g, h = obj.gradient_hessian(y, z, group_ptr=ptr, seed=seed)
    g_ref, h_ref, _ = yeti_reference(obj, y, z, ptr, seed)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, np.maximum(h_ref, HESSIAN_FLOOR), rtol=1e-10, atol=1e-13)



@pytest.mark.parametrize(
    "metric,k,num_neighbors,noise",
    [
        ("classic", None, 1, "logistic"),
        ("classic", None, 2, "gaussian"),
        ("ndcg", 10, 1, "logistic"),
        ("err", 3, 1, "logistic"),
        ("map", None, 1, "gaussian"),
        ("mrr", 5, 2, "logistic"),
    ],
)
def test_yetirank_matches_reference_on_long_queries(metric, k, num_neighbors, noise):
    """Queries longer than any run or bucket of the kernel's sort, next to
    short ones, with near-continuous scores (the bucket-sort path) and ties;
    ``num_neighbors=1`` takes the kernel's adjacent-pair loop, also with a
    cut-off that stops it before the end of the list."""
    rng = np.random.default_rng(11)
    sizes = [150, 1, 2, 37, 120, 3]
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    y = rng.integers(0, 4, size=ptr[-1]).astype(float)
    z = rng.normal(size=ptr[-1])
    z[ptr[4]:ptr[5]] = z[ptr[4]:ptr[5]].round(0)  # ties in a long query
    obj_kw, _ = metric_kw(metric)
    decay = {"decay": 0.9} if metric == "classic" else {}  # refused where the metric does not read it
    obj = YetiRank(metric, k, n_permutations=3, noise=noise, num_neighbors=num_neighbors, **decay, **obj_kw)
    seed = 2024
    g, h = obj.gradient_hessian(y, z, group_ptr=ptr, seed=seed)
    g_ref, h_ref, _ = yeti_reference(obj, y, z, ptr, seed)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, np.maximum(h_ref, HESSIAN_FLOOR), rtol=1e-10, atol=1e-13)


def test_bucket_worst_order_is_worst_order():
    """The kernel's bucket sort gives exactly ``worst_order``'s ranking
    (score descending, ties by label ascending, then by row), or declines
    (returns False) for inputs it does not handle."""
    rng = np.random.default_rng(5)
    cases = []  # (scores, whether the bucket sort must take them)
    for n in [2, 3, 7, 16, 17, 100, 257, 3000]:
        cases += [
            (rng.normal(size=n), True),  # distinct scores
            (rng.logistic(size=n) + rng.normal(size=n).round(1), True),  # YetiRank's noisy scores
            (rng.normal(size=n).round(1), n <= 100),  # ties (large tied blocks sorted by label: declined)
            (rng.integers(0, 3, size=n) * 0.5, n <= 100),  # a few values, many ties
            (np.where(rng.random(n) < 0.5, -0.0, 0.0) + rng.integers(0, 2, size=n), False),  # signed zeros
            (np.concatenate([rng.normal(size=n - 1) * 1e-3, [1e6]]), False),  # skewed: one outlier
            (rng.standard_t(1, size=n), False),  # heavy tails
            (np.full(n, 1.5), False),  # all equal: always declined
        ]
    for bad in (np.inf, -np.inf, np.nan):  # non-finite: always declined
        score = rng.normal(size=50)
        score[[3, 9]] = bad
        cases.append((score, False))
    # Finite scores further apart than float64's range: the span is inf and the buckets
    # inf * 0 = NaN, an index far outside the scratch (memory corrupted, or a crash).
    cases += [(np.array([-1e308, 0.0, 1e308]), False), (rng.uniform(-1, 1, 50) * 1.7e308, False)]
    for score, must in cases:
        n = score.shape[0]
        y = rng.integers(0, 4, size=n).astype(float)
        expect = np.empty(n, dtype=np.int64)
        worst_order(score, y, 0, n, expect, np.empty(n, dtype=np.int64))
        # the query at an offset in larger arrays, as in the kernel
        big = np.concatenate([[9.0, -9.0], score, [4.0]])
        yy = np.concatenate([[0.0, 1.0], y, [2.0]])
        order = np.full(n + 3, -1, dtype=np.int64)
        taken = bucket_worst_order(big, yy, 2, n + 2, order, np.empty(n + 3), np.empty(n + 3, dtype=np.int64))
        assert taken or not (must and np.ptp(score) > 0), (n, score[:5])
        if taken:
            np.testing.assert_array_equal(order[2:n + 2] - 2, expect)
            assert order[0] == order[1] == order[-1] == -1  # only the query's slice is written
        if not np.isfinite(score).all() or np.ptp(score) == 0 or not np.isfinite(np.max(score) - np.min(score)):
            assert not taken


def test_yetirank_scores_beyond_float64s_span():
    """Scores from -1e308 to 1e308 rank as -1e307 to 1e307 do (they returned
    1e180-sized garbage, or crashed the process)."""
    objective = YetiRank(noise="none")
    far = objective.gradient_hessian([2, 1, 0, 1], [-1e308, 0.0, 1e308, 5.0], qid=[0] * 4)
    near = objective.gradient_hessian([2, 1, 0, 1], [-1e307, 0.0, 1e307, 5.0], qid=[0] * 4)
    np.testing.assert_allclose(far[0], near[0], rtol=1e-12)
    np.testing.assert_allclose(far[1], near[1], rtol=1e-12)
    rng = np.random.default_rng(0)  # noisy rounds on a long query of such scores
    labels, scores = rng.integers(0, 3, 1000), rng.uniform(-1, 1, 1000) * 1.7e308
    grad, hess = YetiRank(random_state=0).gradient_hessian(labels, scores, qid=np.zeros(1000))
    assert np.isfinite(grad).all() and np.isfinite(hess).all() and abs(grad.sum()) < 1e-9


def test_yetirank_noise_distribution():
    """The kernel's noise is what the docstring says: standard logistic
    (variance pi^2/3) and N(0, s^2), independent of the scores."""
    ptr = np.array([0, 2000], dtype=np.int64)
    z = np.zeros(2000)
    out = np.empty(2000)
    draws = {"logistic": [], "gaussian": []}
    for name in draws:
        for p in range(20):
            yeti_noisy_scores(z, np.arange(2000), ptr, NOISES[name], 1.5, np.uint64(99), np.uint64(0), 0, p, out)
            draws[name].append(out.copy())
    lg, gs = np.concatenate(draws["logistic"]), np.concatenate(draws["gaussian"])
    se = 1.0 / math.sqrt(lg.size)
    assert abs(lg.mean()) < 6 * 1.5 * math.pi / math.sqrt(3) * se
    assert lg.var() == pytest.approx(1.5**2 * math.pi**2 / 3, rel=0.05)
    assert abs(gs.mean()) < 6 * 1.5 * se
    assert gs.var() == pytest.approx(1.5**2, rel=0.05)


@pytest.mark.parametrize("metric", ["classic", "ndcg@10", "dcg", "mrr", "map", "expdcg"])
def test_yetirank_auto_neighbors_match_the_reference(metric):
    """``num_neighbors="auto"`` (the default) is 2 for YetiLoss with NDCG or
    DCG and 1 otherwise, against the reference with the number spelled out."""
    y, z, ptr = make_queries(11, n_queries=6)
    obj = YetiRank(metric, n_permutations=3)
    assert obj.num_neighbors == "auto"
    g, h = obj.gradient_hessian(y, z, group_ptr=ptr, seed=5)
    g_ref, h_ref, _ = yeti_reference(obj, y, z, ptr, 5)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h, np.maximum(h_ref, HESSIAN_FLOOR), rtol=1e-10, atol=1e-13)
    explicit = 2 if metric.split("@")[0] in ("ndcg", "dcg") else 1
    g_explicit, _ = YetiRank(metric, n_permutations=3, num_neighbors=explicit).gradient_hessian(
        y, z, group_ptr=ptr, seed=5)
    np.testing.assert_array_equal(g, g_explicit)
    other, _ = YetiRank(metric, n_permutations=3, num_neighbors=3 - explicit).gradient_hessian(
        y, z, group_ptr=ptr, seed=5)
    assert not np.array_equal(g, other)


@pytest.mark.parametrize("make,cutoff", [
    (lambda **kw: StochasticRank(**kw), 10),
    (lambda **kw: YetiRank(**kw, n_permutations=3), 10),
    (lambda **kw: LambdaMART(**kw), 30),
], ids=["StochasticRank", "YetiLoss", "LambdaMART"])
def test_auto_cutoff_for_ndcg_and_the_metrics_own_otherwise(make, cutoff):
    """``k="auto"`` (the default) is NDCG@10 for ``metric="ndcg"`` (NDCG@30
    for LambdaMART), the suffix's cut-off for ``"ndcg@5"`` and the whole list
    for other metrics, on lists longer than 30 (where the cut-off matters)."""
    y, z, ptr = make_queries(3, n_queries=8, max_size=45)
    assert make().k == "auto"

    def grad(metric, k):
        return make(metric=metric, k=k).gradient_hessian(y, z, group_ptr=ptr, seed=4)[0]

    np.testing.assert_array_equal(grad("ndcg", "auto"), grad("ndcg", cutoff))
    assert not np.array_equal(grad("ndcg", "auto"), grad("ndcg", None))
    assert not np.array_equal(grad("ndcg", "auto"), grad("ndcg", 40 - cutoff))
    np.testing.assert_array_equal(grad("ndcg@5", "auto"), grad("ndcg", 5))
    np.testing.assert_array_equal(grad("dcg", "auto"), grad("dcg", None))
    assert not np.array_equal(grad("dcg", "auto"), grad("dcg", cutoff))


def test_yetirank_gradient_is_derivative_of_weighted_pair_loss():
    y, z, ptr = make_queries(5, n_queries=3)
    obj = YetiRank("ndcg", n_permutations=3, num_neighbors=2)
    seed = 77
    g, _ = obj.gradient_hessian(y, z, group_ptr=ptr, seed=seed)
    eps = 1e-6
    rounds = yeti_noisy_rounds(obj, y, z, ptr, seed)
    for q in range(len(ptr) - 1):
        lo, hi = ptr[q], ptr[q + 1]
        W = ref.yeti_weights(list(y[lo:hi]), [r[lo:hi] for r in rounds], "ndcg", num_neighbors=2)
        for i in range(hi - lo):
            zp, zm = z[lo:hi].copy(), z[lo:hi].copy()
            zp[i] += eps
            zm[i] -= eps
            fd = (ref.pairwise_logistic_loss(W, zp) - ref.pairwise_logistic_loss(W, zm)) / (2 * eps)
            assert g[lo + i] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_yetirank_zero_noise_many_rounds_equals_one_round():
    y, z, ptr = make_queries(6)
    g1, h1 = YetiRank("ndcg", n_permutations=1, noise="none").gradient_hessian(y, z, group_ptr=ptr)
    g5, h5 = YetiRank("ndcg", n_permutations=5, noise="none").gradient_hessian(y, z, group_ptr=ptr)
    np.testing.assert_allclose(g1, g5, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h1, h5, rtol=1e-12, atol=1e-15)


# -- XE-NDCG ----------------------------------------------------------------


def test_xendcg_matches_reference_and_finite_differences():
    y, z, ptr = make_queries(7)
    seed = 2024
    g, h = XENDCG().gradient_hessian(y, z, group_ptr=ptr, seed=seed)
    gamma = np.array(ref_random.xendcg_gammas(y, z, ptr, seed))
    eps = 1e-6
    for q in range(len(ptr) - 1):
        lo, hi = ptr[q], ptr[q + 1]
        gm = gamma[lo:hi]
        assert np.all((gm > 0) & (gm < 1))
        if hi - lo == 1:
            assert g[lo] == 0.0 and h[lo] == HESSIAN_FLOOR
            continue
        g_ref, h_ref = ref.xendcg(y[lo:hi], z[lo:hi], gm)
        np.testing.assert_allclose(g[lo:hi], g_ref, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(h[lo:hi], np.maximum(h_ref, HESSIAN_FLOOR), rtol=1e-12, atol=1e-14)
        for i in range(hi - lo):
            zp, zm = z[lo:hi].copy(), z[lo:hi].copy()
            zp[i] += eps
            zm[i] -= eps
            fd = (ref.xendcg_loss(y[lo:hi], zp, gm) - ref.xendcg_loss(y[lo:hi], zm, gm)) / (2 * eps)
            assert g[lo + i] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_xendcg_is_the_exact_gradient_and_lightgbms_lambdas_are_not():
    """rankkit and LightGBM's ``rank_xendcg`` hand the trees different vectors
    for the same gamma: rankkit the exact gradient ``rho - phi`` of Bruch's loss
    (finite differences), LightGBM ``D (I + A + A^2) D^-1 g``, a truncated
    Neumann series of the inverse Hessian (Bruch 2019, section 4.4; the
    reference reproduces LightGBM's leaves in tests/test_lightgbm_backend.py).
    The two agree to first order when the softmax is flat and part when it
    concentrates (LightGBM's terms grow like ``rho_i / (1 - rho_j)``)."""
    y, z, ptr = make_queries(11)
    gamma = np.array(ref_random.xendcg_gammas(y, 3.0 * z, ptr, 7))
    g, _ = XENDCG().gradient_hessian(y, 3.0 * z, group_ptr=ptr, seed=7)
    eps = 1e-6
    gaps = []
    for q in range(len(ptr) - 1):
        lo, hi = ptr[q], ptr[q + 1]
        if hi - lo < 2:
            continue
        zq, yq, gm = 3.0 * z[lo:hi], y[lo:hi], gamma[lo:hi]
        fd = [(ref.xendcg_loss(yq, zq + eps * e, gm) - ref.xendcg_loss(yq, zq - eps * e, gm)) / (2 * eps)
              for e in np.eye(hi - lo)]
        np.testing.assert_allclose(g[lo:hi], fd, rtol=1e-6, atol=1e-9)
        lam, h = ref.xendcg_lightgbm(yq, zq, gm)
        gaps.append(np.abs(lam - g[lo:hi]).max())
        flat_lam, _ = ref.xendcg_lightgbm(yq, np.zeros(hi - lo), gm)
        flat_g, _ = ref.xendcg(yq, np.zeros(hi - lo), gm)
        n = hi - lo
        # Flat softmax: the correction is of order 1/n of the gradient.
        assert np.abs(flat_lam - flat_g).max() <= 2.0 / (n - 1) * np.abs(flat_g).max() + 1e-12
    assert max(gaps) > 0.05


def test_xendcg_lightgbm_lambdas_approximate_a_full_newton_step():
    """On a query with a flat-enough softmax the Neumann series converges:
    ``D^-1 lambda`` is closer than ``D^-1 g`` to the Newton direction ``H^+ g``
    (up to a constant shift per query, to which the softmax is blind), with
    ``H = diag(rho) - rho rho^T`` the Hessian of Bruch's loss."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(4, 30))
        y = rng.integers(0, 5, n).astype(float)
        z = rng.normal(0, 0.5, n)
        gm = rng.random(n)
        lam, h = ref.xendcg_lightgbm(y, z, gm)
        g, _ = ref.xendcg(y, z, gm)
        rho = np.exp(z - z.max())
        rho /= rho.sum()
        newton = np.linalg.pinv(np.diag(rho) - np.outer(rho, rho)) @ g

        def dist(v):
            d = v - newton
            return np.abs(d - d.mean()).max()

        assert dist(lam / h) < dist(g / h)


def test_xendcg_stable_for_large_scores():
    g, h = XENDCG().gradient_hessian([0, 1, 2], [1000.0, -1000.0, 999.0], qid=[1, 1, 1], seed=1)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    assert abs(g.sum()) < 1e-12


def test_xendcg_gamma_expectation():
    """Averaged over many calls, the target is E[phi]; with two documents and
    labels (0, 1), phi_1 = (2 - g1) / (3 - g0 - g1) has mean computed here by
    quadrature, and g_1 = rho_1 - phi_1."""
    calls = 4000
    y = np.tile([0.0, 1.0], calls)
    ptr = np.arange(0, 2 * calls + 1, 2, dtype=np.int64)
    g, _ = XENDCG().gradient_hessian(y, np.zeros(2 * calls), group_ptr=ptr, seed=5)
    u = (np.arange(400) + 0.5) / 400
    g0, g1 = np.meshgrid(u, u)
    e_phi1 = np.mean((2 - g1) / (3 - g0 - g1))
    sd = np.std(g[1::2])
    assert np.mean(g[1::2]) == pytest.approx(0.5 - e_phi1, abs=5 * sd / math.sqrt(calls))


# -- invariants shared by every objective -----------------------------------
# The registry rankkit.objectives.OBJECTIVES parametrises these tests: every
# registered objective runs with each of its settings here (one without any
# fails test_every_registered_objective_is_tested).
SETTINGS = {
    "lambdamart": {
        "ndcg": dict(metric="ndcg", truncation=4),
        "err": dict(metric="err", err_mapping="chapelle", normalize=False),
        "err-normalized": dict(metric="err", err_mapping="chapelle"),
        "map": dict(metric="map"),
        "map@3": dict(metric="map@3"),
        "mrr": dict(metric="mrr"),
        "expdcg": dict(metric="expdcg", normalize=False),
    },
    "yetirank": {
        "classic": dict(),
        "ndcg": dict(metric="ndcg", num_neighbors=2),
        "err": dict(metric="err", err_mapping="chapelle", num_neighbors=-1),
        "err-gaussian": dict(metric="err", err_mapping="chapelle", noise="gaussian", num_neighbors=-1),
        "classic-no-noise": dict(noise="none", num_neighbors=2),
        "mrr-no-noise": dict(metric="mrr", noise="none", num_neighbors=-1),
    },
    "xendcg": {"default": dict()},
    "stochastic_rank": {"ndcg@3": dict(metric="ndcg@3", n_estimations=2), "map": dict(metric="map")},
    "query_rmse": {"default": dict()},
}
CASES = {f"{name}-{label}": (name, kw) for name in OBJECTIVES for label, kw in SETTINGS.get(name, {}).items()}


def make(case, random_state=3):
    """The objective of ``case``; random ones seeded by ``random_state``."""
    name, kw = CASES[case]
    cls = OBJECTIVES[name]
    if "random_state" in cls._get_param_names():
        kw = {**kw, "random_state": random_state}
    return cls(**kw)


def is_random(case):
    obj = make(case)
    return "random_state" in obj._get_param_names() and getattr(obj, "noise", "") != "none"


RANDOM = sorted(c for c in CASES if is_random(c))
DETERMINISTIC = sorted(c for c in CASES if not is_random(c))
# Objectives of a metric give no gradient to a query whose labels are all
# equal; XE-NDCG and QueryRMSE still fit its scores.
METRIC_CASES = sorted(c for c in CASES if isinstance(make(c), MetricObjective))


def test_every_registered_objective_is_tested():
    assert set(SETTINGS) == set(OBJECTIVES)
    assert RANDOM and DETERMINISTIC and METRIC_CASES


@pytest.mark.parametrize("case", sorted(CASES))
def test_sum_to_zero_and_hessian_floor(case):
    y, z, ptr = make_queries(8)
    g, h = make(case).gradient_hessian(y, z, group_ptr=ptr, seed=11)
    for q in range(len(ptr) - 1):
        assert abs(g[ptr[q] : ptr[q + 1]].sum()) < 1e-12
    assert np.all(h >= HESSIAN_FLOOR)
    assert np.any(g != 0)


@pytest.mark.parametrize("case", METRIC_CASES)
def test_equal_labels_give_zero_gradient(case):
    z = np.random.default_rng(0).normal(size=12)
    obj = make(case)
    for label in (0.0, 1.0):
        g, h = obj.gradient_hessian(np.full(12, label), z, qid=np.repeat([1, 2], 6), seed=4)
        assert np.all(g == 0) and np.all(h == (HESSIAN_FLOOR if obj.uses_hessian else 1.0))


def test_xendcg_equal_labels_equal_scores_zero_in_expectation():
    calls = 3000
    y = np.ones(3 * calls)
    ptr = np.arange(0, 3 * calls + 1, 3, dtype=np.int64)
    g, _ = XENDCG().gradient_hessian(y, np.zeros(3 * calls), group_ptr=ptr, seed=8)
    per_doc = g.reshape(calls, 3)
    assert np.all(np.abs(per_doc.mean(axis=0)) < 5 * per_doc.std(axis=0) / math.sqrt(calls))


def assert_equal_within_tie_classes(g, h, g_ref, h_ref, qid, z, y):
    """Gradients equal up to the order of documents tied on query, score and
    label (which take their tied positions in row order): the multisets of
    each class agree. Returns the size of the largest class."""
    classes = {}
    for i in range(y.shape[0]):
        classes.setdefault((qid[i], z[i], y[i]), []).append(i)
    for rows in classes.values():
        np.testing.assert_allclose(np.sort(g[rows]), np.sort(g_ref[rows]), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(np.sort(h[rows]), np.sort(h_ref[rows]), rtol=1e-12, atol=1e-15)
    return max(len(rows) for rows in classes.values())


@pytest.mark.parametrize("case", DETERMINISTIC)
def test_permutation_within_queries(case):
    """Permuting rows permutes the gradients. Rows with the same query, score
    and label are interchangeable but take the tied positions in input order,
    so within such a class only the multiset of values is compared."""
    y, z, ptr = make_queries(9)
    qid = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    perm = np.random.default_rng(1).permutation(y.shape[0])
    g, h = make(case).gradient_hessian(y, z, qid=qid)
    gp, hp = make(case).gradient_hessian(y[perm], z[perm], qid=qid[perm])
    g_back, h_back = np.empty_like(gp), np.empty_like(hp)
    g_back[perm], h_back[perm] = gp, hp
    assert_equal_within_tie_classes(g_back, h_back, g, h, qid, z, y)


# The random objectives, and SGLB's noise around a deterministic one.
RANDOM_OBJECTIVES = {
    **{case: (lambda case=case: make(case, random_state=None)) for case in RANDOM},
    "sglb-lambdamart": lambda: SGLB(LambdaMART(), diffusion_temperature=50.0),
}


def test_noise_ranks_match_reference():
    y, z, ptr = make_queries(12)
    iwork = np.empty((2, len(y)), dtype=np.int64)
    rank = np.full(len(y), -1, dtype=np.int64)
    for q in range(len(ptr) - 1):
        noise_ranks(z, y, ptr[q], ptr[q + 1], iwork[0], iwork[1], rank)
    np.testing.assert_array_equal(rank, ref.noise_ranks(y, z, ptr))


@pytest.mark.parametrize("name", sorted(RANDOM_OBJECTIVES))
def test_random_objectives_permute_with_rows_within_queries(name):
    """Noise is keyed by a document's place in the query sorted by score, not
    by its row: with the same seed, permuting the rows of each query permutes
    the gradients exactly (up to rows with equal score and label, which the
    objective cannot tell apart: multisets within such a class)."""
    y, z, ptr = make_queries(13)
    rng = np.random.default_rng(2)
    perm = np.concatenate([lo + rng.permutation(hi - lo) for lo, hi in zip(ptr[:-1], ptr[1:])])
    g, h = RANDOM_OBJECTIVES[name]().gradient_hessian(y, z, group_ptr=ptr, seed=5)
    gp, hp = RANDOM_OBJECTIVES[name]().gradient_hessian(y[perm], z[perm], group_ptr=ptr, seed=5)
    g_back, h_back = np.empty_like(gp), np.empty_like(hp)
    g_back[perm], h_back[perm] = gp, hp
    qid = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    assert assert_equal_within_tie_classes(g_back, h_back, g, h, qid, z, y) > 1
    # The draws are live: another seed gives other gradients.
    assert not np.array_equal(g, RANDOM_OBJECTIVES[name]().gradient_hessian(y, z, group_ptr=ptr, seed=6)[0])


def test_generator_matches_the_independent_reference():
    """rankkit._random against the re-implementation in tests._reference_random."""
    from rankkit._random import key, logistic, mix64, normal, uniform

    for seed in (0, 1, 9, 2**62 + 12345):
        assert int(mix64(np.uint64(seed))) == ref_random.mix64(seed)
        for stream in (0, 3, 1000):
            k = np.uint64(key(np.uint64(seed), stream))
            assert int(k) == ref_random.key(seed, stream)
            for i in (0, 1, 17):
                assert uniform(k, i) == ref_random.uniform(int(k), i)
                assert normal(k, i) == pytest.approx(ref_random.normal(int(k), i), rel=1e-14, abs=1e-15)
                assert logistic(k, i) == pytest.approx(ref_random.logistic(int(k), i), rel=1e-14, abs=1e-15)


def test_stochastic_rank_noise_is_keyed_as_documented():
    y, z, ptr = make_queries(14)
    eps = StochasticRank(n_estimations=2).sampled_noise(y, z, ptr, 9)
    np.testing.assert_allclose(eps, ref_random.stochastic_rank_noise(y, z, ptr, 9, 2), rtol=1e-14, atol=1e-15)


def test_sglb_noise_is_keyed_as_documented():
    y, z, ptr = make_queries(15)
    inner = LambdaMART()
    obj = SGLB(inner, learning_rate=0.5, diffusion_temperature=8.0)  # noise scale 1/sqrt(2)
    noise = obj.gradient_hessian(y, z, group_ptr=ptr, seed=21)[0] - inner.gradient_hessian(y, z, group_ptr=ptr)[0]
    want = obj.noise_scale * np.array(ref_random.sglb_noise(y, z, ptr, 21))
    np.testing.assert_allclose(noise, want, rtol=1e-12, atol=1e-14)


QUERY_ID_VALUES = [
    0, 1, 7, -1, -(2**63), 2**63 - 1, 3.0, -2.0, 0.5, -1e300, float(2**70), "", "q17", "naïve-é", b"\x00\xff",
    np.int32(-5), np.uint64(2**64 - 1), np.float32(2.5), True, (1, "a"),
]


def test_query_keys_match_the_independent_reference():
    """Query keys hash the id's value as documented: ints by splitmix64 of the
    two's complement, integral floats as ints, strings by FNV-1a of UTF-8."""
    from rankkit._random import index_query_keys, query_keys

    obj = np.empty(len(QUERY_ID_VALUES), dtype=object)
    obj[:] = QUERY_ID_VALUES
    want = [ref_random.query_key(v) for v in QUERY_ID_VALUES]
    assert [int(k) for k in query_keys(obj)] == want
    # Typed arrays take the same keys as the same values in an object array.
    for values in ([3, -4, 2**40], np.array([3, -4, 2**40], dtype=np.int64), [3.0, -4.5, 1e20],
                   np.array(["a", "bb", "ü"]), np.array([b"a", b"bb"]), np.array([5, 6], dtype=np.uint8)):
        assert [int(k) for k in query_keys(values)] == [ref_random.query_key(v) for v in np.asarray(values).tolist()]
    # Three equal ids in three types, and the keys of places 0, 1, ...
    assert len({int(query_keys(v)[0]) for v in ([7], [7.0], np.array([7], dtype=np.uint16))}) == 1
    assert [int(k) for k in index_query_keys(4)] == ref_random.index_keys(4)
    assert len({int(query_keys(np.array([v], dtype=object))[0]) for v in (1, "1", 1.5)}) == 3
    assert query_keys(np.array(["1"]))[0] == query_keys(np.array([b"1"]))[0]  # a string is its UTF-8 bytes


def test_random_draws_are_keyed_by_query_id_value():
    """With qid=, every random objective draws each query's numbers from its
    id's key (the reference keys them by the value); with group_ptr=, query q
    draws as the integer id q."""
    y, z, ptr = make_queries(16)
    sizes = np.diff(ptr)
    ids = np.array([f"query-{i * 37 % 11}-{i}" for i in range(len(sizes))], dtype=object)
    qid = np.repeat(ids, sizes)
    keys = [ref_random.query_key(v) for v in ids]
    seed = 31
    gamma = np.array(ref_random.xendcg_gammas(y, z, ptr, seed, keys))
    g, _ = XENDCG().gradient_hessian(y, z, qid=qid, seed=seed)
    sr = StochasticRank(n_estimations=2)
    from rankkit._groups import make_groups

    groups = make_groups(qid)
    np.testing.assert_allclose(sr.sampled_noise(y, z, ptr, seed, groups.query_keys),
                               ref_random.stochastic_rank_noise(y, z, ptr, seed, 2, keys), rtol=1e-14, atol=1e-15)
    inner = LambdaMART()
    obj = SGLB(inner, learning_rate=0.5, diffusion_temperature=8.0)
    noise = obj.gradient_hessian(y, z, qid=qid, seed=seed)[0] - inner.gradient_hessian(y, z, qid=qid)[0]
    np.testing.assert_allclose(noise, obj.noise_scale * np.array(ref_random.sglb_noise(y, z, ptr, seed, keys)),
                               rtol=1e-12, atol=1e-14)
    yeti = YetiRank("ndcg", n_permutations=3, num_neighbors=2)
    rounds = [z + np.array(ref_random.yetirank_noise(y, z, ptr, seed, p, "logistic", 1.0, keys)) for p in range(3)]
    g_yeti, _ = yeti.gradient_hessian(y, z, qid=qid, seed=seed)
    for q in range(len(sizes)):
        lo, hi = ptr[q], ptr[q + 1]
        W = ref.yeti_weights(list(y[lo:hi]), [r[lo:hi] for r in rounds], "ndcg", num_neighbors=2)
        np.testing.assert_allclose(g_yeti[lo:hi], ref.pairwise_logistic_grad(W, z[lo:hi])[0], rtol=1e-10, atol=1e-13)
    # XE-NDCG's gradient is rho - phi with phi from the keyed gammas.
    for q in range(len(sizes)):
        lo, hi = ptr[q], ptr[q + 1]
        if hi - lo < 2:
            continue
        rho = np.exp(z[lo:hi] - z[lo:hi].max())
        rho /= rho.sum()
        phi = 2.0 ** y[lo:hi] - gamma[lo:hi]
        np.testing.assert_allclose(g[lo:hi], rho - phi / phi.sum(), rtol=1e-12, atol=1e-14)
    # Known only by their places, queries draw as the integer ids 0, 1, ...
    for name, make_obj in RANDOM_OBJECTIVES.items():
        by_place = make_obj().gradient_hessian(y, z, group_ptr=ptr, seed=seed)
        by_index_id = make_obj().gradient_hessian(y, z, qid=np.repeat(np.arange(len(sizes)), sizes), seed=seed)
        np.testing.assert_array_equal(by_place[0], by_index_id[0], err_msg=name)


@pytest.mark.parametrize("name", sorted(RANDOM_OBJECTIVES))
@pytest.mark.parametrize("id_kind", ["int", "str"])
def test_gradients_do_not_depend_on_where_queries_are(name, id_kind):
    """The layout independence distributed training relies on: with the same
    seed, shuffling whole queries and splitting them over several calls (as
    over partitions and workers) gives every query exactly the same gradients."""
    y, z, ptr = make_queries(17, n_queries=30)
    sizes = np.diff(ptr)
    ids = (np.arange(len(sizes)) * 1000 + 3) if id_kind == "int" else np.array([f"q{i}" for i in range(len(sizes))])
    qid = np.repeat(ids, sizes)
    g, h = RANDOM_OBJECTIVES[name]().gradient_hessian(y, z, qid=qid, seed=8)
    rng = np.random.default_rng(4)
    partitions = np.array_split(rng.permutation(len(sizes)), 3)  # shuffled whole queries, 3 parts
    g_split, h_split = np.empty_like(g), np.empty_like(h)
    g_mixed, h_mixed = np.empty_like(g), np.empty_like(h)
    for queries in partitions:
        rows = np.concatenate([np.arange(ptr[q], ptr[q + 1]) for q in queries])
        g_split[rows], h_split[rows] = RANDOM_OBJECTIVES[name]().gradient_hessian(y[rows], z[rows], qid=qid[rows],
                                                                                   seed=8)
        # Rows of a partition in any order, queries interleaved.
        rows = rows[rng.permutation(rows.size)]
        g_mixed[rows], h_mixed[rows] = RANDOM_OBJECTIVES[name]().gradient_hessian(y[rows], z[rows], qid=qid[rows],
                                                                                   seed=8)
    np.testing.assert_array_equal(g_split, g)
    np.testing.assert_array_equal(h_split, h)
    # Reordering the rows of a query reorders documents tied on score and
    # label among themselves (as in the test above): equal within each class.
    assert_equal_within_tie_classes(g_mixed, h_mixed, g, h, qid, z, y)


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_result_for_one_or_two_threads(case):
    y, z, ptr = make_queries(10, n_queries=200)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        g1, h1 = make(case).gradient_hessian(y, z, group_ptr=ptr)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        g2, h2 = make(case).gradient_hessian(y, z, group_ptr=ptr)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(h1, h2)


@pytest.mark.parametrize("case", RANDOM)
def test_fresh_noise_each_call_reproducible_by_seed(case):
    y, z, ptr = make_queries(11)
    a = make(case)
    g1, _ = a.gradient_hessian(y, z, group_ptr=ptr)
    g2, _ = a.gradient_hessian(y, z, group_ptr=ptr)
    assert not np.array_equal(g1, g2)
    b = make(case)
    np.testing.assert_array_equal(b.gradient_hessian(y, z, group_ptr=ptr)[0], g1)


# -- as XGBoost / LightGBM objectives ---------------------------------------


def synthetic(seed=0, n_queries=40, size=12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * size, 5))
    y = np.clip(np.round(1.2 * X[:, 0] + 0.6 * X[:, 1] + rng.normal(0, 0.5, size=X.shape[0]) + 1.5), 0, 3)
    qid = np.repeat(np.arange(n_queries), size)
    return X, y, qid


def mean_ndcg(y, score, qid, k=10):
    vals = []
    for q in np.unique(qid):
        m = qid == q
        order = ref.worst_order(list(score[m]), list(y[m]))
        vals.append(ref.metric_value("ndcg", [y[m][i] for i in order], k))
    return float(np.mean(vals))


# One setting of every registered objective, as an engine's custom objective.
ENGINE_SETTINGS = {
    "lambdamart": dict(metric="ndcg@10", truncation=10),
    "yetirank": dict(metric="ndcg", random_state=0),
    "xendcg": dict(random_state=0),
    "stochastic_rank": dict(metric="ndcg@10", random_state=0),
    "query_rmse": dict(),
}


def test_every_registered_objective_runs_in_the_engines():
    assert set(ENGINE_SETTINGS) == set(OBJECTIVES)


@pytest.mark.parametrize("name", sorted(ENGINE_SETTINGS))
def test_as_xgboost_objective(name):
    xgb = pytest.importorskip("xgboost")
    X, y, qid = synthetic()
    dtrain = xgb.DMatrix(X, y, qid=qid)
    params = {"base_score": 0.0, "max_depth": 3, "eta": 0.3, "nthread": 1, "tree_method": "hist"}
    booster = xgb.train(params, dtrain, num_boost_round=15, obj=OBJECTIVES[name](**ENGINE_SETTINGS[name]))
    before = mean_ndcg(y, np.zeros(y.shape[0]), qid)
    after = mean_ndcg(y, booster.predict(dtrain, output_margin=True), qid)
    assert after > before + 0.15, (before, after)


@pytest.mark.parametrize("name", sorted(ENGINE_SETTINGS))
def test_as_lightgbm_objective(name):
    lgb = pytest.importorskip("lightgbm")
    X, y, qid = synthetic(1)
    ds = lgb.Dataset(X, y, group=np.bincount(qid))
    params = {"objective": OBJECTIVES[name](**ENGINE_SETTINGS[name]), "verbose": -1, "num_leaves": 8,
              "learning_rate": 0.3, "num_threads": 1, "min_data_in_leaf": 5}
    booster = lgb.train(params, ds, num_boost_round=15)
    before = mean_ndcg(y, np.zeros(y.shape[0]), qid)
    after = mean_ndcg(y, booster.predict(X, raw_score=True), qid)
    assert after > before + 0.15, (before, after)


# Every registered objective, and SGLB around one, as LGBMRanker(objective=...).
LGBMRANKER_OBJECTIVES = [*sorted(ENGINE_SETTINGS), "sglb-stochastic_rank"]


def _lgbmranker_objective(name):
    if name.startswith("sglb-"):
        inner = name.removeprefix("sglb-")
        return SGLB(OBJECTIVES[inner](**ENGINE_SETTINGS[inner]), learning_rate=0.3, diffusion_temperature=1e4,
                    random_state=0)
    return OBJECTIVES[name](**ENGINE_SETTINGS[name])


@pytest.mark.parametrize("name", LGBMRANKER_OBJECTIVES)
def test_as_lgbmranker_objective(name):
    lgb = pytest.importorskip("lightgbm")
    X, y, qid = synthetic(2)
    ranker = lgb.LGBMRanker(objective=_lgbmranker_objective(name), n_estimators=15, num_leaves=8,
                            learning_rate=0.3, min_child_samples=5, n_jobs=1, verbose=-1)
    ranker.fit(X, y, group=np.bincount(qid))
    before = mean_ndcg(y, np.zeros(y.shape[0]), qid)
    after = mean_ndcg(y, ranker.predict(X, raw_score=True), qid)
    assert after > before + 0.15, (before, after)
    # LGBMRanker hands LightGBM all of its get_params(); the objective's own
    # parameters are not among them (objectives have no get_params).
    assert not [key for key in ranker.booster_.params if "__" in key], ranker.booster_.params


# -- bad input --------------------------------------------------------------


def test_public_gradients_that_overflow_are_an_error():
    """gradient_hessian (and the engines' hooks) handed NaN or infinity back
    for finite scores far apart; the rankers check theirs, callers did not."""
    from rankkit.objectives import QueryRMSE

    far = [1.7e308, -1.7e308, 1.7e308, 0.0]
    for objective in (StochasticRank(random_state=0), QueryRMSE()):
        with pytest.raises(ValueError, match=r"NaN or infinite gradients.*scores \(raw, spanning inf\)"):
            objective.gradient_hessian([0, 1, 2, 0], far, qid=[0] * 4, seed=3)
    with pytest.raises(ValueError, match="NaN or infinite gradients"):
        LambdaMART(sigma=1e160).gradient_hessian([0, 1, 2, 0], [0.0, 1.0, 2.0, 3.0], qid=[0] * 4)
    with pytest.raises(ValueError, match=r"NaN or infinite gradients.*\(preds, spanning"):
        QueryRMSE()(np.array([0.0, 1.0, 2.0, 0.0]), np.array(far), group=[4])  # LightGBM's sklearn form


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: LambdaMART("foo"), "Unknown metric"),
        (lambda: LambdaMART("ndcg", k=0), r"'k' parameter of LambdaMART must be an int in the range \[1, inf\)"),
        (lambda: LambdaMART("ndcg@0"), "k must be a positive int"),
        (lambda: LambdaMART("ndcg@5", k=3), "k=5 but k=3"),
        (lambda: LambdaMART(sigma=0.0), r"'sigma' parameter of LambdaMART must be a float in the range \(0.0, inf\)"),
        (lambda: LambdaMART(truncation=0), r"'truncation' parameter of LambdaMART must be an int in the range \[1"),
        (lambda: LambdaMART(gain="log"), "'gain' parameter of LambdaMART must be a str among"),
        (lambda: LambdaMART("err", err_mapping="linear"), "'err_mapping' parameter of LambdaMART must be"),
        (lambda: LambdaMART("err", err_max_label=3), "only with err_mapping='chapelle'"),
        (lambda: YetiRank("nope"), "Unknown metric"),
        # The names an objective takes, not every metric: 'classic' listed, 'precision' not.
        (lambda: YetiRank("clasic"), r"did you mean 'classic'\?\); valid metrics are \['ndcg', 'dcg', 'err', 'mrr', "
                                     r"'map', 'expdcg', 'classic'\]"),
        (lambda: LambdaMART("ndgc"), r"did you mean 'ndcg'\?\); valid metrics are \['ndcg', 'dcg', 'err', 'mrr', "
                                     r"'map', 'expdcg'\] \("),
        (lambda: YetiRank(k=3), "k applies to YetiLoss"),
        (lambda: YetiRank("classic@3"), "'classic' takes no cut-off"),  # "did you mean 'classic'?" before
        # Set where their objective's other settings leave them unread: ignored before.
        (lambda: YetiRank(noise="none", noise_scale=3.0), r"noise_scale=3.0 is not used with noise='none'"),
        (lambda: StochasticRank(sfa=False, nu=1.0), r"nu=1.0 is not used with sfa=False"),
        (lambda: YetiRank(n_permutations=0), r"'n_permutations' parameter of YetiRank must be an int in the range \[1"),
        (lambda: YetiRank(noise="uniform"), "'noise' parameter of YetiRank must be a str among"),
        (lambda: YetiRank(noise_scale=-1.0), r"'noise_scale' parameter of YetiRank must be a float in the range \[0.0"),
        (lambda: YetiRank(num_neighbors=0), "'num_neighbors' parameter of YetiRank must be"),
        (lambda: YetiRank(num_neighbors=-2), "'num_neighbors' parameter of YetiRank must be"),
        (lambda: YetiRank(decay=0.0), r"'decay' parameter of YetiRank must be a float in the range \(0.0, 1.0\]"),
        (lambda: YetiRank(decay=1.5), r"'decay' parameter of YetiRank must be a float in the range \(0.0, 1.0\]"),
    ],
)
def test_bad_parameters(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make().gradient_hessian([0, 1], [0.0, 0.0], qid=[1, 1])


def test_an_objective_alone_refuses_metric_settings_its_metric_does_not_read():
    """On its own entry points the objective's metric is the only reader of
    its metric settings: one its metric ignores was ignored without a word."""
    import xgboost as xgb

    y, raw = [0, 1, 2, 0], [0.0, 0.0, 0.0, 0.0]
    unread = [(LambdaMART("ndcg", relevance_threshold=2.0), "relevance_threshold=2.0 is not read by metric='ndcg'"),
              (YetiRank("ndcg", decay=0.5), "decay=0.5 is not read by metric='ndcg'"),
              (StochasticRank("map", err_mapping="chapelle"), "err_mapping='chapelle' is not read by metric='map'"),
              (LambdaMART("mrr", gain="linear"), "gain='linear' is not read by metric='mrr'"),
              (YetiRank(gain="linear"), "gain='linear' is not read by metric='classic'"),
              (SGLB(StochasticRank("ndcg", relevance_threshold=1.0)), "StochasticRank: relevance_threshold=1.0")]
    for objective, match in unread:
        with pytest.raises(ValueError, match=re.escape(match)):
            objective.gradient_hessian(y, raw, qid=[1, 1, 1, 1])
    dtrain = xgb.DMatrix(np.zeros((4, 1)), label=y, qid=[1, 1, 1, 1])
    with pytest.raises(ValueError, match="relevance_threshold=2.0 is not read"):
        xgb.train({"base_score": 0.0}, dtrain, 1, obj=LambdaMART("ndcg", relevance_threshold=2.0))
    # Read by the objective's metric (YetiRank's classic weights read decay): accepted.
    for objective in (LambdaMART("mrr", relevance_threshold=2.0), YetiRank(decay=0.5),
                      SGLB(StochasticRank("map", relevance_threshold=1.0)), LambdaMART("ERR", err_mapping="chapelle")):
        g, _ = objective.gradient_hessian(y, raw, qid=[1, 1, 1, 1])
        assert np.all(np.isfinite(g))


def test_random_objectives_are_reproducible_by_default():
    """random_state=0 by default, as XGBoost's and LightGBM's seeds: two new
    objectives give the same gradients; None draws fresh ones."""
    y, raw, qid = [0, 1, 2, 0, 3, 1], [0.0] * 6, [1, 1, 1, 2, 2, 2]
    for make in (YetiRank, StochasticRank, XENDCG, lambda: SGLB(StochasticRank())):
        first, second = make(), make()
        assert first.random_state == 0
        np.testing.assert_array_equal(first.gradient_hessian(y, raw, qid=qid)[0],
                                      second.gradient_hessian(y, raw, qid=qid)[0])
    draws = [StochasticRank(random_state=None).gradient_hessian(y, raw, qid=qid)[0] for _ in range(2)]
    assert not np.array_equal(*draws)


def test_decay_range_is_the_metrics():
    """YetiRank's decay and ExpDCG's share one range, (0, 1]: b = 1 (no
    position decay) is a valid base for both."""
    from rankkit.metrics import expdcg_score

    g, _ = YetiRank(decay=1.0, noise="none").gradient_hessian([0, 2, 1], [0.0, 0.5, 1.0], qid=[1, 1, 1])
    assert np.any(g != 0)
    assert expdcg_score([0, 2, 1], [0.0, 0.5, 1.0], qid=[1, 1, 1], decay=1.0) == 3.0


@pytest.mark.parametrize("obj", [LambdaMART(), YetiRank(), XENDCG()])
def test_negative_labels_rejected(obj):
    with pytest.raises(ValueError, match="negative labels"):
        obj.gradient_hessian([0, -1], [0.0, 0.0], qid=[1, 1])


@pytest.mark.parametrize("obj", [LambdaMART("err"), YetiRank("err@5")])
def test_err_needs_probabilities_or_mapping(obj):
    with pytest.raises(ValueError, match="err_mapping='chapelle'"):
        obj.gradient_hessian([0, 2], [0.0, 0.0], qid=[1, 1])


def test_err_max_label_below_labels():
    with pytest.raises(ValueError, match="err_max_label"):
        LambdaMART("err", err_mapping="chapelle", err_max_label=1).gradient_hessian([0, 2], [0.0, 0.0], qid=[1, 1])


@pytest.mark.parametrize("obj", [
    LambdaMART(), LambdaMART("dcg@3"), YetiRank("ndcg"), StochasticRank("ndcg", gain="exp", random_state=0),
    SGLB(LambdaMART(), random_state=0),
])
def test_labels_whose_exp_gain_overflows_are_an_error(obj):
    # The metrics' own check (rankkit._metrics._common.check_exp_gain): 2^1024 is
    # infinite, so gradients would be NaN.
    with pytest.raises(ValueError, match=r"label 1024\b.*overflows float64.*gain='linear'"):
        obj.gradient_hessian([1024, 0, 1], [0.0, 0.0, 0.0], qid=[1, 1, 1])
    # gain="linear" is the fix named in the message.
    linear = clone(obj).set_params(**({"objective__gain": "linear"} if isinstance(obj, SGLB) else {"gain": "linear"}))
    grad, _ = linear.gradient_hessian([1024, 0, 1], [0.0, 0.0, 0.0], qid=[1, 1, 1], seed=0)
    assert np.all(np.isfinite(grad)) and grad[0] < 0


def test_objectives_without_exp_gain_accept_large_labels():
    y = [1024, 0, 1]
    for obj in (YetiRank(), LambdaMART("mrr"), LambdaMART("map")):
        assert np.all(np.isfinite(obj.gradient_hessian(y, [0.0, 0.0, 0.0], qid=[1, 1, 1], seed=0)[0]))
    with pytest.raises(ValueError, match=r"label 1024\b.*overflows float64.*XE-NDCG.*rescale"):
        XENDCG().gradient_hessian(y, [0.0, 0.0, 0.0], qid=[1, 1, 1], seed=0)
