"""The boosting parameters every ranker shares, declared once.

Each entry gives the default, the scikit-learn constraints, the numpydoc text
and whether the backend receives it. From this table come the rankers'
``_parameter_constraints`` (beside their objective's), the parameter section
of their docstrings, and the settings a :class:`~rankkit._backends._base.Backend`
takes; a test checks every ranker's ``__init__`` signature against it.

This is the home of the *common* settings, the same on every engine. What
goes inside ``backend_params`` is each engine's own: the keys every backend
accepts are checked in :mod:`rankkit._backends._engine_params`.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.utils._param_validation import StrOptions

from ._backends import BACKENDS
from ._sglb import PARAMETER_CONSTRAINTS as SGLB_CONSTRAINTS
from ._validation import Interval


class Param(NamedTuple):
    default: object
    constraints: list
    type: str
    doc: str
    #: Handed to the backend (the others are the ranker's own).
    backend: bool = False


BOOSTING_PARAMS = {
    "n_estimators": Param(
        300, [Interval(Integral, 1, None, closed="left")], "int",
        "Boosting iterations (trees). With ``learning_rate=0.05``, chosen on learning curves of every dataset at "
        "hand (user guide section 9): 100 trees at 0.1 were 0.2 to 0.6 NDCG@10 points lower on average.", True),
    "learning_rate": Param(
        0.05, [Interval(Real, 0, np.inf, closed="neither")], "float",
        "Shrinkage ``eta`` of every tree (and of the SGLB noise scale).", True),
    "max_depth": Param(6, [Interval(Integral, 1, None, closed="left")], "int", "Depth of every tree.", True),
    "min_child_weight": Param(
        1.0, [Interval(Real, 0, None, closed="left")], "float",
        "Minimum sum of hessians in a leaf, in the units of ``reg_lambda``. In oblivious trees (the "
        "default engine's) a node is split with its level even when a child would hold less, as in "
        "CatBoost; it then adds nothing to the level's gain.", True),
    "reg_lambda": Param(
        3.0, [Interval(Real, 0, None, closed="left")], "float",
        "L2 regularisation of leaf values (CatBoost's ``l2_leaf_reg=3``). For the per-query losses with "
        "Newton leaves it counts in units of curvature: the mean curvature of a query, or of 20 documents "
        "when the queries are longer (user guide section 9); for the others, in documents.", True),
    "subsample": Param(
        1.0, [Interval(Real, 0, 1, closed="right")], "float", "Share of rows sampled for each tree.", True),
    "colsample_bytree": Param(
        1.0, [Interval(Real, 0, 1, closed="right")], "float",
        "Share of features sampled for each tree: ``colsample_bytree * n_features`` (in float32) rounded down "
        "(at least 1) on the numba engine and XGBoost, rounded to the nearest by LightGBM.", True),
    "max_bin": Param(256, [Interval(Integral, 2, None, closed="left")], "int",
                     "Histogram bins per feature (on the numba engine, whose bins are bytes, a larger value is capped at 255).", True),
    "n_jobs": Param(
        None, [Interval(Integral, None, -1, closed="right"), Interval(Integral, 1, None, closed="left"), None],
        "int or None",
        "Threads of the engine and of rankkit's kernels, with scikit-learn's meaning on every backend: -1 "
        "every core, -2 all but one; None: each pool's default.", True),
    "random_state": Param(
        0, ["random_state"], "int, RandomState or None",
        "Seeds everything random (objective sampling, SGLB noise, subsampling, the numba engine's split "
        "noise). The default 0 gives the same model on every fit, as XGBoost, LightGBM and CatBoost do "
        "by default; None draws a fresh seed per fit.", True),
    "backend": Param(
        "auto", [StrOptions({"auto", *BACKENDS})], "{" + ", ".join(f'"{b}"' for b in ("auto", *BACKENDS)) + "}",
        "Boosting engine (``docs/backends.md``: when to choose which). ``\"auto\"``: ``\"numba\"`` "
        "(CatBoost-style oblivious trees with random split strength, the learner behind the default's "
        "quality), unless the training data has categorical columns: then ``\"xgboost\"`` (or "
        "``\"lightgbm\"`` when XGBoost is not installed), which split on them. The engine used is "
        "``backend_.name``; ``backend_params`` go to that engine."),
    "backend_params": Param(
        None, [dict, None], "dict or None",
        "Engine-specific parameters (``docs/backends.md``); a key the engine does not know, or one that sets "
        "what a ranker parameter sets (``eta``, ``max_depth``, ``num_threads``, ...), is an error naming it "
        "(``rankkit._backends._engine_params``).", True),
    "langevin": Param(
        False, ["boolean"], "bool",
        "SGLB gradient noise ``sqrt(2 / (learning_rate * diffusion_temperature)) N(0, 1)`` "
        "(Ustimenko & Prokhorenkova 2021; ``rankkit._sglb``)."),
    "diffusion_temperature": Param(
        "auto", SGLB_CONSTRAINTS["diffusion_temperature"], 'float or "auto"',
        "SGLB inverse temperature ``beta``. ``\"auto\"`` makes the noise one tenth of the root mean "
        "square of the first iteration's gradients, ``beta = 2 / (learning_rate * (0.1 g_rms)^2)`` "
        "(``rankkit._sglb.auto_diffusion_temperature``); the value used is ``diffusion_temperature_``."),
    "model_shrink_rate": Param(
        0.0, SGLB_CONSTRAINTS["model_shrink_rate"], "float",
        "SGLB model shrinkage ``gamma`` (applied whenever positive, as in CatBoost)."),
    "model_shrink_mode": Param(
        "constant", SGLB_CONSTRAINTS["model_shrink_mode"], '{"constant", "decreasing"}',
        "Factor ``1 - gamma * learning_rate`` or ``1 - gamma / t`` before iteration ``t >= 1``."),
    "eval_metric": Param(
        None, [str, list, tuple, callable, None], "str, callable, list of them or None",
        "Metric(s) recorded on every eval set, e.g. ``\"ndcg@10\"`` or ``[\"ndcg@10\", \"mrr\"]`` "
        "(default: ``\"ndcg@10\"`` for every ranker, whatever it optimises); the first one is ``score``'s "
        "and drives early stopping. "
        "A callable ``f(y_true, y_score, qid) -> float`` (larger is better; rows sorted by query, "
        "``qid`` the query numbers) or a scikit-learn scorer is recorded under its ``__name__`` "
        "(a ranking scorer under its metric string); ``score``'s ``sample_weight`` weighs a rankkit ranking "
        "scorer's queries as a named metric's, not any other callable's; a "
        "ranker with a callable eval_metric cannot be saved (model files hold no code)."),
    "early_stopping_rounds": Param(
        None, [Interval(Integral, 1, None, closed="left"), None], "int or None",
        "Stop when the first eval metric on the last eval set (the training data excluded) has not "
        "improved for this many iterations; the model is cut back to ``best_iteration_``."),
    "callbacks": Param(
        None, [list, tuple, None], "list or None",
        "Engine-independent training callbacks (:mod:`rankkit.callback`): "
        "``TrainingCallback`` objects or functions ``callback(env)``."),
    "qid_col": Param("qid", [str, None], "str or None", "DataFrame column holding the query ids."),
    "position_bias": Param(
        None, [StrOptions({"known", "estimate"}), None], '{None, "known", "estimate"}',
        "Learning from clicks (user guide, \"Learning from clicks\"): the labels are clicks and "
        "``fit(..., position=...)`` gives the 1-based rank each row was shown at. ``\"known\"``: inverse "
        "propensity weighting with ``propensities``; ``\"estimate\"``: propensities learned during "
        "training by regression EM (``position_bias_``). None: labels are relevance grades, positions "
        "unused."),
    "propensities": Param(
        None, ["array-like", callable, None], "array-like, callable or None",
        "Examination probability in (0, 1] of every position (``propensities[k - 1]`` for rank ``k``) "
        "or a callable mapping an array of ranks to them, for ``position_bias=\"known\"``."),
    "propensity_estimator": Param(
        "em", [StrOptions({"em", "pairwise"})], '{"em", "pairwise"}',
        "How ``position_bias=\"estimate\"`` learns the propensities, updated every iteration from the "
        "current scores: ``\"em\"``, regression EM (Wang et al. 2018), the default because it measured "
        "closer to the true propensities (``benchmarks/README.md``); ``\"pairwise\"``, the ``t+``/``t-`` "
        "of Unbiased LambdaMART (Hu et al. 2019), here for every objective."),
    "position_bias_norm": Param(
        1.0, [Interval(Real, 0, None, closed="left")], "float",
        "``p`` of the pairwise estimator's update ``t[k] = (L[k] / L[1]) ** (1 / (1 + p))`` "
        "(XGBoost's ``lambdarank_bias_norm``)."),
    "position_col": Param(
        "position", [str, None], "str or None",
        "DataFrame column holding the positions, used (and dropped from the features) only when "
        "``position_bias`` is set."),
}

#: ``_parameter_constraints`` of the boosting parameters.
BOOSTING_CONSTRAINTS = {name: p.constraints for name, p in BOOSTING_PARAMS.items()}

#: Names of the settings a backend takes, in declaration order.
BACKEND_SETTINGS = tuple(name for name, p in BOOSTING_PARAMS.items() if p.backend)


def parameter_docs(params=BOOSTING_PARAMS):
    """Numpydoc entries of ``params`` (indented for a class docstring)."""
    def default(v):
        return f'"{v}"' if isinstance(v, str) else repr(v)

    return "\n".join(
        f"    {name} : {p.type}, default={default(p.default)}\n        {p.doc}" for name, p in params.items()
    )


def store_arguments(estimator, arguments):
    """``__init__``'s body: store every argument under its own name."""
    for name, value in arguments.items():
        if name != "self":
            setattr(estimator, name, value)
