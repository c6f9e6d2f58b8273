"""Ranking objectives: gradients and hessians as numba kernels.

Every objective is usable four ways: ``obj.gradient_hessian(y, raw, qid=...)``,
as an XGBoost ``obj=`` callable, as a ``lightgbm.train`` ``params["objective"]``
and as ``lightgbm.LGBMRanker(objective=obj)`` (see ``RankingObjective.__call__``).
Gradients are those of the loss to minimise (``-metric``); hessians are at
least :data:`HESSIAN_FLOOR`.
"""

from ._objectives._base import HESSIAN_FLOOR, RankingObjective
from ._objectives.lambdamart import LambdaMART
from ._objectives.query_rmse import QueryRMSE
from ._objectives.stochastic_rank import StochasticRank
from ._objectives.xendcg import XENDCG
from ._objectives.yetirank import YetiRank
from ._sglb import SGLB

#: Every objective by name: the same dict parametrises the tests.
OBJECTIVES = {
    "stochastic_rank": StochasticRank,
    "yetirank": YetiRank,
    "lambdamart": LambdaMART,
    "xendcg": XENDCG,
    "query_rmse": QueryRMSE,
}

__all__ = [
    "HESSIAN_FLOOR",
    "OBJECTIVES",
    "RankingObjective",
    "StochasticRank",
    "YetiRank",
    "LambdaMART",
    "XENDCG",
    "QueryRMSE",
    "SGLB",
]
