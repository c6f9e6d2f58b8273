"""The contract every ranking objective follows.

An objective knows queries and labels, never trees. Its ``__init__`` only
stores its arguments, and its parameters are declared once, in
``_parameter_constraints`` (scikit-learn's ``Interval`` / ``StrOptions``,
checked by scikit-learn's validator), so the rankers derive their own
parameters from it. Subclasses implement

* ``_resolve`` -- the checks that involve several parameters (an ``@k``
  suffix against ``k``, ``err_max_label`` without ``err_mapping``, ...),
  returning what the kernels need; it is pure, so it runs wherever its
  result is needed;
* ``_compute`` -- fills caller-allocated gradient and hessian arrays for rows
  already sorted by query (``group_ptr`` layout) by calling module-level
  numba kernels. It also receives ``query_keys`` (uint64, one per query): the
  stable hashes of the query ids' values that key a random objective's draws
  (:mod:`rankkit._random`), so a query's gradients do not depend on where it
  sits among the others, in the arrays or on a worker.

An objective keeps no state set by labels: ``_check_labels`` only validates,
and what depends on the labels (ERR's ``2^{r_max}``) is computed by
``_compute`` from the labels it is given. Everything else lives here once:

* :meth:`gradient_hessian` -- the public entry point, with ``qid=`` (any row
  order, outputs returned in the caller's order) or ``group_ptr=``;
* ``__call__`` -- the same object is an XGBoost ``obj=`` callable
  (``obj(preds, dtrain)``), a ``lightgbm.train`` objective
  (``params={"objective": obj}``) and a ``lightgbm.LGBMRanker(objective=obj)``
  (``obj(y_true, y_pred, weight, group)``), so rankkit gradients drop into
  any training loop.

**An objective is an estimator's parameter, not an estimator.** It has
scikit-learn's parameter protocol except ``get_params``: ``set_params``
(nested ``objective__sigma`` included), ``sklearn.base.clone``
(``__sklearn_clone__``) and validation against ``_parameter_constraints``.
``get_params`` is left out on purpose: scikit-learn's
``BaseEstimator.get_params(deep=True)`` expands every parameter value that
has a ``get_params`` into ``<name>__<param>`` entries, and
``lightgbm.LGBMRanker`` hands everything its ``get_params()`` returns to
LightGBM (``LGBMModel._process_params`` in LightGBM 4.7): an objective with
``get_params`` inside ``LGBMRanker(objective=obj)`` would send
``objective__metric``, ... to LightGBM as unknown parameters, and SGLB's
wrapped objective (``objective__objective``, not a number or a string) makes
LightGBM raise ``TypeError: Unknown type of parameter``. Without it,
``LGBMRanker(objective=LambdaMART())`` trains and clones as is, and
:class:`rankkit.Ranker`, which owns its ``objective`` parameter, lists the
nested ``objective__*`` parameters itself (``Ranker.get_params``), so
``GridSearchCV`` tunes them and the choice of the objective.

Loss convention: gradients of the loss to *minimise* (``-metric``), hessians
at least :data:`HESSIAN_FLOOR` before sample weights multiply both (a row of
weight 0 has hessian 0).
"""

from __future__ import annotations

import inspect
import numbers
from collections import defaultdict

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import validate_parameter_constraints

from .._backends import EngineInputs
from .._groups import make_groups
from .._metrics._api import evaluate_sorted
from .._metrics._common import (
    ERR,
    METRIC_IDS,
    METRIC_PARAMETER_CONSTRAINTS,
    NO_ERR_MAPPING,
    SWAP_METRICS,
    check_exp_gain,
    err_scale,
    parse_metric,
    uses_exp_gain,
)
from .._random import index_query_keys, mix64, seed_from
from .._validation import check_labels, check_sample_weight, check_scores, constructor_defaults, kernel_array
from ._swap import NO_CUTOFF

#: Parameters of :func:`~rankkit._metrics._api.evaluate_sorted` that describe
#: the metric itself (gain, decay, ...): an objective's parameters of these
#: names are those of the metric it optimises.
_METRIC_SETTINGS = frozenset(inspect.signature(evaluate_sorted).parameters) - {
    "metric", "y", "score", "group_ptr", "k", "ties", "empty",
}

