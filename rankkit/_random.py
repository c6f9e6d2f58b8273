"""Counter-based random numbers for numba kernels.

Kernels never touch a global RNG: every random number is a pure function of
``(seed, stream, index)``, so results do not depend on how ``prange`` splits
queries over threads. ``seed`` is a 64-bit int drawn once per call from the
caller's ``random_state``; ``stream`` is usually the query index (times the
sample/permutation number), ``index`` the document's place in its query
sorted by score (:func:`noise_ranks`).
"""

import numpy as np
from numba import njit

from ._metrics._common import worst_order

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, inline="always")
def mix64(x):
    """splitmix64 finaliser: a bijective 64-bit hash with good avalanche."""
    x = np.uint64(x)
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


@njit(cache=True, inline="always")
def key(seed, stream):
    """Key for one stream (e.g. one query and sample) of a seeded call."""
    return mix64(np.uint64(seed) + _GOLDEN * (np.uint64(stream) + np.uint64(1)))


@njit(cache=True, inline="always")
def uniform(k, index):
    """Uniform in the open interval (0, 1) for counter ``index`` under key ``k``."""
    x = mix64(k ^ (_GOLDEN * (np.uint64(index) + np.uint64(1))))
    # 53 random bits, shifted by half an ulp so 0 and 1 never occur.
    return ((x >> np.uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@njit(cache=True, inline="always")
def normal(k, index):
    """Standard normal (Box-Muller on two uniforms from counters 2i, 2i+1)."""
    u1 = uniform(k, 2 * index)
    u2 = uniform(k, 2 * index + 1)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


@njit(cache=True, inline="always")
def logistic(k, index):
    """Standard logistic: log(u / (1 - u))."""
    u = uniform(k, index)
    return np.log(u / (1.0 - u))


@njit(cache=True)
def noise_ranks(raw, lab, lo, hi, order, buf, rank):
    """``rank[i]``: 0-based place of row ``i`` (``lo <= i < hi``) in its query
    in the ``worst`` order (score descending, ties less relevant first, then
    by row); ``order``/``buf`` are sort scratch.

    Random objectives draw a document's noise at this counter rather than at
    its row, so permuting the rows of a query moves every draw with its
    document: the result is permuted exactly, not just in distribution. Rows
    with equal score and label, the only ones the order cannot tell apart,
    are interchangeable for the objective anyway.
    """
    worst_order(raw, lab, lo, hi, order, buf)
    for p in range(lo, hi):
        rank[order[p]] = p - lo


def seed_from(random_state):
    """One 63-bit seed from an int, None or a ``numpy.random.Generator``/RandomState."""
    from sklearn.utils import check_random_state

    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    rs = check_random_state(random_state)
    return int(rs.randint(0, 2**31 - 1)) * (2**31) + int(rs.randint(0, 2**31 - 1))
