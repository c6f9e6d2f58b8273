"""pandas categorical feature columns (rankkit/_categorical.py).

XGBoost and LightGBM split on sets of categories; the numba engine refuses
them with an error naming the columns. Categories are matched by value
between fit and predict, an unseen category is a missing value, and a saved
model keeps them.
"""

import importlib.util
import io
import json
import subprocess
import sys
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

from rankkit import QueryRMSERanker, load_model

from ._backends import installed

ENGINES = [b if installed(b) else pytest.param(b, marks=pytest.mark.skip(reason=f"{b} not installed"))
           for b in ("xgboost", "lightgbm")]
SITES = list("abcdef")
BOOST = {"n_estimators": 15, "max_depth": 3, "learning_rate": 0.3, "n_jobs": 1, "random_state": 0}


def _frame(n_queries, seed):
    """Relevance driven by a site category whose effect alternates with its
    code (a, c, e up; b, d, f down): one split on the set {a, c, e} captures
    it, no threshold on the codes can. A few sites are missing."""
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(n_queries), 15)
    n = qid.size
    x = rng.normal(size=(n, 2))
    site = rng.integers(0, 6, n)
    score = 0.5 * x[:, 0] + np.where(site % 2 == 0, 1.5, -1.5) + 0.2 * rng.normal(size=n)
    y = np.digitize(score, [-1.0, 0.5, 1.5, 2.0]).astype(np.float64)
    codes = np.where(rng.random(n) < 0.03, -1, site)
    df = pd.DataFrame({"x0": x[:, 0], "site": pd.Categorical.from_codes(codes, categories=SITES), "x1": x[:, 1]})
    df["qid"] = qid
    return df, y


@pytest.fixture(scope="module")
def data():
    train, y = _frame(80, 0)
    test, yt = _frame(20, 1)
    return train, y, test, yt


def _stump(backend, **backend_params):
    return QueryRMSERanker(backend=backend, n_estimators=1, max_depth=1, learning_rate=1.0, n_jobs=1,
                           backend_params=backend_params or None)


def _groups_of_one_split(ranker, test):
    """The sets of sites a one-split model sends to each side (rows with a site)."""
    pred = ranker.predict(test)
    has_site = test["site"].notna().to_numpy()
    sides = {}
    for site, p in zip(test["site"][has_site].astype(str), pred[has_site]):
        sides.setdefault(p, set()).add(site)
    return sorted(sorted(s) for s in sides.values())


@pytest.mark.parametrize("backend", ENGINES)
def test_engines_split_on_sets_of_categories(data, backend):
    train, y, test, _ = data
    ranker = _stump(backend).fit(train, y)
    assert list(ranker.categories_) == [1] and list(ranker.categories_[1]) == SITES
    assert isinstance(train["site"].dtype, pd.CategoricalDtype)  # the caller's frame is left as it was
    # One split puts the alternating sites on either side: a set split, no threshold on codes.
    assert _groups_of_one_split(ranker, test) == [["a", "c", "e"], ["b", "d", "f"]]
    if backend == "xgboost":
        assert ranker.booster_.feature_types == ["q", "c", "q"]
    else:
        assert "cat_threshold=" in ranker.booster_.model_to_string()


@pytest.mark.parametrize("backend", ENGINES)
def test_category_parameters_reach_the_engine(data, backend):
    train, y, test, _ = data
    # Up to max_cat_to_onehot categories, a split isolates one category (one-hot).
    one_hot = _stump(backend, max_cat_to_onehot=8).fit(train, y)
    groups = _groups_of_one_split(one_hot, test)
    assert sorted(len(g) for g in groups) == [1, 5], groups


@pytest.mark.parametrize("backend", ENGINES)
def test_categories_are_matched_by_value(data, backend):
    train, y, test, _ = data
    ranker = QueryRMSERanker(backend=backend, **BOOST).fit(train, y)
    expected = ranker.predict(test)
    assert len(np.unique(expected)) > 10
    variants = {
        "reordered": test["site"].cat.reorder_categories(SITES[::-1]),
        "extra unused category": test["site"].cat.add_categories(["zz"]),
        "strings": test["site"].astype(object),
        "only the categories present": test["site"].astype(str).replace("nan", np.nan).astype("category"),
    }
    for what, column in variants.items():
        np.testing.assert_array_equal(ranker.predict(test.assign(site=column)), expected, err_msg=what)
    # A score on the reordered frame is the same too.
    assert ranker.score(test.assign(site=variants["reordered"]), data[3]) == ranker.score(test, data[3])


