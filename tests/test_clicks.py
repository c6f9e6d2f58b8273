"""Learning from clicks: the simulator, positions, IPW and propensity estimation."""

import hashlib

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from rankkit import LambdaMARTRanker, QueryRMSERanker, Ranker, StochasticRankRanker, XENDCGRanker, YetiRanker
from rankkit._click_kernels import model_rank_discounts, pair_click_losses, pairwise_propensities
from rankkit._clicks import RegressionEM, ipw_labels
from rankkit.datasets import make_ranking, pbm_propensities, simulate_clicks
from rankkit.metrics import ndcg_score
from rankkit.objectives import QueryRMSE, StochasticRank

from . import _reference_clicks as ref
from ._backends import BACKENDS_UNDER_TEST


def _click_data(n_queries=60, n_sessions=3000, eta=1.0, aggregate=False, model="pbm", seed=0, top_k=8):
    X, y, qid = make_ranking(n_queries, n_features=6, max_docs=20, random_state=seed)
    logger = X[:, 0] + np.random.default_rng(seed).normal(size=y.shape[0])
    return (X, y, qid), simulate_clicks(X, y, qid, logger, n_sessions=n_sessions, eta=eta, model=model,
                                        aggregate=aggregate, top_k=top_k, random_state=seed)


# -- the simulator -----------------------------------------------------------
@pytest.mark.parametrize("model", ["pbm", "noisy", "cascade"])
def test_simulator_sessions_are_impression_lists(model):
    (X, y, qid), (Xc, clicks, sid, position) = _click_data(model=model, n_sessions=400)
    assert Xc.shape[0] == clicks.shape[0] == sid.shape[0] == position.shape[0]
    frame = pd.DataFrame({"sid": sid, "position": position, "clicks": clicks})
    assert frame.groupby("sid").position.apply(lambda p: sorted(p) == list(range(1, len(p) + 1))).all()
    assert frame.sid.nunique() == 400
    assert set(np.unique(clicks)) <= {0.0, 1.0}
    per_session = frame.groupby("sid").clicks.sum()
    if model == "cascade":
        assert per_session.max() == 1
    else:
        assert per_session.max() > 1


def test_simulator_click_rates_follow_the_pbm():
    # One query of three documents shown in a fixed order: the click rate at
    # rank k must be (1/k)^eta (2^r - 1) / (2^rmax - 1), within 5 binomial SEs.
    X = np.arange(3.0)[:, None]
    y = np.array([2.0, 0.0, 1.0])
    scores = np.array([3.0, 2.0, 1.0])
    n = 40_000
    _, clicks, qid, position = simulate_clicks(X, y, np.zeros(3), scores, n_sessions=n, eta=2.0, random_state=1)
    expected = pbm_propensities(3, 2.0) * (np.exp2(y) - 1) / 3.0
    assert position.tolist() == [1, 2, 3]
    se = np.sqrt(expected * (1 - expected) / n) + 1e-12
    assert np.all(np.abs(clicks / n - expected) <= 5 * se)
    assert clicks[1] == 0  # label 0 is never clicked without noise
    _, noisy, _, _ = simulate_clicks(X, y, np.zeros(3), scores, n_sessions=n, model="noisy", noise=0.2,
                                     random_state=1)
    assert noisy[1] > 0


def test_simulator_aggregate_matches_sessions_in_distribution():
    (_, y, _), (_, agg, qa, pa) = _click_data(aggregate=True, n_sessions=20_000, seed=2)
    _, (_, ses, _, ps) = _click_data(aggregate=False, n_sessions=20_000, seed=2)
    by_position_agg = np.bincount(pa - 1, weights=agg)
    by_position_ses = np.bincount(ps - 1, weights=ses)
    # Two independent draws of Poisson-like totals: within 5 standard errors.
    assert np.all(np.abs(by_position_agg - by_position_ses) <= 5 * np.sqrt(by_position_agg + by_position_ses))
    assert pd.DataFrame({"q": qa, "p": pa}).duplicated().sum() == 0


