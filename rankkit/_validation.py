"""Input checks shared by metrics, objectives and estimators.

Every message names the parameter and says how to fix it.
"""

from __future__ import annotations

import functools
import inspect
import numbers

import numpy as np
from sklearn.utils._param_validation import Interval as _SklearnInterval

__all__ = [
    "check_iteration_range",
    "Interval", "check_labels", "check_scores", "check_k", "check_same_length", "check_sample_weight",
]


class Interval(_SklearnInterval):
    """scikit-learn's ``Interval`` constraint, except that ``True`` and
    ``False`` are not numbers here: ``k=True`` or ``sigma=False`` is a mistake
    to report, not a count of 1 or a scale of 0."""

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


def kernel_array(a, dtype):
    """``a`` as a writable C-contiguous array of ``dtype``, copied only if it is not one.

    The kernels see one array type this way: numba compiles a kernel again for
    a read-only array (pandas 3 hands out read-only views), seconds per kernel
    on first use.
    """
    return np.require(a, dtype, ["C", "W"])


def vector(a, name, what):
    """``a`` as a 1-D float64 array of finite numbers (``what`` names them in errors)."""
    a = np.asarray(a)
    if a.ndim == 2 and 1 in a.shape:
        a = a.ravel()
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}.")
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric {what}, got dtype {a.dtype}.")
    a = kernel_array(a, np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values; {what} must be finite.")
    return a


def check_labels(y, *, name="y_true", allow_negative=False):
    """Float64 1-D labels; NaN/inf always rejected, negatives unless allowed.

    (ERR's labels without a mapping must also be probabilities:
    :func:`rankkit._metrics._common.err_scale` checks that.)
    """
    y = vector(y, name, "relevance labels")
    if not allow_negative and y.size and y.min() < 0:
        raise ValueError(
            f"{name} contains negative labels (min {y.min():g}); relevance labels must be >= 0."
        )
    return y


def check_scores(s, *, name="y_score"):
    """Float64 1-D finite scores."""
    return vector(s, name, "scores")


#: Largest cut-off: the kernels take ``k`` as an int64.
_MAX_K = int(np.iinfo(np.int64).max)


def check_k(k, *, name="k"):
    """``None`` (whole list) or a positive int up to 2**63 - 1."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"{name} must be a positive int or None, got {k!r}.")
    if k <= 0:
        raise ValueError(f"{name} must be a positive int or None (whole list), got {k}.")
    if k > _MAX_K:
        # Refused, not clipped to int64: precision@k divides by k itself
        # (trec_eval's P_k), so clipping would change its value.
        raise ValueError(
            f"{name}={k} is beyond the largest cut-off, 2**63 - 1 (the kernels' int64); pass a smaller k, "
            "or None for the whole list."
        )
    return int(k)


def check_same_length(**arrays):
    lengths = {name: len(a) for name, a in arrays.items() if a is not None}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise ValueError(f"Inconsistent numbers of rows: {desc}. Pass one value per row.")


def first_text(values):
    """The first str or bytes in an object array (None if none): converting
    such an array to float64 would read the text "3" as the number 3."""
    return next((v for v in values.flat if isinstance(v, (str, bytes))), None)


def check_sample_weight(w, n, *, name="sample_weight", positive=False):
    """``w`` as float64 row weights (None stays None); ``positive``: at least
    one weight must be above 0 (a fit or a mean over weighted queries)."""
    if w is None:
        return None
    raw = np.asarray(w)
    if raw.dtype.kind in "USa" or raw.dtype.kind == "O" and first_text(raw) is not None:
        raise TypeError(f"{name} must be numeric, got text (dtype {raw.dtype}).")
    w = raw.astype(np.float64, copy=False)
    if w.ndim == 2 and 1 in w.shape:
        w = w.ravel()
    if w.ndim != 1:
        # Flattening any shape would read an (n/2, 2) array as n row weights.
        raise ValueError(f"{name} must be one-dimensional, one weight per row, got shape {w.shape}.")
    if w.shape[0] != n:
        raise ValueError(f"{name} has {w.shape[0]} entries but there are {n} rows.")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be finite and non-negative; row {row} has {w[row]}. Give that row a "
                         "weight of 0 to leave it out, or drop it.")
    if positive and n and not w.any():
        raise ValueError(f"{name} is zero for every row: at least one weight must be positive.")
    return w


def check_iteration_range(iteration_range, n_kept, n_run):
    """A ranker's ``iteration_range`` as ``(start, end)``, ``0 <= start < end <=
    n_kept`` (the iterations the model kept, of the ``n_run`` training ran), or a clear error."""
    try:
        start, end = iteration_range
    except (TypeError, ValueError):
        raise TypeError(
            f"iteration_range must be a (start, end) pair of ints, got {iteration_range!r}."
        ) from None
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in (start, end)):
        raise TypeError(f"iteration_range must be a (start, end) pair of ints, got {iteration_range!r}.")
    if not 0 <= start < end <= n_kept:
        kept = f"the model has {n_kept} iterations"
        if n_kept < n_run:
            kept += (f" (early stopping cut it back to best_iteration_ + 1 = {n_kept} of the "
                     f"{n_run} run)")
        hint = " (XGBoost reads (0, 0) as the whole model: pass None)" if (start, end) == (0, 0) else ""
        raise ValueError(
            f"iteration_range={tuple(iteration_range)!r} must satisfy 0 <= start < end <= {n_kept}: "
            f"{kept}{hint}."
        )
    return int(start), int(end)


#: What one entry of each per-eval-set argument of ``fit`` is, for the messages.
_PER_SET = {"eval_qid": "qid array", "eval_group": "group-sizes array",
            "eval_position": "positions array (None for a set of graded labels)",
            "eval_sample_weight": "weights array (None for an unweighted set)"}


def per_eval_set(eval_set, **lists):
    """``(eval_set, per_set)``: ``eval_set`` as a list (``[]`` for None) and
    each of ``lists`` (``eval_qid=``, ``eval_group=``, ``eval_position=`` of
    ``fit``) as one entry per set (None: all None), in the order given; or a
    clear error. One ``(X, y)`` pair instead of a list of them is refused."""
    if eval_set is None:
        for name, value in lists.items():
            if value is not None:
                raise ValueError(f"{name} was given without eval_set.")
        return [], {}
    if isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(eval_set[0], tuple):
        raise ValueError("eval_set must be a list of (X, y) pairs, e.g. eval_set=[(X_val, y_val)].")
    eval_set = list(eval_set)
    n_sets = len(eval_set)
    out = {}
    for name, value in lists.items():
        if name in ("eval_position", "eval_sample_weight") and value is not None \
                and (hasattr(value, "shape") or hasattr(value, "dtype")):
            example = "position_val" if name == "eval_position" else "weight_val"
            raise ValueError(f"{name} must be a list with one array per eval set, like eval_qid: "
                             f"{name}=[{example}].")
        value = [None] * n_sets if value is None else list(value)
        if len(value) != n_sets:
            raise ValueError(f"{name} has {len(value)} entries but eval_set has {n_sets}: pass one "
                             f"{_PER_SET[name]} per eval set.")
        out[name] = value
    return eval_set, out


@functools.lru_cache(maxsize=None)
def constructor_defaults(cls):
    """``{parameter: default}`` of ``cls.__init__`` (read once per class; do not modify)."""
    return {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()}


_NO_INITIAL_SCORES = "rankkit's fit always starts from scores of 0: it takes no initial scores"
_NO_CONTINUATION = "rankkit's fit trains a new model: it does not continue one"
_CATEGORY_DTYPE = ("give the categorical columns of a DataFrame pandas' 'category' dtype "
                   "(backend='auto' then trains on an engine that splits them natively: XGBoost, or LightGBM)")
_DASK_NUMERIC_ONLY = ("rankkit.dask trains on numeric columns only: encode the categories as numbers, or train "
                      "in memory, where columns of pandas' 'category' dtype are split natively")

#: ``fit`` keywords of XGBoost's, LightGBM's and CatBoost's rankers that rankkit's
#: ``fit`` does not take, and where rankkit takes what they say.
_OTHER_LIBRARIES_FIT_KEYWORDS = {
    "eval_at": "evaluation cut-offs are part of the ranker's eval_metric: eval_metric=['ndcg@5', 'ndcg@10'] "
               "(LightGBM's eval_at=[5, 10])",
    "eval_metric": "eval_metric is a parameter of the ranker, as in XGBoost 3: pass it to the constructor or "
                   "set_params(eval_metric='ndcg@10')",
    "callbacks": "callbacks is a parameter of the ranker, as in XGBoost 3: pass it to the constructor "
                 "(rankkit.callback.TrainingCallback objects)",
    "eval_names": "eval sets are named by their position in eval_set, 'validation_0', 'validation_1', ..., in "
                  "evals_result_ ('training' for an entry that is the training data itself)",
    "sample_weight_eval_set": "pass eval_sample_weight= (one entry per eval_set entry)",
    "group_id": "pass the query id of every row as qid= (or a qid column of a DataFrame)",
    **dict.fromkeys(("init_score", "base_margin", "baseline", "eval_init_score", "base_margin_eval_set"),
                    _NO_INITIAL_SCORES),
    **dict.fromkeys(("init_model", "xgb_model"), _NO_CONTINUATION),
    **dict.fromkeys(("categorical_feature", "cat_features"), _CATEGORY_DTYPE),
    "feature_name": "pass a DataFrame: its column names are the feature names",
    "feature_weights": "rankkit samples features uniformly (colsample_bytree): it takes no feature weights",
}

#: The same for :mod:`rankkit.dask`'s rankers, where two of them differ.
DASK_FIT_KEYWORDS = {
    **_OTHER_LIBRARIES_FIT_KEYWORDS,
    "callbacks": "rankkit.dask rankers run no callbacks, as their iterations run on the workers: use "
                 "early_stopping_rounds, verbose and evals_result_, or the in-memory ranker",
    **dict.fromkeys(("categorical_feature", "cat_features"), _DASK_NUMERIC_ONLY),
}


def explains_other_libraries_keywords(fit=None, *, hints=_OTHER_LIBRARIES_FIT_KEYWORDS):
    """``fit`` whose ``TypeError`` for a keyword of XGBoost's, LightGBM's or
    CatBoost's ``fit`` says where rankkit takes it (``hints``: keyword -> where);
    the signature is ``fit``'s."""
    if fit is None:
        return functools.partial(explains_other_libraries_keywords, hints=hints)
    # Keywords fit takes are never explained away, whatever the table says.
    hints = {name: hint for name, hint in hints.items() if name not in inspect.signature(fit).parameters}

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        for name in kwargs:
            if name in hints:
                raise TypeError(f"{type(self).__name__}.fit() got an unexpected keyword argument {name!r}: "
                                f"{hints[name]}.")
        return fit(self, *args, **kwargs)
    return wrapper
