"""rankkit.plotting: each plot renders to PNG with the Agg backend and shows what it claims.

Content checks compare the drawn artists (line data, bar widths and heights,
tick labels, legend counts) with values computed independently from the
ranker's attributes and from :mod:`rankkit.metrics`.
"""

import doctest
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

import rankkit.plotting  # noqa: E402
from rankkit import LambdaMARTRanker, QueryRMSERanker  # noqa: E402
from rankkit.datasets import make_ranking  # noqa: E402
from rankkit.metrics import dcg_score, err_score, map_score, mrr_score, ndcg_score  # noqa: E402
from rankkit.plotting import plot_importance, plot_metric, plot_query_comparison  # noqa: E402

from ._backends import BACKENDS_UNDER_TEST  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# One thread: small data, and the model does not depend on the thread count.
FAST = dict(n_estimators=25, max_depth=3, random_state=0, n_jobs=1)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=90, n_features=6, max_docs=30, random_state=0)
    train, valid, test = qid < 50, (qid >= 50) & (qid < 70), qid >= 70
    return [(X[m], y[m], qid[m]) for m in (train, valid, test)]


def _assert_png(ax, path):
    ax.figure.savefig(path)
    content = path.read_bytes()
    assert path.stat().st_size > 0 and content.startswith(PNG_SIGNATURE)
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 0 and image.shape[1] > 0


def _curves(ax):
    return [line for line in ax.get_lines() if not line.get_label().startswith("best iteration")]


def _marker(ax):
    return [line for line in ax.get_lines() if line.get_label().startswith("best iteration")]


# -- matplotlib stays optional ----------------------------------------------------------------------
def test_import_does_not_import_matplotlib():
    code = "import sys, rankkit.plotting; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_matplotlib_says_how_to_install(monkeypatch):
    # None in sys.modules makes "import matplotlib.pyplot" fail as if not installed.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot_query_comparison([1, 0], [0.1, 0.2], [0.2, 0.1], qid=[0, 0])
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot_metric({"validation_0": {"ndcg": [0.5, 0.6]}})


def test_public_names():
    assert rankkit.plotting.__all__ == ["plot_metric", "plot_importance", "plot_query_comparison", "plot_comparison",
                                        "plot_position_bias"]
    for name in rankkit.plotting.__all__:
        assert callable(getattr(rankkit.plotting, name))


