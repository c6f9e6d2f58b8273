"""Comparing rankers: per-query results, confidence intervals, paired tests, tables.

* :func:`evaluate` -- every metric of every ranker on every query, as a long
  DataFrame ``(query, ranker, metric, value)``; rankers are fitted models or
  score arrays.
* :func:`evaluate_runs` -- the same for TREC runs (files read with
  :mod:`rankkit.trec`) against their qrels, with trec_eval's tie order.
* :func:`cross_evaluate` -- the same with each ranker fitted on the training
  part of every :class:`~rankkit.model_selection.QueryKFold` fold: every
  query is a test query exactly once.
* :func:`compare` -- means with bootstrap confidence intervals, a paired test
  of every ranker against a baseline with a correction for multiple
  comparisons, and win/tie/loss counts; :class:`Comparison` prints it as
  Markdown or LaTeX.

Queries are the unit of every statistic: a ranker's score on a data set is
the mean of its per-query values, the bootstrap resamples queries, and the
paired tests pair two rankers' values on the same query.
"""

from __future__ import annotations

import inspect
import numbers
import os
import warnings

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.utils import _safe_indexing

from rankkit import _stats
from rankkit._groups import QueryGroups, factorize_qid, missing_qid_error, split_qid
from rankkit._metrics._api import METRICS, doc_id_key, evaluate_sorted, trec_eval_scores
from rankkit._metrics._common import TREC, TREC_TIES, parse_metric
from rankkit._metrics._scorers import scoring_input
from rankkit._threads import limit_threads
from rankkit._validation import check_labels, check_scores

__all__ = ["evaluate", "evaluate_runs", "cross_evaluate", "compare", "Comparison"]

COLUMNS = ["query", "ranker", "metric", "value"]


# -- per-query results ----------------------------------------------------------------------------
def _metric_kwargs(metric, ties, metric_params):
    """``(name, k, kwargs)`` of one metric: the parameters of ``metric_params``
    that its function takes (``gain`` goes to NDCG and DCG only, ``empty`` to
    the metrics with the empty rule), ERR's and PFound's Chapelle mapping by
    default (graded labels are the common case, as for scorers)."""
    name, k = parse_metric(metric)
    accepted = set(inspect.signature(METRICS[name]).parameters)
    kwargs = {key: value for key, value in metric_params.items() if key in accepted}
    if name in ("err", "pfound"):
        kwargs.setdefault("err_mapping", "chapelle")
    kwargs["ties"] = ties
    return name, k, kwargs


def _check_metric_params(metric_params):
    """Every entry of ``metric_params`` must be a parameter of some metric
    (a typo is an error; ``gain`` with only MAP in the table is not: one set
    of settings serves any table of metrics)."""
    accepted = set()
    for function in METRICS.values():
        accepted |= set(inspect.signature(function).parameters)
    accepted -= {"y_true", "y_score", "qid", "k", "per_query", "ties", "doc_ids"}
    unknown = sorted(set(metric_params) - accepted)
    if unknown:
        raise TypeError(f"unknown metric parameter(s) {unknown}: the metrics take {sorted(accepted)}.")


def _check_evaluation(metrics, ties, doc_ids, metric_params):
    """Every setting of an evaluation checked before anything is computed or
    fitted: the metric names, the parameter names and values (each value on
    a metric that takes it, whether or not the table lists one), ``ties``
    and ``doc_ids``. Returns the canonical metric names."""
    metrics = _check_metrics(metrics)
    _check_metric_params(metric_params)
    if doc_ids is not None and ties not in TREC_TIES:
        raise ValueError(f"doc_ids is used only with ties='trec' or 'trec_double', got ties={ties!r}.")
    if ties in TREC_TIES and doc_ids is None:
        raise ValueError(f"ties={ties!r} breaks ties by document id, as trec_eval does: pass doc_ids= (one id per "
                         "row).")
    probes = {"ndcg"}  # ties
    for key in metric_params:
        probes.add(next(name for name, function in METRICS.items() if key in inspect.signature(function).parameters))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a one-row probe is an empty query
        for name in sorted(probes):
            _, _, kwargs = _metric_kwargs(name, "worst" if ties in TREC_TIES else ties, metric_params)
            METRICS[name]([0.0], [0.0], qid=[0], **kwargs)
    return metrics