def test_simulator_randomised_logger_shows_each_document_at_several_ranks():
    X, y, qid = make_ranking(30, n_features=4, max_docs=12, random_state=0)
    scores = X[:, 0]
    X = np.column_stack([X, np.arange(X.shape[0])])  # the last column names the document
    n_sessions, K = 30_000, 4
    one = simulate_clicks(X, y, qid, scores, n_sessions=n_sessions, return_impressions=True, random_state=1)
    Xc, clicks, lists, position, imp = simulate_clicks(X, y, qid, scores, n_sessions=n_sessions, n_rankings=K,
                                                       return_impressions=True, random_state=1)
    sizes = np.bincount(np.unique(qid, return_inverse=True)[1])
    assert Xc.shape[0] == K * qid.shape[0] and np.unique(lists).size == K * sizes.size
    frame = pd.DataFrame({"list": lists, "position": position, "doc": Xc[:, -1], "imp": imp, "clicks": clicks})
    # Each list shows its query's documents once, at positions 1..n.
    assert not frame.duplicated(["list", "position"]).any() and not frame.duplicated(["list", "doc"]).any()
    assert (frame.groupby("list")["position"].max() == np.repeat(sizes, K)).all()
    # List 0 of a query is the logger's own order: the rows of n_rankings=1.
    first = frame[frame["list"] % K == 0]
    np.testing.assert_array_equal(first["doc"], one[0][:, -1])
    np.testing.assert_array_equal(first["position"], one[3])
    # Every session saw one list; a list's rows share its sessions.
    per_list = frame.groupby("list")["imp"].agg(["min", "max"])
    assert (per_list["min"] == per_list["max"]).all() and per_list["min"].sum() == n_sessions
    # Most documents are shown at more than one rank.
    ranks = frame.groupby([lists // K, "doc"])["position"].nunique()
    assert (ranks > 1).mean() > 0.8
    # Clicks follow the PBM on every list: totals by position within 5 standard errors.
    rel = (np.exp2(y) - 1) / (np.exp2(y.max()) - 1)
    label = dict(zip(X[:, -1], rel))
    expected = frame["imp"] * pbm_propensities(frame["position"].max())[frame["position"] - 1] * frame["doc"].map(label)
    by_pos = frame.assign(expected=expected).groupby("position")[["clicks", "expected"]].sum()
    assert np.all(np.abs(by_pos["clicks"] - by_pos["expected"]) <= 5 * np.sqrt(by_pos["expected"]) + 1)
    # Sessions, not aggregated: one list per session, positions unique within it.
    _, _, sid, ps = simulate_clicks(X, y, qid, scores, n_sessions=500, n_rankings=K, aggregate=False, random_state=2)
    assert not pd.DataFrame({"s": sid, "p": ps}).duplicated().any()


def test_simulator_randomises_a_constant_logger():
    """A constant logger's softmax is uniform: its Plackett-Luce rankings are
    random orders (the noise was scaled by the scores' sd, 0, and every
    ranking was the row order)."""
    X, y, qid = make_ranking(20, n_features=3, min_docs=4, max_docs=8, random_state=0)
    X = np.column_stack([X, np.arange(X.shape[0])])  # the last column names the document
    Xc, _, lists, position = simulate_clicks(X, y, qid, np.zeros(y.shape[0]), n_sessions=2000, n_rankings=8,
                                             random_state=0)
    frame = pd.DataFrame({"query": lists // 8, "doc": Xc[:, -1], "position": position})
    assert (frame.groupby(["query", "doc"])["position"].nunique() > 1).mean() > 0.9
    # The first ranking is still the logger's own: ties in row order.
    first = frame[lists % 8 == 0]
    assert (first.groupby("query")["doc"].apply(lambda d: d.is_monotonic_increasing)).all()


def test_simulator_rejects_bad_arguments():
    X, y, qid = make_ranking(5, random_state=0)
    with pytest.raises(ValueError, match="click model"):
        simulate_clicks(X, y, qid, X[:, 0], model="dbn")
    with pytest.raises(ValueError, match="n_sessions"):
        simulate_clicks(X, y, qid, X[:, 0], n_sessions=0)
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match="n_rankings"):
            simulate_clicks(X, y, qid, X[:, 0], n_rankings=bad)
    for bad in (-1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="ranking_noise"):
            simulate_clicks(X, y, qid, X[:, 0], n_rankings=2, ranking_noise=bad)
    with pytest.raises(ValueError, match="max_label=1 is below the largest label 4 of y"):
        simulate_clicks(X, y, qid, X[:, 0], max_label=1)
    with pytest.raises(ValueError, match="return_impressions=True applies to aggregate=True"):
        simulate_clicks(X, y, qid, X[:, 0], aggregate=False, return_impressions=True)
    # Accepted before: True as 1 session, a truthy "no" as aggregate=True, an infinite top label (no click at
    # all), text as numbers; or a bare TypeError naming no parameter.
    for params, name in [(dict(n_sessions=True), "n_sessions"), (dict(top_k=True), "top_k"),
                         (dict(n_rankings=True), "n_rankings"), (dict(aggregate="no"), "aggregate"),
                         (dict(max_label=np.inf), "max_label"), (dict(max_label=1100), "max_label"),
                         (dict(max_label="3"), "max_label"),
                         (dict(eta="1"), "eta"), (dict(eta=np.nan), "eta"), (dict(ranking_noise=None), "ranking_noise"),
                         (dict(ranking_noise="a"), "ranking_noise"), (dict(noise="0.1"), "noise")]:
        with pytest.raises(ValueError, match=rf"^{name} must be"):
            simulate_clicks(X, y, qid, X[:, 0], **params)
    simulate_clicks(X, y, qid, X[:, 0], n_sessions=np.int64(5), eta=np.float32(1.0), max_label=4)  # NumPy scalars
    with pytest.raises(ValueError, match="y has the label 1100: .*needs labels below 1024"):
        simulate_clicks(X, np.where(y > 3, 1100.0, y), qid, X[:, 0])


def test_pbm_propensities_are_checked():
    """They fed propensities= unchecked: eta=-1 gave [1, 2, 3], 2.7 positions 2."""
    np.testing.assert_allclose(pbm_propensities(3, 2), [1, 1 / 4, 1 / 9])
    for args, name in [((3, -1), "eta"), ((3, np.nan), "eta"), ((2.7,), "max_position"), ((0,), "max_position"),
                       ((True,), "max_position")]:
        with pytest.raises(ValueError, match=rf"^{name} must be"):
            pbm_propensities(*args)


def test_simulator_rejects_rows_of_other_lengths():
    """X and scores are matched to y row by row: a longer one was silently
    cut, a shorter scores silently left documents unshown."""
    X, y, qid = make_ranking(5, random_state=0)
    for bad in (dict(scores=np.r_[X[:, 0], 1.0]), dict(scores=X[:-2, 0]), dict(X=np.r_[X, X]), dict(X=X[:-3])):
        args = {"X": X, "scores": X[:, 0], **bad}
        name = next(iter(bad))
        with pytest.raises(ValueError, match=rf"^{name} has \d+ rows but y has {y.shape[0]}"):
            simulate_clicks(args["X"], y, qid, args["scores"], n_sessions=10, random_state=0)


def test_simulator_aggregate_has_rows_only_for_shown_lists():
    """Few sessions over many lists leave lists unseen: they have no rows
    (they had, with 0 impressions, and clicks / impressions was NaN)."""
    X, y, qid = make_ranking(50, n_features=3, max_docs=10, random_state=0)
    X = np.column_stack([X, np.arange(X.shape[0])])  # the last column names the document
    for K in (1, 8):
        Xc, clicks, lists, position, imp = simulate_clicks(X, y, qid, X[:, 0], n_sessions=30, n_rankings=K,
                                                           return_impressions=True, random_state=0)
        assert imp.min() >= 1 and np.unique(lists).size < 50 * K  # some lists went unseen
        # Every session saw one list, and each list's rows share its sessions.
        per_list = pd.DataFrame({"list": lists, "imp": imp}).groupby("list")["imp"].agg(["min", "max"])
        assert (per_list["min"] == per_list["max"]).all() and per_list["min"].sum() == 30
        ctr = clicks / imp
        assert np.isfinite(ctr).all() and ctr.max() <= 1


# -- validation ---------------------------------------------------------------
def _fit(position, clicks=None, **params):
    X = np.random.default_rng(0).normal(size=(6, 2))
    clicks = np.array([1.0, 0, 0, 0, 1, 0]) if clicks is None else clicks
    params.setdefault("position_bias", "known")
    if params["position_bias"] == "known":
        params.setdefault("propensities", lambda k: 1.0 / k)
    return QueryRMSERanker(n_estimators=2, **params).fit(X, clicks, qid=[0, 0, 0, 1, 1, 1], position=position)


@pytest.mark.parametrize("position, message", [
    ([1, 2, 0, 1, 2, 3], "1-based"),
    ([1, 2, 3.5, 1, 2, 3], "integer"),
    ([1, 2, np.nan, 1, 2, 3], "missing"),
    ([1, 2, None, 1, 2, 3], "missing"),
    ([1, 2, 2, 1, 2, 3], "share position 2"),
    ([1, 2, 3], "one position per row"),
    (["a", "b", "c", "a", "b", "c"], "integer"),
    # Text in an object array (a DataFrame column) was read as numbers, while a str array was refused.
    (np.array(["1", "2", "3", "1", "2", "3"], dtype=object), "got text such as '1'"),
    # Infinite or beyond int64: the int64 conversion wrapped them to the rank -2**63 in the message.
    ([1, 2, np.inf, 1, 2, 3], r"integer ranks \(1 = top\); got .*\(inf\)"),
    ([1, 2, 1e30, 1, 2, 3], r"integer ranks \(1 = top\); got .*\(1e\+30\)"),
    ([1, 2, -1e30, 1, 2, 3], r"integer ranks \(1 = top\); got .*\(-1e\+30\)"),
])
def test_bad_positions_are_clear_errors(position, message):
    with pytest.raises((ValueError, TypeError), match=message):
        _fit(np.array(position, dtype=object) if None in position else position)


def test_bad_clicks_and_parameters_are_clear_errors():
    with pytest.raises(ValueError, match="negative"):
        _fit([1, 2, 3, 1, 2, 3], clicks=np.array([1.0, -1, 0, 0, 1, 0]))
    with pytest.raises(ValueError, match="position_bias=None"):
        _fit([1, 2, 3, 1, 2, 3], position_bias=None)
    with pytest.raises(ValueError, match=r"needs the rank.*or a DataFrame with a 'position' column"):
        _fit(None)
    with pytest.raises(ValueError, match=r"needs the rank each row was shown at: pass fit\(\.\.\., position=\.\.\.\)\.$"):
        _fit(None, position_col=None)  # no column to name
    # The objective's rules apply to the debiased labels it trains on, and the message says so.
    with pytest.raises(ValueError, match=r"On clicks the objective trains on debiased labels.*largest here 2\b"):
        X = np.random.default_rng(0).normal(size=(6, 2))
        LambdaMARTRanker(metric="err", n_estimators=2, position_bias="known", propensities=lambda k: 1.0 / k).fit(
            X, np.array([1.0, 0, 0, 0, 1, 1]), qid=[0, 0, 0, 1, 1, 1], position=[1, 2, 3, 1, 2, 3])
    with pytest.raises(ValueError, match="needs propensities"):
        _fit([1, 2, 3, 1, 2, 3], propensities=None)
    for bad in ([1.0, 0.5, 0.0], [1.0, 1.5, 0.3], lambda k: -1.0 / k):
        with pytest.raises(ValueError, match=r"\(0, 1\]"):
            _fit([1, 2, 3, 1, 2, 3], propensities=bad)
    with pytest.raises(ValueError, match="one propensity per position"):
        _fit([1, 2, 3, 1, 2, 3], propensities=[1.0, 0.5])
    # Entries beyond the deepest training position are read later (eval sets, score): checked at fit.
    with pytest.raises(ValueError, match=r"\(0, 1\].*position 5 has nan"):
        _fit([1, 2, 3, 1, 2, 3], propensities=[1.0, 0.5, 0.3, 0.2, np.nan])
    with pytest.raises(ValueError, match=r"propensities must be one-dimensional.*shape \(2, 3\)"):
        _fit([1, 2, 3, 1, 2, 3], propensities=np.array([[1.0, 0.5, 0.3], [0.25, 0.2, 0.17]]))
    # Clicks follow the rules of graded labels: one column, numbers.
    clicks = np.array([1.0, 0, 0, 0, 1, 0])
    assert np.array_equal(_fit([1, 2, 3, 1, 2, 3], clicks=clicks[:, None], random_state=0).predict(np.zeros((1, 2))),
                          _fit([1, 2, 3, 1, 2, 3], clicks=clicks, random_state=0).predict(np.zeros((1, 2))))
    with pytest.raises(ValueError, match=r"y must be one-dimensional, got shape \(6, 2\)"):
        _fit([1, 2, 3, 1, 2, 3], clicks=np.c_[clicks, clicks])
    with pytest.raises(TypeError, match="y must be numeric"):
        _fit([1, 2, 3, 1, 2, 3], clicks=clicks.astype(str))
    # The query column read first, then "needs a DataFrame with a 'qid' column (position_col)" of one that has it.
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(6, 2))).assign(qid=[0, 0, 0, 1, 1, 1])
    with pytest.raises(ValueError, match="qid_col and position_col both name the column 'qid'"):
        QueryRMSERanker(position_bias="known", propensities=lambda k: 1.0 / k, position_col="qid").fit(
            frame, np.array([1.0, 0, 0, 0, 1, 0]))
    # ERR without a mapping on the debiased labels: the message spoke of labels the user never passed.
    (_, _, _), (Xc, c, sid, pos) = _click_data(n_sessions=200)
    kw = dict(n_estimators=2, position_bias="known", propensities=lambda k: 1.0 / k, eval_metric="err@5")
    with pytest.raises(ValueError, match=r"err@5 on eval_set\[0\] \(computed on the debiased click labels"):
        LambdaMARTRanker(**kw).fit(Xc, c, qid=sid, position=pos, eval_set=[(Xc, c)], eval_qid=[sid],
                                   eval_position=[pos.copy()])
    with pytest.raises(ValueError, match=r"score computes err@5 on the debiased click labels.*stop probabilities"):
        LambdaMARTRanker(**kw).fit(Xc, c, qid=sid, position=pos).score(Xc, c, qid=sid, position=pos)
    # A document id or a timestamp passed as the position: a table that deep would not fit in memory.
    with pytest.raises(ValueError, match=r"position holds 1000000000000, deeper than rankkit takes"):
        _fit([1, 2, 10**12, 1, 2, 3])
    with pytest.raises(ValueError, match="used only with"):
        _fit([1, 2, 3, 1, 2, 3], position_bias="estimate", propensities=[1.0, 0.5, 0.3])
    # The estimators' parameters were ignored silently where unused.
    for params in (dict(position_bias="estimate", position_bias_norm=5.0),
                   dict(position_bias="known", position_bias_norm=0.5)):
        with pytest.raises(ValueError, match=r'position_bias_norm=.* used only with position_bias="estimate" and '
                                             r'propensity_estimator="pairwise"'):
            _fit([1, 2, 3, 1, 2, 3], **params)
    with pytest.raises(ValueError, match=r"propensity_estimator='pairwise' is used only with "
                                         r'position_bias="estimate"'):
        _fit([1, 2, 3, 1, 2, 3], propensity_estimator="pairwise")
    with pytest.raises(ValueError, match=r"propensity_estimator=\'pairwise\' is used only"):
        QueryRMSERanker(n_estimators=2, propensity_estimator="pairwise").fit(
            np.zeros((4, 1)), [1.0, 0, 0, 1], qid=[0, 0, 1, 1])
    _fit([1, 2, 3, 1, 2, 3], position_bias="estimate", propensity_estimator="pairwise", position_bias_norm=0.5)
    with pytest.raises(ValueError, match="counts above 1"):
        _fit([1, 2, 3, 1, 2, 3], clicks=np.array([3.0, 0, 0, 0, 1, 0]), position_bias="estimate")


def test_duplicate_positions_name_the_callers_qid():
    # "query group 1" was the group's number in rankkit's sorted layout, not an id the caller knows.
    X = np.zeros((4, 1))
    for qid, name in ((["b", "b", "a", "a"], "'a'"), ([7, 7, 3, 3], "3")):
        with pytest.raises(ValueError, match=rf"share position 1 \(qid {name}\)"):
            QueryRMSERanker(n_estimators=1, position_bias="known", propensities=lambda k: 1 / k).fit(
                X, [1.0, 0, 0, 1], qid=qid, position=[1, 2, 1, 1])


def test_duplicate_positions_advise_one_group_per_shown_list():
    """The error advised aggregating per (query, document, position), which
    leaves a randomised logger's query with two documents at one rank: the
    same error again. One group per shown list (query, ranking) is the fix."""
    X, y, qid = make_ranking(20, n_features=3, max_docs=8, random_state=0)
    X = np.column_stack([X, np.arange(y.shape[0]), qid])  # document and query of each row
    Xc, c, sid, pos = simulate_clicks(X, y, qid, X[:, 0], n_sessions=2000, n_rankings=4, aggregate=False,
                                      random_state=0)
    log = pd.DataFrame({"doc": Xc[:, -2].astype(int), "query": Xc[:, -1].astype(int), "position": pos, "clicks": c})
    ranker = QueryRMSERanker(n_estimators=1, position_bias="known", propensities=lambda k: 1 / k)
    by_position = log.groupby(["query", "doc", "position"], as_index=False)["clicks"].sum()
    with pytest.raises(ValueError, match=r"aggregate the clicks per shown list: one qid per \(query, ranking shown\)"):
        ranker.fit(X[by_position["doc"], :3], by_position["clicks"], qid=by_position["query"],
                   position=by_position["position"])
    # What it advises works: the shown list (the session's ranking) as the group.
    ranking = log.groupby(sid)["doc"].transform(lambda d: hash(tuple(d)))
    by_list = log.assign(ranking=ranking).groupby(["query", "ranking", "doc", "position"],
                                                  as_index=False)["clicks"].sum()
    ranker.fit(X[by_list["doc"], :3], by_list["clicks"], qid=by_list["query"].astype(str) + "/" +
               by_list["ranking"].astype(str), position=by_list["position"])


def test_non_numeric_propensities_name_the_parameter():
    # numpy's "float() argument must be a string or a real number, not 'dict'" named nothing.
    for bad in ({1: 1.0, 2: 0.5, 3: 0.3}, lambda k: ["high"] * len(k)):
        with pytest.raises(TypeError, match=r"^propensities must be an array of examination probabilities"):
            _fit([1, 2, 3, 1, 2, 3], propensities=bad)


def test_dataframe_position_column_and_routing():
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=300)
    df = pd.DataFrame(Xc, columns=[f"f{i}" for i in range(Xc.shape[1])]).assign(qid=sid, position=position)
    params = dict(n_estimators=5, n_jobs=1, random_state=0, position_bias="known", propensities=lambda k: 1.0 / k)
    from_frame = QueryRMSERanker(**params).fit(df, clicks)
    from_args = QueryRMSERanker(**params).fit(Xc, clicks, qid=sid, position=position)
    assert from_frame.n_features_in_ == Xc.shape[1]
    assert np.array_equal(from_frame.predict(df), from_args.predict(Xc))
    with pytest.raises(ValueError, match="Positions given twice"):
        QueryRMSERanker(**params).fit(df, clicks, position=position)
    # Debiasing off: the column stays a feature, as before click support existed.
    assert QueryRMSERanker(n_estimators=2).fit(df, clicks).n_features_in_ == Xc.shape[1] + 1


