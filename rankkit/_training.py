"""Training orchestration shared by every ranker: what runs around the backend's loop.

* :class:`QueryData` -- validated training or eval rows, sorted by query;
* :func:`gradient_function` -- the backend's ``grad_fn(raw, t)``: the
  objective's gradients, sample weights, query units, Langevin noise;
* :func:`curvature_unit` -- what ``reg_lambda`` and ``min_child_weight``
  count in, on the booster's scale;
* :func:`resolve_diffusion_temperature` and :func:`langevin_scale` -- SGLB's
  ``beta`` (``"auto"`` resolved from the first gradients) and the noise scale,
  pure functions: the ranker stores ``diffusion_temperature_`` itself;
  :class:`GradientPipeline` bundles them with :func:`gradient_function`;
* :class:`EvalMonitor` -- the backend's ``callback``: eval metrics, progress
  lines, best iteration, early stopping, the user's callbacks;
* :func:`eval_metrics` -- the metrics of ``score``, eval sets and early stopping;
* :func:`mean_metric` / :func:`metric_sum_count` -- per-query metric means and
  sums (``score``, eval sets, ``rankkit.dask``'s global sums);
* :class:`PartMonitor` -- the eval monitor on one part of the rows (a Dask
  worker's): sums all-reduced over the parts, then :meth:`EvalMonitor.record`;
* :func:`why_constant` -- the diagnosis of a model without any split.

The rankers (:mod:`rankkit._estimators`) and ``rankkit.dask`` both use these,
so the in-memory and the distributed training are one pipeline.
"""

from __future__ import annotations

import sys
import warnings
from numbers import Integral
from typing import NamedTuple

import numpy as np

from ._clicks import ClickLabels, DebiasedGradients
from ._groups import query_weights
from ._metrics._api import evaluate_sorted
from ._metrics._callable import (CALLABLE_METRICS, callable_sum_count, check_some_part_counted, metric_function,
                                metric_name)
from ._metrics._common import check_exp_gain, parse_metric
from ._objectives._base import READ_BY, metric_names, metric_objective, query_hessian_units, unread_metric_setting
from ._random import mix64
from ._sglb import add_gaussian_noise, auto_diffusion_temperature, langevin_noise_scale
from ._validation import first_text

#: The metric of ``score``, ``scoring=None`` and early stopping for every ranker
#: without ``eval_metric``: one metric, so rankers compare on the same footing.
DEFAULT_METRIC = "ndcg@10"

#: Documents that count as one unit of curvature when queries are longer
#: (:func:`curvature_unit`).
UNIT_DOCUMENTS = 20


def weighted_counts(group_ptr, weight):
    """``(queries, rows)`` of a training set, counted by weight when it has
    weights: a query counts its weight (:func:`query_weights`), a row its
    weight. The query units and :func:`curvature_unit` count with these, so a
    query of weight 0 trains as if it were dropped and an integer weight
    ``k`` as ``k`` copies of the query (so weights all ``c`` are ``c`` copies
    of the data, not weights 1: the regularisers stay as they are)."""
    if weight is None:
        return float(group_ptr.shape[0] - 1), float(group_ptr[-1])
    return float(query_weights(weight, group_ptr).sum()), float(weight.sum())


def curvature_unit(objective, n_queries, n_rows):
    """The unit of ``reg_lambda`` and ``min_child_weight`` on the scale of the
    hessians the booster sees: they are multiplied by it.

    For the per-query losses with Newton leaves the hessians come in query
    units (mean 1 per query, :func:`gradient_function`), and one unit of
    curvature is the mean curvature of a query, or of ``UNIT_DOCUMENTS``
    documents when the queries are longer than that on average:
    ``min(1, UNIT_DOCUMENTS * n_queries / n_rows)``. A short list is one
    ranking, one piece of evidence; a list of 400 documents holds many
    top-10 decisions, and counted as one query it would be regularised as if
    it carried the evidence of 20 documents (``docs/user_guide.md``, section
    9, learning curves of ``benchmarks/bench_curves.py``). The other
    objectives' hessians count in documents already: 1.
    """
    if not (objective.uses_hessian and objective.per_query_loss) or n_rows == 0:
        return 1.0
    return min(1.0, UNIT_DOCUMENTS * n_queries / n_rows)


def pin_err_max_label(objective, train_max, eval_maxes=(), *, debiased=False):
    """The objective with ERR's ``err_max_label`` set to the largest training
    label when left to the data: Chapelle's ``r_max`` is the top of the label
    scale, so every set the fitted ranker scores (eval sets, ``score``) is
    mapped as the training labels were, not by its own largest label (which
    would make one query's ERR depend on the others). ``eval_maxes``:
    ``(name, largest label)`` of the eval sets, checked against it;
    ``debiased``: the labels are debiased clicks (named so in errors)."""
    inner = metric_objective(objective)
    if getattr(inner, "err_mapping", None) is None or getattr(inner, "err_max_label", 0) is not None:
        return objective
    label = "debiased click label, log2(1 + clicks / propensity)," if debiased else "label"
    for name, top in eval_maxes:
        if top > train_max:
            where = f"eval_set[{name.rpartition('_')[2]}]" if name.startswith("validation_") else name
            raise ValueError(
                f"ERR with err_mapping='chapelle' maps labels by the top of their scale, the largest training "
                f"{label} {train_max:g} when err_max_label is None, but {where} has the {label} {top:g}: "
                f"pass err_max_label={top:g} (or the top of your label scale)."
            )
    inner.err_max_label = float(train_max)
    return objective


