"""Scikit-learn rankers: gradient boosting driven by rankkit objectives.

Two ways to choose the objective, one implementation (:class:`BaseRanker`):

* **Named rankers** (:class:`StochasticRankRanker`, :class:`YetiRanker`,
  :class:`LambdaMARTRanker`, :class:`XENDCGRanker`, :class:`QueryRMSERanker`)
  take their objective's parameters flat, beside the boosting parameters:
  ``LambdaMARTRanker(metric="ndcg@10", sigma=2.0, max_depth=8)``. That is
  what users of ``XGBRanker``, ``LGBMRanker`` and CatBoost expect, and it is
  the short form of the common case.
* **The generic** :class:`Ranker` takes an objective instance:
  ``Ranker(objective=YetiRank(metric="mrr"))``. Its parameters nest
  (``objective__sigma``), so ``GridSearchCV`` can tune the objective's
  parameters *and the choice of the objective itself*
  (``{"objective": [LambdaMART(), YetiRank()]}``), and any
  :class:`~rankkit.objectives.RankingObjective`, including one written by a
  user, trains without a new class.

Neither form alone would do: a generic ranker only makes every objective
parameter a nested ``objective__x``, which is verbose for the common case
and unlike the other engines; named rankers only cannot search over
objectives. So both exist, and nothing is written twice: each parameter is
declared once by its owner. An objective declares its parameters and their
constraints (``_parameter_constraints``); a named ranker sets
``_objective_class`` and derives from it its constraints, the hand-over to
the objective (every parameter of the objective's name) and its metric for
``score``; the boosting parameters are declared once in
:mod:`rankkit._params`. Only the named rankers' ``__init__`` signatures are
spelled out, so that IDEs and ``help()`` show them; their bodies store the
arguments generically, and a test checks each signature against the
objective's and the boosting declaration.

Training (:meth:`BaseRanker.fit`), per boosting iteration, on rows sorted by
query: SGLB shrinkage of the model when ``model_shrink_rate > 0``, gradients
of the objective at the shrunk scores (plus Langevin noise with
``langevin=True``), a tree, eval metrics and early stopping. The whole SGLB
algorithm is in :mod:`rankkit._sglb`.

Query ids come from ``qid=`` or a DataFrame column (``qid_col``); rows may be
in any order. ``fit`` and ``score`` request ``qid`` through scikit-learn's
metadata routing by default, so ``GridSearchCV(...).fit(X, y, qid=qid)`` works
once routing is enabled (``sklearn.set_config(enable_metadata_routing=True)``),
and a DataFrame with the query column works with no set-up at all.
"""

from __future__ import annotations

import inspect
import sys
import textwrap
import warnings
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from ._backends import get_backend
from ._groups import make_groups, missing_qid_error, split_qid
from ._metrics._api import evaluate_sorted
from ._metrics._common import parse_metric
from ._objectives._base import RankingObjective
from ._objectives.lambdamart import LambdaMART
from ._objectives.query_rmse import QueryRMSE
from ._objectives.stochastic_rank import StochasticRank
from ._objectives.xendcg import XENDCG
from ._objectives.yetirank import YetiRank
from ._params import BACKEND_SETTINGS, BOOSTING_CONSTRAINTS, parameter_docs
from ._random import mix64, seed_from
from ._sglb import SGLB, shrink_schedule
from ._validation import check_sample_weight

def _iteration_seed(seed_base, t):
    """Seed of iteration ``t``: a pure function of the fit's seed, so the same
    ``random_state`` gives the same model whatever the thread count."""
    return int(mix64(np.uint64(seed_base) + np.uint64(t + 1))) >> 1


def _store_arguments(estimator, arguments):
    """``__init__``'s body: store every argument under its own name."""
    for name, value in arguments.items():
        if name != "self":
            setattr(estimator, name, value)


