"""Categorical features: pandas ``category`` columns as codes, one mapping for every backend.

A DataFrame column of pandas' ``category`` dtype is a categorical feature (as
for XGBoost's ``enable_categorical``, LightGBM and scikit-learn's
``HistGradientBoosting*(categorical_features="from_dtype")``). At ``fit`` the
ranker records every such column's categories that its rows hold, in the
dtype's order (``categories_``: feature index -> categories, so that category
``i`` is code ``i``; pandas' own numbering when every category occurs; one
the dtype lists but no training row holds is unseen, a missing value, as
everywhere below), and the engines receive the codes
``0 .. k - 1`` as floats, NaN for a missing value; XGBoost (feature type
``"c"``) and LightGBM (``categorical_feature``) split on sets of categories.

Wherever the ranker reads features again (``predict``, ``score``, eval sets),
a categorical column is coded against the *training* categories by value,
whatever its own categories and their order (a column of plain strings works
too). A value that is not one of the training categories is coded as NaN: a
missing value, which follows every split's learned missing direction, like
scikit-learn's ``HistGradientBoosting*`` does with unknown categories; a
column of strings, numbers, booleans, dates, durations or periods where the
training categories are of another of these kinds (or dates with a time zone
against dates without one) is an error, since none of its values could
match. A NumPy array (or sparse matrix) has no categories: its categorical columns
must hold the codes themselves (``categories_[j]`` numbers them), as a
booster served without rankkit expects; other values are an error.

This module is the one home of that mapping; the backends only learn which
feature indices are categorical.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fit_categories", "apply_categories", "columns_differ"]


def is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "iloc")


def _is_categorical(column):
    import pandas as pd

    return isinstance(column.dtype, pd.CategoricalDtype)


def _float_codes(codes):
    """Integer codes as floats, ``-1`` (missing, unseen) as NaN."""
    codes = np.asarray(codes, dtype=np.float64)
    codes[codes < 0] = np.nan
    return codes


def _names(X, indices):
    return [X.columns[i] for i in indices]


def _is_text(column):
    """A column of strings (or strings mixed with numbers) that is not categorical."""
    import pandas as pd

    types = pd.api.types
    if _is_categorical(column) or types.is_numeric_dtype(column.dtype) or types.is_bool_dtype(column.dtype):
        return False
    inferred = _inferred(column)
    if inferred in ("mixed", "mixed-integer"):  # strings among numbers, or lists and dicts (not text)
        return any(isinstance(v, (str, bytes)) for v in column.to_numpy(dtype=object))
    return inferred in ("string", "bytes")


def _inferred(column):
    """pandas' name for what ``column`` holds. A pyarrow dictionary column (pyarrow's
    categorical) infers as ``"unknown-array"``: its values decide, so that one of
    strings gets the text message, not NumPy's ``could not convert string to float``."""
    import pandas as pd

    kind = pd.api.types.infer_dtype(column, skipna=True)
    if kind == "unknown-array" and _is_arrow_dictionary(column.dtype):
        kind = pd.api.types.infer_dtype(np.asarray(column, dtype=object), skipna=True)
    return kind


def _is_arrow_dictionary(dtype):
    import pandas as pd

    if not isinstance(dtype, pd.ArrowDtype):
        return False
    import pyarrow as pa

    return pa.types.is_dictionary(dtype.pyarrow_dtype)


#: What :func:`pandas.api.types.infer_dtype` calls dates, times and durations, whatever
#: holds them: NumPy and pyarrow timestamps and durations, periods, Python objects.
_TIME_KINDS = ("datetime64", "datetime", "date", "time", "timedelta64", "timedelta", "period")


def _is_time(column):
    import pandas as pd

    types = pd.api.types
    if types.is_datetime64_any_dtype(column.dtype) or types.is_timedelta64_dtype(column.dtype):
        return True
    # A pyarrow duration, a period or an object column of datetime objects is
    # none of the dtypes above, and NumPy's error for it names no column.
    if _is_categorical(column) or types.is_numeric_dtype(column.dtype) or types.is_bool_dtype(column.dtype):
        return False
    return _inferred(column) in _TIME_KINDS


def _all_numeric(X):
    """Whether every column of DataFrame ``X`` is numeric or boolean, read from
    ``X.dtypes`` at once: the column-by-column checks below build a Series per
    column, milliseconds per call on a wide frame, which a served model pays on
    every ``predict``."""
    import pandas as pd

    types = pd.api.types
    # A category dtype of booleans is "bool" to pandas: categories are told apart first.
    return all(not isinstance(d, pd.CategoricalDtype) and not _is_arrow_dictionary(d)
               and (types.is_numeric_dtype(d) or types.is_bool_dtype(d)) for d in X.dtypes)


