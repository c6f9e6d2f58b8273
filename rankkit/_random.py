"""Counter-based random numbers for numba kernels.

Kernels never touch a global RNG: every random number is a pure function of
``(seed, query key, stream, index)``, so results do not depend on how
``prange`` splits queries over threads. ``seed`` is a 64-bit int drawn once
per call from the caller's ``random_state``; the **query key** is a stable
64-bit hash of the query id's *value* (:func:`query_keys`), so a query draws
the same numbers wherever it sits: first or last in the arrays, on one
machine or on any worker of a cluster (:mod:`rankkit.dask`); ``stream`` is
the sample or permutation number within the call (:func:`query_stream`),
``index`` the document's place in its query sorted by score
(:func:`noise_ranks`).

**Query keys** (:func:`query_keys`), one per query id value ``v``:

* an integer (any NumPy integer or bool, a Python int; a float with an
  integral value, so ``3.0`` and ``3`` agree; a datetime as its int64
  nanoseconds): ``mix64(v mod 2**64)``, the splitmix64 finaliser of its
  64-bit two's complement;
* any other float: ``mix64`` of its IEEE-754 float64 bits;
* a string: ``mix64(fnv1a64(UTF-8 bytes))`` (64-bit FNV-1a); bytes: the same
  on the bytes themselves;
* any other object: the string rule on ``str(v)`` (stable only for objects
  whose ``str`` shows their value, e.g. tuples).

None of this depends on ``PYTHONHASHSEED``, the process or the machine.
**Without query ids** -- an engine's dataset (``xgboost.DMatrix``,
``lightgbm.Dataset``) or ``gradient_hessian(group_ptr=...)``, which know only
query boundaries -- query ``q`` (0-based, in array order) takes the key of the
integer id ``q`` (:func:`index_query_keys`): the draws are then those of
``qid = 0, 1, 2, ...`` and depend on the queries' order.
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
def query_stream(seed, query_key, stream):
    """Key of random stream ``stream`` (a sample or permutation number) of the
    query with key ``query_key`` (:func:`query_keys`) in a call seeded ``seed``:
    ``key(key(seed, query_key), stream)``."""
    return key(key(seed, query_key), stream)


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


_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@njit(cache=True)
def _fnv1a_mix64(buffer, offsets, out):
    """``out[j] = mix64(fnv1a64(buffer[offsets[j]:offsets[j + 1]]))``."""
    for j in range(out.shape[0]):
        h = _FNV_OFFSET
        for b in range(offsets[j], offsets[j + 1]):
            h = (h ^ np.uint64(buffer[b])) * _FNV_PRIME
        out[j] = mix64(h)


def _mix64_array(x):
    """:func:`mix64` of every element of a uint64 array (NumPy, wrapping)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def _bytes_keys(items):
    """Keys of a sequence of ``bytes``: ``mix64(fnv1a64(b))`` each."""
    lengths = np.fromiter((len(b) for b in items), dtype=np.int64, count=len(items))
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    buffer = np.frombuffer(b"".join(items), dtype=np.uint8)
    out = np.empty(len(items), dtype=np.uint64)
    _fnv1a_mix64(buffer, offsets, out)
    return out


def _int_keys(values):
    """Keys of integers (any NumPy integer dtype): mix64 of the 64-bit two's complement."""
    values = np.asarray(values)
    if values.dtype.kind == "u":
        return _mix64_array(values.astype(np.uint64, copy=False))
    return _mix64_array(values.astype(np.int64, copy=False).view(np.uint64))


def _float_keys(values):
    """Keys of floats: integral values as the integer, others by their float64 bits."""
    values = np.atleast_1d(np.asarray(values, dtype=np.float64))
    integral = (values == np.floor(values)) & (np.abs(values) < 2.0**63)
    out = _mix64_array(values.view(np.uint64))
    if integral.any():
        out[integral] = _int_keys(values[integral].astype(np.int64))
    return out


def _object_key(value):
    """Key of one Python object (see the module docstring)."""
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return int(_mix64_array(np.array([int(value) % 2**64], dtype=np.uint64))[0])
    if isinstance(value, (float, np.floating)):
        return int(_float_keys(np.float64(value))[0])
    if isinstance(value, np.datetime64):
        return int(_int_keys(np.array([value], dtype="datetime64[ns]").astype(np.int64))[0])
    if hasattr(value, "value") and hasattr(value, "tz_localize"):  # pandas.Timestamp
        return int(_int_keys(np.array([value.value], dtype=np.int64))[0])
    data = value if isinstance(value, bytes) else str(value).encode("utf-8")
    return int(_bytes_keys([data])[0])


def query_keys(values):
    """Stable 64-bit keys of query id values (one per value; see the module docstring).

    Parameters
    ----------
    values : array-like of shape (n,)
        Query id values: ints, floats, strings, bytes, datetimes or other
        objects (a pandas ``Index``, ``Categorical`` or array).

    Returns
    -------
    ndarray of uint64, shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from rankkit._random import query_keys, index_query_keys
    >>> bool(query_keys([7])[0] == query_keys([7.0])[0] == query_keys(np.array(["x", 7], dtype=object))[1])
    True
    >>> bool((query_keys([0, 1, 2]) == index_query_keys(3)).all())
    True
    """
    if hasattr(values, "categories") and hasattr(values, "codes"):  # a Categorical
        values = np.asarray(values.categories.take(values.codes))
    arr = np.asarray(values)
    if arr.ndim != 1:  # e.g. a list of tuples: one object per id
        items = list(values)
        arr = np.empty(len(items), dtype=object)
        arr[:] = items
    kind = arr.dtype.kind
    if kind in "iub":
        return _int_keys(arr)
    if kind == "f":
        return _float_keys(arr)
    if kind == "M":
        return _int_keys(arr.astype("datetime64[ns]").astype(np.int64))
    if kind == "U":
        return _bytes_keys([s.encode("utf-8") for s in arr.tolist()])
    if kind == "S":
        return _bytes_keys(arr.tolist())
    items = arr.tolist()
    if all(isinstance(v, str) for v in items):  # the common object case, vectorised
        return _bytes_keys([v.encode("utf-8") for v in items])
    return np.fromiter((_object_key(v) for v in items), dtype=np.uint64, count=len(items))


def index_query_keys(n_queries):
    """Keys of queries known only by their place: those of the ids ``0 .. n_queries - 1``."""
    return _int_keys(np.arange(int(n_queries), dtype=np.int64))


def seed_from(random_state):
    """One 63-bit seed from an int, None or a ``numpy.random.Generator``/RandomState."""
    from sklearn.utils import check_random_state

    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    rs = check_random_state(random_state)
    return int(rs.randint(0, 2**31 - 1)) * (2**31) + int(rs.randint(0, 2**31 - 1))
