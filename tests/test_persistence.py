"""save_model / load_model: the rankkit-model file (rankkit/_persistence.py) on every backend.

A loaded ranker must be the saved one: same class, same parameters (a
``Ranker``'s objective included), same fitted attributes and predictions
equal bit for bit; the engines' models inside stay servable by plain
XGBoost and LightGBM; bad files get errors that say what they are.
"""

import io
import json
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

import rankkit
from rankkit import LambdaMARTRanker, QueryRMSERanker, Ranker, StochasticRankRanker, load_model
from rankkit._backends import BACKENDS, get_backend
from rankkit._persistence import FORMAT_VERSION
from rankkit.datasets import make_ranking
from rankkit.objectives import QueryRMSE, RankingObjective, YetiRank

from ._backends import BACKENDS_UNDER_TEST, installed

BOOST = {"n_estimators": 12, "max_depth": 3, "learning_rate": 0.3, "n_jobs": 1, "min_child_weight": 1e-3}
COLUMNS = ["bm25", "pagerank", "clicks", "age", "length"]


@pytest.fixture(scope="module")
def frames():
    """Train and test DataFrames with the query column "query" placed between features."""
    X, y, qid = make_ranking(n_queries=70, n_features=5, max_docs=20, random_state=4)
    train = qid < 50

    def frame(rows):
        df = pd.DataFrame(X[rows], columns=COLUMNS)
        df.insert(2, "query", qid[rows])
        return df

    return frame(train), y[train].astype(np.float64), frame(~train), y[~train].astype(np.float64)


# The rankers under test: SGLB shrinkage (folded leaves, unfolded copy), a
# generic Ranker with an objective instance and a RandomState, early stopping.
def _rankers(backend):
    return {
        "lambdamart_sglb": LambdaMARTRanker(metric="ndcg@5", model_shrink_rate=0.2, backend=backend,
                                            qid_col="query", random_state=0, **BOOST),
        "ranker_objective": Ranker(objective=YetiRank(metric="mrr", n_permutations=3), backend=backend,
                                   qid_col="query", random_state=np.random.RandomState(5), **BOOST),
        "stochasticrank_langevin": StochasticRankRanker(metric="ndcg", k=5, langevin=True, backend=backend,
                                                        qid_col="query", random_state=2, **BOOST),
    }


def _same_value(a, b):
    if isinstance(a, RankingObjective):
        return type(a) is type(b) and _same_params(a._get_params(), b._get_params())
    if isinstance(a, np.random.RandomState):
        sa, sb = a.get_state(), b.get_state()
        return sa[0] == sb[0] and np.array_equal(sa[1], sb[1]) and sa[2:] == sb[2:]
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _same_params(a, b):
    return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
@pytest.mark.parametrize("name", ["lambdamart_sglb", "ranker_objective", "stochasticrank_langevin"])
def test_loaded_ranker_is_the_saved_one(frames, backend, name, tmp_path):
    train, y, test, yt = frames
    ranker = _rankers(backend)[name]
    params_before = ranker.get_params(deep=False)
    ranker.fit(train, y, eval_set=[(test, yt)], early_stopping_rounds=4)
    path = tmp_path / "model.rkm"
    ranker.save_model(path)
    loaded = load_model(path)

    assert type(loaded) is type(ranker)
    # Parameters: as given to the constructor (a RandomState as it was when saved).
    assert _same_params(loaded.get_params(deep=False), ranker.get_params(deep=False))
    assert _same_params(loaded.get_params(deep=True), ranker.get_params(deep=True))
    assert set(params_before) == set(loaded.get_params(deep=False))
    # Fitted attributes.
    assert list(loaded.feature_names_in_) == COLUMNS and loaded.feature_names_in_.dtype == object
    for attr in ["n_features_in_", "best_iteration_", "best_score_", "evals_result_", "n_iterations_",
                 "categories_"]:
        assert _same_value(getattr(loaded, attr), getattr(ranker, attr)), attr
    assert type(loaded.objective_) is type(ranker.objective_)
    assert loaded.backend_.name == backend
    # Predictions bit for bit, through the query column (dropped) and without it.
    np.testing.assert_array_equal(loaded.predict(test), ranker.predict(test))
    np.testing.assert_array_equal(loaded.predict(test.drop(columns="query")), ranker.predict(test))
    assert loaded.score(test, yt) == ranker.score(test, yt)
    np.testing.assert_array_equal(loaded.feature_importances_, ranker.feature_importances_)
    # Staged predictions (early stopping, SGLB re-folding) too.
    X = test.drop(columns="query").to_numpy()
    kept = ranker.backend_.n_iterations_  # early stopping cut the model back to its best iteration
    for n in (1, max(1, kept // 2), kept):
        np.testing.assert_array_equal(loaded.backend_.predict(X, n), ranker.backend_.predict(X, n))
    # And the loaded ranker pickles and saves again to the same bytes.
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(loaded)).predict(test), ranker.predict(test))
    again = tmp_path / "again.rkm"
    loaded.save_model(again)
    assert again.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_file_objects_and_deterministic_bytes(frames, backend):
    train, y, test, _ = frames
    ranker = QueryRMSERanker(backend=backend, qid_col="query", random_state=0, **BOOST).fit(train, y)
    first, second = io.BytesIO(), io.BytesIO()
    ranker.save_model(first)
    ranker.save_model(second)
    assert first.getvalue() == second.getvalue()  # no timestamps: the same model, the same bytes
    first.seek(0)
    np.testing.assert_array_equal(load_model(first).predict(test), ranker.predict(test))


