"""The contract between rankers and boosting engines.

A backend knows trees, never what a query means. The ranker hands it the
training features (rows already sorted by query), a gradient callback and an
SGLB shrink schedule; the backend grows one tree per iteration and keeps the
raw scores of the training set and of every eval set up to date, *including*
shrinkage, so that gradients and eval metrics always see the model that will
be saved.

Iteration ``t`` (0-based) of :meth:`Backend.fit`, the one boosting loop
every engine runs (:meth:`Backend._boost`; the engines supply the hooks
below):

1. ``factor = shrink(t)`` (``None``: no shrinkage; read it with
   :func:`rankkit._sglb.shrink_factor`); the whole model, and so every tracked
   raw score, is multiplied by ``factor`` (SGLB step 1, :mod:`rankkit._sglb`,
   which also holds the bookkeeping helpers);
2. ``grad, hess = grad_fn(raw_train, t)`` (SGLB noise is added inside);
3. a tree is grown on ``grad, hess`` (gradient leaves when the ranker says the
   objective has no useful hessian: the ranker then passes ``hess = 1``),
   scaled by ``learning_rate``, and added to the model and raw scores;
4. ``callback(t, raw_train, raw_evals)`` returns True to stop.

The hooks of an engine: ``_begin`` (data, parameters, an empty model; returns
the number of rows of each tracked set), ``_running_scores(n_done,
train_only)`` (the engine's own unshrunk sums of its trees; an engine that
keeps none sets ``keeps_sums = False`` and the loop tracks the scores from
zero), ``_shrink_model(factor)`` (an engine that rescales its stored model
in place), ``_grow(t, grad, hess)`` (one tree), ``_tree_scores(t)`` (that
tree's scores on the training rows and every eval set, as added to the
model) and ``_end(scores)`` (the fitted attributes, from the
:class:`~rankkit._sglb.ShrunkScores` of the fit).

``predict(X, n_iterations, start_iteration=s)`` gives the part of the model
after ``n_iterations`` iterations that the trees of iterations ``s`` to
``n_iterations - 1`` make, each with the factor it has in that model, so the
ranges of one model add up to it exactly (up to rounding).

After ``fit`` the backend's own model object predicts exactly the tracked raw
scores (shrink factors folded into leaves where the engine cannot scale old
trees in place).

What the features mean is the same on every backend: NaN is a missing value,
an infinite value an error naming its features (:func:`check_no_infinity`);
in a sparse matrix an absent entry is 0, as in scikit-learn (an engine that
reads absent entries as missing, XGBoost, is handed dense row blocks);
``fit(..., feature_names=)`` names the features in the engine's model where
the engine can carry the names; ``categorical_features`` are indices of
columns holding category codes (:mod:`rankkit._categorical`), split natively
or refused with an error naming them.

Persistence: :meth:`Backend.save` returns the fitted model as a JSON-ready
``state`` dict and ``{name: bytes}`` files in the engine's own formats, and
:meth:`Backend.load` rebuilds the backend from them; the file around them is
:mod:`rankkit._persistence`'s.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

from .._params import BACKEND_SETTINGS, BOOSTING_PARAMS
from .._sglb import ShrunkScores
from .._threads import limit_threads, resolve_n_jobs
from .._validation import Interval, kernel_array
from ._engine_params import check_backend_params


class Backend:
    """Base class; see the module docstring for the training loop.

    ``Backend(**settings)`` takes the boosting settings declared in
    :data:`rankkit._params.BOOSTING_PARAMS` (``n_estimators``,
    ``learning_rate``, ..., ``backend_params``; :data:`~rankkit._params.BACKEND_SETTINGS`
    names them) as keywords and stores each as an attribute of the same name;
    a missing one takes its declared default. Subclasses add engine-specific
    limits in ``_engine_constraints``, declare the ``backend_params`` keys
    their engine accepts (:meth:`valid_params`, :meth:`refused_params`,
    ``params_help``; checked by :mod:`rankkit._backends._engine_params`) and
    call :meth:`_check_settings` at the start of ``fit``.
    """

    name = None

    #: Whether the engine splits on categorical columns (sets of categories).
    supports_categorical = False

    #: Constraints this engine adds to the common ones (scikit-learn format).
    _engine_constraints: dict = {}
    #: XGBoost and LightGBM keep the learning rate and the leaf values in float32 and
    #: zero leaves below 1e-35: beyond this range a rate fails in XGBoost or
    #: silently gives an all-zero model in LightGBM.
    _ENGINE_LEARNING_RATE = {"learning_rate": [Interval(Real, 1e-30, 1e30, closed="both")]}
    #: Both read ``max_depth`` and ``max_bin`` as 32-bit ints: a larger value
    #: wraps round (LightGBM then trains with ``max_bin=16`` for ``2**32 + 16``).
    _ENGINE_INT32 = {name: [Interval(Integral, low, 2**31 - 1, closed="both")]
                     for name, low in (("max_depth", 1), ("max_bin", 2))}
    _ENGINE_HELP = ("XGBoost and LightGBM hold max_depth and max_bin in 32-bit ints, XGBoost min_child_weight and "
                    "reg_lambda (times the ranker's curvature unit, docs/user_guide.md section 9) in float32; the "
                    'numba engine (backend="numba") takes any learning rate.')
    #: What to do when a setting is beyond ``_engine_constraints``.
    _engine_constraints_help = ""

    #: Where the valid ``backend_params`` keys are listed (shown in errors).
    params_help = ""

    @classmethod
    def valid_params(cls):
        """The ``backend_params`` keys this backend's engine accepts (a frozenset)."""
        raise NotImplementedError

    @classmethod
    def refused_params(cls, params):
        """``{key: reason}`` for keys of ``params`` the engine knows but the
        ranker sets itself or cannot honour (none by default)."""
        return {}

    @classmethod
    def ranker_parameters(cls):
        """``{engine name or alias: ranker parameter}`` of what the ranker's
        own parameters set, refused in ``backend_params`` (none by default)."""
        return {}

    def __init__(self, **settings):
        unknown = sorted(set(settings) - set(BACKEND_SETTINGS))
        if unknown:
            raise TypeError(
                f"{type(self).__name__} got unknown settings {unknown}; valid settings are "
                f"{list(BACKEND_SETTINGS)}."
            )
        for name in BACKEND_SETTINGS:
            setattr(self, name, settings.get(name, BOOSTING_PARAMS[name].default))
        # A copy, so the caller's dict is not the backend's; anything else is
        # left as given for _check_settings to refuse.
        if self.backend_params is None or isinstance(self.backend_params, dict):
            self.backend_params = dict(self.backend_params or {})

    #: The engine's name of its thread count in ``params_`` (None: the backend reads ``n_jobs``).
    _threads_param = None

    def set_threads(self, n_jobs):
        """Predict with ``n_jobs`` threads from now on (a ranker's ``n_jobs``
        changed after ``fit``, by ``set_params`` or after ``load_model``)."""
        self.n_jobs = n_jobs
        if self._threads_param is not None and hasattr(self, "params_"):
            self.params_.pop(self._threads_param, None)
            if n_jobs is not None:
                self.params_[self._threads_param] = resolve_n_jobs(n_jobs)

    def _check_settings(self):
        """Every setting against its declared constraints, then the engine's
        own; returns ``backend_params`` with every key checked
        (:func:`~rankkit._backends._engine_params.check_backend_params`)."""
        settings = {name: getattr(self, name) for name in BACKEND_SETTINGS}
        caller = type(self).__name__
        validate_parameter_constraints(
            {name: BOOSTING_PARAMS[name].constraints for name in BACKEND_SETTINGS}, settings, caller_name=caller
        )
        try:
            validate_parameter_constraints(self._engine_constraints, settings, caller_name=f"backend={self.name!r}")
        except InvalidParameterError as error:
            raise InvalidParameterError(f"{error} {self._engine_constraints_help}".strip()) from None
        return check_backend_params(type(self), self.backend_params)

    def fit(self, X, grad_fn, *, eval_X=(), shrink=None, callback=None, feature_names=None,
            categorical_features=(), row_weight=None):
        """Train; see the module docstring. Returns self.

        Parameters
        ----------
        X : ndarray or sparse matrix
            Training features, rows sorted by query.
        grad_fn : callable
            ``grad_fn(raw, t) -> (grad, hess)`` on the training rows.
        eval_X : sequence of arrays
            Eval features whose raw scores are tracked.
        shrink : callable or None
            ``shrink(t)`` -> factor in (0, 1] applied to the whole model
            before iteration ``t`` (``None`` or 1.0: no shrinkage).
        callback : callable or None
            ``callback(t, raw_train, raw_evals)``; returns True to stop.
        feature_names : sequence of str or None
            One string per column, stored in the engine's model when the
            engine allows them (:meth:`_engine_feature_names`).
        categorical_features : sequence of int
            Indices of the columns holding category codes.
        row_weight : float64 ndarray or None
            Each training row's weight (None: 1), already in the gradients;
            read at every iteration (a click estimator may change it in
            place). Engines that weigh rows apart from their hessians use it
            (the numba engine's ``split_score="gradient"``).
        """
        for name, features in [("X", X), *((f"eval_X[{i}]", E) for i, E in enumerate(eval_X))]:
            check_no_infinity(features, name)
        self._row_weight = row_weight
        try:
            sizes = self._begin(X, list(eval_X), shrink=shrink, feature_names=feature_names,
                                categorical_features=categorical_features)
            # rankkit's kernels (gradients, eval metrics) get n_jobs threads; the
            # engines run their own (nthread, num_threads).
            with limit_threads(self.n_jobs):
                start = None if self.keeps_sums else [np.zeros(k) for k in sizes]
                scores = ShrunkScores(shrink, start)
                self._boost(sizes[0], grad_fn, scores, callback)
                self._end(scores)
        finally:
            del self._row_weight
        return self

    def _boost(self, n, grad_fn, scores, callback):
        """The boosting loop (module docstring), on the engine's hooks."""
        loop = BoostingLoop(self, n, grad_fn, scores, callback)
        for t in range(int(self.n_estimators)):
            self._grow(t, *loop.gradients(t))
            if loop.after_tree(t):
                break

    # -- the engine's hooks (module docstring) -------------------------------------
    #: Whether the engine keeps running sums of its trees (``_running_scores``).
    keeps_sums = True

    def _begin(self, X, eval_X, *, shrink, feature_names, categorical_features):
        """Check the settings, build the engine's data and an empty model;
        returns ``[n_train, *n_eval]``, the rows of every tracked set."""
        raise NotImplementedError

    def _running_scores(self, n_done, train_only=False):
        """The engine's sums of its first ``n_done`` trees (float64): the
        training rows, then (unless ``train_only``) every eval set."""
        raise NotImplementedError

    def _shrink_model(self, factor):
        """Multiply the stored model by ``factor`` (engines that fold the
        factors in at the end, from ``ShrunkScores.factors``, do nothing)."""

    def _grow(self, t, grad, hess):
        """Grow the tree of iteration ``t`` on ``grad, hess`` and add it to the model."""
        raise NotImplementedError

    def _tree_scores(self, t):
        """The scores of iteration ``t``'s tree on the training rows, then
        every eval set, as the tree was added to the model."""
        raise NotImplementedError

    def _end(self, scores):
        """The fitted attributes, from the fit's :class:`~rankkit._sglb.ShrunkScores`."""
        raise NotImplementedError

    def predict(self, X, n_iterations=None, *, start_iteration=0):
        """Raw scores (float64) of the model after ``n_iterations`` iterations
        (all by default); with ``start_iteration > 0``, only the contribution
        of iterations ``start_iteration`` to ``n_iterations - 1`` to that
        model: the tree of iteration ``t`` scaled by the shrink factors
        applied after it, ``prod_{t < s < n_iterations} c_s``."""
        raise NotImplementedError

    def truncate(self, n_iterations):
        """Keep the model as it was after ``n_iterations`` iterations (early stopping)."""
        raise NotImplementedError

    def feature_importances(self, importance_type="gain"):
        """Per-feature importance, normalised to sum to 1 (zeros if no split)."""
        raise NotImplementedError

    # -- feature names -----------------------------------------------------------
    #: Characters the engine refuses in a feature name.
    _forbidden_name_chars = ""
    _empty_names_allowed = True

    @staticmethod
    def _stored_name(name):
        """A feature name as the engine's model stores it."""
        return name

    def _engine_feature_names(self, feature_names):
        """``feature_names`` as the engine's model will carry them, or None.

        Names the engine refuses (a character of ``_forbidden_name_chars``,
        duplicates) are not passed: the engine then names features by
        position and a warning says so; the ranker keeps the column names
        in ``feature_names_in_`` either way.
        """
        if feature_names is None:
            return None
        names = [str(name) for name in feature_names]
        bad = [name for name in names if any(c in name for c in self._forbidden_name_chars)
               or not (name or self._empty_names_allowed)]
        stored = [self._stored_name(name) for name in names]
        if bad or len(set(stored)) != len(stored):
            what = (f"names that are empty or contain any of {list(self._forbidden_name_chars)} ({bad[:5]})"
                    if bad
                    else "duplicate names" if stored == names
                    else "names that are the same once spaces become '_', as the engine stores them")
            warnings.warn(
                f"backend={self.name!r}: the engine cannot store feature {what}, so its model names "
                "the features by position; the ranker keeps the column names (feature_names_in_). "
                "Rename the columns to have the engine's model carry them.",
                UserWarning,
                stacklevel=4,
            )
            return None
        return names

    # -- persistence -------------------------------------------------------------
    def save(self):
        """The fitted model as ``(state, files)``.

        ``state`` is a dict of plain values (numbers, strings, lists, dicts,
        NumPy arrays) that :mod:`rankkit._persistence` writes as JSON;
        ``files`` maps file names to bytes in the engine's own formats, the
        model a server loads first.
        """
        raise NotImplementedError

    @classmethod
    def load(cls, state, files):
        """The backend that :meth:`save` described, ready to predict."""
        raise NotImplementedError

    def _settings(self):
        """The settings this backend was made with (``state["settings"]`` of :meth:`save`)."""
        return {name: getattr(self, name) for name in BACKEND_SETTINGS}

    def _folding_state(self):
        """The ``state`` of an engine that folds SGLB shrinkage into its model
        (XGBoost, LightGBM): the settings, the parameters handed to the
        engine, the shrink factor of every iteration and the iterations run."""
        return {"settings": self._settings(), "params": self.params_, "shrink_factors": self.shrink_factors_,
                "n_iterations": int(self.n_iterations_)}

    @classmethod
    def _from_folding_state(cls, state):
        """A backend with what :meth:`_folding_state` saved, its model still to load."""
        backend = cls(**state["settings"])
        backend.params_ = dict(state["params"])
        backend.shrink_factors_ = np.asarray(state["shrink_factors"], dtype=np.float64)
        backend.n_iterations_ = int(state["n_iterations"])
        return backend


