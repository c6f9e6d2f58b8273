"""``backend="numba"``: rankkit's own histogram GBDT, numpy + numba only.

Nothing here imports XGBoost or LightGBM. The engine lives in
:mod:`rankkit._backends._gbm`; this module validates parameters, bins the
data once, runs the training loop of :mod:`rankkit._backends._base` and
keeps the model (:class:`~rankkit._backends._gbm.booster.TreeEnsemble`).
"""

from __future__ import annotations

import io
import math
import zipfile
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import StrOptions, validate_parameter_constraints

from .._random import key, seed_from
from .._sglb import RunningScale
from .._threads import limit_threads
from .._validation import Interval
from .._params import BACKEND_SETTINGS
from ._base import Backend, check_iteration_range
from ._engine_params import RANKER_LEVEL_REASONS, ranker_parameter_reasons
from ._gbm.binning import fit_bin_edges, transform
from ._gbm.booster import TreeEnsemble, sample_uniforms, sum_of_squares
from ._gbm.grower import TreeGrower
from ._gbm.predictor import add_tree_binned, add_tree_positions
from ._gbm.tree import NODE_DTYPE

#: Accepted ``backend_params``: default and constraints.
BACKEND_PARAMS = {
    "grow_policy": ("oblivious", [StrOptions({"depthwise", "oblivious"})]),
    "min_split_gain": (0.0, [Interval(Real, 0, None, closed="left")]),
    "random_strength": (1.0, [Interval(Real, 0, None, closed="left")]),
    "sampling": ("uniform", [StrOptions({"uniform", "mvs"})]),
    "border_type": ("quantile", [StrOptions({"quantile", "greedy_logsum"})]),
    "split_score": ("newton", [StrOptions({"gradient", "newton"})]),
}

# Random streams of iteration t: 3 t (row subsample), 3 t + 1 (columns) and
# 3 t + 2 (random split strength).
_STREAMS = 3
#: A bound on a node's gradient sum G beyond which the split gains G^2 / H are
#: too near float64's largest number (1.8e308) to trust: its square is 1e304.
_GRADIENT_SUM_LIMIT = 1e152


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