def uses_err_scale(objective, metrics):
    """Whether ERR or PFound with Chapelle's mapping and ``err_max_label``
    left to the data is the objective's metric or one of ``metrics``."""
    inner = metric_objective(objective)
    return (getattr(inner, "err_mapping", None) is not None and getattr(inner, "err_max_label", 0) is None
            and bool(metric_names(inner, metrics) & {"err", "pfound"}))


def check_metric_settings_read(ranker, objective, metrics, settings):
    """A ranker's metric setting set away from its default that neither the
    objective's metric nor any eval metric reads is an error, not ignored
    (``relevance_threshold`` beside NDCG and ``eval_metric="ndcg@10"``).
    Callable eval metrics may read anything: no check then."""
    if settings.get(CALLABLE_METRICS):
        return
    inner = metric_objective(objective)
    # Training on clicks, the gain makes every label (clicks / propensity, or log2 of 1 plus it;
    # rankkit._clicks.ipw_labels), whatever the metric.
    read_anyway = ("gain",) if getattr(ranker, "position_bias", None) is not None else ()
    # A named ranker holds the settings; the generic Ranker leaves them to its objective.
    unread = unread_metric_setting([ranker, inner], metric_names(inner, metrics), read_anyway)
    if unread is not None:
        holder, param, default, readers = unread
        where = type(ranker).__name__ if holder is ranker else f"{type(ranker).__name__}'s objective"
        raise ValueError(
            f"{where}: {param}={getattr(holder, param)!r} is read by no metric here: the "
            f"objective optimises {getattr(inner, 'metric', None)!r} and eval_metric gives {list(metrics)}, and "
            f"only {', '.join(readers)} read it. Leave it at {default!r}, or evaluate such a metric "
            f"(eval_metric=[..., '{readers[0]}@10'])."
        )


def check_clicks_train_on_grades(position_bias, objective):
    """Debiased clicks are graded labels (``clicks / propensity``); a metric
    that reads labels only as relevant or not (above ``relevance_threshold``)
    sees every click alike, so ``position_bias`` would change nothing: the
    model of the raw clicks, without a word. Refused."""
    inner = metric_objective(objective)
    metric = getattr(inner, "metric", None)
    if position_bias is not None and metric_names(inner) & set(READ_BY["relevance_threshold"]):
        raise ValueError(
            f"metric={metric!r} reads a label only as relevant or not, so position_bias={position_bias!r}, whose "
            "inverse propensity weights scale a clicked document's label by 1 / propensity, would change nothing: "
            "the model would be the one of the raw clicks. Train on a graded metric (metric='ndcg', 'dcg' or "
            "'err') or another objective, and watch MRR or MAP with eval_metric=."
        )


def check_err_scale_is_fixed(position_bias, objective, metrics):
    """ERR and PFound with Chapelle's mapping and ``err_max_label=None`` scale
    the labels by the largest training one; with estimated propensities the
    debiased labels, and so that scale, change every iteration: refused,
    in memory and on Dask, rather than scores that depend on other queries."""
    if position_bias == "estimate" and uses_err_scale(objective, metrics):
        raise ValueError(
            "ERR or PFound with err_mapping='chapelle' scale the labels by the largest training label, and with "
            "position_bias='estimate' the debiased labels change every iteration: the scale, and each query's "
            "ERR, would follow the other queries. Pass err_max_label= (a bound on the debiased labels), or "
            "position_bias='known'."
        )


def check_err_metrics_can_map(metrics, settings, objective, max_label):
    """ERR and PFound eval metrics on graded labels need Chapelle's mapping,
    which an objective without ``err_mapping`` (XE-NDCG, QueryRMSE) cannot
    set: say how at fit, not at the first score."""
    inner = metric_objective(objective)
    if max_label <= 1 or hasattr(inner, "err_mapping"):
        return
    callables = settings.get(CALLABLE_METRICS, {})
    named = [m for m in metrics if m not in callables and m.split("@")[0] in ("err", "pfound")]
    if named:
        raise ValueError(
            f"eval_metric {named[0]!r} on graded labels (the largest is {max_label:g}) needs ERR's mapping "
            f"err_mapping='chapelle', which {type(inner).__name__} has no parameter for: pass "
            f"eval_metric=rankkit.metrics.make_ranking_scorer({named[0]!r}), which maps graded labels so, "
            "or labels that are stop probabilities in [0, 1]."
        )


def iteration_seed(seed_base, t):
    """Seed of iteration ``t``: a pure function of the fit's seed, so the same
    ``random_state`` gives the same model whatever the thread count."""
    return int(mix64(np.uint64(seed_base) + np.uint64(t + 1))) >> 1



