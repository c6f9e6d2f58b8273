"""Saving and loading fitted rankers: the ``rankkit-model`` file format.

``ranker.save_model(path)`` writes one file; ``rankkit.load_model(path)``
returns a ranker of the same class that predicts bit for bit the same scores
on the same machine, with the same parameters (``get_params``, a
``Ranker``'s objective included) and fitted attributes (``feature_names_in_``,
``n_features_in_``, ``categories_``, ``best_iteration_``, ``evals_result_``,
...). No pickle anywhere: the file holds data, never code, so loading an
untrusted file cannot run anything.

**Format, version 2.** A ZIP archive (stored with fixed timestamps, so the
same model gives the same bytes) of

* ``rankkit.json``, the header (UTF-8 JSON)::

      {"format": "rankkit-model", "version": 2, "rankkit_version": "0.1.0",
       "estimator": "rankkit.LambdaMARTRanker", "backend": "xgboost",
       "params": {...}, "fitted": {...}, "backend_state": {...},
       "files": ["booster.ubj"],
       "serving": {"model_file": "booster.ubj", "query_column": "qid",
                   "feature_names": [...] or null, "categories": {"<index>": [...]},
                   "category_dtypes": {"<index>": "str"}}}

  ``params`` are the ranker's ``get_params(deep=False)``; ``fitted`` its
  fitted attributes but the engine objects (``backend_``, ``booster_``,
  rebuilt from the files), ``objective_`` included: the objective as
  trained, which ``score`` and eval metrics follow (its metric settings
  as at fit, ERR's scale pinned to the training labels), even after a
  ``set_params``. Version 1 did not save it (a version-1 file's
  ``objective_`` is rebuilt from the parameters);
  ``backend_state`` is the backend's own
  (:meth:`rankkit._backends._base.Backend.save`); ``files`` lists the other
  members. ``serving`` repeats, untagged, what a server without rankkit
  needs: the engine's model file, and how to build its feature matrix from
  a DataFrame (drop the query column; the columns in this order; in a
  categorical column, category ``i`` of the list is the code ``i`` and
  anything else NaN; ``category_dtypes`` gives the dtype that turns each
  list back into the categories, dates being ISO strings and durations
  counts of their unit).
* the engine's model in the engine's own format, servable without rankkit:
  ``booster.ubj`` (XGBoost UBJSON: ``xgboost.Booster(model_file=...)``),
  ``model.txt`` (LightGBM's text model: ``lightgbm.Booster(model_str=...)``)
  or ``trees.npz`` (the numba engine's trees as NumPy arrays:
  :meth:`rankkit._backends.numba.NumbaBackend.save`). With SGLB shrinkage
  (``model_shrink_rate > 0``) the XGBoost and LightGBM files have it folded
  into their leaves, and a second file (``booster_unfolded.ubj``,
  ``model_unfolded.txt``) keeps the unfolded trees for staged predictions.

JSON values that JSON lacks are tagged objects with one key:
``{"__float__": "nan" | "inf" | "-inf"}``, ``{"__tuple__": [...]}``,
``{"__ndarray__": [...], "dtype": "float64"}`` (dates as ISO strings,
durations as counts of their unit), ``{"__dict__": [[key,
value], ...]}`` (keys that are not strings), ``{"__random_state__":
[...]}`` (a ``numpy.random.RandomState``'s state) and ``{"__object__":
"rankkit.objectives.LambdaMART", "params": {...}}`` (an objective).

**Compatibility.** A file of a newer format version than this rankkit reads
is refused with both versions named and the advice to upgrade rankkit; a
file that is not a rankkit model is refused with what it looks like (an
XGBoost or LightGBM model, a pickle, ...) and how to load that.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
import zlib

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

__all__ = ["FORMAT", "FORMAT_VERSION", "save_model", "load_model"]

FORMAT = "rankkit-model"
#: The format version this rankkit writes and the newest it reads.
FORMAT_VERSION = 2
HEADER = "rankkit.json"

#: Fitted attributes that are engine objects, rebuilt at load rather than stored.
_REBUILT = ("backend_", "booster_")

# A fixed timestamp for every archive member, so saving is deterministic.
_DATE = (1980, 1, 1, 0, 0, 0)


# -- classes a file may name -------------------------------------------------------
def _rankkit_classes(dask=False):
    """``{name in files: class}`` of rankkit's rankers and objectives (public
    names); with ``dask``, rankkit.dask's rankers too (imported only then:
    dask is optional and slow to import)."""
    import rankkit
    import rankkit.objectives as objectives

    out = {}
    modules = [("rankkit", rankkit)]
    if dask:
        import rankkit.dask

        modules.append(("rankkit.dask", rankkit.dask))
    for prefix, module in modules:
        for name in module.__all__:
            cls = getattr(module, name)
            # A ranker is what saves itself (no import of rankkit._estimators,
            # which imports this module).
            if isinstance(cls, type) and callable(getattr(cls, "save_model", None)):
                out[f"{prefix}.{name}"] = cls
    for name in objectives.__all__:
        cls = getattr(objectives, name)
        if isinstance(cls, type) and issubclass(cls, objectives.RankingObjective):
            out[f"rankkit.objectives.{name}"] = cls
    return out


def _class_name(cls):
    for name, known in _rankkit_classes(dask=cls.__module__ == "rankkit.dask").items():
        if known is cls:
            return name
    return f"{cls.__module__}.{cls.__qualname__}"


def _resolve_class(name, classes):
    known = _rankkit_classes(dask=name.startswith("rankkit.dask."))
    known.update((_class_name(cls), cls) for cls in classes or ())
    # A class saved from a script is "__main__.Name", and the server imports
    # it from a module: a class passed in classes= under the same name is it.
    same_name = [cls for cls in classes or () if cls.__qualname__ == name.rsplit(".", 1)[-1]]
    if name not in known and len(same_name) == 1:
        return same_name[0]
    if name not in known:
        raise ValueError(
            f"The file refers to the class {name!r}, which is neither rankkit's nor among classes=. "
            f"A model file stores class names, never code: pass the class, "
            f"rankkit.load_model(path, classes=[{name.rsplit('.', 1)[-1]}])."
        )
    return known[name]


# -- values <-> JSON -----------------------------------------------------------------
_TAGS = ("__float__", "__tuple__", "__ndarray__", "__dict__", "__random_state__", "__object__")


def _encode(value, where):
    """``value`` as JSON-ready data (see the module docstring for the tags)."""
    from rankkit._objectives._base import RankingObjective

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, list):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        items = [(k, _encode(v, f"{where}[{k!r}]")) for k, v in value.items()]
        if all(isinstance(k, str) and k not in _TAGS for k, _ in items):
            return dict(items)
        return {"__dict__": [[_encode(k, where), v] for k, v in items]}
    if isinstance(value, (pd.Series, pd.Index)) and value.dtype.kind in "biufUMm":
        value = value.to_numpy()  # a parameter given as a Series (propensities=): its values
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "M":  # dates (categories of a date column): ISO strings, NaT included
            return {"__ndarray__": np.datetime_as_string(value).tolist(), "dtype": str(value.dtype)}
        if value.dtype.kind == "m":  # durations: counts of the dtype's unit
            return {"__ndarray__": value.astype(np.int64).tolist(), "dtype": str(value.dtype)}
        if value.dtype.kind not in "biufUO":
            raise TypeError(f"Cannot save {where}: an array of dtype {value.dtype} (numbers and strings only).")
        dtype = "str" if value.dtype.kind == "U" else str(value.dtype)
        return {"__ndarray__": _encode(value.tolist(), where), "dtype": dtype}
    if isinstance(value, np.random.RandomState):
        kind, keys, pos, has_gauss, cached = value.get_state()
        return {"__random_state__": [kind, keys.tolist(), int(pos), int(has_gauss), float(cached)]}
    if isinstance(value, RankingObjective):
        return {"__object__": _class_name(type(value)), "params": _encode(value._get_params(), where)}
    if where.startswith("attribute categories_"):
        raise TypeError(
            f"Cannot save the category {value!r} ({where}): a rankkit model file holds categories that are "
            "numbers, strings, dates or durations. Give that column such categories before fit, e.g. "
            "df[column] = df[column].cat.rename_categories(str), or keep the model with pickle."
        )
    raise TypeError(
        f"Cannot save {where}={value!r}: a rankkit model file holds numbers, strings, lists, dicts, "
        "NumPy arrays, RandomState and objectives, never code. Set it to a plain value (or None) first."
    )


def _decode(data, classes):
    if isinstance(data, list):
        return [_decode(v, classes) for v in data]
    if not isinstance(data, dict):
        return data
    if "__float__" in data:
        return float(data["__float__"])
    if "__tuple__" in data:
        return tuple(_decode(v, classes) for v in data["__tuple__"])
    if "__ndarray__" in data:
        values = _decode(data["__ndarray__"], classes)
        return np.asarray(values, dtype=data["dtype"] if data["dtype"] != "str" else str)
    if "__dict__" in data:
        return {_decode(k, classes): _decode(v, classes) for k, v in data["__dict__"]}
    if "__random_state__" in data:
        kind, keys, pos, has_gauss, cached = data["__random_state__"]
        state = np.random.RandomState()
        state.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
        return state
    if "__object__" in data:
        return _resolve_class(data["__object__"], classes)(**_decode(data["params"], classes))
    return {k: _decode(v, classes) for k, v in data.items()}


# -- save ------------------------------------------------------------------------------
def _fitted_attributes(ranker):
    """Every fitted attribute (public, ending in ``_``) but the engine objects."""
    return {k: v for k, v in vars(ranker).items()
            if k.endswith("_") and not k.startswith("_") and k not in _REBUILT}


#: Parameters saved as None: training callbacks are code that acts during
#: ``fit`` (XGBoost does not save them in a model either); a Dask ranker's
#: client is a connection (the loaded ranker uses the current client, as
#: after unpickling).
_NOT_SAVED = frozenset({"callbacks", "client"})


def save_model(ranker, path):
    """Write a fitted ranker to ``path`` (a file name or a binary file object).

    See the module docstring for the format. Raises ``NotFittedError`` for an
    unfitted ranker and ``TypeError`` naming a parameter whose value cannot
    be stored (e.g. a callable). ``callbacks`` is saved as None: callbacks
    act during ``fit`` and are code.
    """
    check_is_fitted(ranker, "backend_")
    if isinstance(path, io.TextIOBase):
        raise TypeError(f"save_model writes a binary file: open {_shown(path)} with mode 'wb', not 'w'.")
    state, files = ranker.backend_.save()
    names = getattr(ranker, "feature_names_in_", None)
    categories = {j: _encode(np.asarray(c), f"attribute categories_[{j}]")
                  for j, c in getattr(ranker, "categories_", {}).items()}
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "rankkit_version": _rankkit_version(),
        "estimator": _class_name(type(ranker)),
        "backend": ranker.backend_.name,
        "params": {k: _encode(None if k in _NOT_SAVED else v, f"parameter {k}")
                   for k, v in ranker.get_params(deep=False).items()},
        "fitted": {k: _encode(v, f"attribute {k}") for k, v in _fitted_attributes(ranker).items()},
        "backend_state": _encode(state, "backend state"),
        "files": sorted(files),
        "serving": {
            "model_file": next(iter(files)),  # the backend lists the servable model first
            "query_column": ranker.qid_col,
            "feature_names": None if names is None else [str(n) for n in names],
            "categories": {str(j): c["__ndarray__"] for j, c in categories.items()},
            # What turns the JSON lists back into the categories: dates are ISO strings, durations counts.
            "category_dtypes": {str(j): c["dtype"] for j, c in categories.items()},
        },
    }
    text = json.dumps(header, indent=1, allow_nan=False).encode()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in [(HEADER, text), *sorted(files.items())]:
            info = zipfile.ZipInfo(name, date_time=_DATE)
            info.external_attr = 0o644 << 16  # rw-r--r-- once extracted
            archive.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)


def _rankkit_version():
    import rankkit

    return rankkit.__version__


# -- load ------------------------------------------------------------------------------
def _shown(path):
    """A path, or a file object's name, as errors show it."""
    if hasattr(path, "read") or hasattr(path, "write"):
        name = getattr(path, "name", None)
        return repr(name) if isinstance(name, (str, bytes)) else f"the {type(path).__name__} file object"
    return repr(path)


