"""Scikit-learn rankers: gradient boosting driven by rankkit objectives.

:class:`BaseRanker` holds all the logic (validation, query grouping, SGLB,
early stopping, scoring); each ranker only declares its ``__init__`` and the
objective it optimises (:meth:`BaseRanker._make_objective`).

Training, per boosting iteration ``t`` (0-based), on rows sorted by query:

1. SGLB shrinkage (Ustimenko & Prokhorenkova 2021, Alg. 1), as CatBoost
   defines it: for ``t >= 1`` and ``model_shrink_rate = gamma > 0`` the whole
   model is multiplied by ``c_t = 1 - gamma * learning_rate``
   (``model_shrink_mode="constant"``) or ``c_t = 1 - gamma / t``
   (``"decreasing"``; ``t`` is the 0-based iteration, so the first factor is
   ``1 - gamma``). As in CatBoost, shrinkage is independent of ``langevin``.
2. gradients of the objective at the (shrunk) raw scores; with
   ``langevin=True`` the :class:`~rankkit._objectives.sglb.SGLB` wrapper adds
   ``sqrt(2 / (learning_rate * diffusion_temperature)) * N(0, 1)`` to every
   document's gradient, fresh each iteration;
3. the backend grows a tree and updates the raw scores of the training and
   eval sets; eval metrics (tie-aware, worst-case ties) drive early stopping.

Query ids come from ``qid=`` or a DataFrame column (``qid_col``); rows may be
in any order. ``fit`` and ``score`` request ``qid`` through scikit-learn's
metadata routing by default, so ``GridSearchCV(...).fit(X, y, qid=qid)`` works
once routing is enabled (``sklearn.set_config(enable_metadata_routing=True)``),
and a DataFrame with the query column works with no set-up at all.
"""

from __future__ import annotations

import sys
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._backends import BACKENDS, get_backend
from ._groups import _is_dataframe, make_groups, split_qid_column
from ._metrics._common import parse_metric
from ._random import mix64, seed_from
from ._validation import check_sample_weight

__all__ = [
    "BaseRanker",
    "StochasticRankRanker",
    "YetiRanker",
    "LambdaMARTRanker",
    "XENDCGRanker",
    "QueryRMSERanker",
]

_BOOSTING_PARAMS = {
    "n_estimators": [Interval(Integral, 1, None, closed="left")],
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    "max_depth": [Interval(Integral, 1, None, closed="left")],
    "min_child_weight": [Interval(Real, 0, None, closed="left")],
    "reg_lambda": [Interval(Real, 0, None, closed="left")],
    "subsample": [Interval(Real, 0, 1, closed="right")],
    "colsample_bytree": [Interval(Real, 0, 1, closed="right")],
    "max_bin": [Interval(Integral, 2, None, closed="left")],
    "n_jobs": [Integral, None],
    "random_state": ["random_state"],
    "backend": [StrOptions(set(BACKENDS))],
    "backend_params": [dict, None],
    "langevin": ["boolean"],
    "diffusion_temperature": [Interval(Real, 0, None, closed="neither")],
    "model_shrink_rate": [Interval(Real, 0, None, closed="left")],
    "model_shrink_mode": [StrOptions({"constant", "decreasing"})],
    "eval_metric": [str, None],
    "qid_col": [str, None],
}

_METRIC_PARAMS = {
    "gain": [StrOptions({"exp", "linear"})],
    "relevance_threshold": [Real],
    "err_mapping": [StrOptions({"chapelle"}), None],
    "err_max_label": [Real, None],
}


def _iteration_seed(seed_base, t):
    """Seed of iteration ``t``: a pure function of the fit's seed, so the same
    ``random_state`` gives the same model whatever the thread count."""
    return int(mix64(np.uint64(seed_base) + np.uint64(t + 1))) >> 1


