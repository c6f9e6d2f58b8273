"""Best split of each node from its histograms.

For a node with gradient and hessian sums ``G, H`` split into ``L`` and ``R``,
the second-order gain (Chen & Guestrin 2016, eq. 7) is

    gain = 1/2 [ G_L^2 / (H_L + lambda) + G_R^2 / (H_R + lambda) - G^2 / (H + lambda) ]

A candidate ``(feature, bin t)`` sends bins ``<= t`` left. Missing values
(bin 255) are tried on both sides and the better side is learned
(XGBoost's sparsity-aware split finding, Algorithm 3). A candidate is valid
when both children have ``H >= min_child_weight`` and ``H > tiny`` (no empty
child) and its gain exceeds ``min_gain`` (the grower passes half of
XGBoost's ``gamma``: XGBoost compares ``gamma`` with twice this gain). Ties
are broken towards the lowest feature, then the lowest bin, then "missing
right", so the choice does not depend on thread scheduling.

``tiny`` tells rounding from rows: a sibling's histogram is its parent's
minus the built child's, so a bin with no row of the sibling can hold a
leftover of the order of 1e-15 of the tree's hessian sum (measured up to
20,000 queries: 2e-14). A hessian sum at or below ``tiny`` is no row: such
a child is empty, such a missing bin holds no missing value. The grower
passes :data:`EMPTY_HESSIAN` times the tree's hessian sum, or half the
smallest positive hessian of a row if that is less, so that a real row
is never taken for rounding (rows of hessian 0 never counted).

Random split strength (CatBoost's ``random_strength``, Prokhorenkova et al.
2018): when ``noise_sd > 0`` candidates are compared by
``sqrt(S_L + S_R) + noise_sd * N(0, 1)``, a fresh normal per candidate, where
``S = G^2 / (H + lambda)``. Without noise this order is the gain's order (the
square root is monotone and ``S_L + S_R = S_parent + 2 gain``); with
``lambda = 0`` the square root is CatBoost's default ``Cosine`` score, the
scale its noise is defined on. The noise only ranks valid candidates: a
split that does not gain more than ``min_gain`` is never chosen (with
``lambda > 0`` a gain can be negative), so the noise cannot end a node that
has a useful split. The gain reported is the chosen candidate's true gain.
"""

import numba
import numpy as np
from numba import njit

from ..._random import normal

MISSING_BIN = 255

#: A hessian sum at or below this share of the tree's is rounding, not rows (module docstring).
EMPTY_HESSIAN = 1e-11


@njit(cache=True, inline="always")
def _score(g, h, reg_lambda):
    d = h + reg_lambda
    if d <= 0.0:
        return 0.0
    return g * g / d


@njit(cache=True, inline="always")
def noisy_score(gain, parent, noise_sd, noise_key, index):
    """The criterion a candidate of gain ``gain`` is chosen by (module docstring)."""
    if noise_sd == 0.0:
        return gain
    return np.sqrt(max(parent + 2.0 * gain, 0.0)) + noise_sd * normal(noise_key, index)


@njit(cache=True)
def best_split_one(h, nb, G, H, reg_lambda, min_child_weight, tiny, min_gain, noise_sd, noise_key, noise_index):
    """Best split of one node on one feature from its histogram ``h``.

    Returns ``(score, gain, bin, missing_left, G_left, H_left)``; ``score``
    and ``gain`` are ``-inf`` when the feature has no valid split. ``score``
    is what candidates are compared by, the gain itself unless ``noise_sd >
    0``; candidate ``(t, ml)`` then draws the normal of counter
    ``noise_index + 2 t + ml`` under ``noise_key``.
    """
    parent = _score(G, H, reg_lambda)
    mg = h[MISSING_BIN, 0]
    mh = h[MISSING_BIN, 1]
    has_missing = mh > tiny
    best = -np.inf
    best_gain = -np.inf
    best_b = 0
    best_ml = 0
    best_lg = 0.0
    best_lh = 0.0
    cg = 0.0
    ch = 0.0
    # t = nb - 1 (all non-missing left) is a split only when values are missing.
    last = nb - 1 if has_missing else nb - 2
    for t in range(last + 1):
        cg += h[t, 0]
        ch += h[t, 1]
        for ml in range(2):
            if ml == 1 and not has_missing:
                break
            lg = cg + mg * ml
            lh = ch + mh * ml
            rg = G - lg
            rh = H - lh
            if lh < min_child_weight or rh < min_child_weight or lh <= tiny or rh <= tiny:
                continue
            gain = 0.5 * (_score(lg, lh, reg_lambda) + _score(rg, rh, reg_lambda) - parent)
            if not gain > min_gain:
                continue
            score = noisy_score(gain, parent, noise_sd, noise_key, noise_index + 2 * t + ml)
            if score > best:
                best = score
                best_gain = gain
                best_b = t
                best_ml = ml
                best_lg = lg
                best_lh = lh
    if not has_missing and best > -np.inf:
        # No missing value seen here: send future ones to the heavier child
        # (with the missing bin's sums, rows of hessian 0 or rounding, on its side).
        best_ml = 1 if best_lh >= H - best_lh else 0
        best_lg += mg * best_ml
        best_lh += mh * best_ml
    return best, best_gain, best_b, best_ml, best_lg, best_lh


