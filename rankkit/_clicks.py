"""Learning from clicks: positions, propensities and debiased labels.

A click log gives, for every shown document, the 1-based rank at which it
was shown (``position``) and whether (or how often) it was clicked. Users
click what they see first, so clicks confound relevance with position. Under
the position-based model (PBM) a document at rank ``k`` is examined with
probability ``theta_k`` (its *propensity*) and clicked if examined and
relevant: ``P(click) = theta_k P(relevant)``.

rankkit removes the bias in label space, before any objective sees the data,
so one mechanism serves every objective, every backend and Dask: the label
of a row becomes the **inverse-propensity-weighted (IPW) gain**

    gain(y_debiased) = clicks / theta_position

(Joachims, Swaminathan & Schnabel 2017; Wang et al. 2016): ``y_debiased =
clicks / theta`` for objectives with linear gain (QueryRMSE, ``gain="linear"``)
and ``log2(1 + clicks / theta)`` for those with the exponential gain
``2^y - 1`` (the default of the metric objectives, and XE-NDCG). A binary
click at position 1 keeps its label 1 either way. Since
``E[clicks / theta] = P(relevant)`` under the PBM, every objective whose
gradient is linear in the gains -- QueryRMSE, StochasticRank on DCG -- gets
the expected gradient of training on the relevance itself (tested by Monte
Carlo in ``tests/test_clicks.py``); LambdaMART's pair weights
``|Delta gain| |Delta discount|`` become the ``1 / theta`` pair weights of
Unbiased LambdaMART (Hu et al. 2019) for a clicked/unclicked pair.

Propensities are relative: only ratios matter, and rankkit normalises them
to ``theta_1 = 1`` (as XGBoost's ``lambdarank_bias_norm`` and Hu et al.).

``position_bias="estimate"`` learns them during training, rewriting the
debiased labels before every iteration: regression EM (Wang et al. 2018,
:class:`RegressionEM`, the default), whose relevance model is the ranker's
own score through a logistic map with per-query offsets, or the ``t+``/``t-``
of Unbiased LambdaMART (:class:`PairwiseEstimator`), computed from the
LambdaMART loss on the clicks whatever the objective.
"""

from __future__ import annotations

import math

import numpy as np

# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------
def check_position(position, n_rows, *, name="position"):
    """1-based integer positions, one per row, as int64."""
    values = np.asarray(position)
    if values.ndim == 2 and 1 in values.shape:
        values = values.ravel()
    if values.ndim != 1 or values.shape[0] != n_rows:
        raise ValueError(
            f"{name} must hold one position per row: got shape {values.shape} for {n_rows} rows."
        )
    if values.dtype.kind == "O":
        import pandas as pd

        if pd.isna(values).any():
            raise ValueError(f"{name} is missing for {int(pd.isna(values).sum())} rows: every shown "
                             "document needs the rank it was shown at.")
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must hold integer ranks (1 = top), got non-numeric values.") from None
    if values.dtype.kind == "f":
        missing = ~np.isfinite(values)
        if missing.any():
            raise ValueError(f"{name} is missing (NaN) for {int(missing.sum())} of {n_rows} rows: every "
                             "shown document needs the rank it was shown at.")
        if np.any(values != np.round(values)):
            raise ValueError(f"{name} must hold integer ranks (1 = top); got non-integer values such as "
                             f"{values[values != np.round(values)][0]!r}.")
    elif values.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer ranks (1 = top), got dtype {values.dtype}.")
    values = values.astype(np.int64)
    if values.size and values.min() < 1:
        raise ValueError(f"{name} must be 1-based ranks (1 = the top result); got {values.min()}.")
    return values


def check_unique_positions(position, group_ptr, *, name="position"):
    """Each position at most once per query group (one impression list).

    ``position`` is in the sorted layout of ``group_ptr``.
    """
    group = np.repeat(np.arange(group_ptr.shape[0] - 1), np.diff(group_ptr))
    order = np.lexsort((position, group))
    same = (group[order][1:] == group[order][:-1]) & (position[order][1:] == position[order][:-1])
    if same.any():
        row = int(order[1:][same][0])
        q = int(group[row])
        raise ValueError(
            f"Two documents of one impression list share {name} {int(position[row])} (query group {q}): a "
            "query group is one list of shown documents, one per rank. Give each session its own qid, or "
            "aggregate the clicks per (query, document, position) so every rank appears once."
        )