class BoostingLoop:
    """The two halves of an iteration of the loop, around growing the tree:
    :meth:`gradients` (shrink, then the gradients at the shrunk model) and
    :meth:`after_tree` (the new tree's scores, then the callback).
    :meth:`Backend._boost` calls them around the engine's ``_grow``; an
    engine whose own loop grows the trees (``xgboost.dask.train`` on every
    worker) calls them from its objective and its after-iteration callback.
    ``engine`` supplies the hooks of the module docstring."""

    def __init__(self, engine, n, grad_fn, scores, callback):
        self.engine = engine
        self.n = n
        self.grad_fn = grad_fn
        self.scores = scores  # rankkit._sglb.ShrunkScores
        self.callback = callback
        self.current = None  # the engine's training sums while they are the model

    def gradients(self, t):
        """``(grad, hess)`` of iteration ``t``, after the shrinkage ``c_t``."""
        engine, scores = self.engine, self.scores
        factor = scores.before_tree(t, lambda: engine._running_scores(t))
        if factor != 1.0:
            engine._shrink_model(factor)
        if scores.tracking:
            self.current = scores.scores[0]
        elif self.current is None:
            self.current = engine._running_scores(t, train_only=True)[0]
        return check_gradients(*self.grad_fn(self.current, t), self.n, t)

    def after_tree(self, t):
        """Add the tree of iteration ``t`` to the tracked scores, then the
        callback; True to stop."""
        self.current = None
        if self.scores.tracking:
            self.scores.add_tree(self.engine._tree_scores(t))
            now = self.scores.scores
        elif self.callback is not None:
            now = self.engine._running_scores(t + 1)
            self.current = now[0]
        return self.callback is not None and bool(self.callback(t, now[0], now[1:]))


