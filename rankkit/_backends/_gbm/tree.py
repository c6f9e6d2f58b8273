"""Tree storage: one NumPy record array per tree.

A node is a row of :data:`NODE_DTYPE`; the root is row 0 and children are
row indices relative to the tree (``left == -1`` marks a leaf). Internal
nodes send a row left when ``x[feature] <= threshold`` (raw features) or,
equivalently, ``bin <= bin_threshold`` (binned features); a missing value
(NaN, bin :data:`~.binning.MISSING_BIN`) goes left iff ``missing_left``.
"""

import numpy as np

# Ordered widest first so the record has no padding bytes: equal trees are
# byte-identical (pickles, hashes), whatever memory the padding would hold.
NODE_DTYPE = np.dtype(
    [
        ("threshold", np.float64),
        ("value", np.float64),
        ("gain", np.float64),
        ("sum_hessian", np.float64),
        ("count", np.int64),
        ("feature", np.int32),
        ("left", np.int32),
        ("right", np.int32),
        ("bin_threshold", np.uint8),
        ("missing_left", np.uint8),
        ("depth", np.uint16),
    ],
    align=True,
)
assert NODE_DTYPE.itemsize == sum(NODE_DTYPE[i].itemsize for i in range(len(NODE_DTYPE)))


def empty_nodes(n):
    """``n`` nodes initialised as leaves with value 0."""
    nodes = np.zeros(n, dtype=NODE_DTYPE)
    nodes["feature"] = -1
    nodes["left"] = -1
    nodes["right"] = -1
    return nodes
