"""Paired significance tests, multiple-comparison corrections and the query bootstrap.

The statistics behind :func:`rankkit.evaluation.compare`, on per-query arrays:
``a`` and ``b`` hold two rankers' values on the same queries, in the same
order. Every test is two-sided and about the mean difference ``b - a``
(the question IR papers ask: does system B beat system A on average over
queries). Smucker, Allan & Carterette (CIKM 2007) compare these tests on TREC
data; their randomisation test is the one here.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: ``compare(test=...)`` -> the function below.
TESTS = ("t", "wilcoxon", "randomization")
CORRECTIONS = ("holm", "bonferroni", None)

#: The randomisation test enumerates all ``2^n`` sign flips up to this many
#: queries (65,536 flips) instead of sampling them.
EXACT_RANDOMIZATION_MAX_N = 16


def _differences(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired values must be 1-D of equal length, got {a.shape} and {b.shape}.")
    if a.shape[0] < 2:
        raise ValueError(f"a paired test needs at least 2 queries, got {a.shape[0]}.")
    # A NaN difference compares False everywhere: the randomisation test counted no
    # sign flip as extreme and returned p = 0.
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("paired values must be finite, got NaN or infinity: drop the queries a metric "
                         "excludes (NaN) before testing, as rankkit.evaluation.compare does.")
    return b - a


def _constant(d):
    """``(statistic, p)`` when every difference is the same: no variance to test
    with. Equal rankers (all 0) are not different (p = 1); a constant non-zero
    shift is as significant as it gets (p = 0)."""
    if np.all(d == 0):
        return 0.0, 1.0
    return float(np.sign(d[0]) * np.inf), 0.0


def paired_t(a, b):
    """Student's paired t-test: ``(t, p)``, equal to ``scipy.stats.ttest_rel(b, a)``."""
    d = _differences(a, b)
    if np.all(d == d[0]):
        return _constant(d)
    res = stats.ttest_rel(b, a)
    return float(res.statistic), float(res.pvalue)


def wilcoxon(a, b):
    """Wilcoxon's signed-rank test: ``(W, p)``, equal to ``scipy.stats.wilcoxon(b, a)``.

    SciPy's defaults: zero differences are dropped (``zero_method="wilcox"``,
    Wilcoxon's own rule), and ``method="auto"`` chooses between the exact
    null distribution, a permutation test and the normal approximation by
    the number of differences and their ties (the rule is SciPy's and moves
    with its versions). ``W`` is the smaller of the two rank sums.
    """
    d = _differences(a, b)
    if np.all(d == 0):
        return 0.0, 1.0
    res = stats.wilcoxon(b, a)
    return float(res.statistic), float(res.pvalue)


def _products(matrix, values):
    """``matrix @ values`` by NumPy's own loops, not BLAS: a BLAS product
    sums in an order that depends on its thread count (one or two units in
    the last place), so the same ``random_state`` gave another table on
    another machine; and BLAS threads would be outside any ``n_jobs``."""
    return np.einsum("ij,j...->i...", matrix, values, optimize=False)


def randomization(a, b, *, n_resamples=10_000, random_state=0):
    """Fisher's paired randomisation (permutation) test: ``(mean difference, p)``.

    Under the null hypothesis the two rankers' values of a query are
    exchangeable, so the sign of each difference is a fair coin. ``p`` is the
    fraction of sign assignments whose ``|mean|`` reaches the observed one:
    all ``2^n`` of them for ``n <=`` :data:`EXACT_RANDOMIZATION_MAX_N` (equal
    to ``scipy.stats.permutation_test(..., permutation_type="samples")``),
    else ``n_resamples`` random ones with ``p = (hits + 1) / (n_resamples + 1)``
    (Phipson & Smyth, 2010: the observed assignment is one of them, so
    ``p > 0`` and the test keeps its level).
    """
    d = _differences(a, b)
    n = d.shape[0]
    observed = abs(d.mean())
    # Comparisons with a relative slack, as SciPy does: sums of the same
    # numbers in another order must not flip a tie.
    tol = observed * 1e-14 * n
    if n <= EXACT_RANDOMIZATION_MAX_N:
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        means = np.abs(_products(signs, d)) / n
        return float(d.mean()), float(np.mean(means >= observed - tol))
    rng = np.random.default_rng(random_state)
    hits = 0
    for start in range(0, n_resamples, 2048):
        size = min(2048, n_resamples - start)
        signs = rng.integers(0, 2, size=(size, n)) * 2 - 1
        hits += int(np.sum(np.abs(_products(signs, d)) / n >= observed - tol))
    return float(d.mean()), (hits + 1) / (n_resamples + 1)


def run_test(test, a, b, *, n_resamples=10_000, random_state=0):
    """``(statistic, p)`` of the test named ``test`` (one of :data:`TESTS`)."""
    if test == "t":
        return paired_t(a, b)
    if test == "wilcoxon":
        return wilcoxon(a, b)
    if test == "randomization":
        return randomization(a, b, n_resamples=n_resamples, random_state=random_state)
    raise ValueError(f"test must be one of {list(TESTS)}, got {test!r}.")


def adjust(p_values, correction):
    """p-values adjusted for multiple comparisons (one family: all of ``p_values``).

    ``"bonferroni"``: ``min(1, m p)``. ``"holm"`` (Holm, 1979): sort
    ascending, ``p_(i) -> max_{j <= i} min(1, (m - j + 1) p_(j))``; it
    controls the family-wise error rate like Bonferroni and is never less
    powerful. ``None`` leaves them as they are. NaN p-values stay NaN and do
    not count in ``m``.
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = p.copy()
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if correction is None or m == 0:
        return out
    if correction == "bonferroni":
        out[ok] = np.minimum(1.0, p[ok] * m)
        return out
    if correction == "holm":
        idx = np.flatnonzero(ok)[np.argsort(p[ok], kind="stable")]
        scaled = np.minimum(1.0, p[idx] * (m - np.arange(m)))
        out[idx] = np.maximum.accumulate(scaled)
        return out
    raise ValueError(f"correction must be one of {list(CORRECTIONS)}, got {correction!r}.")


def bootstrap_means(values, *, n_resamples=10_000, random_state=0):
    """Bootstrap means over queries: ``(n_resamples, n_columns)``.

    ``values`` is ``(n_queries, n_columns)`` (one column per ranker or per
    difference). Every resample draws ``n_queries`` queries with replacement
    and the same draw serves every column, so differences between columns
    are paired. A resample's draws are counted per query (``bincount``) and
    the means are one product (:func:`_products`): no ``(resamples, queries, columns)``
    array, and batches keep the draws to about two million at a time.
    """
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[0]
    rng = np.random.default_rng(random_state)
    out = np.empty((n_resamples, values.shape[1]))
    batch = max(1, 2_000_000 // max(n, 1))
    for start in range(0, n_resamples, batch):
        size = min(batch, n_resamples - start)
        draws = rng.integers(0, n, size=(size, n))
        flat = (np.arange(size)[:, None] * n + draws).ravel()
        counts = np.bincount(flat, minlength=size * n).reshape(size, n).astype(np.float64)
        out[start:start + size] = _products(counts, values) / n
    return out


def percentile_interval(samples, confidence):
    """Percentile bootstrap interval of every column of ``samples``: ``(low, high)``."""
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [alpha, 1.0 - alpha], axis=0)
    return low, high