def _members(path):
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.mark.skipif(not installed("xgboost"), reason="xgboost not installed")
def test_xgboost_model_served_by_plain_xgboost(frames, tmp_path):
    import xgboost

    train, y, test, _ = frames
    ranker = _rankers("xgboost")["lambdamart_sglb"].fit(train, y)
    assert np.any(ranker.backend_.shrink_factors_ != 1.0)  # the SGLB factors to fold
    ranker.save_model(tmp_path / "m.rkm")
    members = _members(tmp_path / "m.rkm")
    header = json.loads(members["rankkit.json"])
    model_file = tmp_path / header["serving"]["model_file"]
    model_file.write_bytes(members[header["serving"]["model_file"]])
    served = xgboost.Booster(model_file=str(model_file))
    X = test[header["serving"]["feature_names"]]  # the query column dropped, columns in order
    assert served.feature_names == COLUMNS
    np.testing.assert_array_equal(served.predict(xgboost.DMatrix(X), output_margin=True), ranker.predict(test))
    np.testing.assert_array_equal(served.inplace_predict(X.to_numpy()), ranker.predict(test))
    # The unfolded trees predict something else: the folding is what makes them equal.
    unfolded = xgboost.Booster(model_file=bytearray(members["booster_unfolded.ubj"]))
    assert np.max(np.abs(unfolded.inplace_predict(X.to_numpy()) - ranker.predict(test))) > 1e-3


@pytest.mark.skipif(not installed("lightgbm"), reason="lightgbm not installed")
def test_lightgbm_model_served_by_plain_lightgbm(frames, tmp_path):
    import lightgbm

    train, y, test, _ = frames
    ranker = _rankers("lightgbm")["lambdamart_sglb"].fit(train, y)
    assert np.any(ranker.backend_.shrink_factors_ != 1.0)
    ranker.save_model(tmp_path / "m.rkm")
    members = _members(tmp_path / "m.rkm")
    header = json.loads(members["rankkit.json"])
    served = lightgbm.Booster(model_str=members[header["serving"]["model_file"]].decode())
    assert served.feature_name() == COLUMNS
    X = test[header["serving"]["feature_names"]].to_numpy()
    np.testing.assert_array_equal(served.predict(X, raw_score=True), ranker.predict(test))
    unfolded = lightgbm.Booster(model_str=members["model_unfolded.txt"].decode())
    assert np.max(np.abs(unfolded.predict(X, raw_score=True) - ranker.predict(test))) > 1e-3


def _documented_prediction(nodes, ptr, scales, X):
    """The numba model file's formula (docs/persistence.md), walked by hand:
    ``scales[-1] * sum of the trees' leaves``."""
    total = np.zeros(len(X))
    for t in range(len(scales)):
        tree = nodes[ptr[t]:ptr[t + 1]]
        for i, x in enumerate(X):
            node = 0
            while tree[node]["left"] >= 0:
                v = x[tree[node]["feature"]]
                left = tree[node]["missing_left"] if np.isnan(v) else v <= tree[node]["threshold"]
                node = tree[node]["left"] if left else tree[node]["right"]
            total[i] += tree[node]["value"]
    return scales[-1] * total


def test_numba_model_is_numpy_arrays_without_pickle(frames, tmp_path):
    from rankkit._backends._gbm.tree import NODE_DTYPE

    train, y, test, _ = frames
    ranker = _rankers("numba")["lambdamart_sglb"].fit(train, y)
    ranker.save_model(tmp_path / "m.rkm")
    with np.load(io.BytesIO(_members(tmp_path / "m.rkm")["trees.npz"]), allow_pickle=False) as npz:
        nodes, ptr, scales = npz["nodes"], npz["tree_ptr"], npz["scales"]
    assert nodes.dtype == NODE_DTYPE and len(ptr) == len(scales) + 1 == ranker.n_iterations_ + 1
    # The documented formula: scales[n - 1] * (sum of the trees' leaves).
    np.testing.assert_allclose(_documented_prediction(nodes, ptr, scales, test.drop(columns="query").to_numpy()),
                               ranker.predict(test), rtol=1e-12, atol=1e-12)


