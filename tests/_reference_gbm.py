"""Naive, obviously-correct twins of the numba GBDT kernels (rankkit._backends._gbm).

Everything here works on Python scalars and boolean row masks, never on
histograms, so a bug in histogram building, subtraction or partitioning shows
up as a disagreement.
"""

import bisect
import math

import numpy as np

from ._reference_random import normal

MISSING = 255


def ref_bin(X, edges, edges_ptr):
    """bin(x) = number of edges strictly below x; NaN -> 255."""
    n, F = X.shape
    out = np.zeros((n, F), dtype=np.uint8)
    for f in range(F):
        e = list(edges[edges_ptr[f]:edges_ptr[f + 1]])
        for i in range(n):
            x = X[i, f]
            out[i, f] = MISSING if math.isnan(x) else bisect.bisect_left(e, x)
    return out


def group_features(Xb):
    """The grower's layout of an (n, F) bin matrix, by copying:
    ``Xg[f // 8, i, f % 8] = Xb[i, f]``, padding lanes 0."""
    n, F = Xb.shape
    out = np.zeros(((F + 7) // 8, n, 8), dtype=np.uint8)
    for f in range(F):
        out[f // 8, :, f % 8] = Xb[:, f]
    return out


def ungroup_features(Xg, F):
    """The (n, F) bin matrix of the grower's layout."""
    return np.asfortranarray(np.concatenate(list(Xg), axis=1)[:, :F])


def ref_histogram(Xb, rows, grad, hess, f):
    h = np.zeros((256, 2))
    for r in rows:
        h[Xb[r, f], 0] += grad[r]
        h[Xb[r, f], 1] += hess[r]
    return h


def _score(g, h, lam):
    d = h + lam
    return g * g / d if d > 0 else 0.0


def ref_goes_left(b, t, ml):
    return bool(ml) if b == MISSING else b <= t


def ref_partition(segment, left):
    """A segment's rows after the split: the k-th row of the left part that
    goes right trades places with the k-th row of the right part that goes
    left (the grower's rule; any partition would do, this one is its)."""
    out = list(segment)
    n_left = int(np.sum(left))
    wrong_left = [i for i in range(n_left) if not left[i]]
    wrong_right = [i for i in range(n_left, len(out)) if left[i]]
    assert len(wrong_left) == len(wrong_right)
    for i, j in zip(wrong_left, wrong_right):
        out[i], out[j] = out[j], out[i]
    return np.array(out, dtype=np.asarray(segment).dtype)


def ref_node_candidates(Xb, rows, grad, hess, f, nb, lam):
    """All (t, ml, GL, HL, GR, HR) of feature f on the node's rows, by masks."""
    col = Xb[rows, f]
    has_missing = bool(np.any(col == MISSING))
    last = nb - 1 if has_missing else nb - 2
    out = []
    for t in range(last + 1):
        for ml in ((0, 1) if has_missing else (0,)):
            left = np.array([ref_goes_left(b, t, ml) for b in col], dtype=bool)
            gl, hl = float(np.sum(grad[rows][left])), float(np.sum(hess[rows][left]))
            gr, hr = float(np.sum(grad[rows][~left])), float(np.sum(hess[rows][~left]))
            out.append((t, ml, gl, hl, gr, hr, has_missing))
    return out


def _criterion(gain, parent, noise_sd, noise_key, counter):
    """Random split strength: sqrt(S_L + S_R) + sd N(0, 1); the gain itself without noise."""
    if noise_sd == 0:
        return gain
    return math.sqrt(max(parent + 2.0 * gain, 0.0)) + noise_sd * normal(noise_key, counter)


def ref_best_split(Xb, rows, grad, hess, feats, n_bins, lam, mcw, noise_sd=0.0, noise_key=0, node_id=0,
                   min_split_gain=-math.inf):
    """Exhaustive best split of one node: (gain, f, t, ml, GL, HL) or None.

    Only candidates whose loss change ``S_L + S_R - S`` (twice the gain)
    exceeds ``min_split_gain`` (XGBoost's ``gamma``) count. Ties go to the
    lowest feature, then lowest bin, then missing-right; with no missing value
    in the node, missing goes to the heavier child. With ``noise_sd > 0``
    candidates are compared by :func:`_criterion`, candidate ``(f, t, ml)`` of
    node ``node_id`` drawing counter ``512 (node_id F + f) + 2 t + ml``.
    """
    G, H = float(np.sum(grad[rows])), float(np.sum(hess[rows]))
    parent = _score(G, H, lam)
    best, best_score = None, -math.inf
    for f in feats:
        for t, ml, gl, hl, gr, hr, has_missing in ref_node_candidates(Xb, rows, grad, hess, f, n_bins[f], lam):
            if hl < mcw or hr < mcw or hl <= 0 or hr <= 0:
                continue
            gain = 0.5 * (_score(gl, hl, lam) + _score(gr, hr, lam) - parent)
            if not 2 * gain > min_split_gain:
                continue
            score = _criterion(gain, parent, noise_sd, noise_key, 512 * (node_id * len(n_bins) + f) + 2 * t + ml)
            if best is None or score > best_score:
                if not has_missing:
                    ml = 1 if hl >= H - hl else 0
                best, best_score = (gain, f, t, ml, gl, hl), score
    return best


def ref_grow_depthwise(Xb, rows, grad, hess, feats, n_bins, *, max_depth, lam, mcw, min_split_gain=0.0,
                       noise_sd=0.0, noise_key=0, leaf_hess=None):
    """Greedy depth-wise tree by exhaustive search at every node.

    Returns a nested dict: leaves {"value", "rows"}; splits {"feature", "bin",
    "missing_left", "left", "right"}. Nodes are numbered breadth-first, the
    two children of a level's k-th split getting the next two numbers (the
    numbers the split noise is keyed by). ``leaf_hess``: the hessians of the
    leaf values (default ``hess``, which then only scores the splits).
    """
    leaf_hess = hess if leaf_hess is None else leaf_hess

    def leaf(r):
        G, H = float(np.sum(grad[r])), float(np.sum(leaf_hess[r]))
        return {"value": -G / (H + lam) if H + lam > 0 else 0.0, "count": len(r)}

    root = leaf(np.asarray(rows))
    level = [(np.asarray(rows), 0, root)]
    next_id = 1
    for depth in range(max_depth):
        children = []
        for r, node_id, node in level:
            best = ref_best_split(Xb, r, grad, hess, feats, n_bins, lam, mcw, noise_sd, noise_key, node_id,
                                  min_split_gain)
            if best is None:
                continue
            _, f, t, ml, _, _ = best
            left = np.array([ref_goes_left(b, t, ml) for b in Xb[r, f]], dtype=bool)
            node.clear()
            node.update({"feature": f, "bin": t, "missing_left": ml, "gain": best[0],
                         "left": leaf(r[left]), "right": leaf(r[~left])})
            children += [(r[left], next_id, node["left"]), (r[~left], next_id + 1, node["right"])]
            next_id += 2
        level = children
    return root


def ref_grow_oblivious(Xb, rows, grad, hess, feats, n_bins, *, max_depth, lam, mcw, min_split_gain=0.0,
                       noise_sd=0.0, noise_key=0, leaf_hess=None):
    """Oblivious tree: each level, the (f, t, ml) maximising the summed node gain
    among those whose summed loss change (twice the gain) exceeds
    ``min_split_gain`` (with ``noise_sd > 0``:
    :func:`_criterion` of it and of the summed parent scores, level ``d``'s
    candidate drawing counter ``512 (d F + f) + 2 t + ml``).

    Returns (splits, leaves): splits = [(f, t, ml)] per level, leaves = list of
    leaf values in left-to-right order, from ``leaf_hess`` (default ``hess``).
    """
    leaf_hess = hess if leaf_hess is None else leaf_hess
    nodes = [np.asarray(rows)]
    splits = []
    for depth in range(max_depth):
        best, best_score = None, -math.inf
        parent = sum(_score(float(np.sum(grad[r])), float(np.sum(hess[r])), lam) for r in nodes)
        for f in feats:
            # Without a missing value at this level only "missing right" is a candidate.
            sides = (0, 1) if any(np.any(Xb[r, f] == MISSING) for r in nodes) else (0,)
            for t in range(n_bins[f]):
                for ml in sides:
                    total, usable = 0.0, False
                    for r in nodes:
                        col = Xb[r, f]
                        left = np.array([ref_goes_left(b, t, ml) for b in col], dtype=bool)
                        gl, hl = float(np.sum(grad[r][left])), float(np.sum(hess[r][left]))
                        G, H = float(np.sum(grad[r])), float(np.sum(hess[r]))
                        gr, hr = G - gl, H - hl
                        if hl >= mcw and hr >= mcw and hl > 0 and hr > 0:
                            usable = True
                            total += 0.5 * (_score(gl, hl, lam) + _score(gr, hr, lam) - _score(G, H, lam))
                    score = _criterion(total, parent, noise_sd, noise_key, 512 * (depth * len(n_bins) + f) + 2 * t + ml)
                    if usable and 2 * total > min_split_gain and (best is None or score > best_score):
                        best, best_score = (total, f, t, ml), score
        if best is None:
            break
        _, f, t, ml = best
        splits.append((f, t, ml))
        new = []
        for r in nodes:
            left = np.array([ref_goes_left(b, t, ml) for b in Xb[r, f]], dtype=bool)
            new += [r[left], r[~left]]
        nodes = new
    leaves = []
    for r in nodes:
        G, H = float(np.sum(grad[r])), float(np.sum(leaf_hess[r]))
        leaves.append(-G / (H + lam) if H + lam > 0 else 0.0)
    return splits, leaves


def ref_predict_tree(nodes, x):
    """Walk one record-array tree on one raw feature vector."""
    i = 0
    while nodes["left"][i] >= 0:
        v = x[nodes["feature"][i]]
        left = bool(nodes["missing_left"][i]) if math.isnan(v) else v <= nodes["threshold"][i]
        i = nodes["left"][i] if left else nodes["right"][i]
    return float(nodes["value"][i])


def tree_to_dict(nodes, i=0):
    """A record-array tree as the nested dict of :func:`ref_grow_depthwise`."""
    if nodes["left"][i] < 0:
        return {"value": float(nodes["value"][i]), "count": int(nodes["count"][i])}
    return {"feature": int(nodes["feature"][i]), "bin": int(nodes["bin_threshold"][i]),
            "missing_left": int(nodes["missing_left"][i]), "gain": float(nodes["gain"][i]),
            "left": tree_to_dict(nodes, nodes["left"][i]), "right": tree_to_dict(nodes, nodes["right"][i])}


def ref_mvs_probabilities(grad, rate):
    """Minimal variance sampling by its definition: p_i = min(1, s_i / mu),
    s_i = sqrt(g_i^2 + mean(|g|)^2), with mu found by bisection on the
    decreasing function mu -> sum_i p_i(mu) - rate * n."""
    g = [float(v) for v in grad]
    lam = (sum(abs(v) for v in g) / len(g)) ** 2
    s = [math.sqrt(v * v + lam) for v in g]
    target = rate * len(g)
    if max(s) == 0.0:
        return np.full(len(g), float(rate))
    lo, hi = 0.0, sum(s) / target  # at hi the unclipped sum is the target, clipping only lowers it
    for _ in range(200):
        mu = (lo + hi) / 2
        if sum(min(1.0, v / mu) for v in s) > target:
            lo = mu
        else:
            hi = mu
    return np.array([min(1.0, v / hi) for v in s])


def ref_leaf_of_rows(nodes, X):
    """The node every row of raw ``X`` reaches, walking one row at a time."""
    out = np.empty(X.shape[0], dtype=np.int64)
    for i in range(X.shape[0]):
        node = 0
        while nodes["left"][node] >= 0:
            x = X[i, nodes["feature"][node]]
            left = bool(nodes["missing_left"][node]) if math.isnan(x) else x <= nodes["threshold"][node]
            node = nodes["left"][node] if left else nodes["right"][node]
        out[i] = node
    return out


def ref_greedy_logsum_edges(values, max_bins):
    """GreedyLogSum by exhaustive search: each step tries every split of every
    bin (between distinct values) and takes the one raising sum(log(count))
    most (ties: the lowest bin, then the lowest split point)."""
    distinct = sorted(set(float(v) for v in values))
    count = {v: 0 for v in distinct}
    for v in values:
        count[float(v)] += 1
    c = [count[v] for v in distinct]
    bins = [(0, len(distinct))]  # [a, b) ranges of distinct indices
    while len(bins) < max_bins:
        choice = None
        for a, b in sorted(bins):
            total = sum(c[a:b])
            for s in range(a + 1, b):
                gain = math.log(sum(c[a:s])) + math.log(sum(c[s:b])) - math.log(total)
                if choice is None or gain > choice[0] + 1e-12:
                    choice = (gain, a, b, s)
        if choice is None:
            break
        _, a, b, s = choice
        bins.remove((a, b))
        bins += [(a, s), (s, b)]
    cuts = sorted(a for a, _ in bins if a > 0)
    return np.array([distinct[s - 1] + (distinct[s] - distinct[s - 1]) / 2.0 for s in cuts])