#: Smallest hessian handed to a booster. Pairwise objectives give exactly zero
#: curvature to documents that take part in no pair (all labels equal); boosters
#: divide by sums of hessians, so they receive this floor instead. It is small
#: next to any ``min_child_weight`` in use, and not smaller: XGBoost's ``hist``
#: builder grew the same LambdaMART trees on MQ2008 1.4-1.6x slower with a
#: floor of 1e-9 than with 1e-6 (the value of XGBoost's ``kRtEps``;
#: ``benchmarks/bench_hessian_floor.py``).
HESSIAN_FLOOR = 1e-6


def query_hessian_units(grad, hess, n_queries, hess_sum=None):
    r"""Scale ``grad`` and ``hess`` in place so that the hessians sum to ``n_queries``.

    A tree's Newton leaf ``-G / (H + lambda)`` and its split constraint
    ``H >= min_child_weight`` were designed for squared error, where every
    row brings a hessian of 1. Ranking objectives bring whatever their loss
    gives: a YetiLoss NDCG@10 on lists of 500 documents brings 1e-5 per
    document, so with XGBoost's ``min_child_weight=1`` no split is possible
    and the model stays constant, while other objectives bring 100 times
    more. Multiplying gradients and hessians by one positive factor leaves
    every Newton step ``-G / H`` unchanged and gives the two regularisers one
    meaning for every objective: ``min_child_weight=1`` asks a leaf for the
    curvature of one average query, ``reg_lambda=1`` weighs like one query
    (the rankers lower both for lists longer than 20 documents on average:
    :func:`rankkit._training.curvature_unit`). The query, not the document,
    is the unit because the loss is a sum over queries. Applied by the rankers to objectives with Newton leaves, every
    iteration (``docs/user_guide.md``, "Defaults and why"). Returns the factor.

    ``hess_sum`` and ``n_queries`` are over all the training rows: when
    ``grad`` and ``hess`` are a part of them (``rankkit.dask``: one worker's
    queries), pass the global hessian sum as ``hess_sum`` (and the global
    number of queries), so that every part is scaled by the same factor;
    by default ``hess_sum`` is ``hess.sum()``.
    """
    total = float(hess.sum()) if hess_sum is None else float(hess_sum)
    if total <= 0.0 or n_queries <= 0:
        return 1.0
    factor = n_queries / total
    grad *= factor
    hess *= factor
    np.maximum(hess, HESSIAN_FLOOR, out=hess)  # the floor holds in the new units too
    return factor


#: The metrics (and YetiRank's classic weights) that read each metric setting of an objective or a ranker.
READ_BY = {
    "gain": ("ndcg", "dcg"),
    "relevance_threshold": ("mrr", "map", "precision", "recall", "rprecision"),
    "err_mapping": ("err", "pfound"), "err_max_label": ("err", "pfound"),
    "decay": ("expdcg", "pfound", "classic"),
}


def metric_objective(objective):
    """The objective that holds the metric settings: SGLB's wrapped one."""
    while hasattr(objective, "objective") and not hasattr(objective, "err_mapping"):
        objective = objective.objective
    return objective


def unread_metric_setting(holders, names, read_anyway=()):
    """The first metric setting (:data:`READ_BY`) set away from its default
    that no metric of ``names`` reads: ``(holder, parameter, default,
    readers)``, or None. ``holders``: the objects that may hold the settings,
    each a setting's owner when the first to take it in its constructor;
    ``read_anyway``: settings something other than a metric reads."""
    for param, readers in READ_BY.items():
        if param in read_anyway:
            continue
        holder, defaults = next(((h, d) for h, d in ((h, constructor_defaults(type(h))) for h in holders)
                                 if param in d), (None, {}))
        if holder is None or getattr(holder, param, defaults[param]) == defaults[param]:
            continue
        if not names & set(readers):
            return holder, param, defaults[param], readers
    return None


def metric_names(inner, metrics=()):
    """Names without ``@k`` of the objective's metric (as given: ``"ERR@10"``)
    and of ``metrics`` (eval metrics' names)."""
    return {str(m).partition("@")[0].strip().lower() for m in [getattr(inner, "metric", ""), *metrics]}


