"""Every parameter is declared once, and everything that shows it agrees.

An objective declares its parameters; its named ranker derives constraints,
defaults and the hand-over from it; the boosting parameters come from
``rankkit._params``. These tests walk every ranker/objective pair and every
parameter: same names and defaults, and the same values accepted and refused
through the public paths (``objective.gradient_hessian`` and ``ranker.fit``).
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

import rankkit
from rankkit._backends import get_backend
from rankkit._params import BACKEND_SETTINGS, BOOSTING_PARAMS
from rankkit._sglb import SGLB
from rankkit.datasets import make_ranking
from rankkit.metrics import make_ranking_scorer
from rankkit.model_selection import QueryKFold
from rankkit.objectives import OBJECTIVES, LambdaMART, QueryRMSE, YetiRank

from ._backends import BACKENDS_UNDER_TEST, installed_backends

NAMED_RANKERS = [
    rankkit.StochasticRankRanker,
    rankkit.YetiRanker,
    rankkit.LambdaMARTRanker,
    rankkit.XENDCGRanker,
    rankkit.QueryRMSERanker,
]
RANKER_OF = {ranker._objective_class: ranker for ranker in NAMED_RANKERS}

# Candidate values for every parameter: each is accepted by some parameters
# and refused by others.
VALUES = [
    None, True, False, 0, 1, 2, 3, 5, -1, -2, 0.0, 0.01, 0.5, 1.0, 1.5, 4.0, 100.0, np.inf, -np.inf, np.nan,
    "exp", "linear", "log", "chapelle", "classic", "ndcg", "ndcg@3", "ndcg@0", "err", "mrr@2", "map", "dcg",
    "expdcg", "precision", "logistic", "gaussian", "none", "uniform", [1], {"a": 1},
]
# Parameters that only matter beside others are walked in that context.
CONTEXT = {
    "err_max_label": dict(metric="err", err_mapping="chapelle"),
    "err_mapping": dict(metric="err"),
    "gain": dict(metric="ndcg"),  # YetiRank's classic weights read no gain (its ranker's NDCG@10 does)
    "k": dict(metric="ndcg"),
    "relevance_threshold": dict(metric="mrr"),  # a ranker refuses a threshold no metric reads
}

# Tiny data: 3 queries of 4 documents, labels that are valid probabilities
# and grades at once (so every metric's label checks pass).
_RNG = np.random.default_rng(0)
X = _RNG.normal(size=(12, 3))
Y = np.tile([0.0, 0.5, 1.0, 0.0], 3)
QID = np.repeat([0, 1, 2], 4)
# One stump on the numba engine: a fit takes about a millisecond.
TINY = dict(n_estimators=1, max_depth=1, backend="numba")




def objective_parameters(objective_class):
    """The objective's parameters a ranker shows flat (its random_state is the ranker's)."""
    return {name: p for name, p in inspect.signature(objective_class).parameters.items() if name != "random_state"}


def accepts(call):
    """Whether ``call()`` runs; a parameter error is a ValueError or TypeError."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
    except (ValueError, TypeError):
        return False
    return True


def test_every_registered_objective_has_a_named_ranker():
    assert set(RANKER_OF) == set(OBJECTIVES.values())


@pytest.mark.parametrize("ranker", NAMED_RANKERS, ids=lambda r: r.__name__)
def test_signature_is_the_objectives_then_the_boosting_declaration(ranker):
    """Same names, defaults and kinds as the objective, then every boosting
    parameter with its declared default (keyword-only), nothing else."""
    signature = list(inspect.signature(ranker).parameters.values())
    own = list(objective_parameters(ranker._objective_class).values())
    assert [(p.name, p.default, p.kind) for p in signature[: len(own)]] == [
        (p.name, p.default, p.kind) for p in own
    ]
    boosting = signature[len(own):]
    assert [(p.name, p.default) for p in boosting] == [(name, p.default) for name, p in BOOSTING_PARAMS.items()]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in boosting)
    # The constraints are the objective's and the declaration's, nothing written by hand.
    assert ranker._parameter_constraints == {
        **ranker._objective_class._parameter_constraints,
        **{name: p.constraints for name, p in BOOSTING_PARAMS.items()},
    }