def check_iteration_range(start_iteration, n_iterations, n_total):
    """``n_iterations`` as an int (None: ``n_total``), after checking
    ``0 <= start_iteration <= n_iterations <= n_total``."""
    n = n_total if n_iterations is None else int(n_iterations)
    if not 0 <= int(start_iteration) <= n <= n_total:
        raise ValueError(
            f"need 0 <= start_iteration <= n_iterations <= {n_total}, got {start_iteration} and {n_iterations}."
        )
    return n


def check_gradients(grad, hess, n, t):
    """``grad_fn``'s output as contiguous float64 arrays of shape ``(n,)``
    (``hess=None``: ones), or a clear error: every backend hands the engine
    nothing else."""
    grad = kernel_array(grad, np.float64)
    hess = np.ones(n) if hess is None else kernel_array(hess, np.float64)
    if grad.shape != (n,) or hess.shape != (n,):
        raise ValueError(f"grad_fn must return grad and hess of shape ({n},), got {grad.shape} and {hess.shape}.")
    if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
        if t == 0:  # every backend starts from scores 0: nothing has diverged yet
            raise ValueError(
                "The gradients or hessians of the first iteration, at scores 0, are NaN or infinite: the "
                "objective overflows on these labels with these parameters (an extreme sigma: StochasticRank's "
                "gradients grow as 1 / sigma, LambdaMART's hessians as sigma ** 2; sample weights of a huge "
                "scale; or, with a custom objective, what it returns at scores 0)."
            )
        raise ValueError(
            f"The gradients or hessians of iteration {t} are NaN or infinite: the model's scores diverged. "
            "Lower learning_rate, or look for an extreme objective parameter (StochasticRank's gradients grow "
            "as 1 / sigma); with a custom objective, check what it returns for large scores."
        )
    return grad, hess


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_float32_gradients(grad, hess, t, engine, total=None):
    """XGBoost and LightGBM take the gradients in float32: one beyond its
    range would be infinite there and the tree silently a single leaf (or
    NaN). An error instead, naming the way out.

    ``total``: on Dask, the sum over the workers (:func:`allreduce_sum`), so
    that every worker raises together; one raising alone would leave the
    others waiting in XGBoost's all-reductions."""
    # Extremes, not np.abs: no temporary array per iteration.
    exceeded = float(max(grad.max(initial=0.0), -grad.min(initial=0.0), hess.max(initial=0.0)) > _FLOAT32_MAX)
    if total is not None:
        exceeded = total([exceeded])[0]
    if exceeded:
        way_out = (
            "rankkit.dask trains on XGBoost only: use an objective of a smaller scale (StochasticRank: a larger "
            "sigma; sample weights of a smaller scale), or the in-memory ranker with backend='numba' (float64 "
            "gradients)." if total is not None else
            "Use backend='numba' (float64 gradients), or an objective (or sample weights) of a smaller scale."
        )
        raise ValueError(
            f"The gradients or hessians of iteration {t} exceed float32's range (3.4e38), in which {engine} "
            f"takes them. {way_out}"
        )


