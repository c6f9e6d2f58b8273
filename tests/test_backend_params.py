"""``backend_params`` on every backend: each engine's own parameter list,
errors that name the key, the backend it belongs to and the valid spellings."""

import warnings

import numpy as np
import pytest

import rankkit._estimators as est
from rankkit._backends import BACKENDS, get_backend
from rankkit.datasets import make_ranking

from ._backends import installed


def _needs(*names):
    missing = [n for n in names if not installed(n)]
    return pytest.mark.skipif(bool(missing), reason=f"engine not installed: {missing}")


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=20, n_features=4, max_docs=10, random_state=0)
    return X, y, qid


def _fit(data, backend, params):
    X, y, qid = data
    return est.QueryRMSERanker(n_estimators=2, max_depth=2, backend=backend, backend_params=params).fit(
        X, y, qid=qid)


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_every_backend_declares_its_parameters(name):
    if not installed(name):
        pytest.skip(f"{name} not installed")
    cls = get_backend(name)
    valid = cls.valid_params()
    assert isinstance(valid, frozenset) and valid
    assert isinstance(cls.params_help, str) and cls.params_help
    assert cls.refused_params({}) == {}


@_needs("xgboost")
def test_xgboost_list_comes_from_the_engine():
    import xgboost

    backend = get_backend("xgboost")
    valid = backend.valid_params()
    # Canonical names, their aliases and the global ones, as XGBoost reports them, but
    # those the ranker sets (eta, lambda, nthread, ...): valid_params lists what is taken.
    assert {"tree_method", "max_leaves", "grow_policy", "max_cached_hist_node", "verbosity", "gamma"} <= valid
    assert set(xgboost.get_config()) - {"nthread"} <= valid
    assert not {"eta", "learning_rate", "lambda", "reg_lambda", "nthread", "seed", "objective"} & valid
    assert "num_leaves" not in valid and "tree_methd" not in valid
    assert not [key for key in valid if backend.refused_params({key: None})]


@_needs("lightgbm")
def test_lightgbm_list_comes_from_the_engine():
    from lightgbm.basic import _ConfigAliases

    backend = get_backend("lightgbm")
    valid = backend.valid_params()
    table = _ConfigAliases._get_all_param_aliases()
    names = {name for names in table.values() for name in names}
    assert valid == {name for name in names if not backend.refused_params({name: None})}
    assert {"num_leaves", "min_child_samples", "deterministic"} <= valid
    assert not {"reg_lambda", "lambda_l2", "num_threads", "feature_fraction", "objective"} & valid
    assert "tree_method" not in valid


@_needs("xgboost", "lightgbm")
@pytest.mark.parametrize("backend,key,owner", [
    ("xgboost", "num_leaves", "lightgbm"),
    ("xgboost", "min_data_in_leaf", "lightgbm"),
    ("lightgbm", "tree_method", "xgboost"),
    ("lightgbm", "grow_policy", "xgboost"),
    ("numba", "num_leaves", "lightgbm"),
    ("numba", "tree_method", "xgboost"),
    ("lightgbm", "grow_policy", "numba"),  # XGBoost's and the numba engine's
])
def test_another_engines_parameter_names_its_backend(data, backend, key, owner):
    with pytest.raises(ValueError) as info:
        _fit(data, backend, {key: 1})
    msg = str(info.value)
    assert f"{key!r} is a parameter of " in msg and f"backend={owner!r}" in msg, msg
    assert f"backend={backend!r}" in msg


@_needs("xgboost", "lightgbm")
@pytest.mark.parametrize("backend, key, here", [
    ("numba", "gamma", "min_split_gain"), ("xgboost", "min_gain_to_split", "gamma"),
    ("lightgbm", "gamma", "min_gain_to_split"), ("numba", "min_gain_to_split", "min_split_gain"),
])
def test_another_engines_least_split_gain_names_this_ones(data, backend, key, here):
    with pytest.raises(ValueError, match=rf"'{key}' is a parameter of .*\(its equivalent here: '{here}'\)"):
        _fit(data, backend, {key: 1})


