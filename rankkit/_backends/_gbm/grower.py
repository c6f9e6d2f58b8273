"""Growing one tree from gradients and hessians, level by level.

Rows of the (subsampled) training set live in one int32 array that is
partitioned in place at every split, so each node owns a contiguous segment
(as in LightGBM and pygbm); the bins, in groups of 8 features
(:func:`group_features`), move with their rows (:func:`partition_grouped`), so
a node's bins are contiguous too and histograms stream them forwards at every
depth. Memory: the binned matrix once (1 byte per value, also what training
predicts from), one working copy ordered by position, partitioned in place,
and a scratch row per worker thread. One level costs a handful of kernel calls,
whatever the number of nodes: gather gradients in row order, build the
histograms of the smaller children, subtract for their siblings, find the
best splits, partition.

Two policies:

* ``"depthwise"`` (XGBoost's default): every node of a level picks its own
  split; a node stops when no split gains more than ``min_split_gain``.
* ``"oblivious"`` (CatBoost's symmetric trees, Prokhorenkova et al. 2018):
  all nodes of a level share one split, the one with the largest summed gain;
  the tree is a full binary tree of depth ``<= max_depth`` (empty leaves get 0).

Leaf value: the Newton step ``-G / (H + lambda)`` (Chen & Guestrin 2016,
eq. 5); with ``hess = 1`` this is the gradient step ``-G / (n + lambda)``.
"""

import numba
import numpy as np
from numba import njit

from .binning import MISSING_BIN
from .histogram import N_BINS, subtract_one
from .splitting import best_split_one, find_oblivious_split, oblivious_scores
from .tree import empty_nodes


#: Features handled by one task (rows, gradients of a tile are read once per group).
FEATURE_GROUP = 8


def group_features(X_binned):
    """The bins in feature-group-major layout: ``Xg[f // 8, r, f % 8] = X_binned[r, f]``.

    Shape ``(ceil(F / 8), n, 8)`` (uint8, C order; padding lanes are 0). A task
    of :func:`level_histograms` reads the 8 codes of one row for its feature
    group from one cache line, for the root (a forward stream) and for deep
    nodes (rows scattered over the matrix) alike.
    """
    n, F = X_binned.shape
    G = (F + FEATURE_GROUP - 1) // FEATURE_GROUP
    out = np.zeros((G, n, FEATURE_GROUP), dtype=np.uint8)
    for g in range(G):
        a = g * FEATURE_GROUP
        b = min(F, a + FEATURE_GROUP)
        out[g, :, : b - a] = X_binned[:, a:b]
    return out


