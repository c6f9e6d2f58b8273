"""Public ranking metrics and the fast internal entry point.

:func:`evaluate_sorted` is what estimators, scorers and early stopping call
on data already validated and sorted by query; the public ``*_score``
functions validate, group rows by query (:mod:`rankkit._groups`) and wrap it.
"""

from __future__ import annotations

import inspect
import math
import numbers
import textwrap
import warnings

import numpy as np

from rankkit._groups import make_groups
from rankkit._metrics._common import (
    DECAY_RANGE,
    DEFAULT_DECAY,
    ERR_MAPPINGS,
    GAINS,
    METRIC_IDS,
    TIES,
    TREC,
    TREC_TIES,
    check_exp_gain,
    check_linear_gain,
    err_scale,
    parse_metric,
    uses_exp_gain,
)
from rankkit._metrics._kernels import evaluate_average_kernel, evaluate_kernel
from rankkit._validation import check_k, check_labels, check_same_length, check_scores, kernel_array


def _check_ties(ties):
    if not isinstance(ties, str) or (ties not in TIES and ties not in TREC_TIES):
        raise ValueError(f"ties must be one of {sorted([*TIES, *TREC_TIES])}, got {ties!r}.")
    # trec: the best mode on the document-id key (larger id first).
    return TIES["best"] if ties in TREC_TIES else TIES[ties]


def warn_no_query(who, *, weighted=False, stacklevel=2):
    """The warning of a mean over no query (every one excluded, or of weight 0
    when ``weighted``), before returning nan; ``stacklevel`` counts from the caller."""
    from sklearn.exceptions import UndefinedMetricWarning

    weight = " or has weight 0" if weighted else ""
    warnings.warn(f"{who}: every query was excluded (no relevant document and empty='exclude'){weight}; "
                  "returning nan.", UndefinedMetricWarning, stacklevel=stacklevel + 1)


def trec_eval_scores(y_score):
    """Scores as trec_eval holds them: in single precision (``TEXT_RESULTS.sim``
    is a C ``float``), back in float64. Two scores that differ only past
    single precision are a tie to trec_eval, which it breaks by ``docno``;
    ranking by the float64 scores instead gives other numbers. A score beyond
    the float range overflows to infinity in trec_eval: all such scores of a
    sign tie, above (below) float's largest value; they are kept as float64's
    largest value, which orders them so and keeps differences finite."""
    with np.errstate(over="ignore"):
        single = np.asarray(y_score, dtype=np.float64).astype(np.float32).astype(np.float64)
    limit = np.finfo(np.float64).max
    return np.clip(single, -limit, limit)


def doc_id_key(doc_ids, groups, *, name="doc_ids"):
    """Query-sorted float64 key ranking ``doc_ids`` as trec_eval's ``strcmp`` does.

    Ids are compared as strings (trec_eval reads ``docno`` as text, so
    ``"10" < "9"``); NumPy orders ``str`` by code point, which is the byte
    order of their UTF-8 encoding, i.e. ``strcmp``'s. A document id repeated
    within a query is an error, as it is in trec_eval.
    """
    ids = np.asarray(doc_ids)
    if ids.ndim != 1 or ids.shape[0] != groups.n_samples:
        raise ValueError(
            f"{name} must hold one document id per row: got shape {ids.shape} for {groups.n_samples} rows."
        )
    if ids.dtype.kind == "f" and not np.all(np.isfinite(ids)):
        raise ValueError(f"{name} contains NaN; every row needs a document id.")
    if ids.dtype.kind == "O" and any(v is None for v in ids):
        raise ValueError(f"{name} contains None; every row needs a document id.")
    text = ids.astype(str)
    uniques, key = np.unique(text, return_inverse=True)
    key = groups.sort(key.astype(np.int64))
    # Duplicates within a query: equal keys among a query's rows.
    pair = groups.sorted_codes() * np.int64(uniques.shape[0]) + key
    values, first, counts = np.unique(pair, return_index=True, return_counts=True)
    if values.shape[0] < pair.shape[0]:
        dup = int(np.flatnonzero(counts > 1)[0])
        row = int(first[dup])
        raise ValueError(
            f"{name}: document {str(uniques[key[row]])!r} appears {counts[dup]} times in one query "
            f"(query number {int(groups.sorted_codes()[row])} in order of appearance); a ranking "
            "lists each document once (trec_eval refuses duplicates too). Drop the duplicate rows."
        )
    return key.astype(np.float64)


