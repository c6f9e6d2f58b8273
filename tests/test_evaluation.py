"""rankkit.evaluation: per-query results, cross-validation, the comparison's statistics against SciPy and ranx."""

import itertools
import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rankkit import LambdaMARTRanker, _stats
from rankkit.datasets import make_ranking
from rankkit.evaluation import Comparison, compare, cross_evaluate, evaluate
from rankkit.metrics import map_score, ndcg_score, pfound_score
from rankkit.model_selection import QueryKFold


def _paired(n, seed, shift=0.03, ties=False):
    rng = np.random.default_rng(seed)
    a = rng.uniform(size=n)
    b = np.clip(a + shift + 0.1 * rng.normal(size=n), 0, 1)
    if ties:
        b[: n // 4] = a[: n // 4]  # zero differences
        b = np.round(b, 1)
        a = np.round(a, 1)
    return a, b


# ------------------------------------------------------------ statistics

@pytest.mark.parametrize("n,seed,ties", [(8, 0, False), (30, 1, False), (60, 2, True), (300, 3, True)])
def test_t_and_wilcoxon_equal_scipy(n, seed, ties):
    a, b = _paired(n, seed, ties=ties)
    res = stats.ttest_rel(b, a)
    assert _stats.paired_t(a, b) == (res.statistic, res.pvalue)
    res = stats.wilcoxon(b, a)
    assert _stats.wilcoxon(a, b) == (res.statistic, res.pvalue)


@pytest.mark.parametrize("n,seed", [(8, 0), (30, 1), (200, 2)])
def test_t_test_equals_ranx(n, seed):
    ranx_tests = pytest.importorskip("ranx.statistical_tests")
    a, b = _paired(n, seed)
    p_ranx, _ = ranx_tests.paired_student_t_test(a, b)
    assert _stats.paired_t(a, b)[1] == p_ranx


@pytest.mark.parametrize("n,seed", [(6, 0), (12, 1), (16, 2)])
def test_exact_randomization_equals_scipy_permutation_test(n, seed):
    a, b = _paired(n, seed, shift=0.05, ties=seed == 1)
    res = stats.permutation_test((b, a), lambda x, y: np.mean(x - y), permutation_type="samples",
                                 n_resamples=np.inf)
    mean, p = _stats.randomization(a, b)
    assert mean == pytest.approx(res.statistic, rel=1e-12)
    assert p == pytest.approx(res.pvalue, rel=1e-12)


def test_exact_randomization_by_enumeration():
    a, b = _paired(10, 5)
    d = b - a
    flips = [abs(np.dot(s, d)) / 10 for s in itertools.product([1, -1], repeat=10)]
    want = np.mean([f >= abs(d.mean()) - 1e-15 for f in flips])
    assert _stats.randomization(a, b)[1] == want


@pytest.mark.parametrize("n,seed,shift", [(40, 0, 0.03), (120, 1, 0.01), (80, 2, 0.0)])
def test_sampled_randomization_agrees_with_ranx_and_scipy(n, seed, shift):
    """Both are Monte Carlo estimates of the same exact p: they agree within sampling error."""
    ranx_tests = pytest.importorskip("ranx.statistical_tests")
    a, b = _paired(n, seed, shift=shift)
    draws = 20_000
    _, p = _stats.randomization(a, b, n_resamples=draws, random_state=seed)
    p_ranx, _ = ranx_tests.fisher_randomization_test(a, b, draws, 0.01, 42)
    p_scipy = stats.permutation_test((b, a), lambda x, y: np.mean(x - y), permutation_type="samples",
                                     n_resamples=draws, random_state=seed + 100).pvalue
    for other in (p_ranx, p_scipy):
        se = math.sqrt(max(p * (1 - p), 1e-4) / draws * 2)
        assert abs(p - other) <= 5 * se, (p, other)
    assert 0 < p <= 1


def test_degenerate_differences():
    a = np.array([0.25, 0.5, 0.75])
    for test in _stats.TESTS:
        assert _stats.run_test(test, a, a)[1] == 1.0
    assert _stats.paired_t(a, a + 0.25) == (math.inf, 0.0)  # a constant shift: no variance
    with pytest.raises(ValueError, match="at least 2 queries"):
        _stats.paired_t([0.1], [0.2])
    with pytest.raises(ValueError, match="test must be one of"):
        _stats.run_test("sign", a, a)
    # A NaN difference used to make the randomisation test's p exactly 0.
    for test in _stats.TESTS:
        for bad in (np.nan, np.inf):
            with pytest.raises(ValueError, match="paired values must be finite"):
                _stats.run_test(test, a, np.array([0.25, bad, 0.75]))


def test_holm_and_bonferroni_by_definition():
    p = np.array([0.01, 0.04, 0.03, 0.2, np.nan, 0.005])
    m = 5
    np.testing.assert_allclose(_stats.adjust(p, "bonferroni"), [0.05, 0.2, 0.15, 1.0, np.nan, 0.025])
    # Holm: sorted 0.005, 0.01, 0.03, 0.04, 0.2 times 5, 4, 3, 2, 1, then running max.
    np.testing.assert_allclose(_stats.adjust(p, "holm"), [0.04, 0.09, 0.09, 0.2, np.nan, 0.025])
    np.testing.assert_array_equal(_stats.adjust(p, None), p)
    # Holm rejects whenever Bonferroni does, and step-down by hand at alpha = 0.05.
    holm = _stats.adjust(p, "holm")
    order = np.argsort(p[~np.isnan(p)])
    reject = []
    for i, j in enumerate(order):
        if p[~np.isnan(p)][j] <= 0.05 / (m - i):
            reject.append(j)
        else:
            break
    assert sorted(np.flatnonzero(holm[~np.isnan(p)] <= 0.05)) == sorted(reject)


def test_bootstrap_interval_agrees_with_scipy():
    rng = np.random.default_rng(0)
    values = rng.beta(2, 5, size=300)
    boot = _stats.bootstrap_means(values[:, None], n_resamples=20_000, random_state=1)
    low, high = _stats.percentile_interval(boot, 0.95)
    ref = stats.bootstrap((values,), np.mean, method="percentile", n_resamples=20_000, random_state=2)
    # Two Monte Carlo estimates of the same quantiles: within a few of their standard errors.
    width = high[0] - low[0]
    assert abs(low[0] - ref.confidence_interval.low) < 0.02 * width
    assert abs(high[0] - ref.confidence_interval.high) < 0.02 * width
    # And the normal theory interval, which the mean of 300 values follows closely.
    se = values.std(ddof=1) / math.sqrt(300)
    assert abs(width - 2 * 1.96 * se) < 0.05 * width


# ------------------------------------------------------------ evaluate, compare

@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(120, random_state=0)
    rng = np.random.default_rng(0)
    scores = {"f0": X[:, 0], "f0+noise": X[:, 0] + rng.normal(size=len(y)), "random": rng.normal(size=len(y))}
    return X, y, qid, scores


def test_evaluate_is_the_metric_functions_per_query(data):
    X, y, qid, scores = data
    res = evaluate(scores, None, y, qid=qid, metrics=["ndcg@10", "map", "pfound@5"], empty="exclude")
    assert list(res.columns) == ["query", "ranker", "metric", "value"]
    for ranker, s in scores.items():
        got = res[(res.ranker == ranker) & (res.metric == "ndcg@10")]
        want = ndcg_score(y, s, qid=qid, k=10, empty="exclude", per_query=True)
        np.testing.assert_array_equal(got["value"], want[~np.isnan(want)])
        np.testing.assert_array_equal(got["query"], np.unique(qid)[~np.isnan(want)])
        got = res[(res.ranker == ranker) & (res.metric == "pfound@5")]["value"]
        np.testing.assert_array_equal(got, pfound_score(y, s, qid=qid, k=5, err_mapping="chapelle", per_query=True))
    assert res.groupby(["ranker", "metric"]).size().loc[("random", "map")] == (
        ~np.isnan(map_score(y, scores["f0"], qid=qid, empty="exclude", per_query=True))).sum()


def test_evaluate_fitted_rankers_and_dataframe_with_query_column(data):
    X, y, qid, _ = data
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]).assign(qid=qid)
    model = LambdaMARTRanker(n_estimators=3, max_depth=2).fit(frame, y)
    res = evaluate({"lm": model, "f0": X[:, 0]}, frame, y, metrics="ndcg@5")
    want = ndcg_score(y, model.predict(frame), qid=qid, k=5, per_query=True)
    np.testing.assert_allclose(res[res.ranker == "lm"]["value"], want, rtol=1e-12)