class QueryData(NamedTuple):
    """Validated rows sorted by query."""

    X: object
    y: np.ndarray
    group_ptr: np.ndarray
    weight: np.ndarray | None
    #: Keys of the queries' random draws (the hashes of their ids' values).
    query_keys: np.ndarray | None = None
    #: 1-based ranks the rows were shown at (click data), or None.
    position: np.ndarray | None = None


def check_y(y, n_rows, where):
    """``y`` as an array of one label per row (object arrays of numbers
    converted), or a clear error."""
    y = np.asarray(y)
    if y.dtype.kind in "USa" or y.dtype.kind == "O" and first_text(y) is not None:
        # As the metric functions and sample_weight: parsing would read the text "3" as the label 3.
        name = "y" if where == "X" else f"the y of {where}"
        raise TypeError(f"{name} must be numeric relevance labels (grades such as 0-4), got text such as "
                        f"{first_text(y.astype(object))!r}: convert the labels to numbers first.")
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



def gradient_function(objective, train, seed_base, noise_scale=0.0, total=None, n_queries=None):
    """``grad_fn(raw, t)`` of the backend contract, on the training rows:

    1. the objective's gradients and hessians, seeded per iteration;
    2. times the sample weights;
    3. for objectives with Newton leaves and a loss per query, both
       scaled so that the mean hessian per query is 1 (:func:`~rankkit._objectives._base.query_hessian_units`):
       ``min_child_weight`` and ``reg_lambda`` then count in queries
       (of at most ``UNIT_DOCUMENTS`` documents, :func:`curvature_unit`)
       whatever the objective's scale;
    4. plus SGLB's Langevin noise ``noise_scale * N(0, 1)`` per document
       of non-zero weight (:func:`~rankkit._sglb.add_gaussian_noise`).

    ``total(sums) -> sums`` turns sums over ``train`` into sums over all
    the training rows when ``train`` is a part of them (``rankkit.dask``:
    one worker's queries; it all-reduces over the workers), so that the
    query units of step 3 are global; None when ``train`` is all of them.
    The queries of step 3 are counted here, by the weights the rows have
    now (:func:`weighted_counts`): the sample weights, which the pairwise
    click estimator's ``1 / t-`` weights of unclicked rows later change in
    place (``rankkit._clicks.ClickLabels``) without changing that count;
    ``n_queries`` gives the count instead (measuring the first iteration on
    rows whose weights it has already changed).
    """
    if n_queries is None:
        n_queries = weighted_counts(train.group_ptr, train.weight)[0]
    scratch = np.empty((3, train.y.shape[0]), dtype=np.int64) if noise_scale else None

    def grad_fn(raw, t):
        seed = iteration_seed(seed_base, t)
        grad, hess = objective._gradient_hessian_sorted(train.y, raw, train.group_ptr, seed, train.query_keys)
        if train.weight is not None:
            grad *= train.weight
            hess *= train.weight
        if objective.uses_hessian and objective.per_query_loss:
            hess_sum, queries = float(hess.sum()), n_queries
            if total is not None:
                hess_sum, queries = total([hess_sum, queries])
            query_hessian_units(grad, hess, queries, hess_sum=hess_sum)
            if train.weight is not None:
                # The units' floor is for documents in no pair; a row of weight 0 is left out.
                hess[train.weight == 0] = 0.0
        if noise_scale:
            add_gaussian_noise(grad, train.y, raw, train.group_ptr, train.query_keys, noise_scale, np.int64(seed),
                               scratch)
            if train.weight is not None:
                grad[train.weight == 0] = 0.0  # a row of weight 0 trains as if left out: no noise either
        return grad, hess

    return grad_fn


def resolve_diffusion_temperature(langevin, diffusion_temperature, learning_rate, objective, train, seed_base,
                                  total=None, n_queries=None):
    """SGLB's ``beta`` for a fit, as a float (None without ``langevin``).

    ``diffusion_temperature="auto"`` is resolved from the first iteration's
    gradients (every backend starts from scores 0):
    :func:`~rankkit._sglb.auto_diffusion_temperature` of
    :func:`gradient_function`'s output without noise. ``total``: as in
    :func:`gradient_function`, when ``train`` is a part of the training rows,
    and so is ``n_queries``. Pure: the caller stores the result
    (``diffusion_temperature_``).
    """
    if not langevin:
        return None
    beta = diffusion_temperature
    if isinstance(beta, str):  # "auto"
        first = gradient_function(objective, train, seed_base, total=total, n_queries=n_queries)
        grad = first(np.zeros(train.y.shape[0]), 0)[0]
        if train.weight is not None:  # the typical gradient of the rows that train
            grad = grad[train.weight != 0]
        beta = auto_diffusion_temperature(grad, learning_rate, total=total)
    return float(beta)


def langevin_scale(learning_rate, beta):
    """The noise scale ``sqrt(2 / (learning_rate * beta))``; 0 for ``beta=None``
    (no Langevin noise); an error when it overflows."""
    if beta is None:
        return 0.0
    scale = langevin_noise_scale(learning_rate, beta)
    if not np.isfinite(scale):
        raise ValueError(
            "sqrt(2 / (learning_rate * diffusion_temperature)) overflows; raise learning_rate "
            "or diffusion_temperature."
        )
    return scale