def _check_gain(gain):
    if gain not in GAINS:
        raise ValueError(f"gain must be 'exp' (2^r - 1) or 'linear' (r), got {gain!r}.")
    return gain == "exp"


def _check_empty(empty):
    """``empty`` -> float value written for queries without relevant document."""
    if isinstance(empty, str):
        if empty == "exclude":
            return np.nan
        raise ValueError(f"empty must be 1.0, 0.0 or 'exclude', got {empty!r}.")
    if isinstance(empty, bool) or not isinstance(empty, numbers.Real) or empty not in (0.0, 1.0):
        raise ValueError(f"empty must be 1.0, 0.0 or 'exclude', got {empty!r}.")
    return float(empty)


def _check_threshold(relevance_threshold):
    if isinstance(relevance_threshold, bool) or not isinstance(relevance_threshold, numbers.Real):
        raise TypeError(f"relevance_threshold must be a number, got {relevance_threshold!r}.")
    if not np.isfinite(relevance_threshold):
        raise ValueError(f"relevance_threshold must be finite, got {relevance_threshold!r}.")
    return float(relevance_threshold)


def _check_decay(decay):
    if not DECAY_RANGE.is_satisfied_by(decay):
        raise ValueError(f"decay must be {DECAY_RANGE}, got {decay!r}.")
    return float(decay)


def _err_scale(y, err_mapping, err_max_label):
    """``err_scale`` for the kernels (:func:`~rankkit._metrics._common.err_scale`)."""
    if err_mapping not in ERR_MAPPINGS:
        raise ValueError(
            f"err_mapping must be None (labels are probabilities in [0, 1]) or 'chapelle' "
            f"((2^r - 1) / 2^r_max for graded labels), got {err_mapping!r}."
        )
    if err_max_label is not None:
        if err_mapping is None:
            raise ValueError("err_max_label is only used with err_mapping='chapelle'; pass both or neither.")
        if isinstance(err_max_label, bool) or not isinstance(err_max_label, numbers.Real):
            raise TypeError(f"err_max_label must be a number or None, got {err_max_label!r}.")
        if not (math.isfinite(err_max_label) and err_max_label >= 0):
            raise ValueError(f"err_max_label must be a finite label >= 0 (the top of the label scale) or None, "
                             f"got {err_max_label!r}.")
    return err_scale(y, err_mapping, err_max_label, name="y_true")


#: What dividing the labels does to the metrics that sum them (linear gains, ExpDCG).
_SCALING = {"ndcg": "NDCG is unchanged", "dcg": "DCG is divided by it", "expdcg": "ExpDCG is divided by it"}