class RankingObjective:
    """Base class of rankkit objectives (see module docstring)."""

    #: False when the objective has no useful second derivative: boosters then
    #: use gradient leaves (hessian 1), as StochasticRank requires.
    uses_hessian = True

    #: True when the loss does not change if all scores of a query shift by a
    #: constant, so gradients sum to zero per query.
    translation_invariant = True

    #: True when the loss is a sum of one term per query (pairwise and
    #: list-wise objectives); rankers then measure its hessians in queries
    #: (:func:`query_hessian_units`). False for a sum over documents
    #: (QueryRMSE), whose hessians already count documents.
    per_query_loss = True

    #: Seeds :meth:`gradient_hessian` calls without ``seed=``; objectives with
    #: randomness take it as a parameter.
    random_state = None

    _parameter_constraints: dict = {}

    # -- to implement -------------------------------------------------------
    def _resolve(self):
        """Cross-parameter checks; returns what the kernels need (pure)."""

    def _check_labels(self, y):
        """Validated float64 labels (override for metric-specific checks)."""
        return check_labels(y, name="y")

    def _compute(self, y, raw, group_ptr, seed, grad, hess, query_keys):
        """Fill ``grad`` and ``hess`` (sorted layout). ``seed`` is a 63-bit int;
        ``query_keys`` (uint64, one per query) key the random draws."""
        raise NotImplementedError

    # -- parameters ---------------------------------------------------------
    @classmethod
    def _get_param_names(cls):
        """Names of the constructor's arguments, sorted (as scikit-learn's)."""
        signature = inspect.signature(cls.__init__)
        return sorted(
            p.name for p in signature.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        )

    def _get_params(self, deep=False):
        """``{name: value}`` of the constructor's arguments; with ``deep``,
        also ``<name>__<param>`` for a parameter that is an objective itself
        (SGLB's ``objective``). Not ``get_params``: see the module docstring."""
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and isinstance(value, RankingObjective):
                out.update((f"{name}__{k}", v) for k, v in value._get_params(deep=True).items())
            out[name] = value
        return out

    def set_params(self, **params):
        """Set parameters, nested ones as ``<name>__<param>`` (scikit-learn's
        convention: ``SGLB(...).set_params(objective__sigma=2.0)``).

        Returns
        -------
        self
        """
        valid = self._get_param_names()
        nested = defaultdict(dict)
        for key, value in params.items():
            name, delim, sub = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for {type(self).__name__}; valid parameters are {valid}."
                )
            if delim:
                nested[name][sub] = value
            else:
                setattr(self, name, value)
        for name, sub in nested.items():
            inner = getattr(self, name)
            if not isinstance(inner, RankingObjective):
                raise ValueError(
                    f"{type(self).__name__}.{name} is {inner!r}, which has no parameters to set "
                    f"({sorted(sub)}); set {name}= to an objective first."
                )
            inner.set_params(**sub)
        return self

    def __sklearn_clone__(self):
        """A fresh objective with the same (cloned) arguments, for
        ``sklearn.base.clone``; its seed sequence starts afresh, as the
        original's did."""
        return type(self)(**{k: clone(v, safe=False) for k, v in self._get_params().items()})

    def __repr__(self):
        # The arguments that differ from their defaults, as scikit-learn shows estimators.
        defaults = constructor_defaults(type(self))
        changed = {k: v for k, v in self._get_params().items()
                   if k not in defaults or repr(v) != repr(defaults[k])}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def _check_params(self):
        """Raise a clear error for invalid parameters: each against its
        declared constraints (scikit-learn's messages), then the checks that
        involve several."""
        validate_parameter_constraints(
            self._parameter_constraints, self._get_params(), caller_name=type(self).__name__
        )
        self._resolve()

    def _check_settings_read_alone(self):
        """On the objective's own entry points (:meth:`gradient_hessian`, the
        engines' hooks) its metric is the only reader of its metric settings:
        one set away from its default that this metric does not read is an
        error, not ignored. (A ranker's eval metrics may read them: the
        rankers check against those, :func:`rankkit._training.check_metric_settings_read`.)"""
        inner = metric_objective(self)
        unread = unread_metric_setting([inner], metric_names(inner))
        if unread is not None:
            _, param, default, readers = unread
            raise ValueError(
                f"{type(inner).__name__}: {param}={getattr(inner, param)!r} is not read by metric="
                f"{getattr(inner, 'metric', None)!r}; only {', '.join(readers)} read it. Leave it at "
                f"{default!r} (a ranker evaluating such a metric with eval_metric= takes it)."
            )

    def _eval_metric_settings(self):
        """The objective's parameters that set up its metric (``gain``,
        ``decay``, ...), for evaluating that metric with the same settings;
        one left at None keeps the metric's default."""
        return {p: v for p, v in self._get_params().items() if p in _METRIC_SETTINGS and v is not None}

    # -- public API ---------------------------------------------------------
    def gradient_hessian(self, y, raw, *, qid=None, group_ptr=None, sample_weight=None, seed=None):
        """Gradient and hessian of the loss for every document.

        Parameters
        ----------
        y : array-like of shape (n_samples,)
            Relevance labels.
        raw : array-like of shape (n_samples,)
            Current raw scores (the booster's margin).
        qid : array-like of shape (n_samples,), optional
            Query id of every row; rows may come in any order.
        group_ptr : array-like of int, optional
            Query offsets for rows already grouped (length ``n_queries + 1``).
            Exactly one of ``qid`` and ``group_ptr`` is required. A random
            objective keys each query's draws by the value of its id
            (:mod:`rankkit._random`); with ``group_ptr`` the ids are unknown
            and query ``q`` draws as if its id were the integer ``q``.
        sample_weight : array-like of shape (n_samples,), optional
            Multiplies each row's gradient and hessian.
        seed : int, optional
            Seed of this call's randomness, in ``[0, 2**63 - 1]``. By default
            a fresh seed is drawn from ``random_state`` on every call,
            reproducibly.

        Returns
        -------
        grad, hess : ndarray of shape (n_samples,)
        """
        self._check_params()
        self._check_settings_read_alone()
        y = self._check_labels(y)
        raw = check_scores(raw, name="raw")
        if raw.shape[0] != y.shape[0]:
            raise ValueError(f"raw has {raw.shape[0]} entries but y has {y.shape[0]}.")
        if (qid is None) == (group_ptr is None):
            raise ValueError("Pass exactly one of qid= (per-row query ids) or group_ptr= (offsets).")
        groups = keys = None
        if qid is not None:
            groups = make_groups(qid, y.shape[0])
            y, raw, ptr, keys = groups.sort(y), groups.sort(raw), groups.group_ptr, groups.query_keys
        else:
            given = np.asarray(group_ptr)
            if given.ndim != 1 or given.shape[0] < 1 or given.dtype.kind not in "iu":
                raise ValueError(
                    "group_ptr must be a one-dimensional array of integer offsets, n_queries + 1 of them from 0 "
                    f"to n_samples={y.shape[0]}; got shape {given.shape} of dtype {given.dtype}."
                )
            ptr = kernel_array(given, np.int64)
            if ptr[0] != 0 or ptr[-1] != y.shape[0] or np.any(np.diff(ptr) < 0):
                raise ValueError(
                    f"group_ptr must rise from 0 to n_samples={y.shape[0]}; got {ptr[:3]}...{ptr[-1:]}."
                )
        w = check_sample_weight(sample_weight, y.shape[0])
        if seed is None:
            seed = self._next_seed()
        elif not isinstance(seed, numbers.Integral) or isinstance(seed, (bool, np.bool_)):
            raise TypeError(f"seed must be an int, got {seed!r}.")
        elif not 0 <= int(seed) < 2**63:  # the kernels key their draws by a 63-bit seed
            raise ValueError(f"seed must be an int in [0, 2**63 - 1], got {seed!r}.")
        grad, hess = self._gradient_hessian_sorted(
            kernel_array(y, np.float64), kernel_array(raw, np.float64), ptr, seed, keys
        )
        if groups is not None:
            grad, hess = groups.unsort(grad), groups.unsort(hess)
        if w is not None:
            grad *= w
            hess *= w
        return self._finite(grad, hess, raw, "raw")

    def _gradient_hessian_sorted(self, y, raw, group_ptr, seed, query_keys=None):
        """No-validation path for backends: arrays already checked and sorted;
        ``query_keys`` (uint64, one per query; :class:`rankkit._groups.QueryGroups`)
        default to the keys of the query indices (ids unknown)."""
        grad = np.zeros(y.shape[0], dtype=np.float64)
        hess = np.zeros(y.shape[0], dtype=np.float64)
        if query_keys is None:
            query_keys = index_query_keys(len(group_ptr) - 1)
        self._compute(y, raw, group_ptr, int(seed), grad, hess, query_keys)
        if not self.uses_hessian:
            hess[:] = 1.0
        else:
            np.maximum(hess, HESSIAN_FLOOR, out=hess)
        return grad, hess

    def _next_seed(self):
        """Per-call seeds: deterministic for a fixed ``random_state``. The
        sequence restarts when ``random_state`` changes: an int by its value
        (by identity, a copy's int above 256 restarted it and a small one did
        not), a generator by identity."""
        seeded_for = getattr(self, "_seed_for", None)
        same = (seeded_for == self.random_state if isinstance(seeded_for, numbers.Integral)
                and isinstance(self.random_state, numbers.Integral) else seeded_for is self.random_state)
        if getattr(self, "_seed_base", None) is None or not same:
            self._seed_base = seed_from(self.random_state)
            self._seed_for = self.random_state
            self._n_calls = 0
        self._n_calls += 1
        return int(mix64(np.uint64(self._seed_base) + np.uint64(self._n_calls))) >> 1

    # -- XGBoost / LightGBM custom-objective hooks --------------------------
    def __call__(self, preds_or_y_true, data_or_y_pred, weight=None, group=None):
        """The objective as XGBoost's and LightGBM's custom-objective callable.

        Three call forms, told apart by the second argument:

        ``obj(preds, dtrain)``
            ``xgboost.train(params, dtrain, obj=obj)``. ``dtrain`` carries the
            queries (``DMatrix(X, y, qid=qid)`` or ``set_group``); its weights,
            one per query (XGBoost's ranking convention) or one per row,
            multiply the gradients and hessians.
        ``obj(preds, dataset)``
            ``lightgbm.train({"objective": obj, ...}, dataset)``. ``dataset``
            carries the query sizes (``Dataset(X, y, group=sizes)``); its
            per-row weights multiply the gradients and hessians.
        ``obj(y_true, y_pred, weight, group)``
            ``lightgbm.LGBMRanker(objective=obj)``: LightGBM's scikit-learn
            API counts the four parameters of this method and passes labels,
            scores, per-row weights (or None) and query sizes.

        Rows of a query must be contiguous, as both engines require. What
        the engine hands over is read at the engine boundary
        (:mod:`rankkit._backends._adapters`): labels are checked and query
        boundaries computed once, then reused while they stay the same
        (a ``set_label`` between calls is seen; the labels are checked
        again on every call, against the parameters of that call). An engine's dataset knows the query boundaries
        but not the query ids, so a random objective's draws are keyed as by
        ``gradient_hessian(group_ptr=...)``: query ``q`` as the integer id ``q``. Every call draws a fresh seed from
        ``random_state`` (reproducibly), like :meth:`gradient_hessian`.

        Returns
        -------
        grad, hess : ndarray of float64, shape (n_samples,)
        """
        self._check_params()  # first: the label checks read the parameters
        self._check_settings_read_alone()
        if hasattr(data_or_y_pred, "get_label"):  # xgboost.DMatrix or lightgbm.Dataset
            if weight is not None or group is not None:
                raise TypeError(
                    "obj(preds, data) takes the weights and groups from data; "
                    "weight= and group= belong to the form obj(y_true, y_pred, weight, group)."
                )
            preds = preds_or_y_true
            y, ptr, w = self._engine_inputs().engine_data(data_or_y_pred, self._check_labels)
        else:
            preds = data_or_y_pred
            y, ptr, w = self._engine_inputs().sklearn_data(preds_or_y_true, weight, group, self._check_labels)
        preds = check_scores(np.asarray(preds, dtype=np.float64).ravel(), name="preds")
        if preds.shape[0] != y.shape[0]:
            several = 0 < y.shape[0] < preds.shape[0] and preds.shape[0] % y.shape[0] == 0
            raise ValueError(
                f"preds has {preds.shape[0]} entries but there are {y.shape[0]} labels"
                + (f": {preds.shape[0] // y.shape[0]} scores per row, as a multi-class or multi-output model gives "
                   "(num_class, num_target). A ranking objective takes one score per row: drop those parameters."
                   if several else ".")
            )
        grad, hess = self._gradient_hessian_sorted(y, preds, ptr, self._next_seed())
        if w is not None:
            grad *= w
            hess *= w
        return self._finite(grad, hess, preds, "preds")

    def _finite(self, grad, hess, raw, name):
        """``(grad, hess)``, or an error when float64 overflowed: the rankers
        check their gradients too, an engine's hook and a caller would train
        on NaN."""
        if np.all(np.isfinite(grad)) and np.all(np.isfinite(hess)):
            return grad, hess
        with np.errstate(over="ignore"):
            span = float(np.max(raw) - np.min(raw)) if raw.size else 0.0
        raise ValueError(
            f"{type(self).__name__} gives NaN or infinite gradients or hessians here: float64 overflows on these "
            f"scores ({name}, spanning {span:.3g}) or with these parameters (an extreme sigma, or sample weights). "
            f"Rescale {name}, or use less extreme parameters."
        )

    def __getstate__(self):
        # The engine hook's cache holds copies of the engine's labels; it is
        # rebuilt on the next call.
        state = dict(self.__dict__)
        state.pop("_hook_cache", None)
        return state

    def _engine_inputs(self):
        """The reader of the engines' datasets (:mod:`rankkit._backends._adapters`), kept between calls."""
        if getattr(self, "_hook_cache", None) is None:
            self._hook_cache = EngineInputs()
        return self._hook_cache


