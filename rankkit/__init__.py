"""rankkit: learning to rank with gradient boosting, as scikit-learn estimators.

The rankers live here; metrics, objectives, splitters and data loaders live in
``rankkit.metrics``, ``rankkit.objectives``, ``rankkit.model_selection`` and
``rankkit.datasets``; comparisons of rankers and TREC files in
``rankkit.evaluation`` and ``rankkit.trec`` (each loaded on first use after
``import rankkit``).
"""

from ._threads import openmp_wait_policy, start_numba_threads

# The OpenMP runtimes loaded here (numba's pool; the one scikit-learn's wheel
# bundles, which XGBoost's shares) spin briefly, then sleep: see rankkit._threads.
with openmp_wait_policy():
    start_numba_threads()
    from ._estimators import (
        LambdaMARTRanker,
        QueryRMSERanker,
        Ranker,
        StochasticRankRanker,
        XENDCGRanker,
        YetiRanker,
    )
from ._persistence import load_model  # noqa: E402

__version__ = "0.1.0"

#: Submodules imported on first use, so that ``import rankkit`` then
#: ``rankkit.metrics.ndcg_score`` works as in NumPy and SciPy (``rankkit.dask``,
#: which needs the ``dask`` extra, is imported by name).
_SUBMODULES = ("callback", "datasets", "evaluation", "metrics", "model_selection", "objectives", "plotting", "trec")


def __getattr__(name):
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_SUBMODULES})


__all__ = [
    "Ranker",
    "StochasticRankRanker",
    "YetiRanker",
    "LambdaMARTRanker",
    "XENDCGRanker",
    "QueryRMSERanker",
    "load_model",
    "__version__",
]
