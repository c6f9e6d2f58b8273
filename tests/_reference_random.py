"""An independent re-implementation of rankkit's counter-based random numbers.

Plain Python integers, written from the specification in ``rankkit/_random.py``
and the objectives' docstrings, not by calling them: the references of the
random objectives draw their noise here, so a bug in the generator or in how
an objective keys its draws (seed, query, round, document) makes them differ.

- ``mix64``: the splitmix64 finaliser; ``key(seed, stream) = mix64(seed +
  golden * (stream + 1))``; ``uniform(k, i)`` is 53 bits of
  ``mix64(k ^ golden * (i + 1))`` shifted by half an ulp into (0, 1);
  ``normal(k, i)`` is Box-Muller on ``uniform(k, 2i)``, ``uniform(k, 2i + 1)``;
  ``logistic(k, i) = log(u / (1 - u))`` with ``u = uniform(k, i)``.
- A document's counter is its place in its query sorted by score, ties less
  relevant first, then by row (``_reference_objectives.noise_ranks``).
"""

import math

from ._reference_objectives import noise_ranks

_MASK = (1 << 64) - 1
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_GOLDEN = 0x9E3779B97F4A7C15
#: The salt that separates the SGLB noise from the wrapped objective's draws.
SGLB_SALT = 0x5C1B6A7ED1F05E9D


def mix64(x):
    x &= _MASK
    x = ((x ^ (x >> 30)) * _M1) & _MASK
    x = ((x ^ (x >> 27)) * _M2) & _MASK
    return x ^ (x >> 31)


def key(seed, stream):
    return mix64(int(seed) + _GOLDEN * (int(stream) + 1))


def uniform(k, index):
    x = mix64(k ^ ((_GOLDEN * (int(index) + 1)) & _MASK))
    return ((x >> 11) + 0.5) * (1.0 / 9007199254740992.0)


def normal(k, index):
    u1 = uniform(k, 2 * index)
    u2 = uniform(k, 2 * index + 1)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def logistic(k, index):
    u = uniform(k, index)
    return math.log(u / (1.0 - u))


def draws(y, z, group_ptr, stream_key, draw):
    """One draw per document: ``draw(stream_key(q), rank)`` with ``rank`` the
    document's counter in its query. Returns a list of floats in row order."""
    rank = noise_ranks(y, z, group_ptr)
    out = [0.0] * len(y)
    for q in range(len(group_ptr) - 1):
        k = stream_key(q)
        for i in range(group_ptr[q], group_ptr[q + 1]):
            out[i] = draw(k, int(rank[i]))
    return out


def yetirank_noise(y, z, group_ptr, seed, n_permutations, perm, noise, scale):
    """YetiRank's noise of round ``perm``: ``scale`` times a logistic or normal
    draw keyed by ``(seed, q * n_permutations + perm)``; zeros for ``"none"``."""
    if noise == "none":
        return [0.0] * len(y)
    draw = logistic if noise == "logistic" else normal
    return [scale * v for v in draws(y, z, group_ptr, lambda q: key(seed, q * n_permutations + perm), draw)]


def xendcg_gammas(y, z, group_ptr, seed):
    """XE-NDCG's ``gamma_i ~ U(0, 1)``, keyed by ``(seed, q)``."""
    return draws(y, z, group_ptr, lambda q: key(seed, q), uniform)


def stochastic_rank_noise(y, z, group_ptr, seed, n_estimations):
    """StochasticRank's ``N(0, 1)`` draws, one row per sample ``e``, keyed by
    ``(seed, q * n_estimations + e)``."""
    return [draws(y, z, group_ptr, lambda q, e=e: key(seed, q * n_estimations + e), normal)
            for e in range(n_estimations)]


def sglb_noise(y, z, group_ptr, seed):
    """SGLB's ``N(0, 1)`` draws, keyed by ``(mix64(seed ^ salt), q)``."""
    base = mix64(int(seed) ^ SGLB_SALT)
    return draws(y, z, group_ptr, lambda q: key(base, q), normal)