class GradientPipeline:
    """The settings of a fit's gradient pipeline, picklable, so the same
    pipeline runs in memory and on every Dask worker: :meth:`build` resolves
    SGLB's ``beta`` (:func:`resolve_diffusion_temperature`) and returns the
    :func:`gradient_function` with its Langevin noise.

    ``clicks`` (:class:`rankkit._clicks.ClickSettings`, ``rankkit.dask`` with
    ``position_bias="estimate"``): ``train`` holds clicks and positions, and
    :meth:`build` debiases them on the rows it is given, with the
    propensities estimated from all the parts (``total``), as the in-memory
    ranker does before building (:func:`rankkit._clicks.start_click_training`)."""

    def __init__(self, objective, seed_base, *, langevin, diffusion_temperature, learning_rate, clicks=None):
        self.objective = objective
        self.seed_base = seed_base
        self.langevin = langevin
        self.diffusion_temperature = diffusion_temperature
        self.learning_rate = learning_rate
        self.clicks = clicks

    def build(self, train, total=None, labels=None):
        """``(grad_fn, beta)`` on ``train`` (``total``: as in :func:`gradient_function`);
        ``beta`` is None without Langevin noise. With ``clicks``, ``grad_fn``
        is a :class:`rankkit._clicks.DebiasedGradients` (its ``train``: the
        rows with their debiased labels). ``labels``: the in-memory ranker's
        :class:`rankkit._clicks.ClickLabels`, whose labels ``train`` holds."""
        debiased = labels is None and self.clicks is not None
        if debiased:
            labels = ClickLabels(self.clicks, train, total=total)
            train = train._replace(y=labels.labels, weight=labels.weight)
        first, count = train, None
        if labels is not None and labels.estimator is not None and self.langevin \
                and isinstance(self.diffusion_temperature, str):
            # "auto" measures the first iteration's gradients, whose labels
            # come from the first estimate (at scores 0): a copy makes it,
            # leaving the training's own estimator where it starts. The
            # queries are counted as training counts them: by the weights
            # before the estimate reweighs the rows.
            preview = labels.preview(np.zeros(train.y.shape[0]))
            first = train._replace(y=preview.labels, weight=preview.weight)
            count = weighted_counts(train.group_ptr, train.weight)[0]
        beta = resolve_diffusion_temperature(self.langevin, self.diffusion_temperature, self.learning_rate,
                                             self.objective, first, self.seed_base, total=total, n_queries=count)
        scale = langevin_scale(self.learning_rate, beta)
        grad_fn = gradient_function(self.objective, train, self.seed_base, scale, total=total)
        if debiased:
            grad_fn = DebiasedGradients(labels, grad_fn, train)
        return grad_fn, beta


def mean_metric(metric, y, raw, group_ptr, settings, weight=None):
    """Mean over queries (excluded queries left out) with worst-order ties.

    With row weights ``weight``, the mean is weighted by query: a query
    weighs the mean of its rows' weights (LightGBM's query weights), so
    giving every row of a query the weight ``w`` weighs the query ``w``.
    """
    total, count = metric_sum_count(metric, y, raw, group_ptr, settings, weight)
    return total / count if count > 0 else float("nan")


def metric_sum_count(metric, y, raw, group_ptr, settings, weight=None, part=False):
    """``(sum, number)`` of the per-query values of :func:`mean_metric`
    (with ``weight``: the query-weighted sum and the sum of the query
    weights): what a part of the queries contributes to the mean over all
    of them (``part``: the rows are a part, a Dask worker's or partition's)."""
    functions = settings.get(CALLABLE_METRICS, {})
    if metric in functions:  # a callable eval_metric: its own ties; weighted if it is a ranking scorer
        return callable_sum_count(metric, functions[metric], y, raw, group_ptr,
                                  None if weight is None else query_weights(weight, group_ptr), part=part)
    settings = {key: value for key, value in settings.items() if key != CALLABLE_METRICS}
    if "gain" not in settings and metric.split("@")[0] in ("ndcg", "dcg") and group_ptr.shape[0] > 1:
        # An objective without a gain parameter (QueryRMSE) scores with the exp
        # gain: the metric's own advice, gain='linear', is not a parameter here.
        check_exp_gain(y, group_ptr=group_ptr, name="y", fix=(
            f"this ranker has no gain parameter: pass eval_metric=rankkit.metrics.make_ranking_scorer("
            f"{metric!r}, gain='linear')"))
    values = evaluate_sorted(metric, y, raw, group_ptr, ties="worst", **settings)
    keep = ~np.isnan(values)
    if weight is None:
        return float(values[keep].sum()), int(keep.sum())
    query_weight = query_weights(weight, group_ptr)
    # Not np.dot: above 10,000 queries BLAS would run it on its own threads, outside n_jobs.
    return float((query_weight[keep] * values[keep]).sum()), float(query_weight[keep].sum())


