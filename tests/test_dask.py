"""rankkit.dask on a real two-process LocalCluster.

One cluster for the module (starting one costs seconds); the client is not
the default one, so that "no client" can be tested, and tests pass it.
"""

import inspect
import pickle

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import rankkit  # noqa: E402
from rankkit import _estimators  # noqa: E402
from rankkit._training import mean_metric  # noqa: E402
from rankkit._groups import make_groups  # noqa: E402
from rankkit.dask import (  # noqa: E402
    DASK_RANKERS,
    DaskLambdaMARTRanker,
    DaskRanker,
    DaskStochasticRankRanker,
    DaskYetiRanker,
)
from rankkit.datasets import make_ranking  # noqa: E402
from rankkit.metrics import ndcg_score  # noqa: E402
from rankkit.model_selection import query_train_test_split  # noqa: E402
from rankkit.objectives import YetiRank  # noqa: E402

SMALL = dict(n_estimators=40, max_depth=4, learning_rate=0.2, min_child_weight=1e-3, random_state=0, n_jobs=1,
             backend="xgboost")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster:
        with distributed.Client(cluster, set_as_default=False) as c:
            yield c


@pytest.fixture(scope="module")
def data():
    """Train and held-out queries; the training rows shuffled so that every
    query is spread over several of the 4 partitions."""
    X, y, qid = make_ranking(240, n_features=12, random_state=3)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    frame["qid"] = qid
    train, test, _, _ = query_train_test_split(np.arange(len(y)), qid=qid, test_size=0.25, random_state=0)
    train = np.random.default_rng(1).permutation(train)
    local = frame.iloc[train].reset_index(drop=True)
    return {
        "local": local, "y": y[train], "test": frame.iloc[test].reset_index(drop=True), "y_test": y[test],
        "X": dd.from_pandas(local, npartitions=4, sort=False),
        "dy": dd.from_pandas(pd.Series(y[train]), npartitions=4, sort=False),
    }


def test_fit_logs_no_shuffle_warnings(data):
    """distributed logs two WARNING lines per p2p shuffle on the scheduler
    (here in this process); laying out the rows by query is routine, so
    rankkit silences them, and restores the scheduler's logger after."""
    import logging

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("distributed.shuffle._scheduler_plugin")
    logger.addHandler(handler)
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      silence_logs=False) as cluster, \
                distributed.Client(cluster) as c:  # the default client: dask shuffles peer to peer
            before = logger.level
            DaskLambdaMARTRanker(n_estimators=2, client=c).fit(data["X"], data["dy"])
            assert logger.level == before
            # The control: the same shuffle outside rankkit does log them here.
            c.compute(data["X"].shuffle(on="qid"), sync=True)
    finally:
        logger.removeHandler(handler)
    levels = [r.levelno for r in records]
    assert levels and set(levels) == {logging.WARNING}, "the control shuffle logged nothing: the test proves nothing"
    fit_records = [r for r in records if "initialized" in r.getMessage()]
    assert len(fit_records) == 1  # the control's only


def held_out_ndcg(model, data):
    return ndcg_score(data["y_test"], model.predict(data["test"]), qid=data["test"]["qid"], k=10)


# -- the layout -------------------------------------------------------------------
def test_overlapping_fits_restore_the_shuffle_logger():
    """The scheduler's shuffle logger is quiet while any fit lays out rows and
    gets its level back when the last one is done, in whatever order
    overlapping fits finish (a level saved per fit: the second saved the
    first's ERROR and restored it)."""
    import logging

    from rankkit._dask_layout import _quiet_shuffle_logger

    logger = logging.getLogger("distributed.shuffle._scheduler_plugin")
    before = logger.level
    _quiet_shuffle_logger(True)
    _quiet_shuffle_logger(True)
    assert logger.level == logging.ERROR
    _quiet_shuffle_logger(False)  # the first fit is done, the second still shuffles
    assert logger.level == logging.ERROR
    _quiet_shuffle_logger(False)
    assert logger.level == before and not hasattr(logger, "rankkit_quiet")


def test_rows_of_a_query_spread_over_partitions_are_laid_out_whole(client, data):
    partitions = [p.compute() for p in data["X"].partitions]  # in memory: no cluster needed
    assert sum(len(set(a["qid"]) & set(b["qid"])) for i, a in enumerate(partitions)
               for b in partitions[i + 1:]) > 20  # the input cuts queries
    model = DaskLambdaMARTRanker(client=client)
    objective = model._make_objective()
    laid, _ = model._lay_out(client, data["X"], data["dy"], None, objective, training=True)
    parts = client.gather(client.compute(list(laid.frame.to_delayed())))
    seen = {}
    local = data["local"].assign(y=data["y"])
    for number, part in enumerate(parts):
        assert (part["_rankkit_part"] == number).all()
        places = part["_rankkit_local"].to_numpy()
        assert np.all(np.diff(places) >= 0)  # sorted by query: each query one block
        for q in np.unique(places):
            block = part[places == q]
            assert np.unique(block["_rankkit_key"]).size == 1
            key = int(block["_rankkit_key"].iloc[0])
            assert key not in seen  # each query in one partition only
            seen[key] = block
    groups = make_groups(local["qid"])
    assert len(seen) == groups.n_queries
    # Rows of a query in the caller's order, with their features and labels.
    for q, key in enumerate(groups.query_keys):
        rows = local.iloc[groups.order[groups.group_ptr[q]:groups.group_ptr[q + 1]]]
        block = seen[int(key)]
        np.testing.assert_array_equal(block[[f"f{j}" for j in range(12)]].to_numpy(),
                                      rows[[f"x{j}" for j in range(12)]].to_numpy())
        np.testing.assert_array_equal(block["_rankkit_y"].to_numpy(), rows["y"].to_numpy())
    # The summary's keys are the partitions' queries in order.
    assert [k.tolist() for k in laid.query_keys] == [
        [int(part.loc[part["_rankkit_local"] == q, "_rankkit_key"].iloc[0]) for q in np.unique(part["_rankkit_local"])]
        for part in parts]


# -- quality, equivalence, persistence ------------------------------------------
@pytest.mark.parametrize("dask_class, params", [
    (DaskLambdaMARTRanker, {}),
    (DaskStochasticRankRanker, dict(metric="ndcg@10", langevin=True, diffusion_temperature=1e5,
                                    model_shrink_rate=0.05)),
])
def test_quality_equals_the_in_memory_ranker(client, data, dask_class, params):
    """NDCG@10 on held-out queries within 0.01 of the in-memory ranker trained
    on the same rows (the Dask one had them shuffled over 4 partitions), on
    the mean over three random states: rankkit's bin edges on the cluster
    are not XGBoost's in-memory sketch, which alone moves one fit's held-out
    NDCG@10 by up to about 0.01 either way."""
    ours, theirs = [], []
    for seed in range(3):
        kw = {**SMALL, **params, "random_state": seed}
        model = dask_class(**kw, client=client).fit(data["X"], data["dy"])
        ours.append(held_out_ndcg(model.to_local(), data))
        theirs.append(held_out_ndcg(dask_class._local_class(**kw).fit(data["local"], data["y"]), data))
    assert abs(np.mean(ours) - np.mean(theirs)) <= 0.01, (ours, theirs)
    assert min(ours) > 0.6


@pytest.mark.parametrize("dask_class, params", [
    (DaskStochasticRankRanker, dict(langevin=True, diffusion_temperature=1e3, model_shrink_rate=0.2)),
    (DaskYetiRanker, dict(n_permutations=3)),
    (DaskLambdaMARTRanker, dict(langevin=True, model_shrink_rate=0.1)),  # diffusion_temperature="auto"
])
def test_same_model_as_in_memory_whatever_the_partitions(client, dask_class, params):
    """With features of few distinct values the cuts are exact on one
    machine and on the cluster alike, so the trees depend only on the
    gradients: the Dask model is the in-memory one, for 3 or 5 partitions.
    The random objectives' draws (and SGLB's noise and shrinkage) are the
    same on the workers as in memory: keyed by query id, not by place; the
    per-query losses' query units (YetiRank, LambdaMART) and the automatic
    diffusion temperature come from sums over all the workers."""
    X, y, qid = make_ranking(120, n_features=6, random_state=5)
    frame = pd.DataFrame(np.round(X * 2), columns=[f"x{j}" for j in range(6)]).assign(qid=qid * 7 + 3)
    perm = np.random.default_rng(0).permutation(len(y))
    frame, y = frame.iloc[perm].reset_index(drop=True), y[perm]
    kw = dict(n_estimators=8, max_depth=3, random_state=4, n_jobs=1, min_child_weight=1e-3, backend="xgboost",
              **params)
    local = dask_class._local_class(**kw).fit(frame, y)
    expected = local.predict(frame)
    other_seed = dask_class._local_class(**{**kw, "random_state": 5}).fit(frame, y).predict(frame)
    assert np.abs(other_seed - expected).max() > 1e-3  # the draws matter
    for n_partitions in (3, 5):
        model = dask_class(**kw, client=client).fit(dd.from_pandas(frame, npartitions=n_partitions, sort=False),
                                                    dd.from_pandas(pd.Series(y), npartitions=n_partitions, sort=False))
        # float32 margins: the shrunk model is tracked from sums instead of tree by tree.
        np.testing.assert_allclose(model.to_local().predict(frame), expected, rtol=0, atol=1e-6)
        if local.diffusion_temperature_ is None:
            assert model.diffusion_temperature_ is None
        else:  # "auto": the same beta from the global sum of squared gradients
            assert model.diffusion_temperature_ == pytest.approx(local.diffusion_temperature_, rel=1e-12)


