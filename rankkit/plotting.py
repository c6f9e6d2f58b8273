"""Plots of fitted rankers and of two rankers' per-query results.

- :func:`plot_metric`: learning curves from a ranker's ``evals_result_``,
  with the best iteration marked when early stopping cut the model back;
- :func:`plot_importance`: the features that carry the model, by total split
  gain or by number of splits;
- :func:`plot_query_comparison`: a ranking metric of two rankers query by
  query, differences sorted, with the win/tie/loss count;
- :func:`plot_comparison`: the means of several rankers with their
  confidence intervals and the significant differences from a baseline
  (:func:`rankkit.evaluation.compare`).
- :func:`plot_position_bias`: the propensities a ranker trained on clicks
  used (``position_bias_``), against reference curves such as the true ones.

matplotlib is optional: it is imported when a function is called, not when
this module is imported. Every function draws into ``ax`` (a new figure when
``ax`` is None) and returns that ``matplotlib.axes.Axes``.
"""

from __future__ import annotations

import inspect
import numbers

import numpy as np

from rankkit._metrics._api import METRICS
from rankkit._metrics._common import parse_metric
from rankkit._validation import check_labels, check_same_length, check_scores

__all__ = ["plot_metric", "plot_importance", "plot_query_comparison", "plot_comparison",
           "plot_position_bias"]


def _new_axes(ax, figsize):
    """``ax`` itself, or the axes of a new pyplot figure.

    The one place matplotlib is imported, and only when no ``ax`` is given:
    axes of a ``matplotlib.figure.Figure`` made without pyplot stay free of
    pyplot's global state and backend selection.
    """
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "rankkit.plotting needs matplotlib, which is not installed: pip install matplotlib (or 'rankkit[plot]')"
        ) from exc
    _, ax = plt.subplots(figsize=figsize)
    return ax


def _check_fitted(ranker, what):
    from sklearn.utils.validation import check_is_fitted

    from rankkit._estimators import BaseRanker

    if not isinstance(ranker, (BaseRanker, type)):  # a class: check_is_fitted says so
        # check_is_fitted would call a fitted XGBRanker or Pipeline "not fitted yet".
        hint = (" (pipeline[-1] for a Pipeline)" if hasattr(ranker, "steps")
                else " (search.best_estimator_ for a search)" if hasattr(ranker, "best_estimator_") else "")
        raise TypeError(
            f"rankkit.plotting takes a fitted rankkit ranker{hint}, got {type(ranker).__name__}."
        )
    check_is_fitted(
        ranker,
        "backend_",
        msg=(
            f"This %(name)s instance is not fitted yet, so it has no {what} to plot: call "
            "fit(X, y, qid=...) first."
        ),
    )


def _check_count(value, name, none_means):
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
        raise ValueError(f"{name} must be a positive int or None ({none_means}), got {value!r}.")


# -- learning curves -----------------------------------------------------------------------------
def _evals_result(ranker):
    """``(history, ranker or None)`` from a fitted ranker or a history dict."""
    if isinstance(ranker, dict):
        bad = [name for name, result in ranker.items() if not isinstance(result, dict)]
        if bad:
            raise TypeError(
                "plot_metric takes an evals_result_-shaped dict {set: {metric: [values]}}; "
                f"set {bad[0]!r} holds a {type(ranker[bad[0]]).__name__}, not a dict of metrics."
            )
        return ranker, None
    if not hasattr(ranker, "fit"):
        raise TypeError(
            "plot_metric takes a fitted rankkit ranker or its evals_result_ dict "
            f"({{set: {{metric: [values]}}}}), got {type(ranker).__name__}."
        )
    _check_fitted(ranker, "learning curve")
    return getattr(ranker, "evals_result_", {}), ranker


def _early_stopping_curve(history):
    """``(set, metric)`` that ``best_iteration_`` and ``best_score_`` come
    from: the first metric on the last eval set that is not the training
    data (``rankkit._training``), or None."""
    watched = [name for name in history if name != "training" and history[name]]
    return (watched[-1], next(iter(history[watched[-1]]))) if watched else None


def _early_stopped_at(ranker):
    """``best_iteration_`` if early stopping cut the model back to it, else
    None. Early stopping that ends training always cuts it back; the fitted
    state says so, unlike ``n_estimators``, which may have changed since."""
    best = getattr(ranker, "best_iteration_", None)
    n_run = getattr(ranker, "n_iterations_", None)
    if best is None or n_run is None:
        return None
    n_kept = getattr(ranker.backend_, "n_iterations_", n_run)
    return int(best) if n_kept < n_run else None


