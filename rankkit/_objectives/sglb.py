"""SGLB: the gradient-noise half of Stochastic Gradient Langevin Boosting.

Ustimenko & Prokhorenkova, *SGLB: Stochastic Gradient Langevin Boosting*,
ICML 2021. Each boosting iteration adds ``sqrt(2 / (eta beta)) xi_i``,
``xi_i ~ N(0, 1)``, to every document's gradient. The other half, shrinking
the model by ``(1 - gamma eta)`` before each iteration, acts on trees and
lives in the backends.
"""

from __future__ import annotations

import math
import numbers

import numba
import numpy as np
from numba import njit

from .._random import key, mix64, noise_ranks, normal
from ._base import RankingObjective

# Salt of the noise key: the wrapped objective draws from (seed, query * K + sample),
# the Langevin noise from a key derived from (seed ^ salt), so the two never share draws.
_NOISE_SALT = np.uint64(0x5C1B_6A7E_D1F0_5E9D)


@njit(cache=True, parallel=True)
def add_gaussian_noise(grad, y, raw, group_ptr, scale, seed, iwork):
    """``grad[i] += scale * normal(key(mix64(seed ^ salt), q), rank[i])``.

    ``q`` is the query of row ``i`` and ``rank`` comes from
    :func:`~rankkit._random.noise_ranks` (the row's place in its query sorted by
    ``raw``), so the draw of a document depends neither on the thread count
    nor on the order of the rows within its query. ``iwork``: (3, n) int64
    scratch.
    """
    base = mix64(np.uint64(seed) ^ _NOISE_SALT)
    rank = iwork[2]
    for q in numba.prange(group_ptr.shape[0] - 1):
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        noise_ranks(raw, y, lo, hi, iwork[0], iwork[1], rank)
        k = key(base, q)
        for i in range(lo, hi):
            grad[i] += scale * normal(k, rank[i])


def _positive(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) and v > 0


class SGLB(RankingObjective):
    r"""Langevin gradient noise around any ranking objective.

    ``g_i <- g_i + sqrt(2 / (eta beta)) xi_i`` with ``xi_i ~ N(0, 1)`` fresh on
    every call (Ustimenko & Prokhorenkova 2021, Algorithm 1), where ``eta`` is the booster's learning rate and ``beta`` the
    inverse diffusion temperature. Together with model shrinkage (done by the
    backends) the boosting iterates sample from a distribution concentrated
    on the global optimum, which StochasticRank's global convergence
    (Ustimenko & Prokhorenkova 2020, Theorem 5) relies on.

    Parameters
    ----------
    objective : RankingObjective
        The wrapped objective; it receives this call's seed, so
        ``SGLB(obj)`` minus ``obj`` with the same seed is exactly the noise.
    learning_rate : float, default=0.1
        ``eta`` (> 0): the booster's learning rate.
    diffusion_temperature : float, default=1e4
        ``beta`` (> 0), CatBoost's ``diffusion_temperature``.
    random_state : int, Generator or None
        Source of the per-call seeds.

    Notes
    -----
    Hessians are the wrapped objective's (``uses_hessian`` is forwarded); a
    ``sample_weight`` multiplies the noisy gradient like any gradient.

    Examples
    --------
    >>> import numpy as np
    >>> from rankkit.objectives import QueryRMSE
    >>> from rankkit._objectives.sglb import SGLB
    >>> obj = SGLB(QueryRMSE(), learning_rate=0.1, diffusion_temperature=200.0)
    >>> round(obj.noise_scale, 4)  # sqrt(2 / (0.1 * 200))
    0.3162
    >>> g, h = obj.gradient_hessian([1, 0, 2], [0.0, 0.0, 0.0], qid=[0, 0, 0], seed=1)
    >>> g0, _ = QueryRMSE().gradient_hessian([1, 0, 2], [0.0, 0.0, 0.0], qid=[0, 0, 0])
    >>> bool(np.all(g != g0)), h.tolist()
    (True, [1.0, 1.0, 1.0])
    """

    def __init__(self, objective, *, learning_rate=0.1, diffusion_temperature=1e4, random_state=None):
        self.objective = objective
        self.learning_rate = learning_rate
        self.diffusion_temperature = diffusion_temperature
        self.random_state = random_state

    @property
    def uses_hessian(self):
        return self.objective.uses_hessian

    @property
    def translation_invariant(self):
        return self.objective.translation_invariant

    @property
    def noise_scale(self):
        """``sqrt(2 / (learning_rate * diffusion_temperature))``."""
        return math.sqrt(2.0 / (self.learning_rate * self.diffusion_temperature))

    def _check_params(self):
        if not isinstance(self.objective, RankingObjective) or isinstance(self.objective, type):
            raise TypeError(
                f"objective must be a RankingObjective instance such as StochasticRank(), "
                f"got {self.objective!r}."
            )
        if not _positive(self.learning_rate):
            raise ValueError(f"learning_rate must be a finite float > 0, got {self.learning_rate!r}.")
        if not _positive(self.diffusion_temperature):
            raise ValueError(
                f"diffusion_temperature must be a finite float > 0 (inverse temperature beta, "
                f"e.g. 1e4), got {self.diffusion_temperature!r}."
            )
        if not math.isfinite(self.noise_scale):
            raise ValueError(
                "sqrt(2 / (learning_rate * diffusion_temperature)) overflows; "
                "raise learning_rate or diffusion_temperature."
            )
        self.objective._check_params()

    def _check_labels(self, y):
        self._check_params()
        return self.objective._check_labels(y)

    def _gradient_hessian_sorted(self, y, raw, group_ptr, seed):
        grad, hess = self.objective._gradient_hessian_sorted(y, raw, group_ptr, seed)
        n = y.shape[0]
        add_gaussian_noise(grad, y, raw, np.ascontiguousarray(group_ptr, dtype=np.int64),
                           self.noise_scale, np.int64(seed), np.empty((3, n), dtype=np.int64))
        return grad, hess

    def _compute(self, y, raw, group_ptr, seed, grad, hess):
        g, h = self._gradient_hessian_sorted(y, raw, group_ptr, seed)
        grad[:] = g
        hess[:] = h
