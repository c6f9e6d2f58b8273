"""Naive, obviously-correct StochasticRank references (the executable spec).

Plain Python/NumPy, no numba: metrics are recomputed from scratch for every
ranked list (the one naive metric of ``tests._reference_metrics``), and the
CCS sum literally inserts document ``j`` at every position of the other
documents' sampled order.
"""

import math

import numpy as np

from ._reference_metrics import value_of_order


def metric_of_list(labels, metric, k=None, *, exp_gain=True, threshold=0.0, err_scale=0.0):
    """Metric of a query's documents listed top first (the one naive metric,
    :func:`tests._reference_metrics.value_of_order`). Queries whose normaliser
    is 0 (no gain, no relevant document) score 0: their value is a constant,
    so their gradient is zero whatever it is."""
    return value_of_order(metric, list(labels), k=k, gain_type="exp" if exp_gain else "linear", empty=0.0,
                          threshold=threshold, err_scale=err_scale)


def _phi(u):
    return math.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)


def sfa_reference(g, z, nu):
    """``g - mean(g)``, then remove ``<g, c> / (||c|| + nu)^2 c`` with ``c = z - mean(z)``."""
    g = np.asarray(g, dtype=float) - np.mean(g)
    c = np.asarray(z, dtype=float) - np.mean(z)
    den = (np.linalg.norm(c) + nu) ** 2
    if den > 0:
        g = g - (g @ c) / den * c
    return g


def ccs_reference(y, raw, group_ptr, eps, metric, k=None, *, sigma=1.0, mu=0.0, nu=0.01, sfa=True,
                  exp_gain=True, threshold=0.0, err_scale=0.0):
    """Loss gradient ``-(1/K) sum_e (1/sigma) sum_p (M_j(p) - M_j(p+1)) phi(...)``.

    ``eps`` has shape (K, n_samples): the noise of each sample.
    """
    y = np.asarray(y, dtype=float)
    raw = np.asarray(raw, dtype=float)
    grad = np.zeros_like(raw)
    n_est = eps.shape[0]
    for q in range(len(group_ptr) - 1):
        a, b = group_ptr[q], group_ptr[q + 1]
        r, z = list(y[a:b]), list(raw[a:b])
        n = b - a
        shifted = [z[i] - sigma * mu * r[i] for i in range(n)]
        g = [0.0] * n
        for e in range(n_est):
            s = [shifted[i] + sigma * eps[e, a + i] for i in range(n)]
            order = sorted(range(n), key=lambda i: (-s[i], i))
            for j in range(n):
                others = [i for i in order if i != j]
                for p in range(len(others)):
                    up = others[:p] + [j] + others[p:]
                    down = others[: p + 1] + [j] + others[p + 1:]
                    kw = dict(exp_gain=exp_gain, threshold=threshold, err_scale=err_scale)
                    diff = metric_of_list([r[i] for i in up], metric, k, **kw) - metric_of_list(
                        [r[i] for i in down], metric, k, **kw
                    )
                    g[j] -= diff * _phi((s[others[p]] - shifted[j]) / sigma) / sigma / n_est
        if sfa and n > 0:
            g = sfa_reference(g, z, nu)
        grad[a:b] = g
    return grad


def metric_batch(labels, order, metric, k=None, *, exp_gain=True, threshold=0.0, err_scale=0.0):
    """:func:`metric_of_list` of many rankings of one query: ``order`` is (N, n), top first.

    Short queries have few distinct orders, so each is evaluated once.
    """
    labels = np.asarray(labels, dtype=float)
    unique, inverse = np.unique(np.asarray(order), axis=0, return_inverse=True)
    kw = dict(exp_gain=exp_gain, threshold=threshold, err_scale=err_scale)
    values = np.array([metric_of_list(labels[o], metric, k, **kw) for o in unique])
    return values[inverse.ravel()]