def _check_n_jobs(n_jobs):
    """``n_jobs`` of the evaluation functions: None or a thread count with scikit-learn's meaning."""
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0):
        raise ValueError(f"n_jobs must be a positive thread count, -1 for every core (-2 all but one), or None for "
                         f"numba's default, got {n_jobs!r}.")


def _check_metrics(metrics):
    if isinstance(metrics, str):
        metrics = [metrics]
    metrics = list(metrics)
    if not metrics:
        raise ValueError("metrics is empty: pass metric names such as ['ndcg@10', 'map'].")
    canonical = []
    for metric in metrics:
        name, k = parse_metric(metric)  # unknown names raise, listing the valid ones
        canonical.append(name if k is None else f"{name}@{k}")
    if len(set(canonical)) < len(canonical):
        raise ValueError(f"metrics lists a metric twice: {metrics}.")
    return canonical


def _scores(rankers, X):
    """``{name: score array}`` from fitted rankers (``predict(X)``) or arrays."""
    if not isinstance(rankers, dict) or not rankers:
        raise TypeError(
            "rankers must be a non-empty dict {name: fitted ranker or array of scores}, "
            f"got {type(rankers).__name__}."
        )
    out = {}
    for name, ranker in rankers.items():
        # The results name rankers by str(name): {1: ..., "1": ...} would keep only one of them.
        if str(name) in out:
            raise ValueError(f"rankers has two names that read {str(name)!r}: give every ranker its own name.")
        if hasattr(ranker, "predict"):
            if X is None:
                raise ValueError(f"ranker {name!r} is a model: pass X to predict its scores.")
            ranker = ranker.predict(X)
        out[str(name)] = check_scores(ranker, name=f"the scores of ranker {name!r}")
    return out


