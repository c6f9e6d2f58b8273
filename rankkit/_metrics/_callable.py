"""Callable eval metrics: functions ``f(y_true, y_score, qid)`` and scikit-learn scorers.

``eval_metric`` entries that are not metric names are resolved here once per
fit into ``{name: function}``; the rankers carry that dict in their metric
settings under :data:`CALLABLE_METRICS`, so every place that evaluates a
metric by name (progress lines, ``evals_result_``, early stopping, ``score``,
the Dask workers) handles a callable through :func:`callable_sum_count`
without knowing about it.

A callable sees the rows of one eval set sorted by query, with ``qid`` the
query numbers ``0, 1, ...``; larger must be better (scikit-learn's scorers
already negate losses). On Dask every worker calls it on its own queries and
the values are averaged weighted by the number of queries, which is the
exact mean for any metric that is a mean over queries. A rankkit ranking
scorer is evaluated per query instead, so that a query it excludes
(``empty="exclude"``) does not count, as for a named metric.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics._scorer import _BaseScorer

from rankkit._metrics._scorers import _RankingScorer

#: Key of the ``{name: function}`` dict in the rankers' metric settings.
CALLABLE_METRICS = "callable_metrics"


class _Scores(RegressorMixin, BaseEstimator):
    """A stand-in estimator whose predictions are given scores, for scorers."""

    def __init__(self, scores=None):
        self.scores = scores

    def fit(self, X, y=None):  # pragma: no cover - never fitted, only asked to predict
        return self

    def predict(self, X):
        return self.scores


def metric_name(metric):
    """The name a callable metric is recorded under in ``evals_result_``."""
    if isinstance(metric, _RankingScorer):
        # A name given to the scorer object wins (two scorers of one metric with other settings).
        own = vars(metric).get("__name__")
        return own if own else metric._metric if metric._k is None else f"{metric._metric}@{metric._k}"
    if isinstance(metric, _BaseScorer):
        # A loss scorer returns the negated loss: name it so (scikit-learn's "neg_" names).
        prefix = "neg_" if metric._sign < 0 else ""
        return prefix + getattr(metric._score_func, "__name__", type(metric).__name__)
    return getattr(metric, "__name__", type(metric).__name__)


class _PerQuery:
    """A rankkit ranking scorer as an eval metric: ``f(y_true, y_score, qid)``
    gives its per-query values, ``nan`` for the queries that ``empty="exclude"``
    leaves out, so that :func:`callable_sum_count` counts only the queries
    its mean is over (a part without any counts for nothing)."""

    def __init__(self, scorer):
        self.scorer = scorer

    def __call__(self, y_true, y_score, qid):
        from rankkit._metrics._api import METRICS

        scorer = self.scorer
        return METRICS[scorer._metric](y_true, y_score, qid=qid, k=scorer._k, per_query=True, **scorer._kwargs)


class _QidKeyword:
    """A rankkit metric function (``ndcg_score``, ...) as an eval metric: it
    takes ``qid`` by keyword only, while eval metrics are called ``f(y_true, y_score, qid)``."""

    def __init__(self, function):
        self.function = function

    def __call__(self, y_true, y_score, qid):
        return self.function(y_true, y_score, qid=qid)


def metric_function(metric):
    """``f(y_true, y_score, qid)`` of a callable ``eval_metric`` entry: one
    number, or per-query values for a rankkit ranking scorer (:class:`_PerQuery`)."""
    from rankkit._metrics._api import METRICS

    if isinstance(metric, _RankingScorer):
        return _PerQuery(metric)
    if any(metric is function for function in METRICS.values()):
        # Called positionally, it failed with "ndcg_score() takes 2 positional arguments but 3 were given".
        return _QidKeyword(metric)
    if isinstance(metric, _BaseScorer):
        # Any other scorer scores an estimator on X: one that predicts the scores.
        def scorer(y_true, y_score, qid):
            return metric(_Scores(y_score), np.zeros((y_score.shape[0], 1)), y_true)

        return scorer
    return metric


def callable_sum_count(name, function, y, raw, group_ptr, query_weight=None, part=False):
    """``(sum, count)`` that a part of the queries adds to the mean over all
    of them: ``(value * n_queries, n_queries)``, or for a ranking scorer
    the sum and number of its queries not excluded (see the module
    docstring), weighted by ``query_weight`` when given (a ranking scorer
    only: any other callable returns one number for the whole set). On a
    ``part`` of a set, a NaN from a plain function counts no query: a
    metric with ``empty="exclude"`` gives NaN on a part whose queries it all
    excludes, and the other parts still make the mean."""
    n_queries = group_ptr.shape[0] - 1
    qid = np.repeat(np.arange(n_queries), np.diff(group_ptr))
    if isinstance(function, _PerQuery):
        # Weighing the scorer's mean by all queries would count the excluded
        # ones; the sum over the counted ones is exact, as mean_metric's.
        values = function(y, raw, qid)
        keep = ~np.isnan(values)
        if query_weight is not None:
            return float((query_weight[keep] * values[keep]).sum()), float(query_weight[keep].sum())
        return float(values[keep].sum()), int(keep.sum())
    value = function(y, raw, qid)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"eval_metric {name!r} returned {value!r}; it must return one number.") from None
    if part and np.isnan(value):
        return 0.0, 0
    if not np.isfinite(value):
        raise ValueError(
            f"eval_metric {name!r} returned {value}; it must return a finite number (larger is better)."
        )
    return value * n_queries, n_queries


def check_some_part_counted(name, function, count):
    """A plain function's nan on every part of a set (``count`` 0 after the
    parts' sums) is the error it is on the whole set in memory: a bug, or an
    ``empty="exclude"`` that left no query, and no mean to report."""
    if count == 0 and not isinstance(function, _PerQuery):
        raise ValueError(
            f"eval_metric {name!r} returned nan on every part of the set; it must return a finite number "
            "(larger is better)."
        )