def check_clicks(y, *, name="y"):
    """Click labels: finite, non-negative (0/1 clicks, counts or click-through rates)."""
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} holds NaN or infinite clicks: clicks are counts or rates >= 0.")
    if y.size and y.min() < 0:
        raise ValueError(f"{name} holds negative clicks (min {y.min():g}): clicks are counts >= 0.")
    return y


def propensity_table(propensities, max_position, *, name="propensities"):
    """``theta[k - 1]`` for ``k = 1..max_position`` from an array or a callable."""
    if propensities is None:
        raise ValueError(
            'position_bias="known" needs propensities=: a per-position array (theta_1, theta_2, ...) '
            "or a callable mapping an array of 1-based positions to examination probabilities, e.g. "
            "lambda k: 1.0 / k."
        )
    positions = np.arange(1, max_position + 1)
    if callable(propensities):
        theta = np.asarray(propensities(positions), dtype=np.float64)
        if theta.shape != positions.shape:
            raise ValueError(f"{name}(positions) must return one value per position; got shape "
                             f"{theta.shape} for {positions.shape[0]} positions.")
    else:
        theta = np.asarray(propensities, dtype=np.float64).ravel()
        if theta.shape[0] < max_position:
            raise ValueError(f"{name} has {theta.shape[0]} entries but documents were shown down to "
                             f"position {max_position}: give one propensity per position.")
        theta = theta[:max_position]
    bad = ~((theta > 0) & (theta <= 1))
    if bad.any():
        k = int(np.flatnonzero(bad)[0]) + 1
        raise ValueError(f"{name} must lie in (0, 1] (examination probabilities); position {k} has "
                         f"{theta[k - 1]!r}.")
    return theta


# ---------------------------------------------------------------------------
# Debiased labels
# ---------------------------------------------------------------------------
def objective_gain(objective):
    """``"exp"`` or ``"linear"``: how the objective turns labels into gains."""
    gain = getattr(objective, "gain", None)
    if gain is None:
        gain = getattr(type(objective), "label_gain", "exp")
    return gain


def ipw_labels(clicks, theta_at_row, gain, out=None):
    """Labels whose gain is ``clicks / theta``: the IPW relevance estimate."""
    out = np.divide(clicks, theta_at_row, out=out)
    if gain == "exp":
        np.log2(1.0 + out, out=out)
    return out


