"""XE-NDCG: cross entropy between a softmax of the scores and a noisy gain distribution."""

import math

import numba
import numpy as np
from numba import njit

from .._metrics._common import check_exp_gain
from .._random import noise_ranks, query_stream, uniform
from ._base import RankingObjective


@njit(cache=True)
def xendcg_gammas(y, raw, group_ptr, seed, query_key, q, out, iwork):
    """``gamma_i ~ U(0, 1)`` of query ``q`` (key ``query_key``) into
    ``out[lo:hi]``, drawn from ``query_stream(seed, query_key, 0)`` at counter
    :func:`~rankkit._random.noise_ranks` ``[i]`` (so a permutation of the rows
    permutes the draws; independent of threading and of the query's place).
    ``iwork`` is (3, n) int64 scratch."""
    lo = group_ptr[q]
    hi = group_ptr[q + 1]
    rank = iwork[2]
    noise_ranks(raw, y, lo, hi, iwork[0], iwork[1], rank)
    kk = query_stream(seed, query_key, 0)
    for i in range(lo, hi):
        out[i] = uniform(kk, rank[i])


@njit(cache=True, parallel=True)
def xendcg_kernel(y, raw, group_ptr, query_key, seed, grad, hess, gamma, iwork):
    """``g_i = rho_i - phi_i``, ``h_i = rho_i (1 - rho_i)`` per query, with
    ``rho = softmax(z)`` (max-shifted) and
    ``phi_i = (2^{r_i} - gamma_i) / sum_j (2^{r_j} - gamma_j)``.
    ``gamma`` (n,) receives the draws; ``iwork`` is (3, n) int64 scratch."""
    for q in numba.prange(group_ptr.shape[0] - 1):
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        if hi - lo < 2:
            # softmax and target are both 1: no gradient.
            continue
        xendcg_gammas(y, raw, group_ptr, seed, query_key[q], q, gamma, iwork)
        zmax = raw[lo]
        for i in range(lo + 1, hi):
            zmax = max(zmax, raw[i])
        zsum = 0.0
        psum = 0.0
        for i in range(lo, hi):
            zsum += math.exp(raw[i] - zmax)
            # 2^r - gamma >= 1 - gamma > 0: the target never degenerates.
            psum += math.pow(2.0, y[i]) - gamma[i]
        for i in range(lo, hi):
            rho = math.exp(raw[i] - zmax) / zsum
            phi = (math.pow(2.0, y[i]) - gamma[i]) / psum
            grad[i] = rho - phi
            hess[i] = rho * (1.0 - rho)


class XENDCG(RankingObjective):
    r"""XE-NDCG, the cross-entropy ranking loss of Bruch (2019).

    Per query and call, draw :math:`\gamma_i \sim U(0, 1)` and set

    .. math::

        \phi_i = \frac{2^{r_i} - \gamma_i}{\sum_j (2^{r_j} - \gamma_j)}, \qquad
        \rho = \operatorname{softmax}(z), \qquad
        L = -\sum_i \phi_i \log \rho_i,

    so :math:`g_i = \rho_i - \phi_i` (the exact gradient for the drawn
    :math:`\gamma`; sums to zero per query) and
    :math:`h_i = \rho_i (1 - \rho_i)` (the diagonal of the Hessian).

    Parameters
    ----------
    random_state : int, RandomState instance or None, default=0
        (None: fresh seeds every run.) Seeds the per-call :math:`\gamma`. The draw of a document is a
        function of the seed, its query id's value and its place in the query
        sorted by score (ties: less relevant first, then row order): results
        do not depend on the thread count, and permuting the rows of a query
        permutes the gradients.

    Notes
    -----
    LightGBM's ``rank_xendcg`` hands its trees another vector for the same
    :math:`\gamma`: :math:`\lambda = D (I + A + A^2) D^{-1} g` with
    :math:`D = \operatorname{diag}(\rho_i (1 - \rho_i))`, :math:`A = D^{-1} O`,
    :math:`O_{ij} = \rho_i \rho_j` (:math:`i \ne j`): the first terms of a
    Neumann series of the inverse Hessian :math:`H = D - O` (Bruch 2019,
    section 4.4), so that its leaves approximate a Newton step with the full
    Hessian; it also truncates labels to ints in :math:`2^{r}`. rankkit returns
    the exact gradient of the loss above (a Newton step with the diagonal of the
    Hessian, as for every other objective), for real-valued labels. The two
    agree to first order while the softmax is flat; on LightGBM's engine with
    the same regularisation they differ by a few tenths of a point of test
    NDCG@10, not significantly (``benchmarks/bench_xendcg.py``;
    ``docs/backends.md``). Unlike the pairwise
    objectives, a query whose labels are all equal still gets a gradient:
    the random target pulls the softmax towards a random split of the mass
    (zero in expectation only when the scores are equal too). Queries of one
    document get none.

    References
    ----------
    S. Bruch, "An Alternative Cross Entropy Loss for Learning-to-Rank",
    arXiv:1911.09798, 2019 (WWW 2021).

    Examples
    --------
    >>> from rankkit._objectives.xendcg import XENDCG
    >>> g, h = XENDCG(random_state=0).gradient_hessian([0, 3], [0.0, 0.0], qid=[1, 1])
    >>> bool(g[1] < 0 < g[0]) and bool(abs(g.sum()) < 1e-12)
    True
    """

    _parameter_constraints = {"random_state": ["random_state"]}

    def __init__(self, *, random_state=0):
        self.random_state = random_state

    def _check_labels(self, y):
        y = super()._check_labels(y)
        # The target distribution is built from 2^r: the same overflow as DCG's exp gain.
        check_exp_gain(y, name="y", fix="XE-NDCG's target uses 2^r: rescale the labels (e.g. to grades 0-4)")
        return y

    def _compute(self, y, raw, group_ptr, seed, grad, hess, query_keys):
        n = y.shape[0]
        xendcg_kernel(y, raw, group_ptr, query_keys, np.uint64(seed), grad, hess, np.empty(n),
                      np.empty((3, n), dtype=np.int64))