def test_grid_search_routes_positions():
    import sklearn
    from sklearn.model_selection import GridSearchCV

    from rankkit.model_selection import QueryKFold

    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=300)
    ranker = QueryRMSERanker(n_estimators=3, n_jobs=1, random_state=0, position_bias="known",
                             propensities=lambda k: 1.0 / k)
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(ranker, {"max_depth": [2, 3]}, cv=QueryKFold(2))
        search.fit(Xc, clicks, qid=sid, position=position)
    assert np.isfinite(search.best_score_)


# -- IPW ----------------------------------------------------------------------
def _mc_sessions(n_sessions, eta, seed):
    """One query of 6 documents (graded labels) shown ``n_sessions`` times."""
    y = np.array([3.0, 0.0, 1.0, 2.0, 0.0, 1.0])
    X = np.arange(6.0)[:, None]
    scores = np.array([0.2, 0.9, 0.4, 0.1, 0.7, 0.5])
    _, clicks, sid, position = simulate_clicks(X, y, np.zeros(6), scores, n_sessions=n_sessions, eta=eta,
                                               aggregate=False, random_state=seed)
    relevance = (np.exp2(y) - 1) / 7.0
    shown = np.argsort(-scores, kind="stable")
    return clicks, position, relevance[shown], scores[shown]