# ---------------------------------------------------------------------------
# Regression EM
# ---------------------------------------------------------------------------
def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class RegressionEM:
    """Propensities by regression EM on the ranker's own scores (Wang et al. 2018).

    The PBM with ``P(examined at k) = theta_k`` and ``P(relevant) =
    gamma_i = sigmoid(a z_i + b)``, ``z`` the ranker's current scores
    standardised over the training rows. One EM step:

    * E: for a non-click, ``P(E=1, R=0 | c=0) = theta (1 - gamma) / (1 - theta gamma)``
      and ``P(E=0, R=1 | c=0) = (1 - theta) gamma / (1 - theta gamma)``; a click
      is examined and relevant;
    * M: ``theta_k`` is the mean posterior examination at ``k``; ``(a, b)`` a
      weighted logistic fit of the posterior relevance on ``z`` (Newton steps).

    A row is one impression with a 0/1 click, or a click-through rate in
    [0, 1] over ``weight`` impressions (the sample weights). Propensities are
    reported relative to position 1.
    """

    def __init__(self, clicks, position, weight=None, *, group_ptr=None, n_steps=3):
        if clicks.size and clicks.max() > 1:
            raise ValueError(
                'propensity_estimator="em" needs 0/1 clicks (one row per impression) or click-through rates '
                "in [0, 1] with the impressions as sample_weight; got click counts above 1. Pass "
                "y=clicks/impressions, sample_weight=impressions, or use propensity_estimator=\"pairwise\"."
            )
        self.clicks = clicks
        self.index = position - 1
        self.weight = np.ones_like(clicks) if weight is None else weight
        self.n_positions = int(position.max())
        self.count = np.bincount(self.index, weights=self.weight, minlength=self.n_positions)
        self.count[self.count == 0] = 1.0  # positions never shown keep theta = their start
        ctr = np.bincount(self.index, weights=clicks * self.weight, minlength=self.n_positions) / self.count
        # Start from the click-through rate per position (the naive estimate).
        self.theta = np.clip(ctr / max(ctr.max(), 1e-12), 1e-3, 1.0) * 0.9 + 0.05
        mean = float(np.average(clicks, weights=self.weight))
        self.a, self.b = 0.0, float(np.log(max(mean, 1e-6) / max(1 - mean, 1e-6)))
        self.n_steps = n_steps
        # Per-query offsets of the relevance model: queries differ in how many
        # relevant documents they have, which one logistic map of the scores
        # (comparable only within a query) cannot express.
        self.query = None if group_ptr is None else np.repeat(np.arange(group_ptr.shape[0] - 1), np.diff(group_ptr))
        self.offset = np.zeros(0 if group_ptr is None else group_ptr.shape[0] - 1)

    def step(self, raw):
        """One EM step at scores ``raw``."""
        std = raw.std()
        z = (raw - raw.mean()) / std if std > 0 else np.zeros_like(raw)
        shift = 0.0 if self.query is None else self.offset[self.query]
        gamma = _sigmoid(self.a * z + self.b + shift)
        theta = self.theta[self.index]
        denom = np.maximum(1.0 - theta * gamma, 1e-12)
        c = self.clicks
        examined = c + (1.0 - c) * theta * (1.0 - gamma) / denom
        relevant = c + (1.0 - c) * (1.0 - theta) * gamma / denom
        theta_new = np.bincount(self.index, weights=examined * self.weight, minlength=self.n_positions) / self.count
        self.theta = np.clip(theta_new, 1e-6, 1.0)
        self.a, self.b = _logistic_fit(z, relevant, self.weight, self.a, self.b, shift)
        if self.query is not None:
            self.offset = _offset_fit(self.query, self.a * z + self.b, relevant, self.weight, self.offset)

    def update(self, raw):
        for _ in range(self.n_steps):
            self.step(raw)
        return self.relative(), None

    def relative(self):
        """Propensities normalised to position 1 (clipped into (0, 1])."""
        return np.clip(self.theta / self.theta[0], 1e-6, 1.0)


def _offset_fit(query, base, target, weight, offset, ridge=1.0, n_newton=3):
    """Newton steps for per-query logit offsets (ridge-penalised towards 0,
    so a query without clicks stays finite)."""
    n = offset.shape[0]
    for _ in range(n_newton):
        p = _sigmoid(base + offset[query])
        g = np.bincount(query, weights=weight * (target - p), minlength=n) - ridge * offset
        h = np.bincount(query, weights=weight * np.maximum(p * (1.0 - p), 1e-12), minlength=n) + ridge
        offset = offset + g / h
    return offset


def _logistic_fit(z, target, weight, a, b, shift=0.0, n_newton=3):
    """Newton steps of a weighted logistic regression of soft ``target`` on
    ``z`` (plus a fixed ``shift`` of the logit)."""
    for _ in range(n_newton):
        p = _sigmoid(a * z + b + shift)
        r = weight * (target - p)
        w = weight * np.maximum(p * (1.0 - p), 1e-12)
        # Elementwise products summed, not np.dot: BLAS would thread the dot products
        # of more than 10,000 rows on its own pool, outside n_jobs.
        wz = (w * z).sum()
        g = np.array([(r * z).sum(), r.sum()])
        h = np.array([[(w * z * z).sum(), wz], [wz, w.sum()]]) + 1e-9 * np.eye(2)
        da, db = np.linalg.solve(h, g)
        a, b = a + da, b + db
        if not (math.isfinite(a) and math.isfinite(b)):
            return 0.0, 0.0
    return float(a), float(b)


class PairwiseEstimator:
    """Propensities of clicked and unclicked positions, ``t+`` and ``t-``, as in
    Unbiased LambdaMART (Hu et al. 2019; XGBoost's ``lambdarank_unbiased``),
    for any objective: the pair costs are LambdaMART's loss on the clicks at
    the current scores, each pair's logistic loss weighted by the DCG change
    of swapping it (:func:`rankkit._click_kernels.pair_click_losses`),
    ``t[k] = (L[k] / L[1]) ** (1 / (1 + norm))`` each iteration. ``t+``
    debiases the clicked documents' labels, ``1 / t-`` weighs the unclicked
    documents' gradients."""

    def __init__(self, clicks, position, group_ptr, norm):
        self.clicks = clicks
        self.position = position
        self.group_ptr = group_ptr
        self.norm = float(norm)
        n_positions = int(position.max())
        self.t_plus = np.ones(n_positions)
        self.t_minus = np.ones(n_positions)
        self.work = np.empty((2, clicks.shape[0]))

    def update(self, raw):
        from ._click_kernels import pairwise_propensities

        self.t_plus, self.t_minus = pairwise_propensities(
            self.clicks, raw, self.position, self.group_ptr, self.t_plus, self.t_minus, self.norm, self.work)
        return self.relative(), self.t_minus

    def relative(self):
        return np.clip(self.t_plus, 1e-6, 1.0)


