"""Growing one tree from gradients and hessians, level by level.

The grower owns the training set's binned matrix (one copy, in groups of 8
features, :func:`.binning.transform`: ``Xg[f // 8, i, f % 8]``, so a task of
:func:`level_histograms` reads the 8 codes of one row for its feature group
from 8 bytes, at the root and at deep nodes alike) and keeps it *ordered by position*: a
permutation ``rows`` says which training row sits at each position. Every
split partitions its node's segment in place, moving the rows' bins and their
gradients and hessians with them (as in LightGBM and pygbm, but with the data,
not only row indices), so each node owns a contiguous segment and histograms
stream it forwards at every depth. The next tree starts from the order the
last one left: no copy is restored, and no second matrix is kept. Memory: the
binned matrix once (1 byte per value), the gradients and hessians by position
(16 bytes per row), the permutation and a list of positions to swap (4 bytes per row). One
level costs a handful of kernel calls, whatever the number of nodes: build the
histograms of the smaller children, subtract for their siblings, find the
best splits, partition (not after the last level: there a flag per position
says which of its node's two leaves it reached).

Two policies:

* ``"depthwise"`` (XGBoost's default): every node of a level picks its own
  split; a node stops when no split gains more than ``min_split_gain / 2``
  (XGBoost's ``gamma``, which bounds twice the gain).
* ``"oblivious"`` (CatBoost's symmetric trees, Prokhorenkova et al. 2018):
  all nodes of a level share one split, the one with the largest summed gain;
  the tree is a full binary tree of depth ``<= max_depth`` (empty leaves get 0).

Leaf value: the Newton step ``-G / (H + lambda)`` (Chen & Guestrin 2016,
eq. 5); with ``hess = 1`` this is the gradient step ``-G / (n + lambda)``.
The hessians that score the splits may be other than the leaves' (``leaf_hess``
of :meth:`TreeGrower.grow`): CatBoost's first-order scores weigh rows by their
weights, and its Newton leaves by their hessians.

Determinism: every histogram is summed in position order by one task, and
positions depend only on the trees grown so far, never on the thread count.
"""

import os

import numba
import numpy as np
from numba import njit

from .binning import MISSING_BIN
from .histogram import N_BINS, clear_used, subtract_one
from .splitting import EMPTY_HESSIAN, best_oblivious_split, best_split_one, oblivious_node_gains
from .tree import empty_nodes


#: Features handled by one task (rows, gradients of a tile are read once per group).
FEATURE_GROUP = 8


def _physical_memory():
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not on this platform: no bound
        return float("inf")


#: Most bytes the two levels of histograms may take: half of this machine's memory.
HISTOGRAM_BYTES_LIMIT = _physical_memory() / 2


