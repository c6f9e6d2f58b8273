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

import copy
import math
from typing import NamedTuple

import numpy as np

from ._groups import query_weights, split_column
from ._validation import first_text, vector

# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------
#: The deepest position: propensity tables and estimates hold one value per position above it.
MAX_POSITION = 2**20


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
        text = first_text(values)
        if text is not None:  # a str array is refused too
            raise TypeError(f"{name} must hold integer ranks (1 = top), got text such as {text!r}.")
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must hold integer ranks (1 = top), got non-numeric values.") from None
    if values.dtype.kind == "f":
        missing = np.isnan(values)
        if missing.any():
            raise ValueError(f"{name} is missing (NaN) for {int(missing.sum())} of {n_rows} rows: every "
                             "shown document needs the rank it was shown at.")
        # Infinite or beyond int64, the conversion below would wrap round (1e30 and inf became
        # the rank -9223372036854775808 in the error).
        bad = (values != np.round(values)) | ~(np.abs(values) < 2.0**63)
        if np.any(bad):
            raise ValueError(f"{name} must hold integer ranks (1 = top); got values that are not, such as "
                             f"{values[bad][0]!r}.")
    elif values.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer ranks (1 = top), got dtype {values.dtype}.")
    values = values.astype(np.int64)
    if values.size and values.min() < 1:
        raise ValueError(f"{name} must be 1-based ranks (1 = the top result); got {values.min()}.")
    if values.size and values.max() > MAX_POSITION:
        # The propensities are tables over every position down to the deepest.
        raise ValueError(f"{name} holds {values.max()}, deeper than rankkit takes ({MAX_POSITION}): positions are "
                         "the ranks documents were shown at (1 = top). Is it a document id or a timestamp?")
    return values


def check_unique_positions(position, group_ptr, *, name="position", query_ids=None):
    """Each position at most once per query group (one impression list).

    ``position`` is in the sorted layout of ``group_ptr``; ``query_ids[q]``,
    when given, is the caller's id of group ``q`` (named in the error).
    """
    group = np.repeat(np.arange(group_ptr.shape[0] - 1), np.diff(group_ptr))
    order = np.lexsort((position, group))
    same = (group[order][1:] == group[order][:-1]) & (position[order][1:] == position[order][:-1])
    if same.any():
        row = int(order[1:][same][0])
        q = int(group[row])
        # The group's number in the sorted layout alone does not find it in the caller's rows.
        qid = None if query_ids is None else query_ids[q]
        which = f"query group {q}" if qid is None else f"qid {qid.item() if hasattr(qid, 'item') else qid!r}"
        raise ValueError(
            f"Two documents of one impression list share {name} {int(position[row])} ({which}): a "
            "query group is one list of shown documents, one per rank. Give each session its own qid, or "
            "aggregate the clicks per shown list: one qid per (query, ranking shown), one row per document "
            "of it (per (query, document, position) is not enough when a query was shown in several "
            "rankings: two documents then share a rank)."
        )


def check_clicks(y, *, name="y"):
    """Click labels: one-dimensional, numeric, finite, non-negative (0/1
    clicks, counts or click-through rates), under the rules of graded labels."""
    y = vector(y, name, "clicks (counts or rates >= 0)")
    if y.size and y.min() < 0:
        raise ValueError(f"{name} holds negative clicks (min {y.min():g}): clicks are counts >= 0.")
    return y