@pytest.mark.parametrize("ranker", NAMED_RANKERS, ids=lambda r: r.__name__)
def test_the_objective_receives_the_rankers_values(ranker):
    params = {name: p.default for name, p in objective_parameters(ranker._objective_class).items()}
    changed = {"metric": "mrr@4", "sigma": 2.5, "n_permutations": 3, "decay": 0.5, "gain": "linear",
               "relevance_threshold": 1.0, "mu": 0.2, "truncation": 7}
    params.update({k: v for k, v in changed.items() if k in params})
    model = ranker(**params, random_state=11)
    objective = model._make_objective()
    assert type(objective) is ranker._objective_class
    expected = dict(params)
    if "random_state" in objective._get_param_names():
        expected["random_state"] = 11
    assert objective._get_params() == expected


WALK = [
    (ranker, name)
    for ranker in NAMED_RANKERS
    for name in [*objective_parameters(ranker._objective_class), "random_state"]
    if name in ranker._objective_class._get_param_names()
]


@pytest.mark.parametrize("ranker,name", WALK, ids=lambda v: getattr(v, "__name__", v))
def test_ranker_and_objective_accept_and_refuse_the_same_values(ranker, name):
    objective_class = ranker._objective_class
    context = {k: v for k, v in CONTEXT.get(name, {}).items() if k != name}
    accepted, refused = [], []
    for value in VALUES:
        params = {**context, name: value}
        by_objective = accepts(lambda: objective_class(**params).gradient_hessian(Y, X[:, 0], qid=QID, seed=1))
        by_ranker = accepts(lambda: ranker(**params, **TINY).fit(X, Y, qid=QID))
        assert by_objective == by_ranker, (name, value, by_objective, by_ranker)
        (accepted if by_objective else refused).append(value)
    # The walk is not empty on either side.
    assert accepted and refused, (name, accepted, refused)


@pytest.mark.parametrize("name", ["learning_rate", "diffusion_temperature"])
def test_sglb_and_langevin_ranker_accept_and_refuse_the_same_values(name):
    """The ranker's learning_rate and diffusion_temperature are SGLB's."""
    accepted, refused = [], []
    for value in VALUES:
        by_sglb = accepts(lambda: SGLB(QueryRMSE(), **{name: value}).gradient_hessian(Y, X[:, 0], qid=QID, seed=1))
        by_ranker = accepts(
            lambda: rankkit.QueryRMSERanker(langevin=True, **TINY, **{name: value}).fit(X, Y, qid=QID)
        )
        assert by_sglb == by_ranker, (name, value, by_sglb, by_ranker)
        (accepted if by_sglb else refused).append(value)
    assert accepted and refused


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_backend_takes_the_declared_settings(backend):
    cls = get_backend(backend)
    instance = cls(max_depth=3)
    for name in BACKEND_SETTINGS:
        expected = 3 if name == "max_depth" else BOOSTING_PARAMS[name].default
        assert getattr(instance, name) == ({} if name == "backend_params" else expected)
    with pytest.raises(TypeError, match="unknown settings.*'langevin'"):
        cls(langevin=True)


def _squared_error(raw, t):
    return raw - Y, np.ones_like(raw)


# Every setting a backend takes but random_state (the ranker hands over a seed).
SETTINGS_WALK = [(backend, name) for backend in installed_backends() for name in BACKEND_SETTINGS
                 if name != "random_state"]


@pytest.mark.parametrize("backend,name", SETTINGS_WALK)
def test_backend_and_ranker_accept_and_refuse_the_same_settings(backend, name):
    """A backend used on its own checks its settings as a ranker on that
    backend does: the declaration plus the engine's own limits."""
    cls = get_backend(backend)
    accepted, refused = [], []
    for value in VALUES:
        settings = {**TINY, "backend": backend, name: value}
        by_ranker = accepts(lambda: rankkit.QueryRMSERanker(**settings).fit(X, Y, qid=QID))
        settings.pop("backend")
        by_backend = accepts(lambda: cls(**settings).fit(X, _squared_error))
        assert by_backend == by_ranker, (backend, name, value, by_backend, by_ranker)
        (accepted if by_backend else refused).append(value)
    assert accepted and refused, (name, accepted, refused)