def test_same_model_whatever_the_layout(client, data, monkeypatch):
    """Features of more distinct values than max_bin: the bin edges are
    rankkit's, fitted on the driver, so neither the partitions, nor the form
    of the collection, nor which worker holds which rows change the model
    (XGBoost's distributed sketch did: three models from one DataFrame given
    in three forms). Also when the edges come from a hashed sample of the
    rows (fewer sampled rows than training rows)."""
    import rankkit._dask_layout as layout

    local, y = data["local"], data["y"]
    assert all(local[c].nunique() > 256 for c in local.columns if c != "qid")

    def fits():
        out = []
        for form, k in (("frame", 4), ("columns", 4), ("arrays", 3), ("frame", 1)):
            frame = dd.from_pandas(local.assign(y=y), npartitions=k, sort=False)
            features = frame.drop(columns=["qid", "y"])
            if form == "frame":
                args = (frame.drop(columns="y"), frame["y"], None)
            elif form == "columns":
                args = (features, frame["y"], frame["qid"])
            else:
                args = (features.to_dask_array(), frame["y"].to_dask_array(), frame["qid"].to_dask_array())
            model = DaskLambdaMARTRanker(**SMALL, client=client).fit(args[0], args[1], qid=args[2])
            out.append(model.to_local().predict(data["test"]))
        return out

    every_row = fits()
    monkeypatch.setattr(layout, "QUANTILE_ROWS", len(local) // 3)
    sampled = fits()
    assert np.abs(sampled[0] - every_row[0]).max() > 1e-3  # other edges: the sample was used
    for models in (every_row, sampled):
        for other in models[1:]:
            # Up to the order of XGBoost's histogram sums over the workers (bit for bit here).
            np.testing.assert_allclose(other, models[0], rtol=0, atol=1e-6)


def test_splits_on_bin_codes_are_the_same_splits_on_raw_features():
    """A booster trained on BinEdges' codes, its splits moved onto the raw
    features, predicts on raw features (float32 or float64; values on, just
    below and just above every edge; NaN) what the original predicts on
    their codes. A feature of one value and NaN splits "missing or not":
    moved to +inf."""
    import json

    import xgboost

    from rankkit._backends._gbm.binning import fit_bin_edges
    from rankkit._dask_layout import BinEdges

    rng = np.random.default_rng(0)
    n = 3000
    X = np.column_stack([
        rng.normal(size=n), np.round(rng.exponential(size=n), 1), rng.integers(0, 5, n).astype(float),
        np.where(rng.random(n) < 0.3, np.nan, 1.0),
    ])
    X[rng.random(n) < 0.05, 0] = np.nan
    y = np.nan_to_num(X[:, 0]) ** 2 + X[:, 1] - X[:, 2] + np.isnan(X[:, 3]) * 3 + np.isnan(X[:, 0])
    edges = BinEdges(*fit_bin_edges(X, 16, sample_rows=None))
    columns = [f"f{j}" for j in range(X.shape[1])]
    codes = edges.codes(pd.DataFrame(X, columns=columns))
    assert codes.to_numpy().dtype == np.uint8
    booster = xgboost.train({"max_depth": 5, "max_bin": 16, "tree_method": "hist", "eta": 0.3,
                             "min_child_weight": 0, "nthread": 1},
                            xgboost.DMatrix(codes.to_numpy(), label=y, missing=edges.missing), 30)
    model = edges.raw_thresholds(json.loads(booster.save_raw("json")))
    raw = xgboost.Booster(model_file=bytearray(json.dumps(model).encode()))
    conditions = np.concatenate([t["split_conditions"] for t in model["learner"]["gradient_booster"]["model"]["trees"]])
    assert np.isinf(conditions).any()  # the "missing or not" split of feature 3
    near = []
    for f in range(X.shape[1]):
        e = np.float32(edges.edges[edges.edges_ptr[f]:edges.edges_ptr[f + 1]])
        for value in np.concatenate([e, np.nextafter(e, np.float32(-np.inf)), np.nextafter(e, np.float32(np.inf))]):
            row = X[rng.integers(n)].copy()
            row[f] = value
            near.append(row)
    test = np.vstack([X, near, np.full((1, X.shape[1]), np.nan)])
    expected = booster.predict(xgboost.DMatrix(edges.codes(pd.DataFrame(test, columns=columns)).to_numpy(),
                                               missing=edges.missing))
    for dtype in (np.float64, np.float32):
        np.testing.assert_array_equal(raw.predict(xgboost.DMatrix(test.astype(dtype))), expected)


def test_edge_sample_is_the_same_rows_whatever_their_order():
    """Beyond QUANTILE_ROWS the edges come from the rows a hash of query key and
    feature values picks: the same rows whatever their order, in or across queries."""
    from rankkit._dask_layout import KEY, _edge_sample

    rng = np.random.default_rng(0)
    n = 4000
    frame = pd.DataFrame(rng.normal(size=(n, 3)).astype(np.float32), columns=["f0", "f1", "f2"])
    frame[KEY] = np.repeat(rng.integers(0, 2**63, 200, dtype=np.uint64), n // 200)
    limit = np.uint64(2**62)  # about a quarter of the rows
    picked = _edge_sample(frame, ["f0", "f1", "f2"], limit)
    assert 800 < len(picked) < 1200
    again = _edge_sample(frame.iloc[rng.permutation(n)], ["f0", "f1", "f2"], limit)
    assert sorted(map(tuple, again.tolist())) == sorted(map(tuple, picked.tolist()))
    assert len(_edge_sample(frame, ["f0", "f1", "f2"], None)) == n


def test_bin_code_conditions_become_raw_thresholds():
    """The rule of BinEdges.raw_thresholds on conditions XGBoost could write:
    code < c is code < ceil(c), that is x32 <= edges[ceil(c) - 1]."""
    from rankkit._dask_layout import BinEdges

    edges = BinEdges(np.array([1.0, 2.0, 3.0 + 1e-12]), np.array([0, 3]))
    conditions = [-0.5, 0.0, 0.5, 1.0, 2.0, 2.5, 3.5, 99.0, 0.25]
    model = {"learner": {"gradient_booster": {"model": {"trees": [{
        "left_children": [1] * 8 + [-1], "split_indices": [0] * 9, "split_conditions": conditions,
    }]}}}}
    moved = edges.raw_thresholds(model)["learner"]["gradient_booster"]["model"]["trees"][0]["split_conditions"]

    def above(v):  # the smallest float32 above v
        return float(np.nextafter(np.float32(v), np.float32(np.inf)))

    # 3 + 1e-12 rounds to 3.0 in float32, below the edge: the next float32 above it.
    assert moved == [-np.inf, -np.inf, above(1.0), above(1.0), above(2.0), above(3.0), np.inf, np.inf, 0.25]


def test_to_local_predicts_identically_and_pickles(client, data):
    model = DaskYetiRanker(**SMALL, n_permutations=3, client=client).fit(data["X"], data["dy"])
    scores = model.predict(data["X"])
    assert isinstance(scores, dd.Series) and scores.npartitions == data["X"].npartitions
    computed = client.compute(scores).result()
    pd.testing.assert_index_equal(computed.index, data["X"].index.compute())
    local = model.to_local()
    assert type(local) is rankkit.YetiRanker and local.get_params() == {
        k: v for k, v in model.get_params().items() if k != "client"}
    np.testing.assert_array_equal(computed.to_numpy(), local.predict(data["local"]))
    restored = pickle.loads(pickle.dumps(local))
    np.testing.assert_array_equal(restored.predict(data["test"]), local.predict(data["test"]))
    # The Dask ranker pickles too (without its client) and predicts with the one given later.
    again = pickle.loads(pickle.dumps(model))
    assert again.client is None
    again.set_params(client=client)
    np.testing.assert_array_equal(client.compute(again.predict(data["X"])).result().to_numpy(), computed.to_numpy())
    # score on the cluster is the in-memory score, query-weighted with sample_weight.
    assert model.score(data["X"], data["dy"]) == pytest.approx(local.score(data["local"], data["y"]), abs=1e-12)
    w = 1.0 + data["local"]["qid"].to_numpy() % 3
    dw = dd.from_pandas(pd.Series(w), npartitions=4, sort=False)
    weighted = local.score(data["local"], data["y"], sample_weight=w)
    assert weighted != pytest.approx(local.score(data["local"], data["y"]), abs=1e-6)
    assert model.score(data["X"], data["dy"], sample_weight=dw) == pytest.approx(weighted, abs=1e-12)


def test_to_local_predicts_with_n_jobs_on_this_machine(client, data):
    """n_jobs=-1 resolved on a worker (one thread each here) stayed in the
    booster of to_local(): its predictions ran on one thread on any machine."""
    import json

    from rankkit._threads import resolve_n_jobs

    model = DaskLambdaMARTRanker(**{**SMALL, "n_jobs": -1}, client=client).fit(data["X"], data["dy"])
    local = model.to_local()
    threads = json.loads(local.backend_.booster_.save_config())["learner"]["generic_param"]["nthread"]
    assert int(threads) == resolve_n_jobs(-1) > 1
    np.testing.assert_array_equal(local.predict(data["local"]),
                                  client.compute(model.predict(data["X"])).result().to_numpy())
    worker = json.loads(model.backend_.booster_.save_config())["learner"]["generic_param"]["nthread"]
    assert int(worker) == 1  # the Dask ranker's own engine is left as the workers made it


def test_predict_follows_n_jobs_set_after_fit(client, data):
    """As in memory, set_params(n_jobs=) after fit reaches the engine the
    workers predict with (it kept fit's thread count), and the scores stay."""
    import json

    from rankkit._backends.xgboost import XGBoostBackend

    def shipped_threads(collection):
        graph = dict(collection.__dask_graph__())
        engines = [getattr(v, "value", v) for v in graph.values()]
        return [int(json.loads(e.booster_.save_config())["learner"]["generic_param"]["nthread"])
                for e in engines if isinstance(e, XGBoostBackend)]

    model = DaskLambdaMARTRanker(**SMALL, client=client).fit(data["X"], data["dy"])
    before = client.compute(model.predict(data["X"])).result().to_numpy()
    model.set_params(n_jobs=3)
    prediction = model.predict(data["X"])
    assert shipped_threads(prediction) == [3]
    np.testing.assert_array_equal(client.compute(prediction).result().to_numpy(), before)
    model.set_params(n_jobs=-1)  # every thread a worker has: one here
    assert shipped_threads(model.predict(data["X"])) == [1]
    assert model.backend_.n_jobs == 1  # the fitted engine itself is left as fit made it


def test_dask_arrays_with_qid(client, data):
    X = da.from_array(data["local"].drop(columns="qid").to_numpy(), chunks=(700, 5))
    qid = da.from_array(data["local"]["qid"].to_numpy(), chunks=700)
    y = da.from_array(data["y"], chunks=700)
    model = DaskRanker(objective=YetiRank(n_permutations=2), **SMALL, client=client).fit(X, y, qid=qid)
    scores = model.predict(X)
    assert isinstance(scores, da.Array) and scores.chunks == (X.chunks[0],)
    np.testing.assert_array_equal(client.compute(scores).result(),
                                  model.to_local().predict(data["local"].drop(columns="qid").to_numpy()))
    assert not hasattr(model, "feature_names_in_") and model.n_features_in_ == 12


def test_dask_arrays_of_unknown_chunk_sizes(client, data):
    """Arrays from a DataFrame's to_dask_array() have unknown (NaN) row chunks:
    accepted when they hold the same rows, checked partition by partition."""
    frame = data["X"].assign(y=data["dy"])
    features = [c for c in data["local"].columns if c != "qid"]
    X, y, qid = (frame[features].to_dask_array(), frame["y"].to_dask_array(), frame["qid"].to_dask_array())
    assert np.isnan(y.chunks[0]).all()
    X = X.compute_chunk_sizes()  # known row chunks beside unknown ones
    model = DaskLambdaMARTRanker(**SMALL, client=client).fit(X, y, qid=qid)
    np.testing.assert_array_equal(client.compute(model.predict(X)).result(),
                                  model.to_local().predict(data["local"][features].to_numpy()))
    shorter = frame.partitions[:3]  # one partition short
    with pytest.raises(ValueError, match="y has 3 partitions but X has 4"):
        DaskLambdaMARTRanker(**SMALL, client=client).fit(X, shorter["y"].to_dask_array(), qid=qid)
    uneven = dd.from_pandas(data["local"].assign(y=data["y"]).iloc[3:], npartitions=4, sort=False)
    with pytest.raises(ValueError, match="is not partitioned like X: partition"):
        DaskLambdaMARTRanker(**SMALL, client=client).fit(X, uneven["y"].to_dask_array(), qid=qid)


def test_eval_history_is_the_exact_global_mean_with_sglb(client, data):
    """The eval metric each iteration is the mean over all eval queries of the
    (shrunk) model after that iteration, exactly: the folded model scores the
    same; early stopping keeps the best iteration."""
    X_eval = dd.from_pandas(data["test"], npartitions=3, sort=False)
    y_eval = dd.from_pandas(pd.Series(data["y_test"]), npartitions=3, sort=False)
    model = DaskLambdaMARTRanker("ndcg@10", **{**SMALL, "n_estimators": 60}, model_shrink_rate=0.5,
                                 early_stopping_rounds=4, client=client)
    model.fit(data["X"], data["dy"], eval_set=[(X_eval, y_eval)])
    history = model.evals_result_["validation_0"]["ndcg@10"]
    assert model.best_iteration_ == int(np.argmax(history)) and model.best_score_ == max(history)
    assert len(history) == model.n_iterations_ < 60  # stopped early
    assert model.booster_.num_boosted_rounds() == model.best_iteration_ + 1
    local = model.to_local()
    groups = make_groups(data["test"]["qid"])
    X_test = groups.sort(data["test"].drop(columns="qid").to_numpy())
    y_test = groups.sort(data["y_test"])
    settings = model.objective_._eval_metric_settings()
    for t in (0, 1, model.best_iteration_):
        raw = local.backend_.predict(X_test, n_iterations=t + 1)
        assert history[t] == pytest.approx(mean_metric("ndcg@10", y_test, raw, groups.group_ptr, settings),
                                           rel=0, abs=1e-12)
    assert local.score(data["test"], data["y_test"]) == pytest.approx(model.best_score_, rel=0, abs=1e-12)
    assert np.all(local.backend_.shrink_factors_[1:] == 1 - 0.5 * SMALL["learning_rate"])
    # predict(iteration_range=) on the cluster: the in-memory ranker's, exact with shrinkage.
    for iteration_range in ((0, 2), (1, 3)):
        np.testing.assert_array_equal(
            client.compute(model.predict(X_eval, iteration_range=iteration_range)).result().to_numpy(),
            local.predict(data["test"], iteration_range=iteration_range))
    with pytest.raises(ValueError, match="must satisfy 0 <= start < end"):
        model.predict(X_eval, iteration_range=(0, model.n_iterations_ + 1))
    # The deprecated fit argument still works, with the in-memory warning.
    with pytest.warns(FutureWarning, match="fit\\(early_stopping_rounds=...\\) is deprecated"):
        DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 3}, client=client).fit(
            data["X"], data["dy"], eval_set=[(X_eval, y_eval)], early_stopping_rounds=2)