def propensity_table(propensities, max_position, *, name="propensities"):
    """``theta[k - 1] / theta_1`` for ``k = 1..max_position`` from an array or a
    callable: only ratios matter, so propensities equal up to a factor give
    the same model."""
    if propensities is None:
        raise ValueError(
            'position_bias="known" needs propensities=: a per-position array (theta_1, theta_2, ...) '
            "or a callable mapping an array of 1-based positions to examination probabilities, e.g. "
            "lambda k: 1.0 / k."
        )
    positions = np.arange(1, max_position + 1)
    values = propensities(positions) if callable(propensities) else propensities
    try:
        theta = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        # numpy's message ("float() argument must be ... not 'dict'") names no parameter.
        raise TypeError(f"{name} must be an array of examination probabilities, one per position (theta_1, "
                        f"theta_2, ...), or a callable mapping an array of 1-based positions to them: {error}") \
            from None
    if callable(propensities):
        if theta.shape != positions.shape:
            raise ValueError(f"{name}(positions) must return one value per position; got shape "
                             f"{theta.shape} for {positions.shape[0]} positions.")
    else:
        if theta.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, one propensity per position (theta_1, theta_2, "
                             f"...); got shape {theta.shape}.")
        if theta.shape[0] < max_position:
            raise ValueError(f"{name} has {theta.shape[0]} entries but documents were shown down to "
                             f"position {max_position}: give one propensity per position.")
    # Every entry of an array, also beyond the deepest training position: eval sets, score
    # and a saved model read them later.
    bad = ~((theta > 0) & (theta <= 1))
    if bad.any():
        k = int(np.flatnonzero(bad)[0]) + 1
        raise ValueError(f"{name} must lie in (0, 1] (examination probabilities); position {k} has "
                         f"{float(theta[k - 1])!r}.")
    return theta[:max_position] / theta[0]


# ---------------------------------------------------------------------------
# Debiased labels
# ---------------------------------------------------------------------------
def objective_gain(objective):
    """``"exp"`` or ``"linear"``: how the objective turns labels into gains."""
    gain = getattr(objective, "gain", None)
    if gain is None:
        gain = getattr(type(objective), "label_gain", "exp")
    return gain


def debiased_metric_settings(settings, objective):
    """Metric settings (:func:`rankkit._training.eval_metrics`) for debiased
    click labels: the gain the labels are written in, so that the metric
    sums their IPW gains ``clicks / theta`` (:func:`ipw_labels`)."""
    return {**settings, "gain": objective_gain(objective)}


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


def all_sums(total, values):
    """``values`` (floats and 1-D arrays) summed over all the parts of the
    training rows: ``total`` all-reduces one flat list of sums over the
    parts (``rankkit.dask``'s workers); None when the rows are all of them,
    and then ``values`` come back untouched (bit for bit)."""
    if total is None:
        return values
    flat = np.concatenate([np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in values]) if values else \
        np.zeros(0)
    summed = np.asarray(total(flat), dtype=np.float64)
    out, start = [], 0
    for v in values:
        size = int(np.size(v))
        chunk = summed[start:start + size]
        start += size
        out.append(chunk if np.ndim(v) else float(chunk[0]))
    return out


