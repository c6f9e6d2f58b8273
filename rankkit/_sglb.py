r"""SGLB: Stochastic Gradient Langevin Boosting, the whole algorithm in one place.

Ustimenko & Prokhorenkova, *SGLB: Stochastic Gradient Langevin Boosting*,
ICML 2021, Algorithm 1, with CatBoost's schedule. With learning rate ``eta``,
inverse diffusion temperature ``beta`` (``diffusion_temperature``) and shrink
rate ``gamma`` (``model_shrink_rate``), boosting iteration ``t`` (0-based):

1. **shrink the model**, ``F <- c_t F``, for ``t >= 1`` and ``gamma > 0``
   (:func:`shrink_schedule`): ``c_t = 1 - gamma eta``
   (``model_shrink_mode="constant"``) or ``c_t = 1 - gamma / t``
   (``"decreasing"``; the first factor is ``1 - gamma``). As in CatBoost,
   shrinkage applies whenever ``gamma > 0``, with or without the noise;
2. compute the objective's gradients at the shrunk ``F``;
3. **add Langevin noise** to every document's gradient (``langevin=True``):
   ``g_i <- g_i + sqrt(2 / (eta beta)) xi_i``, ``xi_i ~ N(0, 1)``, fresh
   each iteration (:func:`add_gaussian_noise`; rankers call it last in their
   gradient pipeline, :class:`SGLB` wraps an objective for the engines' own
   APIs). ``diffusion_temperature="auto"`` sets ``beta`` from the first
   iteration's gradients (:func:`auto_diffusion_temperature`);
4. grow a tree on the noisy gradients.

Noise plus shrinkage make the boosting iterates sample from a distribution
concentrated on the global optimum of the regularised loss, which
StochasticRank's global convergence (Ustimenko & Prokhorenkova 2020,
Theorem 5) relies on.

**Shrinkage bookkeeping.** After ``T`` iterations the model is

.. math:: F_T = \sum_t \Big(\prod_{t < s < T} c_s\Big) f_t,

with ``f_t`` the tree grown at iteration ``t``. A backend only receives
``shrink(t)``, "multiply the model by ``c_t`` before iteration ``t``"
(:func:`shrink_factor` reads it). During training :class:`ShrunkScores`
keeps the factors and the shrunk ``F`` on the training rows and eval sets
(the one boosting loop, :meth:`rankkit._backends._base.Backend.fit`, and
``rankkit.dask``'s workers use it); the model itself takes one of two helpers:

* :func:`fold_scales` -- for engines that cannot rescale trees they have
  built (XGBoost, LightGBM): track ``F`` beside the booster during training and, at
  the end, multiply tree ``t``'s leaves by ``prod_{t < s < T} c_s``;
* :class:`RunningScale` -- for engines that store ``F = S sum_t u_t``
  (rankkit's numba GBDT): a shrink is ``S <- c S`` (O(1)) and a tree ``f``
  is stored as ``u = f / S``.

Either way the saved model predicts exactly the ``F`` that training used.
"""

from __future__ import annotations

import hashlib
import math
from numbers import Real

import numba
import numpy as np
from numba import njit
from sklearn.utils._param_validation import StrOptions

from ._objectives._base import RankingObjective
from ._random import index_query_keys, mix64, noise_ranks, normal, query_stream
from ._validation import Interval, kernel_array

#: Constraints of the SGLB parameters (the rankers declare them from here).
PARAMETER_CONSTRAINTS = {
    "diffusion_temperature": [Interval(Real, 0, np.inf, closed="neither"), StrOptions({"auto"})],
    "model_shrink_rate": [Interval(Real, 0, np.inf, closed="left")],
    "model_shrink_mode": [StrOptions({"constant", "decreasing"})],
}
_POSITIVE = [Interval(Real, 0, np.inf, closed="neither")]
#: Training sets whose "auto" temperature an :class:`SGLB` objective remembers.
_AUTO_SETS_KEPT = 64