@pytest.mark.parametrize("objective, gain", [
    (QueryRMSE(), "linear"),
    # mu = 0: StochasticRank's relevance shift -sigma mu r makes the smoothed
    # metric nonlinear in the labels; without it DCG is linear in the gains.
    (StochasticRank("dcg", gain="linear", mu=0.0, random_state=0), "linear"),
    (StochasticRank("dcg", gain="exp", mu=0.0, random_state=0), "exp"),
])
def test_ipw_expected_gradient_is_the_unbiased_gradient(objective, gain):
    # Per session the IPW gradient and the gradient on the true relevance
    # (the same random draws: same query keys and seed); their mean difference
    # must vanish within 4.5 standard errors, while the naive one (clicks as
    # labels) must not: the test can fail.
    n = 4000
    clicks, position, relevance, raw_shown = _mc_sessions(n, 1.0, seed=3)
    ptr = np.arange(0, clicks.shape[0] + 1, 6, dtype=np.int64)
    raw = np.tile(raw_shown, n)
    theta = pbm_propensities(6, 1.0)[position - 1]
    true_labels = ipw_labels(np.tile(relevance, n), np.ones(clicks.shape[0]), gain)
    g_true, _ = objective.gradient_hessian(true_labels, raw, group_ptr=ptr, seed=11)
    g_ipw, _ = objective.gradient_hessian(ipw_labels(clicks, theta, gain), raw, group_ptr=ptr, seed=11)
    g_naive, _ = objective.gradient_hessian(clicks, raw, group_ptr=ptr, seed=11)
    for g, unbiased in ((g_ipw, True), (g_naive, False)):
        diff = (g - g_true).reshape(n, 6)
        z = np.abs(diff.mean(axis=0)) / (diff.std(axis=0, ddof=1) / np.sqrt(n) + 1e-15)
        assert (z.max() < 4.5) == unbiased, z


def test_ipw_labels_keep_position_one_clicks():
    assert ipw_labels(np.array([1.0, 0.0]), np.ones(2), "exp").tolist() == [1.0, 0.0]
    assert ipw_labels(np.array([1.0]), np.array([0.25]), "exp").tolist() == [np.log2(5.0)]
    assert ipw_labels(np.array([2.0]), np.array([0.25]), "linear").tolist() == [8.0]


# -- debiasing off is today's training ---------------------------------------
#: sha256 prefixes of the predictions of the fit below before click support: at
#: commit 404e2af for XGBoost and LightGBM; for the numba engine since an empty
#: child's sums are exactly 0 (predictions within 4e-16 of the ones before:
#: cee1e12434b56b6c, c1ac4d7481a4b9ff and c643d76bbecbca08, recorded when its split
#: noise went on the scale of the split score, sqrt(sum(g^2) / sum(h)); before that,
#: 6283716644bffbe5, fc63e57bea9e3935 and 902534979493b0aa, recorded at d5ea495,
#: whose split noise ranks only the splits that gain; before that,
#: 92e45dda5535003b, 8a535ea48108df70 and 0cfcbca1a0d8b80e, unchanged by click
#: support; LambdaMART's since its normalisation uses log1p, within 4e-16 of
#: 9e406d0f50953335 before), with numba 0.68.1, xgboost 3.2.0, lightgbm 4.7.0.
_TODAY = {
    ("numba", "LambdaMARTRanker"): "7ed9dbfc67780640", ("numba", "XENDCGRanker"): "1b9b531d0e567c69",
    ("numba", "YetiRanker"): "6626584d855cec84", ("xgboost", "LambdaMARTRanker"): "e99fe729f878f165",
    ("xgboost", "XENDCGRanker"): "64c1d8fc142b8bb3", ("xgboost", "YetiRanker"): "8729c3480868314e",
    ("lightgbm", "LambdaMARTRanker"): "b5a9285fee8d5ffb", ("lightgbm", "XENDCGRanker"): "e17b56017bcc9324",
    ("lightgbm", "YetiRanker"): "4af2a6e9fb2305c3",
}
_ENGINES = {"numba": "0.68.1", "xgboost": "3.2.0", "lightgbm": "4.7.0"}


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
@pytest.mark.parametrize("cls", [LambdaMARTRanker, XENDCGRanker, YetiRanker])
def test_debiasing_off_is_bit_for_bit_today(backend, cls):
    import importlib

    version = importlib.import_module(backend).__version__
    if version != _ENGINES[backend]:
        pytest.skip(f"fingerprints recorded with {backend} {_ENGINES[backend]}, found {version}")
    X, y, qid = make_ranking(40, n_features=6, max_docs=15, random_state=5)
    r = cls(n_estimators=8, learning_rate=0.1, n_jobs=1, random_state=3, backend=backend).fit(X, y, qid=qid)
    digest = hashlib.sha256(np.ascontiguousarray(r.predict(X), dtype=np.float64).tobytes()).hexdigest()[:16]
    assert digest == _TODAY[(backend, cls.__name__)]
    assert r.position_bias_ is None


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_unit_propensities_train_exactly_as_without_positions(backend):
    # 0/1 clicks at propensity 1 keep their labels, so the model is the same bit for bit.
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=200)
    params = dict(n_estimators=5, n_jobs=1, random_state=0, backend=backend)
    plain = LambdaMARTRanker(**params).fit(Xc, clicks, qid=sid)
    unit = LambdaMARTRanker(position_bias="known", propensities=np.ones(8), **params)
    unit.fit(Xc, clicks, qid=sid, position=position)
    assert np.array_equal(plain.predict(Xc), unit.predict(Xc))


@pytest.mark.parametrize("cls", [QueryRMSERanker, XENDCGRanker, StochasticRankRanker])
def test_known_propensities_count_relative_to_position_one(cls):
    """Propensities equal up to a factor are the same propensities: the model and
    position_bias_ (theta_1 = 1) do not change when they are all halved."""
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=300)
    params = dict(n_estimators=5, n_jobs=1, random_state=0, position_bias="known")
    one = cls(**params, propensities=lambda k: 1.0 / k).fit(Xc, clicks, qid=sid, position=position)
    half = cls(**params, propensities=0.5 / np.arange(1, 9)).fit(Xc, clicks, qid=sid, position=position)
    np.testing.assert_allclose(half.position_bias_, 1.0 / np.arange(1, 9), rtol=1e-15)
    np.testing.assert_array_equal(half.position_bias_, one.position_bias_)
    np.testing.assert_array_equal(half.predict(Xc), one.predict(Xc))
    assert half.score(Xc, clicks, qid=sid, position=position) == one.score(Xc, clicks, qid=sid, position=position)


# -- every objective, every backend ------------------------------------------
_RANKERS = [
    LambdaMARTRanker(), YetiRanker(n_permutations=2), StochasticRankRanker(), XENDCGRanker(), QueryRMSERanker(),
    Ranker(),
]


@pytest.mark.parametrize("ranker", _RANKERS, ids=lambda r: type(r).__name__)
def test_every_objective_learns_from_clicks(ranker):
    (X, y, qid), (Xc, clicks, sid, position) = _click_data(n_queries=80, n_sessions=4000, eta=1.5, top_k=10)
    Xt, yt, qt = make_ranking(60, n_features=6, max_docs=20, random_state=9)
    params = dict(n_estimators=30, n_jobs=1, random_state=0)
    debiased = ranker.set_params(position_bias="known", propensities=lambda k: (1.0 / k) ** 1.5, **params)
    debiased.fit(Xc, clicks, qid=sid, position=position)
    assert np.allclose(debiased.position_bias_, pbm_propensities(10, 1.5))
    assert np.isfinite(ndcg_score(yt, debiased.predict(Xt), qid=qt, k=10))
    # score on click data uses the debiased labels; on graded labels the usual metric.
    assert debiased.score(Xc, clicks, qid=sid, position=position) != debiased.score(Xc, clicks, qid=sid)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_ipw_beats_naive_on_every_backend(backend):
    # Paired over 3 random states: IPW with the true propensities must rank
    # the held-out queries' true labels better than clicks used as labels.
    (X, y, qid), (Xc, clicks, qc, position) = _click_data(
        n_queries=150, n_sessions=100_000, eta=2.0, aggregate=True, top_k=None, seed=4)
    Xt, yt, qt = make_ranking(150, n_features=6, max_docs=20, random_state=8)
    gains = []
    for seed in range(3):
        params = dict(n_estimators=40, n_jobs=1, random_state=seed, backend=backend, gain="linear")
        naive = LambdaMARTRanker(**params).fit(Xc, clicks, qid=qc)
        ipw = LambdaMARTRanker(position_bias="known", propensities=lambda k: (1.0 / k) ** 2, **params)
        ipw.fit(Xc, clicks, qid=qc, position=position)
        gains.append(ndcg_score(yt, ipw.predict(Xt), qid=qt, k=10) - ndcg_score(yt, naive.predict(Xt), qid=qt, k=10))
    assert min(gains) > 0, gains