def mvs_probabilities(grad, rate):
    """Keep-probabilities of minimal variance sampling (Ibragimov & Gusev 2019).

    Row ``i`` is kept with ``p_i = min(1, sqrt(g_i^2 + lam) / mu)``, ``mu`` such
    that ``sum(p) = rate * n`` (rows with large gradients are kept surely, the
    rest in proportion to their gradient), ``lam = mean(|g|)^2`` (CatBoost's
    choice on its first iteration; ``lam`` pulls the probabilities towards
    uniform). All-zero gradients give ``p = rate`` everywhere.
    """
    n = grad.shape[0]
    score = np.sqrt(grad * grad + np.mean(np.abs(grad)) ** 2)
    k = rate * n
    s = np.sort(score)[::-1]
    tail = np.cumsum(s[::-1])[::-1]  # tail[j]: sum of all but the j largest scores
    if not tail[0] > 0:
        return np.full(n, float(rate))
    j = np.arange(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = tail / (k - j)  # the j largest kept surely, the rest in proportion
    prev = np.concatenate(([np.inf], s[:-1]))
    ok = (k - j > 0) & (s <= mu) & (prev >= mu)
    return np.minimum(1.0, score / mu[np.argmax(ok)])


def _leaves_from_all_rows(nodes, grower, grad, hess, reg_lambda):
    """Leaf values, counts and hessian sums of a grown tree recomputed from
    every training row (the tree's structure came from a weighted sample).
    Returns the node each training row reaches."""
    ids = nodes.copy()
    ids["value"] = np.arange(nodes.shape[0])
    where = np.zeros(grad.shape[0])
    add_tree_positions(ids, grower.X, grower.rows, 0, 1.0, where)
    where = where.astype(np.intp)
    n_nodes = nodes.shape[0]
    G = np.bincount(where, weights=grad, minlength=n_nodes)
    H = np.bincount(where, weights=hess, minlength=n_nodes)
    C = np.bincount(where, minlength=n_nodes)
    for k in np.flatnonzero(nodes["left"] < 0):
        d = H[k] + reg_lambda
        nodes["value"][k] = -G[k] / d if d > 0 else 0.0
        nodes["sum_hessian"][k] = H[k]
        nodes["count"][k] = C[k]
    return where


def _tree_problem(nodes, ptr, scales, n_features, folds):
    """What is wrong with trees read from a file, or None: every index the
    prediction kernels follow stays in its tree and its row."""
    ptr = np.asarray(ptr)
    n_trees = ptr.shape[0] - 1
    if ptr.ndim != 1 or n_trees < 0 or ptr[0] != 0 or ptr[-1] != nodes.shape[0] or np.any(np.diff(ptr) < 1):
        return "has tree bounds (tree_ptr) that do not cut its nodes into trees"
    if np.shape(scales) != (n_trees,) or not np.all(np.isfinite(scales)):
        return f"has {np.size(scales)} tree scales for {n_trees} trees"
    # A threshold may be +inf: "every value left, missing values right" (features with NaN).
    if not (np.all(np.isfinite(nodes["value"])) and not np.any(np.isnan(nodes["threshold"]))):
        return "holds non-finite leaf values or NaN thresholds"
    local = np.arange(nodes.shape[0]) - np.repeat(ptr[:-1], np.diff(ptr))
    size = np.repeat(np.diff(ptr), np.diff(ptr))
    internal = nodes["left"] >= 0
    leaf_ok = (nodes["left"][~internal] == -1) & (nodes["right"][~internal] == -1)
    left, right, depth = nodes["left"][internal], nodes["right"][internal], nodes["depth"].astype(np.int64)
    here, bound = local[internal], size[internal]
    if not (np.all(leaf_ok) and np.all((here < left) & (left < bound)) and np.all((here < right) & (right < bound))):
        return "holds a node whose children are outside its tree"
    if not np.all((nodes["feature"][internal] >= 0) & (nodes["feature"][internal] < n_features)):
        return f"splits on a feature outside the model's {n_features}"
    start = np.repeat(ptr[:-1], np.diff(ptr))[internal]
    if not (np.all(depth[local == 0] == 0) and np.all(depth[start + left] == depth[internal] + 1)
            and np.all(depth[start + right] == depth[internal] + 1)):
        return "holds node depths that do not follow its tree"
    if any(not (0 <= i <= n_trees) or not math.isfinite(f) for i, f in folds):
        return "holds folds (SGLB shrinkage) outside its trees"
    return None


class NumbaBackend(Backend):
    """Histogram gradient boosting in numba (``backend="numba"``).

    Trees are grown on quantile bins (uint8, at most 255 bins per feature plus
    one for NaN; Chen & Guestrin 2016, Ke et al. 2017) from the gradients and
    hessians of any rankkit objective. Leaf values are Newton steps
    ``-G / (H + reg_lambda)`` times ``learning_rate``; gradient leaves follow
    when the ranker passes ``hess = 1``. SGLB shrinkage scales the whole
    model in O(1) through a running scale (:class:`rankkit._sglb.RunningScale`),
    so the saved model predicts exactly the scores used in training.

    ``backend_params``:

    grow_policy : {"depthwise", "oblivious"}, default "oblivious"
        ``"oblivious"`` grows CatBoost-style symmetric trees (one split per
        level, shared by every node of the level); ``"depthwise"`` grows
        XGBoost-style trees level by level, each node choosing its own split.
        Oblivious trees with split noise are the default: with them every
        objective reached or came close to its CatBoost counterpart on the
        datasets measured (``docs/user_guide.md``, section 9, "The tree
        learner").
    min_split_gain : float >= 0, default 0
        XGBoost's ``gamma``, LightGBM's ``min_gain_to_split``: a split is
        made only if ``G_L^2/(H_L+lambda) + G_R^2/(H_R+lambda) -
        G^2/(H+lambda)`` (twice its gain, as both engines compare) exceeds it,
        so the same value grows the same trees as ``gamma`` on XGBoost.
    random_strength : float >= 0, default 1
        CatBoost's random split strength: tree ``t`` compares candidate splits
        by ``sqrt(S_L + S_R)`` (``S = G^2 / (H + reg_lambda)``; CatBoost's
        ``Cosine`` score when ``reg_lambda = 0``) plus a normal of standard
        deviation ``random_strength * sqrt(sum(grad^2) / sum(hess)) * n / (n
        + exp(t * learning_rate))``, fresh per candidate (CatBoost's
        ``NormalWithModelSizeDecrease``: the noise fades as the model grows).
        The first factor, ``rms(grad) / sqrt(mean(hess))``, is the sampling
        noise of the score; it is CatBoost's ``rms(grad)`` when the hessians
        are 1, and it scales with the score when the loss is multiplied by
        any constant (the rankers count hessians in queries), so the noise
        weighs the same against the splits whatever the loss's unit.
        0 compares by the gain, with no noise. 1 is CatBoost's default.
    sampling : {"uniform", "mvs"}, default "uniform"
        How ``subsample < 1`` draws the rows of a tree. ``"uniform"``: each row
        with probability ``subsample``; the drawn rows choose the splits and
        set the leaf values (XGBoost's and LightGBM's bagging). ``"mvs"``:
        CatBoost's minimal variance sampling (Ibragimov & Gusev 2019; its
        default bootstrap): row ``i`` with probability ``p_i = min(1,
        sqrt(g_i^2 + mean(|g|)^2) / mu)``, ``mu`` such that the ``p_i`` sum to
        ``subsample * n``, its gradient and hessian divided by ``p_i``; the
        drawn rows choose the splits, and the leaf values come from all rows,
        as in CatBoost.
    border_type : {"quantile", "greedy_logsum"}, default "quantile"
        Bin edges of a feature with more distinct values than bins: at
        quantiles of the training values, or CatBoost's ``GreedyLogSum``
        (bins chosen greedily to maximise the sum of the logarithms of their
        sizes, which gives a heavily tied value its own bin and keeps the
        other bins fine).

    split_score : {"newton", "gradient"}, default "newton"
        What a candidate split's ``S = G^2 / (H + reg_lambda)`` takes as
        ``H``. ``"newton"``: the rows' hessians (XGBoost's and LightGBM's
        second-order gain). ``"gradient"``: each row's weight (its sample
        weight, 1 without) times the mean hessian per unit of weight, so the
        splits are those that fit the gradients best in least squares, every
        row weighed by its weight alone (CatBoost's default first-order
        ``Cosine``/``L2`` scores); the leaf values are still Newton steps on
        the true hessians. The two are the same when the hessians are
        constant (StochasticRank's gradient leaves, QueryRMSE). Measured for
        LambdaMART, whose hessians span orders of magnitude: better on few
        queries of the Yahoo sample, worse on MQ2008 and ClueWeb09, so not
        the default (``docs/user_guide.md``, section 9).

    Random choices (row ``subsample``, ``colsample_bytree``, split noise) come
    from :mod:`rankkit._random` keyed by ``(seed, iteration)``, and every
    kernel sums in a fixed order, so trees are identical for any ``n_jobs``.
    Sparse ``X`` is accepted and densified one block of rows at a time.
    """

    name = "numba"

    # max_bin is capped at 255 where the edges are fitted (bins are uint8 codes
    # and one code is reserved for missing values), so that a max_bin tuned
    # for XGBoost or LightGBM runs here too.
    # Depth 16 is CatBoost's limit too: a tree's node table (and, for oblivious
    # trees, a level's histograms) grows as 2 ** max_depth.
    _engine_constraints = {
        "max_depth": [Interval(Integral, 1, 16, closed="both")],
    }
    _engine_constraints_help = 'For deeper trees use backend="xgboost" or "lightgbm".'


    params_help = f"{sorted(BACKEND_PARAMS)} (see NumbaBackend's docstring)"

    @classmethod
    def valid_params(cls):
        """The ``backend_params`` keys this backend accepts: :data:`BACKEND_PARAMS`."""
        return frozenset(BACKEND_PARAMS)

    @classmethod
    def refused_params(cls, params):
        """``{key: reason}`` for keys that name a ranker parameter (the engine has no names of its own)."""
        reasons = {key: why for key, why in RANKER_LEVEL_REASONS.items() if key in params}
        reasons.update(ranker_parameter_reasons(params, cls.ranker_parameters()))
        return reasons

    @classmethod
    def ranker_parameters(cls):
        return {name: name for name in BACKEND_SETTINGS if name not in ("backend_params", "n_estimators")}

    # -- validation --------------------------------------------------------
    def _check_params(self):
        """The settings, then ``backend_params`` (:data:`BACKEND_PARAMS`); returns the latter with defaults."""
        p = {name: default for name, (default, _) in BACKEND_PARAMS.items()}
        p.update(self._check_settings())
        validate_parameter_constraints(
            {name: constraints for name, (_, constraints) in BACKEND_PARAMS.items()}, p,
            caller_name="NumbaBackend backend_params",
        )
        return p

    # -- the loop's hooks (rankkit._backends._base) ----------------------------------
    #: The model is F = S * sum(stored trees) (RunningScale): the loop tracks the scores from zero.
    keeps_sums = False

    def _begin(self, X, eval_X, *, shrink, feature_names, categorical_features):
        """Bin the training and eval rows once and set up the grower.

        ``categorical_features`` must be empty: this engine splits on ordered
        values only (the error names the columns and the alternatives).
        """
        if len(categorical_features):
            columns = [feature_names[j] if feature_names is not None else j for j in categorical_features]
            raise ValueError(
                f"backend='numba' does not split on categorical features, and columns {columns} have "
                "pandas' category dtype. Use backend='xgboost' or backend='lightgbm' (both split on sets "
                "of categories), or encode the columns as numbers first, e.g. "
                "sklearn.preprocessing.OrdinalEncoder (codes split as ordered values) or TargetEncoder "
                "in a Pipeline."
            )
        p = self._check_params()
        X = _check_X(X)
        n, n_features = X.shape
        if n == 0:
            raise ValueError("X has no rows; at least one training row is needed.")
        eval_X = [_check_X(E, f"eval_X[{i}]", n_features) for i, E in enumerate(eval_X)]
        self.n_features_in_ = n_features
        self.feature_names_in_ = None if feature_names is None else np.asarray(feature_names, dtype=object)
        with limit_threads(self.n_jobs):
            edges, edges_ptr = fit_bin_edges(X, min(int(self.max_bin), 255), p["border_type"])
            # One binned copy of each set, in the grower's layout; the grower reorders the training one.
            Xb = transform(X, edges, edges_ptr)
            self._Eb = [transform(E, edges, edges_ptr) for E in eval_X]
            self._grower = TreeGrower(Xb, np.diff(edges_ptr) + 1, edges, edges_ptr, max_depth=self.max_depth,
                                      min_child_weight=self.min_child_weight, reg_lambda=self.reg_lambda,
                                      min_split_gain=p["min_split_gain"], grow_policy=p["grow_policy"])
        self.bin_edges_, self.bin_edges_ptr_ = edges, edges_ptr
        self._p, self._seed = p, seed_from(self.random_state)
        self._u_rows = np.empty(n) if self.subsample < 1 else None
        self._u_cols = np.empty(n_features)
        self._ens = TreeEnsemble(n_features)
        self._scale = RunningScale()  # F = scale.value * sum(stored trees)
        return [n, *(E.shape[1] for E in self._Eb)]

    def _shrink_model(self, factor):
        fold = self._scale.shrink(factor)
        if fold is not None:
            self._ens.rescale_stored(fold)

    def _sample(self, t, grad, hess):
        """``(rows, g, h, features)`` of iteration ``t``'s tree: the sampled rows
        (None: all), the gradients and hessians the grower scores the splits
        with, and the columns."""
        n, n_features = grad.shape[0], self._u_cols.shape[0]
        g_tree, sampled, prob = grad, None, None
        if self._u_rows is not None:
            u_rows = self._u_rows
            sample_uniforms(self._seed, _STREAMS * t, n, u_rows)
            if self._p["sampling"] == "mvs":
                prob = mvs_probabilities(grad, self.subsample)
                sampled = u_rows < prob
                g_tree = grad / prob
            else:
                sampled = u_rows < self.subsample
            if not sampled.any():
                sampled[np.argmin(u_rows)] = True
        if self._p["split_score"] == "gradient":
            h_tree = self._split_hessians(hess, prob)
        else:
            h_tree = hess if prob is None else hess / prob
        # In float32, as XGBoost counts them: 0.29 * 100 is 28.999999999999996 in float64.
        n_cols = max(1, int(np.float32(self.colsample_bytree) * np.float32(n_features)))
        if n_cols < n_features:
            sample_uniforms(self._seed, _STREAMS * t + 1, n_features, self._u_cols)
            feats = np.sort(np.argsort(self._u_cols, kind="stable")[:n_cols]).astype(np.int64)
        else:
            feats = np.arange(n_features, dtype=np.int64)
        return sampled, g_tree, h_tree, feats

    def _split_hessians(self, hess, prob=None):
        """``split_score="gradient"``: each row's weight times the mean hessian
        per unit of weight (over every row), divided by ``prob`` under MVS."""
        w = self._row_weight
        total = float(w.sum()) if w is not None else float(hess.shape[0])
        c = float(hess.sum()) / total if total > 0 else 0.0
        h = np.full(hess.shape[0], c) if w is None else c * w
        if prob is not None:
            h /= prob
        # Constant curvature (gradient leaves): the hessians themselves, bit for bit.
        return hess if np.array_equal(h, hess) else h

    def _grow(self, t, grad, hess):
        n, p, grower = grad.shape[0], self._p, self._grower
        # Extremes, not np.abs: no temporary array per iteration. n times the largest bounds every node's sum.
        largest = max(float(grad.max(initial=0.0)), -float(grad.min(initial=0.0)))
        if largest * n > _GRADIENT_SUM_LIMIT:
            cause = ("Look for a scale that is extreme: labels (QueryRMSE and XE-NDCG fit theirs; divide them by a "
                     "constant), sample weights, or an objective parameter (StochasticRank's gradients grow as "
                     "1 / sigma)." if t == 0 else  # every backend starts from scores 0
                     "The model's scores diverged: lower learning_rate.")
            raise ValueError(
                f"The gradients of iteration {t} reach {largest:.3g}: their sums over {n} rows may pass "
                f"{_GRADIENT_SUM_LIMIT:.0e}, and the split gains square them, too near float64's largest number "
                f"for the trees to be right. {cause}"
            )
        sampled, g_tree, h_tree, feats = self._sample(t, grad, hess)
        noise_sd = 0.0
        hess_total = float(hess.sum()) if p["random_strength"] > 0 else 0.0
        if hess_total > 0:
            # rms(grad) / sqrt(mean hessian) over all training rows (CatBoost: its whole learn
            # fold), times the model-size decay. Dividing by the mean hessian puts the noise on
            # the scale of the score sqrt(G^2 / H): the same for any unit of the loss.
            model_length = t * float(self.learning_rate)
            decay = 1.0 / (1.0 + math.exp(min(model_length - math.log(n), 700.0)))
            noise_sd = p["random_strength"] * math.sqrt(sum_of_squares(grad) / hess_total) * decay
        mvs = self._u_rows is not None and p["sampling"] == "mvs"
        # Leaves from the true hessians when the splits were scored on weights (MVS: from all rows, below).
        leaf_hess = hess if h_tree is not hess and not mvs else None
        nodes = grower.grow(g_tree, h_tree, feats, noise_sd, key(self._seed, _STREAMS * t + 2), sampled, leaf_hess)
        leaf_of_row = _leaves_from_all_rows(nodes, grower, grad, hess, float(self.reg_lambda)) if mvs else None
        nodes["value"] *= float(self.learning_rate)
        raw = np.zeros(n)
        if leaf_of_row is not None:  # the walk is done: each row's leaf value
            raw += nodes["value"][leaf_of_row]
        else:  # the sampled rows sit in their leaves' segments; the others walk the tree
            grower.add_leaf_values(nodes, raw)
            if grower.n_sampled < n:
                add_tree_positions(nodes, grower.X, grower.rows, grower.n_sampled, 1.0, raw)
        self._new_scores = [raw]
        for E in self._Eb:
            self._new_scores.append(np.zeros(E.shape[1]))
            add_tree_binned(nodes, E, 1.0, self._new_scores[-1])
        # Stored as v / S so that S * sum(stored) adds exactly v now.
        nodes["value"] /= self._scale.value
        self._ens.append(nodes, self._scale.value)

    def _tree_scores(self, t):
        return self._new_scores

    def _end(self, scores):
        self.booster_ = self._ens
        for name in ("_Eb", "_grower", "_p", "_seed", "_u_rows", "_u_cols", "_ens", "_scale", "_new_scores"):
            self.__dict__.pop(name, None)

    # -- model -------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "booster_"):
            raise RuntimeError("This NumbaBackend is not fitted yet; call fit first.")

    def predict(self, X, n_iterations=None, *, start_iteration=0):
        """Raw scores (float64) of the model after ``n_iterations`` iterations
        (from ``start_iteration`` on: see :meth:`Backend.predict`)."""
        self._check_fitted()
        X = _check_X(X, n_features=self.n_features_in_)
        n = check_iteration_range(start_iteration, n_iterations, len(self.booster_))
        with limit_threads(self.n_jobs):
            return self.booster_.predict(X, n, start=int(start_iteration))

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

    # -- persistence -------------------------------------------------------------
    def save(self):
        """``(state, files)``: the trees in ``trees.npz`` (NumPy's format, no
        pickle): ``nodes``, every tree's record array of
        :data:`~rankkit._backends._gbm.tree.NODE_DTYPE` concatenated;
        ``tree_ptr``, where each tree starts (``len + 1`` offsets);
        ``scales``, the SGLB scale ``S`` after each iteration. The model after
        ``n`` iterations predicts ``scales[n - 1] * sum_{t < n} tree_t(x)``.

        After SGLB shrinkage below ``1e-150`` (:class:`rankkit._sglb.RunningScale`)
        ``nodes`` and ``scales`` have every fold in them, so that formula holds
        for the whole model, and four more arrays keep the earlier models
        (which the folded early trees, underflowed to 0, no longer hold):
        ``fold_iterations`` and ``fold_factors``, the folds, and
        ``unfolded_values`` and ``unfolded_scales``, the leaf values and
        scales as grown (:class:`~rankkit._backends._gbm.booster.TreeEnsemble`)."""
        self._check_fitted()
        booster = self.booster_
        trees, scales = booster.folded()
        ptr = np.zeros(len(trees) + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([t.shape[0] for t in trees])
        nodes = np.concatenate(trees) if trees else np.zeros(0, dtype=NODE_DTYPE)
        arrays = {"nodes": nodes, "tree_ptr": ptr, "scales": np.asarray(scales, dtype=np.float64)}
        if booster.folds:
            arrays.update(
                fold_iterations=np.array([i for i, _ in booster.folds], dtype=np.int64),
                fold_factors=np.array([f for _, f in booster.folds], dtype=np.float64),
                unfolded_values=np.concatenate([t["value"] for t in booster.trees]).astype(np.float64),
                unfolded_scales=np.asarray(booster.scales, dtype=np.float64))
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        state = {"settings": self._settings(), "n_features": int(self.n_features_in_),
                 "feature_names": self.feature_names_in_}
        return state, {"trees.npz": buffer.getvalue()}

    @classmethod
    def load(cls, state, files):
        """The backend :meth:`save` described."""
        backend = cls(**state["settings"])
        try:
            with np.load(io.BytesIO(files["trees.npz"]), allow_pickle=False) as npz:
                nodes, ptr, scales = npz["nodes"], npz["tree_ptr"], npz["scales"]
                if nodes.dtype != NODE_DTYPE:
                    raise ValueError(f"trees.npz holds nodes of dtype {nodes.dtype}, expected {NODE_DTYPE}.")
                folds = []
                if "fold_iterations" in npz:  # the trees as grown, and the folds (save)
                    nodes = nodes.copy()
                    nodes["value"] = npz["unfolded_values"]
                    scales = npz["unfolded_scales"]
                    folds = [(int(i), float(f)) for i, f in zip(npz["fold_iterations"], npz["fold_factors"])]
        except (KeyError, EOFError, OSError, zipfile.BadZipFile) as error:
            raise ValueError(f"The model file is damaged: its trees.npz cannot be read ({error}).") from None
        except ValueError:  # not numpy's message: it advises unpickling the file
            raise ValueError("The model file is damaged: its trees.npz cannot be read (not a NumPy archive of "
                             "the trees).") from None
        problem = _tree_problem(nodes, ptr, scales, int(state["n_features"]), folds)
        if problem:
            # The prediction kernels index without bounds checks: a bad index reads (or crashes) anywhere.
            raise ValueError(f"The model file is damaged: its trees.npz {problem}.")
        ensemble = TreeEnsemble(int(state["n_features"]))
        for t in range(len(ptr) - 1):
            ensemble.append(nodes[ptr[t]:ptr[t + 1]].copy(), float(scales[t]))
        ensemble.folds = folds
        backend.booster_ = ensemble
        backend.n_features_in_ = int(state["n_features"])
        names = state.get("feature_names")
        backend.feature_names_in_ = None if names is None else np.asarray(names, dtype=object)
        return backend