class BaseRanker(BaseEstimator):
    """Base class of rankkit rankers; not meant to be used directly.

    Subclasses define ``__init__`` (storing their objective's parameters and
    the common boosting parameters) and :meth:`_make_objective`.
    """

    _parameter_constraints: dict = dict(_BOOSTING_PARAMS)

    # Metadata routing: fit and score ask for query ids by default, so meta-
    # estimators (GridSearchCV, cross_validate) route ``qid`` with no set-up.
    __metadata_request__fit = {"qid": True}
    __metadata_request__score = {"qid": True}

    #: Objective parameters passed on to the eval metric when the ranker has them.
    _metric_param_names = ("gain", "relevance_threshold", "err_mapping", "err_max_label")

    # -- to implement ---------------------------------------------------------
    def _make_objective(self):
        """The :class:`~rankkit.objectives.RankingObjective` this ranker optimises."""
        raise NotImplementedError

    def _default_metric(self):
        """Metric of ``score`` and early stopping when ``eval_metric`` is None."""
        metric = getattr(self, "metric", None)
        if metric is None:
            return "ndcg@10"
        name, k = parse_metric(metric, getattr(self, "k", None))
        return name if k is None else f"{name}@{k}"

    # -- scikit-learn plumbing -------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "ranker"
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True  # every backend learns where missing values go
        return tags

    # -- query ids -----------------------------------------------------------
    def _split_qid(self, X, qid, *, where="X", qid_name="qid"):
        """``(X without the query column, qid)``; an error when there is none."""
        was_dataframe = _is_dataframe(X)
        X, qid = split_qid_column(X, qid, self.qid_col, required=False)
        return X, self._resolve_qid(qid, X, was_dataframe, where=where, qid_name=qid_name)

    def _resolve_qid(self, qid, X, was_dataframe, *, where="X", qid_name="qid"):
        """The query ids to use, or a clear error when none were given."""
        if qid is not None:
            return qid
        column = (
            f"{where} is a DataFrame without a {self.qid_col!r} column"
            if was_dataframe and self.qid_col is not None
            else f"{where} has no query column"
        )
        raise ValueError(
            f"Missing query ids: {column} and no {qid_name}= was given. A ranker needs one "
            f"query id per row: pass {qid_name}=..., or a DataFrame with a "
            f"{self.qid_col or 'qid'!r} column (qid_col). Inside GridSearchCV / "
            "cross_validate, either use such a DataFrame or enable metadata routing "
            "(sklearn.set_config(enable_metadata_routing=True)) and pass qid= to the "
            "search's fit."
        )

    def _validate_X(self, X, *, reset):
        # NaN is a missing value (every backend learns a default direction per
        # split); infinite values are an error.
        return validate_data(
            self,
            X,
            reset=reset,
            accept_sparse=("csr", "csc"),
            dtype=(np.float64, np.float32),
            ensure_all_finite="allow-nan",
        )

    def _prepare(self, X, y, qid, *, reset, where="X", qid_name="qid", sample_weight=None):
        """Validated arrays sorted by query, plus the :class:`QueryGroups`.

        Features and labels are checked before the query ids, so malformed
        data gets the standard scikit-learn message first.
        """
        was_dataframe = _is_dataframe(X)
        X, qid = split_qid_column(X, qid, self.qid_col, required=False)
        X = self._validate_X(X, reset=reset)
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None: "
                "pass the relevance labels."
            )
        y = self._check_y(y, X.shape[0], where)
        if sample_weight is not None:
            w = check_sample_weight(sample_weight, X.shape[0])
            if not w.any():
                raise ValueError(
                    "sample_weight is zero for every row: at least one weight must be positive."
                )
        qid = self._resolve_qid(qid, X, was_dataframe, where=where, qid_name=qid_name)
        groups = make_groups(qid, X.shape[0], name=qid_name)
        return X, y, groups

    @staticmethod
    def _check_y(y, n_rows, where):
        y = np.asarray(y)
        if y.dtype.kind == "O":
            try:
                y = y.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    "Unknown label type: relevance labels must be numbers (grades such as 0-4, "
                    "or probabilities for ERR)."
                ) from None
        if y.ndim == 0 or y.shape[0] != n_rows:
            raise ValueError(
                f"{where} has {n_rows} rows but {y.size} labels were given: pass one label per row."
            )
        return y

    # -- fit -----------------------------------------------------------------
    def _metric_params(self):
        return {p: getattr(self, p) for p in self._metric_param_names if hasattr(self, p)}

    def _eval_metric(self):
        metric = self.eval_metric if self.eval_metric is not None else self._default_metric()
        name, k = parse_metric(metric)
        return (name if k is None else f"{name}@{k}"), name, k

    def _shrink_schedule(self):
        """``shrink(t)`` -> factor applied before iteration ``t``, or None."""
        rate = float(self.model_shrink_rate)
        if rate == 0.0:
            return None
        if self.model_shrink_mode == "constant":
            factor = 1.0 - rate * float(self.learning_rate)
            if not 0.0 < factor <= 1.0:
                raise ValueError(
                    f"model_shrink_rate * learning_rate must be in [0, 1) for "
                    f"model_shrink_mode='constant', got {rate} * {self.learning_rate}; "
                    "lower model_shrink_rate."
                )
            return lambda t: None if t == 0 else factor
        if rate >= 1.0:
            raise ValueError(
                f"model_shrink_rate must be in [0, 1) for model_shrink_mode='decreasing', "
                f"got {rate}."
            )
        return lambda t: None if t == 0 else 1.0 - rate / t

    def _objective_for_fit(self):
        objective = self._make_objective()
        if self.langevin:
            from ._objectives.sglb import SGLB

            objective = SGLB(
                objective,
                learning_rate=self.learning_rate,
                diffusion_temperature=self.diffusion_temperature,
                random_state=None,
            )
        objective._check_params()
        return objective

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, qid=None, sample_weight=None, eval_set=None, eval_qid=None,
            early_stopping_rounds=None, verbose=False):
        """Fit the ranker.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Features. A DataFrame may carry the query ids in its ``qid_col``
            column, which is then dropped from the features.
        y : array-like of shape (n_samples,)
            Relevance labels (non-negative; probabilities for ERR without
            ``err_mapping``).
        qid : array-like of shape (n_samples,), optional
            Query id of every row (any order). Required unless ``X`` has the
            query column.
        sample_weight : array-like of shape (n_samples,), optional
            Per-row weights multiplying gradients and hessians.
        eval_set : list of (X, y) pairs, optional
            Sets evaluated every iteration with the eval metric; the last one
            drives early stopping.
        eval_qid : list of array-like, optional
            Query ids of each eval set (not needed for DataFrames carrying
            the query column).
        early_stopping_rounds : int, optional
            Stop when the last eval set's metric has not improved for this
            many iterations; the model keeps the best iteration.
        verbose : bool or int
            Print eval metrics every ``verbose`` iterations (``True``: every one).

        Returns
        -------
        self
        """
        X, y, groups = self._prepare(X, y, qid, reset=True, sample_weight=sample_weight)
        objective = self._objective_for_fit()
        # Eval labels first: checking labels may set label-dependent state on
        # the objective (e.g. ERR's r_max), which must come from training labels.
        evals = self._prepare_evals(eval_set, eval_qid, objective)
        y = objective._check_labels(y)
        w = check_sample_weight(sample_weight, X.shape[0])
        X_s = groups.sort(X)
        y_s = np.ascontiguousarray(groups.sort(y))
        w_s = None if w is None else np.ascontiguousarray(groups.sort(w))
        ptr = groups.group_ptr

        metric_label, metric_name, metric_k = self._eval_metric()
        metric_params = self._metric_params()
        if early_stopping_rounds is not None:
            if not evals:
                raise ValueError(
                    "early_stopping_rounds needs an eval_set: pass eval_set=[(X_val, y_val)] "
                    "with eval_qid=[qid_val] (or a DataFrame with the query column)."
                )
            if isinstance(early_stopping_rounds, bool) or not isinstance(early_stopping_rounds, Integral) \
                    or early_stopping_rounds < 1:
                raise ValueError(
                    f"early_stopping_rounds must be a positive int or None, got {early_stopping_rounds!r}."
                )
        if isinstance(verbose, bool):
            period = 1 if verbose else 0
        elif isinstance(verbose, Integral) and verbose >= 0:
            period = int(verbose)
        else:
            raise ValueError(f"verbose must be a bool or a non-negative int, got {verbose!r}.")

        seed_base = seed_from(self.random_state)

        def grad_fn(raw, t):
            grad, hess = objective._gradient_hessian_sorted(y_s, raw, ptr, _iteration_seed(seed_base, t))
            if w_s is not None:
                grad *= w_s
                hess *= w_s
            return grad, hess

        history = {f"validation_{i}": {metric_label: []} for i in range(len(evals))}
        state = {"best": -np.inf, "best_t": None}

        def callback(t, raw_train, raw_evals):
            for i, ((_, ye, gp, _order), raw) in enumerate(zip(evals, raw_evals)):
                value = self._mean_metric(metric_name, metric_k, ye, raw, gp, metric_params)
                history[f"validation_{i}"][metric_label].append(value)
            if period and (t % period == 0 or t == self.n_estimators - 1):
                msg = "\t".join(
                    f"{name}-{metric_label}:{res[metric_label][-1]:.5f}" for name, res in history.items()
                )
                print(f"[{t}]\t{msg}", file=sys.stdout, flush=True)
            if evals:
                last = history[f"validation_{len(evals) - 1}"][metric_label][-1]
                # Strict improvement, like XGBoost: ties keep the earlier (smaller) model.
                if state["best_t"] is None or last > state["best"]:
                    state["best"], state["best_t"] = last, t
                if early_stopping_rounds is not None and t - state["best_t"] >= early_stopping_rounds:
                    return True
            return False

        backend_cls = get_backend(self.backend)
        backend = backend_cls(
            n_estimators=self.n_estimators,
            learning_rate=self.learning_rate,
            max_depth=self.max_depth,
            min_child_weight=self.min_child_weight,
            reg_lambda=self.reg_lambda,
            subsample=self.subsample,
            colsample_bytree=self.colsample_bytree,
            max_bin=self.max_bin,
            n_jobs=self.n_jobs,
            random_state=seed_base % (2**31),
            backend_params=self.backend_params,
        )
        backend.fit(
            X_s,
            grad_fn,
            eval_X=[e[0] for e in evals],
            shrink=self._shrink_schedule(),
            callback=callback if evals else None,
        )
        n_done = len(next(iter(history.values()))[metric_label]) if evals else self.n_estimators
        if evals:
            self.best_iteration_ = int(state["best_t"])
            self.best_score_ = float(state["best"])
            if early_stopping_rounds is not None and self.best_iteration_ + 1 < n_done:
                backend.truncate(self.best_iteration_ + 1)
        else:
            self.best_iteration_ = n_done - 1
            self.best_score_ = None
        self.evals_result_ = history
        self.backend_ = backend
        self.booster_ = getattr(backend, "booster_", None)
        self.objective_ = objective
        self.n_iterations_ = n_done
        if not np.any(backend.feature_importances("split")):
            warnings.warn(
                f"{type(self).__name__} grew no split in {n_done} trees: the model is a constant. "
                f"Either no split gained anything or every split left a child with a hessian sum "
                f"below min_child_weight={self.min_child_weight}. Pairwise and list-wise objectives "
                "have small hessians (LambdaMART's are normalised per query): on small data, lower "
                "min_child_weight (e.g. 1e-3).",
                UserWarning,
                stacklevel=3,  # the caller of fit, above scikit-learn's fit wrapper
            )
        return self

    def _prepare_evals(self, eval_set, eval_qid, objective):
        if eval_set is None:
            if eval_qid is not None:
                raise ValueError("eval_qid was given without eval_set.")
            return []
        if isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(eval_set[0], tuple):
            raise ValueError("eval_set must be a list of (X, y) pairs, e.g. eval_set=[(X_val, y_val)].")
        eval_set = list(eval_set)
        if eval_qid is None:
            eval_qid = [None] * len(eval_set)
        else:
            eval_qid = list(eval_qid)
            if len(eval_qid) != len(eval_set):
                raise ValueError(
                    f"eval_qid has {len(eval_qid)} entries but eval_set has {len(eval_set)}: "
                    "pass one qid array per eval set."
                )
        out = []
        for i, (pair, q) in enumerate(zip(eval_set, eval_qid)):
            if len(pair) != 2:
                raise ValueError(f"eval_set[{i}] must be an (X, y) pair.")
            Xe, ye, ge = self._prepare(
                pair[0], pair[1], q, reset=False, where=f"eval_set[{i}]", qid_name=f"eval_qid[{i}]"
            )
            ye = objective._check_labels(ye)
            out.append((ge.sort(Xe), np.ascontiguousarray(ge.sort(ye)), ge.group_ptr, ge.order))
        return out

    @staticmethod
    def _mean_metric(name, k, y, raw, group_ptr, params):
        from ._metrics._api import evaluate_sorted

        values = evaluate_sorted(name, y, raw, group_ptr, k=k, ties="worst", **params)
        values = values[~np.isnan(values)]
        return float(values.mean()) if values.size else float("nan")

    # -- predict / score -------------------------------------------------------
    def predict(self, X):
        """Raw ranking scores (higher ranks first), in the caller's row order.

        A DataFrame's query column (``qid_col``), if present, is dropped.
        """
        check_is_fitted(self, "backend_")
        if _is_dataframe(X) and self.qid_col is not None and self.qid_col in X.columns:
            X = X.drop(columns=[self.qid_col])
        X = self._validate_X(X, reset=False)
        return self.backend_.predict(X)

    def score(self, X, y, *, qid=None):
        """Mean per-query ranking metric of the predictions.

        The metric is ``eval_metric`` or the ranker's own (``ndcg@10`` for
        rankers without one), with worst-case tie handling: tied documents
        are ordered worst label first, so ties never inflate the score.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame}
        y : array-like of shape (n_samples,)
        qid : array-like of shape (n_samples,), optional
            Query ids, unless ``X`` has the query column.

        Returns
        -------
        float
        """
        check_is_fitted(self, "backend_")
        X, qid = self._split_qid(X, qid)
        scores = self.predict(X)
        groups = make_groups(qid, scores.shape[0])
        y = self.objective_._check_labels(y)
        if y.shape[0] != scores.shape[0]:
            raise ValueError(f"y has {y.shape[0]} entries but X has {scores.shape[0]} rows.")
        _, name, k = self._eval_metric()
        return self._mean_metric(
            name, k, np.ascontiguousarray(groups.sort(y)), np.ascontiguousarray(groups.sort(scores)),
            groups.group_ptr, self._metric_params(),
        )

    @property
    def feature_importances_(self):
        """Normalised total split gain of every feature."""
        check_is_fitted(self, "backend_")
        return self.backend_.feature_importances("gain")