def evaluate(rankers, X, y, *, qid=None, metrics=("ndcg@10",), ties="worst", doc_ids=None, qid_col="qid",
             n_jobs=None, **metric_params):
    """Per-query values of several rankers on the same queries.

    Parameters
    ----------
    rankers : dict
        ``{name: ranker}``; a ranker is a fitted model (its ``predict(X)``
        gives the scores) or an array of scores, one per row.
    X : array-like, DataFrame or None
        Features for the fitted models (``None`` if every ranker is an array).
        A DataFrame may carry the query column ``qid_col``, which the models
        receive with ``X``, as from a scorer (:mod:`rankkit.metrics`):
        rankkit rankers drop their own, a ``Pipeline`` fitted on such a
        DataFrame passes it through to its ranker; a model fitted on the
        features alone takes ``X`` without the column and ``qid=``.
    y : array-like of shape (n_samples,)
        Relevance labels.
    qid : array-like of shape (n_samples,), default=None
        Query id of every row, unless ``X`` has the query column.
    metrics : str or list of str, default=("ndcg@10",)
        Metric names of :mod:`rankkit.metrics` with optional cut-off
        (``"ndcg@10"``, ``"map"``, ``"precision@5"``, ...).
    ties : {"worst", "average", "best", "input", "trec", "trec_double"}, default="worst"
        Tie policy of every metric; ``"trec"`` and ``"trec_double"``
        (trec_eval's order, scores in single precision as trec_eval up to
        9.0.8 and pytrec_eval hold them, or in double as trec_eval 10 does;
        :func:`rankkit.metrics.ndcg_score`) need ``doc_ids``.
    doc_ids : array-like of shape (n_samples,), default=None
        Document ids, for ``ties="trec"`` or ``"trec_double"``.
    qid_col : str or None, default="qid"
        Query column of a DataFrame ``X``.
    n_jobs : int or None, default=None
        Threads of the metric computation, with scikit-learn's meaning (-1
        every core); None: numba's default (every core unless
        ``NUMBA_NUM_THREADS`` says otherwise). Fitted models predict with
        their own ``n_jobs``.
    **metric_params
        Metric parameters, each passed to the metrics that take it:
        ``gain``, ``empty``, ``relevance_threshold``, ``err_mapping``,
        ``err_max_label``, ``decay``. ERR and PFound default to
        ``err_mapping="chapelle"``. For trec_eval's numbers pass
        ``ties="trec", gain="linear", empty=0.0``.

    Returns
    -------
    DataFrame
        Columns ``query`` (the query id), ``ranker``, ``metric``, ``value``;
        one row per query, ranker and metric, by metric, then ranker, then
        query in order of first appearance. Queries excluded by
        ``empty="exclude"`` have no row.

    Examples
    --------
    >>> from rankkit.evaluation import evaluate
    >>> evaluate({"a": [3, 2, 1], "b": [1, 2, 3]}, None, [1, 0, 0], qid=[5, 5, 5], metrics="mrr")
       query ranker metric     value
    0      5      a    mrr  1.000000
    1      5      b    mrr  0.333333
    """
    metrics = _check_evaluation(metrics, ties, doc_ids, metric_params)
    _check_n_jobs(n_jobs)
    if X is not None:
        # The rows and query ids as a scorer takes them: the models see X as given.
        X, qid = scoring_input(X, qid, qid_col)
    if qid is None:
        raise missing_qid_error(X, qid_col)
    y = check_labels(y, name="y")
    codes, uniques = factorize_qid(qid, y.shape[0])
    groups = QueryGroups(codes, uniques)
    scores = _scores(rankers, X)
    doc_key = None if doc_ids is None else doc_id_key(doc_ids, groups)
    query_ids = np.asarray(uniques)
    y_sorted = groups.sort(y)
    frames = []
    for metric in metrics:
        name, k, kwargs = _metric_kwargs(metric, ties, metric_params)
        for ranker, score in scores.items():
            if score.shape[0] != y.shape[0]:
                raise ValueError(f"ranker {ranker!r} has {score.shape[0]} scores for {y.shape[0]} rows.")
            if ties == TREC:  # trec_eval up to 9.0.8 compares scores in single precision
                score = trec_eval_scores(score)
            with limit_threads(n_jobs):
                values = evaluate_sorted(name, y_sorted, groups.sort(score), groups.group_ptr, k=k,
                                         doc_key=doc_key, **kwargs)
            keep = ~np.isnan(values)
            frames.append(pd.DataFrame({"query": query_ids[keep], "ranker": ranker, "metric": metric,
                                        "value": values[keep]}))
    return pd.concat(frames, ignore_index=True)