class _QueryData(NamedTuple):
    """Validated rows sorted by query."""

    X: object
    y: np.ndarray
    group_ptr: np.ndarray
    weight: np.ndarray | None
    #: Keys of the queries' random draws (the hashes of their ids' values).
    query_keys: np.ndarray | None = None


class _EvalMonitor:
    """The backend's callback: eval metrics every iteration, progress lines,
    the best iteration and early stopping (strict improvement, like XGBoost:
    ties keep the earlier, smaller model)."""

    def __init__(self, evals, metric, settings, *, early_stopping_rounds, verbose, n_estimators):
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
            self.period = 1 if verbose else 0
        elif isinstance(verbose, Integral) and verbose >= 0:
            self.period = int(verbose)
        else:
            raise ValueError(f"verbose must be a bool or a non-negative int, got {verbose!r}.")
        self.evals = evals
        self.label = metric
        self.settings = settings
        self.early_stopping_rounds = early_stopping_rounds
        self.n_estimators = n_estimators
        self.history = {f"validation_{i}": {metric: []} for i in range(len(evals))}
        self.best_score = -np.inf
        self.best_iteration = None

    def __call__(self, t, raw_train, raw_evals):
        return self.record(t, [_mean_metric(self.label, data.y, raw, data.group_ptr, self.settings)
                               for data, raw in zip(self.evals, raw_evals)])

    def record(self, t, values):
        """Record iteration ``t``'s metric on every eval set; True to stop.
        (The one home of the stopping rule: ``rankkit.dask`` replays it.)"""
        for result, value in zip(self.history.values(), values):
            result[self.label].append(value)
        if self.period and (t % self.period == 0 or t == self.n_estimators - 1):
            msg = "\t".join(f"{name}-{self.label}:{res[self.label][-1]:.5f}" for name, res in self.history.items())
            print(f"[{t}]\t{msg}", file=sys.stdout, flush=True)
        last = self.history[f"validation_{len(self.evals) - 1}"][self.label][-1]
        if self.best_iteration is None or last > self.best_score:
            self.best_score, self.best_iteration = last, t
        return self.early_stopping_rounds is not None and t - self.best_iteration >= self.early_stopping_rounds


def _mean_metric(metric, y, raw, group_ptr, settings):
    """Mean over queries (excluded queries left out) with worst-order ties."""
    total, count = _metric_sum_count(metric, y, raw, group_ptr, settings)
    return total / count if count else float("nan")


def _metric_sum_count(metric, y, raw, group_ptr, settings):
    """``(sum, number)`` of the per-query values of :func:`_mean_metric`: what
    a part of the queries contributes to the mean over all of them."""
    values = evaluate_sorted(metric, y, raw, group_ptr, ties="worst", **settings)
    values = values[~np.isnan(values)]
    return float(values.sum()), int(values.size)


