"""``backend="numba"``: rankkit's own histogram GBDT, numpy + numba only.

Nothing here imports XGBoost or LightGBM. The engine lives in
:mod:`rankkit._backends._gbm`; this module validates parameters, bins the
data once, runs the training loop of :mod:`rankkit._backends._base` and
keeps the model (:class:`~rankkit._backends._gbm.booster.TreeEnsemble`).
"""

from __future__ import annotations

import contextlib
import numbers

import numba
import numpy as np

from .._random import seed_from
from ._base import Backend
from ._gbm.binning import fit_bin_edges, transform
from ._gbm.booster import TreeEnsemble, leaf_normals, sample_uniforms
from ._gbm.grower import TreeGrower
from ._gbm.predictor import add_tree_binned
from ._params import check_backend_params

#: Accepted ``backend_params`` and their defaults.
BACKEND_PARAMS = {
    "grow_policy": "depthwise",
    "min_split_gain": 0.0,
    "leaf_noise_temperature": None,
}

# Renormalise stored leaves when the running SGLB scale falls below this.
_MIN_SCALE = 1e-150


@contextlib.contextmanager
def _threads(n_jobs):
    """Run numba kernels on ``n_jobs`` threads (None: numba's default)."""
    if n_jobs is None:
        yield
        return
    old = numba.get_num_threads()
    limit = numba.config.NUMBA_NUM_THREADS
    n = limit if n_jobs < 0 else min(int(n_jobs), limit)
    numba.set_num_threads(max(1, n))
    try:
        yield
    finally:
        numba.set_num_threads(old)


def _check_X(X, name="X", n_features=None):
    if hasattr(X, "toarray"):  # scipy.sparse: binned and predicted in dense row blocks
        X = X.tocsr()
        if X.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be numeric, got dtype {X.dtype}.")
    else:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be a numeric array, got dtype {X.dtype}.")
    if X.ndim != 2:
        raise ValueError(f"{name} must be two-dimensional (n_samples, n_features), got shape {X.shape}.")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(
            f"{name} has {X.shape[1]} features but the model was trained on {n_features}."
        )
    return X