def evaluate_runs(runs, qrels, *, metrics=("ndcg@10",), missing_queries="error", ties="trec", n_jobs=None,
                  **metric_params):
    """Per-query values of TREC runs against their qrels, with trec_eval's tie order.

    Every run is aligned with the qrels by :func:`rankkit.trec.align` (which
    states the conventions and the errors) and evaluated with trec_eval's
    order; runs may rank different documents, as long as they rank every
    relevant judged one.

    Parameters
    ----------
    runs : dict
        ``{name: run}``, each a DataFrame from :func:`rankkit.trec.read_run`
        or the path of a run file.
    qrels : DataFrame or path
        From :func:`rankkit.trec.read_qrels`, or the path of a qrels file.
    metrics : str or list of str, default=("ndcg@10",)
        As in :func:`evaluate`.
    missing_queries : {"error", "drop"}, default="error"
        As in :func:`rankkit.trec.align`.
    ties : {"trec", "trec_double"}, default="trec"
        trec_eval's order on scores in single precision (trec_eval up to
        9.0.8, pytrec_eval, ir_measures) or in double (trec_eval 10).
    n_jobs : int or None, default=None
        As in :func:`evaluate`.
    **metric_params
        As in :func:`evaluate`. For trec_eval's numbers pass
        ``gain="linear", empty=0.0``.

    Returns
    -------
    DataFrame
        The columns of :func:`evaluate`, the query ids as in the files.
    """
    from rankkit.trec import RUN_COLUMNS, QRELS_COLUMNS, align, read_qrels, read_run

    if not isinstance(runs, dict) or not runs:
        raise TypeError("runs must be a non-empty dict {name: run DataFrame from rankkit.trec.read_run, or a path}.")
    if not isinstance(ties, str) or ties not in TREC_TIES:
        raise ValueError(f"evaluate_runs ranks by trec_eval's order: ties must be 'trec' or 'trec_double', got "
                         f"{ties!r}; use evaluate for another tie rule.")
    if "doc_ids" in metric_params:
        raise TypeError("evaluate_runs got doc_ids: the document ids are the runs'.")
    _check_evaluation(metrics, "worst", None, metric_params)
    _check_n_jobs(n_jobs)
    runs = {name: _trec_frame(run, read_run, RUN_COLUMNS, f"runs[{name!r}]") for name, run in runs.items()}
    qrels = _trec_frame(qrels, read_qrels, QRELS_COLUMNS, "qrels")
    frames = []
    for name, run in runs.items():
        y, score, qid, doc_ids = align(run, qrels, missing_queries=missing_queries)
        frames.append(evaluate({name: score}, None, y, qid=qid, metrics=metrics, ties=ties, doc_ids=doc_ids,
                               n_jobs=n_jobs, **metric_params))
    result = pd.concat(frames, ignore_index=True)
    # Grouped by metric then ranker, as evaluate's.
    order = {m: i for i, m in enumerate(dict.fromkeys(result["metric"]))}
    return result.sort_values("metric", key=lambda col: col.map(order), kind="stable").reset_index(drop=True)


def _trec_frame(data, reader, columns, name):
    """A run or qrels DataFrame, read first when ``data`` is a path."""
    if isinstance(data, (str, os.PathLike)):
        return reader(data)
    if not isinstance(data, pd.DataFrame) or not set(columns) <= set(data.columns):
        raise TypeError(f"{name} must be a DataFrame from rankkit.trec.{reader.__name__} (columns {columns}) or "
                        f"the path of the file, got {type(data).__name__}.")
    return data


