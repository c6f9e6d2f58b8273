"""StochasticRank: kernel vs naive reference, gradient checks, SFA, invariants, errors."""

import math

import numba
import numpy as np
import pytest

from rankkit._random import index_query_keys
from rankkit._objectives.stochastic_rank import SUPPORTED_METRICS, StochasticRank

from ._reference_stochastic_rank import ccs_reference, metric_batch, sfa_reference

METRICS = list(SUPPORTED_METRICS)


def _ptr(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def _tricky_data(seed):
    """Queries full of ties plus the degenerate ones: 1 document, all-equal, all-zero labels."""
    rng = np.random.default_rng(seed)
    sizes = [1, 2, 3, 5, 7, 9, 4, 6]
    ptr = _ptr(sizes)
    n = ptr[-1]
    y = rng.integers(0, 4, n).astype(float)
    raw = rng.integers(-2, 3, n) * 0.5  # few distinct values: many tied scores
    y[ptr[6]:ptr[7]] = 2.0  # all-equal labels
    y[ptr[7]:ptr[8]] = 0.0  # all-zero labels
    return y, raw, ptr


def _metric_kwargs(metric, y):
    """Parameters of the objective and of the reference for one metric."""
    if metric == "err":
        return dict(err_mapping="chapelle"), dict(err_scale=2.0 ** y.max())
    if metric in ("mrr", "map"):
        return dict(relevance_threshold=1.0), dict(threshold=1.0)
    return dict(gain="exp"), {}  # the reference's gain; gain=None (linear) has its own test


def _kernel(obj, y, raw, ptr, seed, eps=None):
    grad = np.zeros_like(raw)
    hess = np.zeros_like(raw)
    obj._check_params()
    obj._compute(obj._check_labels(y), raw, ptr, seed, grad, hess, index_query_keys(len(ptr) - 1), eps=eps)
    return grad, hess


# ---------------------------------------------------------------------------
# kernel == naive reference on the same noise
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("sfa", [False, True])
def test_kernel_matches_reference(metric, k, sfa):
    y, raw, ptr = _tricky_data(7)
    okw, rkw = _metric_kwargs(metric, y)
    mu = 0.3 if k == 3 else 0.0
    obj = StochasticRank(metric, k, sigma=0.7, mu=mu, sfa=sfa, n_estimations=2, **okw)
    seed = 12345
    grad, hess = _kernel(obj, y, raw, ptr, seed)
    eps = obj.sampled_noise(y, raw, ptr, seed)
    ref = ccs_reference(y, raw, ptr, eps, metric, k, sigma=0.7, mu=mu, sfa=sfa, **rkw)
    np.testing.assert_allclose(grad, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(hess, 1.0)
    # Degenerate queries: 1 document, all-equal labels, all-zero labels.
    for q in (0, 6, 7):
        np.testing.assert_array_equal(grad[ptr[q]:ptr[q + 1]], 0.0)
    assert np.abs(grad).max() > 0  # the other queries do move


@pytest.mark.parametrize("metric", METRICS)
def test_kernel_matches_reference_on_tied_sampled_scores(metric):
    """Zero noise leaves tied sampled scores: both sides break ties by row order."""
    y, raw, ptr = _tricky_data(3)
    okw, rkw = _metric_kwargs(metric, y)
    obj = StochasticRank(metric, mu=0.0, sfa=False, **{**okw, "gain": "linear"})
    eps = np.zeros((1, len(y)))
    grad, _ = _kernel(obj, y, raw, ptr, 0, eps=eps)
    ref = ccs_reference(y, raw, ptr, eps, metric, exp_gain=False, sfa=False, **rkw)
    np.testing.assert_allclose(grad, ref, rtol=1e-10, atol=1e-12)


def test_err_with_probability_labels_matches_reference():
    rng = np.random.default_rng(0)
    ptr = _ptr([4, 6, 1])
    y = rng.choice([0.0, 0.25, 0.5, 1.0], ptr[-1])
    raw = rng.normal(size=ptr[-1])
    obj = StochasticRank("err@4", mu=0.0, sfa=False, n_estimations=3)
    grad, _ = _kernel(obj, y, raw, ptr, 99)
    ref = ccs_reference(y, raw, ptr, obj.sampled_noise(y, raw, ptr, 99), "err", 4, sfa=False)
    np.testing.assert_allclose(grad, ref, rtol=1e-10, atol=1e-12)


def test_long_query_matches_reference():
    """A list longer than the 16-element insertion-sort runs exercises the merge passes."""
    rng = np.random.default_rng(5)
    ptr = _ptr([40, 37])
    y = rng.integers(0, 3, ptr[-1]).astype(float)
    raw = rng.integers(0, 4, ptr[-1]).astype(float)
    for metric, k in [("ndcg", 5), ("mrr", None), ("map", 10)]:
        obj = StochasticRank(metric, k, mu=0.0, sfa=True, gain="exp")
        grad, _ = _kernel(obj, y, raw, ptr, 4)
        ref = ccs_reference(y, raw, ptr, obj.sampled_noise(y, raw, ptr, 4), metric, k)
        np.testing.assert_allclose(grad, ref, rtol=1e-10, atol=1e-12)


def test_noise_helper_is_the_kernel_noise():
    """The kernel's own draws and the same draws passed in give identical gradients."""
    y, raw, ptr = _tricky_data(1)
    obj = StochasticRank("ndcg@3", n_estimations=3)
    g1, _ = _kernel(obj, y, raw, ptr, 2024)
    g2, _ = _kernel(obj, y, raw, ptr, 2024, eps=obj.sampled_noise(y, raw, ptr, 2024))
    np.testing.assert_array_equal(g1, g2)
    g3, _ = _kernel(obj, y, raw, ptr, 2025)
    assert not np.array_equal(g1, g3)
    eps = obj.sampled_noise(np.zeros(200_000), np.zeros(200_000), _ptr([200_000]), 7)[0]
    assert abs(eps.mean()) < 5 / math.sqrt(2e5) and abs(eps.std() - 1) < 5 / math.sqrt(4e5)


# ---------------------------------------------------------------------------
# the estimate is the gradient of the smoothed metric
# ---------------------------------------------------------------------------
def _ccs_samples(obj, y, raw, copies, seed):
    """``copies`` independent one-sample CCS estimates: one copy of the query per row block
    (each query index has its own noise stream)."""
    n = len(y)
    ptr = np.arange(copies + 1, dtype=np.int64) * n
    g, _ = _kernel(obj, np.tile(y, copies), np.tile(raw, copies), ptr, seed)
    return g.reshape(copies, n)


CASES = [
    ("ndcg", None, [3, 2, 0, 1], [0.3, -0.2, 0.5, 0.0], 0.0),
    ("ndcg", 2, [2, 0, 1, 1, 0], [0.1, 0.4, -0.3, 0.2, 0.0], 0.4),
    ("dcg", 3, [1, 0, 2], [0.0, 0.8, 0.1], 0.0),
    ("err", None, [0, 3, 1, 2, 0, 1], [0.2, -0.1, 0.3, 0.0, 0.6, -0.5], 0.2),
    ("mrr", None, [0, 1, 0, 2, 0], [0.5, -0.4, 0.2, 0.0, 0.1], 0.0),
    ("map", None, [1, 0, 2, 0], [-0.3, 0.4, 0.0, 0.2], 0.3),
    ("map", 2, [1, 0, 1, 0, 1], [0.0, 0.3, -0.2, 0.1, 0.4], 0.0),
]


@pytest.mark.parametrize("metric,k,y,raw,mu", CASES)
def test_ccs_matches_finite_differences(metric, k, y, raw, mu):
    """Mean CCS estimate vs central differences of E M(z - sigma mu r + sigma eps).

    The finite differences use 200k common noise draws for z + h e_j and z - h e_j;
    the CCS mean uses 20k independent one-sample estimates. Both are means of i.i.d.
    terms, so each has a standard error from its sample std; the check is
    |ccs - fd| <= 5 * sqrt(se_ccs^2 + se_fd^2) per coordinate (about 6e-7 chance of a
    false failure each). The O(h^2) difference bias, with h = 0.02 and sigma = 1, is
    below 1e-4, a few percent of the tolerance.
    """
    y = np.asarray(y, dtype=float)
    raw = np.asarray(raw, dtype=float)
    sigma = 1.0
    okw, rkw = _metric_kwargs(metric, y)
    if metric in ("mrr", "map"):
        okw, rkw = {}, {}
    obj = StochasticRank(metric, k, sigma=sigma, mu=mu, sfa=False, **okw)
    g = _ccs_samples(obj, y, raw, 20_000, seed=11)
    ccs, se_ccs = g.mean(0), g.std(0, ddof=1) / math.sqrt(len(g))

    rng = np.random.default_rng(123)
    N, h, n = 200_000, 0.02, len(y)
    eps = rng.standard_normal((N, n))
    base = raw - sigma * mu * y + sigma * eps
    for j in range(n):
        vals = []
        for sgn in (1.0, -1.0):
            s = base.copy()
            s[:, j] += sgn * h
            order = np.argsort(-s, axis=1, kind="stable")
            vals.append(metric_batch(y, order, metric, k, **rkw))
        d = -(vals[0] - vals[1]) / (2 * h)  # loss = -metric
        fd, se_fd = d.mean(), d.std(ddof=1) / math.sqrt(N)
        tol = 5 * math.sqrt(se_ccs[j] ** 2 + se_fd**2)
        assert abs(ccs[j] - fd) <= tol, (j, ccs[j], fd, tol)
    assert np.abs(ccs).max() > 10 * se_ccs.max()  # a real signal, not zeros on both sides


@pytest.mark.parametrize("metric", METRICS)
def test_two_documents_closed_form_exact(metric):
    """Two documents: E over eps_2 of the CCS estimate equals
    (M(1>2) - M(2>1)) exp(-((z1 - z2)/sigma - mu (r1 - r2))^2 / 4) / (2 sqrt(pi) sigma).

    Doc 1's estimate depends on eps_2 only; integrating it with 80-point Gauss-Hermite
    quadrature (noise passed in) makes the check exact to rounding.
    """
    sigma, mu = 0.8, 0.25
    y = np.array([2.0, 0.0]) if metric != "err" else np.array([0.9, 0.2])
    raw = np.array([0.1, 0.6])
    obj = StochasticRank(metric, sigma=sigma, mu=mu, sfa=False, gain="exp")
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()
    m = len(nodes)
    eps = np.zeros((1, 2 * m))
    eps[0, 1::2] = nodes
    g, _ = _kernel(obj, np.tile(y, m), np.tile(raw, m), np.arange(m + 1, dtype=np.int64) * 2, 0, eps=eps)
    est = weights @ g[0::2]
    up = metric_batch(y, np.array([[0, 1]]), metric)[0]
    down = metric_batch(y, np.array([[1, 0]]), metric)[0]
    d = (raw[0] - raw[1]) / sigma - mu * (y[0] - y[1])
    closed = (up - down) * math.exp(-d * d / 4) / (2 * math.sqrt(math.pi) * sigma)
    assert up != down
    np.testing.assert_allclose(est, -closed, rtol=1e-10)


def test_two_documents_closed_form_sampled():
    """Same closed form with the kernel's own noise: 100k copies, 5 standard errors."""
    sigma, mu = 1.0, 0.1
    y, raw = np.array([1.0, 0.0]), np.array([-0.2, 0.3])
    g = _ccs_samples(StochasticRank("ndcg", sigma=sigma, mu=mu, sfa=False), y, raw, 100_000, 3)[:, 0]
    d = (raw[0] - raw[1]) / sigma - mu * (y[0] - y[1])
    closed = (1 - 1 / math.log2(3)) * math.exp(-d * d / 4) / (2 * math.sqrt(math.pi) * sigma)
    assert abs(g.mean() + closed) <= 5 * g.std(ddof=1) / math.sqrt(len(g))


# ---------------------------------------------------------------------------
# SFA and invariants
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("metric", METRICS)
def test_sfa_is_the_projection_of_the_raw_estimate(metric):
    y, raw, ptr = _tricky_data(11)
    raw = raw + np.random.default_rng(0).normal(size=len(raw))
    okw, _ = _metric_kwargs(metric, y)
    nu = 0.01
    g_raw, _ = _kernel(StochasticRank(metric, sfa=False, **okw), y, raw, ptr, 5)
    g_sfa, _ = _kernel(StochasticRank(metric, sfa=True, nu=nu, **okw), y, raw, ptr, 5)
    for q in range(len(ptr) - 1):
        sl = slice(ptr[q], ptr[q + 1])
        np.testing.assert_allclose(g_sfa[sl], sfa_reference(g_raw[sl], raw[sl], nu), atol=1e-13)


@pytest.mark.parametrize("nu", [0.0, 1e-9])
def test_sfa_orthogonal_to_centred_scores(nu):
    rng = np.random.default_rng(2)
    ptr = _ptr([5, 8, 30, 2])
    y = rng.integers(0, 3, ptr[-1]).astype(float)
    raw = rng.normal(size=ptr[-1])
    g, _ = _kernel(StochasticRank("ndcg@5", sfa=True, nu=nu), y, raw, ptr, 8)
    g0, _ = _kernel(StochasticRank("ndcg@5", sfa=False), y, raw, ptr, 8)
    for q in range(len(ptr) - 1):
        sl = slice(ptr[q], ptr[q + 1])
        gs, zs, g0s = g[sl], raw[sl], g0[sl] - g0[sl].mean()
        c = zs - zs.mean()
        assert abs(gs.sum()) < 1e-12
        assert abs(g0s @ c) > 1e-4  # there was something to project out
        # What remains is <g0, c> nu (2||c|| + nu) / (||c|| + nu)^2 <= 2 nu ||g0||.
        assert abs(gs @ c) <= 1e-12 + 2 * nu * np.linalg.norm(g0s)


def test_sfa_with_all_scores_equal_and_nu_zero():
    """c = 0 and nu = 0: nothing to project out, no division by zero."""
    y = np.array([2.0, 0.0, 1.0])
    g, _ = _kernel(StochasticRank("ndcg", sfa=True, nu=0.0), y, np.zeros(3), _ptr([3]), 1)
    assert np.all(np.isfinite(g)) and abs(g.sum()) < 1e-12 and g[0] < 0


def test_equal_labels_give_zero_gradient():
    ptr = _ptr([6, 3])
    raw = np.random.default_rng(0).normal(size=9)
    for metric in METRICS:
        y = np.full(9, 0.5 if metric == "err" else 3.0)
        g, h = StochasticRank(metric).gradient_hessian(y, raw, group_ptr=ptr, seed=3)
        np.testing.assert_array_equal(g, 0.0)
        np.testing.assert_array_equal(h, 1.0)


def test_permutation_within_query_given_the_same_noise_is_exact():
    """Permuting rows together with their noise permutes the estimate (no sampled ties)."""
    rng = np.random.default_rng(4)
    n = 9
    y = rng.integers(0, 3, n).astype(float)
    raw = rng.normal(size=n)
    eps = rng.normal(size=(2, n))
    perm = rng.permutation(n)
    for metric in METRICS:
        obj = StochasticRank(metric, 4, sfa=True, n_estimations=2,
                             err_mapping="chapelle" if metric == "err" else None)
        g, _ = _kernel(obj, y, raw, _ptr([n]), 0, eps=eps)
        gp, _ = _kernel(obj, y[perm], raw[perm], _ptr([n]), 0, eps=eps[:, perm])
        np.testing.assert_allclose(gp, g[perm], rtol=1e-12, atol=1e-15)


def test_permutation_within_query_is_exact():
    """Each document's noise is keyed by its place in the query sorted by score, so
    permuting the rows of a query permutes the estimate exactly. Rows with equal
    score and label are interchangeable: within such a class, compare multisets."""
    rng = np.random.default_rng(6)
    ptr = _ptr([5, 9, 1, 12])
    y = rng.integers(0, 3, ptr[-1]).astype(float)
    raw = rng.integers(0, 5, ptr[-1]) * 0.5  # tied scores
    perm = np.concatenate([lo + rng.permutation(hi - lo) for lo, hi in zip(ptr[:-1], ptr[1:])])
    qid = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    classes = {}
    for i in range(len(y)):
        classes.setdefault((qid[i], raw[i], y[i]), []).append(i)
    assert max(len(c) for c in classes.values()) > 1
    for metric in METRICS:
        okw, _ = _metric_kwargs(metric, y)
        obj = StochasticRank(metric, 4, n_estimations=2, **okw)
        g, _ = _kernel(obj, y, raw, ptr, 31)
        gp, _ = _kernel(obj, y[perm], raw[perm], ptr, 31)
        back = np.empty_like(gp)
        back[perm] = gp
        for rows in classes.values():
            np.testing.assert_allclose(np.sort(back[rows]), np.sort(g[rows]), rtol=1e-12, atol=1e-15)
        assert not np.array_equal(g, _kernel(obj, y, raw, ptr, 32)[0])  # the noise is live


def test_thread_count_does_not_change_results():
    rng = np.random.default_rng(9)
    sizes = rng.integers(1, 60, 200)
    ptr = _ptr(sizes)
    y = rng.integers(0, 5, ptr[-1]).astype(float)
    raw = rng.normal(size=ptr[-1])
    before = numba.get_num_threads()
    try:
        out = []
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            out.append([StochasticRank(m, 10, n_estimations=2,
                                       err_mapping="chapelle" if m == "err" else None)
                        .gradient_hessian(y, raw, group_ptr=ptr, seed=77)[0] for m in METRICS])
    finally:
        numba.set_num_threads(before)
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_seeds_are_reproducible_and_qid_order_is_handled():
    rng = np.random.default_rng(1)
    qid = rng.integers(0, 20, 300)
    y = rng.integers(0, 3, 300)
    raw = rng.normal(size=300)
    g1, _ = StochasticRank("ndcg@10", random_state=0).gradient_hessian(y, raw, qid=qid)
    g2, _ = StochasticRank("ndcg@10", random_state=0).gradient_hessian(y, raw, qid=qid)
    np.testing.assert_array_equal(g1, g2)
    obj = StochasticRank("ndcg@10", random_state=0)
    a, _ = obj.gradient_hessian(y, raw, qid=qid)
    b, _ = obj.gradient_hessian(y, raw, qid=qid)
    assert not np.array_equal(a, b)  # fresh noise every call
    # Rows in caller order: each query's gradient sums to zero (SFA).
    for v in np.unique(qid):
        assert abs(g1[qid == v].sum()) < 1e-12


def test_mrr_map_binarise_graded_labels():
    rng = np.random.default_rng(3)
    ptr = _ptr([7, 5, 8])
    y = rng.integers(0, 4, ptr[-1]).astype(float)
    raw = rng.normal(size=ptr[-1])
    for metric in ("mrr", "map"):
        # mu = 0: the shift sigma mu r uses the graded label r (as CatBoost does)
        g, _ = StochasticRank(metric, mu=0.0, relevance_threshold=1.5).gradient_hessian(y, raw, group_ptr=ptr, seed=2)
        gb, _ = StochasticRank(metric, mu=0.0).gradient_hessian((y > 1.5).astype(float), raw, group_ptr=ptr, seed=2)
        np.testing.assert_array_equal(g, gb)


def test_descent_improves_ndcg_on_mq2008(shared_data):
    """Plain gradient descent on per-document scores raises NDCG@10 on real queries;
    all-zero-label queries get exactly zero gradient."""
    from sklearn.datasets import load_svmlight_file

    _, y, qid = load_svmlight_file(str(shared_data / "MQ2008/Fold1/train.txt.gz"), query_id=True)
    ptr = _ptr(np.unique(qid, return_counts=True)[1])
    y = y.astype(float)
    z = np.random.default_rng(0).normal(size=len(y)) * 0.1
    obj = StochasticRank("ndcg@10", random_state=0)

    def ndcg10(z):
        vals = []
        for q in range(len(ptr) - 1):
            yy, zz = y[ptr[q]:ptr[q + 1]], z[ptr[q]:ptr[q + 1]]
            if yy.max() > 0:
                vals.append(metric_batch(yy, np.argsort(-zz, kind="stable")[None], "ndcg", 10)[0])
        return np.mean(vals)

    start = ndcg10(z)
    for _ in range(30):
        g, _ = obj.gradient_hessian(y, z, group_ptr=ptr)
        z -= 5.0 * g
    zero_q = [q for q in range(len(ptr) - 1) if y[ptr[q]:ptr[q + 1]].max() == 0]
    assert zero_q and all(np.all(g[ptr[q]:ptr[q + 1]] == 0) for q in zero_q)
    assert ndcg10(z) > start + 0.2


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(sigma=0.0), "sigma"),
        (dict(sigma=float("nan")), "sigma"),
        (dict(mu=-0.1), "mu"),
        (dict(nu=-1.0), "nu"),
        (dict(n_estimations=0), "n_estimations"),
        (dict(n_estimations=1.5), "n_estimations"),
        (dict(k=0), "k"),
        (dict(metric="ndcg@3", k=5), "k=5"),
        (dict(metric="precison"), "Unknown metric"),
        (dict(metric="precision"), "does not optimise metric=.precision.; use one of"),
        (dict(metric="expdcg"), "YetiRank"),
        (dict(gain="log"), "gain"),
        (dict(err_mapping="linear"), "err_mapping"),
        (dict(sfa="yes"), "sfa"),
        (dict(relevance_threshold=None), "relevance_threshold"),
    ],
)
def test_bad_params(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        StochasticRank(**kwargs).gradient_hessian([1, 0], [0.0, 0.0], qid=[0, 0])


def test_bad_labels():
    with pytest.raises(ValueError, match="negative"):
        StochasticRank().gradient_hessian([1, -1], [0.0, 0.0], qid=[0, 0])
    with pytest.raises(ValueError, match="err_mapping='chapelle'"):
        StochasticRank("err").gradient_hessian([2, 0], [0.0, 0.0], qid=[0, 0])
    with pytest.raises(ValueError, match="err_max_label"):
        StochasticRank("err", err_mapping="chapelle", err_max_label=2).gradient_hessian(
            [3, 0], [0.0, 0.0], qid=[0, 0]
        )
    # Within range: fine, and equal to the default r_max when it is the maximum.
    a, _ = StochasticRank("err", err_mapping="chapelle", err_max_label=3).gradient_hessian(
        [3, 0, 1], [0.0, 0.1, 0.2], qid=[0, 0, 0], seed=1)
    b, _ = StochasticRank("err", err_mapping="chapelle").gradient_hessian(
        [3, 0, 1], [0.0, 0.1, 0.2], qid=[0, 0, 0], seed=1)
    np.testing.assert_array_equal(a, b)


def test_gain_none_smooths_linear_gains_and_reports_rankkits_ndcg():
    """gain=None smooths the linear-gain metric, as gain="linear", and leaves
    the reported metric at its default (exp) gain; an explicit gain is both
    the smoothed and the reported one."""
    y, raw, ptr = _tricky_data(4)
    default = StochasticRank("ndcg@5", sfa=True, gain=None)
    linear = StochasticRank("ndcg@5", sfa=True, gain="linear")
    exp = StochasticRank("ndcg@5", sfa=True, gain="exp")
    g_default, _ = _kernel(default, y, raw, ptr, 11)
    assert np.array_equal(g_default, _kernel(linear, y, raw, ptr, 11)[0])
    assert not np.allclose(g_default, _kernel(exp, y, raw, ptr, 11)[0])
    assert default._eval_metric_settings()["gain"] == "exp"  # the metric's default, stated
    assert linear._eval_metric_settings()["gain"] == "linear"
    assert exp._eval_metric_settings()["gain"] == "exp"
    with pytest.raises(ValueError, match="gain"):
        StochasticRank(gain="log")._check_params()


def test_a_sigma_that_overflows_the_first_gradients_is_named():
    """The CCS gradients are of order 1 / sigma: a sigma of 5e-324 makes the
    first iteration's gradients infinite at scores 0. The error says so and
    names sigma, rather than blaming diverged scores and the learning rate."""
    from rankkit import StochasticRankRanker
    from rankkit.datasets import make_ranking

    X, y, qid = make_ranking(20, n_features=3, random_state=0)
    with pytest.raises(ValueError, match=r"first iteration, at scores 0.*StochasticRank's\s+gradients grow as "
                                         r"1 / sigma"):
        StochasticRankRanker(sigma=5e-324, n_estimators=2).fit(X, y, qid=qid)
    # A sigma whose first gradients are finite but huge: the scores overflow at once.
    with pytest.raises(ValueError, match=r"iteration [01] .*StochasticRank's gradients grow as 1 / sigma"):
        StochasticRankRanker(sigma=1e-300, n_estimators=3, n_jobs=1).fit(X, y, qid=qid)


def test_expected_gradient_equals_catboosts_stochasticrank():
    """An independent implementation: CatBoost's StochasticRank derivatives,
    read from one-iteration models whose every leaf holds one document
    (learning rate 1, no leaf regularisation, no bootstrap, no split noise),
    averaged over seeds, equal rankkit's CCS gradients with CatBoost's
    surrogate (linear gain, mu = 0) in expectation; SFA on in both."""
    catboost = pytest.importorskip("catboost")
    rng = np.random.default_rng(0)
    n_docs = 8
    index = np.arange(2 * n_docs)
    X = ((index[:, None] >> np.arange(4)) & 1).astype(float)  # 4 bits: the document, then the query
    qid = index // n_docs
    y = rng.integers(0, 4, index.size).astype(float)
    base = np.round(rng.normal(size=index.size), 1)  # ties among the scores
    test_pool = catboost.Pool(X, group_id=qid, baseline=np.zeros(index.size))

    def catboost_derivatives(seed):
        model = catboost.CatBoost({
            "loss_function": "StochasticRank:metric=NDCG;top=5", "iterations": 1, "depth": 4,
            "learning_rate": 1.0, "l2_leaf_reg": 1e-10, "random_strength": 0, "bootstrap_type": "No",
            "random_seed": seed, "verbose": 0, "thread_count": 1, "allow_writing_files": False})
        model.fit(catboost.Pool(X, y, group_id=qid, baseline=base))
        return model.predict(test_pool, prediction_type="RawFormulaVal")

    theirs = np.array([catboost_derivatives(seed) for seed in range(150)])
    objective = StochasticRank("ndcg@5", gain="linear", mu=0.0, random_state=0)
    ours = -np.array([objective.gradient_hessian(y, base, qid=qid, seed=s)[0] for s in range(1, 1501)])
    se = np.sqrt(theirs.var(axis=0, ddof=1) / len(theirs) + ours.var(axis=0, ddof=1) / len(ours))
    difference = theirs.mean(axis=0) - ours.mean(axis=0)
    assert np.abs(ours.mean(axis=0)).max() > 0.05  # gradients far from 0 ...
    assert np.all(np.abs(difference) <= 5 * se + 1e-9), (difference, se)  # ... and equal in expectation