def test_numba_model_with_folded_sglb_scale_keeps_its_staged_predictions(frames, tmp_path):
    """Beyond 300 decades of SGLB shrinkage (10 a tree here) the running scale
    is folded into the trees several times: the file's ``nodes`` and
    ``scales`` still give the whole model by the documented formula, and the
    early models (NaN before: early trees underflowed to 0 and their scales
    to inf) survive the round trip bit for bit. A model without folds keeps
    the three documented arrays only."""
    train, y, test, _ = frames
    ranker = QueryRMSERanker(model_shrink_rate=1 - 1e-10, learning_rate=1.0, n_estimators=60, max_depth=3,
                             backend="numba", qid_col="query", random_state=0, n_jobs=1).fit(train, y)
    assert len(ranker.booster_.folds) >= 3
    ranker.save_model(tmp_path / "m.rkm")
    loaded = load_model(tmp_path / "m.rkm")
    for end in (1, 2, 20, 60):
        staged = ranker.predict(test, iteration_range=(0, end))
        assert np.all(np.isfinite(staged)), end
        np.testing.assert_array_equal(loaded.predict(test, iteration_range=(0, end)), staged)
    np.testing.assert_array_equal(loaded.predict(test, iteration_range=(1, 2)),
                                  ranker.predict(test, iteration_range=(1, 2)))
    with np.load(io.BytesIO(_members(tmp_path / "m.rkm")["trees.npz"]), allow_pickle=False) as npz:
        nodes, ptr, scales = npz["nodes"], npz["tree_ptr"], npz["scales"]
    np.testing.assert_allclose(_documented_prediction(nodes, ptr, scales, test.drop(columns="query").to_numpy()),
                               ranker.predict(test), rtol=1e-12, atol=1e-12)
    plain = QueryRMSERanker(backend="numba", qid_col="query", random_state=0, **BOOST).fit(train, y)
    plain.save_model(tmp_path / "plain.rkm")
    with np.load(io.BytesIO(_members(tmp_path / "plain.rkm")["trees.npz"]), allow_pickle=False) as npz:
        assert sorted(npz.files) == ["nodes", "scales", "tree_ptr"]