def test_err_scale_is_the_in_memory_one(client):
    """ERR with err_mapping="chapelle" and err_max_label=None: the largest
    training label maps every set, on the cluster as in memory, for an eval
    set whose labels stop lower (features of few values: the same trees)."""
    X, y, qid = make_ranking(80, n_features=6, max_docs=15, random_state=5)
    frame = pd.DataFrame(np.round(X * 2), columns=[f"x{j}" for j in range(6)]).assign(qid=qid)
    train, test = (frame.qid < 60).to_numpy(), (frame.qid >= 60).to_numpy()
    low = np.minimum(y[test], 2)
    assert y[train].max() > 2
    kw = dict(SMALL, n_estimators=5, metric="err@10", err_mapping="chapelle", eval_metric="err@10")
    local = rankkit.LambdaMARTRanker(**kw).fit(frame[train], y[train], eval_set=[(frame[test], low)])
    X_eval = dd.from_pandas(frame[test], npartitions=2, sort=False)
    y_eval = dd.from_pandas(pd.Series(low), npartitions=2, sort=False)
    model = DaskLambdaMARTRanker(**kw, client=client).fit(
        dd.from_pandas(frame[train], npartitions=3, sort=False), dd.from_pandas(pd.Series(y[train]), npartitions=3),
        eval_set=[(X_eval, y_eval)])
    assert model.objective_.err_max_label == local.objective_.err_max_label == y[train].max()
    np.testing.assert_allclose(model.evals_result_["validation_0"]["err@10"],
                               local.evals_result_["validation_0"]["err@10"], rtol=1e-9)
    assert model.score(X_eval, y_eval) == pytest.approx(local.score(frame[test], low), rel=1e-9)
    # Labels above the ERR scale still score NDCG, as in memory.
    capped = {key: value for key, value in kw.items() if key != "eval_metric"}
    local = rankkit.LambdaMARTRanker(**capped).fit(frame[train], np.minimum(y[train], 2))
    model = DaskLambdaMARTRanker(**capped, client=client).fit(
        dd.from_pandas(frame[train], npartitions=3, sort=False),
        dd.from_pandas(pd.Series(np.minimum(y[train], 2)), npartitions=3))
    high = dd.from_pandas(pd.Series(y[test]), npartitions=2, sort=False)
    assert model.score(X_eval, high) == pytest.approx(local.score(frame[test], y[test]), rel=1e-9)


def test_err_scale_holds_labels_that_float32_rounds_up(client):
    """The scale was pinned to the largest label in float64 while the workers
    read the labels in float32 (XGBoost's DMatrix): labels up to 3.2, which
    float32 rounds up, failed on a worker ("err_max_label=3.2 is below the
    largest label 3.2")."""
    X, y, qid = make_ranking(60, n_features=4, max_docs=15, random_state=0)
    frame = pd.DataFrame(np.round(X, 1), columns=[f"x{j}" for j in range(4)]).assign(qid=qid)
    y = y * 0.8
    assert np.float32(y.max()) > y.max()
    kw = dict(SMALL, n_estimators=3, metric="err", err_mapping="chapelle", eval_metric="err@5")
    local = rankkit.LambdaMARTRanker(**kw).fit(frame, y, eval_set=[(frame.copy(), y.copy())])
    parts = dd.from_pandas(frame, npartitions=2, sort=False), dd.from_pandas(pd.Series(y), npartitions=2)
    evals = dd.from_pandas(frame.copy(), npartitions=2, sort=False), dd.from_pandas(pd.Series(y), npartitions=2)
    model = DaskLambdaMARTRanker(**kw, client=client).fit(*parts, eval_set=[evals])
    assert model.objective_.err_max_label == pytest.approx(y.max(), rel=1e-7)
    np.testing.assert_allclose(model.evals_result_["validation_0"]["err@5"],
                               local.evals_result_["validation_0"]["err@5"], rtol=1e-6)
    assert model.score(*parts) == pytest.approx(local.score(frame, y), rel=1e-6)


def test_err_on_click_labels_on_dask(client):
    """ERR's Chapelle scale on debiased clicks. Known propensities: the scale
    is the largest debiased label of all the rows, as in memory (it failed on
    the workers, float32 rounding the labels above it). Estimated ones: every
    fit failed, the scale pinned to the largest click (1), below the debiased
    labels; the scale changes every iteration, which the workers cannot
    follow, so it is an error naming err_max_label, and with it the fit is the
    in-memory one."""
    clicks_frame, clicks = _click_frame(n_sessions=200)
    parts = dd.from_pandas(clicks_frame, npartitions=2), dd.from_pandas(pd.Series(clicks), npartitions=2)
    kw = dict(CLICK_KW, metric="err", err_mapping="chapelle", position_bias="known", propensities=lambda k: 1.0 / k)
    local = rankkit.LambdaMARTRanker(**kw).fit(clicks_frame, clicks)
    model = DaskLambdaMARTRanker(**kw, client=client).fit(*parts)
    np.testing.assert_allclose(model.to_local().predict(clicks_frame), local.predict(clicks_frame), rtol=0, atol=1e-6)
    kw = dict(CLICK_KW, metric="err", err_mapping="chapelle", position_bias="estimate")
    with pytest.raises(ValueError, match=r"position_bias='estimate'.*Pass err_max_label="):
        DaskLambdaMARTRanker(**kw, client=client).fit(*parts)
    kw["err_max_label"] = 20.0
    local = rankkit.LambdaMARTRanker(**kw).fit(clicks_frame, clicks)
    model = DaskLambdaMARTRanker(**kw, client=client).fit(*parts)
    np.testing.assert_allclose(model.position_bias_, local.position_bias_, rtol=1e-9)
    np.testing.assert_allclose(model.to_local().predict(clicks_frame), local.predict(clicks_frame), rtol=0, atol=1e-6)