def evaluate_sorted(
    metric,
    y,
    score,
    group_ptr,
    *,
    k=None,
    ties="worst",
    gain="exp",
    empty=1.0,
    relevance_threshold=0.0,
    err_mapping=None,
    err_max_label=None,
    decay=DEFAULT_DECAY,
    doc_key=None,
):
    """Per-query metric values on query-sorted, validated arrays.

    Parameters
    ----------
    metric : str
        A name in ``rankkit._metrics._common.METRIC_IDS`` (``"ndcg@10"`` also
        works and sets ``k``).
    y, score : ndarray of float64
        Labels and scores, rows of a query contiguous.
    group_ptr : ndarray of int64
        Query offsets, length ``n_queries + 1``.
    k, ties, gain, empty, relevance_threshold, err_mapping, err_max_label, decay
        As in the public functions (e.g. :func:`ndcg_score`). Parameters that
        the metric does not use are ignored.
    doc_key : ndarray of float64 or None
        With ``ties="trec"`` or ``"trec_double"``: the query-sorted rank of
        every document id (:func:`doc_id_key`); required then, unused otherwise.

    Returns
    -------
    ndarray of float64, shape (n_queries,)
        One value per query, ``nan`` for queries excluded by
        ``empty="exclude"``.
    """
    name, k = parse_metric(metric, k)
    k = check_k(k)
    metric_id = METRIC_IDS[name]
    tie_id = _check_ties(ties)
    exp_gain = _check_gain(gain)
    empty_value = _check_empty(empty)
    threshold = _check_threshold(relevance_threshold)
    decay = _check_decay(decay)
    y = kernel_array(y, np.float64)
    score = kernel_array(score, np.float64)
    group_ptr = kernel_array(group_ptr, np.int64)
    if y.shape != score.shape or y.ndim != 1:
        raise ValueError(f"y and score must be 1-D of equal length, got {y.shape} and {score.shape}.")
    if group_ptr.ndim != 1 or group_ptr.shape[0] < 1 or group_ptr[0] != 0 or group_ptr[-1] != y.shape[0]:
        raise ValueError("group_ptr must start at 0 and end at the number of rows.")
    n = y.shape[0]
    if ties in TREC_TIES:
        if doc_key is None:
            raise ValueError(f"ties={ties!r} breaks ties by document id: pass doc_ids= (one id per row).")
        tie_key = kernel_array(doc_key, np.float64)
    else:
        tie_key = y
    cascade = metric_id in (METRIC_IDS["err"], METRIC_IDS["pfound"])
    err_scale = _err_scale(y, err_mapping, err_max_label) if cascade else 0.0
    if uses_exp_gain(metric_id, exp_gain):
        check_exp_gain(y, group_ptr=group_ptr, name="y_true")
    elif name in _SCALING:
        # Linear gains and ExpDCG's values are the labels: finite one by one, they can still sum to inf.
        check_linear_gain(y, group_ptr, name="y_true", fix=f"divide the labels by a constant ({_SCALING[name]})")
    out = np.empty(group_ptr.shape[0] - 1, dtype=np.float64)
    idx = np.empty(n, dtype=np.int64)
    buf = np.empty(n, dtype=np.int64)
    scratch = np.empty(n, dtype=np.float64)
    if tie_id == TIES["average"]:
        evaluate_average_kernel(metric_id, y, score, group_ptr, 0 if k is None else k, exp_gain, empty_value,
                                threshold, err_scale, decay, idx, buf, scratch, out)
    else:
        evaluate_kernel(metric_id, y, score, group_ptr, 0 if k is None else k, tie_id, tie_key, exp_gain,
                        empty_value, threshold, err_scale, decay, idx, buf, scratch, out)
    return out