def test_docstring_examples_run():
    result = doctest.testmod(rankkit.plotting, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3 * 3 and result.failed == 0


# -- plot_metric ------------------------------------------------------------------------------------
def test_plot_metric_early_stopped_ranker(data, tmp_path):
    (X, y, qid), (Xv, yv, qv), (Xt, yt, qt) = data
    ranker = LambdaMARTRanker(
        n_estimators=200, learning_rate=0.8, max_depth=4, eval_metric="ndcg@10", random_state=0, n_jobs=1,
        early_stopping_rounds=5,
    ).fit(X, y, qid=qid, eval_set=[(Xt, yt), (Xv, yv)], eval_qid=[qt, qv])
    assert ranker.n_iterations_ < 200  # it stopped early
    ax = plot_metric(ranker)
    curves = _curves(ax)
    assert [c.get_label() for c in curves] == ["validation_0", "validation_1"]
    for curve, name in zip(curves, ["validation_0", "validation_1"]):
        values = ranker.evals_result_[name]["ndcg@10"]
        np.testing.assert_array_equal(curve.get_xdata(), np.arange(len(values)))
        np.testing.assert_array_equal(curve.get_ydata(), values)
    (marker,) = _marker(ax)
    np.testing.assert_array_equal(marker.get_xdata(), [ranker.best_iteration_] * 2)
    assert marker.get_label() == f"best iteration {ranker.best_iteration_} ({ranker.best_score_:.4f})"
    # The best iteration is the maximum of the set that drove early stopping (the last).
    assert ranker.best_iteration_ == int(np.argmax(curves[1].get_ydata()))
    assert ax.get_ylabel() == "ndcg@10" and ax.get_xlabel() == "iteration"
    assert ax.get_legend() is not None
    _assert_png(ax, tmp_path / "metric.png")


def test_best_iteration_marked_when_the_model_was_cut_back(data):
    # Early stopping did not end training (patience longer than the run) but the
    # model still keeps the best iteration: that is marked too.
    (X, y, qid), (Xv, yv, qv), _ = data
    ranker = LambdaMARTRanker(n_estimators=20, learning_rate=1.0, max_depth=4, random_state=0, n_jobs=1,
                              early_stopping_rounds=100).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    assert ranker.n_iterations_ == 20 and ranker.best_iteration_ < 19  # precondition of this test
    (marker,) = _marker(plot_metric(ranker))
    assert marker.get_xdata()[0] == ranker.best_iteration_


def test_best_iteration_options(data):
    (X, y, qid), (Xv, yv, qv), _ = data
    ranker = QueryRMSERanker(**FAST).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    # No early stopping: the model keeps every tree and "auto" marks nothing,
    # also once n_estimators has changed since the fit.
    ax = plot_metric(ranker)
    assert _marker(ax) == [] and len(_curves(ax)) == 1
    assert _marker(plot_metric(ranker.set_params(n_estimators=ranker.n_estimators + 100))) == []
    (marker,) = _marker(plot_metric(ranker, best_iteration=ranker.best_iteration_))
    assert marker.get_xdata()[0] == ranker.best_iteration_
    assert marker.get_label() == f"best iteration {ranker.best_iteration_} ({ranker.best_score_:.4f})"
    (other,) = _marker(plot_metric(ranker, best_iteration=3))
    assert other.get_xdata()[0] == 3 and other.get_label() == "best iteration 3"  # not the best score
    with pytest.raises(TypeError, match="best_iteration"):
        plot_metric(ranker, best_iteration=True)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_best_score_labels_only_the_curve_it_comes_from(data, backend):
    # best_score_ is the first metric on the last eval set; on a plot of another metric or
    # of the training curve alone, the marker labelled it as if it were a value drawn there.
    (X, y, qid), (Xv, yv, qv), _ = data
    ranker = LambdaMARTRanker(
        n_estimators=60, learning_rate=0.8, max_depth=4, eval_metric=["ndcg@10", "map"], early_stopping_rounds=5,
        backend=backend, random_state=0, n_jobs=1,
    ).fit(X, y, qid=qid, eval_set=[(X, y), (Xv, yv)], eval_qid=[qid, qv])
    history, best = ranker.evals_result_, ranker.best_iteration_
    assert list(history) == ["training", "validation_1"] and ranker.n_iterations_ < 60  # precondition
    assert ranker.best_score_ == history["validation_1"]["ndcg@10"][best]
    with_score = f"best iteration {best} ({ranker.best_score_:.4f})"
    for kwargs, label in (
        ({}, with_score),
        ({"metric": "ndcg@10"}, with_score),
        ({"eval_sets": ["training", "validation_1"]}, with_score),
        ({"metric": "map"}, f"best iteration {best}"),
        ({"eval_sets": ["training"]}, f"best iteration {best}"),
        ({"metric": "ndcg@10", "eval_sets": "training"}, f"best iteration {best}"),
    ):
        (marker,) = _marker(plot_metric(ranker, **kwargs))
        assert marker.get_xdata()[0] == best and marker.get_label() == label, kwargs


def test_plot_metric_every_set_and_metric(tmp_path):
    # The shape evals_result_ takes with a training history and several metrics.
    rng = np.random.default_rng(0)
    history = {
        name: {metric: list(rng.random(n)) for metric in ("ndcg@10", "mrr")}
        for name, n in (("training", 12), ("validation_0", 12), ("validation_1", 12))
    }
    ax = plot_metric(history)
    curves = _curves(ax)
    assert len(curves) == 3 * 2 and _marker(ax) == []
    expected = [f"{name}: {metric}" for name in history for metric in ("ndcg@10", "mrr")]
    assert [c.get_label() for c in curves] == expected
    for curve, label in zip(curves, expected):
        name, metric = label.split(": ")
        np.testing.assert_array_equal(curve.get_ydata(), history[name][metric])
    # One colour per set, one line style per metric.
    colors = [to_rgba(c.get_color()) for c in curves]
    assert colors[0] == colors[1] != colors[2] == colors[3] != colors[4] == colors[5]
    assert {c.get_linestyle() for c in curves[0::2]} != {c.get_linestyle() for c in curves[1::2]}
    assert ax.get_ylabel() == ""  # two metrics: no single y label
    _assert_png(ax, tmp_path / "metrics.png")

    only_mrr = _curves(plot_metric(history, "mrr"))
    assert [c.get_label() for c in only_mrr] == ["training", "validation_0", "validation_1"]
    one_set = _curves(plot_metric(history, eval_sets=["validation_1"]))
    assert [c.get_label() for c in one_set] == ["validation_1: ndcg@10", "validation_1: mrr"]
    (marked,) = _marker(plot_metric(history, best_iteration=4))
    assert marked.get_xdata()[0] == 4 and marked.get_label() == "best iteration 4"

    with pytest.raises(ValueError, match=r"metric='map' was not recorded.*ndcg@10.*mrr"):
        plot_metric(history, "map")
    with pytest.raises(ValueError, match="recorded sets are"):
        plot_metric(history, eval_sets=["validation_7"])


def test_plot_metric_errors(data):
    (X, y, qid), _, _ = data
    with pytest.raises(NotFittedError, match="not fitted yet.*fit"):
        plot_metric(QueryRMSERanker())
    no_history = QueryRMSERanker(**FAST).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match=r"no eval history.*eval_set=\[\(X_val, y_val\)\]"):
        plot_metric(no_history)
    with pytest.raises(ValueError, match="no eval history"):
        plot_metric({})
    with pytest.raises(TypeError, match="fitted rankkit ranker or its evals_result_"):
        plot_metric([0.1, 0.2])