# -- 1. the schedule -------------------------------------------------------------
def shrink_schedule(model_shrink_rate, model_shrink_mode, learning_rate):
    """``shrink(t)``: the factor ``c_t`` applied to the model before iteration
    ``t`` (``None``: none), or ``None`` when ``model_shrink_rate == 0``.

    Raises a clear error when a factor would leave (0, 1].
    """
    rate = float(model_shrink_rate)
    if rate == 0.0:
        return None
    if model_shrink_mode == "constant":
        factor = 1.0 - rate * float(learning_rate)
        if not 0.0 < factor <= 1.0:
            raise ValueError(
                f"model_shrink_rate * learning_rate must be in [0, 1) for "
                f"model_shrink_mode='constant', got {rate} * {learning_rate}; "
                "lower model_shrink_rate."
            )
        return lambda t: None if t == 0 else factor
    if rate >= 1.0:
        raise ValueError(
            f"model_shrink_rate must be in [0, 1) for model_shrink_mode='decreasing', "
            f"got {rate}."
        )
    return lambda t: None if t == 0 else 1.0 - rate / t


def shrink_factor(shrink, t):
    """The factor ``shrink(t)`` asks for before iteration ``t`` (1.0 for
    ``None`` or no schedule); an error outside (0, 1]."""
    factor = shrink(t) if shrink is not None else None
    if factor is None:
        return 1.0
    factor = float(factor)
    if not 0.0 < factor <= 1.0:
        raise ValueError(f"shrink({t}) returned {factor}; shrink factors must be in (0, 1].")
    return factor


# -- shrinkage bookkeeping for the backends ----------------------------------------
def fold_scales(factors):
    """``scale[t] = prod_{t < s < T} c_s`` for ``T = len(factors)``: what tree
    ``t`` is multiplied by when the shrinkage is folded into its leaves."""
    factors = np.asarray(factors, dtype=np.float64)
    scale = np.ones(factors.shape[0], dtype=np.float64)
    if factors.shape[0] > 1:
        scale[:-1] = np.cumprod(factors[::-1])[::-1][1:]
    return scale


class RunningScale:
    """The running product ``S`` of the shrink factors of a model stored as
    ``F = S * sum_t u_t``: shrinking is ``S <- c S``, O(1), and a new tree
    ``f`` is stored as ``u = f / S``.

    When ``S`` falls below 1e-150 (after 150 decades of shrinkage) it must
    be folded into the stored trees once: :meth:`shrink` then returns that
    factor and restarts from ``S = 1``.
    """

    MIN = 1e-150

    def __init__(self):
        self.value = 1.0

    def shrink(self, factor):
        """``S <- factor * S``; the factor to fold into the stored trees, or None."""
        self.value *= factor
        if self.value < self.MIN:
            fold, self.value = self.value, 1.0
            return fold
        return None


class ShrunkScores:
    """SGLB's bookkeeping during training: the factor ``c_t`` of every
    iteration (``factors``) and the shrunk model ``F`` on each tracked set of
    rows (``scores``: the training rows, then every eval set).

    An engine sums its trees without shrinkage; ``F`` is tracked beside it
    from the first factor other than 1 on (before that ``F`` is the engine's
    own sum, ``scores`` is None), by ``F <- c_t F`` before iteration ``t``
    (:meth:`before_tree`) and ``F <- F + f_t`` after it (:meth:`add_tree`).
    ``start`` (the scores of an empty model) tracks from the first iteration,
    for an engine that keeps no sums of its own.
    """

    def __init__(self, shrink, start=None):
        self.shrink = shrink
        self.factors = []
        self.scores = None if start is None else list(start)

    @property
    def tracking(self):
        """Whether ``scores`` holds ``F`` (else the engine's sums are ``F``)."""
        return self.scores is not None

    def before_tree(self, t, current):
        """The factor ``c_t``, applied to ``scores``; tracking begins from
        ``current()`` (the engine's sums, copied) at the first ``c_t != 1``."""
        factor = shrink_factor(self.shrink, t)
        self.factors.append(factor)
        if factor != 1.0:
            if self.scores is None:
                self.scores = [np.array(s, dtype=np.float64) for s in current()]
            for s in self.scores:
                s *= factor
        return factor

    def add_tree(self, tree_scores):
        """``F <- F + f_t`` on every tracked set (nothing before tracking begins)."""
        if self.scores is not None:
            for s, d in zip(self.scores, tree_scores):
                s += d