def _score(name, y_true, y_score, qid, k, ties, per_query, doc_ids=None, **params):
    """Validate, group by query, evaluate, then average or return per query."""
    if not isinstance(per_query, (bool, np.bool_)):
        raise TypeError(f"per_query must be True or False, got {per_query!r}.")
    if doc_ids is not None and ties not in TREC_TIES:
        raise ValueError(
            f"doc_ids is used only with ties='trec' or 'trec_double' (ties broken by document id), got "
            f"ties={ties!r}; pass ties='trec' or drop doc_ids."
        )
    if qid is None:
        raise ValueError(
            "qid is required: pass one query id per row (qid=...). Ranking metrics are "
            "computed per query; to treat all rows as one query pass qid=np.zeros(n)."
        )
    y = check_labels(y_true, name="y_true")
    s = check_scores(y_score, name="y_score")
    check_same_length(y_true=y, y_score=s)
    groups = make_groups(qid, y.shape[0])
    doc_key = None
    if ties in TREC_TIES:
        if doc_ids is None:
            raise ValueError(
                f"ties={ties!r} breaks ties by document id, as trec_eval does: pass doc_ids= "
                "(one id per row), or choose another tie policy."
            )
        doc_key = doc_id_key(doc_ids, groups)
        if ties == TREC:
            s = trec_eval_scores(s)
    values = evaluate_sorted(
        name, groups.sort(y), groups.sort(s), groups.group_ptr, k=k, ties=ties, doc_key=doc_key, **params
    )
    if per_query:
        return values
    if np.all(np.isnan(values)):
        warn_no_query(f"{name}_score", stacklevel=3)
        return float("nan")
    with np.errstate(over="ignore"):
        mean = float(np.nanmean(values))
    if np.isinf(mean):
        # Finite per-query values near float64's max (DCG, ExpDCG) can sum to
        # inf, their mean cannot: average them scaled down by the largest.
        top = float(np.nanmax(np.abs(values)))
        mean = top * float(np.nanmean(values / top))
    return mean


# The text of every metric parameter, once: each function's docstring lists
# those of its own signature (marker "{parameters}"; the formulas contain braces).
_PARAMETER_DOCS = {
    "y_true": """y_true : array-like of shape (n_samples,)
    Relevance labels (finite, >= 0).""",
    "y_score": """y_score : array-like of shape (n_samples,)
    Predicted scores (finite); larger means ranked higher.""",
    "qid": """qid : array-like of shape (n_samples,)
    Query id of every row (required). Rows need not be sorted by query.""",
    "k": """k : int or None, default=None
    Cut-off: only the top ``k`` positions count; ``None`` is the whole list.""",
    "ties": """ties : {"worst", "average", "best", "input", "trec", "trec_double"}, default="worst"
    Order of documents with equal scores: less relevant first (``worst``,
    as CatBoost's metrics), the exact expectation over uniformly random
    orders of every tied block (``average``), more relevant first
    (``best``), input row order (``input``), or document id descending as
    compared by trec_eval, so that the values equal trec_eval's (needs
    ``doc_ids``): ``trec`` compares the scores in single precision, as
    trec_eval up to 9.0.8 reads them (and pytrec_eval and ir_measures, which
    bundle it), ``trec_double`` in double precision, as trec_eval 10 does.""",
    "per_query": """per_query : bool, default=False
    Return one value per query (in order of first appearance of the
    query id) instead of the mean.""",
    "gain": """gain : {"exp", "linear"}, default="exp"
    ``G(r) = 2^r - 1`` (Burges et al., 2005) or ``G(r) = r`` (scikit-learn,
    CatBoost's ``type=Base``).""",
    "empty": """empty : {1.0, 0.0, "exclude"}, default=1.0
    Value of a query with no relevant document (a 0/0 metric): 1.0 as
    XGBoost and LightGBM, and CatBoost's NDCG; 0.0 as scikit-learn, and
    CatBoost's MRR, MAP and PrecisionAt; ``"exclude"``
    drops it from the mean (``nan`` with ``per_query=True``; if every
    query is excluded the mean is ``nan`` with a warning).""",
    "relevance_threshold": """relevance_threshold : float, default=0.0
    A document is relevant iff its label exceeds this (0.0 is trec_eval's
    ``rel >= 1`` for integer labels).""",
    "doc_ids": """doc_ids : array-like of shape (n_samples,) or None, default=None
    Document id of every row, for ``ties="trec"`` or ``"trec_double"``
    only. Compared as text, as trec_eval compares ``docno``, and tied scores
    ranked by id descending (``"9"`` before ``"10"``, since ``"10" < "9"`` as
    text); an id repeated within a query is an error.""",
    "err_mapping": """err_mapping : {None, "chapelle"}, default=None
    ``None``: labels are relevance probabilities and must lie in [0, 1].
    ``"chapelle"``: graded labels map to ``R = (2^r - 1) / 2^{r_max}``.""",
    "err_max_label": """err_max_label : float or None, default=None
    ``r_max`` of the Chapelle mapping; ``None`` uses ``max(y_true)``.""",
    "decay": f"""decay : float in (0, 1], default={DEFAULT_DECAY}
    Per-position decay ``b`` (PFound: the probability of looking on
    after a non-stopping document, CatBoost's ``decay``).""",
}

