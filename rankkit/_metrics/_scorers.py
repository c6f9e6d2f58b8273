"""scikit-learn scorers for ranking metrics.

A ranking metric is a mean over queries, so a scorer needs the query id of
every row it scores. It gets them either

* through metadata routing: the scorer requests ``qid`` by default, so with
  ``sklearn.set_config(enable_metadata_routing=True)``,
  ``GridSearchCV(est, scoring=make_ranking_scorer("ndcg@10"),
  cv=QueryKFold()).fit(X, y, qid=qid)`` hands each test fold's ``qid`` to
  the scorer; or
* from the query column (``qid_col``, default ``"qid"``) of a DataFrame
  ``X``, which works without routing.

The estimator receives ``X`` unchanged, column included: rankkit rankers
drop their own query column, a ``Pipeline`` passes it through to its
ranker, any other estimator must drop it itself (e.g. a
``ColumnTransformer(..., remainder="passthrough")`` that drops ``"qid"``),
or it would use the query id as a feature. :func:`scoring_input` states
this rule once; :mod:`rankkit.evaluation` follows it too.

With neither, scoring raises an error: rows are never pooled into one query.

``sample_weight`` (requested with ``set_score_request(sample_weight=True)``)
weighs queries, not rows, exactly as the rankers' ``score``: a query weighs
the mean of its rows' weights.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
from sklearn.metrics._scorer import _BaseScorer

from rankkit._groups import make_groups, qid_column_advice, split_qid
from rankkit._metrics._common import METRIC_IDS, TREC_TIES, parse_metric
from rankkit._threads import limit_threads
from rankkit._validation import check_sample_weight

__all__ = ["make_ranking_scorer", "get_ranking_scorer", "SCORER_METRICS"]

#: Metric names a scorer accepts, each optionally followed by ``@k``.
SCORER_METRICS = tuple(METRIC_IDS)

# Parameters of the metric functions that a scorer sets itself.
# doc_ids: a scorer sees X and y only, so it cannot break ties by document id.
_RESERVED = {"y_true", "y_score", "qid", "k", "per_query", "doc_ids"}


def _metric_functions():
    # Imported on use: rankkit.metrics re-exports this module.
    from rankkit._metrics._api import METRICS

    return METRICS


def scoring_input(X, qid, qid_col):
    """``(X, qid)``: the rows as an estimator predicts on them, and their query ids.

    The ids are ``qid``, or the ``qid_col`` column of a DataFrame ``X``
    (both is :func:`rankkit._groups.split_qid`'s error; neither gives
    ``None``, and the caller's error says how to pass them). The column
    stays in ``X``: the estimator gets the rows as the user holds them, as
    ``pipe.score(X, y)`` does. rankkit rankers (and XGBoost's ``XGBRanker``)
    drop their own query column, a ``Pipeline`` fitted on such a DataFrame
    passes it through to its ranker, and any other estimator must drop it
    itself. No guess is made for it: an estimator fitted on the features
    alone may still expect the column and drop it in ``predict``.
    """
    _, qid = split_qid(X, qid, qid_col)
    return X, qid


def _weighted_query_mean(values, qid, sample_weight):
    """The mean of per-query ``values`` (queries in order of first appearance,
    ``nan`` for excluded ones) weighted as the rankers' ``score`` weighs them
    (:func:`rankkit._training.mean_metric`): each query by
    :func:`rankkit._groups.query_weights`, the mean of its rows' weights.
    ``mean_metric`` itself cannot serve here: it fixes ``ties="worst"``,
    while a scorer takes any tie policy."""
    # Imported on use: rankkit._training imports the metrics package.
    from rankkit._groups import query_weights

    groups = make_groups(qid)
    weight = check_sample_weight(sample_weight, groups.n_samples, positive=True)
    query_weight = query_weights(np.ascontiguousarray(groups.sort(weight)), groups.group_ptr)
    keep = ~np.isnan(values)
    count = query_weight[keep].sum()
    if count > 0:
        return float((query_weight[keep] * values[keep]).sum() / count)
    from rankkit._metrics._api import warn_no_query  # on use, as _metric_functions

    warn_no_query("scorer", weighted=True, stacklevel=4)
    return float("nan")


def _ranking_score(y_true, y_pred, **kwargs):
    # Placeholder score function kept for scikit-learn's repr and signature
    # inspection; _RankingScorer._score calls the metric function itself.
    raise NotImplementedError  # pragma: no cover


class _RankingScorer(_BaseScorer):
    """Scorer of one ranking metric; build it with :func:`make_ranking_scorer`."""

    # Request qid by default so routed CV passes each test fold's query ids;
    # sample_weight is known but not requested, as for the rankers' score
    # (routing it unrequested is then scikit-learn's error, not a silent drop).
    # position is known but not requested either: routed to the ranker alone,
    # the scorer would score its folds' clicks as grades without a word, so
    # routing it is scikit-learn's error before any fit (and, requested, ours).
    __metadata_request__score = {"qid": True, "sample_weight": None, "position": None}

    def __init__(self, metric, k, qid_col, metric_kwargs):
        super().__init__(_ranking_score, 1, dict(metric_kwargs), response_method="predict")
        self._metric = metric
        self._k = k
        self._qid_col = qid_col

    def __repr__(self):
        name = self._metric if self._k is None else f"{self._metric}@{self._k}"
        extra = "".join(f", {key}={value!r}" for key, value in self._kwargs.items())
        col = "" if self._qid_col == "qid" else f", qid_col={self._qid_col!r}"
        return f"make_ranking_scorer({name!r}{col}{extra})"

    def set_score_request(self, **kwargs):
        """Request metadata for scoring (scikit-learn metadata routing), e.g.
        ``set_score_request(sample_weight=True)``; a request not given here
        stays as it was (``qid`` requested by default), as the rankers'
        ``set_score_request``."""
        # scikit-learn's replaces every request of the scorer, so asking for
        # sample_weight alone would drop the default request of qid (every
        # routed fold would then lack its query ids), and a later call for qid
        # alone (an alias) would drop sample_weight=True: the weights, still
        # consumed by the estimator's fit, would silently stop weighing the score.
        for param, alias in self.get_metadata_routing().score.requests.items():
            kwargs.setdefault(param, alias)
        return super().set_score_request(**kwargs)

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        qid = kwargs.pop("qid", None)
        sample_weight = kwargs.pop("sample_weight", None)
        position = kwargs.pop("position", None)
        if kwargs:
            raise TypeError(
                f"{self!r} received unexpected metadata {sorted(kwargs)}; a ranking scorer "
                "only takes qid and sample_weight."
            )
        ranker = estimator[-1] if hasattr(estimator, "steps") else estimator  # a Pipeline's ranker
        column = getattr(ranker, "position_col", None) if getattr(ranker, "position_bias", None) else None
        if position is not None or (column is not None and column in getattr(X, "columns", ())):
            raise ValueError(
                f"{self!r} scores y as relevance grades and got the positions of click labels "
                f"({'position=' if position is not None else f'the column {column!r}'}): it would score the "
                "clicks as if they were grades. Score a ranker on clicks with scoring=None (its score "
                "debiases the clicks by position, docs/user_guide.md section 11), or with a scorer on "
                "relevance labels without positions."
            )
        X, qid = scoring_input(X, qid, self._qid_col)
        if qid is None:
            raise ValueError(
                f"{self!r} needs query ids, and got none: enable metadata routing "
                "(sklearn.set_config(enable_metadata_routing=True)) and pass them: "
                "GridSearchCV(...).fit(X, y, qid=qid), or cross_validate(..., params={'qid': qid}) "
                f"(cross_val_score alike); or score {qid_column_advice(self._qid_col)}. "
                "Rows are never pooled into one query."
            )
        y_pred = method_caller(estimator, "predict", X, pos_label=None)
        func = _metric_functions()[self._metric]
        with limit_threads(getattr(ranker, "n_jobs", None)):  # the threads of the ranker's own score
            if sample_weight is None:
                return float(func(y_true, y_pred, qid=qid, k=self._k, **self._kwargs))
            values = func(y_true, y_pred, qid=qid, k=self._k, per_query=True, **self._kwargs)
        return _weighted_query_mean(values, qid, sample_weight)


def make_ranking_scorer(metric, *, qid_col="qid", **metric_kwargs):
    """Make a scikit-learn scorer from a ranking metric.

    The score is the metric's mean over the queries of the scored rows
    (:mod:`rankkit.metrics`), greater is better. Ties among predicted
    scores default to ``ties="worst"`` (less relevant documents first), the
    pessimistic convention of CatBoost's metrics: a model that cannot tell
    documents apart gets no credit for the order it happens to output.

    ``"err"`` and ``"pfound"`` default to ``err_mapping="chapelle"``, because graded labels
    (0..4) are far more common than probability labels; then the stop
    probability is ``(2^r - 1) / 2^{r_max}`` with ``r_max`` the largest label
    of the scored rows unless ``err_max_label`` is given. Pass
    ``err_max_label`` (e.g. 4) so that every CV fold uses the same scale, or
    ``err_mapping=None`` for labels that are already probabilities.

    Parameters
    ----------
    metric : str
        A name of ``SCORER_METRICS`` (``"ndcg"``, ``"dcg"``, ``"err"``,
        ``"mrr"``, ``"map"``, ``"expdcg"``, ``"precision"``, ``"recall"``,
        ``"rprecision"``, ``"pfound"``), optionally with a cut-off: ``"ndcg@10"``.
    qid_col : str or None, default="qid"
        Query column of a DataFrame ``X``, read when ``qid`` is not routed.
    **metric_kwargs
        Parameters of the metric function, e.g. ``ties``, ``gain``,
        ``empty``, ``relevance_threshold``, ``err_mapping``,
        ``err_max_label``, ``decay``, or ``k`` (instead of ``@k``).

    Returns
    -------
    scorer : callable ``scorer(estimator, X, y, qid=None, sample_weight=None)``
        Usable as ``scoring=`` in ``GridSearchCV``, ``cross_val_score`` and
        ``cross_validate``; requests ``qid`` through metadata routing, and
        ``sample_weight`` after ``set_score_request(sample_weight=True)``
        (a query-weighted mean, as the rankers' ``score``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> from rankkit.metrics import make_ranking_scorer
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"qid": [0, 0, 0, 1, 1], "x": [0.0, 1.0, 2.0, 0.0, 3.0]})
    >>> y = np.array([0, 1, 2, 1, 0])
    >>> class DropQid(Ridge):  # a non-rankkit model must drop the query column
    ...     def predict(self, X):
    ...         return super().predict(X.drop(columns="qid"))
    >>> est = DropQid().fit(frame[["x"]], y)
    >>> make_ranking_scorer("mrr")(est, frame, y)
    0.75
    """
    name, k = parse_metric(metric, metric_kwargs.pop("k", None))
    functions = _metric_functions()
    params = inspect.signature(functions[name]).parameters
    allowed = sorted(set(params) - _RESERVED)
    bad = sorted(set(metric_kwargs) - set(allowed))
    if bad:
        raise TypeError(
            f"make_ranking_scorer({metric!r}): unknown parameter(s) {bad}; the {name} metric takes "
            f"{allowed} (and k or '@k')."
        )
    if qid_col is not None and not isinstance(qid_col, str):
        raise TypeError(f"qid_col must be a column name (str) or None, got {qid_col!r}.")
    if metric_kwargs.get("ties") in TREC_TIES:
        raise ValueError(
            f"make_ranking_scorer({metric!r}): ties={metric_kwargs['ties']!r} needs document ids, which a scorer "
            "does not receive; use ties='worst' or 'average' here, and rankkit.evaluation for trec_eval numbers."
        )
    if name in ("err", "pfound"):
        metric_kwargs.setdefault("err_mapping", "chapelle")
    metric_kwargs.setdefault("ties", "worst")
    # Fail now on bad values (ties="bogus", k=0, ...), not inside a CV loop.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a one-row probe may well be an empty query
        functions[name]([0.0], [0.0], qid=[0], k=k, **metric_kwargs)
    return _RankingScorer(name, k, qid_col, metric_kwargs)


def get_ranking_scorer(scoring):
    """Resolve a scorer name such as ``"ndcg@10"``; a scorer object passes through.

    Valid names are ``SCORER_METRICS`` (``ndcg``, ``dcg``, ``err``, ``mrr``,
    ``map``, ``expdcg``, ``precision``, ``recall``, ``rprecision``,
    ``pfound``), each optionally with ``@k``; the scorer has the
    defaults of :func:`make_ranking_scorer`.

    Examples
    --------
    >>> from rankkit.metrics import get_ranking_scorer
    >>> get_ranking_scorer("ndcg@10")
    make_ranking_scorer('ndcg@10', ties='worst')
    """
    for name, function in _metric_functions().items():
        if scoring is function:
            # A metric function is callable, but not with a scorer's (estimator, X, y): passed
            # through, it failed at scoring time with a TypeError about positional arguments.
            raise TypeError(
                f"scoring={function.__name__} is a metric function f(y_true, y_score, qid=...), not a scorer "
                f"f(estimator, X, y); pass the name {name!r} (e.g. '{name}@10') or "
                f"make_ranking_scorer({name!r}, ...)."
            )
    if callable(scoring):
        return scoring
    if not isinstance(scoring, str):
        raise TypeError(
            f"scoring must be a metric name such as 'ndcg@10' or a scorer, got {scoring!r}."
        )
    if scoring.lower().strip().partition("@")[0] not in METRIC_IDS:
        raise ValueError(
            f"Unknown ranking scorer {scoring!r}; valid names are {list(SCORER_METRICS)}, "
            "each optionally with a cut-off '@k' (e.g. 'ndcg@10', 'err@5')."
        )
    return make_ranking_scorer(scoring)