def test_column_types(client):
    """pandas' nullable and pyarrow number columns train as in memory; a
    category or text column is refused up front, naming it."""
    X, y, qid = make_ranking(60, n_features=3, random_state=0)
    frame = pd.DataFrame(np.round(X * 2), columns=["a", "b", "c"]).assign(qid=np.char.add("q", qid.astype(str)))
    frame["a"] = frame["a"].astype("Float64")
    frame.loc[::7, "a"] = pd.NA
    frame["b"] = frame["b"].astype("Int64")
    frame["c"] = frame["c"].astype("float64[pyarrow]")
    kw = dict(SMALL, n_estimators=3)
    local = rankkit.LambdaMARTRanker(**kw).fit(frame, y)
    model = DaskLambdaMARTRanker(**kw, client=client).fit(dd.from_pandas(frame, npartitions=2),
                                                         dd.from_pandas(pd.Series(y), npartitions=2))
    scores = model.predict(dd.from_pandas(frame, npartitions=3)).compute().to_numpy()
    np.testing.assert_allclose(scores, local.predict(frame), rtol=0, atol=1e-6)
    for column in (pd.Categorical(np.where(X[:, 0] > 0, "x", "y")), np.where(X[:, 0] > 0, "x", "y"),
                   pd.Categorical(np.round(X[:, 1]))):
        bad = dd.from_pandas(frame.assign(site=column), npartitions=2)
        with pytest.raises(ValueError, match=r"numeric columns only; \['site'\] are not numbers .*cat.codes"):
            DaskLambdaMARTRanker(**kw, client=client).fit(bad, dd.from_pandas(pd.Series(y), npartitions=2))
    # In an eval set: named, and before the training rows are shuffled (a category query column is fine).
    good = dd.from_pandas(frame.assign(qid=pd.Categorical(frame["qid"])), npartitions=2)
    with pytest.raises(ValueError, match=r"^eval_set\[0\]: DaskLambdaMARTRanker trains on numeric columns only; "
                                         r"\['site'\]"):
        DaskLambdaMARTRanker(**kw, client=client).fit(good, dd.from_pandas(pd.Series(y), npartitions=2),
                                                      eval_set=[(bad, dd.from_pandas(pd.Series(y), npartitions=2))])
    # XGBoost trains on float32: a value beyond its range is named, not an XGBoost internal error.
    huge = dd.from_pandas(frame.assign(a=frame["a"].astype("float64").fillna(0) * 1e39), npartitions=2)
    with pytest.raises(ValueError, match=r"Features \[0\] hold finite values beyond float32's range.*log\)\.$"):
        DaskLambdaMARTRanker(**kw, client=client).fit(huge, dd.from_pandas(pd.Series(y), npartitions=2))
    # ...and so are labels: they reach the workers in the DMatrix ("Label contains NaN, infinity or a
    # value too large" from XGBoost before).
    with pytest.raises(ValueError, match=r"y of X holds labels beyond float32's range.*Rescale them"):
        rankkit.dask.DaskQueryRMSERanker(**kw, client=client).fit(
            dd.from_pandas(frame, npartitions=2), dd.from_pandas(pd.Series(y * 1e300), npartitions=2))
    # A two-column y: the in-memory message, not a worker's row count.
    with pytest.raises(ValueError, match=r"^y must be one-dimensional \(one value per row\), got 2 columns"):
        DaskLambdaMARTRanker(**kw, client=client).fit(dd.from_pandas(frame, npartitions=2),
                                                      dd.from_pandas(pd.DataFrame({"a": y, "b": y}), npartitions=2))
    # Duplicate names: the in-memory message, not a dependency's error.
    twice = dd.from_pandas(frame.rename(columns={"b": "a"}), npartitions=2)
    with pytest.raises(ValueError, match=r"X has duplicate column names \['a'\]: rename them"):
        DaskLambdaMARTRanker(**kw, client=client).fit(twice, dd.from_pandas(pd.Series(y), npartitions=2))


def test_eval_sample_weight_on_the_cluster(client, data):
    """Weighted eval sets on Dask: the history is the query-weighted mean over
    all eval queries, as the in-memory score(sample_weight=); the training
    entry is weighted by sample_weight."""
    rng = np.random.default_rng(5)
    w_test = rng.uniform(0.0, 3.0, data["y_test"].size)
    w_train = rng.uniform(0.5, 2.0, data["y"].size)
    X_eval = dd.from_pandas(data["test"], npartitions=3, sort=False)
    y_eval = dd.from_pandas(pd.Series(data["y_test"]), npartitions=3, sort=False)
    weight_eval = dd.from_pandas(pd.Series(w_test), npartitions=3, sort=False)
    weight = dd.from_pandas(pd.Series(w_train), npartitions=4, sort=False)
    model = DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 6}, client=client)
    model.fit(data["X"], data["dy"], sample_weight=weight, eval_set=[(data["X"], data["dy"]), (X_eval, y_eval)],
              eval_sample_weight=[None, weight_eval])
    local = model.to_local()
    history = model.evals_result_["validation_1"]["ndcg@10"]
    # The workers read the weights from XGBoost's DMatrix, which holds them in float32.
    w_test32, w_train32 = w_test.astype(np.float32), w_train.astype(np.float32)
    assert local.score(data["test"], data["y_test"], sample_weight=w_test32) == pytest.approx(history[-1], abs=1e-12)
    assert local.score(data["test"], data["y_test"]) != pytest.approx(history[-1], abs=1e-6)
    training = model.evals_result_["training"]["ndcg@10"]
    assert local.score(data["local"], data["y"], sample_weight=w_train32) == pytest.approx(training[-1], abs=1e-12)


def test_eval_set_errors_name_the_set(client, data):
    model = DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 2}, client=client)
    X_eval = data["X"].drop(columns="x0")
    with pytest.raises(ValueError, match=r"eval_set\[0\]: X has 11 features"):
        model.fit(data["X"], data["dy"], eval_set=[(X_eval, data["dy"])])
    y_eval = dd.from_pandas(pd.Series(data["y"]), npartitions=2, sort=False)
    with pytest.raises(ValueError, match=r"the y of eval_set\[0\] has 2 partitions but eval_set\[0\] has 4"):
        model.fit(data["X"], data["dy"], eval_set=[(data["X"], y_eval)])


def test_save_model_and_load_model(client, data, tmp_path):
    """A Dask ranker's file loads with rankkit.load_model (rankkit.dask's
    classes are rankkit's); its client is saved as None, as pickling drops it."""
    model = DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 5}, client=client).fit(data["X"], data["dy"])
    model.save_model(tmp_path / "m.rkm")  # with client=: "Cannot save parameter client" before
    loaded = rankkit.load_model(tmp_path / "m.rkm")  # "neither rankkit's nor among classes=" before
    assert type(loaded) is DaskLambdaMARTRanker and loaded.client is None
    np.testing.assert_array_equal(loaded.to_local().predict(data["test"]), model.to_local().predict(data["test"]))


def test_clone_shares_the_client(client):
    """scikit-learn's clone copies the parameters and shares the client (a
    connection cannot be copied)."""
    from sklearn.base import clone

    model = DaskLambdaMARTRanker(n_estimators=7, eval_metric=["ndcg@5"], client=client)
    copy = clone(model)
    assert copy.client is client and model.client is client
    assert copy.get_params()["n_estimators"] == 7 and copy.eval_metric == ["ndcg@5"]
    assert copy.eval_metric is not model.eval_metric


def test_a_worker_with_eval_rows_and_no_training_rows():
    """Three workers, one training partition, two eval partitions: some worker
    holds eval rows only, so its training DMatrix is empty. The fit is the
    in-memory one (features of few distinct values: exact quantile cuts)."""
    X, y, qid = make_ranking(80, n_features=6, max_docs=15, random_state=5)
    frame = pd.DataFrame(np.round(X * 2), columns=[f"x{j}" for j in range(6)]).assign(qid=qid)
    train, valid = (frame.qid < 60).to_numpy(), (frame.qid >= 60).to_numpy()
    kw = dict(SMALL, n_estimators=5)
    local = rankkit.LambdaMARTRanker(**kw).fit(
        frame[train], y[train], eval_set=[(frame[valid], y[valid])])
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as cluster, \
            distributed.Client(cluster, set_as_default=False) as c:
        model = DaskLambdaMARTRanker(**kw, client=c).fit(
            dd.from_pandas(frame[train], npartitions=1), dd.from_pandas(pd.Series(y[train]), npartitions=1),
            eval_set=[(dd.from_pandas(frame[valid], npartitions=2),
                       dd.from_pandas(pd.Series(y[valid]), npartitions=2))])
    np.testing.assert_allclose(model.to_local().predict(frame), local.predict(frame), rtol=0, atol=1e-6)
    np.testing.assert_allclose(model.evals_result_["validation_0"]["ndcg@10"],
                               local.evals_result_["validation_0"]["ndcg@10"], rtol=1e-9)


