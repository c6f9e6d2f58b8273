"""The backend registry as test parameters.

Every registered backend takes part in the shared tests; one whose engine is
not installed is skipped with the install hint (not failed, and not silently
left out of the parameter list).
"""

import numpy as np
import pytest

from rankkit._backends import BACKENDS, get_backend
from rankkit._groups import make_groups
from rankkit.datasets import make_ranking
from rankkit.objectives import QueryRMSE


def _missing_engine(name):
    """The install hint when ``name``'s engine is missing, else None."""
    try:
        get_backend(name)
    except ImportError as exc:
        return str(exc)
    return None


def installed(name):
    return _missing_engine(name) is None


def installed_backends():
    """Names of the registered backends whose engines are installed."""
    return [name for name in BACKENDS if installed(name)]


#: Every registered backend as a pytest parameter, skipped when its engine is missing.
BACKENDS_UNDER_TEST = [
    name if installed(name) else pytest.param(name, marks=pytest.mark.skip(reason=_missing_engine(name)))
    for name in BACKENDS
]


def ranking_data():
    """The engine backends' test data: 60 queries, 6 features, float64 labels."""
    X, y, qid = make_ranking(n_queries=60, n_features=6, max_docs=25, random_state=3)
    return X, y.astype(np.float64), qid


def small_backend(cls, n_estimators=12, **settings):
    """``cls`` with small, fixed settings (one thread, seed 0), overridden by ``settings``."""
    params = dict(n_estimators=n_estimators, learning_rate=0.3, max_depth=3, min_child_weight=1.0,
                  reg_lambda=1.0, subsample=1.0, colsample_bytree=1.0, max_bin=64, n_jobs=1,
                  random_state=0)
    params.update(settings)
    return cls(**params)


def fit_recording(backend, data, shrink, grad_scale=None):
    """Fit ``backend`` on QueryRMSE gradients of ``data`` (rows sorted by
    query) with every third row as an eval set and the SGLB schedule
    ``shrink``; ``grad_scale(t)`` multiplies iteration ``t``'s gradients.

    Returns the backend and what the loop showed: ``seen["grad_raw"][t]``,
    the scores ``grad_fn`` got; ``seen["train"][t]`` and ``seen["eval"][t]``,
    the scores the callback got after iteration ``t``.
    """
    X, y, qid = data
    ptr = make_groups(qid, len(qid)).group_ptr
    obj = QueryRMSE()
    seen = {"grad_raw": [], "train": [], "eval": []}

    def grad_fn(raw, t):
        seen["grad_raw"].append(raw.copy())
        g, h = obj._gradient_hessian_sorted(y, raw, ptr, 0)
        if grad_scale is not None:
            g *= grad_scale(t)
        return g, h

    def callback(t, raw_train, raw_evals):
        seen["train"].append(raw_train.copy())
        seen["eval"].append(raw_evals[0].copy())
        return False

    backend.fit(X, grad_fn, eval_X=[X[::3]], shrink=shrink, callback=callback)
    return backend, seen


def in_query_units(objective):
    """``objective`` as an engine hook whose gradients and hessians reach the
    engine the way a ranker hands them over: per-query losses in query units
    (``query_hessian_units``), others as they are."""
    from rankkit._objectives._base import query_hessian_units

    def hook(preds, data):
        grad, hess = objective(preds, data)
        if objective.uses_hessian and objective.per_query_loss:
            n_queries = len(data.get_group()) if hasattr(data, "get_group") else len(
                data.get_uint_info("group_ptr")) - 1
            query_hessian_units(grad, hess, n_queries)
        return grad, hess

    return hook