# -- estimation ----------------------------------------------------------------
def test_pair_click_losses_matches_reference():
    rng = np.random.default_rng(0)
    sizes = [1, 4, 6, 3, 5]
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    clicks = rng.integers(0, 3, size=ptr[-1]).astype(float)
    clicks[ptr[1]:ptr[2]] = 0.0  # an all-zero query
    raw = rng.integers(0, 3, size=ptr[-1]) * 0.5  # ties
    position = np.concatenate([rng.permutation(s) + 1 for s in sizes]).astype(np.int64)
    t_plus, t_minus = rng.uniform(0.2, 1, 6), rng.uniform(0.2, 1, 6)
    plus, minus = np.empty(ptr[-1]), np.empty(ptr[-1])
    discounts = model_rank_discounts(raw, ptr, clicks, position)
    pair_click_losses(clicks, raw, position, ptr, t_plus, t_minus, plus, minus, discounts)
    want_plus, want_minus = ref.pair_click_losses(clicks, raw, position, ptr, t_plus, t_minus)
    assert np.allclose(plus, want_plus, rtol=1e-12) and np.allclose(minus, want_minus, rtol=1e-12)
    assert np.allclose(model_rank_discounts(raw, ptr, clicks, position),
                       ref.model_rank_discounts(raw, ptr, clicks, position), rtol=1e-15)


def test_regression_em_recovers_propensities():
    # Relevance a logistic function of the score the EM sees, lists shown in a
    # random order (each document at many ranks): the PBM is identified and EM
    # must recover (1/k)^eta within 10%.
    rng = np.random.default_rng(0)
    n_sessions, n_docs = 20_000, 8
    score = rng.normal(size=(n_sessions, n_docs))
    relevance = 1.0 / (1.0 + np.exp(-(2.0 * score - 1.0)))
    position = np.argsort(rng.random((n_sessions, n_docs)), axis=1) + 1
    truth = pbm_propensities(n_docs, 1.0)
    clicks = (rng.random((n_sessions, n_docs)) < truth[position - 1] * relevance).astype(float)
    em = RegressionEM(clicks.ravel(), position.ravel().astype(np.int64))
    for _ in range(30):
        theta, _ = em.update(score.ravel())
    assert np.max(np.abs(theta / truth - 1)) < 0.10, theta


def test_regression_em_positions_never_shown_take_the_value_above():
    """A rank no training row was shown at (a gap) has no evidence: EM gave it
    theta 1e-6, so a click there in an eval set or score got a million-fold
    gain; it takes the value of the position above, as the pairwise estimate."""
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=3000, eta=1.0)
    keep = position != 5
    em = RegressionEM(clicks[keep], position[keep].astype(np.int64))
    theta, _ = em.update(np.random.default_rng(0).normal(size=keep.sum()))
    assert theta.shape == (8,) and theta[4] == theta[3] and theta[3] < 1.0
    r = LambdaMARTRanker(n_estimators=5, n_jobs=1, random_state=0, position_bias="estimate", eval_metric="dcg@10")
    r.fit(Xc[keep], clicks[keep], qid=sid[keep], position=position[keep])
    assert r.position_bias_[4] == r.position_bias_[3] > 0.1
    # Scored with the rows at the gap: the gains stay on the scale of the others'.
    assert r.score(Xc, clicks, qid=sid, position=position) < 2 * r.score(Xc[keep], clicks[keep], qid=sid[keep],
                                                                          position=position[keep])


@pytest.mark.parametrize("estimator", ["em", "pairwise"])
def test_estimate_needs_rows_shown_at_position_one(estimator):
    """Estimated propensities are relative to position 1: without a row shown
    there both estimators returned 1 everywhere (no debiasing), silently."""
    with pytest.raises(ValueError, match=r"no training row was shown at position 1 \(the shallowest here is 3\)"):
        _fit([3, 4, 5, 3, 4, 5], position_bias="estimate", propensity_estimator=estimator)
    # A query whose list starts below 1 is fine when another one starts at 1.
    _fit([1, 2, 3, 3, 4, 5], position_bias="estimate", propensity_estimator=estimator)
    # Rows at position 1 of sample_weight 0 are no evidence either (EM returned 1 everywhere).
    X = np.random.default_rng(0).normal(size=(6, 2))
    ranker = QueryRMSERanker(n_estimators=2, position_bias="estimate", propensity_estimator=estimator)
    with pytest.raises(ValueError, match=r"no training row of positive sample_weight was shown at position 1"):
        ranker.fit(X, [1.0, 0, 0, 0, 1, 0], qid=[0, 0, 0, 1, 1, 1], position=[1, 2, 3, 1, 2, 3],
                   sample_weight=[0, 1, 1, 0, 1, 1])


@pytest.mark.parametrize("metric", ["mrr", "map@5"])
def test_clicks_do_not_train_a_metric_that_reads_only_relevant_or_not(metric):
    """Debiased clicks are graded (clicks / propensity); MRR and MAP read a label only as relevant
    or not, so the debiasing changed nothing: the model of the raw clicks, without a word."""
    X, y, qid = make_ranking(30, n_features=4, max_docs=10, random_state=0)
    Xc, clicks, sid, position = simulate_clicks(X, y, qid, X[:, 0], n_sessions=100, top_k=6, aggregate=False,
                                                random_state=0)
    for ranker in (LambdaMARTRanker(metric=metric, position_bias="known", propensities=lambda k: 1.0 / k),
                   YetiRanker(metric=metric, position_bias="estimate"),
                   StochasticRankRanker(metric=metric, position_bias="estimate")):
        with pytest.raises(ValueError, match=r"reads a label only as relevant or not, so position_bias="):
            ranker.set_params(n_estimators=2, n_jobs=1).fit(Xc, clicks, qid=sid, position=position)
    # Watched, not trained on: allowed (a graded-label eval set, say).
    LambdaMARTRanker(n_estimators=2, n_jobs=1, position_bias="known", propensities=lambda k: 1.0 / k,
                     eval_metric=["ndcg@10", metric]).fit(Xc, clicks, qid=sid, position=position)


def test_a_randomised_logger_lets_the_ranker_recover_the_propensities():
    # One fixed logging ranking confounds position with relevance; eight
    # Plackett-Luce rankings per query show each document at several ranks and
    # position_bias="estimate" recovers (1/k)^eta within 10%.
    X, y, qid = make_ranking(300, n_features=8, max_docs=12, random_state=0)
    logger = X @ np.random.default_rng(0).normal(size=X.shape[1])
    errors = {}
    for K in (1, 8):
        Xc, c, qc, pos, imp = simulate_clicks(X, y, qid, logger, n_sessions=200_000, n_rankings=K, ranking_noise=2.0,
                                              return_impressions=True, random_state=0)
        keep = imp > 0
        r = LambdaMARTRanker(gain="linear", n_estimators=60, n_jobs=1, random_state=0, position_bias="estimate")
        r.fit(Xc[keep], c[keep] / imp[keep], qid=qc[keep], position=pos[keep], sample_weight=imp[keep])
        truth = pbm_propensities(r.position_bias_.shape[0], 1.0)
        errors[K] = np.max(np.abs(r.position_bias_[:10] / truth[:10] - 1))
    assert errors[8] < 0.10 and errors[1] > 2 * errors[8], errors


@pytest.mark.parametrize("estimator", ["em", "pairwise"])
def test_estimated_propensities_fall_with_the_rank(estimator):
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=3000, eta=1.0)
    r = LambdaMARTRanker(n_estimators=20, n_jobs=1, random_state=0, position_bias="estimate",
                         propensity_estimator=estimator).fit(Xc, clicks, qid=sid, position=position)
    theta = r.position_bias_
    assert theta[0] == 1.0 and theta.shape == (8,)
    assert theta[-1] < 0.7 * theta[0]


@pytest.mark.parametrize("ranker", _RANKERS, ids=lambda r: type(r).__name__)
def test_click_metrics_sum_the_ipw_gains(ranker):
    """score(position=) and the training curve are NDCG@10 of the gains
    clicks / theta, whichever form the objective's labels take (log2(1 + c /
    theta) for exp-gain objectives, c / theta for QueryRMSE); a graded eval
    set in the same fit keeps the exp gain."""
    from rankkit.metrics import ndcg_score

    (X, y, qid), (Xc, clicks, sid, position) = _click_data(n_sessions=600)
    theta = lambda k: 1.0 / k  # noqa: E731
    # The first eval set is the training data itself (LightGBM's rule: named "training").
    model = clone(ranker).set_params(n_estimators=4, n_jobs=1, random_state=0, position_bias="known",
                                     propensities=theta)
    model.fit(Xc, clicks, qid=sid, position=position, eval_set=[(Xc, clicks), (X, y)], eval_qid=[sid, qid],
              eval_position=[position, None])
    gains = clicks / theta(position)
    want = ndcg_score(gains, model.predict(Xc), qid=sid, k=10, gain="linear")
    assert model.score(Xc, clicks, qid=sid, position=position) == pytest.approx(want, rel=1e-9)
    assert model.evals_result_["training"]["ndcg@10"][-1] == pytest.approx(want, rel=1e-9)
    graded = ndcg_score(y, model.predict(X), qid=qid, k=10)
    assert model.evals_result_["validation_1"]["ndcg@10"][-1] == pytest.approx(graded, rel=1e-9)


