"""``backend_params``: every backend declares the engine parameters it accepts.

The one home of "which engine parameters are valid"; the settings common to
every engine (``n_estimators``, ``max_depth``, ...) are declared in
:mod:`rankkit._params`, and :meth:`Backend._check_settings
<rankkit._backends._base.Backend._check_settings>` checks both. A backend
class provides

* ``valid_params()`` -- the set of keys its engine understands (the engine's
  own list where it can be read programmatically: LightGBM's parameter names
  and aliases, the parameters of a configured ``xgboost.Booster``; the numba
  backend's own few);
* ``refused_params(params)`` -- ``{key: reason}`` for keys the engine knows
  but rankkit sets itself or cannot honour (the objective, the number of
  iterations, the engine's eval metrics, ...);
* ``params_help`` -- where the valid keys are listed.

:func:`check_backend_params` turns both into one error that names every bad
key, the backend, the other backend a key belongs to (so
``backend_params={"num_leaves": 63}`` on XGBoost says it is a LightGBM
parameter) and the closest valid spellings (``"tree_methd"`` ->
``"tree_method"``).
"""

from __future__ import annotations

import difflib

__all__ = ["check_backend_params", "ranker_parameter_reasons", "RANKER_LEVEL_REASONS"]

#: Keys any engine may be given that the ranker's own loop handles.
RANKER_LEVEL_REASONS = {
    "n_estimators": "use the ranker's n_estimators",
    "num_boost_round": "use the ranker's n_estimators",
    "early_stopping_rounds": "the ranker stops early itself: use the ranker's early_stopping_rounds (with an eval_set)",
}


def ranker_parameter_reasons(params, sets):
    """``{key: reason}`` for the keys of ``params`` that set what a ranker
    parameter sets (``sets``: engine name or alias -> ranker parameter).

    One parameter, one place: ``backend_params={"max_depth": 1}`` beside the
    ranker's ``max_depth=6`` would grow trees that ``get_params()`` does not
    describe, and a grid over ``max_depth`` would do nothing.
    """
    return {
        key: f"it sets what the ranker's {sets[key]} sets: pass {sets[key]}={params[key]!r} to the ranker instead"
        for key in params if key in sets
    }


def check_backend_params(backend_cls, params):
    """Validated copy of ``params`` (a dict, or None) for ``backend_cls``.

    Raises
    ------
    TypeError
        When ``params`` is not a dict or a key is not a string.
    ValueError
        For keys the backend does not accept; the message names each key,
        why it is refused, the backend it belongs to when it is another
        engine's, and where the valid keys are listed.
    """
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise TypeError(f"backend_params must be a dict or None, got {type(params).__name__}.")
    params = dict(params)
    for key in params:
        if not isinstance(key, str):
            raise TypeError(f"backend_params keys must be strings, got {key!r}.")
    name = backend_cls.name
    refused = backend_cls.refused_params(params)
    problems = [f"{key!r}: {why}" for key, why in refused.items()]
    valid = backend_cls.valid_params()
    for key in params:
        if key in valid or key in refused:
            continue
        elsewhere = _ranker_parameter_elsewhere(key, params[key], name)
        if elsewhere:
            problems.append(elsewhere)
            continue
        owners = _other_backends_accepting(key, name)
        if owners:
            where = " or ".join(f"backend={o!r}" for o in owners)
            same = [k for group in _SAME_SETTING if key in group for k in sorted(group) if k in valid]
            here = f" (its equivalent here: {same[0]!r})" if same else ""
            problems.append(f"{key!r} is a parameter of {where}, not of backend={name!r}{here}")
            continue
        close = difflib.get_close_matches(key, sorted(valid), n=3, cutoff=0.75)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        problems.append(f"{key!r} is not a parameter of backend={name!r}{hint}")
    if problems:
        raise ValueError(
            f"Invalid backend_params for backend={name!r}: " + "; ".join(problems)
            + f". The valid keys: {backend_cls.params_help}."
        )
    return params


#: The engines' names of one setting (the least gain of a split).
_SAME_SETTING = ({"gamma", "min_split_loss", "min_split_gain", "min_gain_to_split"},)


def _other_backends(this):
    """``(name, class)`` of the other registered backends whose engines are
    installed: the hints below are a courtesy, the error stands without them."""
    from . import BACKENDS, get_backend

    for other in BACKENDS:
        if other == this:
            continue
        try:
            yield other, get_backend(other)
        except ImportError:
            continue


def _ranker_parameter_elsewhere(key, value, this):
    """The problem with ``key`` when another engine names a ranker parameter
    so (``"eta"``, ``"num_threads"``, ``"feature_fraction"``), or None."""
    for other, cls in _other_backends(this):
        ranker = cls.ranker_parameters().get(key)
        if ranker is not None:
            return (f"{key!r} is what backend={other!r} calls the ranker's {ranker}: pass {ranker}={value!r} to "
                    "the ranker instead")
    return None


def _other_backends_accepting(key, this):
    """Names of the other registered backends whose engines accept ``key``
    (``valid_params`` leaves out the keys each refuses)."""
    return [other for other, cls in _other_backends(this) if key in cls.valid_params()]