def _check_no_strings(X, where, skip=()):
    """An error for text columns that are not categorical, and for dates and
    durations: they cannot be features as they are, and saying how to make
    them features beats scikit-learn's ``could not convert string to float``
    or NumPy's dtype promotion error."""
    import pandas as pd

    if _all_numeric(X):
        return
    times = [X.columns[i] for i in range(X.shape[1]) if i not in skip and _is_time(X.iloc[:, i])]
    if times:
        first = times[0]
        raise ValueError(
            f"{where} has date or duration columns {times}: a ranker takes numbers. Turn them into "
            f"numbers first, e.g. an age in days, (now - X[{first!r}]).dt.days, or parts such as "
            f"X[{first!r}].dt.hour, or drop them."
        )
    text = [X.columns[i] for i in range(X.shape[1]) if i not in skip and _is_text(X.iloc[:, i])]
    if text:
        first = text[0]
        raise ValueError(
            f"{where} has text columns {text} that are not categorical. Mark categorical features with "
            f"pandas' category dtype, e.g. X[{first!r}] = X[{first!r}].astype('category') "
            "(backend='xgboost' and backend='lightgbm' split on categories natively), or encode them "
            "as numbers first (sklearn.preprocessing.OrdinalEncoder, TargetEncoder)."
        )
    for i in range(X.shape[1]):
        column = X.iloc[:, i]
        if i in skip or _is_categorical(column) or pd.api.types.is_numeric_dtype(column.dtype) \
                or pd.api.types.is_bool_dtype(column.dtype):
            continue
        # Intervals, lists, or a pyarrow dictionary column with missing values:
        # NumPy's error ("float() argument must be ...") names no column.
        try:
            np.asarray(column, dtype=np.float64)
            if _is_arrow_dictionary(column.dtype) and column.isna().any():
                raise TypeError  # converts here, yet not in scikit-learn's check of the frame
        except (TypeError, ValueError):
            raise ValueError(
                f"{where} column {X.columns[i]!r} (dtype {column.dtype}) cannot be read as numbers, and a ranker "
                f"takes numbers. Mark it categorical, X[{X.columns[i]!r}] = X[{X.columns[i]!r}].astype('category'), "
                "or turn it into a number column first (e.g. .astype('float64'))."
            ) from None


def columns_differ(X, fitted_names):
    """Whether the string columns of DataFrame ``X`` are not ``fitted_names``
    in their order. Categories are applied by position, so such a frame is
    left to scikit-learn's ``validate_data``, which refuses it naming the
    columns (it only warns for columns that are not all strings)."""
    if fitted_names is None or not is_dataframe(X) or not all(isinstance(c, str) for c in X.columns):
        return False
    return list(X.columns) != list(fitted_names)


def fit_categories(X, *, where="X"):
    """``(X with its categorical columns as float codes, categories)``.

    ``categories`` maps the index of every categorical column to its
    categories (a NumPy array, code order); ``{}`` for anything but a
    DataFrame with ``category`` columns (then ``X`` is returned as is).
    """
    if not is_dataframe(X) or _all_numeric(X):  # no category column
        return X, {}
    _check_no_strings(X, where)
    indices = [i for i in range(X.shape[1]) if _is_categorical(X.iloc[:, i])]
    if not indices:
        return X, {}
    # Only the categories the rows hold: one the dtype lists but no training row has (a fold of
    # a larger frame keeps its dtype) would get a code the engine never saw, which XGBoost scores
    # as some seen category; unseen, it is a missing value, as every other unseen category.
    categories = {}
    X = X.copy(deep=False)
    for i in indices:
        column = X.iloc[:, i]
        codes = np.asarray(column.cat.codes)
        used = np.unique(codes[codes >= 0])
        categories[i] = np.asarray(column.cat.categories)[used]
        remapped = np.full(codes.shape[0], -1, dtype=np.int64)
        remapped[codes >= 0] = np.searchsorted(used, codes[codes >= 0])
        X.isetitem(i, _float_codes(remapped))
    return X, categories


