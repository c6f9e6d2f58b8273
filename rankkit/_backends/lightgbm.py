"""LightGBM backend: trees from rankkit gradients, with exact SGLB shrinkage.

LightGBM grows each tree from the gradients we hand it (``Booster.update``
with a callable that returns them: the objective is ``"none"``, so the model
starts at 0 and never boosts from an average) and keeps its own running sums
of the trees for the training rows and every eval set (updated in O(n) per
tree from the binned data, and readable through ``eval_train`` /
``eval_valid``). Like XGBoost it cannot rescale trees it has built, so SGLB
(Ustimenko & Prokhorenkova 2021), which multiplies the whole model by ``c_t``
before iteration ``t``, is tracked beside the booster:

    F_t = c_t F_{t-1} + f_t,    f_t = U_t - U_{t-1},

with ``U_t`` LightGBM's running (unshrunk) sum after ``t`` trees. At the end
the cumulative factors ``prod_{s > t} c_s`` are folded into the leaf values
of the model string, so the saved booster predicts that same ``F`` with plain
LightGBM (``lightgbm.Booster(model_str=...).predict(X, raw_score=True)``).

The factors come from :func:`rankkit._sglb.shrink_factor` and the per-tree
scales ``prod_{s > t} c_s`` from :func:`rankkit._sglb.fold_scales`, as on the
XGBoost backend. An iteration whose tree has no split adds no tree to a
LightGBM model (except the first, kept as a constant 0), so the backend
records which iteration every stored tree came from; truncation and folding
work on iterations.
"""

from __future__ import annotations

import functools
import re

import lightgbm
import numpy as np

from .._sglb import fold_scales
from .._threads import resolve_n_jobs
from ._base import Backend, check_float32_gradients, check_iteration_range
from ._engine_params import RANKER_LEVEL_REASONS, ranker_parameter_reasons

__all__ = ["LightGBMBackend"]

# LightGBM's upper limit for num_leaves.
_MAX_LEAVES = 131072
# The least min_sum_hessian_in_leaf passed. LightGBM starts every hessian sum
# of a split search at 1e-15, so below that a side holding no row passes the
# check and the split fails LightGBM's own assertion (``left_count > 0``);
# 1e-12 is far below the hessian of any leaf holding a document.
_MIN_LEAF_HESSIAN = 1e-12


@functools.lru_cache(maxsize=1)
def _aliases():
    """``{main name: [main name, alias, ...]}`` for every LightGBM parameter.

    LightGBM's Python package reads this table from the library itself
    (``LGBM_DumpParamAliases``), so it always matches the installed version.
    ``_ConfigAliases`` is private (the package's own parameter handling uses
    it; LightGBM has no public equivalent): if a release renames it, this is
    the one place to change.
    """
    from lightgbm.basic import _ConfigAliases

    return {main: list(names) for main, names in _ConfigAliases._get_all_param_aliases().items()}


@functools.lru_cache(maxsize=1)
def _main_names():
    """``{name or alias: main name}``."""
    return {alias: main for main, names in _aliases().items() for alias in names}


def _group(main):
    return set(_aliases().get(main, [main]))


def _resolve_aliases(params):
    """Checked ``backend_params`` with LightGBM's aliases resolved to main names."""
    out = {}
    main_of = _main_names()
    for key, value in params.items():
        main = main_of[key]
        if main in out:
            raise ValueError(
                f"backend_params sets LightGBM's {main!r} twice (through {key!r} and another "
                f"alias of it); keep one of {sorted(k for k in params if main_of[k] == main)}."
            )
        out[main] = value
    return out


#: LightGBM's main names of what the ranker's own parameters set (their aliases too).
_RANKER_PARAMETERS = {
    "learning_rate": "learning_rate", "max_depth": "max_depth", "min_sum_hessian_in_leaf": "min_child_weight",
    "lambda_l2": "reg_lambda", "bagging_fraction": "subsample", "feature_fraction": "colsample_bytree",
    "max_bin": "max_bin", "seed": "random_state", "num_threads": "n_jobs",
}