def test_loading_a_numba_model_never_imports_the_engines(frames, tmp_path):
    train, y, _, _ = frames
    _rankers("numba")["lambdamart_sglb"].fit(train, y).save_model(tmp_path / "m.rkm")
    code = (
        "import sys; sys.modules['xgboost'] = None; sys.modules['lightgbm'] = None\n"
        "import numpy as np, rankkit\n"
        f"m = rankkit.load_model({str(tmp_path / 'm.rkm')!r})\n"
        "print(m.predict(np.zeros((3, 5))).shape)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(3,)"


# -- feature names in the engines' models -------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_engine_models_carry_the_column_names(frames, backend):
    train, y, test, _ = frames
    from_frame = QueryRMSERanker(backend=backend, qid_col="query", random_state=0, **BOOST).fit(train, y)
    X = train.drop(columns="query").to_numpy()
    from_array = QueryRMSERanker(backend=backend, random_state=0, **BOOST).fit(X, y, qid=train["query"])
    if backend == "xgboost":
        assert from_frame.booster_.feature_names == COLUMNS
        assert from_array.booster_.feature_names is None
    elif backend == "lightgbm":
        assert from_frame.booster_.feature_name() == COLUMNS
        assert from_array.booster_.feature_name() == [f"Column_{i}" for i in range(5)]
    else:
        assert list(from_frame.backend_.feature_names_in_) == COLUMNS
    # Same model, importances indexed by column either way.
    np.testing.assert_array_equal(from_frame.predict(test), from_array.predict(test.drop(columns="query").to_numpy()))
    np.testing.assert_array_equal(from_frame.feature_importances_, from_array.feature_importances_)
    assert from_frame.feature_importances_.shape == (5,) and from_frame.feature_importances_.sum() > 0


@pytest.mark.parametrize("backend", [b for b in ("xgboost", "lightgbm") if installed(b)])
def test_names_the_engine_refuses_fall_back_to_positions(frames, backend):
    train, y, test, _ = frames
    bad = {"bm25": "bm25[title]", "age": "a:b<c"}
    ranker = QueryRMSERanker(backend=backend, qid_col="query", random_state=0, **BOOST)
    with pytest.warns(UserWarning, match="cannot store feature names.*feature_names_in_"):
        ranker.fit(train.rename(columns=bad), y)
    assert list(ranker.feature_names_in_) == [bad.get(c, c) for c in COLUMNS]
    plain = QueryRMSERanker(backend=backend, qid_col="query", random_state=0, **BOOST).fit(train, y)
    np.testing.assert_array_equal(ranker.predict(test.rename(columns=bad)), plain.predict(test))


@pytest.mark.skipif(not installed("lightgbm"), reason="lightgbm not installed")
def test_names_lightgbm_would_make_equal_fall_back_to_positions(frames):
    """LightGBM stores spaces as "_": "bm25 title" and "bm25_title" would be
    one name to it, which it refuses as a duplicate."""
    train, y, test, _ = frames
    clash = {"bm25": "bm25 title", "age": "bm25_title"}
    ranker = QueryRMSERanker(backend="lightgbm", qid_col="query", random_state=0, **BOOST)
    with pytest.warns(UserWarning, match="the same once spaces become '_'"):
        ranker.fit(train.rename(columns=clash), y)
    assert ranker.booster_.feature_name() == [f"Column_{i}" for i in range(5)]
    plain = QueryRMSERanker(backend="lightgbm", qid_col="query", random_state=0, **BOOST).fit(train, y)
    np.testing.assert_array_equal(ranker.predict(test.rename(columns=clash)), plain.predict(test))


@pytest.mark.skipif(not installed("lightgbm"), reason="lightgbm not installed")
@pytest.mark.parametrize("name", ["", "bm25\ntitle", "bm25\rtitle", "bm25\x00title"])
def test_names_that_break_lightgbms_model_text_fall_back_to_positions(frames, name):
    """An empty name or a line break passes LightGBM's Dataset but breaks the
    model text it writes (the fit failed reading its own model back); a NUL
    cuts the name short."""
    train, y, test, _ = frames
    ranker = QueryRMSERanker(backend="lightgbm", qid_col="query", random_state=0, **BOOST)
    with pytest.warns(UserWarning, match="cannot store feature names that are empty or contain"):
        ranker.fit(train.rename(columns={"bm25": name}), y)
    assert ranker.booster_.feature_name() == [f"Column_{i}" for i in range(5)]
    plain = QueryRMSERanker(backend="lightgbm", qid_col="query", random_state=0, **BOOST).fit(train, y)
    np.testing.assert_array_equal(ranker.predict(test.rename(columns={"bm25": name})), plain.predict(test))


@pytest.mark.parametrize("backend", [b for b in ("xgboost", "lightgbm") if installed(b)])
def test_forbidden_name_characters_are_the_engines(backend):
    """The characters a backend keeps out of feature names are exactly those its engine refuses."""
    import string

    cls = get_backend(backend)

    def engine_accepts(name):
        X = np.random.default_rng(0).normal(size=(20, 2))
        try:
            if backend == "xgboost":
                import xgboost

                xgboost.DMatrix(X, feature_names=[name, "other"])
            else:
                import lightgbm

                lightgbm.Dataset(X, feature_name=[name, "other"], params={"verbosity": -1}).construct()
        except Exception:  # each engine's own exception type
            return False
        return True

    for char in string.punctuation:
        assert engine_accepts(f"a{char}b") == (char not in cls._forbidden_name_chars), char


# -- bad files ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(frames, tmp_path_factory):
    train, y, _, _ = frames
    path = tmp_path_factory.mktemp("saved") / "m.rkm"
    QueryRMSERanker(backend="numba", qid_col="query", random_state=0, **BOOST).fit(train, y).save_model(path)
    return path


def _rewrite_header(path, out, change):
    members = _members(path)
    header = json.loads(members["rankkit.json"])
    change(header)
    members["rankkit.json"] = json.dumps(header).encode()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out


def test_newer_format_version_is_refused_with_both_versions(saved, tmp_path):
    path = _rewrite_header(saved, tmp_path / "new.rkm",
                           lambda h: h.update(version=FORMAT_VERSION + 1, rankkit_version="9.0"))
    with pytest.raises(ValueError, match=(rf"format version {FORMAT_VERSION + 1}, written by rankkit 9\.0.*"
                                          rf"reads format versions up to {FORMAT_VERSION}\. Upgrade rankkit")):
        load_model(path)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_a_loaded_ranker_scores_with_the_objective_it_was_trained_with(backend, frames, tmp_path):
    """``score`` follows the objective as trained: ERR's scale pinned to the
    largest training label, and the metric settings of fit even after a
    ``set_params``. Both survive saving (they were rebuilt from the
    parameters: another ERR scale, another gain). A version-1 file, which
    lacks ``objective_``, still loads."""
    train, y, test, yt = frames
    test_labels = np.minimum(yt, 2)  # below the top training label
    err = LambdaMARTRanker(metric="err@10", err_mapping="chapelle", eval_metric="err@10", backend=backend,
                           qid_col="query", random_state=0, **BOOST).fit(train, y)
    assert err.objective_.err_max_label == y.max() > test_labels.max()
    path = tmp_path / "err.rkm"
    err.save_model(path)
    assert load_model(path).score(test, test_labels) == err.score(test, test_labels)
    ndcg = LambdaMARTRanker(backend=backend, qid_col="query", random_state=0, **BOOST).fit(train, y)
    before = ndcg.score(test, yt)
    ndcg.set_params(gain="linear")
    ndcg.save_model(path)
    loaded = load_model(path)
    assert loaded.gain == "linear" and loaded.score(test, yt) == ndcg.score(test, yt) == before
    old = _rewrite_header(path, tmp_path / "v1.rkm", lambda h: (h.update(version=1), h["fitted"].pop("objective_")))
    assert load_model(old).objective_.gain == "linear"  # rebuilt from the parameters, as version 1 did

    # A version-1 generic Ranker whose objective held a seed (ignored in training; refused at fit
    # since): it loads, its objective rebuilt as before.
    from rankkit import Ranker
    from rankkit.objectives import YetiRank

    Ranker(YetiRank(), backend=backend, qid_col="query", random_state=0, **BOOST).fit(train, y).save_model(path)

    def version_1_with_seed(header):
        header.update(version=1)
        header["fitted"].pop("objective_")
        header["params"]["objective"]["params"]["random_state"] = 0

    seeded = load_model(_rewrite_header(path, tmp_path / "v1seed.rkm", version_1_with_seed))
    assert seeded.objective.random_state == 0 and seeded.objective_.random_state == 0
    np.testing.assert_array_equal(seeded.predict(test), load_model(path).predict(test))


def test_parameters_of_a_newer_rankkit_are_refused(saved, tmp_path):
    path = _rewrite_header(saved, tmp_path / "p.rkm", lambda h: h["params"].update(shiny_new_option=3))
    with pytest.raises(ValueError, match=r"\['shiny_new_option'\].*upgrade rankkit"):
        load_model(path)


def test_a_damaged_file_says_so(saved, tmp_path):
    members = _members(saved)
    with zipfile.ZipFile(tmp_path / "d.rkm", "w") as archive:
        archive.writestr("rankkit.json", members["rankkit.json"])
    with pytest.raises(ValueError, match=r"damaged.*\['trees\.npz'\]"):
        load_model(tmp_path / "d.rkm")


@pytest.mark.parametrize("key", ["estimator", "backend", "params", "fitted", "backend_state", "files"])
def test_a_header_without_a_needed_key_is_a_damaged_file(saved, tmp_path, key):
    path = _rewrite_header(saved, tmp_path / "h.rkm", lambda h: h.pop(key))
    with pytest.raises(ValueError, match=rf"damaged rankkit model file: its header 'rankkit\.json' lacks \['{key}'\]"):
        load_model(path)


@pytest.mark.parametrize("damage", ["truncated", "array missing"])
def test_an_unreadable_numba_model_member_is_a_damaged_file(saved, tmp_path, damage):
    members = _members(saved)
    if damage == "truncated":
        members["trees.npz"] = members["trees.npz"][:50]
    else:
        buffer = io.BytesIO()
        np.savez(buffer, nodes=np.load(io.BytesIO(members["trees.npz"]))["nodes"])
        members["trees.npz"] = buffer.getvalue()
    with zipfile.ZipFile(tmp_path / "d.rkm", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ValueError, match=r"damaged: its trees\.npz cannot be read"):
        load_model(tmp_path / "d.rkm")


def _with_trees(saved, out, change):
    """``saved`` with its numba trees changed by ``change(arrays)``."""
    members = _members(saved)
    with np.load(io.BytesIO(members["trees.npz"])) as npz:
        arrays = {k: npz[k].copy() for k in npz.files}
    change(arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    members["trees.npz"] = buffer.getvalue()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out


def _feature(a, value):
    a["nodes"]["feature"][a["nodes"]["left"] >= 0] = value


@pytest.mark.parametrize("change, message", [
    # One past the last feature: predictions read past the row's end (wrong scores, or a crash far beyond).
    (lambda a: _feature(a, 5), "splits on a feature outside the model's 5"),
    (lambda a: _feature(a, 100000), "splits on a feature outside"),
    (lambda a: a["nodes"]["left"].__setitem__(a["nodes"]["left"] >= 0, 10**6), "children are outside its tree"),
    (lambda a: a.update(tree_ptr=a["tree_ptr"] * 2), "tree bounds"),
    (lambda a: a.update(scales=a["scales"][:-1]), "tree scales for"),
    (lambda a: a["nodes"]["depth"].__setitem__(slice(None), 0), "depths"),
])
def test_numba_trees_that_would_index_outside_are_a_damaged_file(saved, tmp_path, change, message):
    """The prediction kernels follow the file's indices without bounds checks:
    a tampered file loaded silently and then predicted garbage or crashed."""
    assert load_model(saved).n_features_in_ == 5
    with pytest.raises(ValueError, match=rf"damaged: its trees\.npz .*{message}"):
        load_model(_with_trees(saved, tmp_path / "t.rkm", change))


@pytest.mark.parametrize("grow_policy", ["oblivious", "depthwise"])
def test_numba_models_with_missing_value_splits_load(tmp_path, grow_policy):
    """A split that sends every value left and NaN right has threshold +inf:
    the checks of the trees refused such models, which save_model writes."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(400, 3)), rng.integers(0, 3, 400).astype(float)
    X[y == 2, 0] = np.nan
    ranker = LambdaMARTRanker(n_estimators=5, n_jobs=1, backend="numba", random_state=2,  # a state that grows one
                              backend_params={"grow_policy": grow_policy}).fit(X, y, qid=np.repeat(np.arange(40), 10))
    assert any(np.isinf(t["threshold"]).any() for t in ranker.booster_.trees)
    ranker.save_model(tmp_path / "nan.rkm")
    np.testing.assert_array_equal(load_model(tmp_path / "nan.rkm").predict(X), ranker.predict(X))


def test_damaged_archives_are_value_errors_that_say_so(saved, tmp_path):
    raw = saved.read_bytes()
    for cut in (len(raw) - 100, len(raw) // 2):  # an interrupted copy: not "not a rankkit model file"
        (tmp_path / "cut.rkm").write_bytes(raw[:cut])
        with pytest.raises(ValueError, match=r"cut\.rkm' is a damaged rankkit model file: .*truncated"):
            load_model(str(tmp_path / "cut.rkm"))
    flipped = bytearray(raw)  # a member's compressed stream or its CRC: zlib.error or BadZipFile before
    flipped[len(raw) // 2] ^= 0xFF
    (tmp_path / "flip.rkm").write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match=r"damaged rankkit model file: its member .* cannot be read"):
        load_model(tmp_path / "flip.rkm")
    members = _members(saved)
    members["trees.npz"] = b"garbage"  # numpy's advice was to unpickle it
    with zipfile.ZipFile(tmp_path / "g.rkm", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ValueError, match=r"damaged: its trees\.npz cannot be read") as error:
        load_model(tmp_path / "g.rkm")
    assert "pickle" not in str(error.value)
    for header in ({"version": True}, {"params": []}):
        path = _rewrite_header(saved, tmp_path / "h.rkm", lambda h: h.update(header))
        with pytest.raises(ValueError, match="invalid rankkit-model format version|damaged"):
            load_model(path)
    with open(saved) as text, pytest.raises(TypeError, match="mode 'rb'"):
        load_model(text)
    with open(tmp_path / "w.rkm", "w") as text, pytest.raises(TypeError, match="mode 'wb'"):
        load_model(saved).save_model(text)
    with open(saved, "rb") as binary:  # a file object's name, not its repr
        assert load_model(binary).n_features_in_ == 5
    with open(tmp_path / "cut.rkm", "rb") as binary, pytest.raises(ValueError, match=r"^'\S*cut\.rkm' is a damaged"):
        load_model(binary)
    with pytest.raises(ValueError, match=r"^the BytesIO file object is a damaged"):
        load_model(io.BytesIO((tmp_path / "cut.rkm").read_bytes()))


@pytest.mark.parametrize("kind", ["text", "pickle", "xgboost", "lightgbm", "zip", "json"])
def test_files_that_are_not_rankkit_models(frames, tmp_path, kind):
    train, y, _, _ = frames
    path = tmp_path / "f"
    expected = "not a rankkit model file"
    if kind == "text":
        path.write_text("qid,bm25\n1,0.5\n")
    elif kind == "pickle":
        path.write_bytes(pickle.dumps({"a": 1}))
        expected += ".*pickle"
    elif kind == "zip":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("other.txt", "x")
    elif kind == "json":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("rankkit.json", json.dumps({"format": "something-else"}))
    else:
        if not installed(kind):
            pytest.skip(f"{kind} not installed")
        ranker = QueryRMSERanker(backend=kind, qid_col="query", random_state=0, **BOOST).fit(train, y)
        ranker.booster_.save_model(str(path))
        hints = {"xgboost": r".*XGBoost model: xgboost\.Booster", "lightgbm": r".*LightGBM.*lightgbm\.Booster"}
        expected += hints[kind]
    with pytest.raises(ValueError, match=expected):
        load_model(path)


def test_unfitted_ranker_cannot_be_saved(tmp_path):
    with pytest.raises(NotFittedError):
        QueryRMSERanker().save_model(tmp_path / "m.rkm")


def test_a_parameter_that_is_code_cannot_be_saved(frames, tmp_path):
    train, y, _, _ = frames
    ranker = QueryRMSERanker(backend="numba", qid_col="query", **BOOST).fit(train, y)
    ranker.qid_col = lambda: "query"  # noqa: E731 - not a storable value
    with pytest.raises(TypeError, match="Cannot save parameter qid_col=.*never code"):
        ranker.save_model(tmp_path / "m.rkm")


def test_callbacks_are_not_saved(frames, tmp_path):
    """Callbacks act during fit and are code: saved as None, the model unchanged."""
    train, y, _, _ = frames
    seen = []
    ranker = QueryRMSERanker(backend="numba", qid_col="query", callbacks=[lambda env: seen.append(env.iteration)],
                             **BOOST).fit(train, y)
    assert seen  # the callback ran during fit
    ranker.save_model(tmp_path / "m.rkm")
    loaded = load_model(tmp_path / "m.rkm")
    assert loaded.get_params()["callbacks"] is None
    np.testing.assert_array_equal(loaded.predict(train), ranker.predict(train))


class ShiftedQueryRMSE(QueryRMSE):
    """A user-written objective (module level, so that a file can name it)."""


def test_user_objective_classes_are_passed_not_imported(frames, tmp_path):
    train, y, test, _ = frames
    ranker = Ranker(objective=ShiftedQueryRMSE(), backend="numba", qid_col="query", random_state=0, **BOOST)
    ranker.fit(train, y).save_model(tmp_path / "m.rkm")
    with pytest.raises(ValueError, match=r"tests\.test_persistence\.ShiftedQueryRMSE.*classes=\[ShiftedQueryRMSE\]"):
        load_model(tmp_path / "m.rkm")
    loaded = load_model(tmp_path / "m.rkm", classes=[ShiftedQueryRMSE])
    assert type(loaded.objective) is ShiftedQueryRMSE
    np.testing.assert_array_equal(loaded.predict(test), ranker.predict(test))
    # Saved from a script (class "__main__.ShiftedQueryRMSE"), loaded by a server
    # that imports it from a module: the class passed under that name is it.
    script = _rewrite_header(tmp_path / "m.rkm", tmp_path / "script.rkm", lambda h: h["params"].update(
        objective={**h["params"]["objective"], "__object__": "__main__.ShiftedQueryRMSE"}))
    assert type(load_model(script, classes=[ShiftedQueryRMSE]).objective) is ShiftedQueryRMSE


def test_every_backend_saves():
    """Each registered backend implements the save/load pair of the contract."""
    from rankkit._backends._base import Backend

    for name in BACKENDS:
        if installed(name):
            cls = get_backend(name)
            assert cls.save is not Backend.save and cls.load.__func__ is not Backend.load.__func__, name


def test_load_model_is_public():
    assert "load_model" in rankkit.__all__ and rankkit.load_model is load_model


def test_values_json_lacks_round_trip_through_their_tags():
    from rankkit._persistence import _decode, _encode
    from rankkit.objectives import SGLB, LambdaMART

    value = {
        "floats": [1.5, float("nan"), float("inf"), -float("inf"), np.float32(0.25)],
        "tuple": (1, ("a", None)),
        "int keys": {3: np.array(["x", "y"], dtype=object), 0: np.arange(3)},
        "__tuple__": "a key that looks like a tag",
        "state": np.random.RandomState(7),
        "objective": SGLB(LambdaMART(metric="mrr", sigma=2.0), learning_rate=0.3),
        "numpy scalars": [np.int64(4), np.bool_(True)],
    }
    text = json.dumps(_encode(value, "value"), allow_nan=False)  # strict JSON: no NaN literals
    back = _decode(json.loads(text), ())
    assert back["floats"][0] == 1.5 and np.isnan(back["floats"][1]) and back["floats"][2:4] == [np.inf, -np.inf]
    assert back["floats"][4] == 0.25
    assert back["tuple"] == (1, ("a", None))
    assert list(back["int keys"]) == [3, 0] and back["int keys"][3].dtype == object
    assert np.array_equal(back["int keys"][0], np.arange(3))
    assert back["__tuple__"] == "a key that looks like a tag"
    assert _same_value(back["state"], np.random.RandomState(7))
    sglb = back["objective"]
    assert type(sglb) is SGLB and sglb.learning_rate == 0.3
    assert type(sglb.objective) is LambdaMART and sglb.objective.metric == "mrr" and sglb.objective.sigma == 2.0
    assert back["numpy scalars"] == [4, True] and type(back["numpy scalars"][0]) is int


def test_parameter_values_of_a_hand_edited_header_are_checked(frames, tmp_path):
    """A value the ranker or its objective would refuse in ``set_params``
    fails at load, not at some later call."""
    train, y, _, _ = frames
    path = tmp_path / "m.rkm"
    LambdaMARTRanker(backend="numba", qid_col="query", random_state=0, **BOOST).fit(train, y).save_model(path)
    load_model(path)  # as written, it loads
    for change, message in [
        (lambda h: h["params"].update(max_depth="deep"), "parameters are not valid: The 'max_depth' parameter"),
        (lambda h: h["params"].update(gain="cubic"),
         "parameters are not valid: The 'gain' parameter"),
        (lambda h: h["fitted"]["objective_"]["params"].update(sigma=0.0),
         "trained objective is not valid: The 'sigma' parameter"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_model(_rewrite_header(path, tmp_path / "e.rkm", change))


def test_a_file_cannot_set_arbitrary_attributes(saved, tmp_path):
    path = _rewrite_header(saved, tmp_path / "a.rkm", lambda h: h["fitted"].update(predict=1))
    with pytest.raises(ValueError, match="'predict' is not a fitted attribute name"):
        load_model(path)


@pytest.mark.parametrize("backend", [b for b in ("xgboost", "lightgbm", "numba") if installed(b)])
def test_the_documented_code_runs(backend, tmp_path, monkeypatch):
    """docs/persistence.md's code blocks, in order, on each engine (their asserts check the results);
    the numba engine does not split on categories, so its run drops the categorical column."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "persistence.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 2
    code = blocks[0].replace('n_estimators=50)', f'n_estimators=50, backend="{backend}")') + blocks[1]
    assert f'backend="{backend}"' in code
    if backend == "numba":
        site = [line for line in code.splitlines() if line.startswith('df["site"]')]
        assert len(site) == 2
        for line in site:
            code = code.replace(line + "\n", "")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/persistence.md", "exec"), {})


@pytest.mark.skipif(not installed("xgboost"), reason="xgboost not installed")
def test_dates_durations_and_series_parameters_are_saved(tmp_path):
    """Categories that are dates or durations, and ``propensities`` given as
    a Series, load back as they were; interval categories (``pd.cut``) are
    refused naming the fix."""
    df, y, _ = make_ranking(40, n_features=3, as_frame=True, random_state=0)
    rng = np.random.default_rng(0)
    df["day"] = pd.Categorical(pd.to_datetime(rng.choice(["2024-01-01", "2024-01-02", None], len(df))))
    df["age"] = pd.Categorical(pd.to_timedelta(rng.choice([1, 2, 3], len(df)), unit="h"))
    ranker = LambdaMARTRanker(n_estimators=5, backend="xgboost", random_state=0).fit(df, y)
    ranker.save_model(tmp_path / "m.rkm")
    loaded = load_model(tmp_path / "m.rkm")
    for j, categories in ranker.categories_.items():
        np.testing.assert_array_equal(loaded.categories_[j], categories)
        assert loaded.categories_[j].dtype == categories.dtype
    np.testing.assert_array_equal(loaded.predict(df), ranker.predict(df))

    X, clicks, qid = df[["f0", "f1", "f2"]].to_numpy(), (y > 1).astype(float), df["qid"].to_numpy()
    position = df.groupby("qid").cumcount().to_numpy() + 1
    theta = pd.Series(1 / np.arange(1, position.max() + 1))
    known = LambdaMARTRanker(n_estimators=5, position_bias="known", propensities=theta,
                             random_state=0).fit(X, clicks, qid=qid, position=position)
    known.save_model(tmp_path / "k.rkm")
    np.testing.assert_array_equal(load_model(tmp_path / "k.rkm").predict(X), known.predict(X))

    df["bucket"] = pd.cut(df["f0"], 4)
    binned = LambdaMARTRanker(n_estimators=5, backend="xgboost", random_state=0).fit(df.drop(columns=["day", "age"]), y)
    with pytest.raises(TypeError, match=r"category Interval.*rename_categories\(str\)"):
        binned.save_model(tmp_path / "b.rkm")


@pytest.mark.parametrize("backend", [b for b in ("xgboost", "lightgbm") if installed(b)])
def test_the_serving_recipe_codes_dates_durations_and_infinite_categories(backend, tmp_path):
    """docs/persistence.md's serving recipe looked the raw values up in the
    header's lists: a date column (ISO strings there) or a duration column
    (counts) became all NaN, silently, and an infinite category (a tagged
    object) failed."""
    import re
    from pathlib import Path

    df, y, _ = make_ranking(60, n_features=3, as_frame=True, random_state=0)
    rng = np.random.default_rng(0)
    df["day"] = pd.Categorical(pd.to_datetime(rng.choice(["2020-01-01", "2021-01-01", "2022-06-01"], len(df))))
    df["age"] = pd.Categorical(pd.to_timedelta(rng.choice([1, 2, 3], len(df)), unit="h"))
    df["cap"] = pd.Categorical(rng.choice([0.5, 1.5, np.inf], len(df)))
    y = np.asarray(y, dtype=float).copy()
    y[(df["day"].cat.codes == 0).to_numpy()] = 4  # make the columns matter
    y[(df["age"].cat.codes == 2).to_numpy()] = 3
    y[np.isinf(df["cap"].astype(float)).to_numpy()] = 2
    ranker = LambdaMARTRanker(n_estimators=20, backend=backend, n_jobs=1, random_state=0).fit(df, y)
    importance = dict(zip(ranker.feature_names_in_, ranker.feature_importances_))
    assert min(importance["day"], importance["age"], importance["cap"]) > 0
    ranker.save_model(tmp_path / "ranker.rkm")
    text = (Path(__file__).resolve().parents[1] / "docs" / "persistence.md").read_text()
    recipe = re.findall(r"```python\n(.*?)```", text, flags=re.S)[1]
    exec(compile(recipe.replace('"ranker.rkm"', repr(str(tmp_path / "ranker.rkm"))), "docs/persistence.md",
                 "exec"), {"df": df, "ranker": ranker})  # the recipe asserts its scores equal predict
