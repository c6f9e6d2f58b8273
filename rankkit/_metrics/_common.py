"""One definition of every metric's building blocks.

Metric kernels (``rankkit.metrics``) and objective kernels (swap differences
in ``rankkit.objectives``) both use these functions, so a metric and the
objective that optimises it cannot drift apart.

Positions are 0-based here: position ``p`` is rank ``p + 1``.
"""

import math

import numpy as np
from numba import njit

# Metric ids passed to kernels (plain ints: no Python objects cross kernels).
NDCG, DCG, ERR, MRR, MAP, EXPDCG = 0, 1, 2, 3, 4, 5
METRIC_IDS = {"ndcg": NDCG, "dcg": DCG, "err": ERR, "mrr": MRR, "map": MAP, "expdcg": EXPDCG}

# Tie policies.
TIES = {"worst": 0, "average": 1, "best": 2, "input": 3}


@njit(cache=True, inline="always")
def gain(r, exp_gain):
    """DCG gain: ``2^r - 1`` (exp) or ``r`` (linear)."""
    if exp_gain:
        return math.pow(2.0, r) - 1.0
    return r


@njit(cache=True, inline="always")
def discount(p):
    """DCG discount of 0-based position ``p``: ``1 / log2(p + 2)``."""
    return 1.0 / math.log2(p + 2.0)


@njit(cache=True, inline="always")
def err_probability(r, err_scale):
    """ERR stop probability. ``err_scale <= 0``: labels are probabilities
    already; otherwise Chapelle's mapping ``(2^r - 1) / err_scale`` with
    ``err_scale = 2^{r_max}``."""
    if err_scale <= 0.0:
        return r
    return (math.pow(2.0, r) - 1.0) / err_scale


@njit(cache=True, inline="always")
def is_relevant(r, threshold):
    """MRR/MAP binarisation: relevant iff the label exceeds the threshold."""
    return r > threshold


def parse_metric(metric, k=None):
    """``"ndcg@10"`` -> ``("ndcg", 10)``; ``("ndcg", k)`` passes through.

    A ``@k`` suffix and an explicit ``k`` must agree.
    """
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string such as 'ndcg@10', got {metric!r}.")
    name, _, suffix = metric.lower().strip().partition("@")
    if name not in METRIC_IDS:
        raise ValueError(
            f"Unknown metric {metric!r}; valid metrics are {sorted(METRIC_IDS)} "
            "(optionally with @k, e.g. 'ndcg@10')."
        )
    if suffix:
        try:
            k_suffix = int(suffix)
        except ValueError:
            raise ValueError(f"metric {metric!r}: the part after '@' must be an int.") from None
        if k_suffix <= 0:
            raise ValueError(f"metric {metric!r}: k must be a positive int.")
        if k is not None and k != k_suffix:
            raise ValueError(f"metric {metric!r} says k={k_suffix} but k={k} was passed.")
        k = k_suffix
    return name, k


def chapelle_scale(y):
    """``2^{r_max}`` for Chapelle's ERR mapping of graded labels."""
    return float(2.0 ** np.max(y)) if np.size(y) else 1.0