_RETURNS_DOC = """Returns
-------
float or ndarray of float64
    Mean over queries, or the per-query values if ``per_query``."""


def _document(func):
    """Splice the text of ``func``'s parameters and its return value into its docstring."""
    names = inspect.signature(func).parameters
    text = "\n".join(["Parameters", "----------", *(_PARAMETER_DOCS[p] for p in names), "", _RETURNS_DOC])
    func.__doc__ = func.__doc__.replace("{parameters}", textwrap.indent(text, "    ").lstrip())
    return func


@_document
def ndcg_score(
    y_true, y_score, *, qid, k=None, ties="worst", per_query=False, gain="exp", empty=1.0, doc_ids=None
):
    """Normalised discounted cumulative gain, NDCG@k (Järvelin & Kekäläinen, 2002).

    ``NDCG@k = DCG@k / IDCG@k`` with
    ``DCG@k = sum_{i <= k} G(r_{s_i}) / log2(i + 1)`` over the ranked list
    ``s`` and ``IDCG@k`` the DCG of the labels sorted in decreasing order.

    {parameters}

    Examples
    --------
    >>> from rankkit.metrics import ndcg_score
    >>> ndcg_score([2, 0, 1], [0.3, 0.2, 0.1], qid=[1, 1, 1])  # doctest: +ELLIPSIS
    0.96...
    """
    return _score("ndcg", y_true, y_score, qid, k, ties, per_query, doc_ids, gain=gain, empty=empty)


@_document
def dcg_score(y_true, y_score, *, qid, k=None, ties="worst", per_query=False, gain="exp", doc_ids=None):
    """Discounted cumulative gain, DCG@k (Järvelin & Kekäläinen, 2002).

    ``DCG@k = sum_{i <= k} G(r_{s_i}) / log2(i + 1)``; not normalised.

    {parameters}

    Examples
    --------
    >>> from rankkit.metrics import dcg_score
    >>> dcg_score([1, 0], [0.1, 0.2], qid=[0, 0], gain="linear")  # doctest: +ELLIPSIS
    0.63...
    """
    return _score("dcg", y_true, y_score, qid, k, ties, per_query, doc_ids, gain=gain)


@_document
def err_score(
    y_true, y_score, *, qid, k=None, ties="worst", per_query=False, err_mapping=None, err_max_label=None,
    doc_ids=None,
):
    """Expected reciprocal rank, ERR@k (Chapelle et al., CIKM 2009).

    ``ERR@k = sum_{i <= k} (R_{s_i} / i) prod_{j < i} (1 - R_{s_j})``, the
    expected reciprocal of the position where a cascade user stops. Not
    normalised, like CatBoost's ``ERR``: a query whose labels are all 0 scores
    a genuine 0, so there is no ``empty`` parameter.

    {parameters}

    Notes
    -----
    With ``ties="average"`` the expectation is exact: the factor from
    earlier blocks does not depend on their order, and inside a tied block of
    ``t`` documents the expectation needs the elementary symmetric means of
    the other documents' ``1 - R``, which costs ``O(L t^2)`` for ``L``
    distinct labels in the block.

    Examples
    --------
    >>> from rankkit.metrics import err_score
    >>> err_score([0.5, 1.0], [2.0, 1.0], qid=[0, 0])
    0.75
    """
    return _score(
        "err", y_true, y_score, qid, k, ties, per_query, doc_ids, err_mapping=err_mapping,
        err_max_label=err_max_label,
    )