def test_stochasticrank_gain_none_on_clicks_is_the_exp_form():
    """On click labels gain=None trains as gain="exp": the gains are clicks / theta in either form."""
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=600)
    params = dict(n_estimators=4, n_jobs=1, random_state=0, position_bias="known", propensities=lambda k: 1.0 / k)
    default = StochasticRankRanker(gain=None, **params).fit(Xc, clicks, qid=sid, position=position)
    exp = StochasticRankRanker(gain="exp", **params).fit(Xc, clicks, qid=sid, position=position)
    assert default.gain is None and default.objective_.gain == "exp"
    assert np.array_equal(default.predict(Xc), exp.predict(Xc))


def test_eval_set_with_positions_is_scored_on_debiased_labels():
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=600)
    df = pd.DataFrame(Xc, columns=[f"f{i}" for i in range(Xc.shape[1])]).assign(qid=sid, position=position)
    train, valid = df[df.qid < 400], df[df.qid >= 400]
    y_train, y_valid = clicks[df.qid < 400], clicks[df.qid >= 400]
    ranker = LambdaMARTRanker(n_estimators=5, n_jobs=1, random_state=0, position_bias="known",
                              propensities=lambda k: 1.0 / k, eval_metric="dcg@10")
    ranker.fit(train, y_train, eval_set=[(valid, y_valid)])
    recorded = ranker.evals_result_["validation_0"]["dcg@10"][-1]
    assert recorded == pytest.approx(ranker.score(valid, y_valid))  # the column: debiased
    assert recorded != pytest.approx(ranker.score(valid.drop(columns="position"), y_valid))


def test_err_on_clicks_keeps_the_training_scale():
    """ERR with Chapelle's mapping and err_max_label=None maps every set a
    click ranker scores by its largest debiased training label, as on graded
    labels (and as rankkit.dask does): each query's ERR does not depend on the
    queries scored with it. Estimated propensities move that scale every
    iteration: an error asking for err_max_label."""
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=400)
    kw = dict(n_estimators=4, n_jobs=1, random_state=0, metric="err", err_mapping="chapelle", eval_metric="err@5")
    ranker = LambdaMARTRanker(**kw, position_bias="known", propensities=lambda k: 1.0 / k)
    ranker.fit(Xc, clicks, qid=sid, position=position)
    assert ranker.objective_.err_max_label == pytest.approx(np.log2(1 + (clicks * position).max()))
    queries = np.unique(sid)
    part = np.isin(sid, queries[::2])

    def score(rows):
        return ranker.score(Xc[rows], clicks[rows], qid=sid[rows], position=position[rows])

    n_part = np.unique(sid[part]).size
    whole = (score(part) * n_part + score(~part) * (queries.size - n_part)) / queries.size
    assert score(np.ones_like(part)) == pytest.approx(whole, rel=1e-12)
    deeper = position.copy()
    deeper[clicks > 0] += 100  # debiased labels above the training ones
    with pytest.raises(ValueError, match=r"largest training debiased label .*err_max_label="):
        ranker.score(Xc, clicks, qid=sid, position=deeper)
    with pytest.raises(ValueError, match=r"position_bias='estimate'.*Pass err_max_label="):
        LambdaMARTRanker(**kw, position_bias="estimate").fit(Xc, clicks, qid=sid, position=position)
    LambdaMARTRanker(**kw, position_bias="estimate", err_max_label=20.0).fit(Xc, clicks, qid=sid, position=position)
    # The objective's metric as the user wrote it, in capitals, read by no eval metric: the same rules
    # (its name was compared without lower-casing: no pin, no error).
    capitals = dict(kw, metric="ERR", eval_metric="ndcg@10")
    ranker = LambdaMARTRanker(**capitals, position_bias="known", propensities=lambda k: 1.0 / k)
    assert ranker.fit(Xc, clicks, qid=sid, position=position).objective_.err_max_label == pytest.approx(
        np.log2(1 + (clicks * position).max()))
    with pytest.raises(ValueError, match=r"position_bias='estimate'.*Pass err_max_label="):
        LambdaMARTRanker(**capitals, position_bias="estimate").fit(Xc, clicks, qid=sid, position=position)
    # An eval set with a click deeper than the training ones: above the pinned scale, said in click terms.
    known = dict(kw, position_bias="known", propensities=lambda k: 1.0 / k)
    deeper = (Xc, clicks, sid, np.where(clicks > 0, position + 100, position))
    with pytest.raises(ValueError, match=r"largest training debiased click label.*but eval_set\[0\] has the debiased"):
        LambdaMARTRanker(**known).fit(Xc, clicks, qid=sid, position=position, eval_set=[deeper[:2]],
                                      eval_qid=[sid], eval_position=[deeper[3]])
    # No ERR read anywhere (NDCG trained and evaluated): err_mapping is read by nothing, an error.
    ndcg = dict(known, metric="ndcg", eval_metric="ndcg@5")
    with pytest.raises(ValueError, match=r"err_mapping='chapelle' is read by no metric here"):
        LambdaMARTRanker(**ndcg).fit(Xc, clicks, qid=sid, position=position, eval_set=[deeper[:2]],
                                     eval_qid=[sid], eval_position=[deeper[3]])


def test_click_models_save_and_load(tmp_path):
    import rankkit

    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=200)
    for params in (dict(position_bias="known", propensities=pbm_propensities(8, 1.0)),
                   dict(position_bias="estimate")):
        ranker = QueryRMSERanker(n_estimators=4, n_jobs=1, **params).fit(Xc, clicks, qid=sid, position=position)
        ranker.save_model(tmp_path / "m.rankkit")
        loaded = rankkit.load_model(tmp_path / "m.rankkit")
        assert np.array_equal(loaded.predict(Xc), ranker.predict(Xc))
        assert np.array_equal(loaded.position_bias_, ranker.position_bias_)
        assert loaded.score(Xc, clicks, qid=sid, position=position) == ranker.score(Xc, clicks, qid=sid,
                                                                                    position=position)
    callable_propensities = QueryRMSERanker(n_estimators=2, position_bias="known", propensities=lambda k: 1.0 / k)
    callable_propensities.fit(Xc, clicks, qid=sid, position=position)
    with pytest.raises(TypeError, match="propensities"):
        callable_propensities.save_model(tmp_path / "c.rankkit")


def test_pairwise_positions_without_pairs_take_the_value_above():
    """Positions 3 and 5 are never shown and 6 is never clicked: no evidence
    for t+ there, so each takes its upper neighbour's value (they kept 1,
    position 1's, which scored a click there as if it were not biased at
    all). The others are the per-position loss ratios."""
    rng = np.random.default_rng(0)
    group_ptr = np.arange(0, 41, 4, dtype=np.int64)  # 10 queries of 4 documents ...
    position = np.tile(np.array([1, 2, 4, 6]), 10).astype(np.int64)  # ... shown at positions 1, 2, 4, 6
    clicks = np.zeros(40)
    clicks[position == 1] = 1.0
    clicks[rng.choice(np.flatnonzero(position == 2), 4, replace=False)] = 1.0
    clicks[rng.choice(np.flatnonzero(position == 4), 2, replace=False)] = 1.0
    raw = rng.normal(size=40)
    n = 6
    t_plus, t_minus = pairwise_propensities(clicks, raw, position, group_ptr, np.ones(n), np.ones(n), 0.0,
                                            np.empty((2, 40)))
    work = np.empty((2, 40))
    pair_click_losses(clicks, raw, position, group_ptr, np.ones(n), np.ones(n), work[0], work[1],
                      model_rank_discounts(raw, group_ptr, clicks, position))
    sums = np.bincount(position - 1, weights=work[0], minlength=n)  # t+ (norm 0: the plain ratios)
    observed = np.flatnonzero(sums > 0)
    np.testing.assert_array_equal(observed, [0, 1, 3])
    np.testing.assert_allclose(t_plus[observed], sums[observed] / sums[0], rtol=1e-12)
    assert t_plus[2] == t_plus[1] < 1.0 and t_plus[4] == t_plus[5] == t_plus[3] < 1.0
    # Every first position was clicked: t- has no reference position, and stays as it was.
    np.testing.assert_array_equal(t_minus, np.ones(n))


