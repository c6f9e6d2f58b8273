"""The model: trees, the SGLB scale of every iteration, prediction.

The model is ``F(x) = S * sum_t u_t(x)`` where ``u_t`` are the stored trees
and ``S`` the running scale of :class:`rankkit._sglb.RunningScale` (SGLB's
shrinkage ``F <- c F`` is ``S <- c S``; a new tree ``v`` is stored as
``u = v / S``). ``scales[t]`` records ``S`` after iteration ``t``, so the
model after any number of iterations (early stopping) is recoverable.
"""

import numba
import numpy as np
from numba import njit

from ..._random import key, uniform
from .._base import iter_row_blocks
from .binning import BLOCK_ROWS
from .predictor import flat_trees, oblivious_tables, predict_oblivious, predict_raw


@njit(cache=True, parallel=True)
def sample_uniforms(seed, stream, n, out):
    """``out[i] = uniform(key(seed, stream), i)``: counter-based, thread-count free."""
    k = key(seed, stream)
    for i in numba.prange(n):
        out[i] = uniform(k, i)


@njit(cache=True)
def sum_of_squares(x):
    """``sum(x ** 2)`` in index order on the calling thread (``np.dot(x, x)``
    would run on BLAS's own thread pool above 10,000 elements, outside ``n_jobs``)."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * x[i]
    return total


class TreeEnsemble:
    """Trees (record arrays) plus the SGLB scale history; pickles as plain NumPy."""

    def __init__(self, n_features):
        self.n_features = n_features
        self.trees = []
        self.scales = []
        self._cache = None

    def __len__(self):
        return len(self.trees)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_cache"] = None
        return state

    def append(self, nodes, scale):
        self.trees.append(nodes)
        self.scales.append(float(scale))
        self._cache = None

    def rescale_stored(self, factor):
        """Multiply every stored leaf by ``factor`` (renormalisation only)."""
        for t in self.trees:
            t["value"] *= factor
        self.scales = [s / factor for s in self.scales]
        self._cache = None

    def truncate(self, n):
        del self.trees[n:]
        del self.scales[n:]
        self._cache = None

    def _flat(self, trees=None):
        """The predictor and its arguments: the table lookup for oblivious trees, else the walk."""
        if trees is None:
            if self._cache is None:
                self._cache = self._flat(self.trees)
            return self._cache
        tables = oblivious_tables(trees)
        return (predict_raw, flat_trees(trees)) if tables is None else (predict_oblivious, tables)

    def predict(self, X, n_iterations=None, start=0):
        """``F`` after ``n_iterations`` iterations: ``S_{n-1} sum_{t < n} u_t``;
        with ``start > 0`` the sum runs over ``start <= t < n`` only (the
        contribution of those trees to that model)."""
        n = len(self.trees) if n_iterations is None else int(n_iterations)
        out = np.zeros(X.shape[0], dtype=np.float64)
        if n <= start:
            return out
        kernel, fields = self._flat() if start == 0 else self._flat(self.trees[start:n])
        scale = self.scales[n - 1]
        for a, blk in iter_row_blocks(X, BLOCK_ROWS):
            kernel(*fields, n - start, blk, scale, out, a)
        return out

    def feature_importances(self, importance_type):
        imp = np.zeros(self.n_features, dtype=np.float64)
        for t in self.trees:
            # An oblivious level splits its empty nodes too (they keep the tree
            # full); a split of no row is not a split of the data.
            internal = (t["left"] >= 0) & (t["count"] > 0)
            f = t["feature"][internal]
            w = t["gain"][internal] if importance_type == "gain" else np.ones(f.shape[0])
            np.add.at(imp, f, w)
        total = imp.sum()
        return imp / total if total > 0 else imp