def check_em_clicks(clicks):
    """Regression EM's labels: 0/1 clicks or click-through rates."""
    if clicks.size and clicks.max() > 1:
        raise ValueError(
            'propensity_estimator="em" needs 0/1 clicks (one row per impression) or click-through rates '
            "in [0, 1] with the impressions as sample_weight; got click counts above 1. Pass "
            "y=clicks/impressions, sample_weight=impressions, or use propensity_estimator=\"pairwise\"."
        )


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

    On a part of the training rows (a Dask worker's queries), ``total``
    all-reduces the part's sums (:func:`all_sums`): the per-position sums,
    the scores' mean and variance and the logistic fit's gradient and
    hessian are then those of all the rows, so every part holds the same
    propensities; the per-query offsets stay with their queries.
    ``n_positions``: the deepest position over all the rows (default: this
    part's).
    """

    def __init__(self, clicks, position, weight=None, *, group_ptr=None, n_steps=3, n_positions=None, total=None):
        check_em_clicks(clicks)
        self.clicks = clicks
        self.index = position - 1
        self.weight = np.ones_like(clicks) if weight is None else weight
        self.total = total
        self.n_positions = int(position.max()) if n_positions is None else int(n_positions)
        count = np.bincount(self.index, weights=self.weight, minlength=self.n_positions)
        clicked = np.bincount(self.index, weights=clicks * self.weight, minlength=self.n_positions)
        weighted = np.multiply(clicks, self.weight)
        count, clicked, click_sum, weight_sum = all_sums(total, [count, clicked, weighted.sum(), self.weight.sum()])
        self.count = count
        # Positions no row was shown at (a gap in the ranks) have no evidence of
        # their own: the M-step's mean over no rows would make their theta 0 (then
        # 1e-6), and a click there in an eval set or score a million-fold gain.
        self.unseen = np.flatnonzero(self.count == 0)
        self.count[self.unseen] = 1.0
        ctr = clicked / self.count
        # Start from the click-through rate per position (the naive estimate).
        self.theta = np.clip(ctr / max(ctr.max(), 1e-12), 1e-3, 1.0) * 0.9 + 0.05
        self._fill_unseen()
        mean = float(click_sum / weight_sum)  # np.average(clicks, weights=weight)
        self.a, self.b = 0.0, float(np.log(max(mean, 1e-6) / max(1 - mean, 1e-6)))
        self.n_steps = n_steps
        # Per-query offsets of the relevance model: queries differ in how many
        # relevant documents they have, which one logistic map of the scores
        # (comparable only within a query) cannot express.
        self.query = None if group_ptr is None else np.repeat(np.arange(group_ptr.shape[0] - 1), np.diff(group_ptr))
        self.offset = np.zeros(0 if group_ptr is None else group_ptr.shape[0] - 1)

    def _standardised(self, raw):
        """``(raw - mean) / std`` over all the rows (numpy's mean and std, summed over the parts)."""
        raw_sum, n = all_sums(self.total, [raw.sum(), float(raw.shape[0])])
        mean = raw_sum / n
        centred = raw - mean
        squares = all_sums(self.total, [np.multiply(centred, centred).sum()])[0]
        std = np.sqrt(squares / n)
        return centred / std if std > 0 else np.zeros_like(raw)

    def step(self, raw):
        """One EM step at scores ``raw``."""
        z = self._standardised(raw)
        shift = 0.0 if self.query is None else self.offset[self.query]
        gamma = _sigmoid(self.a * z + self.b + shift)
        theta = self.theta[self.index]
        denom = np.maximum(1.0 - theta * gamma, 1e-12)
        c = self.clicks
        examined = c + (1.0 - c) * theta * (1.0 - gamma) / denom
        relevant = c + (1.0 - c) * (1.0 - theta) * gamma / denom
        examined_sum = np.bincount(self.index, weights=examined * self.weight, minlength=self.n_positions)
        theta_new = all_sums(self.total, [examined_sum])[0] / self.count
        self.theta = np.clip(theta_new, 1e-6, 1.0)
        self._fill_unseen()
        self.a, self.b = _logistic_fit(z, relevant, self.weight, self.a, self.b, shift, total=self.total)
        if self.query is not None:
            self.offset = _offset_fit(self.query, self.a * z + self.b, relevant, self.weight, self.offset)

    def _fill_unseen(self):
        """Positions never shown take the value of the position above, as the
        pairwise estimator's positions without pairs (ascending: runs carry the
        last shown value)."""
        for k in self.unseen:
            if k > 0:
                self.theta[k] = self.theta[k - 1]

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


def _logistic_fit(z, target, weight, a, b, shift=0.0, n_newton=3, total=None):
    """Newton steps of a weighted logistic regression of soft ``target`` on
    ``z`` (plus a fixed ``shift`` of the logit); ``total``: as in :func:`all_sums`."""
    for _ in range(n_newton):
        p = _sigmoid(a * z + b + shift)
        r = weight * (target - p)
        w = weight * np.maximum(p * (1.0 - p), 1e-12)
        # Elementwise products summed, not np.dot: BLAS would thread the dot products
        # of more than 10,000 rows on its own pool, outside n_jobs.
        gz, g1, wz, wzz, w1 = all_sums(total, [(r * z).sum(), r.sum(), (w * z).sum(), (w * z * z).sum(), w.sum()])
        g = np.array([gz, g1])
        h = np.array([[wzz, wz], [wz, w1]]) + 1e-9 * np.eye(2)
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

    def __init__(self, clicks, position, group_ptr, norm, weight=None, *, n_positions=None, total=None):
        self.clicks = clicks
        self.position = position
        self.group_ptr = group_ptr
        # A query's pairs count by its weight, the mean of its rows' (as everywhere in rankkit).
        self.row_weight = None if weight is None else np.repeat(query_weights(weight, group_ptr),
                                                                np.diff(group_ptr))
        self.norm = float(norm)
        self.total = total  # the per-position sums over all the parts (as RegressionEM's)
        n_positions = int(position.max()) if n_positions is None else int(n_positions)
        self.t_plus = np.ones(n_positions)
        self.t_minus = np.ones(n_positions)
        self.work = np.empty((2, clicks.shape[0]))

    def update(self, raw):
        from ._click_kernels import pairwise_propensities

        self.t_plus, self.t_minus = pairwise_propensities(
            self.clicks, raw, self.position, self.group_ptr, self.t_plus, self.t_minus, self.norm, self.work,
            total=None if self.total is None else lambda sums: all_sums(self.total, sums), row_weight=self.row_weight)
        return self.relative(), self.t_minus

    def relative(self):
        return np.clip(self.t_plus, 1e-6, 1.0)


def check_shown_at_top(position, total=None, weight=None):
    """Estimated propensities are relative to position 1: without a training row
    of positive weight shown there (over all the parts, ``total``) the
    estimators have nothing to divide by and would return 1 everywhere, no
    debiasing at all."""
    counted = position if weight is None else position[weight > 0]
    at_top = all_sums(total, [float(np.count_nonzero(counted == 1))])[0]
    if at_top == 0:
        shallowest = int(counted.min()) if counted.size else 0
        weighted = "" if weight is None else " of positive sample_weight"
        raise ValueError(
            'position_bias="estimate" learns propensities relative to position 1, but no training row'
            f"{weighted} was shown at position 1 (the shallowest here is {shallowest}). Number the ranks so the top "
            f"shown rank is 1 (e.g. position - {shallowest - 1}; the estimate is then relative to that rank), or use "
            'position_bias="known" with propensities=.'
        )


class ClickSettings(NamedTuple):
    """What debiasing a fit's click labels needs, picklable (it travels to
    ``rankkit.dask``'s workers): ``mode`` (``position_bias``), the known
    ``propensities``, the ``estimator`` and its ``norm``, the objective's
    ``gain``, and ``n_positions``, the deepest position over all the
    training rows (None: the rows at hand)."""

    mode: str
    propensities: object
    estimator: str
    norm: float
    gain: str
    n_positions: int | None = None


def click_settings(ranker, objective, n_positions=None):
    """The :class:`ClickSettings` of ``ranker`` fitting ``objective``."""
    mode = ranker.position_bias
    return ClickSettings(mode, ranker.propensities if mode == "known" else None, ranker.propensity_estimator,
                         float(ranker.position_bias_norm), objective_gain(objective), n_positions)


class ClickLabels:
    """The debiased training labels of a fit, rewritten in place when estimated.

    ``labels`` is the array the objective reads (``train.y``) and ``weight``
    the row weights (``train.weight``; None unless the pairwise estimator
    weighs unclicked rows by ``1 / t-``). :meth:`update` (called before each
    iteration's gradients) refreshes both from the current scores under
    ``position_bias="estimate"`` and is a no-op under ``"known"``.
    ``settings``: :class:`ClickSettings`; ``total``: when ``train`` is a part
    of the training rows (a Dask worker's queries), all-reduces the
    estimator's sums over the parts (:func:`all_sums`), so every part holds
    the propensities of all the rows.
    """

    def __init__(self, settings, train, total=None):
        mode = settings.mode
        self.clicks = check_clicks(train.y)
        self.position = train.position
        self.gain = settings.gain
        self.labels = np.empty_like(self.clicks)
        self.propensities = settings.propensities if mode == "known" else None
        self.evals = []  # (clicks, position, labels) of eval sets with positions
        self.sample_weight = train.weight
        self.weight = train.weight
        self.t_minus = None
        self.owner = None  # the ranker whose position_bias_ follows the estimate
        # The estimate each iteration's tree was trained with: after early stopping
        # rankkit.dask reports the best iteration's (in memory, EvalMonitor keeps it).
        self.trained_with = []
        n_positions = int(self.position.max()) if settings.n_positions is None else int(settings.n_positions)
        if mode == "estimate":
            check_shown_at_top(self.position, total, train.weight)
        if mode == "known":
            self.estimator = None
            self.theta = propensity_table(settings.propensities, n_positions)
        elif settings.estimator == "em":
            self.estimator = RegressionEM(self.clicks, self.position, train.weight, group_ptr=train.group_ptr,
                                          n_positions=n_positions, total=total)
            self.theta = self.estimator.relative()
        else:
            self.estimator = PairwiseEstimator(self.clicks, self.position, train.group_ptr, settings.norm,
                                               train.weight, n_positions=n_positions, total=total)
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

    def preview(self, raw):
        """A copy after :meth:`update` at ``raw``; this object and its estimator are untouched."""
        other = copy.copy(self)
        other.owner = None
        other.evals = []
        other.trained_with = []
        other.estimator = copy.deepcopy(self.estimator)
        other.labels = self.labels.copy()
        other.weight = None if self.weight is None else self.weight.copy()
        other.update(raw)
        return other

    def update(self, raw):
        if self.estimator is None:
            return
        self.theta, self.t_minus = self.estimator.update(raw)
        self.trained_with.append(np.array(self.theta, dtype=np.float64))
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


class DebiasedGradients:
    """``grad_fn(raw, t)`` with the labels refreshed first (:meth:`ClickLabels.update`),
    built on a part of the training rows (a Dask worker's,
    :meth:`rankkit._training.GradientPipeline.build`): ``train`` is the part's
    rows with the debiased labels (what the eval monitor scores as the
    training data), ``clicks`` the :class:`ClickLabels`, and
    :meth:`eval_data` debiases an eval set's rows that carry positions."""

    def __init__(self, clicks, grad_fn, train):
        self.clicks = clicks
        self.grad_fn = grad_fn
        self.train = train

    def __call__(self, raw, t):
        self.clicks.update(raw)
        return self.grad_fn(raw, t)

    def eval_data(self, data):
        """``data`` (:class:`~rankkit._training.QueryData`) with its clicks
        replaced by debiased labels kept up to date, when it has positions."""
        if data.position is None or not data.y.size:
            return data
        return data._replace(y=self.clicks.add_eval(check_clicks(data.y), data.position))


def check_position_bias_params(ranker):
    """Cross-parameter checks of ``position_bias`` and the parameters that
    only one of its modes uses: set where it is unused, each is an error,
    not ignored."""
    position_bias = ranker.position_bias
    if position_bias is not None and ranker.position_col is not None and ranker.position_col == ranker.qid_col:
        raise ValueError(
            f"qid_col and position_col both name the column {ranker.qid_col!r}: a DataFrame column is either the "
            "query ids or the positions. Rename one of them (or pass position= and position_col=None)."
        )
    if position_bias == "known" and ranker.propensities is None:
        propensity_table(None, 1)  # raises the explanatory error
    if position_bias != "known" and ranker.propensities is not None:
        raise ValueError(
            f'propensities= is used only with position_bias="known" (position_bias={position_bias!r}).'
        )
    if position_bias != "estimate" and ranker.propensity_estimator != "em":
        raise ValueError(
            f'propensity_estimator={ranker.propensity_estimator!r} is used only with position_bias="estimate" '
            f'(position_bias={position_bias!r}): set position_bias="estimate" or leave propensity_estimator at "em".'
        )
    if ranker.position_bias_norm != 1.0 and (position_bias != "estimate" or ranker.propensity_estimator != "pairwise"):
        raise ValueError(
            f"position_bias_norm={ranker.position_bias_norm!r} is the p of the pairwise estimator's update, used "
            f'only with position_bias="estimate" and propensity_estimator="pairwise" (here position_bias='
            f"{position_bias!r}, propensity_estimator={ranker.propensity_estimator!r}): set those, or leave "
            "position_bias_norm at 1.0."
        )


def position_without_debiasing_error(name="position"):
    return ValueError(
        f"{name}= was given but position_bias=None, so positions would be ignored and the clicks used as "
        'if they were relevance labels. Set position_bias="known" (with propensities=) or "estimate" '
        f"to train without position bias, or drop {name}= to use the labels as they are."
    )


# ---------------------------------------------------------------------------
# The rankers' side
# ---------------------------------------------------------------------------
def split_position(X, position, position_bias, position_col, *, name="position"):
    """``(X without the position column, position)``: from ``position=`` or,
    when debiasing is on, the ``position_col`` column of a DataFrame
    (``name``: what the caller calls ``position``, for errors)."""
    if position_bias is None:
        if position is not None:
            raise position_without_debiasing_error(name)
        return X, None  # a "position" column stays a feature, as before debiasing existed
    return split_column(X, position, position_col, what="Positions", name=name, col_param="position_col")


def sorted_positions(position, groups, n_rows, *, name="position"):
    """Validated positions in the query-sorted layout of ``groups``."""
    position = groups.sort(check_position(position, n_rows, name=name))
    check_unique_positions(position, groups.group_ptr, name=name, query_ids=getattr(groups, "_uniques", None))
    return np.ascontiguousarray(position)


def missing_positions_error(mode, position_col):
    """The error for click labels without the positions they were shown at."""
    column = "" if position_col is None else f" or a DataFrame with a '{position_col}' column (position_col)"
    return ValueError(f"position_bias={mode!r} needs the rank each row was shown at: pass fit(..., position=...)"
                      f"{column}.")


def check_debiased_labels(objective, labels):
    """The objective's label rules on the labels it trains on, the debiased
    click gains, saying so: its message speaks of labels the user never passed."""
    try:
        return objective._check_labels(labels)
    except ValueError as error:
        top = float(labels.max()) if labels.size else 0.0
        raise ValueError(f"On clicks the objective trains on debiased labels, each click's gain at "
                         f"1 / propensity (the largest here {top:g}), not on the clicks: {error}") from None


def start_click_training(ranker, objective, train, sets):
    """``(train, sets, labels)`` with the clicks replaced by debiased labels.

    ``labels`` is the :class:`ClickLabels`, whose :meth:`ClickLabels.wrap`
    makes the gradient function that refreshes the labels and keeps
    ``ranker.position_bias_`` up to date. Without ``position_bias``, ``train``
    and ``sets`` come back untouched and ``labels`` is None, so training is
    exactly as without this module."""
    mode = ranker.position_bias
    check_position_bias_params(ranker)
    ranker.position_bias_ = None
    if mode is None:
        return train, sets, None
    if train.position is None:
        raise missing_positions_error(mode, ranker.position_col)
    labels = ClickLabels(click_settings(ranker, objective), train)
    check_debiased_labels(objective, labels.labels)  # the objective's own label rules, on what it will see
    labels.owner = ranker
    ranker.position_bias_ = labels.theta
    train = train._replace(y=labels.labels, weight=labels.weight)
    out = []
    for name, data in sets:
        if data is not None and data.position is not None:
            data = data._replace(y=labels.add_eval(check_clicks(data.y, name=name), data.position))
        out.append((name, data))
    return train, out, labels


def theta_at(theta, position, propensities=None):
    """Propensities of ``position``. Beyond the deepest position seen in
    training: the ``propensities`` table when known, else the deepest
    estimated value."""
    if not position.size:
        return np.zeros(0)
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
def dask_click_settings(ranker, objective, *, fitting):
    """What a Dask partition needs to turn its rows' clicks into labels
    (:func:`debias_partition`), or None when debiasing is off.

    Positions are used where they are, before the rows are shuffled, so a
    position never leaves its row. While fitting with
    ``position_bias="estimate"`` the clicks stay the labels (the workers
    debias them every iteration, :class:`DebiasedGradients`); otherwise they
    become the IPW labels at ``ranker.position_bias_`` (the known
    propensities, set before the layout, or the fitted ones for ``score``).
    """
    check_position_bias_params(ranker)
    if ranker.position_bias is None:
        return None
    gain = objective_gain(objective)
    if fitting and ranker.position_bias == "estimate":
        return {"estimate": True, "estimator": ranker.propensity_estimator, "gain": gain}
    known = ranker.propensities if ranker.position_bias == "known" else None
    return {"theta": ranker.position_bias_, "propensities": known, "gain": gain}


def debias_partition(labels, position, settings, n_rows, *, name="position"):
    """``(labels, int64 positions)`` of one partition's rows: the IPW labels,
    or the checked clicks while estimating (:func:`dask_click_settings`)."""
    position = check_position(position, n_rows, name=name)
    clicks = check_clicks(labels)
    if settings.get("estimate"):
        if settings["estimator"] == "em":
            check_em_clicks(clicks)
        return clicks, position
    if not n_rows:
        return clicks, position
    return ipw_labels(clicks, theta_at(settings["theta"], position, settings["propensities"]), settings["gain"]), \
        position