def test_eval_metric_list_training_set_and_progress_lines(client, data, capsys):
    """As in memory: every eval_metric for every set, the training data
    passed as an eval set recorded as "training", the first metric on the
    last other set driving early stopping, and verbose=N lines (sent by a
    worker, printed by the driver in order) with the final line."""
    X_eval = dd.from_pandas(data["test"], npartitions=3, sort=False)
    y_eval = dd.from_pandas(pd.Series(data["y_test"]), npartitions=3, sort=False)
    kw = dict(**{**SMALL, "n_estimators": 30}, eval_metric=["ndcg@5", "map"], early_stopping_rounds=3)
    model = DaskLambdaMARTRanker(**kw, client=client)
    model.fit(data["X"], data["dy"], eval_set=[(data["X"], data["dy"]), (X_eval, y_eval)], verbose=4)
    lines = capsys.readouterr().out.splitlines()
    history = model.evals_result_
    assert list(history) == ["training", "validation_1"]
    assert all(list(h) == ["ndcg@5", "map"] for h in history.values())
    n_done = model.n_iterations_
    assert all(len(curve) == n_done for h in history.values() for curve in h.values())
    main = history["validation_1"]["ndcg@5"]
    assert model.best_iteration_ == int(np.argmax(main)) and model.best_score_ == main[model.best_iteration_]
    printed = [t for t in range(n_done) if t % 4 == 0 or t == n_done - 1]
    assert len(lines) == len(printed) + 1
    for t, line in zip(printed, lines):
        assert line == f"[{t}]" + "".join(f"\t{name}-{m}:{history[name][m][t]:.5f}"
                                          for name in history for m in ("ndcg@5", "map"))
    stopped = n_done < 30
    assert lines[-1] == ((f"stopped at iteration {n_done - 1} by early stopping" if stopped
                          else "trained 30 iterations")
                         + f", best iteration {model.best_iteration_}, best validation_1-ndcg@5 {model.best_score_:.5f}")
    # The training curve is the model's own metric on the training rows.
    local = model.to_local()
    groups = make_groups(data["local"]["qid"])
    X_train, y_train = groups.sort(data["local"].drop(columns="qid").to_numpy()), groups.sort(data["y"])
    settings = model.objective_._eval_metric_settings()
    raw = local.backend_.predict(X_train, n_iterations=2)
    assert history["training"]["map"][1] == pytest.approx(mean_metric("map", y_train, raw, groups.group_ptr,
                                                                        settings), rel=0, abs=1e-12)
    # The same lines' layout as the in-memory ranker's.
    rankkit.LambdaMARTRanker(**kw).fit(data["local"], data["y"], eval_set=[(data["local"], data["y"]),
                                                                           (data["test"], data["y_test"])], verbose=4)
    expected = capsys.readouterr().out.splitlines()
    shape = [[field.split(":")[0] for field in line.split("\t")[1:]] for line in lines[:-1]]
    assert shape == [[field.split(":")[0] for field in line.split("\t")[1:]] for line in expected[:1]] * len(shape)


def test_progress_lines_without_eval_set(client, data, capsys):
    """verbose=N alone: the training metric of the printed iterations, the
    exact mean over all training queries (all-reduced over the workers)."""
    model = DaskYetiRanker(**{**SMALL, "n_estimators": 5}, n_permutations=2, client=client)
    model.fit(data["X"], data["dy"], verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert model.evals_result_ == {} and model.best_score_ is None and model.best_iteration_ == 4
    assert [line.split("\t")[0] for line in lines] == ["[0]", "[2]", "[4]", "trained 5 iterations"]
    local = model.to_local()
    groups = make_groups(data["local"]["qid"])
    X_train, y_train = groups.sort(data["local"].drop(columns="qid").to_numpy()), groups.sort(data["y"])
    settings = model.objective_._eval_metric_settings()
    for t, line in zip((0, 2, 4), lines):
        value = mean_metric("ndcg@10", y_train, local.backend_.predict(X_train, n_iterations=t + 1),
                             groups.group_ptr, settings)
        assert line == f"[{t}]\ttraining-ndcg@10:{value:.5f}"


def test_sample_weight(client):
    """Queries and rows count by their weights on the cluster as in memory
    (query units, and the curvature unit of these 30-document lists):
    half the queries of weight 0 give the in-memory model of those weights."""
    X, y, qid = make_ranking(80, n_features=6, random_state=5)
    frame = pd.DataFrame(np.round(X * 2), columns=[f"x{j}" for j in range(6)]).assign(qid=qid)
    perm = np.random.default_rng(0).permutation(len(y))
    frame, y = frame.iloc[perm].reset_index(drop=True), y[perm]
    w = np.where(frame["qid"].to_numpy() % 2 == 0, 1.0, 0.0)
    kw = dict(SMALL, n_estimators=5)
    local = rankkit.LambdaMARTRanker(**kw).fit(frame, y, sample_weight=w)
    dX, dy, dw = (dd.from_pandas(v, npartitions=4, sort=False) for v in (frame, pd.Series(y), pd.Series(w)))
    weighted = DaskLambdaMARTRanker(**kw, client=client).fit(dX, dy, sample_weight=dw)
    np.testing.assert_allclose(weighted.to_local().predict(frame), local.predict(frame), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="zero for every row"):
        DaskLambdaMARTRanker(client=client).fit(dX, dy, sample_weight=dw * 0)


# -- parameters ---------------------------------------------------------------------
@pytest.mark.parametrize("local_class", sorted(DASK_RANKERS, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_parameters_are_the_in_memory_rankers_plus_client(local_class):
    dask_class = DASK_RANKERS[local_class]
    assert dask_class.__name__ == f"Dask{local_class.__name__}" and issubclass(dask_class, local_class)
    local_params = inspect.signature(local_class).parameters
    params = inspect.signature(dask_class).parameters
    assert list(params) == [*local_params, "client"]
    assert all(params[p].default is local_params[p].default or params[p].default == local_params[p].default
               for p in local_params)
    assert params["client"].default is None and params["client"].kind is inspect.Parameter.KEYWORD_ONLY
    model = dask_class(learning_rate=0.3)
    assert model.get_params()["learning_rate"] == 0.3 and model.get_params()["client"] is None
    from sklearn.base import clone
    assert clone(model).get_params() == model.get_params()
    assert dask_class in {getattr(rankkit.dask, name) for name in rankkit.dask.__all__}


def test_every_ranker_class_has_a_dask_ranker():
    assert set(DASK_RANKERS) == {_estimators.Ranker, *_estimators._NamedRanker.__subclasses__()} - set(DASK_RANKERS.values())


def test_generic_dask_ranker_nests_the_objective():
    model = DaskRanker(objective=YetiRank(), n_estimators=3)
    model.set_params(objective__n_permutations=4)
    assert model.get_params()["objective__n_permutations"] == 4


# -- clear errors ---------------------------------------------------------------------
def test_missing_query_column(client, data):
    with pytest.raises(ValueError, match="Missing query ids: X is a DataFrame without a 'qid' column"):
        DaskLambdaMARTRanker(client=client).fit(data["X"].drop(columns="qid"), data["dy"])


def test_qid_not_aligned_with_X(client, data):
    X = data["X"].drop(columns="qid")
    qid = data["local"]["qid"].to_numpy()
    with pytest.raises(ValueError, match="qid has 3 partitions but X has 4: qid must be partitioned like X"):
        DaskLambdaMARTRanker(client=client).fit(X, data["dy"], qid=dd.from_pandas(pd.Series(qid), npartitions=3))
    Xa = da.from_array(data["local"].drop(columns="qid").to_numpy(), chunks=(700, -1))
    other = (600, 800, *Xa.chunks[0][2:])
    with pytest.raises(ValueError, match=r"qid has row chunks \(600, 800, .*\) but X has \(700, 700, .*partitioned like X"):
        DaskLambdaMARTRanker(client=client).fit(Xa, da.from_array(data["y"], chunks=700),
                                                qid=da.from_array(qid, chunks=(other,)))
    # Same number of partitions, other lengths: found when the partitions are read.
    shifted = dd.from_pandas(pd.Series(qid), npartitions=4, sort=False)
    shifted = shifted.repartition(divisions=[0, 10, 20, 30, len(qid) - 1])
    with pytest.raises(ValueError, match=r"qid is not partitioned like X: partition \d of X has \d+ rows but \d+ entries of qid"):
        DaskLambdaMARTRanker(client=client).fit(X, data["dy"], qid=shifted)


def test_callbacks_and_group_sizes_are_refused(client, data):
    with pytest.raises(ValueError, match="does not run callbacks.*early_stopping_rounds=.*LambdaMARTRanker"):
        DaskLambdaMARTRanker(callbacks=[lambda env: False], client=client).fit(data["X"], data["dy"])
    with pytest.raises(ValueError, match="does not take group=.*Pass qid="):
        DaskLambdaMARTRanker(client=client).fit(data["X"].drop(columns="qid"), data["dy"], group=[10] * 10)
    with pytest.raises(ValueError, match="eval_qid was given without eval_set"):
        DaskLambdaMARTRanker(client=client).fit(data["X"], data["dy"], eval_qid=[data["dy"]])
    with pytest.raises(ValueError, match="early_stopping_rounds needs an eval_set other than the training data"):
        DaskLambdaMARTRanker(early_stopping_rounds=2, client=client).fit(data["X"], data["dy"],
                                                                         eval_set=[(data["X"], data["dy"])])


def test_constant_model_warning_says_why_there_is_no_cause(client, data):
    with pytest.warns(UserWarning, match="grew no split in 2 trees.*rankkit.dask does not look for the cause") as w:
        DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 2, "min_child_weight": 1e9}, client=client).fit(
            data["X"], data["dy"])
    assert w[0].filename == __file__  # points at the caller's fit


def test_no_client(data):
    with pytest.raises(ValueError, match="found no Dask client: start one"):
        DaskLambdaMARTRanker().fit(data["X"], data["dy"])


def test_closed_client_and_predict_without_one(client, data):
    """A closed client was "IOLoop is closed" from inside distributed. A model
    without a client predicts with dask's own scheduler, also after
    set_params(n_jobs=2) (which asked for a client it does not need)."""
    model = DaskLambdaMARTRanker(**SMALL, client=client).fit(data["X"], data["dy"])
    expected = client.compute(model.predict(data["X"])).result().to_numpy()
    other = distributed.Client(client.scheduler.address, set_as_default=False)
    other.close()
    with pytest.raises(ValueError, match=r"Dask client is closed: pass an open one"):
        model.set_params(client=other).score(data["X"], data["dy"])
    with pytest.raises(ValueError, match=r"Dask client is closed: pass an open one"):
        model.fit(data["X"], data["dy"])
    unpickled = pickle.loads(pickle.dumps(model.set_params(client=client)))
    unpickled.set_params(n_jobs=2)
    got = unpickled.predict(data["X"]).compute(scheduler="sync").to_numpy()
    np.testing.assert_array_equal(got, expected)


def test_query_ids_of_several_types_are_named(client):
    """Ints and strings in one query column failed inside dask's shuffle ("P2P ... failed")."""
    X, y, qid = make_ranking(20, n_features=3, random_state=0)
    mixed = np.where(qid % 2 == 0, qid.astype(object), np.array([f"s{q}" for q in qid], dtype=object))
    with pytest.raises(ValueError, match=r"qid of X holds query ids of several types \(mixed-integer"):
        DaskLambdaMARTRanker(n_estimators=2, client=client).fit(
            da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100), qid=da.from_array(mixed, chunks=100))