# -- the generic Ranker --------------------------------------------------------------
def test_ranker_with_an_objective_equals_the_named_ranker():
    X, y, qid = make_ranking(n_queries=40, n_features=5, random_state=0)
    boost = dict(n_estimators=8, max_depth=3, random_state=0)
    generic = rankkit.Ranker(objective=YetiRank("mrr", n_permutations=3), **boost).fit(X, y, qid=qid)
    named = rankkit.YetiRanker("mrr", n_permutations=3, **boost).fit(X, y, qid=qid)
    np.testing.assert_array_equal(generic.predict(X), named.predict(X))
    assert generic.score(X, y, qid=qid) == named.score(X, y, qid=qid)  # MRR: the objective's metric
    # The default objective is LambdaMART (NDCG), as XGBoost's rank:ndcg.
    default = rankkit.Ranker(**boost).fit(X, y, qid=qid)
    np.testing.assert_array_equal(
        default.predict(X), rankkit.LambdaMARTRanker(**boost).fit(X, y, qid=qid).predict(X)
    )


def test_ranker_nested_parameters_and_grid_search_over_objectives():
    ranker = rankkit.Ranker(objective=LambdaMART(sigma=1.0))
    assert ranker.get_params()["objective__sigma"] == 1.0
    ranker.set_params(objective__sigma=2.0)
    assert ranker.objective.sigma == 2.0 and clone(ranker).objective.sigma == 2.0
    df, y, _ = make_ranking(n_queries=60, n_features=5, as_frame=True, random_state=1)
    grid = {"objective": [LambdaMART(), YetiRank(n_permutations=2)], "max_depth": [2, 3]}
    search = GridSearchCV(rankkit.Ranker(n_estimators=5, random_state=0), grid, cv=QueryKFold(n_splits=2),
                          scoring=make_ranking_scorer("ndcg@10"))
    search.fit(df, y)
    assert len(search.cv_results_["params"]) == 4
    best = int(np.argmax(search.cv_results_["mean_test_score"]))
    assert search.best_params_ == search.cv_results_["params"][best]
    # The nested parameter is tunable too.
    search = GridSearchCV(rankkit.Ranker(objective=LambdaMART(), n_estimators=5, random_state=0),
                          {"objective__sigma": [0.5, 2.0]}, cv=QueryKFold(n_splits=2))
    search.fit(df, y)
    best = search.cv_results_["params"][int(np.argmax(search.cv_results_["mean_test_score"]))]
    assert search.best_params_ == best
    assert search.best_estimator_.objective_.sigma == best["objective__sigma"]