def eval_metrics(eval_metric, objective):
    """``(metrics, settings)`` of ``score``, eval sets and early stopping:
    the names of ``eval_metric`` (a name, a callable or a list of them), or
    :data:`DEFAULT_METRIC` for every ranker, with the objective's metric
    settings (gain, ...); the first is the main one. Callables are named by
    :func:`~rankkit._metrics._callable.metric_name` and carried in
    ``settings`` (:data:`~rankkit._metrics._callable.CALLABLE_METRICS`)."""
    given = eval_metric if eval_metric is not None else DEFAULT_METRIC
    names = [given] if isinstance(given, str) or callable(given) else list(given)
    if not names:
        raise ValueError(
            "eval_metric is empty: pass a metric name such as 'ndcg@10', a list of them "
            f"(the first drives early stopping and score), or None for {DEFAULT_METRIC!r}."
        )
    metrics, functions = [], {}
    for metric in names:
        if callable(metric):
            canonical = metric_name(metric)
            functions[canonical] = metric_function(metric)
        elif isinstance(metric, str):
            name, k = parse_metric(metric)
            canonical = name if k is None else f"{name}@{k}"
        else:
            raise TypeError(
                f"eval_metric entries must be metric names such as 'ndcg@10' or callables "
                f"f(y_true, y_score, qid), got {metric!r}."
            )
        if canonical in metrics:
            raise ValueError(f"eval_metric={eval_metric!r} lists {canonical!r} twice: drop the repeat, or give "
                             "each callable or scorer object its own name (f.__name__ = '...').")
        metrics.append(canonical)
    settings = objective._eval_metric_settings()
    if functions:
        settings[CALLABLE_METRICS] = functions
    return metrics, settings