def test_plot_metric_refuses_a_malformed_history_or_metric():
    # A dict of lists failed with "list indices must be integers or slices, not float", and
    # metric=["ndcg"] with "metric=['ndcg'] was not recorded; evals_result_ has ['ndcg']".
    with pytest.raises(TypeError, match=r"set 'validation_0' holds a list, not a dict of metrics"):
        plot_metric({"validation_0": [0.5, 0.6]})
    with pytest.raises(TypeError, match=r"metric must be one metric name \(a str\) or None"):
        plot_metric({"validation_0": {"ndcg": [0.5, 0.6]}}, ["ndcg"])
    # A marker off the curves was drawn there (at x = -1 for -1, which does not mean "the last").
    for outside in (-1, 2, 50):
        with pytest.raises(ValueError, match=f"best_iteration={outside} is not an iteration.*from 0 to 1"):
            plot_metric({"validation_0": {"ndcg": [0.5, 0.6]}}, best_iteration=outside)
    (marker,) = _marker(plot_metric({"validation_0": {"ndcg": [0.5, 0.6]}}, best_iteration=1))
    assert marker.get_xdata()[0] == 1


def test_fitted_estimators_that_are_not_rankkit_rankers_are_named(data):
    # A fitted XGBRanker or Pipeline was called "not fitted yet".
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from xgboost import XGBRanker

    from rankkit.plotting import plot_position_bias

    (X, y, qid), _, _ = data
    xgb = XGBRanker(n_estimators=2, n_jobs=1).fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid], verbose=False)
    pipeline = make_pipeline(StandardScaler(), QueryRMSERanker(**FAST)).fit(X, y, queryrmseranker__qid=qid)
    for plot in (plot_metric, plot_importance, plot_position_bias):
        with pytest.raises(TypeError, match="takes a fitted rankkit ranker, got XGBRanker"):
            plot(xgb)
        with pytest.raises(TypeError, match=r"rankkit ranker \(pipeline\[-1\] for a Pipeline\), got Pipeline"):
            plot(pipeline)
    assert plot_importance(pipeline[-1]).patches
    with pytest.raises(NotFittedError, match="not fitted yet"):  # a rankkit ranker still hears that
        plot_importance(QueryRMSERanker())