def cross_evaluate(rankers, X, y, *, qid=None, cv=5, metrics=("ndcg@10",), ties="worst", doc_ids=None,
                   qid_col="qid", n_jobs=None, **metric_params):
    """Per-query test values of rankers fitted on cross-validation folds.

    Every ranker is cloned and fitted on the training queries of every fold
    of ``cv`` and scores that fold's test queries; the folds split by query,
    so every query is a test query exactly once and all rankers are judged
    on the same queries, which pairs them for :func:`compare`.

    A ranker is fitted as you would fit it: ``fit(X_train, y_train,
    qid=qid_train)`` when the query ids are given as ``qid=``, and
    ``fit(X_train, y_train)`` when they are the query column of a
    DataFrame ``X``, which then stays in ``X`` (so a ``Pipeline`` passing it
    through to a ranker works without metadata routing). It predicts as in
    :func:`evaluate`.

    Parameters
    ----------
    rankers : dict
        ``{name: estimator}``, unfitted. With ``qid=``, each must accept
        ``qid=`` in ``fit`` (a ``Pipeline`` does with metadata routing
        enabled); with a query column, each must find it (rankkit rankers
        with the same ``qid_col``).
    cv : int or cross-validator, default=5
        An int is ``QueryKFold(n_splits=cv)``; a splitter must yield query
        splits from ``split(X, y, qid=qid)`` (e.g.
        :class:`~rankkit.model_selection.QueryKFold` with ``shuffle=True``).
    X, y, qid, metrics, ties, doc_ids, qid_col, **metric_params
        As in :func:`evaluate`.
    n_jobs : int or None, default=None
        Threads of the metric computation, as in :func:`evaluate`. The folds
        run one after another, and each ranker fits and predicts with its
        own ``n_jobs`` (set it on the ranker to bound those threads).

    Returns
    -------
    DataFrame
        The columns of :func:`evaluate` and ``fold``, the test fold of the query.
    """
    from rankkit.model_selection import QueryKFold

    _check_evaluation(metrics, ties, doc_ids, metric_params)  # before the fits, not after them
    _check_n_jobs(n_jobs)
    fit_qid = qid is not None  # given apart from X: the rankers can only get them as qid=
    # The rows and query ids as a scorer takes them: the rankers fit and predict on X as given.
    X, qid = scoring_input(X, qid, qid_col)
    if qid is None:
        raise missing_qid_error(X, qid_col)
    qid = np.asarray(qid)
    # The splitter gets the ids as qid=, and so X without their column (it would find them twice).
    X_split, _ = split_qid(X, None, qid_col)
    y = check_labels(y, name="y")
    if doc_ids is not None:  # their length and uniqueness per query, before the fits too
        doc_id_key(doc_ids, QueryGroups(*factorize_qid(qid, y.shape[0])))
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        cv = QueryKFold(n_splits=int(cv))
    if (isinstance(cv, bool) or not isinstance(cv, numbers.Integral)) and not hasattr(cv, "split"):
        raise TypeError(f"cv must be an int or a query splitter with split(X, y, qid=qid) such as QueryKFold, "
                        f"got {type(cv).__name__}.")
    if not isinstance(rankers, dict) or not rankers:
        raise TypeError("rankers must be a non-empty dict {name: unfitted estimator}.")
    for name, estimator in rankers.items():
        # Checked before any fitting: clone's own error printed a whole array of scores.
        if not hasattr(estimator, "fit"):
            raise TypeError(f"ranker {name!r} is of type {type(estimator).__name__}, not an estimator: cross_evaluate "
                            "fits a clone of every ranker on each fold; pass scores of fitted rankers to evaluate.")
    if len({str(name) for name in rankers}) < len(rankers):
        raise ValueError(f"rankers has two names that read the same as text ({list(rankers)}): the results name "
                         "rankers by str(name); give every ranker its own name.")
    predictions = {name: np.full(y.shape[0], np.nan) for name in rankers}
    fold_of_row = np.full(y.shape[0], -1)
    for fold, (train, test) in enumerate(cv.split(X_split, y, qid=qid)):
        if np.any(fold_of_row[test] >= 0):
            raise ValueError("cv puts a row in two test folds: cross_evaluate needs a partition of the "
                             "queries, such as QueryKFold.")
        fold_of_row[test] = fold
        X_train, X_test = _safe_indexing(X, train), _safe_indexing(X, test)
        fit_params = {"qid": qid[train]} if fit_qid else {}
        for name, estimator in rankers.items():
            model = clone(estimator).fit(X_train, y[train], **fit_params)
            predictions[name][test] = model.predict(X_test)
    if np.any(fold_of_row < 0):
        raise ValueError("cv left rows out of every test fold: cross_evaluate needs every query tested once.")
    result = evaluate(predictions, None, y, qid=qid, metrics=metrics, ties=ties, doc_ids=doc_ids, n_jobs=n_jobs,
                      **metric_params)
    codes, uniques = factorize_qid(qid)
    fold_of_query = pd.Series(fold_of_row[np.unique(codes, return_index=True)[1]], index=pd.Index(uniques))
    result["fold"] = fold_of_query.loc[result["query"]].to_numpy()
    return result


# -- the comparison -------------------------------------------------------------------------------
#: LaTeX's special characters in text, escaped in one pass.
_LATEX_SPECIAL = str.maketrans({"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "%": r"\%",
                                "&": r"\&", "#": r"\#", "$": r"\$", "^": r"\^{}", "~": r"\~{}",
                                # Text-mode <, > and | print as other glyphs in LaTeX's default font encoding.
                                "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"})

