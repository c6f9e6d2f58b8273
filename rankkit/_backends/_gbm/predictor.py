"""Tree traversal: parallel over rows, one fixed summation order per row.

``predict_raw`` walks raw float features (NaN follows ``missing_left``);
``add_tree_binned`` walks uint8 bins and is what training uses to update the
raw scores of the training and eval sets after each tree. The two agree
because ``bin <= bin_threshold  <=>  x <= threshold`` (see :mod:`.binning`).
"""

import numba
import numpy as np
from numba import njit

MISSING_BIN = 255


@njit(cache=True, parallel=True)
def add_tree_binned(nodes, X_binned, mult, out):
    """``out[i] += mult * value(leaf of row i)`` for one tree on binned rows."""
    for i in numba.prange(X_binned.shape[0]):
        node = 0
        while nodes[node].left >= 0:
            nd = nodes[node]
            v = X_binned[i, nd.feature]
            if v == MISSING_BIN:
                go_left = nd.missing_left != 0
            else:
                go_left = v <= nd.bin_threshold
            node = nd.left if go_left else nd.right
        out[i] += mult * nodes[node].value


#: Rows walked together through each tree: the tree stays in L1 cache.
ROW_CHUNK = 64


@njit(cache=True, parallel=True)
def predict_raw(feature, threshold, missing_left, children, value, tree_ptr, n_trees, X, scale, out, row0):
    """``out[row0 + i] = scale * sum_t value_t(x_i)`` over the first ``n_trees`` trees.

    The node fields of all trees come as contiguous arrays (a structure of
    arrays: a node visit reads 4-8 bytes per field, not a 56-byte record;
    ``children[2 * node + go_right]`` picks the child without a branch);
    tree ``t`` starts at ``tree_ptr[t]`` and its child indices are relative
    to that start. ``X`` is a C-ordered float32 or float64 block of rows
    (float32 values compare exactly as their float64 casts, as in binning).
    Parallel over chunks of :data:`ROW_CHUNK` rows, tree-major inside a
    chunk; each row sums its trees in order, so results do not depend on the
    thread count.
    """
    n = X.shape[0]
    n_chunks = (n + ROW_CHUNK - 1) // ROW_CHUNK
    for c in numba.prange(n_chunks):
        a = c * ROW_CHUNK
        b = min(n, a + ROW_CHUNK)
        for i in range(a, b):
            out[row0 + i] = 0.0
        for t in range(n_trees):
            off = tree_ptr[t]
            for i in range(a, b):
                node = off
                while children[2 * node] >= 0:
                    x = X[i, feature[node]]
                    # NaN fails every comparison: it takes the missing_left side.
                    go_right = not (x <= threshold[node]) and not (x != x and missing_left[node] != 0)
                    node = off + children[2 * node + go_right]
                out[row0 + i] += value[node]
        for i in range(a, b):
            out[row0 + i] *= scale