# -- 3. the Langevin noise -----------------------------------------------------------
# Salt of the noise key: the wrapped objective draws from query_stream(seed, ...),
# the Langevin noise from query_stream(mix64(seed ^ salt), ...), so the two never share draws.
_NOISE_SALT = np.uint64(0x5C1B_6A7E_D1F0_5E9D)


def langevin_noise_scale(learning_rate, diffusion_temperature):
    """Standard deviation of the per-document noise, ``sqrt(2 / (eta beta))``;
    ``inf`` when it overflows (the callers turn that into a clear error)."""
    product = float(learning_rate) * float(diffusion_temperature)
    # A product that underflows to 0 (two tiny positive values, or "auto" from
    # huge gradients) overflows the scale: inf, not Python's ZeroDivisionError.
    return math.sqrt(2.0 / product) if product > 0.0 else math.inf


#: ``diffusion_temperature="auto"``: the per-document noise is this share of
#: the root mean square of the first iteration's gradients.
AUTO_NOISE_TO_GRADIENT = 0.1


def auto_diffusion_temperature(grad, learning_rate, total=None):
    r"""The ``beta`` of ``diffusion_temperature="auto"``.

    .. math:: \beta = \frac{2}{\eta\,(c\,g_{\mathrm{rms}})^2},
        \quad c = 0.1,

    with ``g_rms`` the root mean square of the gradients of the first
    iteration: the noise ``sqrt(2 / (eta beta))`` added to each document's
    gradient is then ``c`` times the typical gradient, whatever the scale of
    the loss (which differs by orders of magnitude between metrics, list
    lengths and objectives). The paper's toy run (``beta = 1e3``, ``eta =
    0.1``) puts its noise at about 2.6 times the gradient, the tuned real-data
    values (``beta`` in [1e8, 1e11]) at 0.1-1% of it. With ``c = 0.1``
    StochasticRank scores 0.36 +- 0.30 NDCG@10 points below no noise on
    ClueWeb09 (24 random states) and within 0.02 of it on MQ2008 and Yahoo
    (8), 3% or 1% do no better, and it still reaches the toy's global
    optimum (``docs/user_guide.md``, section 9). A gradient identically zero
    gives ``inf`` (no noise): nothing is learned anyway.

    ``total(sums) -> sums`` turns ``[sum g^2, number]`` over ``grad`` into
    the same over all the training rows when ``grad`` is a part of them
    (``rankkit.dask``: one worker's, all-reduced over the workers).
    """
    with np.errstate(over="ignore"):  # an overflow gives beta = 0: the callers' overflow error
        square_sum, count = float(np.sum(np.square(grad))), grad.size
    if total is not None:
        square_sum, count = total([square_sum, count])
    rms = math.sqrt(square_sum / count) if count else 0.0
    if rms == 0.0:
        return math.inf
    return 2.0 / (float(learning_rate) * (AUTO_NOISE_TO_GRADIENT * rms) ** 2)