class MetricObjective(RankingObjective):
    """An objective that optimises one metric of :mod:`rankkit.metrics`.

    Declares the metric parameters every such objective shares (``metric``,
    ``k``, ``gain``, ``relevance_threshold``, ``err_mapping``,
    ``err_max_label``) and their checks: one definition for LambdaMART,
    YetiRank/YetiLoss and StochasticRank.
    """

    _parameter_constraints: dict = dict(METRIC_PARAMETER_CONSTRAINTS)

    #: The cut-off of ``k="auto"`` for NDCG without one in ``metric``: NDCG@10
    #: is what every ranker scores and early-stops with by default, and
    #: StochasticRank and YetiLoss trained on it scored higher NDCG@10 than on
    #: the whole list (``docs/user_guide.md``, section 9, "The cut-off of the
    #: metric trained on"; LambdaMART sets its own).
    _auto_ndcg_cutoff = 10
    #: Names of the metrics this objective optimises.
    _metric_names = SWAP_METRICS
    #: Values of ``metric`` a subclass handles before parsing (YetiRank's "classic").
    _own_metric_names = ()

    def _check_err_options(self):
        if self.err_max_label is not None and self.err_mapping is None:
            raise ValueError(
                f"{type(self).__name__}: err_max_label is used only with err_mapping='chapelle'; "
                "pass both."
            )

    def _metric(self):
        """``(metric id, kernel cut-off, exp_gain)`` after the cross-parameter
        checks (``NO_CUTOFF`` for the whole list)."""
        owner = type(self).__name__
        self._check_err_options()
        auto = self.k == "auto"
        name, k = parse_metric(self.metric, None if auto else self.k,
                               accepted=[*self._metric_names, *self._own_metric_names])
        if auto and k is None and name == "ndcg":  # no cut-off in the metric either: the objective's
            k = self._auto_ndcg_cutoff
        if name not in self._metric_names:
            raise ValueError(
                f"{owner} does not optimise metric={self.metric!r}; use one of "
                f"{list(self._metric_names)}{self._other_metrics_hint}."
            )
        self._check_unused(METRIC_IDS[name])
        return METRIC_IDS[name], (NO_CUTOFF if k is None else k), self.gain == "exp"

    def _unused(self, metric_id):
        """``{parameter: (the setting that leaves it unread, what reads it)}``
        of the objective's own parameters (none here: the metric parameters, ``gain``,
        ``relevance_threshold``, ``err_mapping``, also set up a ranker's eval
        metrics, which may read what the objective's metric does not)."""
        return {}

    def _check_unused(self, metric_id):
        """Parameters set away from their defaults where nothing reads them are
        errors, not ignored (as the metric functions' and the click settings')."""
        defaults = constructor_defaults(type(self))
        for param, (setting, user) in self._unused(metric_id).items():
            value = getattr(self, param)
            if param in defaults and value != defaults[param]:
                raise ValueError(
                    f"{type(self).__name__}: {param}={value!r} is not used with {setting}; it is read with "
                    f"{user}. Leave it at {defaults[param]!r}."
                )

    #: Appended to the error for a metric the objective does not optimise.
    _other_metrics_hint = ""

    def _resolve(self):
        return self._metric()

    def _err_scale(self, y, metric_id):
        """ERR's ``2^{r_max}`` from the labels ``y`` (``NO_ERR_MAPPING`` when
        unused); computed where it is used, never stored."""
        if metric_id != ERR:
            return NO_ERR_MAPPING
        return err_scale(y, self.err_mapping, self.err_max_label)

    def _check_labels(self, y):
        y = check_labels(y, name="y")
        metric_id, _, exp_gain = self._metric()
        self._err_scale(y, metric_id)  # checks the labels against err_mapping
        if uses_exp_gain(metric_id, exp_gain):
            check_exp_gain(y, name="y")
        return y