def test_default_client_is_used(client, data):
    with client.as_current():
        model = DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 3}).fit(data["X"], data["dy"])
        assert model.predict(data["X"]).compute().shape == (len(data["y"]),)  # the current client computes


def test_default_backend_means_xgboost_on_dask(client, data):
    params = {k: v for k, v in SMALL.items() if k != "backend"}
    model = DaskLambdaMARTRanker(**{**params, "n_estimators": 3}, client=client).fit(data["X"], data["dy"])
    assert model.backend == "auto" and model.backend_.name == "xgboost"
    local = model.to_local()
    assert local.backend == "xgboost"  # refitting the in-memory copy trains the same kind of model
    np.testing.assert_array_equal(local.predict(data["local"]), model.predict(data["X"]).compute())


def test_in_memory_data_and_other_backends_are_refused(client, data):
    with pytest.raises(TypeError, match="must be a dask collection"):
        DaskLambdaMARTRanker(client=client).fit(data["local"], data["y"])
    with pytest.raises(ValueError, match="backend must be 'xgboost'"):
        DaskLambdaMARTRanker(backend="numba", client=client).fit(data["X"], data["dy"])


def test_callable_eval_metric_is_the_exact_global_mean(client, data):
    """A callable runs on every worker's queries; the query-weighted average
    of the workers' values is the mean over all queries (for a metric that
    is a mean over queries), so it records what the named metric records."""
    from rankkit.metrics import make_ranking_scorer

    def ndcg5(y_true, y_score, qid):  # a local function: pickled by value to the workers
        return ndcg_score(y_true, y_score, qid=qid, k=5)

    X_eval = dd.from_pandas(data["test"], npartitions=3, sort=False)
    y_eval = dd.from_pandas(pd.Series(data["y_test"]), npartitions=3, sort=False)
    model = DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 12}, early_stopping_rounds=3, client=client,
                                 eval_metric=[ndcg5, "ndcg@5", make_ranking_scorer("map")])
    model.fit(data["X"], data["dy"], eval_set=[(X_eval, y_eval)])
    history = model.evals_result_["validation_0"]
    assert list(history) == ["ndcg5", "ndcg@5", "map"]
    np.testing.assert_allclose(history["ndcg5"], history["ndcg@5"], rtol=0, atol=1e-12)
    assert model.best_iteration_ == int(np.argmax(history["ndcg5"]))
    local = model.to_local()
    assert model.score(X_eval, y_eval) == pytest.approx(
        ndcg_score(data["y_test"], local.predict(data["test"]), qid=data["test"]["qid"], k=5), abs=1e-12)


