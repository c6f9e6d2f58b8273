"""XGBoost backend: trees from rankkit gradients, with exact SGLB shrinkage.

XGBoost grows each tree from the gradients we hand it
(``Booster.boost(dtrain, t, grad=, hess=)``), but it cannot rescale trees it has
already built. SGLB multiplies the whole model by a factor ``c_t`` before
iteration ``t`` (:mod:`rankkit._sglb`), so during training the backend tracks
``F`` beside the booster for the training set and every eval set
(``F_t = c_t F_{t-1} + f_t``, ``f_t`` from ``predict(iteration_range=(t, t+1))``
with ``base_score = 0``): gradients and eval metrics see the shrunk model.
When training ends the factors are folded into the leaf values of the JSON
model (:func:`rankkit._sglb.fold_scales`), so the saved booster predicts that
same ``F`` without rankkit.

Without shrinkage the booster's own prediction cache gives the margins
(incremental, O(n) per iteration), exactly what ``xgboost.train(obj=...)``
feeds a custom objective.

Sparse input: XGBoost reads an entry absent from a sparse matrix as a missing
value, whatever ``missing`` says (``missing`` only concerns stored values).
rankkit's meaning is scikit-learn's, the same on every backend: an absent
entry is 0 and NaN is missing. So XGBoost never sees a sparse matrix: the
training and eval data reach it as dense row blocks (:class:`_DenseBlocks`,
densified one at a time) that it quantises into a ``QuantileDMatrix`` as they
come, and prediction densifies block by block too. Dense input takes the same
blocks (views, no copy), so dense and sparse input give the same model bit
for bit. Memory is XGBoost's quantised matrix plus one block, less than a
``DMatrix`` of the data (``benchmarks/bench_sparse_memory.py``).
``tree_method="approx"`` needs a ``DMatrix``: a sparse ``X`` is then
densified whole (``"exact"``, which reads no bins, is refused: the ranker's
``max_bin`` would not describe its trees).
"""

from __future__ import annotations

import functools
import json
from concurrent.futures import ThreadPoolExecutor
from numbers import Real

import numpy as np
import xgboost
from sklearn.utils._param_validation import Interval

from .._sglb import fold_scales
from .._threads import resolve_n_jobs
from ._base import _FLOAT32_MAX, Backend, check_float32_gradients, check_iteration_range, iter_row_blocks
from ._engine_params import RANKER_LEVEL_REASONS, ranker_parameter_reasons

__all__ = ["XGBoostBackend"]


@functools.lru_cache(maxsize=1)
def _xgboost_parameter_names():
    """Parameter names (with aliases) read from a configured ``hist`` booster.

    ``Booster.save_config()`` lists every parameter the learner, the tree
    booster and its updater were configured with (after one update on two
    rows), under both the canonical
    names and their aliases (``eta``/``learning_rate``, ``lambda``/
    ``reg_lambda``, ...); ``xgboost.get_config()`` adds the global ones
    (``verbosity``, ``nthread``, ...). Reading the engine's own list keeps it
    in step with the installed XGBoost.
    """
    # One thread: listing the names must not start a pool beyond the fit's n_jobs.
    tiny = xgboost.DMatrix(np.zeros((2, 1)), label=np.zeros(2), nthread=1)
    booster = xgboost.Booster({"tree_method": "hist", "nthread": 1}, [tiny])
    booster.update(tiny, 0)  # configures the updater, whose parameters join the config
    config = json.loads(booster.save_config())
    names = set(xgboost.get_config())

    def walk(node):
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value)
            elif isinstance(value, list):  # the updater sequence: one section per updater
                for item in value:
                    if isinstance(item, dict):
                        walk(item)
            else:
                names.add(key)

    walk(config)
    names.discard("name")  # a section's type tag, not a parameter
    return frozenset(names)


#: Parameters of XGBoost's built-in objectives (besides ``lambdarank_*``),
#: which a custom objective leaves unused.
_OWN_OBJECTIVE_PARAMS = frozenset({
    "ndcg_exp_gain", "scale_pos_weight", "huber_slope", "quantile_alpha", "expectile_alpha",
    "tweedie_variance_power", "aft_loss_distribution", "aft_loss_distribution_scale",
})

#: Entries of XGBoost's saved configuration that are not training parameters.
_INTERNAL_CONFIG = {
    "num_feature": "XGBoost sets it from the data",
    "num_trees": "XGBoost's count of the trees grown, not a parameter: use the ranker's n_estimators",
    "specified_updater": "XGBoost's record of the updaters in use: pass 'updater' to choose them",
    "updater_seq": "XGBoost's record of the updaters in use: pass 'updater' to choose them",
}