@_document
def mrr_score(
    y_true, y_score, *, qid, k=None, ties="worst", per_query=False, empty=1.0, relevance_threshold=0.0,
    doc_ids=None,
):
    """Mean reciprocal rank, MRR@k (Voorhees, TREC-8 QA track, 1999).

    ``RR@k = 1 / i`` for the position ``i <= k`` of the first relevant
    document (label > ``relevance_threshold``), 0 if none is in the top ``k``.

    {parameters}

    Examples
    --------
    >>> from rankkit.metrics import mrr_score
    >>> mrr_score([0, 1, 0], [3.0, 2.0, 1.0], qid=[0, 0, 0])
    0.5
    """
    return _score(
        "mrr", y_true, y_score, qid, k, ties, per_query, doc_ids, empty=empty,
        relevance_threshold=relevance_threshold,
    )


@_document
def map_score(
    y_true, y_score, *, qid, k=None, ties="worst", per_query=False, empty=1.0, relevance_threshold=0.0,
    doc_ids=None,
):
    """Mean average precision, MAP@k (Baeza-Yates & Ribeiro-Neto, 1999).

    ``AP@k = sum_{i <= k, s_i relevant} P(i) / min(R, k)`` with ``P(i)`` the
    precision of the top ``i`` and ``R`` the number of relevant documents
    (label > ``relevance_threshold``) of the query. The denominator
    ``min(R, k)`` makes a perfect top-``k`` score 1; it is what CatBoost's
    ``MAP:top=k`` uses.

    {parameters}

    Examples
    --------
    >>> from rankkit.metrics import map_score
    >>> map_score([1, 0, 1], [3.0, 2.0, 1.0], qid=[0, 0, 0])  # doctest: +ELLIPSIS
    0.83...
    """
    return _score(
        "map", y_true, y_score, qid, k, ties, per_query, doc_ids, empty=empty,
        relevance_threshold=relevance_threshold,
    )


@_document
def expdcg_score(
    y_true, y_score, *, qid, k=None, ties="worst", per_query=False, decay=DEFAULT_DECAY, doc_ids=None
):
    """Exponentially discounted gain, the metric YetiRank optimises (Gulin et al., 2011).

    ``ExpDCG@k = sum_{i <= k} decay^{i - 1} r_{s_i}``; not normalised.

    {parameters}

    Examples
    --------
    >>> from rankkit.metrics import expdcg_score
    >>> expdcg_score([1, 2], [2.0, 1.0], qid=[0, 0], decay=0.5)
    2.0
    """
    return _score("expdcg", y_true, y_score, qid, k, ties, per_query, doc_ids, decay=decay)


@_document
def precision_score(
    y_true, y_score, *, qid, k=None, ties="worst", per_query=False, empty=1.0, relevance_threshold=0.0,
    doc_ids=None,
):
    """Precision at k, P@k (trec_eval's ``P_k``).

    ``P@k = |{i <= k : s_i relevant}| / k``: relevant documents (label >
    ``relevance_threshold``) among the top ``k``, divided by ``k`` even when
    the query has fewer than ``k`` documents (trec_eval's convention: the
    missing positions count as non-relevant). Without ``k``, the fraction of
    the query's documents that are relevant (trec_eval's ``set_P``). A query
    without relevant document gets ``empty`` like the other binary metrics
    (trec_eval gives it 0: pass ``empty=0.0``).

    {parameters}

    Examples
    --------
    >>> from rankkit.metrics import precision_score
    >>> precision_score([1, 0, 1], [3.0, 2.0, 1.0], qid=[0, 0, 0], k=2)
    0.5
    >>> precision_score([1, 0, 1], [3.0, 2.0, 1.0], qid=[0, 0, 0], k=5)  # divides by k
    0.4
    """
    return _score(
        "precision", y_true, y_score, qid, k, ties, per_query, doc_ids, empty=empty,
        relevance_threshold=relevance_threshold,
    )