@_needs("xgboost")
@_needs("xgboost", "lightgbm")
@pytest.mark.parametrize("backend, key, ranker_param, owner", [
    ("numba", "eta", "learning_rate", "xgboost"),
    ("numba", "num_threads", "n_jobs", "lightgbm"),
    ("numba", "lambda_l2", "reg_lambda", "lightgbm"),
    ("xgboost", "num_threads", "n_jobs", "lightgbm"),  # suggested 'num_trees' or 'nthread' before, both refused
    ("xgboost", "feature_fraction", "colsample_bytree", "lightgbm"),
])
def test_another_engines_name_of_a_ranker_parameter_names_it(data, backend, key, ranker_param, owner):
    with pytest.raises(ValueError, match=rf"'{key}' is what backend='{owner}' calls the ranker's {ranker_param}: "
                                         rf"pass {ranker_param}=2 to the ranker"):
        _fit(data, backend, {key: 2})


def test_misspelt_xgboost_parameter(data):
    with pytest.raises(ValueError, match=r"'tree_methd' is not a parameter of backend='xgboost' "
                                         r"\(did you mean 'tree_method'\?\).*xgboost.readthedocs"):
        _fit(data, "xgboost", {"tree_methd": "hist"})


@_needs("lightgbm")
def test_misspelt_lightgbm_parameter(data):
    with pytest.raises(ValueError, match=r"'num_leavs'.*did you mean 'num_leaves'.*valid_params\(\)"):
        _fit(data, "lightgbm", {"num_leavs": 7})


def test_misspelt_numba_parameter_lists_the_valid_keys(data):
    with pytest.raises(ValueError, match=r"'grow_polcy'.*'grow_policy'.*valid keys: \[[^]]*'grow_policy'"):
        _fit(data, "numba", {"grow_polcy": "oblivious"})


def test_early_stopping_in_backend_params_points_to_the_ranker(data):
    for backend in [b for b in ("numba", "xgboost", "lightgbm") if installed(b)]:
        with pytest.raises(ValueError, match="use the ranker's early_stopping_rounds") as info:
            _fit(data, backend, {"early_stopping_rounds": 2})
        assert "is a parameter of" not in str(info.value)  # it was sent to LightGBM, which ignored it


@_needs("xgboost")
def test_xgboost_parallel_trees_with_shrinkage_refused_up_front(data):
    from rankkit import QueryRMSERanker

    X, y, qid = data
    with pytest.raises(ValueError, match="num_parallel_tree.*SGLB shrinkage"):  # it failed after training
        QueryRMSERanker(n_estimators=3, n_jobs=1, backend="xgboost", model_shrink_rate=0.5,
                        backend_params={"num_parallel_tree": 2}).fit(X, y, qid=qid)


def test_every_bad_key_is_named_at_once(data):
    with pytest.raises(ValueError) as info:
        _fit(data, "numba", {"zzz": 1, "yyy": 2})
    assert "'zzz'" in str(info.value) and "'yyy'" in str(info.value)


