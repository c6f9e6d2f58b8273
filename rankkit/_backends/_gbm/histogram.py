"""Gradient/hessian histograms of one node and one feature.

``h[b, 0]`` and ``h[b, 1]`` are the sums of gradients and hessians of the
node's rows whose feature falls in bin ``b`` (256 bins; bin 255 holds missing
values), in float64. A feature with ``nb`` non-missing bins uses bins
``0..nb-1`` and 255 only; the grower neither writes nor reads the others (at
depth 8 a level's histograms are tens of MB, and few-valued features, common
in LETOR data, would otherwise cost as much memory traffic as continuous ones).

Determinism: the grower (:func:`.grower.level_histograms`, the fused
production kernel; :func:`build_one` is its one-feature form) runs one
``prange`` task per (node, group of 8 features) and each task adds its rows
in position order, so no partial
sums are ever combined and results are bit-identical for any thread count.

Sibling subtraction (Ke et al. 2017, LightGBM; XGBoost ``hist``): only the
child with fewer rows is built from rows; the other is ``parent - built``.
The grower keeps the bins, gradients and hessians in position order (each
node a contiguous segment), so they are read sequentially.
"""

from numba import njit

from .binning import MISSING_BIN

N_BINS = 256


@njit(cache=True)
def build_one(col, rows, start, end, grad, hess, h):
    """Fill ``h`` (256, 2) from rows ``rows[start:end]`` of the bin column ``col``."""
    for b in range(N_BINS):
        h[b, 0] = 0.0
        h[b, 1] = 0.0
    for i in range(start, end):
        r = rows[i]
        b = col[r]
        h[b, 0] += grad[r]
        h[b, 1] += hess[r]


@njit(cache=True)
def clear_used(h, nb):
    """Zero the bins a feature with ``nb`` non-missing bins can hold: ``0..nb-1`` and the missing bin."""
    for b in range(nb):
        h[b, 0] = 0.0
        h[b, 1] = 0.0
    h[MISSING_BIN, 0] = 0.0
    h[MISSING_BIN, 1] = 0.0


@njit(cache=True)
def subtract_one(parent, built, out, nb):
    """``out = parent - built`` over the bins a feature with ``nb`` non-missing
    bins can hold (the others are neither written nor read): the sibling's histogram."""
    for b in range(nb):
        out[b, 0] = parent[b, 0] - built[b, 0]
        out[b, 1] = parent[b, 1] - built[b, 1]
    out[MISSING_BIN, 0] = parent[MISSING_BIN, 0] - built[MISSING_BIN, 0]
    out[MISSING_BIN, 1] = parent[MISSING_BIN, 1] - built[MISSING_BIN, 1]