@_document
def recall_score(
    y_true, y_score, *, qid, k=None, ties="worst", per_query=False, empty=1.0, relevance_threshold=0.0,
    doc_ids=None,
):
    """Recall at k, R@k (trec_eval's ``recall_k``).

    ``R@k = |{i <= k : s_i relevant}| / R`` with ``R`` the number of relevant
    documents (label > ``relevance_threshold``) of the query; 0/0 without
    relevant document, which gets ``empty``.

    {parameters}

    Examples
    --------
    >>> from rankkit.metrics import recall_score
    >>> recall_score([1, 0, 1], [3.0, 2.0, 1.0], qid=[0, 0, 0], k=2)
    0.5
    """
    return _score(
        "recall", y_true, y_score, qid, k, ties, per_query, doc_ids, empty=empty,
        relevance_threshold=relevance_threshold,
    )


@_document
def rprecision_score(
    y_true, y_score, *, qid, k=None, ties="worst", per_query=False, empty=1.0, relevance_threshold=0.0,
    doc_ids=None,
):
    """R-precision (trec_eval's ``Rprec``): precision at rank ``R``.

    ``Rprec = |{i <= R : s_i relevant}| / R`` with ``R`` the number of
    relevant documents (label > ``relevance_threshold``) of the query; it is
    also the recall at ``R``. A cut-off ``k`` evaluates the precision at
    ``min(R, k)``, so that a perfect ranking still scores 1 (the
    denominator convention of :func:`map_score`); trec_eval has no cut-off
    version. 0/0 without relevant document, which gets ``empty``.

    {parameters}

    Examples
    --------
    >>> from rankkit.metrics import rprecision_score
    >>> rprecision_score([1, 0, 1], [3.0, 2.0, 1.0], qid=[0, 0, 0])
    0.5
    """
    return _score(
        "rprecision", y_true, y_score, qid, k, ties, per_query, doc_ids, empty=empty,
        relevance_threshold=relevance_threshold,
    )


@_document
def pfound_score(
    y_true, y_score, *, qid, k=None, ties="worst", per_query=False, decay=DEFAULT_DECAY, err_mapping=None,
    err_max_label=None, doc_ids=None,
):
    """PFound@k, Yandex's cascade metric (Segalovich, 2010; CatBoost's ``PFound``).

    ``PFound@k = sum_{i <= k} PLook_i R_{s_i}`` with ``PLook_1 = 1`` and
    ``PLook_i = PLook_{i-1} (1 - R_{s_{i-1}}) decay``: the probability that a
    user who stops at a relevant document with probability ``R`` and leaves
    with probability ``1 - decay`` after each document finds what they
    sought. ``R`` is the label (a probability in [0, 1]) or, with
    ``err_mapping="chapelle"``, ``(2^r - 1) / 2^{r_max}`` as for ERR. Not
    normalised, like CatBoost's: a query whose labels are all 0 scores a
    genuine 0, so there is no ``empty`` parameter.

    {parameters}

    Examples
    --------
    >>> from rankkit.metrics import pfound_score
    >>> pfound_score([0.5, 1.0], [2.0, 1.0], qid=[0, 0], decay=0.5)
    0.75
    """
    return _score(
        "pfound", y_true, y_score, qid, k, ties, per_query, doc_ids, decay=decay, err_mapping=err_mapping,
        err_max_label=err_max_label,
    )


METRICS = {
    "ndcg": ndcg_score,
    "dcg": dcg_score,
    "err": err_score,
    "mrr": mrr_score,
    "map": map_score,
    "expdcg": expdcg_score,
    "precision": precision_score,
    "recall": recall_score,
    "rprecision": rprecision_score,
    "pfound": pfound_score,
}


def metric_function(name):
    """Public metric function of ``name`` (``"ndcg"``; ``"ndcg@10"`` gives ``ndcg_score``)."""
    base, _ = parse_metric(name)
    return METRICS[base]
