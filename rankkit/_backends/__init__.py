"""Boosting engines behind the rankers.

``BACKENDS`` maps a ``backend=`` name to ``"module:Class"``; the module is
imported only when that backend is used, so the numba path never imports
XGBoost or LightGBM and a missing engine fails with an install hint, not at
import time.
"""

from __future__ import annotations

import importlib
import sys

from .._threads import openmp_wait_policy
from ._adapters import EngineInputs

__all__ = ["BACKENDS", "EngineInputs", "get_backend", "resolve_backend"]

#: ``backend=`` name -> ``"module:Class"`` (resolved lazily by :func:`get_backend`).
BACKENDS = {
    "xgboost": "rankkit._backends.xgboost:XGBoostBackend",
    "numba": "rankkit._backends.numba:NumbaBackend",
    "lightgbm": "rankkit._backends.lightgbm:LightGBMBackend",
}

#: How a user installs each engine (``None``: ships with rankkit).
_ENGINE_INSTALL = {"xgboost": "pip install xgboost", "numba": None,
                   "lightgbm": "pip install lightgbm (or 'rankkit[lightgbm]')"}


def get_backend(name):
    """The backend class registered under ``name``.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the valid ones).
    ImportError
        When the engine behind a known backend is not installed (the message
        says what to install).
    """
    if name not in BACKENDS:
        raise ValueError(f"Unknown backend {name!r}; valid backends are {sorted(BACKENDS)}.")
    module_name, _, class_name = BACKENDS[name].partition(":")
    try:
        module = sys.modules.get(module_name)
        if module is None:
            # The engine's OpenMP runtime, if its import loads one, lets idle threads sleep.
            with openmp_wait_policy():
                module = importlib.import_module(module_name)
    except ImportError as exc:
        install = _ENGINE_INSTALL.get(name)
        if install is None or not _is_missing_engine(exc, name):
            raise
        raise ImportError(
            f"backend={name!r} needs the {name} package, which is not installed: "
            f"{install}, or choose another backend from {sorted(BACKENDS)}."
        ) from exc
    return getattr(module, class_name)


def _is_missing_engine(exc, name):
    # Only the engine itself missing gets the install hint; any other import
    # error inside rankkit is a bug and must surface unchanged.
    return isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == name


def resolve_backend(backend, has_categorical):
    """The backend a ranker's ``backend`` stands for on data with or without
    categorical columns (``has_categorical``).

    ``"auto"`` is the numba engine, whose CatBoost-style learner (oblivious
    trees, random split strength) the defaults were chosen with, unless
    the data has categorical columns, which it cannot split on: then the
    first installed engine that can (``supports_categorical``; XGBoost,
    then LightGBM). Without one, the numba engine's error names the
    columns and the ways out.
    """
    if backend != "auto":
        return backend
    if not has_categorical:
        return "numba"
    for name in BACKENDS:
        try:
            if get_backend(name).supports_categorical:
                return name
        except ImportError:
            continue
    return "numba"