def test_plot_metric_draws_into_given_axes(data):
    (X, y, qid), (Xv, yv, qv), _ = data
    ranker = QueryRMSERanker(**FAST).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    fig, (left, right) = plt.subplots(1, 2)
    assert plot_metric(ranker, ax=right, linewidth=3) is right
    assert len(left.get_lines()) == 0 and _curves(right)[0].get_linewidth() == 3


# -- plot_importance --------------------------------------------------------------------------------
def _dominant_feature_frame(n_queries=40, docs=25, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    frame = pd.DataFrame({
        "noise_a": rng.normal(size=n),
        "weak": rng.normal(size=n),
        "qid": np.repeat(np.arange(n_queries), docs),
        "constant": np.ones(n),  # never split on: importance 0
        "dominant": rng.normal(size=n),
        "noise_b": rng.normal(size=n),
    })
    signal = 3.0 * frame["dominant"] + 0.5 * frame["weak"]
    y = np.digitize(signal, [1.0, 2.5, 4.0]).astype(np.float64)
    return frame, y


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
@pytest.mark.parametrize("importance_type", ["gain", "split"])
def test_plot_importance_bars(backend, importance_type, tmp_path):
    frame, y = _dominant_feature_frame()
    ranker = QueryRMSERanker(n_estimators=30, max_depth=3, backend=backend, random_state=0, n_jobs=1).fit(frame, y)
    importance = ranker.backend_.feature_importances(importance_type)
    names = list(ranker.feature_names_in_)
    assert "qid" not in names and importance[names.index("constant")] == 0

    ax = plot_importance(ranker, importance_type=importance_type)
    bars = ax.patches
    labels = [t.get_text() for t in ax.get_yticklabels()]
    widths = [bar.get_width() for bar in bars]
    # Bottom to top: increasing importance, the dominant feature on top.
    assert labels[-1] == "dominant"
    assert "constant" not in labels and len(labels) == int(np.count_nonzero(importance))
    assert widths == sorted(widths)
    for label, width in zip(labels, widths):
        assert width == importance[names.index(label)]
    assert [bar.get_y() + bar.get_height() / 2 for bar in bars] == list(range(len(bars)))
    assert ax.get_title() == f"Feature importance ({importance_type})"
    _assert_png(ax, tmp_path / "importance.png")

    k = len(labels) - 1  # all but the least important
    assert k >= 1
    top = plot_importance(ranker, importance_type=importance_type, max_num_features=k)
    assert len(top.patches) == k
    assert [t.get_text() for t in top.get_yticklabels()] == labels[-k:]
    assert f"top {k} of {len(labels)}" in top.get_title()


def test_plot_importance_gain_is_feature_importances(data):
    (X, y, qid), _, _ = data
    ranker = QueryRMSERanker(**FAST).fit(X, y, qid=qid)
    ax = plot_importance(ranker, max_num_features=None, show_values=False)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert all(label == f"f{int(label[1:])}" for label in labels)  # array input: f0, f1, ...
    widths = {label: bar.get_width() for label, bar in zip(labels, ax.patches)}
    fi = ranker.feature_importances_
    assert widths == {f"f{i}": fi[i] for i in np.flatnonzero(fi)}
    assert len(ax.texts) == 0


def test_plot_importance_errors(data):
    (X, y, qid), _, _ = data
    with pytest.raises(NotFittedError, match="not fitted yet"):
        plot_importance(LambdaMARTRanker())
    ranker = QueryRMSERanker(**FAST).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="importance_type must be 'gain'.*'split'"):
        plot_importance(ranker, importance_type="cover")
    with pytest.raises(ValueError, match="max_num_features must be a positive int"):
        plot_importance(ranker, max_num_features=0)
    constant = QueryRMSERanker(**FAST)
    with pytest.warns(UserWarning, match="grew no split"):
        constant.fit(X, np.zeros_like(y), qid=qid)
    with pytest.raises(ValueError, match="Every feature importance is zero"):
        plot_importance(constant)


