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

import functools
import inspect
import textwrap
import warnings

import numpy as np
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from ._backends import get_backend, resolve_backend
from ._backends._engine_params import check_backend_params
from ._categorical import apply_categories, columns_differ, fit_categories
from ._clicks import (
    check_clicks, check_position_bias_params, debiased_metric_settings, debiased_score_labels, split_position,
    sorted_positions, start_click_training,
)
from .callback import CallbackList
from ._groups import make_groups, missing_qid_error, qid_from_group_sizes, split_qid
from ._metrics._api import warn_no_query
from ._objectives._base import RankingObjective
from ._objectives.lambdamart import LambdaMART
from ._objectives.query_rmse import QueryRMSE
from ._objectives.stochastic_rank import StochasticRank
from ._objectives.xendcg import XENDCG
from ._objectives.yetirank import YetiRank
from ._params import BACKEND_SETTINGS, BOOSTING_CONSTRAINTS, parameter_docs, store_arguments
from ._persistence import save_model
from ._random import seed_from
from ._sglb import SGLB, shrink_schedule
from ._threads import limit_threads
from ._training import (
    EvalMonitor,
    GradientPipeline,
    QueryData,
    check_clicks_train_on_grades,
    check_err_metrics_can_map,
    check_err_scale_is_fixed,
    check_metric_settings_read,
    check_y,
    curvature_unit,
    eval_metrics,
    mean_metric,
    pin_err_max_label,
    uses_err_scale,
    weighted_counts,
    why_constant,
)
from ._validation import (check_iteration_range, check_labels, check_sample_weight, constructor_defaults,
                          explains_other_libraries_keywords, first_text, per_eval_set)


def keeps_the_model_on_error(fit):
    """``fit`` that leaves the ranker as it was when it raises: a refit
    refused for its data (a negative label, say) must not leave the previous
    model with this data's columns, categories or feature names, which would
    change its predictions without any error."""
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        before = dict(vars(self))
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            vars(self).clear()
            vars(self).update(before)
            raise
    return wrapper


def is_training_entry(pair, qid, group, position, training):
    """Whether an ``eval_set`` entry ``(X, y)`` with its ``qid``, ``group`` and
    ``position`` is the training data itself (``training``: ``(X, y, qid,
    group, position)`` of ``fit``): the same objects, each of them."""
    return (pair[0] is training[0] and pair[1] is training[1] and qid is training[2] and group is training[3]
            and position is training[4])


