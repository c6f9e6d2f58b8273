"""Naive, obviously-correct twins of the objective kernels (plain Python).

Every metric is recomputed from scratch after a swap; every pair is visited;
pair weights are stored in a full matrix. Slow on purpose: this is the
executable specification the numba kernels
are compared against.
"""

import math

import numpy as np

from ._reference_metrics import value_of_order


def worst_order(scores, labels):
    """Indices by score descending; ties: less relevant first, then input order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], labels[i], i))


def noise_ranks(y, z, group_ptr):
    """Each row's place in its query's ``worst_order``: the counter random
    objectives draw that document's noise at."""
    rank = np.empty(len(y), dtype=np.int64)
    for q in range(len(group_ptr) - 1):
        lo, hi = group_ptr[q], group_ptr[q + 1]
        for p, i in enumerate(worst_order(list(z[lo:hi]), list(y[lo:hi]))):
            rank[lo + i] = p
    return rank


def metric_value(metric, labels, k=None, *, exp_gain=True, threshold=0.0, err_scale=-1.0, decay=0.85):
    """Metric of a ranking given as the list of labels in shown order
    (:func:`tests._reference_metrics.value_of_order`, the one naive metric);
    normalised metrics (NDCG, MAP) score 0 when their normaliser is 0."""
    return value_of_order(metric, labels, k=k, gain_type="exp" if exp_gain else "linear", empty=0.0,
                          threshold=threshold, err_scale=err_scale, decay=decay)


def swap_difference(metric, labels, a, b, k=None, **kw):
    """``|M(swap a, b) - M|`` by recomputing the metric after the swap."""
    swapped = list(labels)
    swapped[a], swapped[b] = swapped[b], swapped[a]
    return abs(metric_value(metric, swapped, k, **kw) - metric_value(metric, labels, k, **kw))


def _rho(d):
    return 1.0 / (1.0 + math.exp(d))


def lambdamart(y, z, group_ptr, metric="ndcg", k=None, *, sigma=1.0, truncation=None, normalize=True,
               pairwise=False, **kw):
    """O(n^2) LambdaMART over all document pairs of each query."""
    g = np.zeros(len(y))
    h = np.zeros(len(y))
    for q in range(len(group_ptr) - 1):
        lo, hi = group_ptr[q], group_ptr[q + 1]
        ys, zs = list(y[lo:hi]), list(z[lo:hi])
        order = worst_order(zs, ys)
        pos = {doc: p for p, doc in enumerate(order)}
        labels_in_order = [ys[d] for d in order]
        total = 0.0
        for i in range(len(ys)):
            for j in range(len(ys)):
                if ys[i] <= ys[j]:
                    continue
                if truncation is not None and min(pos[i], pos[j]) >= truncation:
                    continue
                if pairwise:
                    delta = 1.0
                else:
                    a, b = sorted((pos[i], pos[j]))
                    delta = swap_difference(metric, labels_in_order, a, b, k, **kw)
                rho = _rho(sigma * (zs[i] - zs[j]))
                lam = sigma * delta * rho
                g[lo + i] -= lam
                g[lo + j] += lam
                h[lo + i] += sigma**2 * delta * rho * (1 - rho)
                h[lo + j] += sigma**2 * delta * rho * (1 - rho)
                total += 2 * lam
        if normalize and total > 0:
            f = math.log1p(total) / math.log(2) / total  # log2(1 + total) loses total below 1e-16
            g[lo:hi] *= f
            h[lo:hi] *= f
    return g, h


def ranknet(y, z, group_ptr, sigma=1.0):
    """Derivative of ``sum_{r_i > r_j} log(1 + exp(-sigma (z_i - z_j)))`` and its
    diagonal second derivative, by the textbook formula (Burges et al. 2005)."""
    g = np.zeros(len(y))
    h = np.zeros(len(y))
    for q in range(len(group_ptr) - 1):
        lo, hi = group_ptr[q], group_ptr[q + 1]
        for i in range(lo, hi):
            for j in range(lo, hi):
                if y[i] > y[j]:
                    s = 1.0 / (1.0 + math.exp(sigma * (z[i] - z[j])))
                    g[i] -= sigma * s
                    g[j] += sigma * s
                    h[i] += sigma**2 * s * (1 - s)
                    h[j] += sigma**2 * s * (1 - s)
    return g, h


