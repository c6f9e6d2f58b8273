"""Naive, obviously-correct StochasticRank references (the executable spec).

Plain Python/NumPy, no numba: metrics are recomputed from scratch for every
ranked list, and the CCS sum literally inserts document ``j`` at every
position of the other documents' sampled order.
"""

import math

import numpy as np


def _value(r, metric, exp_gain, err_scale):
    if metric in ("ndcg", "dcg"):
        return 2.0**r - 1.0 if exp_gain else r
    if metric == "err":
        return r if err_scale <= 0 else (2.0**r - 1.0) / err_scale
    raise ValueError(metric)


def metric_of_list(labels, all_labels, metric, k=None, *, exp_gain=True, threshold=0.0, err_scale=0.0):
    """Metric of ``labels`` listed top first; ``all_labels`` (the query) for NDCG/MAP norms.

    Queries whose normaliser is 0 (no gain, no relevant document) score 0:
    their value is a constant, so their gradient is zero whatever it is.
    """
    n = len(labels)
    kk = n if k is None else min(k, n)
    if metric in ("dcg", "ndcg"):
        dcg = sum(_value(labels[i], metric, exp_gain, 0) / math.log2(i + 2) for i in range(kk))
        if metric == "dcg":
            return dcg
        ideal = sorted(all_labels, reverse=True)
        idcg = sum(_value(ideal[i], metric, exp_gain, 0) / math.log2(i + 2) for i in range(kk))
        return dcg / idcg if idcg > 0 else 0.0
    if metric == "err":
        total, keep = 0.0, 1.0
        for i in range(kk):
            R = _value(labels[i], "err", exp_gain, err_scale)
            total += keep * R / (i + 1)
            keep *= 1.0 - R
        return total
    rel = [1 if r > threshold else 0 for r in labels]
    if metric == "mrr":
        for i in range(kk):
            if rel[i]:
                return 1.0 / (i + 1)
        return 0.0
    if metric == "map":
        n_rel = sum(1 for r in all_labels if r > threshold)
        if n_rel == 0:
            return 0.0
        hits, total = 0, 0.0
        for i in range(kk):
            if rel[i]:
                hits += 1
                total += hits / (i + 1)
        return total / min(n_rel, kk if k is not None else n_rel)
    raise ValueError(metric)


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
                    diff = metric_of_list([r[i] for i in up], r, metric, k, **kw) - metric_of_list(
                        [r[i] for i in down], r, metric, k, **kw
                    )
                    g[j] -= diff * _phi((s[others[p]] - shifted[j]) / sigma) / sigma / n_est
        if sfa and n > 0:
            g = sfa_reference(g, z, nu)
        grad[a:b] = g
    return grad


def metric_batch(labels, order, metric, k=None, *, exp_gain=True, threshold=0.0, err_scale=0.0):
    """Vectorised metric of many rankings of one query: ``order`` is (N, n) top first."""
    labels = np.asarray(labels, dtype=float)
    lab = labels[order]
    n = labels.shape[0]
    kk = n if k is None else min(k, n)
    lab = lab[:, :kk]
    pos = np.arange(kk)
    if metric in ("dcg", "ndcg"):
        G = 2.0**lab - 1.0 if exp_gain else lab
        dcg = (G / np.log2(pos + 2)).sum(axis=1)
        if metric == "dcg":
            return dcg
        ideal = np.sort(labels)[::-1][:kk]
        Gi = 2.0**ideal - 1.0 if exp_gain else ideal
        idcg = (Gi / np.log2(pos + 2)).sum()
        return dcg / idcg if idcg > 0 else np.zeros(len(order))
    if metric == "err":
        R = lab if err_scale <= 0 else (2.0**lab - 1.0) / err_scale
        keep = np.cumprod(np.hstack([np.ones((len(R), 1)), 1.0 - R[:, :-1]]), axis=1)
        return (keep * R / (pos + 1)).sum(axis=1)
    rel = (lab > threshold).astype(float)
    if metric == "mrr":
        first = np.argmax(rel, axis=1)
        has = rel.max(axis=1) > 0
        return np.where(has, 1.0 / (first + 1), 0.0)
    if metric == "map":
        n_rel = int((labels > threshold).sum())
        if n_rel == 0:
            return np.zeros(len(order))
        prec = np.cumsum(rel, axis=1) / (pos + 1)
        return (prec * rel).sum(axis=1) / min(n_rel, kk if k is not None else n_rel)
    raise ValueError(metric)