class LightGBMBackend(Backend):
    """Trees grown by LightGBM (Ke et al. 2017) from rankkit gradients (``backend="lightgbm"``).

    ``LightGBMBackend(**settings)`` takes the common settings of
    :data:`rankkit._params.BOOSTING_PARAMS` like every backend, checked when
    ``fit`` starts. They map to LightGBM's: ``learning_rate``; ``max_depth`` and
    ``num_leaves = 2 ** max_depth`` (at most 131072), so a tree can be the
    full depth-``max_depth`` tree the other backends grow; ``min_child_weight
    -> min_sum_hessian_in_leaf`` (at least 1e-12: with 0 LightGBM fails);
    ``reg_lambda -> lambda_l2``; ``subsample -> bagging_fraction`` with
    ``bagging_freq=1`` when below 1;
    ``colsample_bytree -> feature_fraction``; ``max_bin``; ``n_jobs ->
    num_threads``; ``random_state -> seed``. ``min_data_in_leaf`` is 0, so
    that, as on the other backends, ``min_child_weight`` alone bounds a leaf
    (LightGBM's own default is 20; it counts a leaf's rows by its share of
    the hessian, which rows of weight 0 would change). ``deterministic=True`` with
    ``force_col_wise=True`` makes the trees the same for any ``n_jobs``.

    ``backend_params`` take any LightGBM parameter or alias (aliases are
    resolved to LightGBM's main names), except those the ranker sets itself:
    the mapped parameters above (an error names the ranker parameter to set
    instead; ``num_leaves``, ``min_data_in_leaf`` and ``bagging_freq`` may be
    set, ``bagging_freq`` not to 0 with ``subsample`` below 1), the objective and its ranking
    parameters (``lambdarank_*``, ``label_gain``), the number of iterations,
    eval metrics (``metric``, ``eval_at``), boosting types other than
    ``"gbdt"``, ``bagging_by_query`` (the backend does not see queries) and
    ``linear_tree`` together with SGLB shrinkage, and ``categorical_feature``
    (categorical columns are those of pandas' category dtype).

    Attributes (after :meth:`fit`)
    ------------------------------
    booster_ : lightgbm.Booster
        The model with SGLB shrinkage folded into its leaves;
        ``booster_.save_model("m.txt")`` or ``booster_.model_to_string()``
        serve it without rankkit (``predict(X, raw_score=True)``).
    params_ : dict
        The parameters handed to LightGBM.
    shrink_factors_ : ndarray of float64
        ``c_t`` applied before iteration ``t`` (1 where no shrinkage).
    tree_iterations_ : ndarray of int64
        The iteration each tree of the unfolded model came from.
    n_iterations_ : int
        Iterations run (kept after :meth:`truncate`).
    """

    name = "lightgbm"
    _engine_constraints = {**Backend._ENGINE_LEARNING_RATE, **Backend._ENGINE_INT32}
    _engine_constraints_help = Backend._ENGINE_HELP
    supports_categorical = True

    # LightGBM refuses these in feature names ("special JSON characters"); a
    # line break or an empty name breaks the model text it writes (one name
    # per space-separated field), and a NUL ends the name. It replaces spaces
    # by "_" itself (so "a b" and "a_b" collide).
    _forbidden_name_chars = '",:[]{}\n\r\x00'
    _empty_names_allowed = False

    @staticmethod
    def _stored_name(name):
        return name.replace(" ", "_")

    params_help = (
        "LightGBM's parameters and their aliases "
        "(https://lightgbm.readthedocs.io/en/stable/Parameters.html; "
        "rankkit._backends.get_backend('lightgbm').valid_params() lists them)"
    )

    @classmethod
    def valid_params(cls):
        """Every LightGBM parameter name and alias of the installed LightGBM,
        but those the ranker sets itself (:meth:`refused_params`)."""
        return frozenset(k for k in _main_names() if not cls.refused_params({k: None}))

    @classmethod
    def ranker_parameters(cls):
        return {alias: ranker for main, ranker in _RANKER_PARAMETERS.items() for alias in _group(main)}

    @classmethod
    def refused_params(cls, params):
        """``{key: reason}`` for LightGBM parameters the ranker sets itself."""
        reasons = {}
        refused = [
            (_group("objective"), "the objective is the ranker's (rankkit computes the gradients)"),
            (_group("num_iterations"), "use the ranker's n_estimators"),
            (_group("metric") | _group("eval_at") | _group("metric_freq"),
             "the ranker evaluates its eval_set itself: use the ranker's eval_metric"),
            (_group("label_gain") | _group("objective_seed"),
             "a parameter of LightGBM's own ranking objectives; set the objective's parameters on the ranker"),
            (_group("sigmoid") | _group("is_unbalance") | _group("scale_pos_weight") | _group("boost_from_average")
             | _group("reg_sqrt") | _group("alpha") | _group("fair_c") | _group("poisson_max_delta_step")
             | _group("tweedie_variance_power"),
             "a parameter of LightGBM's own objectives, which the ranker's objective replaces (it would be "
             "ignored); set the objective's parameters on the ranker (LambdaMART's sigma: LambdaMARTRanker(sigma=))"),
            (_group("pos_bagging_fraction") | _group("neg_bagging_fraction"),
             "LightGBM's bagging by class of its binary objective, which the ranker's objective replaces (it would "
             "be ignored); use the ranker's subsample for row bagging"),
            (_group("bagging_by_query"),
             "the backend sees rows, not queries; use subsample for row bagging"),
            (_group("early_stopping_round") | _group("first_metric_only"),
             RANKER_LEVEL_REASONS["early_stopping_rounds"]),
            (_group("max_bin_by_feature"),
             "it overrides the ranker's max_bin feature by feature: set max_bin on the ranker"),
            (_group("bagging_seed") | _group("feature_fraction_seed") | _group("extra_seed")
             | _group("data_random_seed") | _group("drop_seed"),
             "it overrides the ranker's random_state for one kind of draw: set random_state on the ranker"),
            (_group("num_class"), "a ranker gives one score per document"),
            (_group("categorical_feature"),
             "rankkit marks categorical columns itself and codes their values for the engine: give those columns "
             "pandas' category dtype (docs/user_guide.md, section 6)"),
        ]
        reasons.update(ranker_parameter_reasons(params, cls.ranker_parameters()))
        for key, value in params.items():
            for group, why in refused:
                if key in group:
                    reasons[key] = why
            if key.startswith("lambdarank_"):
                reasons[key] = ("a parameter of LightGBM's own lambdarank; "
                                "set the objective's parameters on the ranker")
            if key in _group("boosting") and value not in (None, "gbdt", "gbrt"):
                reasons[key] = (
                    f"backend='lightgbm' grows plain gradient-boosted trees (boosting='gbdt'); "
                    f"{value!r} rescales or averages trees, which SGLB's exact shrinkage cannot follow"
                )
        return reasons

    # -- parameters ----------------------------------------------------------
    def _params(self):
        """``params`` of the ``lightgbm.Booster`` (see the class docstring for the mapping)."""
        backend_params = self._check_settings()
        depth = int(self.max_depth)
        params = {
            "objective": "none",
            "boosting": "gbdt",
            "learning_rate": float(self.learning_rate),
            "max_depth": depth,
            "num_leaves": min(2 ** min(depth, 17), _MAX_LEAVES),
            "min_sum_hessian_in_leaf": max(float(self.min_child_weight), _MIN_LEAF_HESSIAN),
            "min_data_in_leaf": 0,
            "lambda_l2": float(self.reg_lambda),
            "bagging_fraction": float(self.subsample),
            "bagging_freq": 1 if self.subsample < 1 else 0,
            "feature_fraction": float(self.colsample_bytree),
            "max_bin": int(self.max_bin),
            # The ranker computes its eval metrics from the tracked raw scores.
            "metric": "None",
            # A callable objective never boosts from an average; said explicitly
            # because folding SGLB factors needs a model that is just its trees.
            "boost_from_average": False,
            # Column-wise histograms summed in a fixed order: the same trees for
            # any num_threads (row-wise histograms add per-thread partial sums).
            "deterministic": True,
            "force_col_wise": True,
            "verbosity": -1,
        }
        if self.random_state is not None:
            params["seed"] = int(self.random_state) % (2**31)
        if self.n_jobs is not None:
            params["num_threads"] = resolve_n_jobs(self.n_jobs)
        user = _resolve_aliases(backend_params)
        if user.get("force_row_wise"):
            params.pop("force_col_wise")
        params.update(user)
        if self.subsample < 1 and float(params["bagging_freq"]) <= 0:
            raise ValueError(
                f"backend_params sets LightGBM's bagging_freq to {params['bagging_freq']!r}, which turns bagging "
                f"off, so the ranker's subsample={self.subsample!r} would be ignored: drop bagging_freq (the "
                "backend bags every iteration) or set subsample=1.0 on the ranker."
            )
        return params

    _threads_param = "num_threads"

    @property
    def _predict_threads(self):
        return int(self.params_.get("num_threads", 0))

    # -- training ------------------------------------------------------------
    def _begin(self, X, eval_X, *, shrink, feature_names, categorical_features):
        """LightGBM's datasets of the training and eval rows and an empty booster.

        ``feature_names`` name the features of the model
        (``booster_.feature_name()``; LightGBM's own ``Column_<i>`` without
        them or when LightGBM refuses them); ``categorical_features`` are
        LightGBM's ``categorical_feature`` (category codes; ``max_cat_to_onehot``,
        ``cat_smooth``, ``min_data_per_group``, ... in ``backend_params``).
        """
        self.params_ = params = self._params()
        names = self._engine_feature_names(feature_names)
        categorical = [int(j) for j in categorical_features]
        if shrink is not None and params.get("linear_tree"):
            raise ValueError(
                "backend_params={'linear_tree': True} cannot be combined with SGLB shrinkage "
                "(model_shrink_rate > 0): only constant leaves are folded. Drop one of them."
            )
        n = X.shape[0]
        if params["bagging_freq"] > 0 and params["bagging_fraction"] * n < 1:
            # LightGBM bags int(bagging_fraction * n) rows and stops with "Check
            # failed: (num_data) > (0)" when that is 0; like the numba engine,
            # a subsample this small keeps one row.
            params["bagging_fraction"] = min(1.0, 1.5 / n)
        self._sizes = [n] + [E.shape[0] for E in eval_X]
        data_args = {"feature_name": names or "auto", "categorical_feature": categorical or "auto"}
        train = lightgbm.Dataset(X, params=params, free_raw_data=True, **data_args).construct()
        self._booster = None
        # LightGBM drops every feature that is constant on the training rows and,
        # with a callable objective, cannot train without any left (its built-in
        # objectives return a constant model there). Then the model is the
        # constant 0, as on the other backends, and no split is ever grown.
        if any(train.feature_num_bin(j) > 0 for j in range(X.shape[1])):
            self._booster = lightgbm.Booster(params, train)
            for i, E in enumerate(eval_X):
                self._booster.add_valid(lightgbm.Dataset(E, reference=train, params=params), f"eval_{i}")
        self._n_features, self._names = X.shape[1], names
        self._tree_iterations = []
        self._sums = None  # the sums of the last _running_scores, for _tree_scores
        return list(self._sizes)

    def _running_scores(self, n_done, train_only=False):
        sums = _running_sums(self._booster, self._sizes[:1] if train_only else self._sizes)
        if not train_only:
            self._sums = sums
        return sums

    def _grow(self, t, grad, hess):
        booster = self._booster
        if booster is None:
            if t == 0:
                self._tree_iterations.append(t)  # LightGBM's constant first tree
            return
        check_float32_gradients(grad, hess, t, "LightGBM")
        n_trees = booster.num_trees()
        # The objective is "none": LightGBM takes the gradients from this
        # callable (its preds argument, LightGBM's own sums, were the loop's).
        booster.update(fobj=lambda _preds, _dataset: (grad, hess))
        if booster.num_trees() > n_trees:
            self._tree_iterations.append(t)

    def _tree_scores(self, t):
        # LightGBM's running sums U: f_t = U_t - U_{t-1}.
        before, self._sums = self._sums, _running_sums(self._booster, self._sizes)
        return [now - then for now, then in zip(self._sums, before)]

    def _end(self, scores):
        self.shrink_factors_ = np.asarray(scores.factors, dtype=np.float64)
        self.tree_iterations_ = np.asarray(self._tree_iterations, dtype=np.int64)
        self.n_iterations_ = len(scores.factors)
        if self._booster is not None:
            self._unfolded = self._booster.model_to_string(num_iteration=-1)
        else:
            self._unfolded = _constant_model(self._n_features, self._names)
        for name in ("_booster", "_sizes", "_sums", "_tree_iterations", "_n_features", "_names"):
            delattr(self, name)
        self.booster_ = self._fold(self.n_iterations_)

    # -- the model -----------------------------------------------------------
    def _fold(self, n_iterations):
        """Booster of the first ``n_iterations`` iterations, shrinkage folded in.

        The tree of iteration ``t`` is scaled by ``prod_{t < s < n_iterations}
        c_s``: the factors applied to the model after it was grown.
        """
        keep = int(np.searchsorted(self.tree_iterations_, n_iterations))
        model = self._unfolded
        if keep < len(self.tree_iterations_):
            model = lightgbm.Booster(model_str=model).model_to_string(num_iteration=keep)
        factors = self.shrink_factors_[:n_iterations]
        if np.any(factors != 1.0):
            model = _scale_trees(model, fold_scales(factors)[self.tree_iterations_[:keep]])
        return lightgbm.Booster(model_str=model)

    def _check_fitted(self):
        if not hasattr(self, "booster_"):
            raise RuntimeError("This LightGBMBackend is not fitted yet; call fit first.")

    def predict(self, X, n_iterations=None, *, start_iteration=0):
        """Raw scores (float64) of the model after ``n_iterations`` iterations
        (from ``start_iteration`` on: see :meth:`Backend.predict`)."""
        self._check_fitted()
        booster = self.booster_
        n = check_iteration_range(start_iteration, n_iterations, self.n_iterations_)
        # Iterations whose tree had no split stored no tree: count stored trees.
        first, stop = np.searchsorted(self.tree_iterations_, [int(start_iteration), n])
        if stop == first:
            return np.zeros(X.shape[0], dtype=np.float64)
        if n != self.n_iterations_:
            booster = self._fold(n)
        pred = booster.predict(X, raw_score=True, start_iteration=int(first), num_iteration=int(stop - first),
                               num_threads=self._predict_threads)
        return np.asarray(pred, dtype=np.float64)

    def truncate(self, n_iterations):
        """Keep the model after ``n_iterations`` iterations (shrinkage re-folded)."""
        self._check_fitted()
        n_iterations = int(n_iterations)
        if not 1 <= n_iterations <= self.n_iterations_:
            raise ValueError(f"n_iterations must be in [1, {self.n_iterations_}], got {n_iterations}.")
        self.booster_ = self._fold(n_iterations)
        keep = int(np.searchsorted(self.tree_iterations_, n_iterations))
        self._unfolded = lightgbm.Booster(model_str=self._unfolded).model_to_string(num_iteration=keep)
        self.tree_iterations_ = self.tree_iterations_[:keep]
        self.shrink_factors_ = self.shrink_factors_[:n_iterations]
        self.n_iterations_ = n_iterations
        return self

    def feature_importances(self, importance_type="gain"):
        """Total split gain (``"gain"``) or split count (``"split"``) per feature, summing to 1."""
        self._check_fitted()
        if importance_type not in ("gain", "split"):
            raise ValueError(f"importance_type must be 'gain' or 'split', got {importance_type!r}.")
        out = np.asarray(self.booster_.feature_importance(importance_type=importance_type), dtype=np.float64)
        total = out.sum()
        return out / total if total > 0 else out

    # -- persistence -------------------------------------------------------------
    def save(self):
        """``(state, files)``: the model string (``model.txt``, LightGBM's own
        text format), plus the model before SGLB folding
        (``model_unfolded.txt``) when a shrink factor was applied."""
        self._check_fitted()
        files = {"model.txt": self.booster_.model_to_string(num_iteration=-1).encode()}
        if np.any(self.shrink_factors_ != 1.0):
            files["model_unfolded.txt"] = self._unfolded.encode()
        return {**self._folding_state(), "tree_iterations": self.tree_iterations_}, files

    @classmethod
    def load(cls, state, files):
        """The backend :meth:`save` described."""
        backend = cls._from_folding_state(state)
        backend.tree_iterations_ = np.asarray(state["tree_iterations"], dtype=np.int64)
        model = files["model.txt"].decode()
        backend.booster_ = lightgbm.Booster(model_str=model)
        backend._unfolded = files["model_unfolded.txt"].decode() if "model_unfolded.txt" in files else model
        return backend


