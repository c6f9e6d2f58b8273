"""An independent re-implementation of rankkit's counter-based random numbers.

Plain Python integers, written from the specification in ``rankkit/_random.py``
and the objectives' docstrings, not by calling them: the references of the
random objectives draw their noise here, so a bug in the generator or in how
an objective keys its draws (seed, query, round, document) makes them differ.

- ``mix64``: the splitmix64 finaliser; ``key(seed, stream) = mix64(seed +
  golden * (stream + 1))``; the stream of query id ``v`` and sample/round
  ``s`` is ``key(key(seed, query_key(v)), s)``; ``uniform(k, i)`` is 53 bits of
  ``mix64(k ^ golden * (i + 1))`` shifted by half an ulp into (0, 1);
  ``normal(k, i)`` is Box-Muller on ``uniform(k, 2i)``, ``uniform(k, 2i + 1)``;
  ``logistic(k, i) = log(u / (1 - u))`` with ``u = uniform(k, i)``.
- ``query_key(v)``: ``mix64(v mod 2**64)`` for an integer (or an integral
  float), ``mix64`` of the float64 bits of another float, ``mix64(fnv1a64)``
  of the UTF-8 bytes of a string (the bytes themselves for bytes), the string
  rule on ``str(v)`` otherwise. Queries known only by their place ``q`` (a
  ``group_ptr``) use ``query_key(q)``.
- A document's counter is its place in its query sorted by score, ties less
  relevant first, then by row (``_reference_objectives.noise_ranks``).
"""

import math
import struct

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


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & _MASK
    return h


def query_key(value):
    """The key of one query id value."""
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        value = float(value)
        if value == math.floor(value) and abs(value) < 2.0**63:
            return mix64(int(value) & _MASK)
        return mix64(struct.unpack("<Q", struct.pack("<d", value))[0])
    if isinstance(value, int) or type(value).__name__.startswith(("int", "uint", "bool")):
        return mix64(int(value) & _MASK)
    if isinstance(value, bytes):
        return mix64(fnv1a64(value))
    return mix64(fnv1a64(str(value).encode("utf-8")))


def stream_key(seed, qkey, stream):
    """Key of stream ``stream`` (sample, round) of the query with key ``qkey``."""
    return key(key(seed, qkey), stream)


def index_keys(n_queries):
    """Keys of queries known only by their place (a ``group_ptr``)."""
    return [query_key(q) for q in range(n_queries)]


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


def draws(y, z, group_ptr, key_of_query, draw):
    """One draw per document: ``draw(key_of_query(q), rank)`` with ``rank`` the
    document's counter in its query. Returns a list of floats in row order."""
    rank = noise_ranks(y, z, group_ptr)
    out = [0.0] * len(y)
    for q in range(len(group_ptr) - 1):
        k = key_of_query(q)
        for i in range(group_ptr[q], group_ptr[q + 1]):
            out[i] = draw(k, int(rank[i]))
    return out


def _keys(group_ptr, keys):
    return index_keys(len(group_ptr) - 1) if keys is None else [int(k) for k in keys]


def yetirank_noise(y, z, group_ptr, seed, perm, noise, scale, keys=None):
    """YetiRank's noise of round ``perm``: ``scale`` times a logistic or normal
    draw of stream ``perm`` of each query; zeros for ``"none"``. ``keys``: the
    queries' keys (default: by place)."""
    if noise == "none":
        return [0.0] * len(y)
    draw = logistic if noise == "logistic" else normal
    keys = _keys(group_ptr, keys)
    return [scale * v for v in draws(y, z, group_ptr, lambda q: stream_key(seed, keys[q], perm), draw)]


def xendcg_gammas(y, z, group_ptr, seed, keys=None):
    """XE-NDCG's ``gamma_i ~ U(0, 1)``, stream 0 of each query."""
    keys = _keys(group_ptr, keys)
    return draws(y, z, group_ptr, lambda q: stream_key(seed, keys[q], 0), uniform)


def stochastic_rank_noise(y, z, group_ptr, seed, n_estimations, keys=None):
    """StochasticRank's ``N(0, 1)`` draws, one row per sample ``e`` (stream ``e``)."""
    keys = _keys(group_ptr, keys)
    return [draws(y, z, group_ptr, lambda q, e=e: stream_key(seed, keys[q], e), normal)
            for e in range(n_estimations)]


def sglb_noise(y, z, group_ptr, seed, keys=None):
    """SGLB's ``N(0, 1)`` draws: stream 0 of each query under ``mix64(seed ^ salt)``."""
    base = mix64(int(seed) ^ SGLB_SALT)
    keys = _keys(group_ptr, keys)
    return draws(y, z, group_ptr, lambda q: stream_key(base, keys[q], 0), normal)