# -- plot_query_comparison ----------------------------------------------------------------------------
METRIC_FUNCTIONS = {
    "ndcg@10": lambda y, s, q: ndcg_score(y, s, qid=q, k=10, empty="exclude", per_query=True),
    "mrr": lambda y, s, q: mrr_score(y, s, qid=q, empty="exclude", per_query=True),
    "map": lambda y, s, q: map_score(y, s, qid=q, empty="exclude", per_query=True),
    "err@10": lambda y, s, q: err_score(y, s, qid=q, k=10, err_mapping="chapelle", per_query=True),
    "dcg@5": lambda y, s, q: dcg_score(y, s, qid=q, k=5, per_query=True),
}


@pytest.fixture(scope="module")
def two_rankings():
    """Labels, query ids and two score vectors that agree exactly on a third of the queries."""
    y, qid = make_ranking(n_queries=60, max_docs=25, random_state=1)[1:]
    rng = np.random.default_rng(1)
    scores_a = np.round(y + rng.normal(scale=1.5, size=y.size))  # rounded: many tied scores
    scores_b = np.round(y + rng.normal(scale=1.0, size=y.size))
    same = qid % 3 == 0
    scores_b[same] = scores_a[same]
    order = rng.permutation(y.size)  # rows need not be grouped by query
    return y[order], qid[order], scores_a[order], scores_b[order]


@pytest.mark.parametrize("metric", list(METRIC_FUNCTIONS))
def test_query_comparison_counts_match_metrics(two_rankings, metric, tmp_path):
    y, qid, a, b = two_rankings
    per_a, per_b = METRIC_FUNCTIONS[metric](y, a, qid), METRIC_FUNCTIONS[metric](y, b, qid)
    defined = ~np.isnan(per_a)
    diff = per_b[defined] - per_a[defined]
    wins, ties, losses = int((diff > 0).sum()), int((diff == 0).sum()), int((diff < 0).sum())
    # Per-query values come in order of first appearance of each query id; the
    # queries where both rankers score the same rows alike are ties.
    same = (pd.unique(qid) % 3 == 0)[defined]
    assert np.all(diff[same] == 0) and ties >= same.sum() > 0
    assert wins > 0 and losses > 0  # the data exercise all three

    ax = plot_query_comparison(y, a, b, qid=qid, metric=metric, labels=("old", "new"))
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [
        f"new better: {wins}", f"tie: {ties}", f"old better: {losses}",
        f"mean difference {diff.mean():+.4f}",
    ]
    heights = np.array([bar.get_height() for bar in ax.patches])
    xs = np.array([bar.get_x() + bar.get_width() / 2 for bar in ax.patches])
    np.testing.assert_array_equal(heights[np.argsort(xs)], np.sort(diff))
    colors = [to_rgba(bar.get_facecolor()) for bar in ax.patches]
    for height, color in zip(heights, colors):
        expected = "tab:blue" if height > 0 else "tab:red" if height < 0 else "0.6"
        assert color == to_rgba(expected)
    (mean_line,) = [line for line in ax.get_lines() if line.get_label().startswith("mean")]
    assert mean_line.get_ydata()[0] == pytest.approx(diff.mean(), abs=1e-15)
    n_left_out = int((~defined).sum())
    if metric.startswith(("ndcg", "mrr", "map")):
        assert n_left_out > 0 and f"{n_left_out} without a relevant document left out" in ax.get_title()
    else:  # ERR and DCG are defined on every query
        assert n_left_out == 0 and "left out" not in ax.get_title()
    assert f"({defined.sum()} queries" in ax.get_title()
    _assert_png(ax, tmp_path / "comparison.png")