def _damaged(path, what):
    return ValueError(f"{_shown(path)} is a damaged rankkit model file: {what}. Save the ranker again, or copy the "
                      "file again if its copy or download was interrupted.")


def _not_a_model(path, head):
    """The error for a file that is not a rankkit model, saying what it looks like."""
    hint = ""
    if head.startswith(b"\x80"):
        hint = " It looks like a pickle: load it with pickle.load or joblib.load (only from a trusted source)."
    elif head.lstrip().startswith(b"tree\n") or b"version=v" in head[:64]:
        hint = " It looks like a LightGBM text model: lightgbm.Booster(model_file=...)."
    elif head.startswith(b"{") and b"learner" in head:
        hint = " It looks like an XGBoost model: xgboost.Booster(model_file=...)."
    return ValueError(
        f"{_shown(path)} is not a rankkit model file (a ZIP archive with a {HEADER!r} header written by "
        f"ranker.save_model).{hint}"
    )


def load_model(path, *, classes=()):
    """Read a ranker written by :meth:`~rankkit._estimators.BaseRanker.save_model`.

    Parameters
    ----------
    path : str, path-like or binary file object
    classes : sequence of classes, optional
        User-written objective or ranker classes the file names (a file
        stores class names, never code); rankkit's own need not be given.

    Returns
    -------
    ranker
        Fitted, of the saved class, with the saved parameters and fitted
        attributes; its predictions equal the saved ranker's bit for bit on
        the same machine.

    Raises
    ------
    ValueError
        For a file that is not a rankkit model (saying what it looks like),
        one of a newer format version (naming both versions: upgrade
        rankkit), a damaged one, or one holding a parameter value the
        ranker or its objective refuses.
    """
    if isinstance(path, io.TextIOBase):
        raise TypeError(f"load_model reads a binary file: open {_shown(path)} with mode 'rb', not 'r'.")
    if hasattr(path, "read"):
        source = io.BytesIO(path.read())
    else:
        with open(path, "rb") as fh:
            source = io.BytesIO(fh.read())
    head = source.getvalue()[:512]
    if not zipfile.is_zipfile(source):
        if head.startswith(b"PK\x03\x04") and HEADER.encode() in head[:64]:
            # The first member is the header: save_model's file, cut short (its directory is at the end).
            raise _damaged(path, "it ends before its ZIP directory (truncated)")
        raise _not_a_model(path, head)
    with zipfile.ZipFile(source) as archive:
        if HEADER not in archive.namelist():
            raise _not_a_model(path, head)
        text = _read_member(archive, HEADER, path)
        try:
            header = json.loads(text)
        except ValueError:
            raise _not_a_model(path, head) from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise _not_a_model(path, head)
        version = header.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"{_shown(path)} has an invalid rankkit-model format version {version!r}.")
        if version > FORMAT_VERSION:
            raise ValueError(
                f"{_shown(path)} is a rankkit-model of format version {version}, written by rankkit "
                f"{header.get('rankkit_version', '?')}; this rankkit ({_rankkit_version()}) reads format "
                f"versions up to {FORMAT_VERSION}. Upgrade rankkit (pip install --upgrade rankkit) to load it."
            )
        lacking = [key for key in ("estimator", "backend", "params", "fitted", "backend_state", "files")
                   if key not in header]
        if lacking:
            raise _damaged(path, f"its header {HEADER!r} lacks {lacking}")
        wrong = [key for key, kind in (("params", dict), ("fitted", dict), ("backend_state", dict),
                                       ("files", list), ("estimator", str), ("backend", str))
                 if not isinstance(header[key], kind)]
        if wrong:
            raise _damaged(path, f"the entries {wrong} of its header {HEADER!r} are not what save_model writes")
        missing = [name for name in header["files"] if name not in archive.namelist()]
        if missing:
            raise _damaged(path, f"the header lists {missing}, which the archive lacks")
        files = {name: _read_member(archive, name, path) for name in header["files"]}
    return _rebuild(header, files, classes)