class EvalMonitor:
    """The backend's callback ``callback(t, raw_train, raw_evals)``: eval
    metrics every iteration, progress lines, the best iteration, early
    stopping and the user's callbacks (:mod:`rankkit.callback`).

    ``sets`` are the eval sets in ``eval_set`` order as ``(name, data)``;
    ``data`` is None for the training data itself (``"training"``), whose
    metrics come from the training scores. Early stopping watches the first
    metric on the last set that is not the training data, with strict
    improvement, like XGBoost: ties keep the earlier, smaller model. With
    ``verbose=N`` a line every ``N`` iterations (and at the last one) shows
    the training metrics, computed on those iterations only, and every set's;
    :meth:`after_training` prints the final line. ``set_settings`` maps the
    names of sets whose metrics take other settings than ``settings`` to
    theirs (debiased click labels: :func:`rankkit._clicks.debiased_metric_settings`).

    ``relabelled``: the watched set's labels change during training (clicks
    debiased by each iteration's propensity estimate, ``position_bias=
    "estimate"``), so one iteration's value cannot be compared with another's:
    the best iteration's model is scored again on every iteration's labels
    before the comparison (``best_rescored``), and ``best_score`` is its
    value on the last labels, those of ``score`` with ``position_bias_``
    (after early stopping, :meth:`keep_best`: the best iteration's).
    ``history`` keeps each iteration's value on its own labels.

    The ranker's training state is live: :meth:`record` sets its
    ``evals_result_``, ``n_iterations_``, ``best_iteration_`` and
    ``best_score_`` before the callbacks run, so a callback reads this fit's
    (``position_bias_`` follows the estimate, ``rankkit._clicks``), and keeps
    the ``position_bias_`` of the best iteration for :meth:`keep_best`.
    """

    TRAINING = "training"

    @staticmethod
    def check_settings(verbose, early_stopping_rounds, has_validation):
        """Refuse a ``verbose`` or ``early_stopping_rounds`` the monitor cannot
        follow (early stopping without an eval set other than the training
        data: ``has_validation`` False); the printing period ``verbose`` asks."""
        if isinstance(verbose, (bool, np.bool_)):
            period = 1 if verbose else 0
        elif isinstance(verbose, Integral) and verbose >= 0:
            period = int(verbose)
        else:
            raise ValueError(
                f"verbose must be a bool or a non-negative int (print every N iterations), got {verbose!r}."
            )
        if early_stopping_rounds is not None:
            if isinstance(early_stopping_rounds, bool) or not isinstance(early_stopping_rounds, Integral) \
                    or early_stopping_rounds < 1:
                raise ValueError(
                    f"early_stopping_rounds must be a positive int or None, got {early_stopping_rounds!r}."
                )
            if not has_validation:
                raise ValueError(
                    "early_stopping_rounds needs an eval_set other than the training data: pass "
                    "eval_set=[(X_val, y_val)] with eval_qid=[qid_val] (or a DataFrame with the query column)."
                )
        return period

    def __init__(self, ranker, train, sets, metrics, settings, *, early_stopping_rounds, verbose, callbacks,
                 set_settings=None, relabelled=False):
        watched = [name for name, data in sets if data is not None]
        self.watch = watched[-1] if watched else None
        self.period = self.check_settings(verbose, early_stopping_rounds, self.watch is not None)
        self.ranker = ranker
        self.train = train
        self.sets = sets
        self.metrics = metrics
        self.settings = settings
        self.set_settings = set_settings or {}
        self.early_stopping_rounds = early_stopping_rounds
        self.callbacks = callbacks
        self.n_estimators = int(ranker.n_estimators)
        self.history = {name: {m: [] for m in metrics} for name, _ in sets}
        self.best_score = None
        self.best_iteration = None
        self.relabelled = bool(relabelled) and self.watch is not None
        self.best_rescored = []  # per iteration: the best model's value on its labels (None: not rescored)
        self._best_raw = None  # the watched set's scores of the best iteration, when relabelled
        self.best_position_bias = None  # the ranker's position_bias_ at the best iteration
        self.n_done = None  # iterations seen; None when the monitor was not called
        self.stopped_by = None

    @property
    def eval_X(self):
        """Features of the sets the backend tracks (all but the training data)."""
        return [data.X for _, data in self.sets if data is not None]

    @property
    def active(self):
        """Whether the backend must call the monitor at all."""
        return bool(self.sets) or self.period > 0 or bool(self.callbacks)

    def _metric(self, metric, name, data, raw):
        try:
            return mean_metric(metric, data.y, raw, data.group_ptr, self.set_settings.get(name, self.settings),
                               weight=data.weight)
        except ValueError as error:  # the metric's check of the labels: say whose
            if name == self.TRAINING:
                raise
            where = f"eval_set[{name.rpartition('_')[2]}]" if name.startswith("validation_") else name
            if name in self.set_settings:  # click labels: the metric saw the debiased ones
                where += " (computed on the debiased click labels, each click's gain at 1 / propensity)"
            raise ValueError(f"{metric} on {where}: {error}") from None

    def __call__(self, t, raw_train, raw_evals):
        raws = iter(raw_evals)
        values = {}
        for name, data in self.sets:
            data, raw = (self.train, raw_train) if data is None else (data, next(raws))
            values[name] = {metric: self._metric(metric, name, data, raw) for metric in self.metrics}
            if name == self.watch:
                watched = data, raw
        stop = self.record_rescoring(
            t, values, lambda: watched[1],
            lambda best_raw: self._metric(self.metrics[0], self.watch, watched[0], best_raw))
        if self.prints(t, stop):
            training = None
            if self.TRAINING not in self.history:  # computed for this line only
                training = {m: self._metric(m, self.TRAINING, self.train, raw_train) for m in self.metrics}
            print(self.progress_line(t, training), file=sys.stdout, flush=True)
        return stop

    def record_rescoring(self, t, values, watched_raw, score_best):
        """:meth:`record`, the best iteration's model first scored again on
        this iteration's labels when ``relabelled`` (``score_best(raw)``: the
        first metric of the watched set's scores ``raw``); ``watched_raw()``
        gives this iteration's scores of the watched set, kept while best."""
        best_now = score_best(self._best_raw) if self.relabelled and self._best_raw is not None else None
        stop = self.record(t, values, best_now)
        if self.relabelled and self.best_iteration == t:
            self._best_raw = np.array(watched_raw(), dtype=np.float64)
        return stop

    def record(self, t, values, best_now=None):
        """Record the metric values of iteration ``t``, already computed
        (``values[name][metric]`` for every set and metric), and apply the
        stopping rule: the best iteration, early stopping, then the callbacks.
        True to stop. The one home of that rule: :meth:`__call__` and
        ``rankkit.dask`` (on the workers, and on the driver) use it.
        ``best_now``: the best iteration's value on this iteration's labels
        (``relabelled``), which the comparison uses."""
        for name, result in self.history.items():
            for metric, curve in result.items():
                curve.append(float(values[name][metric]))
        self.n_done = t + 1
        self.best_rescored.append(None if best_now is None else float(best_now))
        if best_now is not None:
            self.best_score = float(best_now)
        stop = False
        if self.watch is not None:
            score = self.history[self.watch][self.metrics[0]][-1]
            if self.early_stopping_rounds is not None and np.isnan(score):
                # No iteration would ever beat the first: the model would be cut back to one tree.
                raise ValueError(
                    f"early stopping watches {self.metrics[0]} on {self.watch}, and it is NaN: every "
                    "query of that eval set is excluded (a scorer with empty='exclude' and no relevant document "
                    "in any query). Give an eval set with relevant documents, a metric that scores such queries "
                    "(empty=1.0 or 0.0), or early_stopping_rounds=None."
                )
            if self.best_iteration is None or score > self.best_score:
                self.best_score, self.best_iteration = score, t
                # The estimate this iteration's tree was trained with (position_bias="estimate"
                # rewrites it before every iteration): the kept model's, if training is cut back here.
                theta = getattr(self.ranker, "position_bias_", None)
                self.best_position_bias = None if theta is None else np.array(theta, dtype=np.float64)
            if self.early_stopping_rounds is not None and t - self.best_iteration >= self.early_stopping_rounds:
                stop, self.stopped_by = True, "early stopping"
        # This fit's state, as XGBoost's and LightGBM's callbacks see their live booster:
        # a refit's callbacks would otherwise read the previous fit's attributes.
        ranker = self.ranker
        ranker.evals_result_, ranker.n_iterations_ = self.history, self.n_done
        ranker.best_iteration_, ranker.best_score_ = \
            (self.best_iteration, self.best_score) if self.watch is not None else (t, None)
        if self.callbacks and self.callbacks.after_iteration(self.ranker, t, self.history):
            stop = True
            self.stopped_by = self.stopped_by or "a callback"
        return stop

    def keep_best(self, ranker):
        """After the model is cut back to the best iteration (early stopping):
        ``ranker.position_bias_`` becomes the estimate of that iteration, the
        one its last tree was trained with, as training ``best_iteration + 1``
        iterations leaves it (``score(..., position=)`` and a saved model
        then debias as the kept model was trained), and with a relabelled
        watched set ``best_score`` becomes that iteration's value, on the
        labels of that estimate (what ``score`` gives the kept model). A
        no-op when no estimate was recorded at the best iteration (on Dask
        the workers report it: ``rankkit.dask`` sets ``best_position_bias``)."""
        if self.best_position_bias is None:
            return
        ranker.position_bias_ = self.best_position_bias
        if self.relabelled:
            self.best_score = self.history[self.watch][self.metrics[0]][self.best_iteration]

    def prints(self, t, stop):
        """Whether iteration ``t`` has a progress line (``stop``: training stops there)."""
        return bool(self.period) and (t % self.period == 0 or stop or t == self.n_estimators - 1)

    def progress_line(self, t, training=None):
        """``[t]\ttraining-ndcg@10:0.81234\tvalidation_0-ndcg@10:0.71234`` (XGBoost's format):
        ``training`` (``{metric: value}``, when the training data is not an
        eval set), then the last recorded value of every set and metric."""
        values = [] if training is None else [(self.TRAINING, m, v) for m, v in training.items()]
        values += [(name, m, curve[-1]) for name, result in self.history.items() for m, curve in result.items()]
        return f"[{t}]" + "".join(f"\t{name}-{m}:{v:.5f}" for name, m, v in values)

    def before_training(self, ranker):
        """The callbacks' ``before_training``."""
        if self.callbacks:
            self.callbacks.before_training(ranker)

    def after_training(self, ranker):
        """The final progress line, then the callbacks' ``after_training``."""
        if self.period and self.n_done is not None:
            if self.stopped_by is not None:
                line = f"stopped at iteration {self.n_done - 1} by {self.stopped_by}"
            else:
                line = f"trained {self.n_done} iterations"
            if self.watch is not None:
                line += (f", best iteration {self.best_iteration}, best {self.watch}-{self.metrics[0]} "
                         f"{self.best_score:.5f}")
            print(line, file=sys.stdout, flush=True)
        if self.callbacks:
            self.callbacks.after_training(ranker)