class NumbaBackend(Backend):
    """Histogram gradient boosting in numba (``backend="numba"``).

    Trees are grown on quantile bins (uint8, at most 255 bins per feature plus
    one for NaN; Chen & Guestrin 2016, Ke et al. 2017) from the gradients and
    hessians of any rankkit objective. Leaf values are Newton steps
    ``-G / (H + reg_lambda)`` times ``learning_rate``; gradient leaves follow
    when the ranker passes ``hess = 1``. SGLB shrinkage (Ustimenko &
    Prokhorenkova 2021) scales the whole model in O(1) through a running
    scale, so the saved model predicts exactly the scores used in training.

    ``backend_params``:

    grow_policy : {"depthwise", "oblivious"}, default "depthwise"
        ``"depthwise"`` grows XGBoost-style trees level by level, each node
        choosing its own split; ``"oblivious"`` grows CatBoost-style symmetric
        trees (one split per level).
    min_split_gain : float >= 0, default 0
        Minimum loss reduction of a split (XGBoost's ``gamma``).
    leaf_noise_temperature : float > 0 or None, default None
        CatBoost-style Langevin noise on leaves: the gradient sum ``G`` of a
        leaf with ``n`` rows gets ``sqrt(2 n / (learning_rate * T)) * xi``,
        ``xi ~ N(0, 1)``, before its value is computed -- the distribution of
        the sum of per-row noise ``sqrt(2 / (learning_rate * T)) * xi_i``.
        Use either this or the SGLB objective wrapper, not both.

    Random choices (row ``subsample``, ``colsample_bytree``, leaf noise) come
    from :mod:`rankkit._random` keyed by ``(seed, iteration)``, and every
    kernel sums in a fixed order, so trees are identical for any ``n_jobs``.
    Sparse ``X`` is accepted and densified one block of rows at a time.
    """

    name = "numba"

    #: Where :func:`~rankkit._backends._params.check_backend_params` points users.
    params_help = f"{sorted(BACKEND_PARAMS)} (see NumbaBackend's docstring)"

    @classmethod
    def valid_params(cls):
        """The ``backend_params`` keys this backend accepts."""
        return frozenset(BACKEND_PARAMS)

    @classmethod
    def refused_params(cls, params):
        """Every key of ``BACKEND_PARAMS`` is honoured: nothing to refuse."""
        return {}

    # -- validation --------------------------------------------------------
    def _check_params(self):
        def num(name, value, lo, hi=None, lo_open=False, integral=False):
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
            if integral:
                ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
            if ok:
                ok = (value > lo if lo_open else value >= lo) and (hi is None or value <= hi)
            if not ok:
                rng = f"{'(' if lo_open else '['}{lo}, {hi if hi is not None else 'inf'}]"
                kind = "an int" if integral else "a number"
                raise ValueError(f"{name} must be {kind} in {rng}, got {value!r}.")

        num("n_estimators", self.n_estimators, 1, integral=True)
        num("learning_rate", self.learning_rate, 0, lo_open=True)
        num("max_depth", self.max_depth, 1, 30, integral=True)
        num("min_child_weight", self.min_child_weight, 0)
        num("reg_lambda", self.reg_lambda, 0)
        num("subsample", self.subsample, 0, 1, lo_open=True)
        num("colsample_bytree", self.colsample_bytree, 0, 1, lo_open=True)
        if not (isinstance(self.max_bin, numbers.Integral) and 2 <= self.max_bin <= 256):
            raise ValueError(
                f"max_bin must be an int in [2, 256] for backend='numba' (bins are uint8, one "
                f"code is reserved for missing values), got {self.max_bin!r}."
            )
        if self.n_jobs is not None and not (isinstance(self.n_jobs, numbers.Integral) and self.n_jobs != 0):
            raise ValueError(f"n_jobs must be None, -1 or a positive int, got {self.n_jobs!r}.")
        p = {**BACKEND_PARAMS, **check_backend_params(type(self), self.backend_params)}
        if p["grow_policy"] not in ("depthwise", "oblivious"):
            raise ValueError(
                f"backend_params['grow_policy'] must be 'depthwise' or 'oblivious', got {p['grow_policy']!r}."
            )
        num("backend_params['min_split_gain']", p["min_split_gain"], 0)
        if p["leaf_noise_temperature"] is not None:
            num("backend_params['leaf_noise_temperature']", p["leaf_noise_temperature"], 0, lo_open=True)
        return p

    # -- training ----------------------------------------------------------
    def fit(self, X, grad_fn, *, eval_X=(), shrink=None, callback=None, feature_names=None):
        """Train; see :mod:`rankkit._backends._base` for the loop. Returns self."""
        p = self._check_params()
        X = _check_X(X)
        n, n_features = X.shape
        if n == 0:
            raise ValueError("X has no rows; at least one training row is needed.")
        eval_X = [_check_X(E, f"eval_X[{i}]", n_features) for i, E in enumerate(eval_X)]
        self.n_features_in_ = n_features
        self.feature_names_in_ = None if feature_names is None else np.asarray(feature_names, dtype=object)
        lr = float(self.learning_rate)
        max_bins = min(int(self.max_bin), 255)
        with _threads(self.n_jobs):
            edges, edges_ptr = fit_bin_edges(X, max_bins)
            self.bin_edges_, self.bin_edges_ptr_ = edges, edges_ptr
            Xb = transform(X, edges, edges_ptr)
            Eb = [transform(E, edges, edges_ptr) for E in eval_X]
            n_bins = np.diff(edges_ptr) + 1
            grower = TreeGrower(Xb, n_bins, edges, edges_ptr, max_depth=self.max_depth,
                                min_child_weight=self.min_child_weight, reg_lambda=self.reg_lambda,
                                min_split_gain=p["min_split_gain"], grow_policy=p["grow_policy"])
            seed = seed_from(self.random_state)
            all_rows = np.arange(n, dtype=np.int32)
            all_feats = np.arange(n_features, dtype=np.int64)
            rows = np.empty(n, dtype=np.int32)
            u_rows = np.empty(n) if self.subsample < 1 else None
            n_cols = max(1, int(self.colsample_bytree * n_features))
            u_cols = np.empty(n_features)
            noise_T = p["leaf_noise_temperature"]
            raw = np.zeros(n)
            raw_evals = [np.zeros(E.shape[0]) for E in Eb]
            ens = TreeEnsemble(n_features)
            S = 1.0
            for t in range(int(self.n_estimators)):
                factor = shrink(t) if shrink is not None else None
                if factor is not None and factor != 1.0:
                    factor = float(factor)
                    if not (0.0 < factor <= 1.0):
                        raise ValueError(f"shrink({t}) returned {factor}; shrink factors must be in (0, 1].")
                    S *= factor
                    raw *= factor
                    for r in raw_evals:
                        r *= factor
                    if S < _MIN_SCALE:
                        ens.rescale_stored(S)
                        S = 1.0
                grad, hess = grad_fn(raw, t)
                grad = np.ascontiguousarray(grad, dtype=np.float64)
                hess = np.ones(n) if hess is None else np.ascontiguousarray(hess, dtype=np.float64)
                if grad.shape != (n,) or hess.shape != (n,):
                    raise ValueError(
                        f"grad_fn must return grad and hess of shape ({n},), got {grad.shape} and {hess.shape}."
                    )
                if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
                    raise ValueError(f"grad_fn returned NaN or infinite gradients/hessians at iteration {t}.")
                if u_rows is not None:
                    sample_uniforms(seed, 3 * t, n, u_rows)
                    r_sel = np.flatnonzero(u_rows < self.subsample).astype(np.int32)
                    if r_sel.size == 0:
                        r_sel = np.array([np.argmin(u_rows)], dtype=np.int32)
                    rows_t = r_sel
                else:
                    rows[:] = all_rows
                    rows_t = rows
                if n_cols < n_features:
                    sample_uniforms(seed, 3 * t + 1, n_features, u_cols)
                    feats = np.sort(np.argsort(u_cols, kind="stable")[:n_cols]).astype(np.int64)
                else:
                    feats = all_feats
                nodes, (leaf_ids, lg, lh, ln) = grower.grow(grad, hess, rows_t, feats)
                if noise_T is not None:
                    xi = np.empty(leaf_ids.shape[0])
                    leaf_normals(seed, 3 * t + 2, leaf_ids, xi)
                    d = lh + self.reg_lambda
                    noisy = lg + np.sqrt(2.0 * ln / (lr * noise_T)) * xi
                    nodes["value"][leaf_ids] = np.where(d > 0, -noisy / np.where(d > 0, d, 1.0), 0.0)
                nodes["value"] *= lr
                add_tree_binned(nodes, Xb, 1.0, raw)
                for E, r in zip(Eb, raw_evals):
                    add_tree_binned(nodes, E, 1.0, r)
                # Stored as v / S so that S * sum(stored) adds exactly v now.
                nodes["value"] /= S
                ens.append(nodes, S)
                if callback is not None and callback(t, raw, raw_evals):
                    break
        self.booster_ = ens
        self.raw_train_ = raw
        return self

    # -- model -------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "booster_"):
            raise RuntimeError("This NumbaBackend is not fitted yet; call fit first.")

    def predict(self, X, n_iterations=None):
        """Raw scores (float64) of the first ``n_iterations`` trees (all by default)."""
        self._check_fitted()
        X = _check_X(X, n_features=self.n_features_in_)
        if n_iterations is not None and not (0 <= int(n_iterations) <= len(self.booster_)):
            raise ValueError(f"n_iterations must be in [0, {len(self.booster_)}], got {n_iterations}.")
        with _threads(self.n_jobs):
            return self.booster_.predict(X, n_iterations)

    def truncate(self, n_iterations):
        """Keep the model as it was after ``n_iterations`` iterations."""
        self._check_fitted()
        if not (1 <= int(n_iterations) <= len(self.booster_)):
            raise ValueError(f"n_iterations must be in [1, {len(self.booster_)}], got {n_iterations}.")
        self.booster_.truncate(int(n_iterations))
        return self

    @property
    def n_iterations_(self):
        self._check_fitted()
        return len(self.booster_)

    def feature_importances(self, importance_type="gain"):
        """Per-feature total split gain (``"gain"``) or split count (``"split"``), summing to 1."""
        self._check_fitted()
        if importance_type not in ("gain", "split"):
            raise ValueError(f"importance_type must be 'gain' or 'split', got {importance_type!r}.")
        return self.booster_.feature_importances(importance_type)