def yeti_weights(y, noisy_rounds, metric="classic", k=None, *, num_neighbors=1, decay=0.85, **kw):
    """Averaged pair weights ``W[a, b]`` (``a`` more relevant) of one query, as
    a full matrix, given the noisy scores of every round."""
    n = len(y)
    W = np.zeros((n, n))
    for noisy in noisy_rounds:
        order = worst_order(list(noisy), list(y))
        labels_in_order = [y[d] for d in order]
        for pa in range(n):
            for pb in range(pa + 1, n):
                if num_neighbors != -1 and pb - pa > num_neighbors:
                    continue
                da, db = order[pa], order[pb]
                if y[da] == y[db]:
                    continue
                if metric == "classic":
                    w = abs(y[da] - y[db]) * decay**pa
                else:
                    w = swap_difference(metric, labels_in_order, pa, pb, k, decay=decay, **kw)
                win, lose = (da, db) if y[da] > y[db] else (db, da)
                W[win, lose] += w
    return W / len(noisy_rounds)


def pairwise_logistic_grad(W, z):
    """Gradient and diagonal hessian of ``sum W[a,b] log(1 + exp(-(z_a - z_b)))``."""
    n = len(z)
    g = np.zeros(n)
    h = np.zeros(n)
    for a in range(n):
        for b in range(n):
            if W[a, b] != 0:
                rho = _rho(z[a] - z[b])
                g[a] -= W[a, b] * rho
                g[b] += W[a, b] * rho
                h[a] += W[a, b] * rho * (1 - rho)
                h[b] += W[a, b] * rho * (1 - rho)
    return g, h


def pairwise_logistic_loss(W, z):
    n = len(z)
    return sum(W[a, b] * math.log1p(math.exp(-(z[a] - z[b]))) for a in range(n) for b in range(n) if W[a, b])


def xendcg(y, z, gamma):
    """One query: ``g = softmax(z) - phi``, ``h = rho (1 - rho)``."""
    e = [math.exp(v) for v in z]
    rho = [v / sum(e) for v in e]
    t = [2.0**r - gm for r, gm in zip(y, gamma)]
    phi = [v / sum(t) for v in t]
    g = np.array([r - p for r, p in zip(rho, phi)])
    h = np.array([r * (1 - r) for r in rho])
    return g, h


def xendcg_loss(y, z, gamma):
    t = [2.0**r - gm for r, gm in zip(y, gamma)]
    m = max(z)
    lse = m + math.log(sum(math.exp(v - m) for v in z))
    return -sum((ti / sum(t)) * (zi - lse) for ti, zi in zip(t, z))


def xendcg_lightgbm(y, z, gamma):
    """One query: the ``(lambda, h)`` LightGBM's ``rank_xendcg`` hands its trees,
    written as matrices (Bruch 2019, section 4.4). With ``D = diag(rho (1 - rho))``
    and ``O_ij = rho_i rho_j`` off the diagonal, the Hessian of the loss is
    ``H = D - O``; ``H^-1 = sum_k (D^-1 O)^k D^-1`` (Neumann series) is cut
    after ``k = 2`` and the tree gets ``lambda = D (I + A + A^2) D^-1 g``,
    ``A = D^-1 O``, ``g = rho - phi``: so that the leaf ``-sum lambda / sum h``
    approximates a Newton step with the full Hessian. LightGBM truncates labels
    to integers in ``2^r``."""
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    rho = e / e.sum()
    t = np.array([2.0 ** int(r) - gm for r, gm in zip(y, gamma)])
    g = rho - t / t.sum()
    D = np.diag(rho * (1 - rho))
    O = np.outer(rho, rho)
    np.fill_diagonal(O, 0.0)
    A = np.linalg.solve(D, O)
    lam = D @ (np.eye(len(z)) + A + A @ A) @ np.linalg.solve(D, g)
    return lam, rho * (1 - rho)


def lightgbm_uniforms(seed, n):
    """``n`` draws of LightGBM's ``Random(seed).NextFloat()``: the LCG
    ``x <- 214013 x + 2531011 (mod 2^32)``, ``((x >> 16) & 0x7FFF) / 32768``.
    ``rank_xendcg`` draws the gammas of query ``q`` from ``Random(objective_seed + q)``
    in row order, continuing the stream from one iteration to the next."""
    x = int(seed) % 2**32
    out = []
    for _ in range(n):
        x = (214013 * x + 2531011) % 2**32
        out.append(((x >> 16) & 0x7FFF) / 32768.0)
    return np.array(out)