def test_the_objective_is_a_parameter_of_ranker_and_of_lgbmranker():
    """Both homes of an objective work: ``Ranker`` nests its parameters for
    GridSearchCV, and ``lightgbm.LGBMRanker(objective=obj)`` hands LightGBM
    none of them (LightGBM passes every key of its ``get_params()`` on, and
    scikit-learn expands values that have ``get_params``: objectives have not)."""
    lgb = pytest.importorskip("lightgbm")
    objective = SGLB(LambdaMART(sigma=1.0), learning_rate=0.3, random_state=0)
    assert not hasattr(objective, "get_params")
    objective.set_params(objective__sigma=2.0, diffusion_temperature=50.0)  # nested, as scikit-learn's
    assert objective.objective.sigma == 2.0 and objective.diffusion_temperature == 50.0
    with pytest.raises(ValueError, match="Invalid parameter 'sigmaa' for LambdaMART"):
        LambdaMART().set_params(sigmaa=1.0)
    copy = clone(objective)
    assert copy is not objective and copy.objective is not objective.objective and repr(copy) == repr(objective)

    df, y, _ = make_ranking(n_queries=60, n_features=5, as_frame=True, random_state=1)
    # Ranker: the objective and its nested parameter in one grid.
    search = GridSearchCV(rankkit.Ranker(n_estimators=5, random_state=0, backend="numba"),
                          {"objective": [LambdaMART()], "objective__sigma": [0.5, 2.0]}, cv=QueryKFold(n_splits=2))
    search.fit(df, y)
    assert {p["objective__sigma"] for p in search.cv_results_["params"]} == {0.5, 2.0}
    assert search.best_estimator_.objective_.sigma == search.best_params_["objective__sigma"]
    with pytest.raises(ValueError, match="objective__sigma.*pass an objective"):
        rankkit.Ranker().set_params(objective__sigma=2.0)
    with pytest.raises(ValueError, match=r"objective__sigma.*but objective=None"):  # the objective being set
        rankkit.Ranker(LambdaMART()).set_params(objective=None, objective__sigma=2.0)
    # The ranker's random_state seeds training; the objective's would be ignored without a word.
    with pytest.raises(ValueError, match=r"the objective's random_state=3 is not used.*random_state=3\)"):
        rankkit.Ranker(YetiRank(random_state=3), n_estimators=2).fit(df, y)
    with pytest.raises(ValueError, match=r"random_state=None is not used.*at its default \(0\)"):
        rankkit.Ranker(YetiRank(random_state=None), n_estimators=2).fit(df, y)
    rankkit.Ranker(YetiRank(), n_estimators=2).fit(df, y)  # the objective's default: nothing to ignore

    # LGBMRanker: the objective (SGLB around one included) is one parameter.
    X, qid = df.drop(columns="qid").to_numpy(), df["qid"].to_numpy()
    order = np.argsort(qid, kind="stable")
    X, y, sizes = X[order], np.asarray(y)[order], np.bincount(qid[order])
    ranker = lgb.LGBMRanker(objective=objective, n_estimators=5, min_child_samples=2, verbose=-1, n_jobs=1)
    assert not [key for key in ranker.get_params(deep=True) if "__" in key]
    ranker.fit(X, y, group=sizes)
    assert not [key for key in ranker.booster_.params if "__" in key]
    # What GridSearchCV does with a grid over objectives: clone the estimator and
    # the candidate, set_params, fit. (GridSearchCV itself cannot split
    # LightGBM's group sizes across folds.)
    for candidate in [LambdaMART(sigma=0.5), YetiRank(random_state=0)]:
        fitted = clone(ranker).set_params(**clone({"objective": candidate}, safe=False)).fit(X, y, group=sizes)
        assert repr(fitted.objective) == repr(candidate) and fitted.objective is not candidate
        assert not [key for key in fitted.booster_.params if "__" in key]


def test_ranker_refuses_what_is_not_an_objective():
    X, y, qid = make_ranking(n_queries=10, random_state=0)
    with pytest.raises(ValueError, match="'objective' parameter of Ranker must be"):
        rankkit.Ranker(objective="lambdamart").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="langevin=True"):
        rankkit.Ranker(objective=SGLB(LambdaMART())).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="'sigma' parameter of LambdaMART"):
        rankkit.Ranker(objective=LambdaMART(sigma=-1.0)).fit(X, y, qid=qid)


@pytest.mark.parametrize("shape", [(6, 2), (2, 6), (12, 1, 1)])
def test_sample_weight_of_another_shape_is_refused(shape):
    # Flattened, a (6, 2) array held 12 weights for the 12 rows: it trained
    # and scored without any error, pairing rows with the wrong weights.
    ranker = rankkit.QueryRMSERanker(**TINY)
    w = np.ones(shape)
    with pytest.raises(ValueError, match=r"sample_weight must be one-dimensional.*shape"):
        ranker.fit(X, Y, qid=QID, sample_weight=w)
    ranker.fit(X, Y, qid=QID, sample_weight=np.ones((12, 1)))  # a column of weights is one per row
    with pytest.raises(ValueError, match=r"sample_weight must be one-dimensional.*shape"):
        ranker.score(X, Y, qid=QID, sample_weight=w)
