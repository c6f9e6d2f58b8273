"""The model: trees, the SGLB scale of every iteration, prediction.

The model is ``F(x) = S * sum_t u_t(x)`` where ``u_t`` are the stored trees
and ``S`` the running scale of :class:`rankkit._sglb.RunningScale` (SGLB's
shrinkage ``F <- c F`` is ``S <- c S``; a new tree ``v`` is stored as
``u = v / S``). ``scales[t]`` records ``S`` after iteration ``t``, so the
model after any number of iterations (early stopping) is recoverable.

When ``S`` would fall below :attr:`rankkit._sglb.RunningScale.MIN`, it is
*folded*: ``S`` restarts from 1 and the fold factor ``f`` is recorded
(``folds``), to be multiplied into the trees grown before it. The trees and
scales are kept as grown (each in the frame of its own run between folds),
and the model after ``n`` iterations multiplies in only the folds made
before iteration ``n``: folding the stored trees themselves would, after a
few folds, underflow the early trees to 0 and overflow their scales to
``inf``, and the early models would predict NaN.
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
    """Trees (record arrays) plus the SGLB scale history; pickles as plain NumPy.

    ``trees[t]`` and ``scales[t]`` are as grown; ``folds`` lists ``(i, f)``:
    before iteration ``i`` the running scale ``f`` was folded, so the trees
    ``t < i`` count ``f`` times their stored values in every model of more
    than ``i`` iterations (module docstring).

    The trees are read-only arrays: predictions come from flattened copies
    kept between calls, which an edit in place would leave stale. To edit a
    tree, put an edited copy in its place (``trees[t] = edited``); the copies
    are rebuilt for a list whose trees are not the same objects.
    """

    def __init__(self, n_features):
        self.n_features = n_features
        self.trees = []
        self.scales = []
        self.folds = []
        self._cache = {}

    def __len__(self):
        return len(self.trees)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    def __setstate__(self, state):
        state.setdefault("folds", [])  # pickled before folds were kept apart: folded in the trees
        state["_cache"] = {}
        self.__dict__.update(state)
        for nodes in self.trees:
            nodes.flags.writeable = False

    def append(self, nodes, scale):
        nodes.flags.writeable = False
        self.trees.append(nodes)
        self.scales.append(float(scale))
        self._cache = {}

    def rescale_stored(self, factor):
        """Fold ``factor`` (the running scale, restarted from 1) into the
        trees stored so far: recorded, applied by :meth:`folded`."""
        self.folds.append((len(self.trees), float(factor)))
        self._cache = {}

    def _n_folds(self, n):
        """How many folds the model after ``n`` iterations includes (those made before iteration ``n``)."""
        return sum(1 for i, _ in self.folds if i < n)

    def folded(self, n_folds=None):
        """``(trees, scales)`` with the first ``n_folds`` folds (all by
        default) multiplied into the trees before them and divided out of
        their scales; the model after ``n`` iterations is ``scales[n - 1] *
        sum_{t < n} trees[t]`` with the folds made before iteration ``n``."""
        folds = self.folds if n_folds is None else self.folds[:n_folds]
        trees, scales = list(self.trees), list(self.scales)
        copied = set()
        for i, factor in folds:
            for t in range(i):
                if t not in copied:
                    trees[t] = trees[t].copy()
                    copied.add(t)
                trees[t]["value"] *= factor
            scales[:i] = [s / factor for s in scales[:i]]
        return trees, scales

    def truncate(self, n):
        del self.trees[n:]
        del self.scales[n:]
        self.folds = [(i, f) for i, f in self.folds if i < n]
        self._cache = {}

    def _flat(self, trees=None, n_folds=0):
        """The predictor and its arguments: the table lookup for oblivious trees, else the walk
        (``trees`` None: all trees, with the first ``n_folds`` folds)."""
        if trees is None:
            cached = self._cache.get(n_folds)
            # Built from these very trees? (The list may have been given other ones.)
            if cached is None or len(cached[0]) != len(self.trees) or any(
                    a is not b for a, b in zip(cached[0], self.trees)):
                for nodes in self.trees:  # a tree put in the list's place is frozen too
                    nodes.flags.writeable = False
                cached = self._cache[n_folds] = (tuple(self.trees), self._flat(self.folded(n_folds)[0]))
            return cached[1]
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
        # The folds made before iteration n; scales[n - 1] is in the frame they lead to.
        k = self._n_folds(n)
        kernel, fields = self._flat(n_folds=k) if start == 0 else self._flat(self.folded(k)[0][start:n])
        scale = self.scales[n - 1]
        for a, blk in iter_row_blocks(X, BLOCK_ROWS):
            kernel(*fields, n - start, blk, scale, out, a)
        return out

    def feature_importances(self, importance_type):
        imp = np.zeros(self.n_features, dtype=np.float64)
        for t in self.trees:
            # An oblivious level splits every node of the level (the tree stays
            # full), also nodes whose rows all go one way; a split that leaves a
            # child without rows divides no data (and gains 0).
            internal = t["left"] >= 0
            internal[internal] = (t["count"][t["left"][internal]] > 0) & (t["count"][t["right"][internal]] > 0)
            f = t["feature"][internal]
            w = t["gain"][internal] if importance_type == "gain" else np.ones(f.shape[0])
            np.add.at(imp, f, w)
        total = imp.sum()
        return imp / total if total > 0 else imp