class BaseRanker(BaseEstimator):
    """Base class of rankkit rankers; not meant to be used directly.

    Subclasses define ``__init__`` (storing their arguments) and
    :meth:`_make_objective`.
    """

    _parameter_constraints: dict = dict(BOOSTING_CONSTRAINTS)

    # Metadata routing: fit and score ask for query ids by default, so meta-
    # estimators (GridSearchCV, cross_validate) route ``qid`` with no set-up.
    __metadata_request__fit = {"qid": True}
    __metadata_request__score = {"qid": True}

    # -- to implement ---------------------------------------------------------
    def _make_objective(self):
        """The :class:`~rankkit.objectives.RankingObjective` this ranker optimises."""
        raise NotImplementedError

    # -- scikit-learn plumbing -------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "ranker"
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True  # every backend learns where missing values go
        return tags

    # -- data ------------------------------------------------------------------
    def _default_qid(self, X, n_rows, *, where, qid_name):
        """Query ids of rows that came without any: an error saying how to pass them."""
        raise missing_qid_error(X, self.qid_col, where=where, qid_name=qid_name)

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

    def _prepare(self, X, y, qid, objective, *, reset, sample_weight=None, where="X", qid_name="qid"):
        """Validated rows sorted by query: the one place that resolves query ids
        (``qid=`` or the ``qid_col`` column) for ``fit``, its eval sets and ``score``.

        Features and labels are checked before the query ids, so malformed
        data gets the standard scikit-learn message first.
        """
        X_in = X
        X, qid = split_qid(X, qid, self.qid_col)
        X = self._validate_X(X, reset=reset)
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None: "
                "pass the relevance labels."
            )
        y = objective._check_labels(self._check_y(y, X.shape[0], where))
        w = check_sample_weight(sample_weight, X.shape[0])
        if w is not None and not w.any():
            raise ValueError("sample_weight is zero for every row: at least one weight must be positive.")
        if qid is None:
            qid = self._default_qid(X_in, X.shape[0], where=where, qid_name=qid_name)
        groups = make_groups(qid, X.shape[0], name=qid_name)
        return _QueryData(
            groups.sort(X), np.ascontiguousarray(groups.sort(y)), groups.group_ptr,
            None if w is None else np.ascontiguousarray(groups.sort(w)),
            groups.query_keys if reset else None,  # only training draws random numbers
        )

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

    def _eval_sets(self, eval_set, eval_qid, objective):
        return [
            self._prepare(X, y, q, objective, reset=False, where=f"eval_set[{i}]", qid_name=f"eval_qid[{i}]")
            for i, X, y, q in self._eval_pairs(eval_set, eval_qid)
        ]

    @staticmethod
    def _eval_pairs(eval_set, eval_qid):
        """``(i, X, y, qid)`` of every eval set, after checking ``eval_set``
        and ``eval_qid`` agree (``rankkit.dask`` lays the pairs out its way)."""
        if eval_set is None:
            if eval_qid is not None:
                raise ValueError("eval_qid was given without eval_set.")
            return []
        if isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(eval_set[0], tuple):
            raise ValueError("eval_set must be a list of (X, y) pairs, e.g. eval_set=[(X_val, y_val)].")
        eval_set = list(eval_set)
        eval_qid = [None] * len(eval_set) if eval_qid is None else list(eval_qid)
        if len(eval_qid) != len(eval_set):
            raise ValueError(
                f"eval_qid has {len(eval_qid)} entries but eval_set has {len(eval_set)}: "
                "pass one qid array per eval set."
            )
        out = []
        for i, (pair, q) in enumerate(zip(eval_set, eval_qid)):
            if len(pair) != 2:
                raise ValueError(f"eval_set[{i}] must be an (X, y) pair.")
            out.append((i, pair[0], pair[1], q))
        return out

    # -- fit -----------------------------------------------------------------
    def _objective_for_fit(self):
        """The validated objective, wrapped in SGLB's noise with ``langevin=True``."""
        objective = self._make_objective()
        if self.langevin:
            objective = SGLB(objective, learning_rate=self.learning_rate,
                             diffusion_temperature=self.diffusion_temperature)
        objective._check_params()
        return objective

    def _eval_metric(self, objective):
        """``(metric, settings)`` of ``score`` and early stopping: ``eval_metric``
        or the objective's own metric, with the objective's metric settings."""
        metric = self.eval_metric if self.eval_metric is not None else objective._default_eval_metric()
        name, k = parse_metric(metric)
        return (name if k is None else f"{name}@{k}"), objective._eval_metric_settings()

    def _make_backend(self, seed_base):
        settings = {name: getattr(self, name) for name in BACKEND_SETTINGS}
        settings["random_state"] = seed_base % (2**31)
        return get_backend(self.backend)(**settings)

    @staticmethod
    def _gradient_function(objective, train, seed_base):
        """``grad_fn(raw, t)`` of the backend contract: the objective's
        gradients on the training rows, seeded per iteration, weighted."""

        def grad_fn(raw, t):
            grad, hess = objective._gradient_hessian_sorted(
                train.y, raw, train.group_ptr, _iteration_seed(seed_base, t), train.query_keys
            )
            if train.weight is not None:
                grad *= train.weight
                hess *= train.weight
            return grad, hess

        return grad_fn

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
        objective = self._objective_for_fit()
        train = self._prepare(X, y, qid, objective, reset=True, sample_weight=sample_weight)
        evals = self._eval_sets(eval_set, eval_qid, objective)
        monitor = _EvalMonitor(evals, *self._eval_metric(objective), early_stopping_rounds=early_stopping_rounds,
                               verbose=verbose, n_estimators=self.n_estimators)
        seed_base = seed_from(self.random_state)
        backend = self._make_backend(seed_base)
        backend.fit(
            train.X,
            self._gradient_function(objective, train, seed_base),
            eval_X=[e.X for e in evals],
            shrink=shrink_schedule(self.model_shrink_rate, self.model_shrink_mode, self.learning_rate),
            callback=monitor if evals else None,
        )
        return self._finish(backend, objective, monitor, early_stopping_rounds)

    def _finish(self, backend, objective, monitor, early_stopping_rounds):
        """Fitted attributes; the model cut back to its best iteration after early stopping."""
        if monitor.evals:
            n_done = len(next(iter(monitor.history.values()))[monitor.label])
            self.best_iteration_ = int(monitor.best_iteration)
            self.best_score_ = float(monitor.best_score)
            if early_stopping_rounds is not None and self.best_iteration_ + 1 < n_done:
                backend.truncate(self.best_iteration_ + 1)
        else:
            n_done = self.n_estimators
            self.best_iteration_ = n_done - 1
            self.best_score_ = None
        self.evals_result_ = monitor.history
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

    # -- predict / score -------------------------------------------------------
    def predict(self, X):
        """Raw ranking scores (higher ranks first), in the caller's row order.

        A DataFrame's query column (``qid_col``), if present, is dropped.
        """
        check_is_fitted(self, "backend_")
        X, _ = split_qid(X, None, self.qid_col)
        return self.backend_.predict(self._validate_X(X, reset=False))

    def score(self, X, y, *, qid=None):
        """Mean per-query ranking metric of the predictions.

        The metric is ``eval_metric`` or the ranker's own (``ndcg@10`` for
        rankers without one), with the objective's metric settings and
        worst-case tie handling: tied documents are ordered worst label first,
        so ties never inflate the score.

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
        data = self._prepare(X, y, qid, self.objective_, reset=False)
        metric, settings = self._eval_metric(self.objective_)
        return _mean_metric(metric, data.y, self.backend_.predict(data.X), data.group_ptr, settings)

    @property
    def feature_importances_(self):
        """Normalised total split gain of every feature."""
        check_is_fitted(self, "backend_")
        return self.backend_.feature_importances("gain")


# ---------------------------------------------------------------------------
# The rankers.
# ---------------------------------------------------------------------------
class Ranker(BaseRanker):
    __doc__ = f"""Gradient boosting on any ranking objective.

    ``Ranker(objective=YetiRank(metric="mrr"))`` trains like
    ``YetiRanker(metric="mrr")``. The objective's parameters nest, so
    ``GridSearchCV`` tunes them (``objective__sigma``) and the choice of the
    objective itself (``{{"objective": [LambdaMART(), YetiRank()]}}``).

    The nesting is the ranker's: objectives have ``set_params`` and ``clone``
    but no ``get_params`` (so that ``lightgbm.LGBMRanker(objective=obj)``
    does not pass ``objective__*`` keys to LightGBM; see
    :mod:`rankkit._objectives._base`), and :meth:`get_params` adds the
    objective's parameters as ``objective__<name>`` itself.

    Parameters
    ----------
    objective : RankingObjective or None, default=None
        The objective (``rankkit.objectives``), cloned at ``fit``; None is
        ``LambdaMART()`` (NDCG, as XGBoost's ``rank:ndcg``). Training draws
        its randomness from the ranker's ``random_state``; for Langevin noise
        use ``langevin=True``, not an ``SGLB`` objective.
{parameter_docs()}

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from rankkit import Ranker
    >>> from rankkit.datasets import make_ranking
    >>> from rankkit.objectives import LambdaMART, YetiRank
    >>> df, y, _ = make_ranking(60, as_frame=True, random_state=0)
    >>> search = GridSearchCV(Ranker(n_estimators=10, random_state=0),
    ...                       {{"objective": [LambdaMART(), YetiRank(n_permutations=2)]}}, cv=2)
    >>> search.fit(df, y).best_params_["objective"] in search.param_grid["objective"]
    True
    """

    _parameter_constraints = {"objective": [RankingObjective, None], **BaseRanker._parameter_constraints}

    def __init__(self, objective=None, *, n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0,
                 reg_lambda=1.0, subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None,
                 random_state=None, backend="xgboost", backend_params=None, langevin=False,
                 diffusion_temperature=1e4, model_shrink_rate=0.0, model_shrink_mode="constant",
                 eval_metric=None, qid_col="qid"):
        _store_arguments(self, locals())

    def get_params(self, deep=True):
        """Parameters of this ranker; with ``deep``, also the objective's as
        ``objective__<name>`` (what ``GridSearchCV`` and ``set_params`` use).

        Parameters
        ----------
        deep : bool, default=True

        Returns
        -------
        dict
        """
        params = super().get_params(deep=deep)
        if deep and isinstance(self.objective, RankingObjective):
            params.update((f"objective__{k}", v) for k, v in self.objective._get_params(deep=True).items())
        return params

    def set_params(self, **params):
        """Set parameters, the objective's as ``objective__<name>``
        (``objective=`` given in the same call is set first).

        Returns
        -------
        self
        """
        nested = sorted(k for k in params if k.startswith("objective__"))
        if nested and not isinstance(params.get("objective", self.objective), RankingObjective):
            raise ValueError(
                f"{nested} set parameters of the objective, but objective={self.objective!r}: "
                "pass an objective, e.g. Ranker(objective=LambdaMART()) or set_params(objective=LambdaMART(), ...)."
            )
        return super().set_params(**params)

    def _make_objective(self):
        if self.objective is None:
            return LambdaMART()
        if isinstance(self.objective, SGLB):
            raise ValueError(
                "objective=SGLB(...) is not supported: pass the wrapped objective and langevin=True "
                "(with learning_rate and diffusion_temperature) to add Langevin noise."
            )
        return clone(self.objective)


class _NamedRanker(BaseRanker):
    """A ranker for one objective class, its parameters flat beside the boosting ones.

    A subclass sets ``_objective_class``, writes its ``__init__`` signature
    (the objective's parameters but ``random_state``, then the boosting
    parameters) and a summary docstring; its constraints, the rest of its
    docstring and the hand-over to the objective are derived here.
    """

    _objective_class = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_objective_class" not in cls.__dict__:
            return
        obj = cls._objective_class
        cls._parameter_constraints = {**obj._parameter_constraints, **BOOSTING_CONSTRAINTS}
        names = [p for p in inspect.signature(obj).parameters if p not in BOOSTING_CONSTRAINTS]
        own = ""
        if names:
            own = "\n".join(textwrap.wrap(", ".join(names), 76, initial_indent="    ", subsequent_indent="    "))
            own += f"\n        See :class:`rankkit.objectives.{obj.__name__}`.\n"
        cls.__doc__ = f"{cls.__doc__.rstrip()}\n\n    Parameters\n    ----------\n{own}{parameter_docs()}\n"

    def _make_objective(self):
        cls = self._objective_class
        return cls(**{name: getattr(self, name) for name in cls._get_param_names()})


class StochasticRankRanker(_NamedRanker):
    """Gradient boosting with StochasticRank (Ustimenko & Prokhorenkova 2020).

    Optimises the smoothed ranking metric with coordinate-conditional
    sampling; trees use gradient leaves (hessian 1) as in the paper. Use
    ``langevin=True`` for the global-convergence guarantee (Theorem 5).
    """

    _objective_class = StochasticRank

    def __init__(self, metric="ndcg", k=None, *, sigma=1.0, mu=0.0, nu=0.01, sfa=True, n_estimations=1,
                 gain="exp", relevance_threshold=0.0, err_mapping=None, err_max_label=None,
                 n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0, reg_lambda=1.0,
                 subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=None,
                 backend="xgboost", backend_params=None, langevin=False, diffusion_temperature=1e4,
                 model_shrink_rate=0.0, model_shrink_mode="constant", eval_metric=None, qid_col="qid"):
        _store_arguments(self, locals())


class YetiRanker(_NamedRanker):
    """Gradient boosting with YetiRank (Gulin et al. 2011) or YetiLoss (Lyzhin et al. 2022).

    ``metric="classic"`` is YetiRank (scored with ``ndcg@10``); a metric name
    (``"ndcg"``, ``"mrr@10"``, ...) is YetiLoss for that metric.
    """

    _objective_class = YetiRank

    def __init__(self, metric="classic", k=None, *, n_permutations=10, noise="logistic", noise_scale=1.0,
                 num_neighbors=1, decay=0.85, gain="exp", relevance_threshold=0.0, err_mapping=None,
                 err_max_label=None,
                 n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0, reg_lambda=1.0,
                 subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=None,
                 backend="xgboost", backend_params=None, langevin=False, diffusion_temperature=1e4,
                 model_shrink_rate=0.0, model_shrink_mode="constant", eval_metric=None, qid_col="qid"):
        _store_arguments(self, locals())


class LambdaMARTRanker(_NamedRanker):
    """Gradient boosting with LambdaMART (Burges 2010; Wu et al. 2010).

    Pairwise lambda gradients weighted by the metric change of swapping the
    pair, with Newton leaves.
    """

    _objective_class = LambdaMART

    def __init__(self, metric="ndcg", k=None, *, sigma=1.0, truncation=None, normalize=True, gain="exp",
                 relevance_threshold=0.0, err_mapping=None, err_max_label=None,
                 n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0, reg_lambda=1.0,
                 subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=None,
                 backend="xgboost", backend_params=None, langevin=False, diffusion_temperature=1e4,
                 model_shrink_rate=0.0, model_shrink_mode="constant", eval_metric=None, qid_col="qid"):
        _store_arguments(self, locals())


class XENDCGRanker(_NamedRanker):
    """Gradient boosting with the cross-entropy NDCG surrogate XE-NDCG (Bruch 2019).

    Scored with ``ndcg@10`` unless ``eval_metric`` says otherwise.
    """

    _objective_class = XENDCG

    def __init__(self, *, n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0,
                 reg_lambda=1.0, subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None,
                 random_state=None, backend="xgboost", backend_params=None, langevin=False,
                 diffusion_temperature=1e4, model_shrink_rate=0.0, model_shrink_mode="constant",
                 eval_metric=None, qid_col="qid"):
        _store_arguments(self, locals())


class QueryRMSERanker(_NamedRanker):
    """Gradient boosting with the query-centred squared error QueryRMSE.

    ``L = 1/2 sum_i ((z_i - r_i) - mean_q(z - r))^2`` per query (CatBoost's
    QueryRMSE; a strong baseline in Lyzhin et al. 2022). Scored with
    ``ndcg@10`` unless ``eval_metric`` says otherwise.
    """

    _objective_class = QueryRMSE

    def __init__(self, *, n_estimators=100, learning_rate=0.1, max_depth=6, min_child_weight=1.0,
                 reg_lambda=1.0, subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None,
                 random_state=None, backend="xgboost", backend_params=None, langevin=False,
                 diffusion_temperature=1e4, model_shrink_rate=0.0, model_shrink_mode="constant",
                 eval_metric=None, qid_col="qid"):
        _store_arguments(self, locals())