@njit(cache=True, parallel=True)
def best_oblivious_split(hist, feats, n_bins, node_slot, node_g, node_h, reg_lambda, min_child_weight, tiny,
                         min_gain, noise_sd, noise_key, noise_base, gain, best_score, best_at):
    """The best split shared by every node of a level (oblivious trees): ``(j, t, ml)``, or ``j = -1``.

    A candidate ``(feats[j], t, ml)`` (bins ``<= t`` left, missing values
    left iff ``ml``) gains the sum over the level's nodes of each node's gain;
    a node whose children would violate ``min_child_weight`` or be empty adds 0
    (it is still split, as in CatBoost's symmetric trees). A candidate no node
    can use is not one, nor is ``ml = 1`` when no node of the level has a
    missing value of the feature (missing values seen later go right, as
    without split noise, where the two candidates tie and the first wins).
    Candidates gaining at most ``min_gain`` are never chosen, so the noise
    cannot end a tree early; the others are compared by :func:`noisy_score`
    with the level's summed parent score and counter ``noise_base + 512
    feats[j] + 2 t + ml``. The first maximum wins (lowest feature, then bin,
    then missing right), as ``numpy.argmax`` over the candidates in that
    order would pick it (a NaN score first).

    Scratch, written per feature so that nothing is shared between threads:
    ``gain`` (n_feats, 256, 2) the summed gains, ``best_score`` (n_feats,),
    ``best_at`` (n_feats, 2) each feature's best ``(t, ml)``.
    """
    n_nodes = node_slot.shape[0]
    n_feats = feats.shape[0]
    parent_sum = 0.0
    for k in range(n_nodes):
        parent_sum += _score(node_g[k], node_h[k], reg_lambda)
    for j in numba.prange(n_feats):
        nb = n_bins[feats[j]]
        o = gain[j]
        for t in range(nb):
            o[t, 0] = -np.inf
            o[t, 1] = -np.inf
        # Without a missing value at this level both sides of the missing rule
        # split alike: only "missing right" is scored (half the work).
        n_sides = 1
        for k in range(n_nodes):
            if hist[node_slot[k], j][MISSING_BIN, 1] > tiny:
                n_sides = 2
        for k in range(n_nodes):
            h = hist[node_slot[k], j]
            G = node_g[k]
            H = node_h[k]
            parent = _score(G, H, reg_lambda)
            mg = h[MISSING_BIN, 0]
            mh = h[MISSING_BIN, 1]
            cg = 0.0
            ch = 0.0
            for t in range(nb):
                cg += h[t, 0]
                ch += h[t, 1]
                for ml in range(n_sides):
                    lg = cg + mg * ml
                    lh = ch + mh * ml
                    rg = G - lg
                    rh = H - lh
                    if lh >= min_child_weight and rh >= min_child_weight and lh > tiny and rh > tiny:
                        g = 0.5 * (_score(lg, lh, reg_lambda) + _score(rg, rh, reg_lambda) - parent)
                        if o[t, ml] == -np.inf:
                            o[t, ml] = 0.0
                        o[t, ml] += g
        best = -np.inf
        best_t = 0
        best_ml = 0
        found_nan = False
        base = noise_base + 512 * feats[j]
        for t in range(nb):
            for ml in range(n_sides):
                g = o[t, ml]
                if not g > min_gain:
                    continue
                s = noisy_score(g, parent_sum, noise_sd, noise_key, base + 2 * t + ml)
                if s != s:
                    if not found_nan:
                        found_nan = True
                        best = s
                        best_t = t
                        best_ml = ml
                elif not found_nan and s > best:
                    best = s
                    best_t = t
                    best_ml = ml
        best_score[j] = best
        best_at[j, 0] = best_t
        best_at[j, 1] = best_ml
    # Across features in order, first maximum (NaN first), as within one.
    jb = -1
    best = -np.inf
    for j in range(n_feats):
        s = best_score[j]
        if s != s:
            jb = j
            break
        if s > best:
            best = s
            jb = j
    if jb < 0:
        return -1, 0, 0
    return jb, best_at[jb, 0], best_at[jb, 1]


@njit(cache=True)
def oblivious_node_gains(left_g, left_h, node_g, node_h, reg_lambda, min_child_weight, tiny, out):
    """``out[k]``: node ``k``'s own gain from the level's chosen split (left
    sums ``left_g``, ``left_h``), 0 where a child would break
    ``min_child_weight`` or be empty, as in :func:`best_oblivious_split`."""
    for k in range(node_g.shape[0]):
        lh = left_h[k]
        rh = node_h[k] - lh
        out[k] = 0.0
        if lh >= min_child_weight and rh >= min_child_weight and lh > tiny and rh > tiny:
            out[k] = 0.5 * (_score(left_g[k], lh, reg_lambda) + _score(node_g[k] - left_g[k], rh, reg_lambda)
                            - _score(node_g[k], node_h[k], reg_lambda))