# ---------------------------------------------------------------------------
# The rankers: each declares its parameters and its objective.
# ---------------------------------------------------------------------------

_COMMON_DOC = """
    n_estimators : int, default=100
        Boosting iterations (trees).
    learning_rate : float, default=0.1
        Shrinkage ``eta`` of every tree.
    max_depth : int, default=6
    min_child_weight : float, default=1.0
        Minimum sum of hessians in a leaf.
    reg_lambda : float, default=1.0
        L2 regularisation of leaf values.
    subsample, colsample_bytree : float, default=1.0
        Row and feature subsampling per tree.
    max_bin : int, default=256
        Histogram bins per feature.
    n_jobs : int, optional
        Engine threads (None: the engine's default; -1: all cores).
    random_state : int, RandomState or None
        Seeds everything random (objective sampling, SGLB noise, subsampling).
    backend : {"xgboost", "lightgbm", "numba"}, default="xgboost"
        Boosting engine (``docs/backends.md``: when to choose which).
    backend_params : dict, optional
        Engine-specific parameters, overriding the mapped common ones; a key
        the engine does not know is an error naming it.
    langevin : bool, default=False
        SGLB gradient noise ``sqrt(2 / (learning_rate * diffusion_temperature)) N(0, 1)``
        (Ustimenko & Prokhorenkova 2021).
    diffusion_temperature : float, default=1e4
        SGLB inverse temperature ``beta``.
    model_shrink_rate : float, default=0.0
        SGLB model shrinkage ``gamma`` (applied whenever positive, as in CatBoost).
    model_shrink_mode : {"constant", "decreasing"}, default="constant"
        Factor ``1 - gamma * learning_rate`` or ``1 - gamma / t`` before iteration ``t >= 1``.
    eval_metric : str, optional
        Metric of ``score`` and early stopping, e.g. ``"ndcg@10"``.
    qid_col : str or None, default="qid"
        DataFrame column holding the query ids.
"""