class ClickLabels:
    """The debiased training labels of a fit, rewritten in place when estimated.

    ``labels`` is the array the objective reads (``train.y``) and ``weight``
    the row weights (``train.weight``; None unless the pairwise estimator
    weighs unclicked rows by ``1 / t-``). :meth:`update` (called before each
    iteration's gradients) refreshes both from the current scores under
    ``position_bias="estimate"`` and is a no-op under ``"known"``.
    """

    def __init__(self, ranker, objective, train):
        mode = ranker.position_bias
        self.clicks = check_clicks(train.y)
        self.position = train.position
        self.gain = objective_gain(objective)
        self.labels = np.empty_like(self.clicks)
        self.propensities = ranker.propensities if mode == "known" else None
        self.evals = []  # (clicks, position, labels) of eval sets with positions
        self.sample_weight = train.weight
        self.weight = train.weight
        self.t_minus = None
        self.owner = None  # the ranker whose position_bias_ follows the estimate
        if mode == "known":
            self.estimator = None
            self.theta = propensity_table(ranker.propensities, int(self.position.max()))
        elif ranker.propensity_estimator == "em":
            self.estimator = RegressionEM(self.clicks, self.position, train.weight, group_ptr=train.group_ptr)
            self.theta = self.estimator.relative()
        else:
            self.estimator = PairwiseEstimator(self.clicks, self.position, train.group_ptr,
                                               ranker.position_bias_norm)
            self.theta = self.estimator.relative()
            self.weight = np.ones_like(self.clicks) if train.weight is None else train.weight.copy()
        ipw_labels(self.clicks, self.theta[self.position - 1], self.gain, out=self.labels)

    def _theta_at(self, position):
        return theta_at(self.theta, position, self.propensities)

    def add_eval(self, clicks, position):
        """Debiased labels of an eval set, kept up to date by :meth:`update`."""
        labels = ipw_labels(clicks, self._theta_at(position), self.gain)
        self.evals.append((clicks, position, labels))
        return labels

    def update(self, raw):
        if self.estimator is None:
            return
        self.theta, self.t_minus = self.estimator.update(raw)
        if self.owner is not None:
            self.owner.position_bias_ = self.theta
        ipw_labels(self.clicks, self.theta[self.position - 1], self.gain, out=self.labels)
        if self.t_minus is not None:
            unclicked = np.where(self.clicks > 0, 1.0, 1.0 / self.t_minus[self.position - 1])
            np.multiply(unclicked, 1.0 if self.sample_weight is None else self.sample_weight, out=self.weight)
        for clicks, position, labels in self.evals:
            ipw_labels(clicks, self._theta_at(position), self.gain, out=labels)

    def wrap(self, grad_fn):
        """``grad_fn`` with the labels refreshed from the scores first."""
        def debiased(raw, t):
            self.update(raw)
            return grad_fn(raw, t)

        return debiased


def check_position_bias_params(position_bias, propensities):
    """Cross-parameter checks of ``position_bias`` and ``propensities``."""
    if position_bias == "known" and propensities is None:
        propensity_table(None, 1)  # raises the explanatory error
    if position_bias != "known" and propensities is not None:
        raise ValueError(
            f'propensities= is used only with position_bias="known" (position_bias={position_bias!r}).'
        )


def position_without_debiasing_error():
    return ValueError(
        "position= was given but position_bias=None, so positions would be ignored and the clicks used as "
        'if they were relevance labels. Set position_bias="known" (with propensities=) or "estimate" '
        "to train without position bias, or drop position= to train on the labels as they are."
    )