def _pipeline(features):
    """User guide section 5: scale the features, pass the query column through to the ranker."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    scale = make_column_transformer((StandardScaler(), features), remainder="passthrough",
                                    verbose_feature_names_out=False).set_output(transform="pandas")
    return make_pipeline(scale, LambdaMARTRanker(n_estimators=3, max_depth=2, n_jobs=1, random_state=0))


def test_evaluate_and_cross_evaluate_a_pipeline_on_a_frame_with_query_column():
    from rankkit.metrics import get_ranking_scorer

    frame, y, qid = make_ranking(30, n_features=5, max_docs=10, as_frame=True, random_state=0)
    features = [c for c in frame.columns if c != "qid"]
    # Without metadata routing (the default): the column reaches the ranker through the pipeline.
    pipe = _pipeline(features).fit(frame, y)
    res = evaluate({"pipe": pipe}, frame, y)
    want = ndcg_score(y, pipe.predict(frame), qid=qid, k=10, per_query=True)
    np.testing.assert_allclose(res["value"], want, rtol=1e-12)
    assert res["value"].mean() == pytest.approx(pipe.score(frame, y), rel=1e-12)
    assert res["value"].mean() == pytest.approx(get_ranking_scorer("ndcg@10")(pipe, frame, y), rel=1e-12)
    cv = QueryKFold(n_splits=3)
    res = cross_evaluate({"pipe": _pipeline(features)}, frame, y, cv=cv)
    for fold, (train, test) in enumerate(cv.split(frame)):
        model = _pipeline(features).fit(frame.iloc[train], y.iloc[train])
        want = ndcg_score(y.iloc[test], model.predict(frame.iloc[test]), qid=qid.iloc[test], k=10, per_query=True)
        np.testing.assert_allclose(res[res.fold == fold]["value"], want, rtol=1e-12)


def test_evaluate_gives_models_x_as_the_scorers_do(data):
    # The scorers' contract: X arrives with its query column, which a non-rankkit
    # model drops itself (make_ranking_scorer's example).
    from sklearn.linear_model import Ridge

    from rankkit.metrics import get_ranking_scorer

    class DropQid(Ridge):
        def predict(self, X):
            return super().predict(X.drop(columns="qid"))

    X, y, qid, _ = data
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]).assign(qid=qid)
    model = DropQid().fit(frame.drop(columns="qid"), y)
    res = evaluate({"ridge": model}, frame, y, metrics="map")
    np.testing.assert_array_equal(res["value"], map_score(y, model.predict(frame), qid=qid, per_query=True))
    assert res["value"].mean() == pytest.approx(get_ranking_scorer("map")(model, frame, y), rel=1e-12)


def test_cross_evaluate_xgboost_ranker_with_qid(data):
    xgboost = pytest.importorskip("xgboost")
    X, y, qid, _ = data
    cv = QueryKFold(n_splits=2)
    ranker = xgboost.XGBRanker(n_estimators=3, max_depth=2, n_jobs=1, tree_method="hist")
    res = cross_evaluate({"xgb": ranker}, X, y, qid=qid, cv=cv)
    for fold, (train, test) in enumerate(cv.split(X, qid=qid)):
        model = xgboost.XGBRanker(n_estimators=3, max_depth=2, n_jobs=1, tree_method="hist")
        model.fit(X[train], y[train], qid=qid[train])
        want = ndcg_score(y[test], model.predict(X[test]), qid=qid[test], k=10, per_query=True)
        np.testing.assert_allclose(res[res.fold == fold]["value"], want, rtol=1e-12)


def test_evaluate_trec_ties_need_doc_ids(data):
    X, y, qid, scores = data
    ids = np.arange(len(y))
    res = evaluate({"r": np.round(scores["f0"])}, None, y, qid=qid, ties="trec", doc_ids=ids, gain="linear",
                   empty=0.0, metrics=["ndcg", "precision@3"])
    want = ndcg_score(y, np.round(scores["f0"]), qid=qid, ties="trec", doc_ids=ids, gain="linear",
                      empty=0.0, per_query=True)
    np.testing.assert_array_equal(res[res.metric == "ndcg"]["value"], want)
    with pytest.raises(ValueError, match="pass doc_ids="):
        evaluate({"r": scores["f0"]}, None, y, qid=qid, ties="trec")


def test_evaluate_bad_input(data):
    X, y, qid, scores = data
    with pytest.raises(ValueError, match="Unknown metric 'ndgc@10'"):
        evaluate(scores, None, y, qid=qid, metrics="ndgc@10")
    with pytest.raises(TypeError, match=r"unknown metric parameter\(s\) \['gian'\]"):
        evaluate(scores, None, y, qid=qid, gian="linear")
    # A parameter of another metric is not a typo: one setting serves any table.
    assert len(evaluate(scores, None, y, qid=qid, metrics="map", gain="linear")) > 0
    with pytest.raises(ValueError, match="the scores of ranker 'bad' contains NaN"):
        evaluate({"bad": np.full(len(y), np.nan)}, None, y, qid=qid)
    with pytest.raises(ValueError, match="ranker 'short' has 3 scores"):
        evaluate({"short": [1.0, 2.0, 3.0]}, None, y, qid=qid)
    with pytest.raises(ValueError, match="is a model: pass X"):
        evaluate({"m": LambdaMARTRanker()}, None, y, qid=qid)
    with pytest.raises(ValueError, match="lists a metric twice"):
        evaluate(scores, None, y, qid=qid, metrics=["map", "MAP"])
    with pytest.raises(TypeError, match="non-empty dict"):
        evaluate([scores["f0"]], None, y, qid=qid)
    # A bad value of a parameter that no listed metric takes was accepted silently.
    for params, match in [(dict(metrics="map", gain="linaer"), "gain must be"),
                          (dict(decay=7), "decay must be"),
                          (dict(err_max_label=-3), "err_max_label must be"),
                          (dict(metrics="dcg", empty="exlude"), "empty must be"),
                          (dict(relevance_threshold="x"), "relevance_threshold must be")]:
        with pytest.raises((TypeError, ValueError), match=match):
            evaluate(scores, None, y, qid=qid, **params)


class _CountingRidge:
    """A regressor that counts its fits."""

    fits = 0

    def fit(self, X, y, qid=None):
        type(self).fits += 1
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.asarray(X, dtype=float)[:, 0]

    def get_params(self, deep=True):
        return {}


@pytest.mark.parametrize("params, match", [
    (dict(metrics=["ndgc@10"]), "Unknown metric"),
    (dict(gain="linaer"), "gain must be"),
    (dict(emtpy=0.0), "unknown metric parameter"),
    (dict(ties="wrost"), "ties must be"),
    (dict(ties="trec"), "pass doc_ids="),
    (dict(doc_ids=np.arange(3)), "doc_ids is used only with ties='trec'"),
    (dict(ties="trec", doc_ids=np.arange(3)), "doc_ids must hold one document id per row"),
    (dict(ties="trec_double", doc_ids="same"), "lists each document once"),
])
def test_cross_evaluate_checks_its_settings_before_fitting(data, params, match):
    """Every fold of every ranker was fitted before a misspelt metric or a
    bad setting failed."""
    X, y, qid, _ = data
    if isinstance(params.get("doc_ids"), str):  # one id repeated in every query
        params = {**params, "doc_ids": np.zeros(len(y), dtype=int)}
    _CountingRidge.fits = 0
    with pytest.raises((TypeError, ValueError), match=match):
        cross_evaluate({"r": _CountingRidge()}, X, y, qid=qid, cv=3, **params)
    assert _CountingRidge.fits == 0


def test_compare_table_and_statistics(data):
    X, y, qid, scores = data
    res = evaluate(scores, None, y, qid=qid, metrics=["ndcg@10", "map"], empty="exclude")
    comp = compare(res, baseline="f0", test="wilcoxon", correction="bonferroni", n_resamples=2000)
    table = comp.table
    assert len(table) == 6 and table.loc[table.ranker == "f0", "p_value"].isna().all()
    for row in table[table.ranker != "f0"].itertuples():
        part = res[res.metric == row.metric].pivot(index="query", columns="ranker", values="value")
        a, b = part["f0"].to_numpy(), part[row.ranker].to_numpy()
        ref = stats.wilcoxon(b, a)
        assert (row.statistic, row.p_value) == (ref.statistic, ref.pvalue)
        assert row.p_adjusted == min(1.0, 4 * ref.pvalue)  # 2 rankers x 2 metrics
        assert row.mean == pytest.approx(b.mean(), rel=1e-14) and row.delta == pytest.approx((b - a).mean())
        assert row.ci_low < row.mean < row.ci_high and row.delta_ci_low < row.delta < row.delta_ci_high
        assert (row.wins, row.ties, row.losses) == ((b > a + 1e-12).sum(), (abs(b - a) <= 1e-12).sum(),
                                                    (b < a - 1e-12).sum())
        assert row.significant == (row.p_adjusted <= 0.05)
    # The random ranker is significantly worse than the informative feature.
    assert table.set_index(["metric", "ranker"]).loc[("ndcg@10", "random"), "significant"]
    # Same seed, same table.
    again = compare(res, baseline="f0", test="wilcoxon", correction="bonferroni", n_resamples=2000).table
    pd.testing.assert_frame_equal(table, again)


def test_compare_exports(data):
    X, y, qid, scores = data
    comp = compare(evaluate(scores, None, y, qid=qid, metrics=["ndcg@10", "mrr"]), n_resamples=500)
    md = comp.to_markdown()
    assert md.splitlines()[0] == "| ranker | ndcg@10 | W/T/L | mrr | W/T/L |"
    assert "f0 (baseline)" in md and "Holm" in md and "*" in md.splitlines()[4]
    tex = comp.to_latex()
    assert tex.startswith("\\begin{table}") and "\\toprule" in tex and "f0+noise" in tex
    assert "$^{*}$" in tex and "$\\le$" in tex
    assert isinstance(comp, Comparison) and repr(comp) == md
    assert re.search(r"\| \d\.\d \[\d\.\d, \d\.\d\] \|", comp.to_markdown(digits=1).splitlines()[2])
    for digits in (-1, 2.5, True):  # Python's format errors before ("Format specifier missing precision")
        with pytest.raises(ValueError, match="digits must be a non-negative int"):
            comp.to_latex(digits=digits)


def test_compare_exports_escape_names_and_state_the_confidence():
    rng = np.random.default_rng(0)
    base = rng.random(30)
    rows = [(i, name, "map", v) for name, shift in [("BM25", 0.0), ("x^2~y{a}\\", 0.1), ("C|D", 0.2),
                                                    ("a * marks <=b", 0.3)]
            for i, v in enumerate(base + shift + rng.normal(0, 0.01, 30))]
    comp = compare(pd.DataFrame(rows, columns=["query", "ranker", "metric", "value"]), confidence=0.975,
                   n_resamples=200)
    assert "a 97.5% percentile bootstrap" in comp.caption()  # it said 98%
    frame = pd.DataFrame(rows, columns=["query", "ranker", "metric", "value"])
    for confidence, text in ((0.95, "95%"), (0.9999999, "99.99999%"), (1 - 1e-12, "99.9999999999%")):
        assert compare(frame, confidence=confidence, n_resamples=200).confidence_percent == text  # "100%"
    tex = comp.to_latex()
    assert r"x\^{}2\~{}y\{a\}\textbackslash{} & " in tex  # ^ and ~ broke LaTeX, braces and \ too
    # Names are only escaped: the caption's "* marks" and "<=" became math inside them too.
    assert r"C\textbar{}D & " in tex and r"a * marks \textless{}=b & " in tex
    assert r"p $\le$ 0.05" in tex and r"$^{*}$ marks a significant" in tex
    # ...and the baseline's name in the caption too.
    tex = compare(pd.DataFrame(rows, columns=["query", "ranker", "metric", "value"]), baseline="a * marks <=b",
                  n_resamples=200).to_latex()
    assert r"difference from a * marks \textless{}=b (" in tex and tex.count(r"$\le$") == 1
    md = comp.to_markdown()
    assert "| C\\|D |" in md and all(line.count(" | ") == 2 for line in md.splitlines()[2:6])


def test_compare_drops_queries_every_ranker_excludes_and_names_what_is_missing():
    rows = [("q0", "a", "map", 0.1), ("q1", "a", "map", np.nan), ("q2", "a", "map", 0.3),
            ("q0", "b", "map", 0.2), ("q1", "b", "map", np.nan), ("q2", "b", "map", 0.1)]
    comp = compare(pd.DataFrame(rows, columns=["query", "ranker", "metric", "value"]), n_resamples=200)
    assert comp.table["n_queries"].tolist() == [2, 2]  # q1 has no relevant document: excluded by the metric
    rows = [(i, "a", "ndcg", 0.1 * i) for i in range(5)] + [(i, "b", m, 0.1 * i) for i in range(5)
                                                             for m in ("ndcg", "map")]
    with pytest.raises(ValueError, match="metric 'map' has no values of the baseline 'a'"):
        compare(pd.DataFrame(rows, columns=["query", "ranker", "metric", "value"]))
    with pytest.raises(ValueError, match="metric 'ndcg': a paired comparison needs at least 2 queries"):
        compare(pd.DataFrame(rows[:1] + rows[5:6], columns=["query", "ranker", "metric", "value"]))
    rows = [("q0", "a", "map", 0.1), ("q1", "a", "map", np.inf), ("q2", "a", "map", 0.3),
            ("q0", "b", "map", 0.2), ("q1", "b", "map", 0.5), ("q2", "b", "map", 0.1)]
    with pytest.raises(ValueError, match=r"metric 'map': the values must be finite .* queries \['q1'\]"):
        compare(pd.DataFrame(rows, columns=["query", "ranker", "metric", "value"]), n_resamples=200)


def test_compare_bad_input(data):
    X, y, qid, scores = data
    res = evaluate(scores, None, y, qid=qid)
    with pytest.raises(ValueError, match="baseline 'nope' is not a ranker"):
        compare(res, baseline="nope")
    with pytest.raises(ValueError, match="test must be one of"):
        compare(res, test="sign")
    with pytest.raises(ValueError, match="correction must be"):
        compare(res, correction="fdr")
    with pytest.raises(ValueError, match="confidence must be a number in"):
        compare(res, confidence=95)
    with pytest.raises(ValueError, match="every ranker on every query"):
        compare(res.iloc[1:])
    with pytest.raises(ValueError, match="two values for one"):
        compare(pd.concat([res, res]))
    with pytest.raises(TypeError, match="DataFrame of evaluate"):
        compare({"a": 1})


def test_cross_evaluate_tests_every_query_once(data):
    X, y, qid, _ = data
    rankers = {"lambdamart": LambdaMARTRanker(n_estimators=3, max_depth=2, random_state=0),
               "xendcg-like": LambdaMARTRanker(n_estimators=3, max_depth=3, random_state=0)}
    cv = QueryKFold(n_splits=3)
    res = cross_evaluate(rankers, X, y, qid=qid, cv=cv, metrics=["ndcg@10"])
    assert sorted(res.columns) == sorted(["query", "ranker", "metric", "value", "fold"])
    per_ranker = res[res.ranker == "lambdamart"]
    assert sorted(per_ranker["query"]) == sorted(np.unique(qid))
    # The values are those of a model fitted on the other folds.
    for fold, (train, test) in enumerate(cv.split(X, qid=qid)):
        model = LambdaMARTRanker(n_estimators=3, max_depth=2, random_state=0).fit(X[train], y[train],
                                                                                qid=qid[train])
        want = ndcg_score(y[test], model.predict(X[test]), qid=qid[test], k=10, per_query=True)
        got = per_ranker[per_ranker.fold == fold]["value"].to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert compare(res).table["n_queries"].eq(len(np.unique(qid))).all()


def test_compare_tolerance_must_be_a_non_negative_number(data):
    """A negative tolerance counted every query of the baseline as both won and lost against itself,
    NaN counted none; None failed inside a comparison."""
    X, y, qid, scores = data
    res = evaluate(scores, None, y, qid=qid)
    for tolerance in (-0.1, float("nan"), None, "0"):
        with pytest.raises(ValueError, match="tolerance must be a finite number >= 0"):
            compare(res, tolerance=tolerance, n_resamples=200)
    table = compare(res, tolerance=0, n_resamples=200).table
    assert (table[["wins", "ties", "losses"]].sum(axis=1) == table["n_queries"]).all()


def test_compare_random_state_must_be_a_seed(data):
    """-1 and 1.5 failed inside NumPy without naming the parameter; None gave another table every call."""
    X, y, qid, scores = data
    res = evaluate(scores, None, y, qid=qid)
    for seed in (-1, 1.5, "a", None, True):
        with pytest.raises(ValueError, match="random_state must be an int >= 0"):
            compare(res, random_state=seed, n_resamples=200)
    assert compare(res, random_state=np.int64(3), n_resamples=200).table.equals(
        compare(res, random_state=3, n_resamples=200).table)


def test_ranker_names_that_read_the_same_are_an_error(data):
    """The results name rankers by str(name): {1: a, "1": b} silently kept only b's values."""
    X, y, qid, scores = data
    with pytest.raises(ValueError, match="two names that read '1'"):
        evaluate({1: scores["f0"], "1": scores["random"]}, None, y, qid=qid)
    with pytest.raises(ValueError, match="two names that read the same"):
        cross_evaluate({1: LambdaMARTRanker(n_estimators=1), "1": LambdaMARTRanker(n_estimators=1)}, X, y, qid=qid)


