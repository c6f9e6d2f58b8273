"""QueryRMSE: squared error after removing each query's mean residual."""

import numba
from numba import njit

from ._base import RankingObjective


@njit(cache=True, parallel=True)
def query_rmse_kernel(y, raw, group_ptr, grad):
    """``g_i = (z_i - r_i) - mean_query(z - r)``."""
    for q in numba.prange(group_ptr.shape[0] - 1):
        a, b = group_ptr[q], group_ptr[q + 1]
        s = 0.0
        for i in range(a, b):
            s += raw[i] - y[i]
        mean = s / max(b - a, 1)
        for i in range(a, b):
            grad[i] = raw[i] - y[i] - mean


class QueryRMSE(RankingObjective):
    """Query-centred squared error (CatBoost's ``QueryRMSE``).

    Per query, ``L = 1/2 sum_i ((z_i - r_i) - mean_q(z - r))^2``, so
    ``g_i = (z_i - r_i) - mean_q(z - r)`` and ``h_i = 1``. A strong and
    simple baseline (Lyzhin et al. 2022, Table 2).

    Examples
    --------
    >>> import numpy as np
    >>> from rankkit.objectives import QueryRMSE
    >>> g, h = QueryRMSE().gradient_hessian([2, 0, 1], [0.0, 0.0, 0.0], qid=[7, 7, 7])
    >>> g.tolist(), h.tolist()
    ([-1.0, 1.0, 0.0], [1.0, 1.0, 1.0])
    """

    #: A sum of squared errors over documents: hessians already count documents.
    per_query_loss = False

    #: Labels enter the loss as they are (``rankkit._clicks`` debiases in this gain).
    label_gain = "linear"

    def __init__(self):
        pass

    def _compute(self, y, raw, group_ptr, seed, grad, hess, query_keys):
        query_rmse_kernel(y, raw, group_ptr, grad)
        hess[:] = 1.0