# ---------------------------------------------------------------------------
# The rankers' side
# ---------------------------------------------------------------------------
def split_position(X, position, position_bias, position_col):
    """``(X without the position column, position)``: from ``position=`` or,
    when debiasing is on, the ``position_col`` column of a DataFrame."""
    if position_bias is None:
        if position is not None:
            raise position_without_debiasing_error()
        return X, None  # a "position" column stays a feature, as before debiasing existed
    if hasattr(X, "columns") and hasattr(X, "iloc") and position_col is not None and position_col in X.columns:
        if position is not None:
            raise ValueError(
                f"Positions given twice: X has a '{position_col}' column and position= was passed. Drop the "
                "column or pass position_col=None to use position=."
            )
        return X.drop(columns=[position_col]), X[position_col]
    return X, position


def sorted_positions(position, groups, n_rows, *, name="position"):
    """Validated positions in the query-sorted layout of ``groups``."""
    position = groups.sort(check_position(position, n_rows, name=name))
    check_unique_positions(position, groups.group_ptr, name=name)
    return np.ascontiguousarray(position)


def start_click_training(ranker, objective, train, sets):
    """``(train, sets, debias)`` with the clicks replaced by debiased labels.

    ``debias(grad_fn)`` returns the gradient function that refreshes the
    labels (:meth:`ClickLabels.wrap`) and keeps ``ranker.position_bias_`` up
    to date. Without ``position_bias``, ``train`` and ``sets`` come back
    untouched and ``debias`` is the identity, so training is exactly as
    without this module."""
    mode = ranker.position_bias
    check_position_bias_params(mode, ranker.propensities)
    ranker.position_bias_ = None
    if mode is None:
        return train, sets, _identity
    if train.position is None:
        raise ValueError(
            f"position_bias={mode!r} needs the rank each row was shown at: pass fit(..., position=...) or a "
            f"DataFrame with a '{ranker.position_col}' column (position_col)."
        )
    labels = ClickLabels(ranker, objective, train)
    objective._check_labels(labels.labels)  # the objective's own label rules, on what it will see
    labels.owner = ranker
    ranker.position_bias_ = labels.theta
    train = train._replace(y=labels.labels, weight=labels.weight)
    out = []
    for name, data in sets:
        if data is not None and data.position is not None:
            data = data._replace(y=labels.add_eval(check_clicks(data.y, name=name), data.position))
        out.append((name, data))
    return train, out, labels.wrap


def _identity(grad_fn):
    return grad_fn


def theta_at(theta, position, propensities=None):
    """Propensities of ``position``. Beyond the deepest position seen in
    training: the ``propensities`` table when known, else the deepest
    estimated value."""
    n = int(position.max())
    if n > theta.shape[0]:
        theta = (propensity_table(propensities, n) if propensities is not None
                 else np.concatenate([theta, np.full(n - theta.shape[0], theta[-1])]))
    return theta[position - 1]


def debiased_score_labels(ranker, objective, y, position):
    """Labels for ``score`` on click data: the IPW gains at the fitted propensities."""
    known = ranker.propensities if ranker.position_bias == "known" else None
    return ipw_labels(check_clicks(y), theta_at(ranker.position_bias_, position, known), objective_gain(objective))


# ---------------------------------------------------------------------------
# rankkit.dask: debiased on the partition that holds the rows
# ---------------------------------------------------------------------------
def dask_click_settings(ranker, objective):
    """What the Dask partitions need to debias their own rows (None when off):
    positions are turned into labels where they are, before the rows are
    shuffled, so a position never leaves its row."""
    check_position_bias_params(ranker.position_bias, ranker.propensities)
    if ranker.position_bias is None:
        return None
    if ranker.position_bias == "estimate":
        raise ValueError(
            f'{type(ranker).__name__} supports position_bias="known" only: estimating propensities needs the '
            "clicks of all workers every iteration. Estimate them with the in-memory ranker on a sample "
            '(position_bias="estimate", then position_bias_) and pass them as propensities=.'
        )
    return {"propensities": ranker.propensities, "gain": objective_gain(objective)}


def debias_partition(labels, position, settings, n_rows, *, name="position"):
    """``(debiased labels, int64 positions)`` of one partition's rows."""
    position = check_position(position, n_rows, name=name)
    if not n_rows:
        return labels, position
    theta = propensity_table(settings["propensities"], int(position.max()))
    return ipw_labels(check_clicks(labels), theta[position - 1], settings["gain"]), position