class BaseRanker(BaseEstimator):
    """Base class of rankkit rankers; not meant to be used directly.

    Subclasses define ``__init__`` (storing their arguments) and
    :meth:`_make_objective`.
    """

    _parameter_constraints: dict = dict(BOOSTING_CONSTRAINTS)

    # Metadata routing: fit and score ask for query ids by default, so meta-
    # estimators (GridSearchCV, cross_validate) route ``qid`` with no set-up.
    # Positions of click data travel the same way.
    __metadata_request__fit = {"qid": True, "position": True}
    __metadata_request__score = {"qid": True, "position": True}

    #: Fitted attributes of a fit's model and its training record, removed when a refit starts.
    _FIT_STATE = ("backend_", "booster_", "objective_", "evals_result_", "best_iteration_", "best_score_",
                  "n_iterations_", "diffusion_temperature_", "position_bias_")

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

    def _validate_X(self, X, *, reset, where="X"):
        if getattr(X, "columns", None) is not None and X.shape[1] == 0:  # NumPy's message named nothing
            raise ValueError(f"{where} has no feature columns (the query column {self.qid_col!r} is not one): give "
                             "it at least one feature.")
        # Categorical columns become their codes against the training
        # categories (rankkit._categorical, fitted in categories_).
        if reset:
            X, self.categories_ = fit_categories(X, where=where)
        elif not columns_differ(X, getattr(self, "feature_names_in_", None)):
            X = apply_categories(X, getattr(self, "categories_", {}), where=where)
        # Text in an array: a DataFrame's text column is refused (make it categorical); NumPy's
        # conversion would read "3" as the number 3 and fail on other text without naming X.
        values = np.asarray(X, dtype=object) if isinstance(X, (list, tuple)) else X  # lists of rows too
        kind = getattr(getattr(values, "dtype", None), "kind", None)
        if kind in ("U", "S") or kind == "O" and first_text(np.asarray(values)) is not None:
            raise ValueError(
                f"{where} holds text: features must be numbers. Convert them (X.astype(float)), or pass a "
                "DataFrame whose text columns have pandas' category dtype (categorical features)."
            )
        # NaN is a missing value (every backend learns a default direction per
        # split); infinite values are an error. In a sparse matrix an absent
        # entry is 0, as in scikit-learn, on every backend.
        try:
            X = validate_data(
                self,
                X,
                reset=reset,
                accept_sparse=("csr", "csc"),
                dtype=(np.float64, np.float32),
                ensure_all_finite="allow-nan",
            )
        except ValueError as error:
            if where == "X":
                raise
            raise ValueError(f"{where}: {error}") from None  # which eval set
        if issparse(X) and not X.has_canonical_format:
            # Entries stored twice mean their sum (SciPy's rule); LightGBM
            # would read each one as the value.
            X = X.copy()
            X.sum_duplicates()
        return X

    def _prepare(self, X, y, qid, objective, *, reset, sample_weight=None, where="X", qid_name="qid",
                 position=None, position_name="position"):
        """Validated rows sorted by query: the one place that resolves query ids
        (``qid=`` or the ``qid_col`` column) for ``fit``, its eval sets and ``score``.

        Features and labels are checked before the query ids, so malformed
        data gets the standard scikit-learn message first.
        """
        X_in = X
        columns = getattr(X, "columns", None)
        if columns is not None and hasattr(columns, "duplicated") and columns.duplicated().any():
            # pandas allows them; the query column and the features could not be told apart.
            raise ValueError(f"{where} has duplicate column names {sorted(set(columns[columns.duplicated()]))}: "
                             "rename them.")
        X, qid = split_qid(X, qid, self.qid_col, where=where, qid_name=qid_name)
        X, position = split_position(X, position, self.position_bias, self.position_col, name=position_name)
        X = self._validate_X(X, reset=reset, where=where)
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None: "
                "pass the relevance labels."
            )
        y = check_y(y, X.shape[0], where)
        label_name = "y" if where == "X" else f"y of {where}"
        if position is not None:
            # Clicks are checked as clicks; the objective checks the debiased labels (rankkit._clicks).
            y = check_clicks(y, name=label_name)
        elif reset:
            y = objective._check_labels(y)  # the objective's rules on what it trains on
        else:
            # Eval sets and score: the metrics check what they need (an
            # ERR-trained ranker still scores NDCG on labels above its ERR scale).
            y = check_labels(y, name=label_name)
        w = check_sample_weight(sample_weight, X.shape[0], positive=True)
        if qid is None:
            qid = self._default_qid(X_in, X.shape[0], where=where, qid_name=qid_name)
        groups = make_groups(qid, X.shape[0], name=qid_name)
        return QueryData(
            groups.sort(X), np.ascontiguousarray(groups.sort(y)), groups.group_ptr,
            None if w is None else np.ascontiguousarray(groups.sort(w)),
            groups.query_keys if reset else None,  # only training draws random numbers
            None if position is None else sorted_positions(position, groups, X.shape[0], name=position_name),
        )

    def _eval_sets(self, eval_set, eval_qid, eval_group, objective, training, eval_position=None,
                   eval_sample_weight=None, sample_weight=None):
        """``[(name, data)]`` for ``eval_set``: ``"validation_<i>"`` with the
        set's validated rows, or ``("training", None)`` for an entry that is
        the training data itself (the same ``X`` and ``y`` objects with the
        same query ids and positions), evaluated on the training scores
        without predicting anything (LightGBM's rule), weighted by the
        training ``sample_weight``. ``training`` is ``(X, y, qid, group,
        position)`` of ``fit``; ``eval_position`` and ``eval_sample_weight``
        one entry per set, routed as ``eval_qid``."""
        eval_set, per_set = per_eval_set(eval_set, eval_qid=eval_qid, eval_group=eval_group,
                                         eval_position=eval_position, eval_sample_weight=eval_sample_weight)
        out = []
        for i, (pair, q, g, p, w) in enumerate(zip(eval_set, *per_set.values())):
            if len(pair) != 2:
                raise ValueError(f"eval_set[{i}] must be an (X, y) pair.")
            if is_training_entry(pair, q, g, p, training):
                if w is not None and w is not sample_weight:
                    raise ValueError(
                        f"eval_set[{i}] is the training data, which is evaluated with its sample_weight: "
                        f"eval_sample_weight[{i}] must be None or the sample_weight object itself.")
                out.append((EvalMonitor.TRAINING, None))
                continue
            q = self._qid_from_group(pair[0], q, g, where=f"eval_set[{i}]", qid_name=f"eval_qid[{i}]",
                                     group_name=f"eval_group[{i}]")
            out.append((f"validation_{i}", self._prepare(
                pair[0], pair[1], q, objective, reset=False, sample_weight=w, where=f"eval_set[{i}]",
                qid_name=f"eval_qid[{i}]", position=p, position_name=f"eval_position[{i}]",
            )))
        return out

    def _qid_from_group(self, X, qid, group, *, where="X", qid_name="qid", group_name="group"):
        """Per-row query ids from ``group`` sizes, or ``qid`` as given (:func:`rankkit._groups.qid_from_group_sizes`)."""
        return qid_from_group_sizes(X, qid, group, self.qid_col, where=where, qid_name=qid_name, group_name=group_name)

    # -- fit -----------------------------------------------------------------
    def _objective_for_fit(self, fitting=True):
        """The validated objective (``fitting=False``: of a model being loaded,
        trained by an older rankkit that took an objective's own seed)."""
        objective = self._make_objective()
        objective._check_params()
        if self.position_bias is not None and getattr(objective, "gain", "exp") is None:
            # Debiased click labels carry the gains clicks / theta in either form
            # (rankkit._clicks.ipw_labels); in the exp form they are scored with
            # rankkit's default NDCG, as every other ranker's.
            objective.set_params(gain="exp")
        return objective

    def _relabelled(self, sets):
        """Whether the watched eval set (the last but the training data) holds
        clicks debiased by each iteration's propensity estimate."""
        watched = [data for _, data in sets if data is not None]
        if self.position_bias != "estimate" or not watched:
            return False
        last = watched[-1]
        return last.position is not None if hasattr(last, "position") else bool(last.debiased)

    def _eval_metrics(self, objective, max_label=None):
        """``(metrics, settings)`` of ``score``, eval sets and early stopping
        (:func:`rankkit._training.eval_metrics` of ``eval_metric``); at fit,
        with the largest graded training label, checked against them."""
        metrics, settings = eval_metrics(self.eval_metric, objective)
        if max_label is not None and self.position_bias is None:
            check_err_metrics_can_map(metrics, settings, objective, max_label)
        return metrics, settings

    def _engine_name(self):
        """The engine ``backend`` stands for on this data (:func:`rankkit._backends.resolve_backend`)."""
        engine = resolve_backend(self.backend, bool(self.categories_))
        if self.backend == "auto" and engine != "numba" and self.backend_params:
            # backend_params go to that engine: the numba engine's would be refused without a word on why
            # they reach it, and grow_policy='oblivious' would fail in XGBoost's words.
            names = [str(n) for n in getattr(self, "feature_names_in_", range(0))]
            columns = [names[j] if j < len(names) else j for j in sorted(self.categories_)]
            why = (f"backend='auto' trains this data on {engine}, not the numba engine, because it has categorical "
                   f"columns {columns}, and backend_params go to {engine}: set backend= explicitly")
            if self.backend_params.get("grow_policy") == "oblivious":
                raise ValueError(f"backend_params={{'grow_policy': 'oblivious'}} is the numba engine's; {why}.")
            try:
                check_backend_params(get_backend(engine), self.backend_params)
            except ValueError as error:
                raise ValueError(f"{error} ({why}.)") from None
        return engine

    def _backend_settings(self, seed_base, unit=1.0):
        """The backend's settings: the ranker's, with the fit's seed, ``reg_lambda`` and
        ``min_child_weight`` times ``unit`` (:func:`rankkit._training.curvature_unit`)."""
        settings = {name: getattr(self, name) for name in BACKEND_SETTINGS}
        settings.update(random_state=seed_base % (2**31), reg_lambda=self.reg_lambda * unit,
                        min_child_weight=self.min_child_weight * unit)
        return settings

    @_fit_context(prefer_skip_nested_validation=True)
    @explains_other_libraries_keywords
    @keeps_the_model_on_error
    def fit(self, X, y, *, qid=None, group=None, sample_weight=None, eval_set=None, eval_qid=None,
            eval_group=None, eval_sample_weight=None, verbose=False, early_stopping_rounds=None, position=None,
            eval_position=None):
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
            query column or ``group`` is given.
        group : array-like of int, optional
            Query sizes instead of ``qid``, as LightGBM's and XGBoost's
            ``group``: query ``i`` is the next ``group[i]`` rows, so the
            sizes must add up to the number of rows. Not cross-validation
            safe: scikit-learn splits per-row arrays only, so inside
            ``GridSearchCV`` or ``cross_validate`` pass ``qid=``
            (:func:`rankkit.model_selection.qid_from_group` converts sizes).
        sample_weight : array-like of shape (n_samples,), optional
            Per-row weights multiplying gradients and hessians. The query
            units of ``reg_lambda`` and ``min_child_weight`` count queries
            and rows by weight (a query weighs the mean of its rows'
            weights), so a query of weight 0 trains as if it were left out
            and weight 2 as two copies of it, random noise apart (the
            objectives', and the numba engine's split noise, whose decay
            counts every row) and the features' bin edges (which rows of
            weight 0 can still shape).
            So, as in XGBoost and LightGBM, weights all
            ``c`` train as ``c`` copies of the data: ``c`` times the evidence
            against the same ``reg_lambda`` and ``min_child_weight``, not the
            model of weights 1.
        eval_set : list of (X, y) pairs, optional
            Sets evaluated every iteration with every ``eval_metric``
            (``evals_result_``); the last one that is not the training data
            drives early stopping. An entry that is the training data itself
            (the same ``X`` and ``y`` objects, the same ``qid``/``group``) is
            recorded as ``"training"`` from the training scores; the others
            as ``"validation_<i>"`` (``i``: position in ``eval_set``).
        eval_qid : list of array-like, optional
            Query ids of each eval set (not needed for DataFrames carrying
            the query column).
        eval_group : list of array-like, optional
            Query sizes of each eval set, instead of ``eval_qid``.
        eval_sample_weight : list of array-like (or None), optional
            Row weights of each eval set (LightGBM's name), one entry per
            ``eval_set`` entry as ``eval_qid``: its metrics (``evals_result_``,
            early stopping, ``best_score_``) are then query-weighted means,
            as :meth:`score` with ``sample_weight``. The training data's
            entry is weighted by ``sample_weight`` (give None or that array).
        verbose : bool or int, default=False
            Print a line every ``verbose`` iterations (``True``: every one),
            and at the last one, with the training data's metrics and every
            eval set's, in XGBoost's format
            (``[10]\ttraining-ndcg@10:0.81234\tvalidation_0-ndcg@10:0.71234``),
            then a final line (``stopped at iteration N by early stopping,
            best iteration M, best validation_0-ndcg@10 X`` or ``trained N
            iterations``). The training metrics are computed only on the
            printed iterations.
        early_stopping_rounds : int, optional
            Deprecated: set ``early_stopping_rounds`` on the ranker, as in
            XGBoost 3. Given here, it overrides the ranker's value (with a
            ``FutureWarning``).
        position : array-like of int, shape (n_samples,), optional
            Click data (``y``: clicks) with ``position_bias`` set: the 1-based
            rank each row was shown at, once per query group (user guide, "Learning from clicks").
        eval_position : list of array-like (or None), optional
            Positions of click eval sets, one entry per ``eval_set`` entry as
            ``eval_qid``: for a set whose ``y`` are clicks, the rank each row
            was shown at; its metrics (``evals_result_``, early stopping)
            are then computed on the debiased labels (the IPW gains at the
            current propensities, as :meth:`score` with ``position=``). None
            for a set of graded labels (or a DataFrame carrying the
            ``position_col`` column). Needs ``position_bias`` set.

        Returns
        -------
        self
        """
        # The previous fit's model and its training record go first: the callbacks see this fit's
        # state as it grows (EvalMonitor.record), and no model until it is finished (predict would
        # otherwise give the previous model's scores). A fit that raises restores them.
        for name in self._FIT_STATE:
            vars(self).pop(name, None)
        check_position_bias_params(self)  # before the columns are read
        objective = self._objective_for_fit()
        check_clicks_train_on_grades(self.position_bias, objective)
        train, sets, clicks = self._training_data(objective, (X, y, qid, group, position), sample_weight,
                                                  (eval_set, eval_qid, eval_group, eval_position, eval_sample_weight))
        metrics, settings = self._eval_metrics(objective, np.max(train.y, initial=0.0))
        check_err_scale_is_fixed(self.position_bias, objective, metrics)
        check_metric_settings_read(self, objective, metrics, settings)
        debiased = {} if self.position_bias is None else {
            name: debiased_metric_settings(settings, objective)
            for name, data in [*sets, (EvalMonitor.TRAINING, None)] if data is None or data.position is not None}
        monitor = EvalMonitor(self, train, sets, metrics, settings, set_settings=debiased,
                               early_stopping_rounds=self._early_stopping_rounds(early_stopping_rounds),
                               verbose=verbose, callbacks=CallbackList(self.callbacks),
                               relabelled=self._relabelled(sets))
        seed_base = seed_from(self.random_state)
        with limit_threads(self.n_jobs):  # "auto" diffusion_temperature runs the first gradients here
            grad_fn, self.diffusion_temperature_ = self._gradient_pipeline(objective, seed_base).build(
                train, labels=clicks)
        unit = curvature_unit(objective, *weighted_counts(train.group_ptr, train.weight))
        backend = get_backend(self._engine_name())(**self._backend_settings(seed_base, unit))
        if clicks is not None:
            grad_fn = clicks.wrap(grad_fn)
        monitor.before_training(self)
        backend.fit(
            train.X,
            grad_fn,
            eval_X=monitor.eval_X,
            shrink=shrink_schedule(self.model_shrink_rate, self.model_shrink_mode, self.learning_rate),
            callback=monitor if monitor.active else None,
            feature_names=getattr(self, "feature_names_in_", None),
            categorical_features=sorted(self.categories_),
            row_weight=train.weight,
        )
        self._finish(backend, objective, monitor, train, grad_fn)
        monitor.after_training(self)
        return self

    def _gradient_pipeline(self, objective, seed_base):
        """The fit's :class:`~rankkit._training.GradientPipeline`."""
        return GradientPipeline(objective, seed_base, langevin=self.langevin,
                                diffusion_temperature=self.diffusion_temperature, learning_rate=self.learning_rate)

    def _training_data(self, objective, training, sample_weight, evals):
        """``(train, sets, clicks)``: the training rows (``training``: ``X, y,
        qid, group, position`` of ``fit``), the eval sets (``evals``:
        ``eval_set, eval_qid, eval_group, eval_position, eval_sample_weight``), and the debiased
        click labels (:class:`rankkit._clicks.ClickLabels`, from
        :func:`rankkit._clicks.start_click_training`; None without
        ``position_bias``). ERR's ``err_max_label`` left to the data becomes
        the largest training label, debiased with known propensities
        (:func:`rankkit._training.pin_err_max_label`)."""
        X, y, qid, group, position = training
        qid = self._qid_from_group(X, qid, group)
        train = self._prepare(X, y, qid, objective, reset=True, sample_weight=sample_weight, position=position)
        eval_set, eval_qid, eval_group, eval_position, eval_sample_weight = evals
        sets = self._eval_sets(eval_set, eval_qid, eval_group, objective, training, eval_position,
                               eval_sample_weight, sample_weight)
        train, sets, clicks = start_click_training(self, objective, train, sets)
        # Known propensities: the debiased labels, and their top, are fixed (pinned where ERR reads them).
        if self.position_bias is None or (self.position_bias == "known"
                                          and uses_err_scale(objective, eval_metrics(self.eval_metric, objective)[0])):
            pin_err_max_label(objective, np.max(train.y, initial=-np.inf),
                              [(name, np.max(data.y, initial=-np.inf)) for name, data in sets if data is not None],
                              debiased=self.position_bias is not None)
        return train, sets, clicks

    def _early_stopping_rounds(self, fit_value):
        """The constructor's ``early_stopping_rounds``, or the deprecated ``fit`` argument."""
        if fit_value is None:
            return self.early_stopping_rounds
        warnings.warn(
            "fit(early_stopping_rounds=...) is deprecated and will be removed: set it on the ranker, "
            f"{type(self).__name__}(early_stopping_rounds={fit_value!r}), as in XGBoost 3. Until then "
            "the fit argument overrides the ranker's value.",
            FutureWarning,
            stacklevel=6,  # the caller of fit, above its two decorators and scikit-learn's fit wrapper
        )
        return fit_value

    def _why_constant(self, train, grad_fn, objective):
        """The cause of a model without any split (:func:`rankkit._training.why_constant`)."""
        return why_constant(train, grad_fn, objective, self.min_child_weight, self.backend_params, self.subsample)

    def _finish(self, backend, objective, monitor, train, grad_fn):
        """Fitted attributes; the model cut back to its best iteration after early stopping."""
        n_done = self.n_estimators if monitor.n_done is None else monitor.n_done
        if monitor.watch is not None:
            self.best_iteration_ = int(monitor.best_iteration)
            if monitor.early_stopping_rounds is not None and self.best_iteration_ + 1 < n_done:
                backend.truncate(self.best_iteration_ + 1)
                monitor.keep_best(self)  # position_bias_ (and best_score) of the kept model
            self.best_score_ = float(monitor.best_score)
        else:
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
                + self._why_constant(train, grad_fn, objective),
                UserWarning,
                stacklevel=6,  # the caller of fit, above its two decorators and scikit-learn's fit wrapper
            )
        return self

    # -- predict / score -------------------------------------------------------
    def predict(self, X, iteration_range=None):
        """Raw ranking scores (higher ranks first), in the caller's row order.

        A DataFrame's query column (``qid_col``), if present, is dropped, and
        so is its ``position_col`` column when ``position_bias`` is set.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame}
        iteration_range : (int, int) or None, default=None
            ``(start, end)``: the contribution of iterations ``start`` to
            ``end - 1`` (0-based) to the model as it was after ``end``
            iterations. With SGLB shrinkage (``model_shrink_rate > 0``) the
            tree of iteration ``t`` counts with the factor it had then,
            ``prod_{t < s < end} c_s``, so ``(0, end)`` is exactly the model
            after ``end`` iterations, and ``(start, end)`` is that model minus
            ``prod_{start <= s < end} c_s`` times the model after ``start``
            iterations; without shrinkage it is the plain sum of those trees,
            as XGBoost's ``iteration_range``. None: the whole model, which
            after early stopping is the model of ``best_iteration_`` (it was
            cut back to ``best_iteration_ + 1`` iterations, so ``end`` cannot
            go beyond that).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "backend_")
        X, _ = split_qid(X, None, self.qid_col)
        X, _ = split_position(X, None, self.position_bias, self.position_col)
        X = self._validate_X(X, reset=False)
        self._predict_threads()
        if iteration_range is None:
            return self.backend_.predict(X)
        start, end = self._check_iteration_range(iteration_range)
        return self.backend_.predict(X, end, start_iteration=start)

    def _predict_threads(self):
        """The backend predicts with the ranker's ``n_jobs``, also when it
        changed after ``fit`` (``set_params(n_jobs=1)`` to serve a model
        trained on every core)."""
        if self.backend_.n_jobs != self.n_jobs:
            self.backend_.set_threads(self.n_jobs)

    def _check_iteration_range(self, iteration_range):
        """``(start, end)`` with ``0 <= start < end <=`` the iterations the model kept."""
        return check_iteration_range(iteration_range, int(self.backend_.n_iterations_), self.n_iterations_)

    def score(self, X, y, *, qid=None, group=None, sample_weight=None, position=None):
        """Mean per-query ranking metric of the predictions.

        The metric is the first ``eval_metric``, by default ``ndcg@10`` for
        every ranker (so ``scoring=None`` compares rankers on one metric),
        with the objective's metric settings (gain, ...; one left at None,
        as StochasticRank's ``gain=None``, keeps the metric's default) and worst-case tie
        handling: tied documents are ordered worst label first, so ties never
        inflate the score.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame}
        y : array-like of shape (n_samples,)
        qid : array-like of shape (n_samples,), optional
            Query ids, unless ``X`` has the query column or ``group`` is given.
        group : array-like of int, optional
            Query sizes instead of ``qid``, as in :meth:`fit` (consecutive
            rows; not cross-validation safe).
        sample_weight : array-like of shape (n_samples,), optional
            Row weights. Ranking metrics are per query, so the mean is
            weighted by query: a query weighs the mean of its rows' weights
            (as LightGBM's query weights),
            ``sum_q w_q m_q / sum_q w_q``; a constant weight within each
            query is that query's weight. Not requested through metadata
            routing by default (``set_score_request(sample_weight=True)``).
        position : array-like of int, optional
            With click labels (and ``position_bias`` set): the rank each row
            was shown at; the metric is then computed on the debiased labels
            (IPW gains at ``position_bias_``), an unbiased estimate for
            metrics linear in the gains (DCG). Without it, ``y`` are graded
            labels and the metric is the usual one.

        Returns
        -------
        float
        """
        check_is_fitted(self, "backend_")
        qid = self._qid_from_group(X, qid, group)
        data = self._prepare(X, y, qid, self.objective_, reset=False, sample_weight=sample_weight, position=position)
        metrics, settings = self._eval_metrics(self.objective_)
        if data.position is not None:  # the metric checks the debiased labels, as any labels of score
            data = data._replace(y=debiased_score_labels(self, self.objective_, data.y, data.position))
            settings = debiased_metric_settings(settings, self.objective_)
        pinned = settings.get("err_max_label")
        if (pinned is not None and getattr(self, "err_max_label", 0) is None
                and metrics[0].split("@")[0] in ("err", "pfound") and data.y.size and data.y.max() > pinned):
            # The metric's own message would name an err_max_label the user never passed.
            label = "label" if data.position is None else "debiased label (clicks at position_bias_)"
            raise ValueError(
                f"This ranker maps ERR labels by its largest training {label}, {pinned:g} (err_max_label=None), "
                f"and y has the {label} {data.y.max():g}: refit with err_max_label set to the top of your label "
                f"scale (err_max_label={data.y.max():g} or more)."
            )
        self._predict_threads()
        with limit_threads(self.n_jobs):
            raw = self.backend_.predict(data.X)
            try:
                score = mean_metric(metrics[0], data.y, raw, data.group_ptr, settings, weight=data.weight)
            except ValueError as error:
                if data.position is None:
                    raise
                raise ValueError(f"With position=, score computes {metrics[0]} on the debiased click labels, each "
                                 f"click's gain at 1 / propensity (the largest here {data.y.max():g}), not on the "
                                 f"clicks: {error}") from None
        if np.isnan(score):  # as the metric functions and the scorers do
            warn_no_query("score", weighted=True)
        return score

    def save_model(self, path):
        """Save the fitted ranker to one file, read back by :func:`rankkit.load_model`.

        The file (format ``rankkit-model``, ``docs/persistence.md``) is a ZIP
        archive of a JSON header (parameters, fitted attributes, feature
        names, categories) and the engine's own model (XGBoost UBJSON,
        LightGBM text, the numba engine's trees as NumPy arrays), servable
        without rankkit. No pickle: loading runs no code from the file.

        Parameters
        ----------
        path : str, path-like or binary file object
        """
        save_model(self, path)

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
        its randomness from the ranker's ``random_state`` (an objective's own
        ``random_state`` is an error); for Langevin noise use
        ``langevin=True``, not an ``SGLB`` objective.
{parameter_docs()}

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from rankkit import Ranker
    >>> from rankkit.datasets import make_ranking
    >>> from rankkit.model_selection import QueryKFold
    >>> from rankkit.objectives import LambdaMART, YetiRank
    >>> df, y, _ = make_ranking(60, as_frame=True, random_state=0)
    >>> search = GridSearchCV(Ranker(n_estimators=10, random_state=0),
    ...                       {{"objective": [LambdaMART(), YetiRank(n_permutations=2)]}}, cv=QueryKFold(n_splits=2))
    >>> search.fit(df, y).best_params_["objective"] in search.param_grid["objective"]
    True
    """

    _parameter_constraints = {"objective": [RankingObjective, None], **BaseRanker._parameter_constraints}

    def __init__(self, objective=None, *, n_estimators=300, learning_rate=0.05, max_depth=6, min_child_weight=1.0,
                 reg_lambda=3.0, subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None,
                 random_state=0, backend="auto", backend_params=None, langevin=False,
                 diffusion_temperature="auto", model_shrink_rate=0.0, model_shrink_mode="constant",
                 eval_metric=None, early_stopping_rounds=None, callbacks=None, qid_col="qid", position_bias=None,
                 propensities=None, propensity_estimator="em", position_bias_norm=1.0, position_col="position"):
        store_arguments(self, locals())

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
        objective = params.get("objective", self.objective)
        if nested and not isinstance(objective, RankingObjective):
            raise ValueError(
                f"{nested} set parameters of the objective, but objective={objective!r}: "
                "pass an objective, e.g. Ranker(objective=LambdaMART()) or set_params(objective=LambdaMART(), ...)."
            )
        return super().set_params(**params)

    def _objective_for_fit(self, fitting=True):
        seed = getattr(self.objective, "random_state", None)
        default = constructor_defaults(type(self.objective)).get("random_state") if self.objective is not None else None
        if fitting and seed is not default and seed != default:
            # Training draws from the ranker's random_state; the objective's would be ignored.
            raise ValueError(
                f"Ranker: the objective's random_state={seed!r} is not used: training draws its randomness from "
                f"the ranker's random_state. Pass Ranker(objective={type(self.objective).__name__}(...), "
                f"random_state={seed!r}) and leave the objective's random_state at its default ({default!r})."
            )
        return super()._objective_for_fit(fitting)

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

    def __init__(self, metric="ndcg", k="auto", *, sigma=1.0, mu=0.1, nu=0.01, sfa=True, n_estimations=1,
                 gain="exp", relevance_threshold=0.0, err_mapping=None, err_max_label=None,
                 n_estimators=300, learning_rate=0.05, max_depth=6, min_child_weight=1.0, reg_lambda=3.0,
                 subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=0,
                 backend="auto", backend_params=None, langevin=False, diffusion_temperature="auto",
                 model_shrink_rate=0.0, model_shrink_mode="constant", eval_metric=None,
                 early_stopping_rounds=None, callbacks=None, qid_col="qid", position_bias=None,
                 propensities=None, propensity_estimator="em", position_bias_norm=1.0, position_col="position"):
        store_arguments(self, locals())


class YetiRanker(_NamedRanker):
    """Gradient boosting with YetiRank (Gulin et al. 2011) or YetiLoss (Lyzhin et al. 2022).

    ``metric="classic"`` is YetiRank (scored with ``ndcg@10``); a metric name
    (``"ndcg"``, ``"mrr@10"``, ...) is YetiLoss for that metric.
    """

    _objective_class = YetiRank

    def __init__(self, metric="classic", k="auto", *, n_permutations=10, noise="logistic", noise_scale=1.0,
                 num_neighbors="auto", decay=0.85, gain="exp", relevance_threshold=0.0, err_mapping=None,
                 err_max_label=None,
                 n_estimators=300, learning_rate=0.05, max_depth=6, min_child_weight=1.0, reg_lambda=3.0,
                 subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=0,
                 backend="auto", backend_params=None, langevin=False, diffusion_temperature="auto",
                 model_shrink_rate=0.0, model_shrink_mode="constant", eval_metric=None,
                 early_stopping_rounds=None, callbacks=None, qid_col="qid", position_bias=None,
                 propensities=None, propensity_estimator="em", position_bias_norm=1.0, position_col="position"):
        store_arguments(self, locals())


class LambdaMARTRanker(_NamedRanker):
    """Gradient boosting with LambdaMART (Burges 2010; Wu et al. 2010).

    Pairwise lambda gradients weighted by the metric change of swapping the
    pair, with Newton leaves.
    """

    _objective_class = LambdaMART

    def __init__(self, metric="ndcg", k="auto", *, sigma=1.0, truncation=None, normalize=True, gain="exp",
                 relevance_threshold=0.0, err_mapping=None, err_max_label=None,
                 n_estimators=300, learning_rate=0.05, max_depth=6, min_child_weight=1.0, reg_lambda=3.0,
                 subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None, random_state=0,
                 backend="auto", backend_params=None, langevin=False, diffusion_temperature="auto",
                 model_shrink_rate=0.0, model_shrink_mode="constant", eval_metric=None,
                 early_stopping_rounds=None, callbacks=None, qid_col="qid", position_bias=None,
                 propensities=None, propensity_estimator="em", position_bias_norm=1.0, position_col="position"):
        store_arguments(self, locals())


class XENDCGRanker(_NamedRanker):
    """Gradient boosting with the cross-entropy NDCG surrogate XE-NDCG (Bruch 2019).

    Scored with ``ndcg@10`` unless ``eval_metric`` says otherwise.
    """

    _objective_class = XENDCG

    def __init__(self, *, n_estimators=300, learning_rate=0.05, max_depth=6, min_child_weight=1.0,
                 reg_lambda=3.0, subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None,
                 random_state=0, backend="auto", backend_params=None, langevin=False,
                 diffusion_temperature="auto", model_shrink_rate=0.0, model_shrink_mode="constant",
                 eval_metric=None, early_stopping_rounds=None, callbacks=None, qid_col="qid", position_bias=None,
                 propensities=None, propensity_estimator="em", position_bias_norm=1.0, position_col="position"):
        store_arguments(self, locals())


class QueryRMSERanker(_NamedRanker):
    """Gradient boosting with the query-centred squared error QueryRMSE.

    ``L = 1/2 sum_i ((z_i - r_i) - mean_q(z - r))^2`` per query (CatBoost's
    QueryRMSE; a strong baseline in Lyzhin et al. 2022). Scored with
    ``ndcg@10`` unless ``eval_metric`` says otherwise.
    """

    _objective_class = QueryRMSE

    def __init__(self, *, n_estimators=300, learning_rate=0.05, max_depth=6, min_child_weight=1.0,
                 reg_lambda=3.0, subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=None,
                 random_state=0, backend="auto", backend_params=None, langevin=False,
                 diffusion_temperature="auto", model_shrink_rate=0.0, model_shrink_mode="constant",
                 eval_metric=None, early_stopping_rounds=None, callbacks=None, qid_col="qid", position_bias=None,
                 propensities=None, propensity_estimator="em", position_bias_norm=1.0, position_col="position"):
        store_arguments(self, locals())