@njit(cache=True, parallel=True)
def add_gaussian_noise(grad, y, raw, group_ptr, query_key, scale, seed, iwork):
    """``grad[i] += scale * normal(query_stream(mix64(seed ^ salt), query_key[q], 0), rank[i])``.

    ``q`` is the query of row ``i`` (``query_key[q]`` the key of its id,
    :func:`~rankkit._random.query_keys`) and ``rank`` comes from
    :func:`~rankkit._random.noise_ranks` (the row's place in its query sorted
    by ``raw``), so the draw of a document depends neither on the thread count
    nor on the order of the rows within its query nor on where the query sits
    (in the arrays or on a worker). ``iwork``: (3, n) int64 scratch.
    """
    base = mix64(np.uint64(seed) ^ _NOISE_SALT)
    rank = iwork[2]
    for q in numba.prange(group_ptr.shape[0] - 1):
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        noise_ranks(raw, y, lo, hi, iwork[0], iwork[1], rank)
        k = query_stream(base, query_key[q], 0)
        for i in range(lo, hi):
            grad[i] += scale * normal(k, rank[i])


class SGLB(RankingObjective):
    r"""Langevin gradient noise around any ranking objective.

    ``g_i <- g_i + sqrt(2 / (eta beta)) xi_i`` with ``xi_i ~ N(0, 1)`` fresh
    on every call (Ustimenko & Prokhorenkova 2021, Algorithm 1), where
    ``eta`` is the booster's learning rate and ``beta`` the inverse diffusion
    temperature: step 3 of the algorithm in :mod:`rankkit._sglb`. The
    shrinkage of step 1 acts on trees: rankers pass its schedule to their
    backend (``model_shrink_rate``).

    Parameters
    ----------
    objective : RankingObjective
        The wrapped objective; it receives this call's seed, so
        ``SGLB(obj)`` minus ``obj`` with the same seed is exactly the noise.
    learning_rate : float, default=0.1
        ``eta`` (> 0): the booster's learning rate.
    diffusion_temperature : float or "auto", default="auto"
        ``beta`` (> 0), CatBoost's ``diffusion_temperature``. ``"auto"``, as
        on the rankers: ``beta`` is set on the first call for a training set
        (labels, queries and ``learning_rate``) from that call's gradients
        of the wrapped objective (:func:`auto_diffusion_temperature`: the
        noise is a tenth of their root mean square) and kept for that
        training set, in ``diffusion_temperature_``; a booster's first call
        is its first iteration, so this is the rankers' rule. Another
        training set gets its own (calls that alternate between the folds
        of ``xgboost.cv`` keep one per fold).
    random_state : int, RandomState instance or None, default=0
        Source of the per-call seeds (None: fresh ones every run).

    Attributes
    ----------
    diffusion_temperature_ : float
        The ``beta`` in use: ``diffusion_temperature``, or with ``"auto"`` the
        value set by the first call (absent before it).

    Notes
    -----
    Hessians are the wrapped objective's (``uses_hessian`` is forwarded); a
    ``sample_weight`` multiplies the noisy gradient like any gradient (the
    ``"auto"`` rule reads the gradients before the weights).

    Examples
    --------
    >>> import numpy as np
    >>> from rankkit.objectives import SGLB, QueryRMSE
    >>> obj = SGLB(QueryRMSE(), learning_rate=0.1, diffusion_temperature=200.0)
    >>> round(obj.noise_scale, 4)  # sqrt(2 / (0.1 * 200))
    0.3162
    >>> g, h = obj.gradient_hessian([1, 0, 2], [0.0, 0.0, 0.0], qid=[0, 0, 0], seed=1)
    >>> g0, _ = QueryRMSE().gradient_hessian([1, 0, 2], [0.0, 0.0, 0.0], qid=[0, 0, 0])
    >>> bool(np.all(g != g0)), h.tolist()
    (True, [1.0, 1.0, 1.0])
    """

    _parameter_constraints = {
        "objective": [RankingObjective],
        "learning_rate": _POSITIVE,
        "diffusion_temperature": PARAMETER_CONSTRAINTS["diffusion_temperature"],
        "random_state": ["random_state"],
    }

    def __init__(self, objective, *, learning_rate=0.1, diffusion_temperature="auto", random_state=0):
        self.objective = objective
        self.learning_rate = learning_rate
        self.diffusion_temperature = diffusion_temperature
        self.random_state = random_state

    @property
    def uses_hessian(self):
        return self.objective.uses_hessian

    @property
    def translation_invariant(self):
        return self.objective.translation_invariant

    @property
    def per_query_loss(self):
        return self.objective.per_query_loss

    @property
    def noise_scale(self):
        """``sqrt(2 / (learning_rate * diffusion_temperature_))``."""
        if isinstance(self.diffusion_temperature, str) and not hasattr(self, "diffusion_temperature_"):
            raise AttributeError(
                'diffusion_temperature="auto" is set by the first call of the objective; '
                "call it (or give a number) before reading noise_scale."
            )
        beta = self.diffusion_temperature_ if isinstance(self.diffusion_temperature, str) else self.diffusion_temperature
        return langevin_noise_scale(self.learning_rate, beta)

    def _resolve(self):
        if isinstance(self.objective, SGLB):  # the noise would be added twice, at two temperatures
            raise ValueError(
                "SGLB(SGLB(...)): the objective is already an SGLB wrapper; wrap the base objective once, "
                "SGLB(objective, diffusion_temperature=...)."
            )
        if not isinstance(self.diffusion_temperature, str) and not math.isfinite(self.noise_scale):
            raise ValueError(
                "sqrt(2 / (learning_rate * diffusion_temperature)) overflows; "
                "raise learning_rate or diffusion_temperature."
            )
        self.objective._check_params()

    def _resolve_auto(self, y, group_ptr, grad):
        """Set ``diffusion_temperature_`` to the value of this training set:
        set from ``grad`` on its first call, kept for the calls that follow.
        A training set is its labels, queries and learning rate, known by a
        digest of their contents (not the arrays' identity: a caller may
        change its labels in place); each of the last few sets keeps its own
        value, so calls that alternate between training sets (``xgboost.cv``'s
        folds) each keep theirs."""
        digest = hashlib.blake2b(digest_size=16)
        for part in (np.float64(self.learning_rate), y, group_ptr):
            digest.update(np.ascontiguousarray(part).tobytes())
        key = digest.hexdigest()
        known = self.__dict__.setdefault("_auto_betas", {})
        if key not in known:
            if len(known) >= _AUTO_SETS_KEPT:
                del known[next(iter(known))]  # the oldest
            known[key] = auto_diffusion_temperature(grad, self.learning_rate)
        self.diffusion_temperature_ = known[key]

    def _check_labels(self, y):
        return self.objective._check_labels(y)

    def _eval_metric_settings(self):
        return self.objective._eval_metric_settings()

    def _gradient_hessian_sorted(self, y, raw, group_ptr, seed, query_keys=None):
        group_ptr = kernel_array(group_ptr, np.int64)
        if query_keys is None:
            query_keys = index_query_keys(group_ptr.shape[0] - 1)
        grad, hess = self.objective._gradient_hessian_sorted(y, raw, group_ptr, seed, query_keys)
        if isinstance(self.diffusion_temperature, str):
            self._resolve_auto(y, group_ptr, grad)
            # Gradients so large that beta underflows to 0 (_resolve checks a number).
            if not math.isfinite(self.noise_scale):
                raise ValueError(
                    f'diffusion_temperature="auto" gave {self.diffusion_temperature_} for these gradients: '
                    "sqrt(2 / (learning_rate * diffusion_temperature)) overflows; pass diffusion_temperature "
                    "as a number."
                )
        else:
            self.diffusion_temperature_ = float(self.diffusion_temperature)
            self._auto_betas = {}  # "auto" set later starts afresh
        n = y.shape[0]
        add_gaussian_noise(grad, y, raw, group_ptr, query_keys, self.noise_scale, np.int64(seed),
                           np.empty((3, n), dtype=np.int64))
        return grad, hess

    def _compute(self, y, raw, group_ptr, seed, grad, hess, query_keys):
        g, h = self._gradient_hessian_sorted(y, raw, group_ptr, seed, query_keys)
        grad[:] = g
        hess[:] = h
