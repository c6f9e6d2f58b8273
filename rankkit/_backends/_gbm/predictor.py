"""Tree traversal: parallel over rows, one fixed summation order per row.

``predict_raw`` walks raw float features (NaN follows ``missing_left``);
``add_tree_binned`` walks uint8 bins (grouped by 8 features) and is what
training uses to update the raw scores of the training and eval sets after
each tree. The two agree
because ``bin <= bin_threshold  <=>  x <= threshold`` (see :mod:`.binning`).
"""

import numba
import numpy as np
from numba import njit

from .tree import NODE_DTYPE

MISSING_BIN = 255


@njit(cache=True, parallel=True)
def add_tree_binned(nodes, X_grouped, mult, out):
    """``out[i] += mult * value(leaf of row i)`` for one tree on binned rows, in
    the grower's layout (:func:`.grower.group_features`: feature ``f`` of row
    ``i`` at ``X_grouped[f // 8, i, f % 8]``)."""
    for i in numba.prange(X_grouped.shape[1]):
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
        out[i] += mult * nodes[node].value


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