class PartMonitor:
    """The backend's callback on one part of the training rows and eval sets
    (a Dask worker's queries): every metric's per-query values summed over
    the part's queries and turned into sums over all the parts by ``total``
    (an all-reduction), so every part holds the exact means over all the
    queries; then the in-memory rule (:meth:`EvalMonitor.record`: best
    iteration, early stopping), the same on every part, so all stop together.

    ``monitor`` is an :class:`EvalMonitor` whose sets' data are placeholders
    (None for the training data); ``settings`` maps every set's name, and
    ``EvalMonitor.TRAINING``, to its metric settings. :meth:`start` gives the
    part's rows (:class:`QueryData` of the training rows and of every eval
    set but the training data), ``total`` and ``emit(t, line)`` for the
    progress lines (None on the parts that do not print).
    """

    def __init__(self, monitor, settings):
        self.monitor = monitor
        self.settings = settings

    def start(self, train, evals, total, emit):
        """This monitor on the part's rows (see the class docstring); returns self."""
        self.train, self.evals, self.total, self.emit = train, list(evals), total, emit
        self.monitor._best_raw = None
        return self

    def _values(self, data, raw, settings):
        metrics = self.monitor.metrics
        sums = []
        for metric in metrics:
            sums += metric_sum_count(metric, data.y, raw, data.group_ptr, settings, data.weight, part=True) \
                if data.y.size else [0.0, 0]
        sums = self.total(sums)  # the same on every worker: all raise together
        functions = settings.get(CALLABLE_METRICS, {})
        for j, metric in enumerate(metrics):
            if metric in functions:
                check_some_part_counted(metric, functions[metric], sums[2 * j + 1])
        return {m: sums[2 * j] / sums[2 * j + 1] if sums[2 * j + 1] else float("nan") for j, m in enumerate(metrics)}

    def __call__(self, t, raw_train, raw_evals):
        monitor = self.monitor
        values, evals = {}, iter(zip(self.evals, raw_evals))
        for name, data in monitor.sets:
            data, raw = (self.train, raw_train) if data is None else next(evals)
            values[name] = self._values(data, raw, self.settings[name])
            if name == monitor.watch:
                watched = data, raw
        # Every part rescores its rows of the best iteration (all-reduced), in step.
        stop = monitor.record_rescoring(
            t, values, lambda: watched[1],
            lambda best_raw: self._values(watched[0], best_raw, self.settings[monitor.watch])[monitor.metrics[0]])
        if monitor.prints(t, stop):
            training = None
            if monitor.TRAINING not in monitor.history:  # on every part: all-reduced
                training = self._values(self.train, raw_train, self.settings[monitor.TRAINING])
            if self.emit is not None:
                self.emit(t, monitor.progress_line(t, training))
        return stop