def _running_sums(booster, sizes):
    """LightGBM's running sums of the trees: training rows, then every eval set.

    ``eval_train`` / ``eval_valid`` hand a custom eval function the booster's
    own score buffers (float64, already summed, O(n) to copy); the metric
    list is empty, so nothing else is computed. No booster: the constant 0.
    """
    if booster is None:
        return [np.zeros(k) for k in sizes]
    out = []

    def grab(preds, _data):
        out.append(np.array(preds, dtype=np.float64))
        return []

    booster.eval_train(feval=grab)
    if len(sizes) > 1:
        booster.eval_valid(feval=grab)
    return out


def _constant_model(n_features, feature_names=None):
    """Text of a LightGBM model over ``n_features`` features that predicts 0.

    LightGBM's own single-leaf first tree: one iteration with zero gradients
    on two rows that differ in one feature (so LightGBM has a feature to
    look at and finds no split worth making).
    """
    X = np.zeros((2, n_features))
    X[1, 0] = 1.0
    params = {"objective": "none", "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 0.0, "verbosity": -1,
              "num_threads": 1}
    data = lightgbm.Dataset(X, params=params, feature_name=feature_names or "auto")
    booster = lightgbm.Booster(params, data)
    booster.update(fobj=lambda preds, _data: (np.zeros(2), np.ones(2)))
    return booster.model_to_string(num_iteration=-1)