def test_query_comparison_mean_is_difference_of_scores(two_rankings):
    y, qid, a, b = two_rankings
    ax = plot_query_comparison(y, a, b, qid=qid, metric="ndcg@10")
    mean_a, mean_b = (ndcg_score(y, s, qid=qid, k=10, empty="exclude") for s in (a, b))
    expected = mean_b - mean_a
    (mean_line,) = [line for line in ax.get_lines() if line.get_label().startswith("mean")]
    assert mean_line.get_ydata()[0] == pytest.approx(expected, abs=1e-12)


def test_query_comparison_metric_params(two_rankings):
    y, qid, a, b = two_rankings
    # empty=1.0: queries without a relevant document are ties, none left out.
    ax = plot_query_comparison(y, a, b, qid=qid, metric="mrr", metric_params={"empty": 1.0})
    n_queries = len(np.unique(qid))
    assert f"({n_queries} queries)" in ax.get_title()
    per_a = mrr_score(y, a, qid=qid, per_query=True)
    per_b = mrr_score(y, b, qid=qid, per_query=True)
    assert f"tie: {int((per_a == per_b).sum())}" in [t.get_text() for t in ax.get_legend().get_texts()]
    # ties="best" changes the values, and so the bars.
    best = plot_query_comparison(y, a, b, qid=qid, metric="ndcg@10", metric_params={"ties": "best"})
    diff = (ndcg_score(y, b, qid=qid, k=10, ties="best", empty="exclude", per_query=True)
            - ndcg_score(y, a, qid=qid, k=10, ties="best", empty="exclude", per_query=True))
    diff = np.sort(diff[~np.isnan(diff)])
    heights = sorted(bar.get_height() for bar in best.patches)
    np.testing.assert_array_equal(heights, diff)


def test_query_comparison_errors(two_rankings):
    y, qid, a, b = two_rankings
    with pytest.raises(ValueError, match="scores_a has 10.*scores_b has"):
        plot_query_comparison(y, a[:10], b, qid=qid)
    with pytest.raises(ValueError, match="qid has"):
        plot_query_comparison(y, a, b, qid=qid[1:])
    with pytest.raises(ValueError, match="qid is required"):
        plot_query_comparison(y, a, b, qid=None)
    with pytest.raises(ValueError, match="scores_b contains NaN"):
        plot_query_comparison(y, a, np.full_like(b, np.nan), qid=qid)
    with pytest.raises(ValueError, match="Unknown metric 'auc'"):
        plot_query_comparison(y, a, b, qid=qid, metric="auc")
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) \['gain'\] for the mrr metric"):
        plot_query_comparison(y, a, b, qid=qid, metric="mrr", metric_params={"gain": "linear"})
    with pytest.raises(ValueError, match="labels must be two names"):
        plot_query_comparison(y, a, b, qid=qid, labels="AB")
    with pytest.raises(TypeError, match="drop color="):
        plot_query_comparison(y, a, b, qid=qid, color="red")
    with pytest.raises(TypeError, match="drop label="):  # matplotlib's "multiple values for keyword" before
        plot_query_comparison(y, a, b, qid=qid, label="x")
    zeros = np.zeros_like(y)
    with pytest.raises(ValueError, match="undefined on every one"):
        plot_query_comparison(zeros, a, b, qid=qid)


def test_query_comparison_draws_into_given_axes(two_rankings):
    y, qid, a, b = two_rankings
    fig, (left, right) = plt.subplots(1, 2)
    assert plot_query_comparison(y, a, b, qid=qid, ax=left) is left
    assert len(right.patches) == 0 and len(left.patches) > 0