# -- click data --------------------------------------------------------------------
def test_positions_stay_with_their_rows(client):
    """Click sessions shuffled over 3 and 5 partitions, positions as a column
    and as position=: the model is the in-memory one (features of few
    distinct values, as above), so each row was debiased at its own position."""
    from rankkit.datasets import simulate_clicks

    X, y, qid = make_ranking(60, n_features=6, max_docs=15, random_state=5)
    X = np.round(X * 2)
    Xc, clicks, sid, position = simulate_clicks(X, y, qid, X[:, 0], n_sessions=600, aggregate=False,
                                                random_state=0)
    frame = pd.DataFrame(Xc, columns=[f"x{j}" for j in range(6)]).assign(qid=sid, position=position)
    perm = np.random.default_rng(0).permutation(len(clicks))
    frame, clicks = frame.iloc[perm].reset_index(drop=True), clicks[perm]
    kw = dict(n_estimators=8, max_depth=3, random_state=4, n_jobs=1, min_child_weight=1e-3, backend="xgboost",
              position_bias="known", propensities=lambda k: 1.0 / k)
    local = rankkit.LambdaMARTRanker(**kw).fit(frame, clicks)
    expected = local.predict(frame)
    naive = rankkit.LambdaMARTRanker(**{**kw, "position_bias": None, "propensities": None})
    assert np.abs(naive.fit(frame.drop(columns="position"), clicks).predict(frame.drop(columns="position"))
                  - expected).max() > 1e-3  # the positions matter
    for n_partitions in (3, 5):
        parts = dd.from_pandas(frame, npartitions=n_partitions, sort=False)
        dy = dd.from_pandas(pd.Series(clicks), npartitions=n_partitions, sort=False)
        by_column = DaskLambdaMARTRanker(**kw, client=client).fit(parts, dy)
        np.testing.assert_allclose(by_column.to_local().predict(frame), expected, rtol=0, atol=1e-6)
        by_argument = DaskLambdaMARTRanker(**kw, client=client).fit(parts.drop(columns="position"), dy,
                                                                    position=parts["position"])
        np.testing.assert_allclose(by_argument.to_local().predict(frame), expected, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(by_column.position_bias_, local.position_bias_)


def _click_frame(n_sessions=600, seed=0):
    from rankkit.datasets import simulate_clicks

    X, y, qid = make_ranking(60, n_features=6, max_docs=15, random_state=5)
    X = np.round(X * 2)
    Xc, clicks, sid, position = simulate_clicks(X, y, qid, X[:, 0], n_sessions=n_sessions, aggregate=False,
                                                random_state=seed)
    frame = pd.DataFrame(Xc, columns=[f"x{j}" for j in range(6)]).assign(qid=sid, position=position)
    perm = np.random.default_rng(seed).permutation(len(clicks))
    return frame.iloc[perm].reset_index(drop=True), clicks[perm]


CLICK_KW = dict(n_estimators=8, max_depth=3, random_state=4, n_jobs=1, min_child_weight=1e-3, backend="xgboost")


@pytest.mark.parametrize("estimator", ["em", "pairwise"])
def test_estimated_propensities_on_dask_are_the_in_memory_ones(client, estimator):
    """position_bias="estimate" on Dask: each worker sums the estimator's
    statistics on its queries, all-reduced every iteration, so the
    propensities and the model are the in-memory ranker's (up to the order
    of float summation), over 2 and 3 partitions; a click eval set with
    eval_position is scored on the same debiased labels."""
    frame, clicks = _click_frame()
    train, valid = frame[frame.qid < 450], frame[frame.qid >= 450]
    y_train, y_valid = clicks[(frame.qid < 450).to_numpy()], clicks[(frame.qid >= 450).to_numpy()]
    kw = dict(CLICK_KW, position_bias="estimate", propensity_estimator=estimator, eval_metric="dcg@10")
    fit_kw = dict(eval_set=[(valid.drop(columns="position"), y_valid)], eval_position=[valid["position"]])
    local = rankkit.LambdaMARTRanker(**kw).fit(train, y_train, **fit_kw)
    expected = local.predict(train)
    assert local.position_bias_.min() < 0.9  # something was estimated
    for n_partitions in (2, 3):
        parts = dd.from_pandas(train, npartitions=n_partitions, sort=False)
        dy = dd.from_pandas(pd.Series(y_train), npartitions=n_partitions, sort=False)
        dvalid = dd.from_pandas(valid, npartitions=2, sort=False)
        dy_valid = dd.from_pandas(pd.Series(y_valid), npartitions=2, sort=False)
        model = DaskLambdaMARTRanker(**kw, client=client).fit(
            parts, dy, eval_set=[(dvalid.drop(columns="position"), dy_valid)], eval_position=[dvalid["position"]])
        np.testing.assert_allclose(model.position_bias_, local.position_bias_, rtol=1e-12, atol=0)
        np.testing.assert_allclose(model.to_local().predict(train), expected, rtol=0, atol=1e-6)
        np.testing.assert_allclose(model.evals_result_["validation_0"]["dcg@10"],
                                   local.evals_result_["validation_0"]["dcg@10"], rtol=1e-9)
        # The best iteration rescored on each iteration's labels, on the workers as in memory.
        assert model.best_iteration_ == local.best_iteration_
        assert model.best_score_ == pytest.approx(local.best_score_, rel=1e-9)
        assert model.score(dvalid, dy_valid) == pytest.approx(local.score(valid, y_valid), rel=1e-9)
        assert model.score(dvalid.drop(columns="position"), dy_valid, position=dvalid["position"]) == \
            pytest.approx(local.score(valid, y_valid), rel=1e-9)


def test_early_stopping_on_dask_keeps_the_best_iterations_propensities(client):
    """After early stopping with position_bias="estimate", position_bias_ is
    the estimate the kept model's last tree was trained with, and best_score_
    the curve's value there, on Dask as in memory."""
    frame, clicks = _click_frame()
    train, valid = frame[frame.qid < 450], frame[frame.qid >= 450]
    y_train, y_valid = clicks[(frame.qid < 450).to_numpy()], clicks[(frame.qid >= 450).to_numpy()]
    kw = dict(CLICK_KW, n_estimators=40, learning_rate=0.8, early_stopping_rounds=2, position_bias="estimate",
              eval_metric="dcg@10")
    local = rankkit.LambdaMARTRanker(**kw).fit(train, y_train, eval_set=[(valid.drop(columns="position"), y_valid)],
                                               eval_position=[valid["position"]])
    assert local.best_iteration_ + 1 < local.n_iterations_  # cut back
    dvalid = dd.from_pandas(valid, npartitions=2, sort=False)
    model = DaskLambdaMARTRanker(**kw, client=client).fit(
        dd.from_pandas(train, npartitions=2, sort=False), dd.from_pandas(pd.Series(y_train), npartitions=2),
        eval_set=[(dvalid.drop(columns="position"), dd.from_pandas(pd.Series(y_valid), npartitions=2))],
        eval_position=[dvalid["position"]])
    assert model.best_iteration_ == local.best_iteration_
    np.testing.assert_allclose(model.position_bias_, local.position_bias_, rtol=1e-12, atol=0)
    assert model.best_score_ == pytest.approx(local.best_score_, rel=1e-9)


def test_estimate_on_dask_with_an_empty_worker(client):
    """One partition for two workers: the worker without rows still joins
    every all-reduction, and the estimate is the in-memory one."""
    frame, clicks = _click_frame(n_sessions=300)
    kw = dict(CLICK_KW, position_bias="estimate")
    local = rankkit.LambdaMARTRanker(**kw).fit(frame, clicks)
    model = DaskLambdaMARTRanker(**kw, client=client).fit(dd.from_pandas(frame, npartitions=1),
                                                          dd.from_pandas(pd.Series(clicks), npartitions=1))
    np.testing.assert_allclose(model.position_bias_, local.position_bias_, rtol=1e-12, atol=0)
    np.testing.assert_allclose(model.to_local().predict(frame), local.predict(frame), rtol=0, atol=1e-6)
    # predict drops the position column, as in memory
    scores = model.predict(dd.from_pandas(frame, npartitions=2)).compute()
    np.testing.assert_array_equal(scores.to_numpy(), model.to_local().predict(frame))


@pytest.mark.parametrize("name", ["LambdaMARTRanker", "QueryRMSERanker"])
def test_dask_eval_position_with_known_propensities(client, name):
    """Click eval sets and score(position=) as in memory, for an exp-gain
    objective and for QueryRMSE, whose debiased labels are in linear gain."""
    frame, clicks = _click_frame(n_sessions=300)
    train, valid = frame[frame.qid < 220], frame[frame.qid >= 220]
    y_train, y_valid = clicks[(frame.qid < 220).to_numpy()], clicks[(frame.qid >= 220).to_numpy()]
    kw = dict(CLICK_KW, position_bias="known", propensities=lambda k: 1.0 / k, eval_metric="dcg@10",
              early_stopping_rounds=2)
    local = getattr(rankkit, name)(**kw).fit(train, y_train, eval_set=[(valid.drop(columns="position"), y_valid)],
                                             eval_position=[valid["position"].to_numpy()])
    dvalid = dd.from_pandas(valid, npartitions=2, sort=False)
    model = getattr(rankkit.dask, f"Dask{name}")(**kw, client=client).fit(
        dd.from_pandas(train, npartitions=2, sort=False), dd.from_pandas(pd.Series(y_train), npartitions=2, sort=False),
        eval_set=[(dvalid.drop(columns="position"), dd.from_pandas(pd.Series(y_valid), npartitions=2, sort=False))],
        eval_position=[dvalid["position"]])
    # Known propensities debias on the partitions, and the DMatrix keeps labels as float32.
    np.testing.assert_allclose(model.evals_result_["validation_0"]["dcg@10"],
                               local.evals_result_["validation_0"]["dcg@10"], rtol=1e-7)
    assert model.best_iteration_ == local.best_iteration_
    want = local.score(valid, y_valid)  # the position column: debiased
    assert want != pytest.approx(local.score(valid.drop(columns="position"), y_valid))
    assert model.score(dvalid, dd.from_pandas(pd.Series(y_valid), npartitions=2, sort=False)) == \
        pytest.approx(want, rel=1e-6)


def test_click_data_errors_on_dask(client):
    X, y, qid = make_ranking(10, n_features=3, random_state=0)
    frame = dd.from_pandas(pd.DataFrame(X).rename(columns=str).assign(qid=qid + 1000, position=1), npartitions=2)
    dy = dd.from_pandas(pd.Series(y), npartitions=2)
    # The caller's query id, as in memory (a worker's group number before), and the eval set's name.
    with pytest.raises(ValueError, match=r"share position 1 \(qid 10\d\d\)"):
        DaskLambdaMARTRanker(position_bias="estimate", propensity_estimator="pairwise", client=client,
                             n_estimators=2).fit(frame, dy)
    clicks, click_labels = _click_frame(n_sessions=50)
    click_parts = dd.from_pandas(clicks, npartitions=2), dd.from_pandas(pd.Series(click_labels), npartitions=2)
    shown_at_top = dd.from_pandas(clicks.assign(position=1, qid=clicks["qid"] + 1000), npartitions=2)
    with pytest.raises(ValueError, match=r"share eval_position\[0\] 1 \(qid 10\d\d\)"):
        DaskLambdaMARTRanker(position_bias="known", propensities=lambda k: 1.0 / k, client=client,
                             n_estimators=2).fit(*click_parts, eval_set=[(shown_at_top, click_parts[1])])
    counts = dd.from_pandas(pd.Series(np.full(len(clicks), 2.0)), npartitions=2)
    with pytest.raises(ValueError, match='propensity_estimator="em" needs 0/1 clicks'):
        DaskLambdaMARTRanker(position_bias="estimate", client=client, n_estimators=2).fit(
            dd.from_pandas(clicks, npartitions=2), counts)
    plain = dd.from_pandas(pd.DataFrame(X).rename(columns=str).assign(qid=qid), npartitions=2)
    with pytest.raises(ValueError, match=r"eval_position\[0\]= was given but position_bias=None"):
        DaskLambdaMARTRanker(client=client, n_estimators=2).fit(plain, dy, eval_set=[(plain, dy)],
                                                                eval_position=[dy])
    with pytest.raises(ValueError, match="eval_position has 2 entries but eval_set has 1"):
        DaskLambdaMARTRanker(client=client, n_estimators=2).fit(plain, dy, eval_set=[(plain, dy)],
                                                                eval_position=[None, None])
    with pytest.raises(ValueError, match="share position 1"):
        DaskLambdaMARTRanker(position_bias="known", propensities=[1.0], client=client, n_estimators=2).fit(frame, dy)
    with pytest.raises(ValueError, match="needs the rank"):
        DaskLambdaMARTRanker(position_bias="known", propensities=[1.0], client=client).fit(
            frame.drop(columns="position"), dy)
    with pytest.raises(ValueError, match=r"metric='mrr' reads a label only as relevant or not"):
        DaskLambdaMARTRanker(metric="mrr", position_bias="known", propensities=[1.0], client=client).fit(frame, dy)
    # A document id as the position: the in-memory error, not a table of 10^12 propensities (7 TiB).
    for mode in ("known", "estimate"):
        kw = {"propensities": lambda k: 1.0 / k} if mode == "known" else {}
        with pytest.raises(ValueError, match=r"position holds 1000000000001, deeper than rankkit takes"):
            DaskLambdaMARTRanker(position_bias=mode, client=client, n_estimators=2, **kw).fit(
                frame.assign(position=frame["position"] + 10**12), dy)


def test_scorer_that_excludes_queries_is_the_exact_global_mean(client, data):
    """make_ranking_scorer(..., empty="exclude") as eval_metric: every worker
    adds the sum and number of the queries it keeps, so the value is the mean
    over the kept queries (weighing a worker's mean by all its queries was
    not), a worker or partition whose queries are all excluded adds nothing
    (its nan was an error), and an eval set with no kept query records nan."""
    from rankkit.metrics import make_ranking_scorer

    test, y_test = data["test"], data["y_test"].astype(float)
    qids = test["qid"].unique()
    half = np.where(test["qid"].isin(qids[: len(qids) // 2]), 0.0, y_test)  # half the queries excluded
    one = np.where(test["qid"] == qids[0], y_test, 0.0)  # only one query kept
    one[np.flatnonzero(test["qid"] == qids[0])[0]] = 2.0
    sets = [np.zeros_like(y_test), half, one]
    X_eval = dd.from_pandas(test, npartitions=3, sort=False)
    model = DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 4}, client=client,
                                 eval_metric=make_ranking_scorer("ndcg@5", empty="exclude"))
    model.fit(data["X"], data["dy"],
              eval_set=[(X_eval, dd.from_pandas(pd.Series(y), npartitions=3, sort=False)) for y in sets])
    history = model.evals_result_
    pred = model.to_local().predict(test)
    assert np.isnan(history["validation_0"]["ndcg@5"]).all()
    for name, y in [("validation_1", half), ("validation_2", one)]:
        assert history[name]["ndcg@5"][-1] == pytest.approx(
            ndcg_score(y, pred, qid=test["qid"], k=5, empty="exclude"), rel=1e-12, abs=0)
        # score: a sum and a count per laid-out partition, most of which hold no kept query for `one`.
        assert model.score(X_eval, dd.from_pandas(pd.Series(y), npartitions=3, sort=False)) == pytest.approx(
            ndcg_score(y, pred, qid=test["qid"], k=5, empty="exclude"), rel=1e-12, abs=0)


def test_a_plain_function_that_excludes_every_query_of_a_part_adds_nothing(client, data):
    """A plain function wrapping a metric with empty="exclude" returns nan on
    a worker or partition whose queries it all excludes: that part adds no
    query (its nan failed the fit and score, and the other worker then lost
    XGBoost's all-reduce). With one kept query the mean is that query's."""
    test, y_test = data["test"], data["y_test"].astype(float)
    one = np.where(test["qid"] == test["qid"].iloc[0], y_test, 0.0)
    one[0] = 2.0

    def ndcg5x(y_true, y_score, qid):
        return ndcg_score(y_true, y_score, qid=qid, k=5, empty="exclude")

    X_eval = dd.from_pandas(test, npartitions=3, sort=False)
    y_eval = dd.from_pandas(pd.Series(one), npartitions=3, sort=False)
    model = DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 4}, client=client, eval_metric=ndcg5x)
    model.fit(data["X"], data["dy"], eval_set=[(X_eval, y_eval)])
    want = ndcg_score(one, model.to_local().predict(test), qid=test["qid"], k=5, empty="exclude")
    assert model.evals_result_["validation_0"]["ndcg5x"][-1] == pytest.approx(want, rel=1e-12)
    assert model.score(X_eval, y_eval) == pytest.approx(want, rel=1e-12)
    # nan on every part is the in-memory error, not a silent nan.
    zeros = dd.from_pandas(pd.Series(np.zeros_like(one)), npartitions=3, sort=False)
    with pytest.raises(ValueError, match="returned nan on every part"):
        model.score(X_eval, zeros)
    with pytest.raises(ValueError, match="returned nan on every part"):
        model.fit(data["X"], data["dy"], eval_set=[(X_eval, zeros)])


