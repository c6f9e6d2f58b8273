"""rankkit: learning to rank with gradient boosting, as scikit-learn estimators.

The rankers live here; metrics, objectives, splitters and data loaders live in
``rankkit.metrics``, ``rankkit.objectives``, ``rankkit.model_selection`` and
``rankkit.datasets``.
"""

from ._threads import start_numba_threads_passive

start_numba_threads_passive()

from ._estimators import (  # noqa: E402
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
