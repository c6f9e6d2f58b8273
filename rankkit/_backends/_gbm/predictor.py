"""Tree traversal: parallel over rows, one fixed summation order per row.

``predict_raw`` walks raw float features (NaN follows ``missing_left``);
``add_tree_binned`` walks uint8 bins (grouped by 8 features) and is what
training uses to update the raw scores of the eval sets after each tree
(``add_tree_positions`` the training rows a subsample left out). The two agree
because ``bin <= bin_threshold  <=>  x <= threshold`` (see :mod:`.binning`).
"""

import numba
import numpy as np
from numba import njit

from .tree import NODE_DTYPE

MISSING_BIN = 255


@njit(cache=True, inline="always")
def _binned_leaf(nodes, X_grouped, i):
    """The leaf that column ``i`` of the grouped bins reaches (feature ``f`` at
    ``X_grouped[f // 8, i, f % 8]``; the missing bin follows ``missing_left``)."""
    node = 0
    while nodes[node].left >= 0:
        nd = nodes[node]
        f = nd.feature
        v = X_grouped[f >> 3, i, f & 7]
        if v == MISSING_BIN:
            go_left = nd.missing_left != 0
        else:
            go_left = v <= nd.bin_threshold
        node = nd.left if go_left else nd.right
    return node


@njit(cache=True, parallel=True)
def add_tree_binned(nodes, X_grouped, mult, out):
    """``out[i] += mult * value(leaf of row i)`` for one tree on binned rows, in
    the grower's layout (:func:`.binning.transform`: feature ``f`` of row
    ``i`` at ``X_grouped[f // 8, i, f % 8]``)."""
    for i in numba.prange(X_grouped.shape[1]):
        out[i] += mult * nodes[_binned_leaf(nodes, X_grouped, i)].value


@njit(cache=True, parallel=True)
def add_tree_positions(nodes, X_pos, rows, start, mult, out):
    """``out[rows[i]] += mult * value(leaf of position i)`` for the positions
    ``i >= start`` of a matrix kept by position (:class:`.grower.TreeGrower`:
    ``X_pos[:, i]`` holds the bins of row ``rows[i]``)."""
    for i in numba.prange(start, X_pos.shape[1]):
        out[rows[i]] += mult * nodes[_binned_leaf(nodes, X_pos, i)].value


#: Rows walked together through each tree: the tree stays in L1 cache.
ROW_CHUNK = 32