def _paired_matrix(results, metric):
    """``(rankers, values)``: the per-query values of ``metric``, one column per
    ranker, on the queries every ranker has."""
    part = results[results["metric"] == metric]
    wide = part.pivot(index="query", columns="ranker", values="value")
    rankers = list(dict.fromkeys(part["ranker"]))
    wide = wide[rankers]
    # A query the metric excludes (NaN: no relevant document, empty="exclude")
    # is excluded for every ranker, as exclusion depends on the labels only: dropped.
    wide = wide[wide.notna().any(axis=1)]
    complete = wide.notna().all(axis=1)
    if not complete.all():
        missing = wide.index[~complete][:5].tolist()
        raise ValueError(
            f"metric {metric!r}: not every ranker has a value on the same queries (e.g. queries {missing}); "
            "a paired comparison needs every ranker on every query: evaluate them on the same queries "
            "(with evaluate_runs, the same missing_queries for every run)."
        )
    if wide.shape[0] < 2:
        raise ValueError(f"metric {metric!r}: a paired comparison needs at least 2 queries with values, "
                         f"got {wide.shape[0]}.")
    values = wide.to_numpy(np.float64)
    infinite = ~np.isfinite(values).all(axis=1)
    if infinite.any():
        raise ValueError(f"metric {metric!r}: the values must be finite (NaN only for a query the metric "
                         f"excludes), got infinity, e.g. for queries {wide.index[infinite][:5].tolist()}.")
    return rankers, values


def _check_results(results):
    if not isinstance(results, pd.DataFrame) or not set(COLUMNS) <= set(results.columns):
        raise TypeError(f"results must be the DataFrame of evaluate or cross_evaluate (columns {COLUMNS}).")
    if results.duplicated(["query", "ranker", "metric"]).any():
        raise ValueError("results has two values for one (query, ranker, metric): concatenated twice?")
    if results.empty:  # e.g. every query excluded by empty="exclude"
        raise ValueError("results has no rows: no query had a value (with empty='exclude', no query had a relevant "
                         "document), so there is nothing to compare.")


def compare(results, *, baseline=None, test="t", correction="holm", alpha=0.05, confidence=0.95,
            n_resamples=10_000, random_state=0, tolerance=1e-12):
    """Means, confidence intervals and paired tests of rankers against a baseline.

    Parameters
    ----------
    results : DataFrame
        Per-query values from :func:`evaluate` or :func:`cross_evaluate`.
    baseline : str or None, default=None
        The ranker every other one is tested against; ``None`` is the first.
    test : {"t", "wilcoxon", "randomization"}, default="t"
        Two-sided paired test of the mean difference over queries: Student's
        t (``scipy.stats.ttest_rel``), Wilcoxon's signed-rank
        (``scipy.stats.wilcoxon``; zero differences dropped) or Fisher's
        randomisation test (exact for up to 16 queries, else
        ``n_resamples`` random sign flips).
    correction : {"holm", "bonferroni", None}, default="holm"
        Correction for multiple comparisons; the family is every test of the
        table (every non-baseline ranker on every metric).
    alpha : float, default=0.05
        Level at which an adjusted p-value is significant.
    confidence : float, default=0.95
        Level of the percentile bootstrap intervals of the means and of the
        differences from the baseline.
    n_resamples : int, default=10000
        Bootstrap resamples of the queries (and randomisation-test draws).
    random_state : int, default=0
        Seed of the bootstrap and the randomisation test: the same call
        gives the same table.
    tolerance : float, default=1e-12
        A query whose two values differ by at most this is a tie in the
        win/tie/loss counts.

    Returns
    -------
    Comparison
        ``.table`` holds one row per metric and ranker; print it with
        :meth:`Comparison.to_markdown` or :meth:`Comparison.to_latex`.
    """
    _check_results(results)
    if test not in _stats.TESTS:
        raise ValueError(f"test must be one of {list(_stats.TESTS)}, got {test!r}.")
    if correction not in _stats.CORRECTIONS:
        raise ValueError(f"correction must be 'holm', 'bonferroni' or None, got {correction!r}.")
    for name, value in (("alpha", alpha), ("confidence", confidence)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
            raise ValueError(f"{name} must be a number in (0, 1), got {value!r}.")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral) or n_resamples < 100:
        raise ValueError(f"n_resamples must be an int >= 100, got {n_resamples!r}.")
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral) or random_state < 0:
        # None drew another table on every call; -1 and 1.5 failed inside NumPy without naming the parameter.
        raise ValueError(f"random_state must be an int >= 0 (the seed that makes the table reproducible), got "
                         f"{random_state!r}.")
    # A negative or NaN tolerance made the counts overlap or vanish (the baseline "won" and "lost"
    # every query against itself).
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real) or not 0 <= tolerance < np.inf:
        raise ValueError(f"tolerance must be a finite number >= 0 (the largest difference counted as a tie), "
                         f"got {tolerance!r}.")
    rankers = list(dict.fromkeys(results["ranker"]))
    baseline = rankers[0] if baseline is None else baseline
    if baseline not in rankers:
        raise ValueError(f"baseline {baseline!r} is not a ranker of the results; they are {rankers}.")
    rows = []
    for metric in dict.fromkeys(results["metric"]):
        rows.extend(_compare_metric(results, metric, baseline, test, confidence, n_resamples, random_state,
                                    tolerance))
    table = pd.DataFrame(rows)
    table["p_adjusted"] = _stats.adjust(table["p_value"].to_numpy(), correction)
    table["significant"] = table["p_adjusted"] <= alpha
    return Comparison(table, baseline=baseline, test=test, correction=correction, alpha=alpha,
                      confidence=confidence, n_resamples=n_resamples)


