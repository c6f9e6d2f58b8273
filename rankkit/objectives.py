"""Ranking objectives: gradients and hessians as numba kernels.

Every objective is usable three ways: ``obj.gradient_hessian(y, raw, qid=...)``,
as an XGBoost ``obj=`` callable, and as a LightGBM ``params["objective"]``.
"""

from ._objectives._base import HESSIAN_FLOOR, RankingObjective
from ._objectives.query_rmse import QueryRMSE

__all__ = ["HESSIAN_FLOOR", "RankingObjective", "QueryRMSE"]
