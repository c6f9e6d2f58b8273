"""rankkit: learning to rank with gradient boosting, as scikit-learn estimators.

The rankers live here; metrics, objectives, splitters and data loaders live in
``rankkit.metrics``, ``rankkit.objectives``, ``rankkit.model_selection`` and
``rankkit.datasets``; comparisons of rankers and TREC files in
``rankkit.evaluation`` and ``rankkit.trec``.
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