#: Bytes of one dense float64 block handed to XGBoost.
_BLOCK_BYTES = 64 * 2**20


def _block_rows(X):
    return max(1, _BLOCK_BYTES // (8 * max(1, X.shape[1])))


def check_float32_range(block, *, in_memory=True):
    """XGBoost trains on float32 features: a finite value beyond float32's
    range would be infinite there, which XGBoost refuses with an internal
    error. Say which features and what to do instead (``in_memory``: the
    other backends are an option)."""
    with np.errstate(invalid="ignore"):
        beyond = np.abs(block) > _FLOAT32_MAX
    if beyond.any():
        features = np.flatnonzero(beyond.any(axis=0))
        raise ValueError(
            f"Features {features[:10].tolist()} hold finite values beyond float32's range (|x| > 3.4e38), "
            "and XGBoost trains on float32 features. Rescale them (divide by a constant, or take a log)"
            + (", or use backend='numba' or backend='lightgbm', which keep them as float64." if in_memory
               else ".")
        )


class _DenseBlocks(xgboost.DataIter):
    """``X`` as dense row blocks for a ``QuantileDMatrix`` (see the module docstring).

    XGBoost calls :meth:`next` until it returns False, once per pass over the
    data (it makes two: quantile sketch, then quantisation).
    """

    def __init__(self, X, feature_names, feature_types):
        super().__init__(release_data=True)
        self._X = X
        self._block_rows = _block_rows(X)
        self._meta = {"feature_names": feature_names, "feature_types": feature_types}
        self._blocks = None

    def next(self, input_data):
        if self._blocks is None:
            self._blocks = iter_row_blocks(self._X, self._block_rows)
        block = next(self._blocks, None)
        if block is None:
            return False
        check_float32_range(block[1])
        input_data(data=block[1], **self._meta)
        return True

    def reset(self):
        self._blocks = None


def _data_matrix(X, params, nthread, *, feature_names=None, feature_types=None, ref=None):
    """XGBoost's matrix of ``X``, absent sparse entries as 0 (see the module docstring)."""
    categorical = feature_types is not None
    if params.get("tree_method", "hist") in ("hist", "auto"):
        return xgboost.QuantileDMatrix(
            _DenseBlocks(X, feature_names, feature_types), ref=ref, max_bin=int(params["max_bin"]),
            nthread=nthread, enable_categorical=categorical,
        )
    dense = X.toarray() if hasattr(X, "toarray") else X
    check_float32_range(dense)
    return xgboost.DMatrix(dense, feature_names=feature_names, feature_types=feature_types, nthread=nthread,
                           enable_categorical=categorical)


def _load_booster(model, nthread):
    """``xgboost.Booster`` of the saved ``model`` (bytes), predicting on ``nthread`` threads.

    XGBoost loads a model on its global thread count (every core by
    default), before any ``nthread`` of the booster applies. A global count
    of ``nthread`` cannot be undone (``set_config(nthread=0)`` is ignored and
    setting it calls ``omp_set_num_threads``), so the load runs in a
    short-lived thread of its own, whose settings end with it.
    """
    params = {"nthread": nthread}
    if not nthread:
        return xgboost.Booster(params, model_file=bytearray(model))

    def load():
        with xgboost.config_context(nthread=nthread):
            return xgboost.Booster(params, model_file=bytearray(model))

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(load).result()


#: XGBoost's names (and aliases) of what the ranker's own parameters set.
_RANKER_PARAMETERS = {
    "eta": "learning_rate", "learning_rate": "learning_rate", "max_depth": "max_depth",
    "min_child_weight": "min_child_weight", "lambda": "reg_lambda", "reg_lambda": "reg_lambda",
    "subsample": "subsample", "colsample_bytree": "colsample_bytree", "max_bin": "max_bin",
    "seed": "random_state", "random_state": "random_state", "nthread": "n_jobs", "n_jobs": "n_jobs",
}


class XGBoostBackend(Backend):
    """Trees grown by XGBoost (``tree_method="hist"``) from rankkit gradients.

    Common parameters map to XGBoost's names: ``learning_rate -> eta``,
    ``reg_lambda -> lambda``, ``n_jobs -> nthread``, ``random_state -> seed``.
    ``backend_params`` add XGBoost's other parameters (e.g. ``{"grow_policy":
    "lossguide", "max_leaves": 31}``); one that sets what a ranker parameter
    sets (``eta``, ``max_depth``, ``lambda``, ``nthread``, ...) is an error
    naming the ranker parameter.

    Attributes (after :meth:`fit`)
    ------------------------------
    booster_ : xgboost.Booster
        The model, shrink factors folded in; ``booster_.save_model("m.json")``
        serves it without rankkit (``predict(..., output_margin=True)``).
    params_ : dict
        The parameters handed to XGBoost.
    shrink_factors_ : ndarray of float64
        ``c_t`` applied before iteration ``t`` (1 where no shrinkage).
    """

    name = "xgboost"
    # XGBoost also keeps min_child_weight and reg_lambda in float32.
    _engine_constraints = {**Backend._ENGINE_LEARNING_RATE, **Backend._ENGINE_INT32,
                           **{name: [Interval(Real, 0, _FLOAT32_MAX, closed="both")]
                              for name in ("min_child_weight", "reg_lambda")}}
    _engine_constraints_help = Backend._ENGINE_HELP
    supports_categorical = True

    # XGBoost refuses these in feature names (``DMatrix(feature_names=)``).
    _forbidden_name_chars = "[]<"

    params_help = (
        "XGBoost's booster parameters for tree_method='hist' "
        "(https://xgboost.readthedocs.io/en/stable/parameter.html; "
        "rankkit._backends.get_backend('xgboost').valid_params() lists them)"
    )

    @classmethod
    def valid_params(cls):
        """Every parameter name a ``hist`` tree booster of this XGBoost knows,
        but those the ranker sets itself (:meth:`refused_params`)."""
        return frozenset(k for k in _xgboost_parameter_names() if not cls.refused_params({k: None}))

    @classmethod
    def ranker_parameters(cls):
        return _RANKER_PARAMETERS

    @classmethod
    def refused_params(cls, params):
        """``{key: reason}`` for parameters the ranker sets itself."""
        one_score = "a ranker gives one score per document"
        reasons = {
            **RANKER_LEVEL_REASONS,
            "objective": "the objective is the ranker's (rankkit computes the gradients)",
            "eval_metric": "the ranker evaluates its eval_set itself: use the ranker's eval_metric",
            "base_score": ("the backend starts every model at 0, so that the iteration ranges of predict "
                           "add up to the model"),
            "num_class": one_score, "num_target": one_score,
        }
        out = {k: reasons[k] for k in params if k in reasons}
        for key in params:
            if key.startswith("lambdarank_") or key in _OWN_OBJECTIVE_PARAMS:
                out[key] = ("a parameter of XGBoost's own objectives, which the ranker's objective replaces (it would "
                            "be ignored); set the objective's parameters on the ranker")
            elif key in _INTERNAL_CONFIG:
                out[key] = _INTERNAL_CONFIG[key]
        out.update(ranker_parameter_reasons(params, cls.ranker_parameters()))
        exact = ("tree_method" if params.get("tree_method") == "exact" else
                 "updater" if "grow_colmaker" in str(params.get("updater", "")) else None)
        if exact is not None:
            out[exact] = ("XGBoost's exact greedy builder reads no bins, so the ranker's max_bin would not describe "
                          "the trees; 'hist' (the default) or tree_method='approx' bin by max_bin")
        if params.get("booster") not in (None, "gbtree"):
            out["booster"] = (
                f"backend='xgboost' grows gbtree models only (SGLB folds shrinkage into their "
                f"leaves), got {params['booster']!r}"
            )
        return out

    def _params(self):
        """``params`` of the ``xgboost.Booster``: the checked settings under
        XGBoost's names (``eta``, ``lambda``, ``seed``, ``nthread``), then
        ``backend_params``."""
        backend_params = self._check_settings()
        params = {
            "tree_method": "hist",
            "eta": float(self.learning_rate),
            "max_depth": int(self.max_depth),
            "min_child_weight": float(self.min_child_weight),
            "lambda": float(self.reg_lambda),
            "subsample": float(self.subsample),
            "colsample_bytree": float(self.colsample_bytree),
            "max_bin": int(self.max_bin),
            # A custom objective keeps XGBoost's default base_score of 0.5; the
            # ranking losses are shift-invariant and SGLB folding needs a model
            # that is exactly the sum of its trees, so the margin starts at 0.
            "base_score": 0.0,
            "disable_default_eval_metric": 1,
            "verbosity": 0,
        }
        if self.random_state is not None:
            params["seed"] = int(self.random_state) % (2**31)
        if self.n_jobs is not None:
            params["nthread"] = resolve_n_jobs(self.n_jobs)
        params.update(backend_params)
        return params

    _threads_param = "nthread"

    def set_threads(self, n_jobs):
        super().set_threads(n_jobs)
        if hasattr(self, "booster_"):
            self.booster_.set_param({"nthread": self.params_.get("nthread", 0)})

    @property
    def _nthread(self):
        n = resolve_n_jobs(self.n_jobs)
        return -1 if n is None else n

    # -- the loop's hooks (rankkit._backends._base) ------------------------------------
    def _begin(self, X, eval_X, *, shrink, feature_names, categorical_features):
        """XGBoost's matrices of the training and eval rows and an empty booster.

        ``feature_names`` are stored in the booster (``booster_.feature_names``)
        unless XGBoost refuses them; ``categorical_features`` get feature type
        ``"c"``, split on sets of categories (``max_cat_to_onehot``,
        ``max_cat_threshold`` in ``backend_params``).
        """
        self.params_ = self._params()
        if shrink is not None and int(self.params_.get("num_parallel_tree", 1)) > 1:
            raise ValueError(
                "backend_params={'num_parallel_tree': ...} cannot be combined with SGLB shrinkage "
                "(model_shrink_rate > 0): shrinkage is folded into one tree per iteration. Drop one of them."
            )
        meta = {"feature_names": self._engine_feature_names(feature_names), "feature_types": None}
        if len(categorical_features):
            cats = set(int(j) for j in categorical_features)
            meta["feature_types"] = ["c" if j in cats else "q" for j in range(X.shape[1])]
        self._dtrain = _data_matrix(X, self.params_, self._nthread, **meta)
        self._devals = [_data_matrix(Xe, self.params_, self._nthread, ref=self._dtrain, **meta) for Xe in eval_X]
        self._booster = xgboost.Booster(self.params_, cache=[self._dtrain, *self._devals])
        # Configured now, so that nthread holds from the first boost on: an
        # unconfigured booster takes the first gradients on every core.
        self._booster.save_config()
        return [self._dtrain.num_row(), *(d.num_row() for d in self._devals)]

    def _running_scores(self, n_done, train_only=False):
        # The booster's prediction cache: float32 sums, widened once; O(n).
        train = self._margin(self._booster, self._dtrain, n_done, training=True)
        if train_only:
            return [train]
        return [train, *(self._margin(self._booster, d, n_done) for d in self._devals)]

    def _grow(self, t, grad, hess):
        check_float32_gradients(grad, hess, t, "XGBoost")
        self._booster.boost(self._dtrain, t, grad=grad, hess=hess)

    def _tree_scores(self, t):
        return [self._tree_margin(self._booster, d, t) for d in (self._dtrain, *self._devals)]

    def _end(self, scores):
        booster = self._booster
        del self._booster, self._dtrain, self._devals
        self._keep(booster, scores.factors)

    def _keep(self, booster, factors):
        """Adopt a trained booster and the shrink factors its training applied
        (``factors[t]`` before iteration ``t``): the fitted attributes, with the
        shrinkage folded into the leaves. ``rankkit.dask`` adopts the booster
        ``xgboost.dask.train`` returns the same way."""
        self._unfolded = booster
        self.shrink_factors_ = np.asarray(factors, dtype=np.float64)
        self.n_iterations_ = booster.num_boosted_rounds()
        self.booster_ = self._fold(self.n_iterations_)
        return self

    @staticmethod
    def _margin(booster, dmat, n_trees, training=False):
        if n_trees == 0:
            return np.zeros(dmat.num_row(), dtype=np.float64)
        # Float32 from the prediction cache, widened once; O(n).
        return booster.predict(dmat, output_margin=True, training=training).astype(np.float64)

    @staticmethod
    def _tree_margin(booster, dmat, t):
        return booster.predict(dmat, output_margin=True, iteration_range=(t, t + 1)).astype(np.float64)

    def _fold(self, n_iterations):
        """Booster of the first ``n_iterations`` trees with shrinkage folded in.

        Tree ``t`` is scaled by ``prod_{t < s < n_iterations} c_s``: the
        factors applied to the model after it was grown.
        """
        booster = self._unfolded
        if n_iterations < booster.num_boosted_rounds():
            booster = booster[:n_iterations]
        factors = self.shrink_factors_[:n_iterations]
        if np.all(factors == 1.0):
            return booster
        scale = fold_scales(factors)
        model = json.loads(bytes(booster.save_raw("json")))
        trees = model["learner"]["gradient_booster"]["model"]["trees"]
        if len(trees) != n_iterations:
            raise RuntimeError(
                f"expected one tree per iteration ({n_iterations}), found {len(trees)}; "
                "SGLB shrinkage supports a single-output booster without num_parallel_tree."
            )
        for t, tree in enumerate(trees):
            s = scale[t]
            left = tree["left_children"]
            cond = tree["split_conditions"]
            # A leaf's value lives in split_conditions; base_weights are the
            # node weights (scaled too, so the model stays self-consistent).
            for nid, child in enumerate(left):
                if child == -1:
                    cond[nid] = cond[nid] * s
            tree["base_weights"] = [w * s for w in tree["base_weights"]]
        return _load_booster(json.dumps(model).encode(), self.params_.get("nthread", 0))

    def predict(self, X, n_iterations=None, *, start_iteration=0):
        """Raw scores (float64) of the model after ``n_iterations`` iterations
        (from ``start_iteration`` on: see :meth:`Backend.predict`)."""
        booster = self.booster_
        n = check_iteration_range(start_iteration, n_iterations, self.n_iterations_)
        if n == start_iteration:  # an empty range: no tree
            return np.zeros(X.shape[0], dtype=np.float64)
        if n != self.n_iterations_:
            booster = self._fold(n)
        # The folded booster of n iterations holds each tree with its factor in
        # that model, so a range of its trees is the range's contribution.
        kwargs = {"iteration_range": (int(start_iteration), n)} if start_iteration else {}
        if not hasattr(X, "toarray"):
            return np.asarray(booster.inplace_predict(X, predict_type="margin", **kwargs), dtype=np.float64)
        # Sparse: dense blocks, so that absent entries are 0 here as in training.
        out = np.empty(X.shape[0], dtype=np.float64)
        for a, block in iter_row_blocks(X, _block_rows(X)):
            out[a:a + block.shape[0]] = booster.inplace_predict(block, predict_type="margin", **kwargs)
        return out

    def truncate(self, n_iterations):
        """Keep the model after ``n_iterations`` iterations (shrinkage re-folded)."""
        n_iterations = int(n_iterations)
        if not 1 <= n_iterations <= self._unfolded.num_boosted_rounds():
            raise ValueError(f"n_iterations must be in [1, {self._unfolded.num_boosted_rounds()}].")
        self._unfolded = self._unfolded[:n_iterations]
        self.shrink_factors_ = self.shrink_factors_[:n_iterations]
        self.n_iterations_ = n_iterations
        self.booster_ = self._fold(n_iterations)
        return self

    def feature_importances(self, importance_type="gain", n_features=None):
        """Total split gain per feature, normalised to sum to 1 (zeros if no split)."""
        xgb_type = {"gain": "total_gain", "split": "weight"}.get(importance_type, importance_type)
        scores = self.booster_.get_score(importance_type=xgb_type)
        if n_features is None:
            n_features = int(self.booster_.num_features())
        out = np.zeros(n_features, dtype=np.float64)
        # Keys are the booster's feature names, or "f<index>" without names.
        names = self.booster_.feature_names
        index = {name: j for j, name in enumerate(names)} if names else None
        for name, value in scores.items():
            out[index[name] if index else int(name[1:])] = value
        total = out.sum()
        return out / total if total > 0 else out

    # -- persistence -------------------------------------------------------------
    def save(self):
        """``(state, files)``: the booster as XGBoost's UBJSON (``booster.ubj``),
        plus the booster before SGLB folding (``booster_unfolded.ubj``) when a
        shrink factor was applied, so early-stopped and staged predictions
        refold exactly as before saving."""
        files = {"booster.ubj": bytes(self.booster_.save_raw("ubj"))}
        if np.any(self.shrink_factors_ != 1.0):
            files["booster_unfolded.ubj"] = bytes(self._unfolded.save_raw("ubj"))
        return self._folding_state(), files

    @classmethod
    def load(cls, state, files):
        """The backend :meth:`save` described."""
        backend = cls._from_folding_state(state)
        nthread = backend.params_.get("nthread", 0)
        backend.booster_ = _load_booster(files["booster.ubj"], nthread)
        unfolded = files.get("booster_unfolded.ubj")
        backend._unfolded = backend.booster_ if unfolded is None else _load_booster(unfolded, nthread)
        return backend
