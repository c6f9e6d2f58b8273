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


@njit(cache=True, parallel=True)
def predict_raw(nodes, tree_ptr, n_trees, X, scale, out, row0):
    """``out[row0 + i] = scale * sum_t value_t(x_i)`` over the first ``n_trees`` trees.

    ``nodes`` holds all trees back to back; tree ``t`` starts at
    ``tree_ptr[t]`` and its child indices are relative to that start.
    ``X`` is a C-ordered float64 block of rows.
    """
    for i in numba.prange(X.shape[0]):
        s = 0.0
        for t in range(n_trees):
            off = tree_ptr[t]
            node = 0
            while nodes[off + node].left >= 0:
                nd = nodes[off + node]
                x = X[i, nd.feature]
                if np.isnan(x):
                    go_left = nd.missing_left != 0
                else:
                    go_left = x <= nd.threshold
                node = nd.left if go_left else nd.right
            s += nodes[off + node].value
        out[row0 + i] = scale * s