def _read_member(archive, name, path):
    """One member's bytes; a damaged one (CRC, compressed stream) is a ValueError."""
    try:
        return archive.read(name)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
        raise _damaged(path, f"its member {name!r} cannot be read ({error})") from None


def _rebuild(header, files, classes):
    from rankkit._backends import get_backend

    cls = _resolve_class(header["estimator"], classes)
    params = {k: _decode(v, classes) for k, v in header["params"].items()}
    unknown = sorted(set(params) - set(cls._get_param_names()))
    if unknown:
        raise ValueError(
            f"The file sets parameters {unknown} that {cls.__name__} of rankkit {_rankkit_version()} does not "
            f"have (it was written by rankkit {header.get('rankkit_version', '?')}): upgrade rankkit."
        )
    ranker = cls(**params)
    try:  # a hand-edited header (a max_depth of "deep") fails here, not at some later call
        ranker._validate_params()
        if getattr(ranker, "objective", None) is not None:
            ranker.objective._check_params()
    except ValueError as error:
        raise ValueError(f"The file's parameters are not valid: {error}") from None
    for name, value in header["fitted"].items():
        if not (name.endswith("_") and not name.startswith("_") and name not in _REBUILT):
            raise ValueError(f"The file's fitted attribute {name!r} is not a fitted attribute name.")
        setattr(ranker, name, _decode(value, classes))
    backend = get_backend(header["backend"]).load(_decode(header["backend_state"], classes), files)
    ranker.backend_ = backend
    ranker.booster_ = getattr(backend, "booster_", None)
    if "objective_" not in header["fitted"]:  # a version-1 file
        ranker.objective_ = ranker._objective_for_fit(fitting=False)
    try:
        ranker.objective_._check_params()
    except ValueError as error:
        raise ValueError(f"The file's trained objective is not valid: {error}") from None
    return ranker