def test_a_refused_refit_leaves_the_model_as_it_was(client):
    """A second fit refused for its data keeps the first fit's model and
    fitted attributes: the propensities it trained with stay (the refused fit
    had reset position_bias_ to None before its labels were refused)."""
    clicks, y = _click_frame(n_sessions=100)
    frame = dd.from_pandas(clicks, npartitions=2, sort=False)
    model = DaskLambdaMARTRanker(**{**CLICK_KW, "n_estimators": 2}, position_bias="known",
                                 propensities=lambda k: 1.0 / k, client=client)
    model.fit(frame, dd.from_pandas(pd.Series(y), npartitions=2, sort=False))
    state = dict(vars(model))
    before = model.predict(frame).compute()
    with pytest.raises(ValueError, match="negative"):
        model.fit(frame, dd.from_pandas(pd.Series(y - 1), npartitions=2, sort=False))
    assert vars(model).keys() == state.keys() and all(vars(model)[k] is v for k, v in state.items())
    assert model.position_bias_ is state["position_bias_"] is not None
    np.testing.assert_array_equal(model.predict(frame).compute(), before)


def test_positions_in_memory_are_refused_like_the_other_columns(client):
    """position= must be a dask collection as y and qid= are: a numpy array
    got "'numpy.int64' object has no attribute 'compute'" before."""
    frame, clicks = _click_frame(n_sessions=50)
    parts = dd.from_pandas(frame.drop(columns="position"), npartitions=2, sort=False)
    dy = dd.from_pandas(pd.Series(clicks), npartitions=2, sort=False)
    for mode in ("known", "estimate"):
        model = DaskLambdaMARTRanker(**{**CLICK_KW, "n_estimators": 2}, position_bias=mode,
                                     propensities=(lambda k: 1.0 / k) if mode == "known" else None, client=client)
        with pytest.raises(TypeError, match="position must be a dask collection partitioned like X .*got ndarray"):
            model.fit(parts, dy, position=frame["position"].to_numpy())


@pytest.mark.parametrize("backend_params, shrink, message", [
    # Refused in memory; on Dask it trained all the trees, then failed on folding them.
    ({"num_parallel_tree": 2}, 0.1, r"num_parallel_tree.*cannot be combined with SGLB shrinkage"),
    # XGBoost's internal errors from the workers before: a DaskQuantileDMatrix is for "hist" only.
    ({"tree_method": "approx"}, 0.0, r"tree_method': 'approx'\}: rankkit.dask trains with tree_method='hist' only"),
    ({"tree_method": "exact"}, 0.0, r"'tree_method': XGBoost's exact greedy builder reads no bins"),
])
def test_backend_params_dask_cannot_train_are_refused_before_the_layout(client, data, monkeypatch, backend_params,
                                                                        shrink, message):
    model = DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 3}, model_shrink_rate=shrink,
                                 backend_params=backend_params, client=client)
    laid_out = []
    monkeypatch.setattr(DaskLambdaMARTRanker, "_lay_out", lambda *a, **k: laid_out.append(1))
    with pytest.raises(ValueError, match=message):
        model.fit(data["X"], data["dy"])
    assert not laid_out  # refused before any row moved (the shuffle is the costly part)


@pytest.mark.parametrize("params, fit_params, message", [
    ({"eval_metric": "ndgc@10"}, {}, r"ndgc"),
    ({"metric": "ndcg@10", "relevance_threshold": 2.0}, {}, r"relevance_threshold"),
    # What the monitor follows: failed after the shuffle before.
    ({}, {"verbose": "yes"}, r"verbose must be a bool or a non-negative int"),
    ({"early_stopping_rounds": 0}, {}, r"'early_stopping_rounds' parameter of DaskLambdaMARTRanker must be an int"),
    ({"early_stopping_rounds": 2}, {}, r"early_stopping_rounds needs an eval_set other than the training data"),
    ({"early_stopping_rounds": 2}, {"eval_set": "training"}, r"needs an eval_set other than the training data"),
])
def test_settings_are_refused_before_the_layout(client, data, monkeypatch, params, fit_params, message):
    model = DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 3, **params}, client=client)
    laid_out = []
    monkeypatch.setattr(DaskLambdaMARTRanker, "_lay_out", lambda *a, **k: laid_out.append(1))
    if fit_params.get("eval_set") == "training":
        fit_params = {"eval_set": [(data["X"], data["dy"])]}
    with pytest.raises(ValueError, match=message):
        model.fit(data["X"], data["dy"], **fit_params)
    assert not laid_out


def test_score_labels_above_the_err_scale_say_how_to_refit(client):
    """score with labels above the largest training label of an ERR ranker
    (err_max_label=None): the in-memory message, not the metric's from a
    worker, which named an err_max_label the user never passed."""
    X, y, qid = make_ranking(40, n_features=4, max_docs=10, random_state=5)
    frame = pd.DataFrame(np.round(X * 2), columns=[f"x{j}" for j in range(4)]).assign(qid=qid)
    kw = dict(SMALL, n_estimators=3, metric="err@10", err_mapping="chapelle", eval_metric="err@10")
    parts = dd.from_pandas(frame, npartitions=2, sort=False)
    model = DaskLambdaMARTRanker(**kw, client=client).fit(
        parts, dd.from_pandas(pd.Series(np.minimum(y, 2)), npartitions=2, sort=False))
    local = rankkit.LambdaMARTRanker(**kw).fit(frame, np.minimum(y, 2))
    assert y.max() > 2
    with pytest.raises(ValueError, match=r"largest training label, 2 \(err_max_label=None\).*"
                                         rf"err_max_label={y.max():g} or more") as error:
        model.score(parts, dd.from_pandas(pd.Series(y), npartitions=2, sort=False))
    with pytest.raises(ValueError) as expected:
        local.score(frame, y)
    assert str(error.value) == str(expected.value)


def test_booster_carries_the_feature_names(client, data):
    """booster_.feature_names are the DataFrame's columns, as in memory (they
    were None: the booster trained on the laid-out f0, f1, ... columns had
    its names dropped), so booster_.get_score() names them too."""
    kw = dict(SMALL, n_estimators=3)
    model = DaskLambdaMARTRanker(**kw, client=client).fit(data["X"], data["dy"])
    local = rankkit.LambdaMARTRanker(**kw).fit(data["local"], data["y"])
    assert model.booster_.feature_names == local.booster_.feature_names == [f"x{j}" for j in range(12)]
    assert set(model.booster_.get_score()) <= set(local.booster_.feature_names)
    np.testing.assert_array_equal(model.to_local().predict(data["test"]),
                                  model.predict(dd.from_pandas(data["test"], npartitions=2)).compute().to_numpy())


def test_score_on_data_in_memory_points_to_to_local(client, data):
    """A fitted Dask ranker's score on a pandas DataFrame names to_local(), as
    predict does (it said "use the in-memory ranker", as if to refit)."""
    model = DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 2}, client=client).fit(data["X"], data["dy"])
    with pytest.raises(TypeError, match=r"score takes a dask DataFrame or array, got DataFrame; .*to_local\(\)\.score"):
        model.score(data["test"], data["y_test"])
    assert model.to_local().score(data["test"], data["y_test"]) > 0


def test_negative_n_jobs_counts_a_workers_threads(client, data):
    """n_jobs=-1 is every thread of a worker (one each here), not every core
    of the driver: XGBoost's nthread and rankkit's kernels on the workers get
    the worker's count, and the model is the one of n_jobs=1."""
    fits = {n: DaskLambdaMARTRanker(**{**SMALL, "n_estimators": 5, "n_jobs": n}, client=client)
            .fit(data["X"], data["dy"]) for n in (1, -1, -2)}
    for n, model in fits.items():
        assert model.backend_.params_["nthread"] == 1, n
    expected = fits[1].to_local().predict(data["test"].drop(columns="qid"))
    np.testing.assert_array_equal(fits[-1].to_local().predict(data["test"].drop(columns="qid")), expected)


def test_gradients_beyond_float32_are_an_error_on_every_worker(client, data):
    """XGBoost takes the gradients in float32: StochasticRank with sigma=1e-40
    has gradients near 1e39 at scores 0, which used to become infinite there
    and leave a constant model. Every worker raises together, and the
    cluster trains again afterwards (no worker is left in an all-reduction)."""
    with pytest.raises(ValueError, match=r"iteration 0 exceed float32's range.*rankkit.dask trains on XGBoost only"):
        DaskStochasticRankRanker(**{**SMALL, "n_estimators": 3}, sigma=1e-40, client=client).fit(data["X"], data["dy"])
    model = DaskStochasticRankRanker(**{**SMALL, "n_estimators": 3}, client=client).fit(data["X"], data["dy"])
    assert model.backend_.n_iterations_ == 3