def test_cross_evaluate_names_a_ranker_that_is_not_an_estimator_and_a_bad_cv(data):
    X, y, qid, scores = data
    # clone's own error printed the whole array of scores.
    with pytest.raises(TypeError, match="ranker 'f0' is of type ndarray, not an estimator") as info:
        cross_evaluate({"f0": scores["f0"]}, X, y, qid=qid)
    assert len(str(info.value)) < 300
    splits = list(QueryKFold(n_splits=2).split(X, qid=qid))
    for cv in (splits, True):  # an AttributeError: 'list' object has no attribute 'split'
        with pytest.raises(TypeError, match="cv must be an int or a query splitter"):
            cross_evaluate({"lm": LambdaMARTRanker(n_estimators=1)}, X, y, qid=qid, cv=cv)


def test_intervals_hold_their_mean_when_every_value_is_equal():
    """Resampled means of 150 equal values differ from their mean by rounding
    only; the interval used to miss the mean (plot_comparison then crashed)."""
    rows = []
    for q in range(150):
        rows.append({"query": q, "ranker": "a", "metric": "ndcg@10", "value": 0.1})
        rows.append({"query": q, "ranker": "b", "metric": "ndcg@10", "value": 0.1 + 0.01 * (q % 3)})
    table = compare(pd.DataFrame(rows), baseline="b").table
    assert (table["ci_low"] <= table["mean"]).all() and (table["mean"] <= table["ci_high"]).all()
    assert (table["delta_ci_low"] <= table["delta"]).all() and (table["delta"] <= table["delta_ci_high"]).all()


def test_compare_is_the_same_whatever_blas_threads():
    """The bootstrap's means were one BLAS product, whose sums moved by a unit
    in the last place with BLAS's thread count: another table for the same
    random_state on another machine."""
    from threadpoolctl import threadpool_limits

    n = 500
    rng = np.random.default_rng(n)
    results = pd.concat([pd.DataFrame({"query": np.arange(n), "ranker": r, "metric": "ndcg@10",
                                       "value": rng.random(n)}) for r in "abc"], ignore_index=True)
    tables = []
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="blas"):
            tables.append(compare(results, test="randomization", n_resamples=2000, random_state=0).table)
    pd.testing.assert_frame_equal(tables[0], tables[1], check_exact=True)


def test_compare_of_no_results_says_so():
    """Every query excluded (empty='exclude' without a relevant document) gave
    an IndexError."""
    results = evaluate({"a": [0.1, 0.2], "b": [0.2, 0.1]}, None, [0, 0], qid=[1, 1], metrics="mrr", empty="exclude")
    assert results.empty
    with pytest.raises(ValueError, match="results has no rows"):
        compare(results)