@_needs("lightgbm")
@pytest.mark.parametrize("key,value,match", [
    ("objective", "lambdarank", "objective is the ranker's"),
    ("application", "lambdarank", "objective is the ranker's"),  # an alias of objective
    ("n_estimators", 10, "n_estimators"),  # an alias of num_iterations
    ("metric", "ndcg", "eval_metric"),
    ("eval_at", [5], "eval_metric"),
    ("lambdarank_truncation_level", 10, "lambdarank"),
    ("label_gain", [0, 1, 3], "own ranking objectives"),
    ("bagging_by_query", True, "queries"),
    ("boosting", "dart", "boosting='gbdt'"),
    # LightGBM applies these only inside lightgbm.train: accepted, they did nothing.
    ("early_stopping_round", 2, "use the ranker's early_stopping_rounds"),
    ("n_iter_no_change", 2, "use the ranker's early_stopping_rounds"),
    ("first_metric_only", True, "use the ranker's early_stopping_rounds"),
    # These overrode a ranker parameter that get_params() still showed.
    ("max_bin_by_feature", [2] * 5, "overrides the ranker's max_bin"),
    ("bagging_seed", 7, "overrides the ranker's random_state"),
    ("feature_fraction_seed", 7, "overrides the ranker's random_state"),
    ("num_class", 2, "one score per document"),
    # The engine's own objectives' parameters: accepted, and the model was the default one bit for bit.
    ("sigmoid", 5.0, "LightGBM's own objectives.*LambdaMARTRanker\\(sigma=\\)"),
    ("is_unbalance", True, "LightGBM's own objectives"),
    ("scale_pos_weight", 3.0, "LightGBM's own objectives"),
    ("pos_bagging_fraction", 0.5, "use the ranker's subsample"),
])
def test_lightgbm_parameters_the_ranker_owns(data, key, value, match):
    with pytest.raises(ValueError, match=match):
        _fit(data, "lightgbm", {key: value})


@_needs("xgboost")
@pytest.mark.parametrize("key,value,match", [
    ("objective", "rank:ndcg", "objective is the ranker's"),
    ("eval_metric", "ndcg", "eval_metric"),
    ("booster", "gblinear", "gbtree models only"),
    ("base_score", 0.5, "starts every model at 0"),  # iteration ranges added up to the model plus 0.5
    ("num_target", 2, "one score per document"),
    ("early_stopping_rounds", 2, "use the ranker's early_stopping_rounds"),
    # Accepted and ignored, or called "not a parameter of backend='xgboost'" (or LightGBM's) before.
    ("scale_pos_weight", 3.0, "XGBoost's own objectives"),
    ("lambdarank_pair_method", "topk", "XGBoost's own objectives"),
    ("tweedie_variance_power", 1.5, "XGBoost's own objectives"),
    ("ndcg_exp_gain", False, "XGBoost's own objectives"),
    ("num_trees", 2, "use the ranker's n_estimators"),  # an XGBoostError "Check failed" before
    # The exact builder reads no bins: max_bin 4 and 256 gave the same trees.
    ("tree_method", "exact", "exact greedy builder reads no bins"),
    ("updater", "grow_colmaker,prune", "exact greedy builder reads no bins"),
])
def test_xgboost_parameters_the_ranker_owns(data, key, value, match):
    with pytest.raises(ValueError, match=match):
        _fit(data, "xgboost", {key: value})


@pytest.mark.parametrize("backend,params", [
    ("xgboost", {"grow_policy": "lossguide", "max_leaves": 7, "reg_alpha": 0.1}),
    ("lightgbm", {"num_leaves": 5, "min_child_samples": 3, "extra_trees": True, "boosting": "gbdt"}),
    ("numba", {"grow_policy": "oblivious", "min_split_gain": 0.0}),
])
def test_valid_parameters_pass(data, backend, params):
    if not installed(backend):
        pytest.skip(f"{backend} not installed")
    model = _fit(data, backend, params)
    assert np.all(np.isfinite(model.predict(data[0])))


def test_backend_params_must_be_a_dict(data):
    with pytest.raises((TypeError, ValueError), match="backend_params"):
        _fit(data, "numba", [("grow_policy", "oblivious")])


# What a ranker parameter sets, on each engine by every name the engine knows it.
RANKER_SET = [
    ("xgboost", "max_depth", "max_depth"), ("xgboost", "eta", "learning_rate"),
    ("xgboost", "learning_rate", "learning_rate"), ("xgboost", "lambda", "reg_lambda"),
    ("xgboost", "nthread", "n_jobs"), ("xgboost", "seed", "random_state"), ("xgboost", "subsample", "subsample"),
    ("lightgbm", "max_depth", "max_depth"), ("lightgbm", "eta", "learning_rate"),
    ("lightgbm", "shrinkage_rate", "learning_rate"), ("lightgbm", "reg_lambda", "reg_lambda"),
    ("lightgbm", "lambda_l2", "reg_lambda"), ("lightgbm", "num_threads", "n_jobs"),
    ("lightgbm", "bagging_fraction", "subsample"), ("lightgbm", "colsample_bytree", "colsample_bytree"),
    ("lightgbm", "min_sum_hessian_in_leaf", "min_child_weight"), ("lightgbm", "max_bin", "max_bin"),
    # The numba engine has no names of its own for them: the ranker's names are refused so.
    ("numba", "max_depth", "max_depth"), ("numba", "learning_rate", "learning_rate"),
    ("numba", "subsample", "subsample"), ("numba", "max_bin", "max_bin"), ("numba", "n_jobs", "n_jobs"),
]