class StochasticRankRanker(BaseRanker):
    __doc__ = f"""Gradient boosting with StochasticRank (Ustimenko & Prokhorenkova 2020).

    Optimises the smoothed ranking metric with coordinate-conditional
    sampling; trees use gradient leaves (hessian 1) as in the paper. Use
    ``langevin=True`` for the global-convergence guarantee (Theorem 5).

    Parameters
    ----------
    metric, k, sigma, mu, nu, sfa, n_estimations, gain, relevance_threshold,
    err_mapping, err_max_label
        See :class:`rankkit.objectives.StochasticRank`.
    {_COMMON_DOC}
    """

    _parameter_constraints = {
        **BaseRanker._parameter_constraints,
        **_METRIC_PARAMS,
        "metric": [str],
        "k": [Interval(Integral, 1, None, closed="left"), None],
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "mu": [Interval(Real, 0, None, closed="left")],
        "nu": [Interval(Real, 0, None, closed="neither")],
        "sfa": ["boolean"],
        "n_estimations": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, metric="ndcg", k=None, *, sigma=1.0, mu=0.0, nu=0.01, sfa=True, n_estimations=1,
                 gain="exp", relevance_threshold=0.0, err_mapping=None, err_max_label=None,
                 n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0, reg_lambda=1.0,
                 subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=None,
                 backend="xgboost", backend_params=None, langevin=False, diffusion_temperature=1e4,
                 model_shrink_rate=0.0, model_shrink_mode="constant", eval_metric=None, qid_col="qid"):
        self.metric = metric
        self.k = k
        self.sigma = sigma
        self.mu = mu
        self.nu = nu
        self.sfa = sfa
        self.n_estimations = n_estimations
        self.gain = gain
        self.relevance_threshold = relevance_threshold
        self.err_mapping = err_mapping
        self.err_max_label = err_max_label
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.max_bin = max_bin
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.backend = backend
        self.backend_params = backend_params
        self.langevin = langevin
        self.diffusion_temperature = diffusion_temperature
        self.model_shrink_rate = model_shrink_rate
        self.model_shrink_mode = model_shrink_mode
        self.eval_metric = eval_metric
        self.qid_col = qid_col

    def _make_objective(self):
        from ._objectives.stochastic_rank import StochasticRank

        return StochasticRank(
            self.metric, self.k, sigma=self.sigma, mu=self.mu, nu=self.nu, sfa=self.sfa,
            n_estimations=self.n_estimations, gain=self.gain, relevance_threshold=self.relevance_threshold,
            err_mapping=self.err_mapping, err_max_label=self.err_max_label, random_state=self.random_state,
        )


