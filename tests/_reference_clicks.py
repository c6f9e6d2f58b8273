"""Naive twins of the click kernels (``rankkit._click_kernels``): every pair
visited in plain Python, the executable specification."""

import math


def model_rank_discounts(raw, group_ptr, clicks, position):
    """``1 / log2(1 + r)``, ``r`` the 1-based rank of each row in its query by
    score (ties: fewer clicks first, then the shown position)."""
    out = [0.0] * len(raw)
    for q in range(len(group_ptr) - 1):
        rows = list(range(group_ptr[q], group_ptr[q + 1]))
        for r, i in enumerate(sorted(rows, key=lambda i: (-raw[i], clicks[i], position[i]))):
            out[i] = 1.0 / math.log2(2.0 + r)
    return out


def pair_click_losses(clicks, raw, position, group_ptr, t_plus, t_minus):
    """Per-row ``(loss_plus, loss_minus)``: for each pair of one group with
    ``c_i > c_j``, ``C = (c_i - c_j) |d_i - d_j| log(1 + exp(-(z_i - z_j)))``
    (``d``: :func:`model_rank_discounts`) adds ``C / t-[k_j]`` to
    ``loss_plus[i]`` and ``C / t+[k_i]`` to ``loss_minus[j]``."""
    n = len(clicks)
    plus, minus = [0.0] * n, [0.0] * n
    d = model_rank_discounts(raw, group_ptr, clicks, position)
    for q in range(len(group_ptr) - 1):
        rows = range(group_ptr[q], group_ptr[q + 1])
        for i in rows:
            for j in rows:
                if clicks[i] > clicks[j]:
                    cost = (clicks[i] - clicks[j]) * abs(d[i] - d[j]) * math.log1p(math.exp(-(raw[i] - raw[j])))
                    plus[i] += cost / t_minus[position[j] - 1]
                    minus[j] += cost / t_plus[position[i] - 1]
    return plus, minus