def plot_metric(
    ranker,
    metric=None,
    *,
    eval_sets=None,
    best_iteration="auto",
    ax=None,
    title="Ranking metric during training",
    xlabel="iteration",
    ylabel=None,
    figsize=None,
    grid=True,
    **kwargs,
):
    """Plot learning curves: eval metrics per boosting iteration.

    One line per (eval set, metric) of ``evals_result_``; lines of one set
    share a colour, lines of one metric share a line style. Iterations are
    0-based, as ``best_iteration_``.

    Parameters
    ----------
    ranker : fitted rankkit ranker or dict
        A ranker fitted with ``eval_set=``, or an ``evals_result_``-shaped
        dict ``{set_name: {metric_name: [value per iteration]}}``.
    metric : str or None, default=None
        Metric to draw (e.g. ``"ndcg@10"``); None draws every recorded one.
    eval_sets : list of str or None, default=None
        Names of the sets to draw (keys of ``evals_result_``, e.g.
        ``["validation_0"]``); None draws all.
    best_iteration : "auto", int or None, default="auto"
        Iteration to mark with a vertical line. ``"auto"``: the ranker's
        ``best_iteration_`` when early stopping ended training or cut the
        model back to it (never for a dict); an int marks that iteration
        (one of the drawn curves'); None marks nothing. The marker of
        ``best_iteration_`` is labelled with ``best_score_`` when the curve
        it comes from (the first metric on the last eval set that is not
        the training data) is drawn.
    ax : matplotlib.axes.Axes or None, default=None
        Axes to draw into; None creates a figure of size ``figsize``.
    title, xlabel : str or None
        Axes title and x label (None: none).
    ylabel : str or None, default=None
        y label; None gives the metric name when only one is drawn.
    figsize : (float, float) or None
        Size of the new figure when ``ax`` is None.
    grid : bool, default=True
    **kwargs
        Passed to ``Axes.plot`` for every curve.

    Returns
    -------
    ax : matplotlib.axes.Axes

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the ranker is not fitted.
    TypeError
        If ``ranker`` is neither a rankkit ranker nor a dict of that shape
        (a fitted ``Pipeline``: pass ``pipeline[-1]``).
    ValueError
        If there is no eval history (fit without ``eval_set=``),
        ``metric`` / ``eval_sets`` name something that was not recorded, or
        ``best_iteration`` is not an iteration of the drawn curves.

    Examples
    --------
    >>> from rankkit import QueryRMSERanker
    >>> from rankkit.datasets import make_ranking
    >>> from rankkit.plotting import plot_metric
    >>> X, y, qid = make_ranking(60, random_state=0)
    >>> train, valid = qid < 40, qid >= 40
    >>> ranker = QueryRMSERanker(n_estimators=30, early_stopping_rounds=5, random_state=0).fit(
    ...     X[train], y[train], qid=qid[train],
    ...     eval_set=[(X[valid], y[valid])], eval_qid=[qid[valid]])
    >>> ax = plot_metric(ranker)
    >>> [line.get_label() for line in ax.lines][0]
    'validation_0'
    """
    if "label" in kwargs:
        raise TypeError("plot_metric labels each curve by its set (and metric); set the labels afterwards with "
                        "ax.legend(labels) or line.set_label().")
    history, fitted = _evals_result(ranker)
    if not any(len(values) for curves in history.values() for values in curves.values()):
        raise ValueError(
            "There is no eval history to plot: evals_result_ is empty because fit was called without an eval "
            "set. Fit with eval_set=[(X_val, y_val)] and eval_qid=[qid_val] (or DataFrames with the query "
            "column) to record learning curves." if fitted is not None else
            f"There is no eval history to plot: the dict given has no value ({history!r})."
        )
    if eval_sets is None:
        eval_sets = list(history)
    else:
        eval_sets = [eval_sets] if isinstance(eval_sets, str) else list(eval_sets)
        unknown = [name for name in eval_sets if name not in history]
        if unknown or not eval_sets:
            raise ValueError(f"eval_sets={eval_sets!r}: the recorded sets are {list(history)}.")
    recorded = list(dict.fromkeys(m for name in eval_sets for m in history[name]))
    if metric is not None and not isinstance(metric, str):
        raise TypeError(f"metric must be one metric name (a str) or None (every one), got {metric!r}.")
    if metric is None:
        metrics = recorded
    elif metric in recorded:
        metrics = [metric]
    else:
        raise ValueError(f"metric={metric!r} was not recorded for {eval_sets}; they have {recorded}"
                         + ("." if len(eval_sets) == len(history) else
                            f" (every set: {list(dict.fromkeys(m for c in history.values() for m in c))})."))

    if best_iteration == "auto":
        best_iteration = None if fitted is None else _early_stopped_at(fitted)
    elif best_iteration is not None and (
        isinstance(best_iteration, bool) or not isinstance(best_iteration, numbers.Integral)
    ):
        raise TypeError(f"best_iteration must be 'auto', an int or None, got {best_iteration!r}.")
    if best_iteration is not None:
        n_drawn = max(len(history[name][m]) for name in eval_sets for m in metrics if m in history[name])
        if not 0 <= best_iteration < n_drawn:
            raise ValueError(
                f"best_iteration={best_iteration} is not an iteration of the curves, which run from 0 "
                f"to {n_drawn - 1}."
            )

    ax = _new_axes(ax, figsize)
    # Colour per set ("C0", "C1", ...: the current style's colour cycle), line style per metric.
    styles = ["-", "--", ":", "-."]
    for i, name in enumerate(eval_sets):
        for j, m in enumerate(metrics):
            if m not in history[name]:
                continue
            values = np.asarray(history[name][m], dtype=np.float64)
            label = name if len(metrics) == 1 else f"{name}: {m}"
            style = {"color": f"C{i}", "linestyle": styles[j % len(styles)]}
            ax.plot(np.arange(values.shape[0]), values, label=label, **{**style, **kwargs})
    if best_iteration is not None:
        label = f"best iteration {best_iteration}"
        best_score = getattr(fitted, "best_score_", None)
        # best_score_ is one curve's value: only worth a label when that curve is drawn.
        watched = _early_stopping_curve(history)
        drawn = watched is not None and watched[0] in eval_sets and watched[1] in metrics
        if best_score is not None and drawn and best_iteration == fitted.best_iteration_:
            label += f" ({best_score:.4f})"
        ax.axvline(best_iteration, color="0.35", linestyle="--", linewidth=1.0, label=label)
    ax.legend(loc="best")
    if title is not None:
        ax.set_title(title)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is None and len(metrics) == 1:
        ylabel = metrics[0]
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.grid(grid)
    return ax