@pytest.mark.parametrize("backend", ENGINES)
def test_an_unseen_category_is_a_missing_value(data, backend):
    train, y, test, _ = data
    ranker = QueryRMSERanker(backend=backend, **BOOST).fit(train, y)
    unseen = test.assign(site=pd.Categorical(["zz"] * len(test)))
    missing = test.assign(site=pd.Categorical([None] * len(test), categories=SITES))
    np.testing.assert_array_equal(ranker.predict(unseen), ranker.predict(missing))
    assert not np.array_equal(ranker.predict(missing), ranker.predict(test))  # the column matters


@pytest.mark.parametrize("backend", ENGINES)
def test_arrays_hold_the_category_codes(data, backend):
    train, y, test, _ = data
    ranker = QueryRMSERanker(backend=backend, **BOOST).fit(train, y)
    codes = test.drop(columns="qid").assign(site=test["site"].cat.codes.replace(-1, np.nan)).to_numpy(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scikit-learn: "X does not have valid feature names"
        np.testing.assert_array_equal(ranker.predict(codes), ranker.predict(test))
        codes[0, 1] = 6  # not a code of the six sites
        with pytest.raises(ValueError, match=r"Column 1 of X is a categorical feature.*0 to 5"):
            ranker.predict(codes)


@pytest.mark.parametrize("backend", ENGINES)
def test_eval_sets_with_categories(data, backend):
    train, y, test, yt = data
    plain = QueryRMSERanker(backend=backend, **BOOST).fit(train, y, eval_set=[(test, yt)])
    reordered = test.assign(site=test["site"].cat.reorder_categories(SITES[::-1]))
    other = QueryRMSERanker(backend=backend, **BOOST).fit(train, y, eval_set=[(reordered, yt)])
    assert other.evals_result_ == plain.evals_result_
    assert plain.evals_result_["validation_0"]["ndcg@10"][-1] > plain.evals_result_["validation_0"]["ndcg@10"][0]


@pytest.mark.parametrize("backend", ENGINES)
def test_saved_model_keeps_the_categories_and_serves_codes(data, backend, tmp_path):
    train, y, test, _ = data
    ranker = QueryRMSERanker(backend=backend, model_shrink_rate=0.2, **BOOST).fit(train, y)
    ranker.save_model(tmp_path / "m.rkm")
    loaded = load_model(tmp_path / "m.rkm")
    assert list(loaded.categories_[1]) == SITES
    reordered = test.assign(site=test["site"].cat.reorder_categories(SITES[::-1]))
    np.testing.assert_array_equal(loaded.predict(reordered), ranker.predict(test))
    # Without rankkit: the engine's model on the codes the header's categories define.
    with zipfile.ZipFile(tmp_path / "m.rkm") as archive:
        serving = json.loads(archive.read("rankkit.json"))["serving"]
        model = archive.read(serving["model_file"])
    # As docs/persistence.md builds the matrix.
    X = test[serving["feature_names"]].copy()
    for j, categories in serving["categories"].items():
        column = X.columns[int(j)]
        codes = pd.Index(categories).get_indexer(X[column])
        X[column] = np.where(codes >= 0, codes, np.nan)
    X = X.to_numpy(dtype=float)
    if backend == "xgboost":
        import xgboost

        served = xgboost.Booster(model_file=bytearray(model)).inplace_predict(X)
    else:
        import lightgbm

        served = lightgbm.Booster(model_str=model.decode()).predict(X, raw_score=True)
    np.testing.assert_array_equal(served, ranker.predict(test))


def test_numba_refuses_categories_naming_columns_and_alternatives(data):
    train, y, _, _ = data
    train = train.assign(device=pd.Categorical(np.where(np.arange(len(train)) % 2, "mobile", "desktop")))
    with pytest.raises(ValueError, match=(r"backend='numba' does not split on categorical features.*"
                                          r"\['site', 'device'\].*backend='xgboost' or backend='lightgbm'.*"
                                          r"OrdinalEncoder")):
        QueryRMSERanker(backend="numba", **BOOST).fit(train, y)


@pytest.mark.skipif(not installed("xgboost"), reason="xgboost not installed")
def test_default_backend_picks_an_engine_that_splits_categories(data):
    """backend="auto" is the numba engine unless a column is categorical: then
    XGBoost, with its own default trees and the given backend_params."""
    train, y, test, yt = data
    ranker = QueryRMSERanker(**BOOST, backend_params={"max_cat_to_onehot": 1}).fit(train, y)
    assert ranker.backend == "auto" and ranker.backend_.name == "xgboost"
    assert ranker.backend_.params_["max_cat_to_onehot"] == 1
    explicit = QueryRMSERanker(backend="xgboost", **BOOST, backend_params={"max_cat_to_onehot": 1}).fit(train, y)
    np.testing.assert_array_equal(ranker.predict(test), explicit.predict(test))
    numeric = QueryRMSERanker(**BOOST).fit(train.drop(columns="site"), y)
    assert numeric.backend_.name == "numba"


@pytest.mark.skipif(not installed("lightgbm"), reason="lightgbm not installed")
def test_default_backend_on_categories_without_xgboost(data, tmp_path):
    """Without XGBoost installed, "auto" trains categorical data on LightGBM
    (a fresh interpreter in which importing xgboost fails)."""
    train, y, _, _ = data
    path = tmp_path / "train.pkl"
    train.assign(y=y).to_pickle(path)
    code = (
        "import sys; sys.modules['xgboost'] = None\n"
        "import pandas as pd\n"
        "from rankkit import QueryRMSERanker\n"
        f"df = pd.read_pickle({str(path)!r})\n"
        f"r = QueryRMSERanker(**{BOOST!r}).fit(df.drop(columns='y'), df['y'])\n"
        "print(r.backend_.name)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "lightgbm"


def test_text_columns_that_are_not_categorical(data):
    train, y, _, _ = data
    with pytest.raises(ValueError, match=r"text columns \['site'\].*astype\('category'\)"):
        QueryRMSERanker(**BOOST).fit(train.assign(site=train["site"].astype(str)), y)


def test_auto_with_backend_params_on_categorical_data_says_which_engine(data):
    """backend='auto' trains categorical data on XGBoost; the numba engine's
    keys reached it ("Invalid Input: 'oblivious'", in XGBoost's words, or
    "not a parameter of backend='xgboost'")."""
    train, y, _, _ = data
    for params in ({"grow_policy": "oblivious"}, {"random_strength": 0.5}):
        with pytest.raises(ValueError, match=r"backend='auto' trains this data on \w+, not the numba engine, "
                                             r"because it has categorical columns \['site'\].*set backend= "
                                             r"explicitly"):
            QueryRMSERanker(**{**BOOST, "backend": "auto"}, backend_params=params).fit(train, y)


@pytest.mark.parametrize("backend", ENGINES)
def test_a_category_no_training_row_holds_is_unseen(data, backend):
    """The dtype's categories were the training categories: one that no
    training row held (a fold of a larger frame keeps the frame's dtype) got a
    code the engine never saw, which XGBoost scored as a seen category."""
    train, y, test, _ = data
    values = train["site"].astype(object)
    used = sorted(values.dropna().unique())
    wide = train.assign(site=pd.Categorical(values, categories=[*used, "unused"]))
    narrow = train.assign(site=pd.Categorical(values, categories=used))
    kw = dict(BOOST, backend=backend)
    a, b = QueryRMSERanker(**kw).fit(wide, y), QueryRMSERanker(**kw).fit(narrow, y)
    assert [list(c) for c in a.categories_.values()] == [used]
    for value in ("unused", np.nan):
        probe = test.assign(site=pd.Categorical([value] * len(test), categories=[*used, "unused"]))
        np.testing.assert_array_equal(a.predict(probe), b.predict(probe))
        np.testing.assert_array_equal(a.predict(probe), a.predict(test.assign(site=np.nan)))


def test_text_labels_are_refused():
    """pandas text labels were parsed ("0".."4", even " 1.5e0") in fit, score
    and eval sets, while NumPy text, the metric functions and sample_weight
    refused text."""
    from rankkit.datasets import make_ranking

    df, y, _ = make_ranking(30, n_features=3, as_frame=True, random_state=0)
    text = pd.Series(y.astype(int).astype(str))
    with pytest.raises(TypeError, match=r"^y must be numeric relevance labels.*got text such as '\d'"):
        QueryRMSERanker(**BOOST).fit(df, text)
    ranker = QueryRMSERanker(**BOOST).fit(df, y)
    with pytest.raises(TypeError, match=r"the y of eval_set\[0\] must be numeric"):
        QueryRMSERanker(**BOOST).fit(df, y, eval_set=[(df, text)])
    with pytest.raises(TypeError, match="must be numeric relevance labels"):
        ranker.score(df, text)
    assert ranker.score(df, pd.Series(y, dtype=object)) == ranker.score(df, y)  # numbers in an object array


@pytest.mark.parametrize("backend", ENGINES)
def test_date_categories_against_another_kind_are_an_error(backend):
    """Dates against time-zone-aware dates, integers or date strings (and
    strings against dates) matched nothing: every row became missing,
    silently."""
    from rankkit.datasets import make_ranking

    df, y, _ = make_ranking(40, n_features=3, as_frame=True, random_state=0)
    day = pd.to_datetime(np.where(y > 1, "2020-01-01", "2021-01-01"))
    ranker = QueryRMSERanker(**dict(BOOST, backend=backend)).fit(df.assign(c=pd.Categorical(day)), y)
    np.testing.assert_array_equal(ranker.predict(df.assign(c=day)), ranker.predict(df.assign(c=pd.Categorical(day))))
    for other, kind in ((day.tz_localize("UTC"), "dates with a time zone"), (day.astype("int64"), "numbers"),
                        (day.strftime("%Y-%m-%d"), "strings")):
        with pytest.raises(ValueError, match=rf"column 'c' is a categorical feature whose categories at fit were "
                                             rf"dates.*but it holds {kind}"):
            ranker.predict(df.assign(c=other))
    text = QueryRMSERanker(**dict(BOOST, backend=backend)).fit(df.assign(c=pd.Categorical(day.strftime("%Y-%m-%d"))), y)
    with pytest.raises(ValueError, match=r"categories at fit were strings.*but it holds dates"):
        text.predict(df.assign(c=day))


def test_list_columns_are_not_called_text():
    frame = pd.DataFrame({"qid": [0, 0, 1, 1], "f": [[1.0], [2.0], [1.0], [3.0]], "g": [0.1, 0.2, 0.3, 0.4]})
    with pytest.raises(ValueError, match=r"column 'f' \(dtype object\) cannot be read as numbers"):
        QueryRMSERanker(**BOOST).fit(frame, [0.0, 1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"text columns \['f'\]"):  # strings among numbers still are text
        QueryRMSERanker(**BOOST).fit(frame.assign(f=["a", 1, "b", 2]), [0.0, 1.0, 0.0, 1.0])


def test_a_frame_of_only_the_query_column():
    frame = pd.DataFrame({"qid": [0, 0, 1, 1]})  # NumPy's "at least one array or dtype is required" before
    with pytest.raises(ValueError, match=r"X has no feature columns \(the query column 'qid' is not one\)"):
        QueryRMSERanker(**BOOST).fit(frame, [0.0, 1.0, 0.0, 1.0])


def test_text_in_arrays_is_refused_as_in_frames():
    """NumPy text arrays were parsed as numbers ("0.5" trained as 0.5), or
    failed with NumPy's message naming no parameter."""
    from rankkit.datasets import make_ranking

    X, y, qid = make_ranking(20, n_features=3, random_state=0)
    for text in (X.astype(str), X.astype(str).astype(object), np.array([["a", "b", "c"]] * len(y)),
                 X.astype(str).tolist()):
        with pytest.raises(ValueError, match=r"X holds text: features must be numbers.*category dtype"):
            QueryRMSERanker(**BOOST).fit(text, y, qid=qid)
    ranker = QueryRMSERanker(**BOOST).fit(np.where(X > 1, None, X).astype(object), y, qid=qid)  # None: missing
    with pytest.raises(ValueError, match="X holds text"):
        ranker.predict(X.astype(str))


def test_pyarrow_dictionary_text_columns_get_the_text_message(data):
    # pandas infers a pyarrow dictionary column as "unknown-array": it got
    # NumPy's "could not convert string to float: 'a'", naming no column.
    pa = pytest.importorskip("pyarrow")
    train, y, _, _ = data
    site = pd.Series(pa.array(train["site"].astype(object)).dictionary_encode(),
                     dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string())), index=train.index)
    with pytest.raises(ValueError, match=r"text columns \['site'\].*astype\('category'\)"):
        QueryRMSERanker(**BOOST).fit(train.assign(site=site), y)


@pytest.mark.parametrize("backend", ENGINES)
def test_a_category_column_where_fit_saw_numbers(data, backend):
    train, y, test, _ = data
    ranker = QueryRMSERanker(backend=backend, **BOOST).fit(train, y)
    with pytest.raises(ValueError, match=r"category columns \['x0'\] that held numbers"):
        ranker.predict(test.assign(x0=pd.Categorical(test["x0"].round())))


@pytest.mark.skipif(not installed("lightgbm"), reason="lightgbm not installed")
def test_lightgbm_categorical_feature_in_backend_params_is_refused(data):
    """LightGBM's categorical_feature (any alias) bypassed rankkit's coding of
    categories: on numeric columns it changed the model while LightGBM's
    warning said it was ignored."""
    train, y, _, _ = data
    numeric = train.select_dtypes("number")
    for key, value in (("categorical_feature", [0]), ("cat_feature", "0"), ("categorical_column", [0])):
        for X in (train, numeric):
            with pytest.raises(ValueError, match=rf"'{key}': rankkit marks categorical columns itself.*pandas' "
                                                 r"category dtype"):
                QueryRMSERanker(backend="lightgbm", backend_params={key: value}, **BOOST).fit(X, y)


def test_categories_survive_a_file_object_round_trip(data):
    pytest.importorskip("xgboost")
    train, y, test, _ = data
    ranker = QueryRMSERanker(**BOOST).fit(train, y)
    buffer = io.BytesIO()
    ranker.save_model(buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(load_model(buffer).predict(test), ranker.predict(test))


def test_date_and_duration_columns_are_refused_naming_them(data):
    train, y, _, _ = data
    seen = pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(len(train)), unit="h")
    # Periods, Python date objects and pyarrow durations are none of NumPy's
    # datetime dtypes: they got "float() argument must be ... not 'Period'".
    others = [pd.Series(seen).dt.to_period("D"), pd.Series(seen.date, dtype=object)]
    if importlib.util.find_spec("pyarrow") is not None:
        others.append(pd.Series(seen - seen[0]).astype("duration[s][pyarrow]"))
    for column in (seen, seen - seen[0], *others):
        with pytest.raises(ValueError, match=r"date or duration columns \['seen'\].*numbers first"):
            QueryRMSERanker(**BOOST).fit(train.assign(seen=column), y)


@pytest.mark.skipif(not installed("xgboost"), reason="xgboost not installed")
def test_date_categories_are_coded_by_value(data):
    # A categorical feature's column is coded by value whatever its dtype:
    # dates as dates too, not refused as a date column.
    train, y, test, _ = data
    days = pd.date_range("2020-01-01", periods=len(SITES))
    as_day = dict(zip(SITES, days))
    ranker = QueryRMSERanker(backend="xgboost", **BOOST).fit(train.assign(site=train["site"].map(as_day)), y)
    expected = ranker.predict(test.assign(site=test["site"].map(as_day)))
    plain = test.assign(site=pd.to_datetime(test["site"].astype(object).map(as_day)))
    assert not isinstance(plain["site"].dtype, pd.CategoricalDtype)
    np.testing.assert_array_equal(ranker.predict(plain), expected)


@pytest.mark.skipif(not installed("xgboost"), reason="xgboost not installed")
def test_columns_in_another_order_are_named_as_such(data):
    # Categories are coded by column position; columns moved around must get
    # scikit-learn's message about their order, not one about their types.
    train, y, test, _ = data
    ranker = QueryRMSERanker(backend="xgboost", **BOOST).fit(train, y)
    moved = test[["qid", "site", "x0", "x1"]]
    for X in (moved, moved.assign(site=moved["site"].astype(str))):
        with pytest.raises(ValueError, match="Feature names must be in the same order"):
            ranker.predict(X)
    # A frame whose columns are not all strings keeps its columns by position.
    positional = test.drop(columns="qid").set_axis([0, 1, 2], axis=1)
    with pytest.warns(UserWarning, match="feature names"):
        assert np.array_equal(ranker.predict(positional), ranker.predict(test))


def test_columns_that_cannot_be_read_as_numbers_are_named():
    """Intervals, pyarrow lists and a pyarrow dictionary column with missing values got
    NumPy's "float() argument must be ..." or "setting an array element with a sequence",
    naming no column."""
    pa = pytest.importorskip("pyarrow")
    from rankkit.datasets import make_ranking

    df, y, _ = make_ranking(30, as_frame=True, random_state=0)
    n = len(df)
    for values in (pd.arrays.IntervalArray.from_breaks(np.arange(n + 1)),
                   pd.array(([[1], [2]] * n)[:n], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
                   pd.array(([1, 2, None] * n)[:n], dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.int64())))):
        with pytest.raises(ValueError, match="X column 'c' .* cannot be read as numbers"):
            QueryRMSERanker(n_estimators=2).fit(df.assign(c=values), y)
    # a pyarrow dictionary column without missing values still trains
    QueryRMSERanker(n_estimators=2).fit(
        df.assign(c=pd.array(([1, 2, 3] * n)[:n], dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.int64())))), y)