def test_plot_comparison_draws_every_ranker_with_its_interval():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from rankkit.datasets import make_ranking
    from rankkit.evaluation import compare, evaluate
    from rankkit.plotting import plot_comparison

    X, y, qid = make_ranking(80, random_state=0)
    rng = np.random.default_rng(0)
    scores = {"f0": X[:, 0], "noise": rng.normal(size=len(y)), "f0 too": X[:, 0] + 1e-3 * rng.normal(size=len(y))}
    comp = compare(evaluate(scores, None, y, qid=qid, metrics=["ndcg@10", "map"]), n_resamples=500)
    ax = Figure().subplots()
    assert plot_comparison(comp, "map", ax=ax) is ax
    labels = [t.get_text() for t in ax.get_yticklabels()]
    table = comp.table[comp.table.metric == "map"]
    noise = table[table.ranker == "noise"].iloc[0]
    assert labels == ["f0 (baseline)", "noise *" if noise.significant else "noise",
                            "f0 too *" if table[table.ranker == "f0 too"].iloc[0].significant else "f0 too"]
    assert ax.get_yticks()[0] == max(ax.get_yticks())  # table order, top to bottom
    assert noise.significant  # random scores are worse than the informative feature
    # The error bars span the intervals.
    segments = [c for c in ax.collections]
    spans = sorted(tuple(np.round(seg[0][:, 0], 12)) for col in segments for seg in [col.get_segments()])
    want = sorted((round(r.ci_low, 12), round(r.ci_high, 12)) for r in table.itertuples())
    assert spans == want
    with pytest.raises(ValueError, match="metric 'err' is not in the comparison"):
        plot_comparison(comp, "err", ax=ax)
    assert ax.get_xlabel() == "mean map with 95% bootstrap interval"
    comp = compare(evaluate(scores, None, y, qid=qid, metrics=["map"]), n_resamples=200, confidence=0.995)
    assert plot_comparison(comp, ax=Figure().subplots()).get_xlabel() == "mean map with 99.5% bootstrap interval"


def test_plot_comparison_of_a_ranker_with_equal_values_on_every_query():
    # A bootstrap interval could miss the mean by a rounding error (mean 0.09999999999999998,
    # interval up to 0.09999999999999992): errorbar refused the negative error bar and
    # plot_comparison raised ValueError instead of drawing.
    from matplotlib.figure import Figure

    from rankkit.evaluation import compare
    from rankkit.plotting import plot_comparison

    rng = np.random.default_rng(0)
    n = 150
    per_query = pd.DataFrame({
        "query": np.tile(np.arange(n), 2), "ranker": np.repeat(["base", "flat"], n), "metric": "precision@10",
        "value": np.r_[rng.random(n), np.full(n, 0.1)],
    })
    comp = compare(per_query, baseline="base", n_resamples=300)
    # compare now keeps the mean inside its interval; an interval that misses it by a
    # rounding error (as compare's did) must still draw.
    flat = comp.table.ranker == "flat"
    comp.table.loc[flat, "ci_high"] = np.nextafter(comp.table.loc[flat, "mean"].to_numpy(), 0.0)
    assert (comp.table.loc[flat, "ci_high"] < comp.table.loc[flat, "mean"]).all()
    ax = plot_comparison(comp, ax=Figure().subplots())
    spans = sorted(tuple(col.get_segments()[0][:, 0]) for col in ax.collections)
    assert spans[0] == pytest.approx((0.1, 0.1), abs=1e-12)  # the flat ranker: a point at 0.1
    with pytest.raises(TypeError, match="result of rankkit.evaluation.compare, got DataFrame."):
        plot_comparison(comp.table)


