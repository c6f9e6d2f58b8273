"""Training callbacks: code that a ranker's ``fit`` runs around boosting.

``Ranker(callbacks=[...])`` takes engine-independent callbacks, the same on
every backend, in either of two forms:

* an object with any of the methods of :class:`TrainingCallback` (subclass
  it or just define the methods), as XGBoost's ``TrainingCallback``, except
  that the first argument is the ranker, not an engine's booster:
  ``before_training(ranker)``, ``after_iteration(ranker, iteration,
  evals_log) -> bool`` (True stops training) and ``after_training(ranker)``;
* a function ``callback(env)``, as LightGBM's callbacks, called after every
  iteration with a :class:`CallbackEnv` ``(ranker, iteration, evals_log)``;
  a true return value stops training (LightGBM's raise
  ``EarlyStopException`` instead).

``iteration`` is 0-based; ``evals_log`` is the history so far, shaped like
``evals_result_``: ``{set name: {metric: [value per iteration]}}`` with the
eval sets of ``fit(eval_set=...)`` (``"training"`` for the training data
itself, ``"validation_<i>"`` for the others) and every ``eval_metric``; it
is empty without an eval set. During training, ``ranker`` gives the
parameters and, from the first ``after_iteration`` on, this fit's state so
far, never a previous fit's: ``evals_result_`` (the ``evals_log``),
``n_iterations_``, ``best_iteration_`` and ``best_score_`` (without an eval
set: the last iteration and None), and with ``position_bias`` set
``position_bias_``, the propensities the iteration's tree was trained with
(``"estimate"`` rewrites them every iteration). The model (``predict``,
``score``, ``booster_``, ...) is there when ``after_training`` is called,
with the final attributes (after early stopping, those of the kept best
iteration); before, ``predict`` raises ``NotFittedError``. Callbacks run
after each iteration's eval metrics and early-stopping check (and before its
progress line), in list order, and each one is called even when an earlier
one asked to stop.

Engine callbacks act on an engine's booster (XGBoost's ``EarlyStopping``,
LightGBM's ``early_stopping`` / ``log_evaluation``, ...), which a ranker's
backend drives itself; they are refused with the ranker's equivalent:
``early_stopping_rounds=``, ``fit(verbose=N)``, ``evals_result_``.
Learning-rate schedules have no equivalent: SGLB's shrinkage and noise depend
on a fixed ``learning_rate``.

A ranker is cloned with deep copies of its callbacks (scikit-learn's
``clone``), so a callback that keeps state starts fresh in every
cross-validation fit.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["TrainingCallback", "CallbackEnv"]


class TrainingCallback:
    """Base class of object callbacks; every method is optional.

    Examples
    --------
    >>> import time
    >>> from rankkit import QueryRMSERanker
    >>> from rankkit.callback import TrainingCallback
    >>> from rankkit.datasets import make_ranking
    >>> class TimeBudget(TrainingCallback):
    ...     '''Stop when training has taken more than ``seconds``.'''
    ...     def __init__(self, seconds):
    ...         self.seconds = seconds
    ...     def before_training(self, ranker):
    ...         self.start = time.perf_counter()
    ...     def after_iteration(self, ranker, iteration, evals_log):
    ...         return time.perf_counter() - self.start > self.seconds
    >>> X, y, qid = make_ranking(30, random_state=0)
    >>> ranker = QueryRMSERanker(n_estimators=50, callbacks=[TimeBudget(0.0)]).fit(X, y, qid=qid)
    >>> ranker.n_iterations_
    1
    """

    def before_training(self, ranker):
        """Called once before the first iteration; the return value is ignored."""

    def after_iteration(self, ranker, iteration, evals_log):
        """Called after iteration ``iteration`` (0-based); return True to stop training."""
        return False

    def after_training(self, ranker):
        """Called once with the fitted ranker; the return value is ignored."""


class CallbackEnv(NamedTuple):
    """What a function callback ``callback(env)`` receives after every iteration."""

    #: The ranker being fitted: its parameters and this fit's state so far
    #: (``evals_result_``, ``n_iterations_``, ``best_iteration_``, ``best_score_``,
    #: ``position_bias_``); the model (``predict``) comes after training.
    ranker: object
    #: The iteration just finished, 0-based.
    iteration: int
    #: ``{set name: {metric: [value per iteration so far]}}`` (empty without an eval set).
    evals_log: dict

    def __getattr__(self, name):
        # Only reached for names that are not fields: say what a LightGBM
        # callback written against its CallbackEnv should read instead.
        hint = _LIGHTGBM_ENV.get(name)
        if hint is None:
            raise AttributeError(name)
        raise AttributeError(
            f"CallbackEnv has no {name!r} (LightGBM's callback environment); a rankkit callback gets "
            f"(ranker, iteration, evals_log): {hint}."
        )


_LIGHTGBM_ENV = {
    "model": "env.ranker is the ranker (the engine's booster is the backend's own)",
    "params": "read the parameters with env.ranker.get_params()",
    "begin_iteration": "iterations start at 0",
    "end_iteration": "training runs at most env.ranker.n_estimators iterations",
    "evaluation_result_list": "env.evals_log holds {set: {metric: [values]}}",
}

# The rankkit equivalent of engine callbacks, by class or function name.
_ENGINE_EQUIVALENTS = {
    "EarlyStopping": "set early_stopping_rounds= on the ranker",
    "_EarlyStoppingCallback": "set early_stopping_rounds= on the ranker",
    "early_stopping": "set early_stopping_rounds= on the ranker",
    "EvaluationMonitor": "pass fit(verbose=N) to print the metrics every N iterations",
    "_LogEvaluationCallback": "pass fit(verbose=N) to print the metrics every N iterations",
    "log_evaluation": "pass fit(verbose=N) to print the metrics every N iterations",
    "_RecordEvaluationCallback": "read the ranker's evals_result_ after fit",
    "record_evaluation": "read the ranker's evals_result_ after fit",
    "LearningRateScheduler": "learning-rate schedules are not supported (SGLB needs a fixed learning_rate)",
    "_ResetParameterCallback": "parameter schedules are not supported (SGLB needs a fixed learning_rate)",
    "reset_parameter": "parameter schedules are not supported (SGLB needs a fixed learning_rate)",
    "TrainingCheckPoint": "save the fitted ranker instead",
}

_ENGINES = ("xgboost", "lightgbm", "catboost")


def _engine_of(callback):
    """The engine package a callback comes from (a function's module, its
    class or any base class), or None."""
    modules = [getattr(callback, "__module__", None)] + [cls.__module__ for cls in type(callback).__mro__]
    for module in modules:
        root = (module or "").split(".")[0]
        if root in _ENGINES:
            return root
    return None


class CallbackList:
    """The checked ``callbacks`` of one ``fit``, called as one (internal)."""

    def __init__(self, callbacks):
        if callbacks is None:
            callbacks = []
        if not isinstance(callbacks, (list, tuple)):
            raise TypeError(
                f"callbacks must be a list of callbacks or None, got {type(callbacks).__name__}; "
                "e.g. callbacks=[my_callback]."
            )
        self._before, self._after_iteration, self._after = [], [], []
        for i, callback in enumerate(callbacks):
            _refuse_engine_callback(i, callback)
            methods = [getattr(callback, m, None) for m in ("before_training", "after_iteration", "after_training")]
            if any(m is not None for m in methods):
                if isinstance(callback, type):
                    # Its methods would take the ranker for self: "missing 1 required positional argument".
                    raise TypeError(
                        f"callbacks[{i}] is the class {callback.__name__}, not a callback: pass an instance, "
                        f"callbacks=[{callback.__name__}(...)]."
                    )
                for target, method in zip((self._before, self._after_iteration, self._after), methods):
                    if method is not None:
                        target.append(method)
            elif callable(callback):
                self._after_iteration.append(_as_step(callback))
            else:
                raise TypeError(
                    f"callbacks[{i}] is {callback!r}, neither a function callback(env) nor an object with "
                    "before_training / after_iteration / after_training methods "
                    "(rankkit.callback.TrainingCallback)."
                )

    def __bool__(self):
        return bool(self._before or self._after_iteration or self._after)

    def before_training(self, ranker):
        for method in self._before:
            method(ranker)

    def after_iteration(self, ranker, iteration, evals_log):
        """True if any callback asks to stop (every one is called)."""
        stop = False
        for step in self._after_iteration:
            stop = bool(step(ranker, iteration, evals_log)) or stop
        return stop

    def after_training(self, ranker):
        for method in self._after:
            method(ranker)


def _as_step(function):
    """A function callback ``f(env)`` as an ``after_iteration(ranker, iteration, evals_log)``."""
    def step(ranker, iteration, evals_log):
        return function(CallbackEnv(ranker, iteration, evals_log))

    return step


def _refuse_engine_callback(i, callback):
    engine = _engine_of(callback)
    if engine is None:
        return
    name = getattr(callback, "__name__", None)
    cls = type(callback)
    hint = _ENGINE_EQUIVALENTS.get(name) or _ENGINE_EQUIVALENTS.get(cls.__name__)
    what = f"{callback.__module__}.{name}" if name else f"{cls.__module__}.{cls.__name__}"
    raise TypeError(
        f"callbacks[{i}] is a {engine} callback ({what}): {engine} callbacks act on the {engine} "
        "booster, which the ranker's backend drives itself. rankkit rankers take engine-independent "
        "callbacks: a rankkit.callback.TrainingCallback (after_iteration(ranker, iteration, evals_log) "
        "-> bool) or a function callback(env)" + (f"; here, {hint}." if hint else ".")
    )