_TREE_START = re.compile(r"^Tree=\d+\n", re.MULTILINE)


def _scale_trees(model, scales):
    """LightGBM model string with tree ``i``'s node values multiplied by ``scales[i]``.

    Scales ``leaf_value`` (what prediction sums) and ``internal_value`` (node
    outputs shown by ``dump_model``), written with ``repr`` (shortest string
    that reads back to the same double), and rewrites the header's
    ``tree_sizes`` (byte length of each tree block), which LightGBM uses to
    split the string.
    """
    start = model.index("\nTree=") + 1
    end = model.index("end of trees")
    head, body, tail = model[:start], model[start:end], model[end:]
    starts = [m.start() for m in _TREE_START.finditer(body)] + [len(body)]
    blocks = [body[a:b] for a, b in zip(starts[:-1], starts[1:])]
    if len(blocks) != len(scales):
        raise RuntimeError(f"expected {len(scales)} trees in the LightGBM model, found {len(blocks)}.")
    scaled = []
    for block, s in zip(blocks, scales):
        s = float(s)
        lines = block.split("\n")
        for j, line in enumerate(lines):
            key, sep, values = line.partition("=")
            if sep and key in ("leaf_value", "internal_value") and values:
                lines[j] = f"{key}=" + " ".join(repr(float(v) * s) for v in values.split(" "))
        scaled.append("\n".join(lines))
    sizes = " ".join(str(len(b.encode())) for b in scaled)
    head, n_sub = re.subn(r"^tree_sizes=.*$", f"tree_sizes={sizes}", head, count=1, flags=re.MULTILINE)
    if n_sub != 1:
        raise RuntimeError("LightGBM model string without a tree_sizes line; cannot fold SGLB shrinkage.")
    return head + "".join(scaled) + tail

