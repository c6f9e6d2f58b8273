"""Naive twins of the click kernels (``rankkit._click_kernels``): every pair
visited in plain Python, the executable specification."""

import math


def pair_click_losses(clicks, raw, position, group_ptr, t_plus, t_minus):
    """Per-row ``(loss_plus, loss_minus)``: for each pair of one group with
    ``c_i > c_j``, ``C = (c_i - c_j) log(1 + exp(-(z_i - z_j)))`` adds
    ``C / t-[k_j]`` to ``loss_plus[i]`` and ``C / t+[k_i]`` to ``loss_minus[j]``."""
    n = len(clicks)
    plus, minus = [0.0] * n, [0.0] * n
    for q in range(len(group_ptr) - 1):
        rows = range(group_ptr[q], group_ptr[q + 1])
        for i in rows:
            for j in rows:
                if clicks[i] > clicks[j]:
                    cost = (clicks[i] - clicks[j]) * math.log1p(math.exp(-(raw[i] - raw[j])))
                    plus[i] += cost / t_minus[position[j] - 1]
                    minus[j] += cost / t_plus[position[i] - 1]
    return plus, minus