@pytest.mark.parametrize("backend, key, ranker_param", RANKER_SET)
def test_backend_params_may_not_set_a_ranker_parameter(data, backend, key, ranker_param):
    """One parameter, one place: the error names the ranker parameter to set instead."""
    if not installed(backend):
        pytest.skip(f"{backend} not installed")
    with pytest.raises(ValueError, match=rf"'{key}': it sets what the ranker's {ranker_param} sets: "
                                         rf"pass {ranker_param}=1 to the ranker instead"):
        _fit(data, backend, {key: 1})


@pytest.mark.parametrize("backend", [b for b in ("xgboost", "lightgbm") if installed(b)])
@pytest.mark.parametrize("rate", [1e-36, 1e40])
def test_learning_rates_the_engines_cannot_hold_are_refused(backend, rate):
    """XGBoost keeps the rate in float32 (it failed with its own error) and
    LightGBM zeroes leaves below 1e-35 (an all-zero model, silently)."""
    from sklearn.utils._param_validation import InvalidParameterError

    from rankkit import LambdaMARTRanker
    from rankkit.datasets import make_ranking

    X, y, qid = make_ranking(10, random_state=0)
    with pytest.raises(InvalidParameterError, match=rf"learning_rate.*backend='{backend}'.*backend=\"numba\""):
        LambdaMARTRanker(learning_rate=rate, n_estimators=2, backend=backend).fit(X, y, qid=qid)


@pytest.mark.parametrize("backend", [b for b in ("xgboost", "lightgbm") if installed(b)])
@pytest.mark.parametrize("setting", [dict(max_bin=2**32 + 16), dict(max_bin=2**31), dict(max_depth=2**32 + 3)])
def test_settings_beyond_the_engines_int32_are_refused(backend, setting):
    """LightGBM wrapped them round (max_bin=2**32 + 16 trained with 16 bins);
    XGBoost failed with its own errors."""
    from sklearn.utils._param_validation import InvalidParameterError

    from rankkit import LambdaMARTRanker
    from rankkit.datasets import make_ranking

    X, y, qid = make_ranking(10, random_state=0)
    (name, _), = setting.items()
    with pytest.raises(InvalidParameterError, match=rf"'{name}' parameter of backend='{backend}' must be an int in "
                                                    rf"the range \[\d, 2147483647\].*32-bit ints"):
        LambdaMARTRanker(n_estimators=2, backend=backend, **setting).fit(X, y, qid=qid)


@pytest.mark.skipif(not installed("xgboost"), reason="xgboost not installed")
@pytest.mark.parametrize("name", ["min_child_weight", "reg_lambda"])
def test_xgboost_float32_regularisers_are_refused_beyond_float32(name):
    from sklearn.utils._param_validation import InvalidParameterError

    from rankkit import QueryRMSERanker
    from rankkit.datasets import make_ranking

    X, y, qid = make_ranking(10, random_state=0)
    with pytest.raises(InvalidParameterError, match=rf"'{name}' parameter of backend='xgboost'.*float32"):
        QueryRMSERanker(n_estimators=2, backend="xgboost", **{name: 1e39}).fit(X, y, qid=qid)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "QueryRMSERanker grew no split")  # min_child_weight=1e39 allows none
        QueryRMSERanker(n_estimators=2, backend="numba", **{name: 1e39}).fit(X, y, qid=qid)  # float64: no limit