def test_pairwise_estimate_ignores_row_order_and_counts_query_weights():
    """Tied scores (every one at the first iteration) are ranked by the worst
    rule and the shown position, not by row order; a query of weight 2 counts
    its pairs twice, as two copies of it."""
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=400)
    kw = dict(n_estimators=3, n_jobs=1, random_state=0, position_bias="estimate", propensity_estimator="pairwise")
    ranker = QueryRMSERanker(**kw).fit(Xc, clicks, qid=sid, position=position)
    bottom_up = np.lexsort((-position, sid))
    reordered = QueryRMSERanker(**kw).fit(Xc[bottom_up], clicks[bottom_up], qid=sid[bottom_up],
                                          position=position[bottom_up])
    np.testing.assert_allclose(reordered.position_bias_, ranker.position_bias_, rtol=1e-12)
    np.testing.assert_allclose(reordered.predict(Xc), ranker.predict(Xc), rtol=0, atol=1e-12)
    kw.update(n_estimators=1, learning_rate=1e-9)  # the estimate at the first iteration's scores
    even = sid % 2 == 0
    weighted = QueryRMSERanker(**kw).fit(Xc, clicks, qid=sid, position=position,
                                         sample_weight=np.where(even, 2.0, 1.0))
    twice = np.concatenate([np.arange(sid.size), np.flatnonzero(even)])
    copies = np.concatenate([sid, sid[even] + sid.max() + 1])
    duplicated = QueryRMSERanker(**kw).fit(Xc[twice], clicks[twice], qid=copies, position=position[twice])
    np.testing.assert_allclose(weighted.position_bias_, duplicated.position_bias_, rtol=1e-12)
    unweighted = QueryRMSERanker(**kw).fit(Xc, clicks, qid=sid, position=position)
    assert not np.allclose(unweighted.position_bias_, weighted.position_bias_, rtol=1e-6)


def test_pairwise_estimate_does_not_depend_on_the_thread_count():
    import numba

    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=400)
    models = []
    for threads in (1, 2):
        previous = numba.get_num_threads()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            models.append(LambdaMARTRanker(n_estimators=5, n_jobs=threads, random_state=0, position_bias="estimate",
                                           propensity_estimator="pairwise").fit(Xc, clicks, qid=sid, position=position))
        finally:
            numba.set_num_threads(previous)
    assert np.array_equal(models[0].position_bias_, models[1].position_bias_)
    assert np.array_equal(models[0].predict(Xc), models[1].predict(Xc))


# -- eval sets with positions -------------------------------------------------
def _click_split(n_sessions=600):
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=n_sessions)
    df = pd.DataFrame(Xc, columns=[f"f{i}" for i in range(Xc.shape[1])]).assign(qid=sid, position=position)
    train, valid = (df.qid < 400).to_numpy(), (df.qid >= 400).to_numpy()
    return df[train], clicks[train], df[valid], clicks[valid]


@pytest.mark.parametrize("params", [dict(position_bias="known", propensities=lambda k: 1.0 / k),
                                    dict(position_bias="estimate"),
                                    dict(position_bias="estimate", propensity_estimator="pairwise")])
def test_eval_position_is_the_position_column(params):
    """eval_position=[p] scores a click eval set on its debiased labels,
    exactly as the DataFrame column does, and as score(..., position=p)
    at the end (the propensities of the last iteration)."""
    train, y_train, valid, y_valid = _click_split()
    kw = dict(n_estimators=6, n_jobs=1, random_state=0, eval_metric="dcg@10", **params)
    by_column = LambdaMARTRanker(**kw).fit(train, y_train, eval_set=[(valid, y_valid)])
    X_valid, p_valid = valid.drop(columns=["position", "qid"]), valid["position"].to_numpy()
    by_argument = LambdaMARTRanker(**kw).fit(train, y_train, eval_set=[(X_valid, y_valid)],
                                             eval_qid=[valid["qid"].to_numpy()], eval_position=[p_valid])
    recorded = by_argument.evals_result_["validation_0"]["dcg@10"]
    assert recorded == by_column.evals_result_["validation_0"]["dcg@10"]
    assert recorded[-1] == pytest.approx(by_argument.score(X_valid, y_valid, qid=valid["qid"], position=p_valid),
                                         rel=1e-12)
    graded = LambdaMARTRanker(**kw).fit(train, y_train, eval_set=[(X_valid, y_valid)],
                                        eval_qid=[valid["qid"].to_numpy()])
    assert graded.evals_result_["validation_0"]["dcg@10"] != recorded  # the clicks as they are


def test_early_stopping_on_a_click_eval_set():
    """Known propensities: the eval set's debiased labels are fixed, and the
    best iteration is the curve's maximum. Estimated ones: the labels change
    with every iteration's estimate, so each value of the curve is on its own
    labels; the best iteration's model is scored again on each iteration's
    labels before the comparison, and best_score_ is what score() gives the
    kept model (at position_bias_). Before, the first iterations' values,
    on the first estimate's labels, won: the fit stopped at iteration 3
    with best_score_ 0.81 where score() gave 0.62."""
    train, y_train, valid, y_valid = _click_split()
    X_valid, p_valid = valid.drop(columns="position"), valid["position"].to_numpy()
    kw = dict(n_estimators=60, n_jobs=1, random_state=0, learning_rate=0.5, eval_metric="dcg@10",
              early_stopping_rounds=3)
    for params in (dict(position_bias="known", propensities=lambda k: 1.0 / k), dict(position_bias="estimate")):
        ranker = LambdaMARTRanker(**kw, **params)
        ranker.fit(train, y_train, eval_set=[(train, y_train), (X_valid, y_valid)], eval_position=[None, p_valid])
        curve = ranker.evals_result_["validation_1"]["dcg@10"]  # drives early stopping, on debiased labels
        assert len(curve) < 60 and len(ranker.evals_result_["training"]["dcg@10"]) == len(curve)
        assert ranker.best_score_ == pytest.approx(ranker.score(X_valid, y_valid, position=p_valid), rel=1e-12)
        if params["position_bias"] == "known":
            assert ranker.best_iteration_ == int(np.argmax(curve)) and ranker.best_score_ == max(curve)


@pytest.mark.parametrize("ranker", [Ranker, StochasticRankRanker, YetiRanker, LambdaMARTRanker, XENDCGRanker,
                                    QueryRMSERanker])
def test_every_ranker_takes_eval_position(ranker):
    train, y_train, valid, y_valid = _click_split()
    params = dict(objective=QueryRMSE()) if ranker is Ranker else {}
    model = ranker(n_estimators=2, n_jobs=1, position_bias="known", propensities=lambda k: 1.0 / k, **params)
    model.fit(train, y_train, eval_set=[(valid.drop(columns="position"), y_valid)],
              eval_position=[valid["position"]])
    assert len(model.evals_result_["validation_0"]["ndcg@10"]) == 2


def test_bad_eval_positions_are_clear_errors():
    train, y_train, valid, y_valid = _click_split()
    X_valid, p_valid = valid.drop(columns="position"), valid["position"].to_numpy()
    known = LambdaMARTRanker(n_estimators=2, n_jobs=1, position_bias="known", propensities=lambda k: 1.0 / k)
    cases = [
        (dict(eval_position=[p_valid]), "eval_position was given without eval_set"),
        (dict(eval_set=[(X_valid, y_valid)], eval_position=[p_valid, p_valid]),
         "eval_position has 2 entries but eval_set has 1"),
        (dict(eval_set=[(X_valid, y_valid)], eval_position=p_valid), "eval_position must be a list"),
        (dict(eval_set=[(X_valid, y_valid)], eval_position=[p_valid[:-1]]),
         r"eval_position\[0\] must hold one position per row"),
        (dict(eval_set=[(X_valid, y_valid)], eval_position=[np.zeros_like(p_valid)]),
         r"eval_position\[0\] must be 1-based"),
        (dict(eval_set=[(valid, y_valid)], eval_position=[p_valid]), r"eval_position\[0\]= was passed"),
    ]
    for fit_kw, message in cases:
        with pytest.raises(ValueError, match=message):
            known.fit(train, y_train, **fit_kw)
    with pytest.raises(ValueError, match=r"eval_position\[0\]= was given but position_bias=None"):
        LambdaMARTRanker(n_estimators=2).fit(train.drop(columns="position"), y_train,
                                             eval_set=[(X_valid, y_valid)], eval_position=[p_valid])