@pytest.mark.skipif(not installed("xgboost"), reason="xgboost not installed")
def test_a_categorical_column_of_another_kind_than_its_categories_is_named():
    """Categories are matched by value: number categories given as strings
    (a CSV read without dtypes) or string categories given as numbers match
    nothing, and the column silently became missing values. Now an error
    names the column and the conversion; numbers as floats or as another
    integer dtype, and all-missing columns, are still coded."""
    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(40), 10)
    df = pd.DataFrame({"x": rng.normal(size=qid.size), "shop": pd.Categorical(rng.integers(1, 4, qid.size))})
    y = (np.asarray(df["shop"]) == 2) * 2.0 + (df["x"] > 0)
    ranker = QueryRMSERanker(backend="xgboost", **BOOST).fit(df, y, qid=qid)
    expected = ranker.predict(df)
    for column in (df["shop"].astype(str), df["shop"].astype(str).astype("category")):
        with pytest.raises(ValueError, match=r"column 'shop' .* categories at fit were numbers \(\[1, 2, 3\]\), "
                                             r"but it holds strings.*X\['shop'\]\.astype\('int64'\)"):
            ranker.predict(df.assign(shop=column))
    for column in (df["shop"].astype(float), df["shop"].astype("Int64"), df["shop"].astype(np.int8)):
        np.testing.assert_array_equal(ranker.predict(df.assign(shop=column)), expected)
    missing = ranker.predict(df.assign(shop=pd.Categorical([None] * len(df), categories=[1, 2, 3])))
    np.testing.assert_array_equal(ranker.predict(df.assign(shop=np.nan)), missing)
    letters = df.assign(shop=df["shop"].map({1: "a", 2: "b", 3: "c"}).astype("category"))
    by_letter = QueryRMSERanker(backend="xgboost", **BOOST).fit(letters, y, qid=qid)
    with pytest.raises(ValueError, match=r"categories at fit were strings.*holds numbers.*astype\(str\)"):
        by_letter.predict(df.assign(shop=df["shop"].astype(int)))
    # Booleans match neither numbers nor strings (True is not 1 to pandas' lookup).
    flags = df.assign(shop=pd.Categorical(np.asarray(df["shop"]) == 2))
    by_flag = QueryRMSERanker(backend="xgboost", **BOOST).fit(flags, y, qid=qid)
    with pytest.raises(ValueError, match=r"categories at fit were booleans.*holds numbers.*astype\(bool\)"):
        by_flag.predict(flags.assign(shop=(np.asarray(df["shop"]) == 2).astype(int)))
    with pytest.raises(ValueError, match=r"categories at fit were numbers.*holds booleans.*astype\('int64'\)"):
        ranker.predict(df.assign(shop=np.asarray(df["shop"]) == 2))
    np.testing.assert_array_equal(by_flag.predict(flags.assign(shop=np.asarray(df["shop"]) == 2)),
                                  by_flag.predict(flags))
