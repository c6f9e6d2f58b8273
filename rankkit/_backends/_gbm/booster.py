"""The boosting loop and the model: trees, a running SGLB scale, prediction.

The model is ``F(x) = S * sum_t u_t(x)`` where ``u_t`` are the stored trees
and ``S`` a running scale. SGLB's shrinkage ``F <- c F`` (Ustimenko &
Prokhorenkova 2021, Algorithm 1) is ``S <- c S``, O(1) per iteration; a new
tree with leaf values ``v`` (already times the learning rate) is stored as
``u = v / S``, so ``F <- F + v`` exactly. ``scales[t]`` records ``S`` after
iteration ``t``, so the model after any number of iterations (early
stopping) is recoverable. When ``S`` underflows towards 0 the stored leaves
are renormalised once (a rewrite only every ~300 decades of shrinkage).
"""

import numba
import numpy as np
from numba import njit

from ..._random import key, normal, uniform
from .binning import iter_row_blocks
from .predictor import flat_trees, predict_raw
from .tree import NODE_DTYPE


@njit(cache=True, parallel=True)
def sample_uniforms(seed, stream, n, out):
    """``out[i] = uniform(key(seed, stream), i)``: counter-based, thread-count free."""
    k = key(seed, stream)
    for i in numba.prange(n):
        out[i] = uniform(k, i)


@njit(cache=True)
def leaf_normals(seed, stream, leaf_ids, out):
    """Standard normals indexed by leaf node id (leaf-value noise)."""
    k = key(seed, stream)
    for i in range(leaf_ids.shape[0]):
        out[i] = normal(k, leaf_ids[i])


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

    def _flat(self):
        if self._cache is None:
            self._cache = flat_trees(self.trees)
        return self._cache

    def predict(self, X, n_iterations=None):
        n = len(self.trees) if n_iterations is None else int(n_iterations)
        out = np.zeros(X.shape[0], dtype=np.float64)
        if n == 0:
            return out
        fields = self._flat()
        scale = self.scales[n - 1]
        for a, blk in iter_row_blocks(X):
            predict_raw(*fields[:7], n, blk, scale, out, a)
        return out

    def feature_importances(self, importance_type):
        imp = np.zeros(self.n_features, dtype=np.float64)
        for t in self.trees:
            internal = t["left"] >= 0
            f = t["feature"][internal]
            w = t["gain"][internal] if importance_type == "gain" else np.ones(f.shape[0])
            np.add.at(imp, f, w)
        total = imp.sum()
        return imp / total if total > 0 else imp