@njit(cache=True, parallel=True)
def level_histograms(X_pos, rows, grad, hess, gh, feats, n_bins,
                     build_start, build_end, build_slot, sib_slot, parent_slot, parent_hist, hist,
                     node_g, node_h, reg_lambda, min_child_weight, find_splits,
                     noise_sd, noise_key, node_ids, n_features,
                     out_score, out_gain, out_bin, out_missing_left, out_left_g, out_left_h):
    """One level in one call: ordered gradients, histograms, sibling subtraction, best splits.

    ``X_pos`` holds the bins in :func:`group_features` layout *by position*:
    ``X_pos[g, i]`` are the codes of row ``rows[i]`` (see :func:`partition_grouped`,
    which keeps it so), so every node reads its segment forwards. First the gradients
    and hessians of the rows to build from are gathered once into ``gh``
    (``gh[i] = (grad[rows[i]], hess[rows[i]])``, row order), so the histogram
    tasks read them sequentially. Task ``(k, group)`` then builds
    ``hist[build_slot[k], j]`` for the features ``feats[j]`` of one group of
    :data:`FEATURE_GROUP` from the rows ``rows[build_start[k]:build_end[k]]``
    (row by row: a row's codes for the group share one cache line), derives
    the sibling ``hist[sib_slot[k], j] = parent_hist[parent_slot[k], j] -
    built`` (skipped when ``sib_slot[k] < 0``, e.g. at the root), and, when
    ``find_splits``, writes the best split of both nodes on each feature into
    ``out_*[slot, j]`` (``node_g``/``node_h`` are indexed by slot; with
    ``noise_sd > 0`` tree node ``node_ids[slot]`` draws the split noise of
    feature ``f``'s candidates from counters ``512 (node n_features + f) + 2 t + ml``). Every
    histogram is summed in row order by one task, whatever the thread count.
    """
    n_pairs = build_start.shape[0]
    n_feats = feats.shape[0]
    n_groups = (n_feats + FEATURE_GROUP - 1) // FEATURE_GROUP
    for k in numba.prange(n_pairs):
        for i in range(build_start[k], build_end[k]):
            r = rows[i]
            gh[i, 0] = grad[r]
            gh[i, 1] = hess[r]
    for task in numba.prange(n_pairs * n_groups):
        k = task // n_groups
        j0 = (task - k * n_groups) * FEATURE_GROUP
        j1 = min(n_feats, j0 + FEATURE_GROUP)
        s = build_slot[k]
        o = sib_slot[k]
        a = build_start[k]
        b = build_end[k]
        # The group's histograms as one flat array: feature j's bin v at 2 * (256 j + v).
        hs = hist[s, j0:j1].reshape(-1)
        hs[:] = 0.0
        f0 = feats[j0]
        g0 = f0 // FEATURE_GROUP
        if j1 - j0 == FEATURE_GROUP and f0 == g0 * FEATURE_GROUP and feats[j1 - 1] == f0 + FEATURE_GROUP - 1:
            # Fast path (no column sampling): the group is one storage group, lanes 0..7.
            Xr = X_pos[g0]
            for i in range(a, b):
                g = gh[i, 0]
                h = gh[i, 1]
                for lane in range(FEATURE_GROUP):
                    q = lane * (2 * N_BINS) + 2 * np.int64(Xr[i, lane])
                    hs[q] += g
                    hs[q + 1] += h
        else:
            for i in range(a, b):
                g = gh[i, 0]
                h = gh[i, 1]
                for j in range(j0, j1):
                    f = feats[j]
                    q = (j - j0) * (2 * N_BINS) + 2 * np.int64(X_pos[f // FEATURE_GROUP, i, f % FEATURE_GROUP])
                    hs[q] += g
                    hs[q + 1] += h
        for j in range(j0, j1):
            f = feats[j]
            if o >= 0:
                subtract_one(parent_hist[parent_slot[k], j], hist[s, j], hist[o, j])
            if find_splits:
                for w in range(2):
                    c = s if w == 0 else o
                    if c < 0:
                        continue
                    score, gain, bb, ml, lg, lh = best_split_one(
                        hist[c, j], n_bins[f], node_g[c], node_h[c], reg_lambda, min_child_weight, noise_sd,
                        noise_key, 512 * (node_ids[c] * n_features + f))
                    out_score[c, j] = score
                    out_gain[c, j] = gain
                    out_bin[c, j] = bb
                    out_missing_left[c, j] = ml
                    out_left_g[c, j] = lg
                    out_left_h[c, j] = lh


@njit(cache=True, parallel=True)
def partition_grouped(X_pos, src64, dst64, rows, tmp, go, starts, ends, features, bin_thresholds, missing_left,
                      out_n_left, move_data, scratch):
    """Stable partition of each node's segment, rows *and* position-ordered bins.

    ``X_pos`` (uint8, ``(G, n, 8)``) and ``src64`` (its ``uint64`` view,
    ``(G, n)``) hold the bins by position (``X_pos[g, i]`` belongs to row
    ``rows[i]``). Node ``k`` splits ``rows[starts[k]:ends[k]]`` on
    ``features[k]`` (read sequentially from ``X_pos``); its left rows come first,
    both sides keep their order, ``out_n_left[k]`` counts the left ones. When
    ``move_data``, the 8-byte codes of each group move with their rows into
    ``dst64``, so the children's segments are again contiguous, forward reads
    for :func:`level_histograms`. ``dst64`` may be ``src64`` itself (in place:
    left codes are compacted forwards, right ones wait in a row of ``scratch``,
    ``uint64 (K, n)``, one row per parallel chunk of tasks). ``go`` (uint8,
    ``n``) and ``tmp`` (int32, ``n``) are scratch. Pure data movement: the
    same for any thread count and any ``K``.
    """
    m = starts.shape[0]
    for k in numba.prange(m):
        a = starts[k]
        b = ends[k]
        f = features[k]
        col = X_pos[f // FEATURE_GROUP]
        lane = f % FEATURE_GROUP
        t = bin_thresholds[k]
        ml = missing_left[k] != 0
        nl = 0
        for i in range(a, b):
            v = col[i, lane]
            left = ml if v == MISSING_BIN else v <= t
            if left:
                go[i] = 1
                nl += 1
            else:
                go[i] = 0
        out_n_left[k] = nl
    G = src64.shape[0] if move_data else 0
    in_place = G > 0 and src64.ctypes.data == dst64.ctypes.data
    n_tasks = m * (G + 1)
    n_chunks = min(scratch.shape[0], n_tasks)
    # Chunk c takes tasks c, c + n_chunks, ... and owns scratch[c].
    for c in numba.prange(n_chunks):
        buf = scratch[c]
        for task in range(c, n_tasks, n_chunks):
            k = task // (G + 1)
            g = task - k * (G + 1)
            a = starts[k]
            b = ends[k]
            p = a
            q = a + out_n_left[k]
            # Branch-free (the side of a row is unpredictable): a row goes to p or q.
            if g == G:
                for i in range(a, b):
                    gi = np.int64(go[i])
                    tmp[q + (p - q) * gi] = rows[i]
                    p += gi
                    q += 1 - gi
                for i in range(a, b):
                    rows[i] = tmp[i]
            elif in_place:
                # p <= i: writing s[p] never clobbers a code still to be read;
                # a right code written there is overwritten later.
                s = src64[g]
                r = 0
                for i in range(a, b):
                    v = s[i]
                    gi = np.int64(go[i])
                    s[p] = v
                    buf[r] = v
                    p += gi
                    r += 1 - gi
                for i in range(r):
                    s[p + i] = buf[i]
            else:
                s = src64[g]
                d = dst64[g]
                for i in range(a, b):
                    gi = np.int64(go[i])
                    d[q + (p - q) * gi] = s[i]
                    p += gi
                    q += 1 - gi


@njit(cache=True)
def sum_segment(rows, grad, hess):
    """Sequential sums (fixed order) of the root's gradients and hessians."""
    g = 0.0
    h = 0.0
    for i in range(rows.shape[0]):
        g += grad[rows[i]]
        h += hess[rows[i]]
    return g, h


class TreeGrower:
    """Reusable buffers plus :meth:`grow`; one per training run.

    Parameters
    ----------
    X_grouped : uint8 ndarray, the bins in :func:`group_features` layout
        (kept as given: training predicts from it)
    n_bins : int64 ndarray (n_features,), non-missing bins per feature
    edges, edges_ptr : bin edges (see :func:`.binning.fit_bin_edges`)
    max_depth, min_child_weight, reg_lambda, min_split_gain, grow_policy
        See :class:`rankkit._backends.numba.NumbaBackend`.
    """

    def __init__(self, X_grouped, n_bins, edges, edges_ptr, *, max_depth, min_child_weight,
                 reg_lambda, min_split_gain=0.0, grow_policy="depthwise"):
        self.n_bins = n_bins
        self.edges = edges
        self.edges_ptr = edges_ptr
        self.max_depth = int(max_depth)
        self.min_child_weight = float(min_child_weight)
        self.reg_lambda = float(reg_lambda)
        self.min_split_gain = float(min_split_gain)
        self.grow_policy = grow_policy
        n = X_grouped.shape[1]
        self.X_grouped = X_grouped
        self._tmp = np.empty(n, dtype=np.int32)
        self._gh = np.empty((n, 2))
        self._go = np.empty(n, dtype=np.uint8)
        # Position-ordered bins, partitioned in place (see partition_grouped).
        self._pos = np.empty_like(X_grouped)
        self._scratch = np.empty((0, n), dtype=np.uint64)
        self._hist = [np.empty((0, 0, N_BINS, 2)), np.empty((0, 0, N_BINS, 2))]

    def _buffer(self, which, n_slots, n_feats):
        buf = self._hist[which]
        if buf.shape[0] < n_slots or buf.shape[1] < n_feats:
            buf = np.empty((max(n_slots, buf.shape[0]), max(n_feats, buf.shape[1]), N_BINS, 2))
            self._hist[which] = buf
        return buf

    def _threshold(self, f, t):
        a, b = self.edges_ptr[f], self.edges_ptr[f + 1]
        return self.edges[a + t] if t < b - a else np.inf

    def _level(self, X_pos, grad, hess, rows, feats, build_start, build_end, build_slot, sib_slot,
               parent_slot, parent_hist, hist, n_slots, node_g, node_h, node_ids, find_splits, noise):
        nf = feats.shape[0]
        outs = (np.full((n_slots, nf), -np.inf), np.full((n_slots, nf), -np.inf), np.zeros((n_slots, nf), np.uint8),
                np.zeros((n_slots, nf), np.uint8), np.zeros((n_slots, nf)), np.zeros((n_slots, nf)))
        level_histograms(X_pos, rows, grad, hess, self._gh, feats, self.n_bins, build_start, build_end,
                         build_slot, sib_slot, parent_slot, parent_hist, hist, node_g, node_h,
                         self.reg_lambda, self.min_child_weight, find_splits, *noise, node_ids,
                         self.n_bins.shape[0], *outs)
        return outs

    def grow(self, grad, hess, rows, feats, noise_sd=0.0, noise_key=0):
        """Grow one tree.

        Parameters
        ----------
        grad, hess : float64 ndarrays (n_samples,)
        rows : int32 ndarray, increasing row indices used (subsample); reordered in place
        feats : int64 ndarray, sorted features allowed (column subsample)
        noise_sd, noise_key : random split strength of this tree (see
            :mod:`.splitting`): the standard deviation of the noise added to
            each candidate's score (0: none) and the key of its draws

        Returns
        -------
        nodes : ndarray of :data:`.tree.NODE_DTYPE`, leaf values ``-G/(H+lambda)``
        """
        lam = self.reg_lambda
        n_feats = feats.shape[0]
        oblivious = self.grow_policy == "oblivious"
        nodes = empty_nodes(2 ** (self.max_depth + 1) - 1)
        n_nodes = 1
        G, H = sum_segment(rows, grad, hess)
        # Level state: tree node id, row segment, histogram slot, sums (indexed by slot for the kernels).
        ids = np.array([0], dtype=np.int64)
        starts = np.array([0], dtype=np.int64)
        ends = np.array([rows.shape[0]], dtype=np.int64)
        gs = np.array([G])
        hs = np.array([H])
        slots = np.array([0], dtype=np.int64)
        cur = self._buffer(0, 1, n_feats)
        n_all = self.X_grouped.shape[1]
        # At most 8 chunks of partition tasks (it is bound by memory bandwidth), one scratch row each.
        n_chunks = min(numba.get_num_threads(), 8)
        if self._scratch.shape[0] < n_chunks:
            self._scratch = np.empty((n_chunks, n_all), dtype=np.uint64)
        if rows.shape[0] == n_all:  # increasing and all rows: positions are rows
            pos = self.X_grouped  # read only; the first partition writes into self._pos
        else:
            pos = self._pos
            src, dst = self.X_grouped.view(np.uint64)[:, :, 0], pos.view(np.uint64)[:, :, 0]
            for g in range(pos.shape[0]):
                dst[g, : rows.shape[0]] = src[g, rows]
        noise = (float(noise_sd), np.uint64(noise_key))
        outs = self._level(pos, grad, hess, rows, feats, starts, ends, slots, np.array([-1], dtype=np.int64),
                           slots, cur, cur, 1, gs, hs, ids, not oblivious, noise)
        which = 0

        def close(ids_, gs_, hs_, starts_, ends_):
            for k in range(ids_.shape[0]):
                nd = ids_[k]
                nodes["count"][nd] = ends_[k] - starts_[k]
                nodes["sum_hessian"][nd] = hs_[k]
                d = hs_[k] + lam
                nodes["value"][nd] = -gs_[k] / d if d > 0 else 0.0

        for depth in range(self.max_depth):
            m = ids.shape[0]
            if oblivious:
                og = np.empty((n_feats, N_BINS, 2))
                find_oblivious_split(cur, feats, self.n_bins, slots, gs, hs, lam, self.min_child_weight, og)
                score = og
                if noise_sd > 0.0:
                    score = np.empty_like(og)
                    oblivious_scores(og, feats, gs, hs, lam, *noise, 512 * depth * self.n_bins.shape[0], score)
                flat = int(np.argmax(score))  # first maximum: lowest feature, then bin, then missing-right
                best = og.ravel()[flat]
                if not (np.isfinite(best) and best > self.min_split_gain):
                    break
                j, t, ml = np.unravel_index(flat, og.shape)
                split_mask = np.ones(m, dtype=bool)
                sf = np.full(m, feats[j], dtype=np.int64)
                sb = np.full(m, t, dtype=np.uint8)
                sml = np.full(m, ml, dtype=np.uint8)
                # Each node's left sums, read from its histogram.
                lg = np.empty(m)
                lh = np.empty(m)
                for k in range(m):
                    h = cur[slots[k], j]
                    lg[k] = h[: t + 1, 0].sum() + ml * h[MISSING_BIN, 0]
                    lh[k] = h[: t + 1, 1].sum() + ml * h[MISSING_BIN, 1]
                sgain = np.full(m, best / m)
            else:
                score, gain, bins, mls, lgs, lhs = (o[slots] for o in outs)
                jbest = np.argmax(score, axis=1)  # first maximum: lowest feature
                r = np.arange(m)
                sgain = gain[r, jbest]
                split_mask = np.isfinite(sgain) & (sgain > self.min_split_gain)
                sf = feats[jbest]
                sb = bins[r, jbest]
                sml = mls[r, jbest]
                lg = lgs[r, jbest]
                lh = lhs[r, jbest]
            if not split_mask.all():
                keep = ~split_mask
                close(ids[keep], gs[keep], hs[keep], starts[keep], ends[keep])
                if not split_mask.any():
                    ids = ids[:0]
                    break
                ids, starts, ends, gs, hs, slots = (a[split_mask] for a in (ids, starts, ends, gs, hs, slots))
                sf, sb, sml, lg, lh, sgain = (a[split_mask] for a in (sf, sb, sml, lg, lh, sgain))
            m = ids.shape[0]
            n_left = np.empty(m, dtype=np.int64)
            move = depth + 1 < self.max_depth
            partition_grouped(pos, pos.view(np.uint64)[:, :, 0], self._pos.view(np.uint64)[:, :, 0], rows,
                              self._tmp, self._go, starts, ends, sf, sb, sml, n_left, move, self._scratch)
            if move:
                pos = self._pos
            child_ids = np.arange(n_nodes, n_nodes + 2 * m, dtype=np.int64)
            for k in range(m):
                nd = ids[k]
                f = int(sf[k])
                nodes["feature"][nd] = f
                nodes["bin_threshold"][nd] = sb[k]
                nodes["threshold"][nd] = self._threshold(f, int(sb[k]))
                nodes["missing_left"][nd] = sml[k]
                nodes["gain"][nd] = sgain[k]
                nodes["count"][nd] = ends[k] - starts[k]
                nodes["sum_hessian"][nd] = hs[k]
                nodes["left"][nd] = n_nodes + 2 * k
                nodes["right"][nd] = n_nodes + 2 * k + 1
                nodes["depth"][n_nodes + 2 * k: n_nodes + 2 * k + 2] = depth + 1
            n_nodes += 2 * m
            mid = starts + n_left
            c_starts = np.empty(2 * m, dtype=np.int64)
            c_ends = np.empty(2 * m, dtype=np.int64)
            c_starts[0::2], c_starts[1::2] = starts, mid
            c_ends[0::2], c_ends[1::2] = mid, ends
            c_g = np.empty(2 * m)
            c_h = np.empty(2 * m)
            c_g[0::2], c_g[1::2] = lg, gs - lg
            c_h[0::2], c_h[1::2] = lh, hs - lh
            parent_slots = slots
            ids, starts, ends, gs, hs = child_ids, c_starts, c_ends, c_g, c_h
            slots = np.arange(2 * m, dtype=np.int64)
            if depth + 1 == self.max_depth:
                break
            # Next level: build the child with fewer rows, subtract for its sibling.
            nxt = self._buffer(1 - which, 2 * m, n_feats)
            left_smaller = n_left <= (ends[1::2] - starts[1::2])
            built = np.where(left_smaller, 0, 1) + 2 * np.arange(m)
            sib = np.where(left_smaller, 1, 0) + 2 * np.arange(m)
            outs = self._level(pos, grad, hess, rows, feats, starts[built], ends[built], built, sib,
                               parent_slots, cur, nxt, 2 * m, gs, hs, ids, not oblivious, noise)
            cur = nxt
            which = 1 - which
        if ids.shape[0]:
            close(ids, gs, hs, starts, ends)
        return nodes[:n_nodes].copy()