# -- feature importance ----------------------------------------------------------------------------
_IMPORTANCE_TYPES = {"gain": "share of total split gain", "split": "share of splits"}


def plot_importance(
    ranker,
    *,
    max_num_features=20,
    importance_type="gain",
    ax=None,
    title=None,
    xlabel=None,
    ylabel="feature",
    show_values=True,
    values_format="{:.3f}",
    figsize=None,
    grid=True,
    height=0.7,
    **kwargs,
):
    """Plot feature importances as horizontal bars, the most important on top.

    Importances are normalised to sum to 1 over all features
    (``importance_type="gain"`` gives ``feature_importances_``). Features
    with zero importance (never split on) are left out.

    Parameters
    ----------
    ranker : fitted rankkit ranker
    max_num_features : int or None, default=20
        Draw the ``max_num_features`` most important features; None draws
        every feature with a nonzero importance.
    importance_type : {"gain", "split"}, default="gain"
        Total split gain of the feature, or the number of splits on it
        (XGBoost's ``"total_gain"`` and ``"weight"``).
    ax : matplotlib.axes.Axes or None, default=None
        Axes to draw into; None creates a figure of size ``figsize``.
    title, xlabel : str or None, default=None
        None gives ``"Feature importance (<type>)"`` and the share's name.
    ylabel : str or None, default="feature"
    show_values : bool, default=True
        Write each bar's value at its end, formatted by ``values_format``.
    values_format : str, default="{:.3f}"
    figsize : (float, float) or None
        Size of the new figure when ``ax`` is None.
    grid : bool, default=True
    height : float, default=0.7
        Bar height.
    **kwargs
        Passed to ``Axes.barh``.

    Returns
    -------
    ax : matplotlib.axes.Axes

    Notes
    -----
    Feature names are ``feature_names_in_`` when the ranker was fitted on a
    DataFrame (the query column excluded), ``f0, f1, ...`` otherwise, the
    column indices XGBoost uses.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from rankkit import QueryRMSERanker
    >>> from rankkit.plotting import plot_importance
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"qid": np.repeat(np.arange(20), 20),
    ...                   "bm25": rng.normal(size=400), "length": rng.normal(size=400)})
    >>> y = (X["bm25"] > 0.5).astype(int) + (X["bm25"] > 1.2)  # relevance follows bm25
    >>> ranker = QueryRMSERanker(n_estimators=20, max_depth=3, random_state=0).fit(X, y)
    >>> ax = plot_importance(ranker)
    >>> ax.get_yticklabels()[-1].get_text()  # the top bar
    'bm25'
    """
    _check_count(max_num_features, "max_num_features", "all features")
    if importance_type not in _IMPORTANCE_TYPES:
        raise ValueError(
            f"importance_type must be 'gain' (total split gain) or 'split' (number of splits), "
            f"got {importance_type!r}."
        )
    _check_fitted(ranker, "feature importance")
    importance = np.asarray(ranker.backend_.feature_importances(importance_type), dtype=np.float64)
    names = getattr(ranker, "feature_names_in_", None)
    if names is None:
        names = [f"f{i}" for i in range(importance.shape[0])]
    names = [str(name) for name in names]
    if len(names) != importance.shape[0]:  # pragma: no cover - a backend bug, not user input
        raise RuntimeError(f"{len(names)} feature names for {importance.shape[0]} importances.")
    # Most important first; equal importances keep column order.
    order = np.argsort(-importance, kind="stable")
    order = order[importance[order] > 0]
    if order.size == 0:
        raise ValueError(
            "Every feature importance is zero: the model grew no split, so it is a constant "
            "(see the warning fit gave; lowering min_child_weight often helps)."
        )
    n_used = order.size
    if max_num_features is not None:
        order = order[:max_num_features]

    ax = _new_axes(ax, figsize)
    order = order[::-1]  # bars go bottom to top: the largest last, on top
    positions = np.arange(order.size)
    values = importance[order]
    ax.barh(positions, values, height=height, align="center", **kwargs)
    ax.set_yticks(positions, [names[i] for i in order])
    if show_values:
        for pos, value in zip(positions, values):
            ax.text(value, pos, " " + values_format.format(value), va="center")
        ax.set_xlim(0, values.max() * 1.15)  # room for the value labels
    if title is None:
        title = f"Feature importance ({importance_type}"
        title += f", top {order.size} of {n_used} used)" if order.size < n_used else ")"
    ax.set_title(title)
    ax.set_xlabel(_IMPORTANCE_TYPES[importance_type] if xlabel is None else xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.grid(grid, axis="x")
    ax.set_axisbelow(True)
    return ax


# -- per-query comparison of two rankers ------------------------------------------------------------
def _metric_defaults(name, metric_params):
    """Parameters for the metric function ``name``: the scorers' defaults, then the caller's.

    As for scorers, ties are ``"worst"`` and ERR maps graded labels with
    ``err_mapping="chapelle"``; unlike a mean score, a comparison leaves out
    queries with no relevant document (``empty="exclude"``), whose value no
    ranker can change.
    """
    accepted = set(inspect.signature(METRICS[name]).parameters) - {
        "y_true", "y_score", "qid", "k", "per_query",
    }
    params = {"ties": "worst"}
    if name in ("err", "pfound"):
        params["err_mapping"] = "chapelle"
    if "empty" in accepted:
        params["empty"] = "exclude"
    params.update(metric_params or {})
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise TypeError(
            f"metric_params: unknown parameter(s) {unknown} for the {name} metric, which takes "
            f"{sorted(accepted)} (and a cut-off as '{name}@k')."
        )
    return params


def plot_query_comparison(
    y_true,
    scores_a,
    scores_b,
    *,
    qid,
    metric="ndcg@10",
    labels=("A", "B"),
    metric_params=None,
    ax=None,
    title=None,
    figsize=None,
    grid=True,
    **kwargs,
):
    """Plot two rankers' per-query metric differences, sorted, with wins, ties and losses.

    For every query ``q`` the difference ``d_q = m_q(B) - m_q(A)`` of the
    metric ``m`` (:mod:`rankkit.metrics`, worst-order ties) is drawn as one
    bar, bars sorted by ``d_q``: blue where B is better (``d_q > 0``), red
    where A is better, none for a tie (``d_q = 0`` exactly). The legend
    counts each, and a dashed line marks the mean difference, which equals
    the difference of the two rankers' mean scores over the same queries.

    Queries on which the metric is undefined (no relevant document for
    NDCG, MRR and MAP, which are then 0/0) are left out, and their number
    is given in the title.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance labels.
    scores_a, scores_b : array-like of shape (n_samples,)
        Scores of rankers A and B for the same rows (e.g. ``predict(X)``).
    qid : array-like of shape (n_samples,)
        Query id of every row (any order).
    metric : str, default="ndcg@10"
        A scorer metric string: ``"ndcg"``, ``"dcg"``, ``"err"``, ``"mrr"``,
        ``"map"`` or ``"expdcg"``, optionally with a cut-off ``"@k"``.
    labels : (str, str), default=("A", "B")
        Names of the two rankers.
    metric_params : dict or None, default=None
        Parameters of the metric function (``ties``, ``gain``, ``empty``,
        ``relevance_threshold``, ``err_mapping``, ``err_max_label``,
        ``decay``). Defaults: ``ties="worst"``, ``err_mapping="chapelle"``
        for ERR (as the scorers), and ``empty="exclude"``; pass
        ``{"empty": 1.0}`` to count queries without a relevant document as
        ties instead.
    ax : matplotlib.axes.Axes or None, default=None
        Axes to draw into; None creates a figure of size ``figsize``.
    title : str or None, default=None
        None gives the metric, the labels and the number of queries.
    figsize : (float, float) or None
        Size of the new figure when ``ax`` is None.
    grid : bool, default=True
    **kwargs
        Passed to ``Axes.bar`` (except ``color``, which encodes the sign, and
        ``label``: the legend counts the wins, ties and losses).

    Returns
    -------
    ax : matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from rankkit.plotting import plot_query_comparison
    >>> y = np.array([2, 0, 1, 0, 1, 0, 0, 0])
    >>> qid = np.array([0, 0, 0, 1, 1, 2, 2, 2])       # query 2 has no relevant document
    >>> a = np.array([0.1, 0.3, 0.2, 0.5, 0.4, 0.1, 0.2, 0.3])
    >>> b = np.array([0.3, 0.1, 0.2, 0.4, 0.5, 0.1, 0.2, 0.3])
    >>> ax = plot_query_comparison(y, a, b, qid=qid, metric="ndcg", labels=("old", "new"))
    >>> [text.get_text() for text in ax.get_legend().get_texts()]
    ['new better: 2', 'tie: 0', 'old better: 0', 'mean difference +0.3911']
    """
    if kwargs.pop("color", None) is not None:
        raise TypeError("plot_query_comparison colours bars by the sign of the difference; drop color=.")
    if kwargs.pop("label", None) is not None:
        raise TypeError("plot_query_comparison labels the bars with the counts of wins, ties and losses; drop "
                        "label= (labels= names the two rankers).")
    if (
        isinstance(labels, str)
        or not isinstance(labels, (tuple, list))
        or len(labels) != 2
        or not all(isinstance(label, str) for label in labels)
    ):
        raise ValueError(f"labels must be two names (label_a, label_b), got {labels!r}.")
    if metric_params is not None and not isinstance(metric_params, dict):
        raise TypeError(f"metric_params must be a dict or None, got {type(metric_params).__name__}.")
    if qid is None:
        raise ValueError("qid is required: pass one query id per row (qid=...).")
    y = check_labels(y_true, name="y_true")
    a = check_scores(scores_a, name="scores_a")
    b = check_scores(scores_b, name="scores_b")
    check_same_length(y_true=y, scores_a=a, scores_b=b, qid=np.asarray(qid).ravel())
    name, k = parse_metric(metric)
    params = _metric_defaults(name, metric_params)
    func = METRICS[name]
    per_a = func(y, a, qid=qid, k=k, per_query=True, **params)
    per_b = func(y, b, qid=qid, k=k, per_query=True, **params)
    defined = ~(np.isnan(per_a) | np.isnan(per_b))
    n_queries, n_left_out = per_a.shape[0], int((~defined).sum())
    if not defined.any():
        raise ValueError(
            f"{metric} is undefined on every one of the {n_queries} queries (no relevant "
            "document; empty='exclude'): nothing to compare."
        )
    diff = np.sort(per_b[defined] - per_a[defined], kind="stable")
    label_a, label_b = labels
    win, tie, loss = diff > 0, diff == 0, diff < 0

    ax = _new_axes(ax, figsize)
    x = np.arange(diff.shape[0])
    bar = {"width": 1.0, "linewidth": 0, **kwargs}
    # Three bar groups so the legend shows each count; ties have zero height.
    handles = [
        ax.bar(x[win], diff[win], color="tab:blue", label=f"{label_b} better: {int(win.sum())}", **bar),
        ax.bar(x[tie], diff[tie], color="0.6", label=f"tie: {int(tie.sum())}", **bar),
        ax.bar(x[loss], diff[loss], color="tab:red", label=f"{label_a} better: {int(loss.sum())}", **bar),
    ]
    mean = float(diff.mean())
    ax.axhline(0.0, color="black", linewidth=0.8)
    handles.append(
        ax.axhline(mean, color="black", linestyle="--", linewidth=1.0, label=f"mean difference {mean:+.4f}")
    )
    ax.legend(handles=handles, loc="upper left")
    if title is None:
        title = f"{metric} per query: {label_b} - {label_a} ({diff.shape[0]} quer{'y' if diff.shape[0] == 1 else 'ies'}"
        if n_left_out:
            title += f"; {n_left_out} without a relevant document left out"
        title += ")"
    ax.set_title(title)
    ax.set_xlabel("query (sorted by difference)")
    ax.set_ylabel(f"{metric}({label_b}) - {metric}({label_a})")
    ax.set_xlim(-0.5, diff.shape[0] - 0.5)
    ax.grid(grid, axis="y")
    ax.set_axisbelow(True)
    return ax


# -- several rankers with confidence intervals ------------------------------------------------------
def plot_comparison(comparison, metric=None, *, ax=None, title=None, figsize=None, grid=True):
    """Plot the means of a :func:`~rankkit.evaluation.compare` table with their intervals.

    One row per ranker, top to bottom in the table's order: a dot at the
    mean and a bar over its bootstrap confidence interval. Rankers whose
    difference from the baseline is significant (after the table's
    correction) are drawn filled and marked ``*``; the others hollow; a dotted
    line marks the baseline's mean. Overlapping intervals of the means do not
    mean "no significant difference": the paired test looks at the
    differences query by query, which vary far less than the means do.

    Parameters
    ----------
    comparison : rankkit.evaluation.Comparison
        The result of :func:`~rankkit.evaluation.compare`.
    metric : str or None, default=None
        Metric to draw; None is the table's first.
    ax : matplotlib.axes.Axes or None, default=None
        Axes to draw into; None creates a figure of size ``figsize``.
    title : str or None, default=None
        None gives the metric, the interval's level and the test.
    figsize : (float, float) or None
    grid : bool, default=True

    Returns
    -------
    ax : matplotlib.axes.Axes
    """
    table = getattr(comparison, "table", None)
    if table is None:
        raise TypeError("comparison must be the result of rankkit.evaluation.compare, got "
                        f"{type(comparison).__name__}.")
    metrics = list(dict.fromkeys(table["metric"]))
    metric = metrics[0] if metric is None else metric
    if metric not in metrics:
        raise ValueError(f"metric {metric!r} is not in the comparison; it has {metrics}.")
    rows = table[table["metric"] == metric].reset_index(drop=True)
    ax = _new_axes(ax, figsize or (6.4, 1.2 + 0.45 * len(rows)))
    y = np.arange(len(rows))[::-1]
    for yi, row in zip(y, rows.itertuples(index=False)):
        filled = bool(row.significant)
        color = "black" if row.ranker == comparison.baseline else ("tab:blue" if filled else "0.45")
        # Clipped at 0: a bootstrap interval of equal values can miss their mean by a rounding error.
        xerr = [[max(row.mean - row.ci_low, 0.0)], [max(row.ci_high - row.mean, 0.0)]]
        ax.errorbar(row.mean, yi, xerr=xerr, fmt="o",
                    color=color, markerfacecolor=color if filled or row.ranker == comparison.baseline else "white",
                    capsize=3)
    base = rows.loc[rows["ranker"] == comparison.baseline, "mean"]
    if len(base):
        ax.axvline(float(base.iloc[0]), color="black", linestyle=":", linewidth=1.0)
    labels = [r.ranker + (" (baseline)" if r.ranker == comparison.baseline else (" *" if r.significant else ""))
              for r in rows.itertuples(index=False)]
    ax.set_yticks(y, labels)
    ax.set_xlabel(f"mean {metric} with {comparison.confidence_percent} bootstrap interval")  # as the caption
    if title is None:
        title = f"{metric}: * differs from {comparison.baseline} ({comparison.test} test, p <= {comparison.alpha:g})"
    ax.set_title(title)
    ax.grid(grid, axis="x")
    ax.set_axisbelow(True)
    return ax


# -- position bias ------------------------------------------------------------------------------------
def _propensity_curve(values, name):
    """One curve of propensities as a 1-D float array, relative to position 1
    (as a ranker's ``position_bias_``): non-empty, finite and > 0."""
    try:
        curve = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of propensities, one per position, got "
                        f"{type(values).__name__}.") from None
    if curve.ndim != 1 or curve.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array (position k at index k - 1), got shape "
                         f"{curve.shape}; several curves go in a dict {{label: array}}.")
    if not np.all(np.isfinite(curve) & (curve > 0)):
        raise ValueError(f"{name} must hold finite propensities > 0, got {curve[~(np.isfinite(curve) & (curve > 0))][0]!r}.")
    return curve / curve[0]