def _compare_metric(results, metric, baseline, test, confidence, n_resamples, random_state, tolerance):
    rankers, values = _paired_matrix(results, metric)
    if baseline not in rankers:
        raise ValueError(f"metric {metric!r} has no values of the baseline {baseline!r} (it has {rankers}): "
                         "evaluate the baseline on every metric, or pass another baseline.")
    b = rankers.index(baseline)
    diffs = values - values[:, [b]]
    # One bootstrap for every column, means and differences alike: paired.
    boot = _stats.bootstrap_means(np.hstack([values, diffs]), n_resamples=n_resamples,
                                  random_state=random_state)
    low, high = _stats.percentile_interval(boot, confidence)
    # The interval holds the sample mean: resampled means of equal values differ
    # from it only by rounding, which left it outside its own interval.
    centre = np.hstack([values, diffs]).mean(axis=0)
    low, high = np.minimum(low, centre), np.maximum(high, centre)
    n_rankers = len(rankers)
    rows = []
    for j, ranker in enumerate(rankers):
        row = {"metric": metric, "ranker": ranker, "n_queries": values.shape[0], "mean": centre[j],
               "ci_low": low[j], "ci_high": high[j], "delta": centre[n_rankers + j],
               "delta_ci_low": low[n_rankers + j], "delta_ci_high": high[n_rankers + j],
               "statistic": np.nan, "p_value": np.nan,
               "wins": int(np.sum(diffs[:, j] > tolerance)), "ties": int(np.sum(np.abs(diffs[:, j]) <= tolerance)),
               "losses": int(np.sum(diffs[:, j] < -tolerance))}
        if j != b:
            row["statistic"], row["p_value"] = _stats.run_test(
                test, values[:, b], values[:, j], n_resamples=n_resamples, random_state=random_state)
        rows.append(row)
    return rows


_TEST_NAMES = {"t": "paired Student's t-test", "wilcoxon": "Wilcoxon signed-rank test",
               "randomization": "Fisher's paired randomisation test"}