#: Rows checked at a time by :func:`check_no_infinity` (bounded scratch memory).
_CHECK_ROWS = 65536


def check_no_infinity(X, name="X"):
    """Refuse infinite features, naming them. NaN is a missing value on every
    engine, but an infinite one is not a value the engines agree on (XGBoost
    refuses it, the others bin it at an end), so it is an error, as in the
    rankers. Row blocks keep the scratch memory small on large ``X``."""
    columns = None
    if hasattr(X, "toarray"):
        if np.isinf(X.data).any():
            coo = X.tocoo()  # only to name the features
            columns = coo.col[np.isinf(coo.data)]
    else:
        X = np.asarray(X)
        if X.dtype.kind == "f" and X.ndim == 2:
            for a in range(0, X.shape[0], _CHECK_ROWS):
                block = np.isinf(X[a:a + _CHECK_ROWS])
                if block.any():
                    columns = np.flatnonzero(block.any(axis=0))
                    break
    if columns is not None:
        features = np.unique(columns)
        raise ValueError(
            f"{name} holds infinite values in features {features[:10].tolist()}; features must be finite "
            "(NaN means missing). Replace them, for instance by a large finite value or by NaN."
        )


def iter_row_blocks(X, block_rows):
    """Yield ``(start, block)``: ``X``'s rows in C-contiguous dense blocks of
    ``block_rows`` rows, float32 if ``X`` is, else float64.

    A sparse matrix is densified one block at a time, so an absent entry is
    the value 0 (scikit-learn's meaning) and memory holds one dense block at
    most; a dense ``X`` yields views (no copy when it is C-contiguous). Blocks
    are read-only.
    """
    n = X.shape[0]
    sparse = hasattr(X, "toarray")
    if sparse and getattr(X, "format", "csr") != "csr":
        X = X.tocsr()  # row slices of CSR are cheap
    dtype = np.float32 if X.dtype == np.float32 else np.float64
    for a in range(0, n, block_rows):
        b = min(n, a + block_rows)
        blk = X[a:b]
        blk = np.ascontiguousarray(blk.toarray() if sparse else blk, dtype=dtype)
        if blk.flags.writeable:
            # Read-only, as pandas 3 hands out a DataFrame's values: numba
            # compiles a kernel once per array type, seconds each on first use.
            blk = blk.view()
            blk.flags.writeable = False
        yield a, blk