class YetiRanker(BaseRanker):
    __doc__ = f"""Gradient boosting with YetiRank (Gulin et al. 2011) or YetiLoss (Lyzhin et al. 2022).

    ``metric="classic"`` is YetiRank (scored with ``ndcg@10``); a metric name
    (``"ndcg"``, ``"mrr@10"``, ...) is YetiLoss for that metric.

    Parameters
    ----------
    metric, k, n_permutations, noise, noise_scale, num_neighbors, decay, gain,
    relevance_threshold, err_mapping, err_max_label
        See :class:`rankkit.objectives.YetiRank`.
    {_COMMON_DOC}
    """

    _parameter_constraints = {
        **BaseRanker._parameter_constraints,
        **_METRIC_PARAMS,
        "metric": [str],
        "k": [Interval(Integral, 1, None, closed="left"), None],
        "n_permutations": [Interval(Integral, 1, None, closed="left")],
        "noise": [str],
        "noise_scale": [Interval(Real, 0, None, closed="left")],
        "num_neighbors": [Interval(Integral, 1, None, closed="left")],
        "decay": [Interval(Real, 0, 1, closed="both")],
    }

    def __init__(self, metric="classic", k=None, *, n_permutations=10, noise="logistic", noise_scale=1.0,
                 num_neighbors=1, decay=0.85, gain="exp", relevance_threshold=0.0, err_mapping=None,
                 err_max_label=None,
                 n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0, reg_lambda=1.0,
                 subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=None,
                 backend="xgboost", backend_params=None, langevin=False, diffusion_temperature=1e4,
                 model_shrink_rate=0.0, model_shrink_mode="constant", eval_metric=None, qid_col="qid"):
        self.metric = metric
        self.k = k
        self.n_permutations = n_permutations
        self.noise = noise
        self.noise_scale = noise_scale
        self.num_neighbors = num_neighbors
        self.decay = decay
        self.gain = gain
        self.relevance_threshold = relevance_threshold
        self.err_mapping = err_mapping
        self.err_max_label = err_max_label
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.max_bin = max_bin
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.backend = backend
        self.backend_params = backend_params
        self.langevin = langevin
        self.diffusion_temperature = diffusion_temperature
        self.model_shrink_rate = model_shrink_rate
        self.model_shrink_mode = model_shrink_mode
        self.eval_metric = eval_metric
        self.qid_col = qid_col

    def _default_metric(self):
        if str(self.metric).lower() == "classic":
            return "ndcg@10"
        return super()._default_metric()

    def _make_objective(self):
        from ._objectives.yetirank import YetiRank

        return YetiRank(
            self.metric, self.k, n_permutations=self.n_permutations, noise=self.noise,
            noise_scale=self.noise_scale, num_neighbors=self.num_neighbors, decay=self.decay,
            gain=self.gain, relevance_threshold=self.relevance_threshold, err_mapping=self.err_mapping,
            err_max_label=self.err_max_label, random_state=self.random_state,
        )