def apply_categories(X, categories, *, where="X"):
    """``X`` with its categorical columns coded against the training ``categories``.

    See the module docstring: values are matched by value, unseen ones
    become NaN (missing); a DataFrame's ``category`` column where the model
    saw numbers, or an array's categorical column holding anything but
    codes, is an error.
    """
    if not is_dataframe(X):
        if categories:
            _check_codes(X, categories, where)
        return X
    if not categories and _all_numeric(X):  # nothing to code, nothing to refuse
        return X
    _check_no_strings(X, where, skip=categories)
    n_fit = max(categories, default=-1) + 1
    if X.shape[1] < n_fit:
        return X  # the feature-count check reports this
    unexpected = [i for i in range(X.shape[1]) if i not in categories and _is_categorical(X.iloc[:, i])]
    if unexpected:
        raise ValueError(
            f"{where} has category columns {_names(X, unexpected)} that held numbers when the ranker was "
            "fitted: pass them as numbers, or refit with them as categories."
        )
    if not categories:
        return X
    import pandas as pd

    X = X.copy(deep=False)
    for i, cats in categories.items():
        column = X.iloc[:, i]
        training = pd.Index(cats)
        _check_kind(column, training, X.columns[i], where)
        if _is_categorical(column):
            # Each of the column's categories looked up once among the training
            # ones (-1: unseen), then every row through its code (-1: missing).
            lookup = np.append(training.get_indexer(column.cat.categories), -1)
            codes = lookup[np.asarray(column.cat.codes)]
        else:
            codes = training.get_indexer(column)  # by value; unseen and missing -> -1
        X.isetitem(i, _float_codes(codes))
    return X


#: Kinds of values (pandas' ``infer_dtype``) that never equal one another.
_KIND_GROUPS = {
    **dict.fromkeys(("integer", "floating", "mixed-integer-float", "decimal"), "numbers"),
    **dict.fromkeys(("string", "bytes"), "strings"),
    "boolean": "booleans",
    **dict.fromkeys(("datetime64", "datetime", "date"), "dates"),
    **dict.fromkeys(("timedelta64", "timedelta"), "durations"),
    "period": "periods",
}


def _time_zone_aware(values):
    """Whether dates carry a time zone (None: not dates pandas can read)."""
    import pandas as pd

    try:
        return pd.DatetimeIndex(values).tz is not None
    except (TypeError, ValueError):
        return None


def _check_kind(column, training, name, where):
    """An error for a categorical column whose values are of another kind than
    its training categories (strings where fit saw numbers, ...): matched by
    value, none could match, and the whole column would silently become
    missing values."""
    import pandas as pd

    values = column.cat.categories if _is_categorical(column) else column[column.notna()]
    if len(values) == 0:  # all missing: nothing to match
        return
    given = _KIND_GROUPS.get(pd.api.types.infer_dtype(values, skipna=True))
    fitted = _KIND_GROUPS.get(pd.api.types.infer_dtype(training, skipna=True))
    aware = (_time_zone_aware(values), _time_zone_aware(training)) if given == fitted == "dates" else (None, None)
    if None not in aware and aware[0] != aware[1]:  # None: dates of several offsets, left to the matching
        given, fitted = (("dates with a time zone", "dates without one") if aware[0]
                         else ("dates without a time zone", "dates with one"))
        fix = ".dt.tz_localize(None)" if aware[0] else ".dt.tz_localize(<the zone of fit>)"
    elif given is None or fitted is None or given == fitted:
        return
    else:
        fix = {"numbers": f".astype({training.dtype.name!r})", "booleans": ".astype(bool)",
               "strings": ".astype(str)", "dates": " = pd.to_datetime(...)", "durations": " = pd.to_timedelta(...)",
               "periods": ".dt.to_period(...)"}[fitted]
    raise ValueError(
        f"{where} column {name!r} is a categorical feature whose categories at fit were {fitted} "
        f"({list(training[:5])}{', ...' if len(training) > 5 else ''}), but it holds {given}: categories are "
        f"matched by value, none of them can match, and every row would be a missing value. Convert the "
        f"column first, e.g. X[{name!r}]{fix}."
    )


def _check_codes(X, categories, where):
    """An array's categorical columns must hold codes: NaN or whole numbers in ``[0, k)``."""
    columns = X.tocsc() if hasattr(X, "tocsc") else np.asarray(X)
    if getattr(columns, "ndim", 2) != 2 or columns.shape[1] <= max(categories):
        return  # the shape checks report this
    for i, cats in categories.items():
        values = columns[:, [i]].toarray().ravel() if hasattr(columns, "toarray") else columns[:, i]
        try:
            values = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            values = np.array([np.inf])
        present = values[~np.isnan(values)]
        if present.size and not (np.all(present == np.floor(present)) and present.min() >= 0
                                 and present.max() < len(cats)):
            raise ValueError(
                f"Column {i} of {where} is a categorical feature: an array must hold its category codes "
                f"(0 to {len(cats) - 1}, the positions in categories_[{i}]) or NaN. Pass a DataFrame with "
                "the column itself (category dtype or its values) to have rankkit code it."
            )