def flat_trees(trees):
    """The arguments of :func:`predict_raw` for a list of node record arrays.

    Returns ``(feature, sign, cut, children, value, tree_ptr, tree_depth)``.
    A node sends row ``x`` to ``children[2 node + (sign x > cut)]``, which
    folds the missing-value rule into one comparison (NaN compares false):

    * missing values go left: ``sign = 1``, ``cut = threshold``, children
      ``(left, right)``: ``x > threshold`` goes right, NaN left;
    * missing values go right: ``sign = -1``, ``cut = -next_up(threshold)``,
      children ``(right, left)``: ``-x > -next_up(threshold)`` is
      ``x <= threshold`` (floats are discrete), so it goes left, NaN right.

    A leaf becomes its own child (``children = (self, self)``, feature 0), so
    a walk of ``tree_depth`` steps needs no leaf test.
    """
    nodes = np.concatenate(trees) if trees else np.zeros(1, dtype=NODE_DTYPE)
    ptr = np.zeros(len(trees) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([t.shape[0] for t in trees])
    depth = np.array([int(t["depth"].max()) for t in trees] or [0], dtype=np.int64)
    local = np.concatenate([np.arange(t.shape[0]) for t in trees]) if trees else np.zeros(1, dtype=np.int64)
    leaf = nodes["left"] < 0
    left = np.where(leaf, local, nodes["left"])
    right = np.where(leaf, local, nodes["right"])
    nan_right = ~leaf & (nodes["missing_left"] == 0)
    first = np.where(nan_right, right, left)
    second = np.where(nan_right, left, right)
    children = np.ascontiguousarray(np.column_stack([first, second]).ravel().astype(np.int64))
    feature = np.ascontiguousarray(np.where(leaf, 0, nodes["feature"]).astype(np.int64))
    threshold = nodes["threshold"].astype(np.float64)
    sign = np.where(nan_right, -1.0, 1.0)
    cut = np.where(nan_right, -np.nextafter(threshold, np.inf), threshold)
    return (feature, np.ascontiguousarray(sign), np.ascontiguousarray(cut), children,
            np.ascontiguousarray(nodes["value"]), ptr, depth)


@njit(cache=True, parallel=True)
def predict_raw(feature, sign, cut, children, value, tree_ptr, tree_depth, n_trees, X, scale, out, row0):
    """``out[row0 + i] = scale * sum_t value_t(x_i)`` over the first ``n_trees`` trees.

    The node fields of all trees come as contiguous arrays (a structure of
    arrays: a node visit reads 4-8 bytes per field, not a 56-byte record;
    ``children[2 * node + (sign * x > cut)]`` picks the child, missing values
    included, with one comparison and no branch);
    tree ``t`` starts at ``tree_ptr[t]``, has depth ``tree_depth[t]``, and its
    child indices are relative to that start; a leaf is its own child (see
    :func:`flat_trees`), so every row takes exactly ``tree_depth[t]`` steps. ``X`` is a C-ordered float32 or
    float64 block of rows (float32 values compare exactly as their float64
    casts, as in binning). Parallel over chunks of :data:`ROW_CHUNK` rows;
    inside a chunk, tree by tree, all rows descend one level at a time
    (lockstep), so the CPU overlaps the independent walks of different rows
    instead of waiting on one row's chain of dependent loads. Each row sums
    its trees in order, so results do not depend on the thread count.
    """
    n = X.shape[0]
    n_chunks = (n + ROW_CHUNK - 1) // ROW_CHUNK
    for c in numba.prange(n_chunks):
        a = c * ROW_CHUNK
        m = min(n, a + ROW_CHUNK) - a
        nd = np.empty(ROW_CHUNK, dtype=np.int64)
        acc = np.zeros(ROW_CHUNK)
        for t in range(n_trees):
            off = tree_ptr[t]
            for k in range(m):
                nd[k] = off
            for _ in range(tree_depth[t]):
                for k in range(m):
                    node = nd[k]
                    # NaN compares false: it takes children[2 node], the
                    # missing-value side (see flat_trees). No branch.
                    second = np.int64(sign[node] * X[a + k, feature[node]] > cut[node])
                    nd[k] = off + children[2 * node + second]
            for k in range(m):
                acc[k] += value[nd[k]]
        for k in range(m):
            out[row0 + a + k] = acc[k] * scale


#: Deepest tree :func:`oblivious_tables` turns into a table (2^depth leaves).
MAX_TABLE_DEPTH = 16


def oblivious_tables(trees):
    """The arguments of :func:`predict_oblivious` when every tree is oblivious, else None.

    A tree is oblivious when all internal nodes of a level share one split
    (CatBoost's symmetric trees, what ``grow_policy="oblivious"`` grows; a
    leaf above the last level is its own child). Then a row's leaf is an
    index built bit by bit, one comparison per level, and its value a table
    lookup: no chain of dependent loads. Returns ``(feature, sign, cut,
    level_ptr, table, table_ptr)``: tree ``t`` has levels
    ``level_ptr[t]:level_ptr[t + 1]``, each sending ``x`` to the bit ``sign
    x[feature] > cut`` (the missing-value rule folded in as in
    :func:`flat_trees`), and its leaf values at ``table[table_ptr[t] + index]``
    with ``index = sum_l bit_l 2^(depth - 1 - l)``.
    """
    feature, sign, cut, children, value, tree_ptr, tree_depth = flat_trees(trees)
    level_ptr = np.zeros(len(trees) + 1, dtype=np.int64)
    table_ptr = np.zeros(len(trees) + 1, dtype=np.int64)
    lf, ls, lc, tables = [], [], [], []
    for t, nodes in enumerate(trees):
        d = int(tree_depth[t])
        if d > MAX_TABLE_DEPTH:
            return None
        off = tree_ptr[t]
        internal = nodes["left"] >= 0
        for level in range(d):
            here = internal & (nodes["depth"] == level)
            split = {(int(f), float(c), int(m)) for f, c, m in
                     zip(nodes["feature"][here], nodes["threshold"][here], nodes["missing_left"][here])}
            if len(split) != 1:
                return None
            k = off + np.flatnonzero(here)[0]
            lf.append(feature[k])
            ls.append(sign[k])
            lc.append(cut[k])
        node = np.zeros(2 ** d, dtype=np.int64)  # every bit pattern walks down from the root
        index = np.arange(2 ** d)
        for level in range(d):
            bit = (index >> (d - 1 - level)) & 1
            node = children[2 * (off + node) + bit]
        tables.append(value[off + node])
        level_ptr[t + 1] = level_ptr[t] + d
        table_ptr[t + 1] = table_ptr[t] + 2 ** d
    as_array = lambda v, dt: np.ascontiguousarray(np.asarray(v, dtype=dt))  # noqa: E731
    return (as_array(lf, np.int64), as_array(ls, np.float64), as_array(lc, np.float64), level_ptr,
            as_array(np.concatenate(tables) if tables else [], np.float64), table_ptr)


@njit(cache=True, parallel=True)
def predict_oblivious(feature, sign, cut, level_ptr, table, table_ptr, n_trees, X, scale, out, row0):
    """:func:`predict_raw` for oblivious trees (:func:`oblivious_tables`).

    A chunk of :data:`ROW_CHUNK` rows is first copied feature-major, so that
    per tree every row computes its leaf index from contiguous values, one
    comparison per level (independent of each other, no branch: SIMD), then
    adds one table entry. Each row sums its trees in order, as
    :func:`predict_raw` does, so the two agree bit for bit.
    """
    n, n_features = X.shape
    n_chunks = (n + ROW_CHUNK - 1) // ROW_CHUNK
    for c in numba.prange(n_chunks):
        a = c * ROW_CHUNK
        m = min(n, a + ROW_CHUNK) - a
        xt = np.zeros((n_features, ROW_CHUNK))
        for k in range(m):
            for f in range(n_features):
                xt[f, k] = X[a + k, f]
        index = np.empty(ROW_CHUNK, dtype=np.int64)
        acc = np.zeros(ROW_CHUNK)
        for t in range(n_trees):
            index[:] = 0
            for level in range(level_ptr[t], level_ptr[t + 1]):
                col = xt[feature[level]]
                s = sign[level]
                u = cut[level]
                for k in range(ROW_CHUNK):
                    index[k] = 2 * index[k] + np.int64(s * col[k] > u)
            base = table_ptr[t]
            for k in range(m):
                acc[k] += table[base + index[k]]
        for k in range(m):
            out[row0 + a + k] = acc[k] * scale