class LambdaMARTRanker(BaseRanker):
    __doc__ = f"""Gradient boosting with LambdaMART (Burges 2010; Wu et al. 2010).

    Pairwise lambda gradients weighted by the metric change of swapping the
    pair, with Newton leaves.

    Parameters
    ----------
    metric, k, sigma, truncation, normalize, gain, relevance_threshold,
    err_mapping, err_max_label
        See :class:`rankkit.objectives.LambdaMART`.
    {_COMMON_DOC}
    """

    _parameter_constraints = {
        **BaseRanker._parameter_constraints,
        **_METRIC_PARAMS,
        "metric": [str],
        "k": [Interval(Integral, 1, None, closed="left"), None],
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "truncation": [Interval(Integral, 1, None, closed="left"), None],
        "normalize": ["boolean"],
    }

    def __init__(self, metric="ndcg", k=None, *, sigma=1.0, truncation=None, normalize=True, gain="exp",
                 relevance_threshold=0.0, err_mapping=None, err_max_label=None,
                 n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0, reg_lambda=1.0,
                 subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=None,
                 backend="xgboost", backend_params=None, langevin=False, diffusion_temperature=1e4,
                 model_shrink_rate=0.0, model_shrink_mode="constant", eval_metric=None, qid_col="qid"):
        self.metric = metric
        self.k = k
        self.sigma = sigma
        self.truncation = truncation
        self.normalize = normalize
        self.gain = gain
        self.relevance_threshold = relevance_threshold
        self.err_mapping = err_mapping
        self.err_max_label = err_max_label
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.max_bin = max_bin
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.backend = backend
        self.backend_params = backend_params
        self.langevin = langevin
        self.diffusion_temperature = diffusion_temperature
        self.model_shrink_rate = model_shrink_rate
        self.model_shrink_mode = model_shrink_mode
        self.eval_metric = eval_metric
        self.qid_col = qid_col

    def _make_objective(self):
        from ._objectives.lambdamart import LambdaMART

        return LambdaMART(
            self.metric, self.k, sigma=self.sigma, truncation=self.truncation, normalize=self.normalize,
            gain=self.gain, relevance_threshold=self.relevance_threshold, err_mapping=self.err_mapping,
            err_max_label=self.err_max_label,
        )