def plot_position_bias(ranker, *, reference=None, max_position=None, ax=None, title="Position bias",
                       xlabel="position (rank shown at)", ylabel="propensity (relative to position 1)",
                       logy=False, figsize=None, grid=True, **kwargs):
    """Plot the examination propensity of every position a ranker used.

    ``position_bias_`` of a ranker fitted on clicks with ``position_bias``
    set: the propensities it was given (``"known"``) or estimated
    (``"estimate"``), relative to position 1.

    Parameters
    ----------
    ranker : fitted rankkit ranker with ``position_bias``, or an array of propensities
    reference : dict of {label: array-like}, array-like or None, default=None
        Curves to draw beside it, e.g. ``{"true": (1 / k) ** eta}`` from
        :func:`rankkit.datasets.pbm_propensities` (position ``k`` at index ``k - 1``);
        one array is one curve labelled ``"reference"``. Arrays, here and as
        ``ranker``, are drawn relative to their position 1.
    max_position : int or None, default=None
        Draw positions ``1..max_position``; None: every position.
    ax : matplotlib.axes.Axes or None, default=None
    title, xlabel, ylabel : str or None
    logy : bool, default=False
        Logarithmic propensity axis (a power law ``(1/k)^eta`` becomes a line
        with ``logx`` too: call ``ax.set_xscale("log")``).
    figsize : (float, float) or None, default=None
    grid : bool, default=True
    **kwargs
        Passed to ``ax.plot`` for the ranker's curve.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from rankkit.plotting import plot_position_bias
    >>> from rankkit.datasets import pbm_propensities
    >>> ax = plot_position_bias(pbm_propensities(10, 0.9), reference={"true": pbm_propensities(10, 1.0)})
    >>> [line.get_label() for line in ax.get_lines()]
    ['estimated', 'true']
    """
    if hasattr(ranker, "fit"):
        _check_fitted(ranker, "position bias")
        theta = getattr(ranker, "position_bias_", None)
        if theta is None:
            raise ValueError(
                f"{type(ranker).__name__} was fitted with position_bias=None: it used no propensities. Fit it on "
                'clicks with position_bias="known" or "estimate" (and position=).'
            )
        label = "estimated" if ranker.position_bias == "estimate" else "given"
    else:
        theta, label = _propensity_curve(ranker, "ranker"), "estimated"
    _check_count(max_position, "max_position", "every position")
    n = theta.shape[0] if max_position is None else min(max_position, theta.shape[0])
    ax = _new_axes(ax, figsize)
    positions = np.arange(1, n + 1)
    ax.plot(positions, theta[:n], marker="o", label=kwargs.pop("label", label), **kwargs)
    if reference is not None and not isinstance(reference, dict):
        reference = {"reference": reference}  # one curve
    for name, values in (reference or {}).items():
        values = _propensity_curve(values, f"reference[{name!r}]")
        m = min(n, values.shape[0])
        ax.plot(positions[:m], values[:m], linestyle="--", label=name)
    if logy:
        ax.set_yscale("log")
    if title is not None:
        ax.set_title(title)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.grid(grid)
    ax.legend()
    return ax