class Comparison:
    """The result of :func:`compare`.

    Attributes
    ----------
    table : DataFrame
        One row per metric and ranker: ``n_queries``, ``mean``, ``ci_low``,
        ``ci_high`` (bootstrap interval of the mean), ``delta`` (mean
        difference from the baseline) and its interval ``delta_ci_low``,
        ``delta_ci_high``, the test's ``statistic`` and ``p_value``,
        ``p_adjusted``, ``significant`` (``p_adjusted <= alpha``), and the
        ``wins``, ``ties``, ``losses`` of the ranker against the baseline,
        query by query. The baseline's own row has no test.
    baseline, test, correction, alpha, confidence, n_resamples
        The settings of :func:`compare`.
    """

    def __init__(self, table, *, baseline, test, correction, alpha, confidence, n_resamples):
        self.table = table
        self.baseline = baseline
        self.test = test
        self.correction = correction
        self.alpha = alpha
        self.confidence = confidence
        self.n_resamples = n_resamples

    @property
    def confidence_percent(self):
        """The interval's confidence as text, ``"95%"``: with as many digits
        as it takes not to read 100% (0.9999999 is ``"99.99999%"``)."""
        digits = 6
        text = f"{self.confidence * 100:.{digits}g}"
        while float(text) >= 100 and self.confidence < 1 and digits < 17:
            digits += 1
            text = f"{self.confidence * 100:.{digits}g}"
        return text + "%"

    def caption(self, *, wtl=True):
        """What the table's numbers and marks mean, in one paragraph."""
        n = sorted(set(self.table["n_queries"]))
        corrected = "" if self.correction is None else f", {self.correction.capitalize()}-corrected over the table"
        return (
            f"Mean over {'/'.join(map(str, n))} queries with a {self.confidence_percent} percentile bootstrap "
            f"interval ({self.n_resamples} resamples of the queries). * marks a significant difference from "
            f"{self.baseline} ({_TEST_NAMES[self.test]}, two-sided{corrected}, p <= {self.alpha:g})"
            + ("; W/T/L: queries won, tied, lost against the baseline." if wtl else ".")
        )

    def _cells(self, digits, mark):
        """``{(ranker, metric): text}`` and the W/T/L text of every ranker and metric."""
        cells = {}
        for row in self.table.itertuples(index=False):
            text = f"{row.mean:.{digits}f} [{row.ci_low:.{digits}f}, {row.ci_high:.{digits}f}]"
            if row.significant:
                text += mark
            cells[(row.ranker, row.metric)] = (text, f"{row.wins}/{row.ties}/{row.losses}")
        return cells

    def _grid(self, digits, mark, wtl):
        if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or digits < 0:
            raise ValueError(f"digits must be a non-negative int (decimals shown), got {digits!r}.")
        metrics = list(dict.fromkeys(self.table["metric"]))
        rankers = list(dict.fromkeys(self.table["ranker"]))
        cells = self._cells(digits, mark)
        header = ["ranker"]
        for metric in metrics:
            header.append(metric)
            if wtl:
                header.append("W/T/L")
        body = []
        for ranker in rankers:
            line = [ranker + (" (baseline)" if ranker == self.baseline else "")]
            for metric in metrics:
                text, counts = cells.get((ranker, metric), ("", ""))
                line.append(text)
                if wtl:
                    line.append("" if ranker == self.baseline else counts)
            body.append(line)
        return header, body

    def to_markdown(self, *, digits=4, wtl=True):
        """The table in Markdown: a row per ranker, a column per metric (and its W/T/L)."""
        header, body = self._grid(digits, "*", wtl)
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["--:"] * (len(header) - 1)) + "|"]
        lines += ["| " + " | ".join(cell.replace("|", r"\|") for cell in line) + " |" for line in body]
        return "\n".join(lines) + "\n\n" + self.caption(wtl=wtl) + "\n"

    def to_latex(self, *, digits=3, wtl=False, label="tab:rankers"):
        """The table as a LaTeX ``table`` with ``booktabs`` rules, the caption included."""
        header, body = self._grid(digits, "$^{*}$", wtl)

        def tex(text):
            return text.translate(_LATEX_SPECIAL)

        # The caption's own "* marks" (before the baseline's name) and "p <="
        # (after it) become math; names and headers are only escaped.
        head, _, tail = self.caption(wtl=wtl).replace("* marks", "\x01 marks", 1).rpartition("p <= ")
        caption = tex(head + "p \x00 " + tail).replace("\x00", r"$\le$").replace("\x01", r"$^{*}$")
        lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}",
                 r"\toprule", " & ".join(tex(h) for h in header) + r" \\", r"\midrule"]
        # The ranker's name is text; the other cells are numbers and marks.
        lines += [" & ".join([tex(line[0]), *line[1:]]) + r" \\" for line in body]
        lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + caption + "}",
                  r"\label{" + label + "}", r"\end{table}"]
        return "\n".join(lines) + "\n"

    def __repr__(self):
        return self.to_markdown()