class XENDCGRanker(BaseRanker):
    __doc__ = f"""Gradient boosting with the cross-entropy NDCG surrogate XE-NDCG (Bruch 2019).

    Scored with ``ndcg@10`` unless ``eval_metric`` says otherwise.

    Parameters
    ----------
    {_COMMON_DOC}
    """

    _parameter_constraints = dict(BaseRanker._parameter_constraints)

    def __init__(self, *, n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0,
                 reg_lambda=1.0, subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None,
                 random_state=None, backend="xgboost", backend_params=None, langevin=False,
                 diffusion_temperature=1e4, model_shrink_rate=0.0, model_shrink_mode="constant",
                 eval_metric=None, qid_col="qid"):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.max_bin = max_bin
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.backend = backend
        self.backend_params = backend_params
        self.langevin = langevin
        self.diffusion_temperature = diffusion_temperature
        self.model_shrink_rate = model_shrink_rate
        self.model_shrink_mode = model_shrink_mode
        self.eval_metric = eval_metric
        self.qid_col = qid_col

    def _make_objective(self):
        from ._objectives.xendcg import XENDCG

        return XENDCG(random_state=self.random_state)


class QueryRMSERanker(BaseRanker):
    __doc__ = f"""Gradient boosting with the query-centred squared error QueryRMSE.

    ``L = 1/2 sum_i ((z_i - r_i) - mean_q(z - r))^2`` per query (CatBoost's
    QueryRMSE; a strong baseline in Lyzhin et al. 2022). Scored with
    ``ndcg@10`` unless ``eval_metric`` says otherwise.

    Parameters
    ----------
    {_COMMON_DOC}
    """

    _parameter_constraints = dict(BaseRanker._parameter_constraints)

    def __init__(self, *, n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0,
                 reg_lambda=1.0, subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None,
                 random_state=None, backend="xgboost", backend_params=None, langevin=False,
                 diffusion_temperature=1e4, model_shrink_rate=0.0, model_shrink_mode="constant",
                 eval_metric=None, qid_col="qid"):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.max_bin = max_bin
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.backend = backend
        self.backend_params = backend_params
        self.langevin = langevin
        self.diffusion_temperature = diffusion_temperature
        self.model_shrink_rate = model_shrink_rate
        self.model_shrink_mode = model_shrink_mode
        self.eval_metric = eval_metric
        self.qid_col = qid_col

    def _make_objective(self):
        from ._objectives.query_rmse import QueryRMSE

        return QueryRMSE()