@njit(cache=True, parallel=True)
def level_histograms(X_pos, gh, feats, n_bins,
                     build_start, build_end, build_slot, sib_slot, parent_slot, parent_hist, hist,
                     node_g, node_h, reg_lambda, min_child_weight, tiny, min_gain, find_splits,
                     noise_sd, noise_key, node_ids, n_features,
                     out_score, out_gain, out_bin, out_missing_left, out_left_g, out_left_h):
    """One level in one call: histograms, sibling subtraction, best splits.

    ``X_pos`` holds the bins in :func:`.binning.transform`'s layout by position and
    ``gh`` (2, n) the gradients and hessians by position (``gh[:, i]`` belong
    to the row whose codes are ``X_pos[:, i]``; :func:`partition_segments`
    keeps them so), so every node reads its segment forwards. Task
    ``(k, group)`` builds ``hist[build_slot[k], j]`` for the features
    ``feats[j]`` of one group of :data:`FEATURE_GROUP` from the positions
    ``build_start[k]:build_end[k]`` (a position's codes for the group share
    one cache line), derives
    the sibling ``hist[sib_slot[k], j] = parent_hist[parent_slot[k], j] -
    built`` (skipped when ``sib_slot[k] < 0``, e.g. at the root), and, when
    ``find_splits``, writes the best split of both nodes on each feature into
    ``out_*[slot, j]`` (``node_g``/``node_h`` are indexed by slot; with
    ``noise_sd > 0`` tree node ``node_ids[slot]`` draws the split noise of
    feature ``f``'s candidates from counters ``512 (node n_features + f) + 2 t + ml``). Only the
    bins a feature can hold are zeroed, summed and subtracted (:mod:`.histogram`). Every
    histogram is summed in position order by one task, whatever the thread count.
    """
    n_pairs = build_start.shape[0]
    n_feats = feats.shape[0]
    n_groups = (n_feats + FEATURE_GROUP - 1) // FEATURE_GROUP
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
        for j in range(j0, j1):
            clear_used(hist[s, j], n_bins[feats[j]])
        f0 = feats[j0]
        g0 = f0 // FEATURE_GROUP
        if j1 - j0 == FEATURE_GROUP and f0 == g0 * FEATURE_GROUP and feats[j1 - 1] == f0 + FEATURE_GROUP - 1:
            # Fast path (no column sampling): the group is one storage group, lanes 0..7.
            Xr = X_pos[g0]
            for i in range(a, b):
                g = gh[0, i]
                h = gh[1, i]
                for lane in range(FEATURE_GROUP):
                    q = lane * (2 * N_BINS) + 2 * np.int64(Xr[i, lane])
                    hs[q] += g
                    hs[q + 1] += h
        else:
            for i in range(a, b):
                g = gh[0, i]
                h = gh[1, i]
                for j in range(j0, j1):
                    f = feats[j]
                    q = (j - j0) * (2 * N_BINS) + 2 * np.int64(X_pos[f // FEATURE_GROUP, i, f % FEATURE_GROUP])
                    hs[q] += g
                    hs[q + 1] += h
        for j in range(j0, j1):
            f = feats[j]
            if o >= 0:
                subtract_one(parent_hist[parent_slot[k], j], hist[s, j], hist[o, j], n_bins[f])
            if find_splits:
                for w in range(2):
                    c = s if w == 0 else o
                    if c < 0:
                        continue
                    score, gain, bb, ml, lg, lh = best_split_one(
                        hist[c, j], n_bins[f], node_g[c], node_h[c], reg_lambda, min_child_weight, tiny,
                        min_gain, noise_sd, noise_key, 512 * (node_ids[c] * n_features + f))
                    out_score[c, j] = score
                    out_gain[c, j] = gain
                    out_bin[c, j] = bb
                    out_missing_left[c, j] = ml
                    out_left_g[c, j] = lg
                    out_left_h[c, j] = lh


@njit(cache=True, parallel=True)
def split_sides(X_pos, starts, ends, features, bin_thresholds, missing_left, go, out_n_left):
    """``go[i] = 1`` for the positions of node ``k``'s segment ``starts[k]:ends[k]``
    that its split ``(features[k], bin_thresholds[k], missing_left[k])`` sends
    left, else 0; ``out_n_left[k]`` counts them."""
    for k in numba.prange(starts.shape[0]):
        f = features[k]
        col = X_pos[f // FEATURE_GROUP]
        lane = f % FEATURE_GROUP
        t = bin_thresholds[k]
        ml = missing_left[k] != 0
        nl = 0
        for i in range(starts[k], ends[k]):
            v = col[i, lane]
            left = ml if v == MISSING_BIN else v <= t
            go[i] = 1 if left else 0
            nl += 1 if left else 0
        out_n_left[k] = nl


@njit(cache=True, parallel=True)
def misplaced_positions(go, starts, ends, n_left, where, n_misplaced):
    """The positions that :func:`partition_segments` swaps, once for all arrays.

    For segment ``k`` (``starts[k]:ends[k]``, its left part the first
    ``n_left[k]`` positions): ``where[a:a + m]`` the left part's positions
    with ``go = 0`` and ``where[mid:mid + m]`` the right part's with ``go = 1``
    (``a = starts[k]``, ``mid = a + n_left[k]``, ``m = n_misplaced[k]``: the
    two counts are equal). Branch-free: a position is written at the next slot
    either way, and only kept when it belongs.
    """
    for k in numba.prange(starts.shape[0]):
        a = starts[k]
        mid = a + n_left[k]
        p = a
        for i in range(a, mid):
            where[p] = i
            p += 1 - np.int64(go[i])
        n_misplaced[k] = p - a
        p = mid
        for i in range(mid, ends[k]):
            where[p] = i
            p += np.int64(go[i])


@njit(cache=True, parallel=True)
def partition_segments(X64, gh64, rows, where, starts, n_left, n_misplaced):
    """In-place partition of each segment: rows, bins, gradients.

    After it, segment ``k``'s first ``n_left[k]`` positions hold the rows its
    split sends left (``go = 1``) and the others the rest: the ``i``-th
    misplaced position of the left part swaps with the ``i``-th of the right
    part (:func:`misplaced_positions`), in every array alike. What moves: the
    bins (``X64``, the ``uint64`` view ``(G, n)`` of the grouped matrix: 8
    codes per move), the gradients and hessians (``gh64``, ``(2, n)``,
    float64 bits) and the row of each position (``rows``). Only misplaced
    positions are read and written (a stable partition writes every
    position and buffers one side), and the result depends on ``go`` alone:
    the same for any thread count. One task per (segment, array).
    """
    G = X64.shape[0]
    n_arrays = G + 3
    for task in numba.prange(starts.shape[0] * n_arrays):
        k = task // n_arrays
        g = task - k * n_arrays
        a = starts[k]
        mid = a + n_left[k]
        if g == G + 2:
            _swap_pairs(rows, where, a, mid, n_misplaced[k])
        else:
            _swap_pairs(X64[g] if g < G else gh64[g - G], where, a, mid, n_misplaced[k])


@njit(cache=True, inline="always")
def _swap_pairs(s, where, a, mid, m):
    """Swap ``s`` at ``where[a + t]`` and ``where[mid + t]`` for ``t < m``."""
    for t in range(m):
        i = where[a + t]
        j = where[mid + t]
        v = s[i]
        s[i] = s[j]
        s[j] = v


@njit(cache=True, parallel=True)
def gather_gradients(rows, grad, hess, gh):
    """``gh[:, i] = (grad[rows[i]], hess[rows[i]])``: the gradients by position."""
    for i in numba.prange(rows.shape[0]):
        r = rows[i]
        gh[0, i] = grad[r]
        gh[1, i] = hess[r]


@njit(cache=True, parallel=True)
def sampled_sides(rows, sampled, go):
    """``go[i] = sampled[rows[i]]``; returns how many positions are sampled."""
    n = rows.shape[0]
    for i in numba.prange(n):
        go[i] = 1 if sampled[rows[i]] else 0
    total = 0
    for i in range(n):
        total += go[i]
    return total


@njit(cache=True, parallel=True)
def scatter_leaf_values(rows, go, seg_start, seg_end, go_value, other_value, out):
    """``out[rows[i]] += go_value[k] if go[i] else other_value[k]`` for the
    positions ``i`` of segment ``k``."""
    for k in numba.prange(seg_start.shape[0]):
        a = go_value[k]
        b = other_value[k]
        for i in range(seg_start[k], seg_end[k]):
            out[rows[i]] += a if go[i] else b


@njit(cache=True, parallel=True)
def leaf_sums(rows, go, seg_start, seg_end, go_leaf, other_leaf, g_pos, hess, G, H):
    """``G[leaf] += g_pos[i]``, ``H[leaf] += hess[rows[i]]`` for the positions
    ``i`` of segment ``k``, whose leaf is ``go_leaf[k]`` if ``go[i]`` else
    ``other_leaf[k]``. Each leaf lies in one segment: one task per segment,
    summed in position order."""
    for k in numba.prange(seg_start.shape[0]):
        a = go_leaf[k]
        b = other_leaf[k]
        for i in range(seg_start[k], seg_end[k]):
            leaf = a if go[i] else b
            G[leaf] += g_pos[i]
            H[leaf] += hess[rows[i]]


@njit(cache=True)
def sum_segment(gh, end):
    """Sequential sums (position order) of the root's gradients and hessians,
    and the smallest positive hessian (inf if none)."""
    g = 0.0
    h = 0.0
    smallest = np.inf
    for i in range(end):
        g += gh[0, i]
        h += gh[1, i]
        if 0.0 < gh[1, i] < smallest:
            smallest = gh[1, i]
    return g, h, smallest


class TreeGrower:
    """The binned training matrix, by position, plus :meth:`grow`; one per training run.

    Parameters
    ----------
    X_grouped : uint8 ndarray, the bins in :func:`.binning.transform`'s layout. The
        grower takes it over and reorders it in place (``X_grouped[:, i]``
        belongs to row ``rows[i]``); read it only through :attr:`rows`.
    n_bins : int64 ndarray (n_features,), non-missing bins per feature
    edges, edges_ptr : bin edges (see :func:`.binning.fit_bin_edges`)
    max_depth, min_child_weight, reg_lambda, min_split_gain, grow_policy
        See :class:`rankkit._backends.numba.NumbaBackend`.

    Attributes
    ----------
    X : the binned matrix by position (the array passed in)
    rows : int32 ndarray, the training row at each position
    """

    def __init__(self, X_grouped, n_bins, edges, edges_ptr, *, max_depth, min_child_weight,
                 reg_lambda, min_split_gain=0.0, grow_policy="depthwise"):
        self.n_bins = n_bins
        self.edges = edges
        self.edges_ptr = edges_ptr
        self.max_depth = int(max_depth)
        self.min_child_weight = float(min_child_weight)
        self.reg_lambda = float(reg_lambda)
        # XGBoost's gamma bounds the loss change without the 1/2 of the gain
        # (module docstring of .splitting), so a split must gain more than half of it.
        self.min_gain = 0.5 * float(min_split_gain)
        self.grow_policy = grow_policy
        n = X_grouped.shape[1]
        self.X = X_grouped
        self.rows = np.arange(n, dtype=np.int32)
        self._where = np.empty(n, dtype=np.int32)
        self._gh = np.empty((2, n))
        self._go = np.empty(n, dtype=np.uint8)
        self._hist = [np.empty((0, 0, N_BINS, 2)), np.empty((0, 0, N_BINS, 2))]
        self.n_sampled = n
        self._segments = None
        self._tiny = 0.0  # what a hessian sum must exceed to hold a row (.splitting), set by grow
        self._split_scratch = None  # best_oblivious_split's, kept from tree to tree

    def _buffer(self, which, n_slots, n_feats):
        buf = self._hist[which]
        if buf.shape[0] < n_slots or buf.shape[1] < n_feats:
            shape = (max(n_slots, buf.shape[0]), max(n_feats, buf.shape[1]), N_BINS, 2)
            need = 8 * np.prod(shape, dtype=np.float64) + self._hist[1 - which].nbytes
            if need > HISTOGRAM_BYTES_LIMIT:
                # An oblivious level holds every node, empty ones too: 2 ** depth whatever the rows.
                other = (" or grow depth-wise trees (backend_params={'grow_policy': 'depthwise'}), whose levels "
                         "hold only the nodes they split" if self.grow_policy == "oblivious" else "")
                raise ValueError(
                    f"A tree reached {n_slots} nodes in one level: their histograms ({n_feats} features) would "
                    f"take about {need / 2**30:.1f} GiB, more than half of this machine's memory. Lower max_depth "
                    f"(6 to 10 is usual) or colsample_bytree{other}."
                )
            buf = np.empty(shape)
            self._hist[which] = buf
        return buf

    def _threshold(self, f, t):
        a, b = self.edges_ptr[f], self.edges_ptr[f + 1]
        return self.edges[a + t] if t < b - a else np.inf

    def _level(self, feats, build_start, build_end, build_slot, sib_slot,
               parent_slot, parent_hist, hist, n_slots, node_g, node_h, node_ids, find_splits, noise):
        nf = feats.shape[0]
        if not find_splits:  # oblivious levels: the kernel writes no per-node split
            n_slots = nf = 0
        outs = (np.full((n_slots, nf), -np.inf), np.full((n_slots, nf), -np.inf), np.zeros((n_slots, nf), np.uint8),
                np.zeros((n_slots, nf), np.uint8), np.zeros((n_slots, nf)), np.zeros((n_slots, nf)))
        level_histograms(self.X, self._gh, feats, self.n_bins, build_start, build_end,
                         build_slot, sib_slot, parent_slot, parent_hist, hist, node_g, node_h,
                         self.reg_lambda, self.min_child_weight, self._tiny, self.min_gain, find_splits, *noise,
                         node_ids,
                         self.n_bins.shape[0], *outs)
        return outs

    def _partition(self, starts, ends, n_left):
        n_misplaced = np.empty(starts.shape[0], dtype=np.int64)
        misplaced_positions(self._go, starts, ends, n_left, self._where, n_misplaced)
        partition_segments(self.X.view(np.uint64)[:, :, 0], self._gh.view(np.uint64), self.rows, self._where,
                           starts, n_left, n_misplaced)

    def _begin(self, grad, hess, sampled):
        """Gradients by position; the sampled rows (all if ``sampled`` is None) to the front."""
        gather_gradients(self.rows, grad, hess, self._gh)
        n = self.rows.shape[0]
        if sampled is None:
            self.n_sampled = n
            return
        n_left = np.array([sampled_sides(self.rows, sampled, self._go)], dtype=np.int64)
        self._partition(np.zeros(1, dtype=np.int64), np.array([n], dtype=np.int64), n_left)
        self.n_sampled = int(n_left[0])

    def grow(self, grad, hess, feats, noise_sd=0.0, noise_key=0, sampled=None, leaf_hess=None):
        """Grow one tree.

        Parameters
        ----------
        grad, hess : float64 ndarrays (n_samples,), by training row
        feats : int64 ndarray, sorted features allowed (column subsample)
        noise_sd, noise_key : random split strength of this tree (see
            :mod:`.splitting`): the standard deviation of the noise added to
            each candidate's score (0: none) and the key of its draws
        sampled : bool ndarray (n_samples,) or None, the rows that grow the
            tree (row subsample; at least one); None: all rows
        leaf_hess : float64 ndarray (n_samples,) or None, the hessians of the
            leaf values when ``hess`` only weighs the rows for the choice of
            the splits (``split_score="gradient"`` of the numba backend);
            None: ``hess``

        Returns
        -------
        nodes : ndarray of :data:`.tree.NODE_DTYPE`, leaf values ``-G/(H+lambda)``
        """
        lam = self.reg_lambda
        n_feats = feats.shape[0]
        oblivious = self.grow_policy == "oblivious"
        self._begin(grad, hess, sampled)
        nodes = empty_nodes(2 ** (self.max_depth + 1) - 1)
        n_nodes = 1
        G, H, smallest = sum_segment(self._gh, self.n_sampled)
        # Below every row's hessian, so that a real row is never taken for rounding.
        self._tiny = min(EMPTY_HESSIAN * max(H, 0.0), 0.5 * smallest)
        # Level state: tree node id, position segment, histogram slot, sums (indexed by slot for the kernels).
        ids = np.array([0], dtype=np.int64)
        starts = np.array([0], dtype=np.int64)
        ends = np.array([self.n_sampled], dtype=np.int64)
        gs = np.array([G])
        hs = np.array([H])
        slots = np.array([0], dtype=np.int64)
        cur = self._buffer(0, 1, n_feats)
        noise = (float(noise_sd), np.uint64(noise_key))
        outs = self._level(feats, starts, ends, slots, np.array([-1], dtype=np.int64),
                           slots, cur, cur, 1, gs, hs, ids, not oblivious, noise)
        which = 0
        # Where the leaves' rows sit: (leaf if go, leaf otherwise, start, end) per position
        # segment; the two leaves are one for a node closed as a leaf, a split's children
        # at the last level (whose rows are not moved: ``go`` tells them apart).
        segments = []

        def close(ids_, gs_, hs_, starts_, ends_, record=True):
            if record:
                segments.append((ids_, ids_, starts_, ends_))
            for k in range(ids_.shape[0]):
                nd = ids_[k]
                nodes["count"][nd] = ends_[k] - starts_[k]
                nodes["sum_hessian"][nd] = hs_[k]
                d = hs_[k] + lam
                nodes["value"][nd] = -gs_[k] / d if d > 0 else 0.0

        last = False
        for depth in range(self.max_depth):
            m = ids.shape[0]
            if oblivious:
                split = self._oblivious_split(cur, feats, slots, gs, hs, m, depth, noise)
            else:
                split = self._depthwise_splits(outs, slots, feats, m)
            if split is None:
                break
            split_mask, sf, sb, sml, lg, lh, sgain = split
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
            split_sides(self.X, starts, ends, sf, sb, sml, self._go, n_left)
            last = depth + 1 == self.max_depth
            if last:  # no histogram below: the rows stay, ``go`` tells the two leaves apart
                segments.append((np.arange(n_nodes, n_nodes + 2 * m, 2, dtype=np.int64),
                                 np.arange(n_nodes + 1, n_nodes + 2 * m, 2, dtype=np.int64), starts, ends))
            else:
                self._partition(starts, ends, n_left)
            self._record_splits(nodes, ids, starts, ends, hs, (sf, sb, sml, sgain), n_nodes, depth)
            child_ids = np.arange(n_nodes, n_nodes + 2 * m, dtype=np.int64)
            n_nodes += 2 * m
            parent_slots = slots
            ids = child_ids
            starts, ends, gs, hs = _children(starts, ends, n_left, gs, hs, lg, lh)
            slots = np.arange(2 * m, dtype=np.int64)
            if last:
                break
            # Next level: build the child with fewer rows, subtract for its sibling.
            nxt = self._buffer(1 - which, 2 * m, n_feats)
            left_smaller = n_left <= (ends[1::2] - starts[1::2])
            built = np.where(left_smaller, 0, 1) + 2 * np.arange(m)
            sib = np.where(left_smaller, 1, 0) + 2 * np.arange(m)
            outs = self._level(feats, starts[built], ends[built], built, sib,
                               parent_slots, cur, nxt, 2 * m, gs, hs, ids, not oblivious, noise)
            cur = nxt
            which = 1 - which
        if ids.shape[0]:
            close(ids, gs, hs, starts, ends, record=not last)
        self._segments = tuple(np.concatenate(a) for a in zip(*segments))
        if leaf_hess is not None:
            self._newton_leaves(nodes, n_nodes, leaf_hess)
        return nodes[:n_nodes].copy()

    def _newton_leaves(self, nodes, n_nodes, hess):
        """Leaf values ``-G / (H + lambda)`` and hessian sums from ``hess``, on the
        structure just grown (the sampled rows, as the histograms)."""
        go_leaf, other_leaf, starts, ends = self._segments
        G = np.zeros(n_nodes)
        H = np.zeros(n_nodes)
        leaf_sums(self.rows, self._go, starts, ends, go_leaf, other_leaf, self._gh[0], hess, G, H)
        leaves = np.concatenate((go_leaf, other_leaf))
        d = H[leaves] + self.reg_lambda
        nodes["value"][leaves] = np.where(d > 0, -G[leaves] / np.where(d > 0, d, 1.0), 0.0)
        nodes["sum_hessian"][leaves] = H[leaves]

    def _record_splits(self, nodes, ids, starts, ends, hs, split, n_nodes, depth):
        """Write the level's splits (``split``: features, bins, missing-left,
        gains) into ``nodes``; node ``ids[k]``'s children are ``n_nodes + 2k``
        and ``n_nodes + 2k + 1``."""
        sf, sb, sml, sgain = split
        for k in range(ids.shape[0]):
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

    def _oblivious_split(self, cur, feats, slots, gs, hs, m, depth, noise):
        """The level's shared split, or None when no candidate gains more than ``min_split_gain / 2``."""
        n_feats = feats.shape[0]
        if self._split_scratch is None or self._split_scratch[0].shape[0] < n_feats:
            self._split_scratch = (np.empty((n_feats, N_BINS, 2)), np.empty(n_feats), np.empty((n_feats, 2), np.int64))
        gain, best_score, best_at = (a[:n_feats] for a in self._split_scratch)
        j, t, ml = best_oblivious_split(cur, feats, self.n_bins, slots, gs, hs, self.reg_lambda, self.min_child_weight,
                                        self._tiny, self.min_gain, *noise, 512 * depth * self.n_bins.shape[0],
                                        gain, best_score, best_at)
        if j < 0:
            return None
        # Each node's left sums, read from its histogram, and its own gain (the
        # level's is their sum; a node that cannot use the split adds 0).
        lg = cur[slots, j, : t + 1, 0].sum(axis=1) + ml * cur[slots, j, MISSING_BIN, 0]
        lh = cur[slots, j, : t + 1, 1].sum(axis=1) + ml * cur[slots, j, MISSING_BIN, 1]
        node_gain = np.empty(m)
        oblivious_node_gains(lg, lh, gs, hs, self.reg_lambda, self.min_child_weight, self._tiny, node_gain)
        return (np.ones(m, dtype=bool), np.full(m, feats[j], dtype=np.int64), np.full(m, t, dtype=np.uint8),
                np.full(m, ml, dtype=np.uint8), lg, lh, node_gain)

    def _depthwise_splits(self, outs, slots, feats, m):
        """Each node's best split; the mask says which nodes split at all."""
        score, gain, bins, mls, lgs, lhs = (o[slots] for o in outs)
        jbest = np.argmax(score, axis=1)  # first maximum: lowest feature
        r = np.arange(m)
        sgain = gain[r, jbest]
        split_mask = np.isfinite(sgain) & (sgain > self.min_gain)
        return split_mask, feats[jbest], bins[r, jbest], mls[r, jbest], lgs[r, jbest], lhs[r, jbest], sgain

    def add_leaf_values(self, nodes, out):
        """``out[row] += value of its leaf`` for the sampled rows of the last tree grown
        (``nodes`` as returned, leaf values possibly rescaled): no tree walk."""
        go_leaf, other_leaf, starts, ends = self._segments
        scatter_leaf_values(self.rows, self._go, starts, ends, np.ascontiguousarray(nodes["value"][go_leaf]),
                            np.ascontiguousarray(nodes["value"][other_leaf]), out)


def _children(starts, ends, n_left, gs, hs, lg, lh):
    """Position segments and gradient/hessian sums of the children of a
    level's split nodes, left then right child of each node in turn."""
    m = starts.shape[0]
    mid = starts + n_left
    c_starts = np.empty(2 * m, dtype=np.int64)
    c_ends = np.empty(2 * m, dtype=np.int64)
    c_starts[0::2], c_starts[1::2] = starts, mid
    c_ends[0::2], c_ends[1::2] = mid, ends
    # A child of no row gets sums of exactly 0 and its sibling the parent's:
    # the histograms' sums can hold rounding leftovers (.splitting), which
    # would make an empty leaf's value -G / (H + lambda) anything at lambda 0.
    n_right = ends - starts - n_left
    if not (n_left.all() and n_right.all()):
        lg = np.where(n_left == 0, 0.0, np.where(n_right == 0, gs, lg))
        lh = np.where(n_left == 0, 0.0, np.where(n_right == 0, hs, lh))
    c_g = np.empty(2 * m)
    c_h = np.empty(2 * m)
    c_g[0::2], c_g[1::2] = lg, gs - lg
    c_h[0::2], c_h[1::2] = lh, hs - lh
    return c_starts, c_ends, c_g, c_h