# -- estimators on parts of the rows (rankkit.dask's workers) -----------------
class _Allreduce:
    """An in-process all-reduction over ``n`` threads (each a part of the
    rows), as XGBoost's collective does over Dask workers."""

    def __init__(self, n):
        import threading

        self.barrier = threading.Barrier(n, timeout=60)
        self.slots = [None] * n
        self.result = None

    def total(self, part):
        def total(values):
            self.slots[part] = np.asarray(values, dtype=np.float64)
            if self.barrier.wait() == 0:
                self.result = np.sum(self.slots, axis=0)
            self.barrier.wait()
            out = self.result.copy()
            self.barrier.wait()
            return list(out)

        return total


@pytest.mark.parametrize("estimator", ["em", "pairwise"])
def test_estimators_on_parts_equal_the_whole(estimator, monkeypatch):
    """Each part (whole queries; one part empty) estimates with its sums
    all-reduced: every part holds the propensities of all the rows, equal to
    the estimate on all of them up to float summation order."""
    import threading

    from rankkit import _click_kernels
    from rankkit._clicks import PairwiseEstimator

    # One parallel kernel launch at a time: numba's workqueue layer refuses concurrent ones.
    lock, kernel = threading.Lock(), _click_kernels.pair_click_losses

    def serialised(*args):
        with lock:
            return kernel(*args)

    monkeypatch.setattr(_click_kernels, "pair_click_losses", serialised)

    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=800)
    order = np.argsort(sid, kind="stable")
    clicks, sid, position = clicks[order], sid[order], position[order].astype(np.int64)
    ptr = np.concatenate([[0], np.flatnonzero(np.diff(sid)) + 1, [sid.size]])
    rng = np.random.default_rng(0)
    scores = [rng.normal(size=sid.size) for _ in range(4)]
    n_positions = int(position.max())

    def make(lo, hi, total):
        local_ptr = ptr[(ptr >= lo) & (ptr <= hi)] - lo
        c, p = clicks[lo:hi], position[lo:hi]
        if estimator == "em":
            return RegressionEM(c, p, group_ptr=local_ptr, n_positions=n_positions, total=total)
        return PairwiseEstimator(c, p, local_ptr, 1.0, n_positions=n_positions, total=total)

    whole = make(0, sid.size, None)
    expected = [whole.update(raw)[0] for raw in scores]
    cut = int(ptr[ptr.size // 3])
    bounds = [(0, cut), (cut, sid.size), (sid.size, sid.size)]  # the last part holds no rows
    reduce = _Allreduce(len(bounds))
    results = [None] * len(bounds)

    def run(i):
        lo, hi = bounds[i]
        part = make(lo, hi, reduce.total(i))
        results[i] = [part.update(raw[lo:hi])[0] for raw in scores]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bounds))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results:
        for got, want in zip(result, expected):
            np.testing.assert_allclose(got, want, rtol=1e-11, atol=0)
    assert not np.allclose(expected[-1], 1.0)


@pytest.mark.parametrize("estimator", ["em", "pairwise"])
@pytest.mark.parametrize("weighted", [False, True])
def test_auto_diffusion_temperature_measures_the_first_iteration(monkeypatch, estimator, weighted):
    """diffusion_temperature="auto" is set by the first iteration's gradients,
    which under position_bias="estimate" train on the first estimate's
    labels (and, with the pairwise estimator, its 1 / t- weights, while the
    query units keep the count of the weights before it). It was measured on
    the clicks debiased by the initial guess: 1.2x off with "pairwise"."""
    from rankkit import _training
    from rankkit._sglb import auto_diffusion_temperature

    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=400, eta=2.0)
    weight = np.random.default_rng(1).uniform(0.5, 2.0, size=clicks.shape[0]) if weighted else None
    first = {}
    plain = _training.gradient_function

    def recording(objective, train, seed_base, noise_scale=0.0, total=None, **kwargs):
        if not noise_scale:  # the measurement itself
            return plain(objective, train, seed_base, noise_scale, total, **kwargs)
        noiseless = plain(objective, train, seed_base, 0.0, total, **kwargs)

        def grad_fn(raw, t):
            grad, hess = noiseless(raw, t)
            first.setdefault("grad", grad[train.weight != 0] if train.weight is not None else grad.copy())
            return grad, hess
        return grad_fn

    monkeypatch.setattr(_training, "gradient_function", recording)
    model = LambdaMARTRanker(n_estimators=1, langevin=True, learning_rate=0.1, random_state=0,
                             position_bias="estimate", propensity_estimator=estimator)
    model.fit(Xc, clicks, qid=sid, position=position, sample_weight=weight)
    assert model.diffusion_temperature_ == pytest.approx(auto_diffusion_temperature(first["grad"], 0.1), rel=1e-12)


def test_a_ranking_scorer_refuses_click_positions():
    """Routed to the ranker alone, positions left the scorer to score a fold's
    clicks as grades, silently unlike scoring=None (the ranker's score)."""
    import sklearn
    from sklearn.exceptions import UnsetMetadataPassedError
    from sklearn.model_selection import cross_validate

    from rankkit.metrics import make_ranking_scorer
    from rankkit.model_selection import QueryKFold

    X, y, qid = make_ranking(40, n_features=5, max_docs=15, random_state=0)
    X_log, clicks, sessions, position = simulate_clicks(X, y, qid, X[:, 0], n_sessions=300, top_k=10,
                                                        aggregate=False, random_state=0)
    ranker = LambdaMARTRanker(n_estimators=3, n_jobs=1, random_state=0, position_bias="known",
                              propensities=lambda k: 1.0 / k)
    scorer = make_ranking_scorer("ndcg@10")
    with sklearn.config_context(enable_metadata_routing=True):
        scores = cross_validate(ranker, X_log, clicks, cv=QueryKFold(3), params={"qid": sessions, "position": position})
        assert np.all(np.isfinite(scores["test_score"]))
        # Routed to the ranker, positions reach a scorer that does not request them: an error before any fit.
        with pytest.raises(UnsetMetadataPassedError, match="position"):
            cross_validate(ranker, X_log, clicks, cv=QueryKFold(3), params={"qid": sessions, "position": position},
                           scoring=scorer)
        # Requested, they are refused with the way out.
        with pytest.raises(ValueError, match=r"scores y as relevance grades and got the positions of click labels "
                                             r"\(position=\).*scoring=None"):
            cross_validate(ranker, X_log, clicks, cv=QueryKFold(3), params={"qid": sessions, "position": position},
                           scoring=make_ranking_scorer("ndcg@10").set_score_request(position=True),
                           error_score="raise")
    frame = pd.DataFrame(X_log).assign(qid=sessions, position=position)
    fitted = clone(ranker).fit(frame, clicks)
    with pytest.raises(ValueError, match=r"got the positions of click labels \(the column 'position'\)"):
        scorer(fitted, frame, clicks)
    # Relevance labels without positions: the scorer's own job, for a ranker trained on clicks too.
    assert scorer(fitted, pd.DataFrame(X).assign(qid=qid), y) == pytest.approx(
        ndcg_score(y, fitted.predict(pd.DataFrame(X)), qid=qid, k=10))


def test_the_gain_makes_the_click_labels_whatever_the_metric():
    """On clicks the gain builds every debiased label (clicks / propensity, or
    log2 of 1 plus it), so it is read whatever the metric: ExpDCG and
    YetiRank's classic weights train on other labels with gain='linear', and
    a ranker must not refuse it as a setting no metric reads."""
    (_, _, _), (Xc, clicks, sid, position) = _click_data(n_sessions=200)
    known = dict(n_estimators=5, n_jobs=1, eval_metric=["expdcg@10"], position_bias="known",
                 propensities=lambda k: 1.0 / k)
    for make in (lambda **kw: LambdaMARTRanker(metric="expdcg", **kw), lambda **kw: YetiRanker(**kw)):
        models = [make(**known, gain=gain).fit(Xc, clicks, qid=sid, position=position) for gain in ("exp", "linear")]
        assert not np.array_equal(models[0].predict(Xc), models[1].predict(Xc))
    # Without clicks the same settings are read by no metric: refused.
    graded = {k: v for k, v in known.items() if k not in ("position_bias", "propensities")}
    with pytest.raises(ValueError, match=r"gain='linear' is read by no metric here"):
        YetiRanker(**graded, gain="linear").fit(Xc, clicks, qid=sid)