# -- plot_position_bias -------------------------------------------------------------------------------
def test_plot_position_bias_of_a_fitted_ranker(tmp_path):
    from rankkit import QueryRMSERanker
    from rankkit.datasets import make_ranking, pbm_propensities, simulate_clicks
    from rankkit.plotting import plot_position_bias

    X, y, qid = make_ranking(20, n_features=4, max_docs=10, random_state=0)
    Xc, clicks, sid, position = simulate_clicks(X, y, qid, X[:, 0], n_sessions=300, aggregate=False,
                                                random_state=0)
    ranker = QueryRMSERanker(n_estimators=3, position_bias="estimate").fit(Xc, clicks, qid=sid, position=position)
    ax = plot_position_bias(ranker, reference={"true": pbm_propensities(10, 1.0)}, max_position=5)
    (estimated, true) = ax.get_lines()
    assert estimated.get_label() == "estimated" and true.get_label() == "true"
    np.testing.assert_array_equal(estimated.get_ydata(), ranker.position_bias_[:5])
    np.testing.assert_array_equal(true.get_xdata(), np.arange(1, 6))
    ax.figure.savefig(tmp_path / "bias.png")
    one = plot_position_bias(ranker, reference=pbm_propensities(10, 1.0))  # one array: one curve
    assert [line.get_label() for line in one.get_lines()] == ["estimated", "reference"]
    with pytest.raises(ValueError, match="position_bias=None"):
        plot_position_bias(QueryRMSERanker(n_estimators=2).fit(X, y, qid=qid))
    for bad in (0, -3, 2.7, True):
        with pytest.raises(ValueError, match="max_position must be a positive int or None"):
            plot_position_bias(ranker, max_position=bad)


def test_plot_position_bias_refuses_curves_that_are_not_propensities():
    """An empty, 2-D, NaN or non-numeric curve was drawn (flattened, or nothing) or failed inside numpy."""
    from rankkit.plotting import plot_position_bias

    good = [1.0, 0.5, 0.3]
    for bad, error, match in (([], ValueError, "non-empty 1-D"), ([[1.0, 0.5], [1.0, 0.4]], ValueError, "dict"),
                              ([1.0, np.nan], ValueError, "finite propensities > 0"),
                              ([1.0, 0.0], ValueError, "finite propensities > 0"),
                              ("high", TypeError, "array of propensities")):
        with pytest.raises(error, match=match):
            plot_position_bias(bad)
        with pytest.raises(error, match=match):
            plot_position_bias(good, reference=bad)
    ax = plot_position_bias(good, reference={"a": [1.0, 0.6], "b": [1.0, 0.4, 0.2]})
    assert [line.get_label() for line in ax.get_lines()] == ["estimated", "a", "b"]


def test_plot_metric_label_empty_history_and_missing_metric_messages():
    """label= was a matplotlib TypeError; a dict of empty curves drew an empty
    axes; a metric missing from the chosen sets listed only their metrics."""
    from matplotlib.figure import Figure

    from rankkit.plotting import plot_metric

    with pytest.raises(TypeError, match="plot_metric labels each curve"):
        plot_metric({"validation_0": {"ndcg": [0.5, 0.6]}}, ax=Figure().subplots(), label="x")
    for history in ({"validation_0": {"ndcg": []}}, {}, {"validation_0": {}}):
        with pytest.raises(ValueError, match="the dict given has no value"):
            plot_metric(history, ax=Figure().subplots())
    with pytest.raises(ValueError, match=r"'ndcg' was not recorded for \['a'\]; they have \['mrr'\] "
                                         r"\(every set: \['mrr', 'ndcg'\]\)"):
        plot_metric({"a": {"mrr": [1, 2]}, "b": {"ndcg": [1, 2]}}, "ndcg", eval_sets=["a"], ax=Figure().subplots())


def test_plot_position_bias_draws_arrays_relative_to_position_1():
    from matplotlib.figure import Figure

    from rankkit.plotting import plot_position_bias

    ax = plot_position_bias([0.6, 0.3, 0.2], reference={"true": [0.5, 0.25, 0.1]}, ax=Figure().subplots())
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [1.0, 0.5, 1 / 3])
    np.testing.assert_allclose(ax.lines[1].get_ydata(), [1.0, 0.5, 0.2])