def has_varying_feature(X):
    """Whether some feature takes two values on the rows (missing counts as a value)."""
    if hasattr(X, "toarray"):
        X = X.toarray()  # only reached to explain a constant model
    X = np.asarray(X, dtype=np.float64)
    missing = np.isnan(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-missing columns
        varies = np.nanmax(X, axis=0, initial=-np.inf) > np.nanmin(X, axis=0, initial=np.inf)
    return bool(np.any(varies) or np.any(missing.any(axis=0) & ~missing.all(axis=0)))


def why_constant(train, grad_fn, objective, min_child_weight, backend_params, subsample=1.0):
    """The cause of a model without any split, found from the data and the
    first iteration's gradients (what the backend saw); ``min_child_weight``
    is the ranker's, in units of :func:`curvature_unit`."""
    ptr = train.group_ptr
    sizes = np.diff(ptr)
    if ptr.shape[0] > 1:
        lo = np.minimum.reduceat(train.y, ptr[:-1]) if train.y.size else np.zeros(0)
        hi = np.maximum.reduceat(train.y, ptr[:-1]) if train.y.size else np.zeros(0)
        ranked = (sizes >= 2) & (hi > lo)
        weighed = ranked if train.weight is None else ranked & (query_weights(train.weight, ptr) > 0)
        varied = int(np.sum(weighed))
    else:
        ranked, varied = np.zeros(0, dtype=bool), 0
    if varied == 0:
        if np.any(ranked):  # only queries of weight 0 have anything to rank
            return (
                f"Only queries of sample_weight 0 have documents with different labels ({int(np.sum(ranked))} "
                "of them), so there is nothing to rank: check the weights."
            )
        return (
            f"No query has two documents with different labels ({int(np.sum(sizes < 2))} of "
            f"{sizes.shape[0]} queries have a single document, the others equal labels), so "
            "there is nothing to rank: check the labels and the query ids."
        )
    grad, hess = grad_fn(np.zeros(train.y.shape[0]), 0)
    shift = getattr(objective, "mu", 0.0) * float(train.y.max(initial=0.0))
    if not np.any(grad) and shift > 5.0:
        # StochasticRank smooths the scores shifted down by sigma * mu * label:
        # with large labels the relevant documents sit far below every other
        # one, beyond the reach of noise of scale sigma, and no swap is drawn.
        return (
            f"{varied} queries have documents with different labels, but every gradient of StochasticRank is "
            f"zero: it shifts each document down by sigma * mu * label, here up to {shift:.3g} sigma "
            f"(mu={objective.mu}, labels up to {float(train.y.max()):g}), far beyond its smoothing of scale "
            "sigma. Give graded labels (0-4, say), or lower mu."
        )
    if not np.any(grad):
        return (
            f"{varied} queries have documents with different labels, but every gradient of "
            "the objective is zero: the metric sees no relevant document to move (check "
            "relevance_threshold, k and the metric against the labels)."
        )
    if not has_varying_feature(train.X):
        return "Every feature is constant on the training rows: no split can separate documents."
    unit = curvature_unit(objective, *weighted_counts(ptr, train.weight))
    total = float(hess.sum()) / unit
    per_query = objective.uses_hessian and objective.per_query_loss
    units = (f"queries of at most {UNIT_DOCUMENTS} documents: one unit is the mean curvature of such a query"
             if per_query else "documents")
    if total < 2.0 * min_child_weight:
        return (
            f"The training rows' hessians sum to {total:.3g} (in {units}), less than twice "
            f"min_child_weight={min_child_weight}, so every split leaves a child below it: "
            "lower min_child_weight."
        )
    if subsample < 1.0 and subsample * total < 2.0 * max(min_child_weight, 1.0):
        return (
            f"subsample={subsample} gives each tree about {subsample * total:.3g} of the training rows' hessian "
            f"sum of {total:.3g} (in {units}), too little to split: raise subsample."
        )
    # The engines' minimum split gains (XGBoost's gamma and its alias, LightGBM's and the numba engine's).
    gain_floors = [key for key, value in (backend_params or {}).items()
                   if key in ("gamma", "min_split_loss", "min_split_gain", "min_gain_to_split") and value]
    fixes = ["lower min_child_weight"] if min_child_weight > 0 else []
    fixes += [f"backend_params' {key}" for key in gain_floors]
    if backend_params and not gain_floors:
        fixes.append(f"check backend_params={backend_params}")
    if subsample < 1.0:
        fixes.append(f"raise subsample={subsample}")
    fixes = fixes or ["check that some feature separates documents of different labels within a query"]
    return (
        f"Every split left a child whose hessian sum is below min_child_weight={min_child_weight} "
        f"(the training rows sum to {total:.3g}, in {units}) or gained nothing: {' or '.join(fixes)}."
    )
