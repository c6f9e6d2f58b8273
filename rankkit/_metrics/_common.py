"""One definition of every metric quantity.

The metric kernels (:mod:`rankkit._metrics._kernels`) and the objectives
(LambdaMART, YetiRank/YetiLoss, StochasticRank, the SGLB noise keying) all
take their gains, discounts, ideal DCG, per-document values, ERR scale and
the order of a query from here, so a metric and the objective that optimises
it cannot drift apart:

* :func:`gain`, :func:`discount`, :func:`discount_table` -- DCG's
  ``G(r) = 2^r - 1`` (or ``r``) and ``D(p) = 1 / log2(p + 2)``;
* :func:`doc_value` / :func:`doc_values` -- what a document contributes to
  each metric: its gain (DCG, NDCG), its label (ExpDCG), its stop
  probability (ERR) or its relevance indicator (MRR, MAP);
* :func:`ideal_dcg` and :func:`inverse_normaliser` -- IDCG@k and the
  per-query factors ``1 / IDCG@k`` (NDCG) and ``1 / min(R, k)`` (MAP);
* :func:`err_scale` -- Chapelle's ``2^{r_max}`` (or :data:`NO_ERR_MAPPING`
  for labels that are probabilities already), with its label checks;
* :func:`stable_sort`, :func:`top_k`, :func:`worst_order` -- the one stable
  merge sort of a query by score with a tie policy (the ``worst`` order:
  less relevant first, then input order).

Positions are 0-based: position ``p`` is rank ``p + 1``. Kernels here take
flat arrays and a query's slice ``lo:hi``; scratch arrays are indexed like
the data, so a query only touches its own slice (no allocation per query).
"""

import difflib
import math
from numbers import Integral, Real

import numpy as np
from numba import njit
from sklearn.utils._param_validation import StrOptions

from rankkit._validation import Interval, check_k

# Metric ids passed to kernels (plain ints: no Python objects cross kernels).
NDCG, DCG, ERR, MRR, MAP, EXPDCG = 0, 1, 2, 3, 4, 5
PRECISION, RECALL, RPRECISION, PFOUND = 6, 7, 8, 9
METRIC_IDS = {
    "ndcg": NDCG, "dcg": DCG, "err": ERR, "mrr": MRR, "map": MAP, "expdcg": EXPDCG,
    "precision": PRECISION, "recall": RECALL, "rprecision": RPRECISION, "pfound": PFOUND,
}
#: Metrics that the metric objectives (LambdaMART, YetiLoss) can optimise:
#: those with an O(1) swap difference in :mod:`rankkit._objectives._swap`.
#: The others are evaluation metrics only.
SWAP_METRICS = ("ndcg", "dcg", "err", "mrr", "map", "expdcg")
#: Metrics whose value is 0/0 for a query without relevant document, and so
#: take the ``empty`` rule (ERR, PFound, DCG and ExpDCG are 0 there, genuinely).
#: Precision is not 0/0, but it follows the rule too so that one ``empty``
#: setting gives one set of queries for every binary metric of a table.
EMPTY_RULE_METRICS = ("ndcg", "mrr", "map", "precision", "recall", "rprecision")

#: 0 as an int64 for the kernels to pass where a function takes an index: a
#: literal 0 makes numba compile the callee once more, for that literal.
ZERO = np.int64(0)

# Tie policies (sort modes); IDEAL is the extra mode "label descending", the
# ideal order of NDCG.
WORST, AVERAGE, BEST, INPUT, IDEAL = 0, 1, 2, 3, 4
TIES = {"worst": WORST, "average": AVERAGE, "best": BEST, "input": INPUT}
#: ``ties="trec"``: trec_eval's order, score descending then document id
#: descending (``strcmp``). The kernels run it as the ``best`` mode on a tie
#: key that ranks the document ids, so it needs no sort mode of its own.
#: trec_eval up to 9.0.8 (and pytrec_eval, ir_measures, which bundle it)
#: holds the scores in single precision, so ``"trec"`` compares them so;
#: trec_eval 10 holds them in double precision: ``"trec_double"``.
TREC = "trec"
TREC_DOUBLE = "trec_double"
TREC_TIES = (TREC, TREC_DOUBLE)

#: ``err_scale`` of labels that are stop probabilities already (no mapping).
NO_ERR_MAPPING = 0.0

# Metric parameters: the value sets and ranges every metric and objective use.
GAINS = ("exp", "linear")
ERR_MAPPINGS = (None, "chapelle")
#: ExpDCG's per-position decay ``b`` (YetiRank's position decay too).
DECAY_RANGE = Interval(Real, 0, 1, closed="right")
DEFAULT_DECAY = 0.85
#: Constraints of the metric parameters that objectives share (scikit-learn
#: parameter validation; cross-parameter checks live with the objectives).
METRIC_PARAMETER_CONSTRAINTS = {
    "metric": [str],
    "k": [Interval(Integral, 1, None, closed="left"), None, StrOptions({"auto"})],  # "auto": MetricObjective._metric
    "gain": [StrOptions(set(GAINS))],
    "relevance_threshold": [Interval(Real, -np.inf, np.inf, closed="neither")],
    "err_mapping": [StrOptions({"chapelle"}), None],
    "err_max_label": [Interval(Real, 0, np.inf, closed="left"), None],
}

# Insertion-sort run length of the merge sort: short runs are cheaper to
# insertion-sort than to merge, and most queries fit in one or a few runs.
_RUN = 16
#: Up to this cut-off the top of a list (and the ideal DCG) is found by
#: bounded insertion instead of a full sort.
SMALL_K = 32


# -- gains, discounts, per-document values -------------------------------------
_LN2 = math.log(2.0)


@njit(cache=True, inline="always")
def gain(r, exp_gain):
    """DCG gain: ``2^r - 1`` (exp) or ``r`` (linear)."""
    if exp_gain:
        if r < 1.0:
            # pow(2, r) - 1 cancels below 1: 2^1e-17 rounds to 1.0, so a tiny
            # positive label would get the gain 0 of a non-relevant document.
            # expm1 keeps its digits. From 1 on pow stays: integer grades keep
            # exactly 2^r - 1, the value trec_eval and the other libraries compute.
            return math.expm1(r * _LN2)
        return math.pow(2.0, r) - 1.0
    return r


#: float64's largest finite value: exp gains ``2^r - 1`` (and their sums over
#: a query) must stay below it.
_FLOAT_MAX = float(np.finfo(np.float64).max)


def uses_exp_gain(metric_id, exp_gain):
    """Whether ``metric_id`` sums exp gains ``2^r - 1`` (DCG and NDCG with ``gain="exp"``)."""
    return bool(exp_gain) and metric_id in (NDCG, DCG)


def check_exp_gain(y, n_summed=None, *, group_ptr=None, name="y", fix="pass gain='linear' (G(r) = r)"):
    """Refuse labels whose exp gains ``2^r - 1`` overflow float64.

    ``2^r`` is infinite from ``r = 1024`` on, and a query's sum of gains can
    overflow below that; either makes DCG infinite and NDCG ``inf / inf =
    nan``, which would silently drop the query from a mean. ``2^{r_max}
    n_summed`` bounds the sum of any query of at most ``n_summed`` documents
    (default: every row; the objectives check labels before queries are
    known). With ``group_ptr`` (the metrics: queries known) a labelling
    beyond that bound is refused only if some query's own sum of gains
    overflows; a finite sum bounds the query's DCG and ideal DCG (discounts
    are at most 1). ``fix`` ends the message.
    """
    y = np.asarray(y, dtype=np.float64)
    if y.size == 0:
        return
    r_max = float(y.max())
    if group_ptr is not None:
        n_summed = int(np.diff(group_ptr).max())
    n = int(n_summed) if n_summed is not None else y.shape[0]
    with np.errstate(over="ignore"):
        if np.isfinite(np.exp2(r_max) * max(n, 1)):  # bounds every sum of n gains: the common, cheap case
            return
    if group_ptr is not None:
        # The bound mixes the largest label of one query with the size of
        # another: sum each query's own gains before refusing.
        with np.errstate(over="ignore"):
            worst = _overflowing_query(np.exp2(y) - 1.0, y, group_ptr)
        if worst is None:
            return
        r_max, n = worst
        if r_max < 1024.0:
            raise ValueError(
                f"{name} has the label {r_max:g} in a query of {n} documents whose exp gains 2^r - 1 sum "
                f"beyond float64's range ({_FLOAT_MAX:.3g}); {fix}."
            )
    elif r_max < 1024.0:
        raise ValueError(
            f"{name} has the label {r_max:g}: the exp gains 2^r - 1 of up to {n} documents can sum beyond "
            f"float64's range (2^{r_max:g} * {n} > {_FLOAT_MAX:.3g}); {fix}."
        )
    raise ValueError(
        f"{name} has the label {r_max:g}, whose exp gain 2^r - 1 overflows float64 (exp gains need "
        f"labels below 1024); {fix}."
    )


def check_linear_gain(y, group_ptr, *, name="y", fix="divide the labels by a constant"):
    """Refuse queries whose labels sum beyond float64's range.

    The labels themselves are the linear gains of DCG and NDCG and the
    values ExpDCG discounts: a query whose labels sum to ``inf`` gets an
    infinite DCG or ExpDCG and NDCG ``inf / inf = nan``, which a mean would
    silently drop. A finite sum bounds every such value of the query (its
    weights are at most 1). ``fix`` ends the message.
    """
    y = np.asarray(y, dtype=np.float64)
    if y.size == 0:
        return
    worst = _overflowing_query(y, y, group_ptr)
    if worst is not None:
        r_max, n = worst
        raise ValueError(
            f"{name} has the label {r_max:g} in a query of {n} documents whose labels sum beyond float64's "
            f"range ({_FLOAT_MAX:.3g}), so its metric overflows; {fix}."
        )


def _overflowing_query(values, y, group_ptr):
    """``(largest label, number of documents)`` of a query whose ``values``
    sum to a non-finite number (the one with the largest label if several),
    or None. Vectorised: ``O(n)``, no loop over queries."""
    group_ptr = np.asarray(group_ptr, dtype=np.int64)
    sizes = np.diff(group_ptr)
    # reduceat reads an empty segment as one element: leave empty queries out.
    filled = sizes > 0
    starts, sizes = group_ptr[:-1][filled], sizes[filled]
    with np.errstate(over="ignore"):
        sums = np.add.reduceat(values, starts)
    bad = np.flatnonzero(~np.isfinite(sums))
    if bad.size == 0:
        return None
    tops = np.maximum.reduceat(y, starts)[bad]
    q = int(np.argmax(tops))
    return float(tops[q]), int(sizes[bad[q]])


@njit(cache=True, inline="always")
def discount(p):
    """DCG discount of 0-based position ``p``: ``1 / log2(p + 2)``."""
    return 1.0 / math.log2(p + 2.0)


@njit(cache=True)
def discount_table(out):
    """``out[p] = discount(p)``: a table shared by every query of a call (the
    log2 is computed once per position, not once per position, query and round)."""
    for p in range(out.shape[0]):
        out[p] = discount(p)


def discount_table_for(group_ptr):
    """The discount table of a call: ``discount(p)`` for every position of the longest query."""
    sizes = np.diff(group_ptr)
    out = np.empty(int(sizes.max()) if sizes.size else 0)
    discount_table(out)
    return out


@njit(cache=True, inline="always")
def err_probability(r, err_scale):
    """ERR stop probability. ``err_scale <= 0`` (:data:`NO_ERR_MAPPING`):
    labels are probabilities already; otherwise Chapelle's mapping
    ``(2^r - 1) / err_scale`` with ``err_scale = 2^{r_max}``."""
    if err_scale <= 0.0:
        return r
    return gain(r, True) / err_scale


@njit(cache=True, inline="always")
def is_relevant(r, threshold):
    """MRR/MAP binarisation: relevant iff the label exceeds the threshold."""
    return r > threshold


@njit(cache=True, inline="always")
def doc_value(metric, r, exp_gain, threshold, err_scale):
    """What a document of label ``r`` contributes to ``metric``: ``G(r)``
    (DCG, NDCG), its stop probability (ERR, PFound), ``1[r > threshold]``
    (MRR, MAP, precision, recall, R-precision) or ``r`` itself (ExpDCG)."""
    if metric == NDCG or metric == DCG:
        return gain(r, exp_gain)
    if metric == ERR:
        return err_probability(r, err_scale)
    if metric == MRR or metric == MAP or metric == PRECISION or metric == RECALL or metric == RPRECISION:
        return 1.0 if is_relevant(r, threshold) else 0.0
    if metric == PFOUND:
        return err_probability(r, err_scale)
    return r


@njit(cache=True)
def doc_values(metric, y, lo, hi, exp_gain, threshold, err_scale, out):
    """:func:`doc_value` of every row ``lo..hi-1`` into ``out[lo:hi]`` (row order)."""
    for i in range(lo, hi):
        out[i] = doc_value(metric, y[i], exp_gain, threshold, err_scale)


# -- the sort ----------------------------------------------------------------
@njit(cache=True, inline="always")
def before(i, j, score, y, mode):
    """Whether document ``i`` comes strictly before document ``j``: score
    descending, ties by the policy ``mode`` (``IDEAL``: label descending)."""
    if mode == IDEAL:
        return y[i] > y[j]
    si = score[i]
    sj = score[j]
    if si != sj:
        return si > sj
    if mode == WORST:
        return y[i] < y[j]
    if mode == BEST:
        return y[i] > y[j]
    return False


@njit(cache=True)
def stable_sort(idx, buf, lo, hi, score, y, mode):
    """Stable sort of ``idx[lo:hi]`` (document indices) by :func:`before`.

    Insertion sort on runs of 16 documents, then bottom-up merges alternating
    between ``idx`` and ``buf``: ``O(n log n)``, deterministic, and only the
    query's own slice of both arrays is touched.
    """
    n = hi - lo
    for s in range(lo, hi, _RUN):
        e = min(s + _RUN, hi)
        for i in range(s + 1, e):
            v = idx[i]
            j = i - 1
            while j >= s and before(v, idx[j], score, y, mode):
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = v
    width = _RUN
    in_idx = True
    while width < n:
        if in_idx:
            src = idx
            dst = buf
        else:
            src = buf
            dst = idx
        for s in range(lo, hi, 2 * width):
            mid = min(s + width, hi)
            e = min(s + 2 * width, hi)
            i = s
            j = mid
            o = s
            while i < mid and j < e:
                # Take from the right run only when strictly before: stability.
                if before(src[j], src[i], score, y, mode):
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < e:
                dst[o] = src[j]
                j += 1
                o += 1
        in_idx = not in_idx
        width *= 2
    if not in_idx:
        for i in range(lo, hi):
            idx[i] = buf[i]


@njit(cache=True)
def top_k(idx, lo, hi, kk, score, y, mode):
    """First ``kk`` documents of the stable order by :func:`before`, in ``idx[lo:lo + kk]``.

    Bounded insertion in input order: a document enters only if it comes
    strictly before the current ``kk``-th one, and settles after the equal
    documents seen earlier, which keeps the order stable. ``O(n)`` typically,
    ``O(n k)`` at worst, so it replaces a full sort for small ``k``.
    """
    cnt = 0
    for v in range(lo, hi):
        if cnt == kk:
            if not before(v, idx[lo + kk - 1], score, y, mode):
                continue
            j = kk - 1
        else:
            j = cnt
            cnt += 1
        while j > 0 and before(v, idx[lo + j - 1], score, y, mode):
            idx[lo + j] = idx[lo + j - 1]
            j -= 1
        idx[lo + j] = v


@njit(cache=True)
def worst_order(score, y, lo, hi, order, buf):
    """``order[lo:hi]``: the rows ``lo..hi-1`` by ``score`` descending, ties by
    ``y`` ascending (the ``worst`` rule), then by row. ``buf`` is scratch."""
    for p in range(lo, hi):
        order[p] = p
    stable_sort(order, buf, lo, hi, score, y, WORST)


# -- normalisers ---------------------------------------------------------------
@njit(cache=True)
def ideal_dcg(y, lo, hi, k, exp_gain, order, buf, top):
    """Ideal DCG@k of the labels ``y[lo:hi]`` (``k <= 0``: whole list).

    The DCG of the labels sorted in decreasing order, summed from the top.
    Up to :data:`SMALL_K` the ``k`` largest labels are kept sorted in
    ``top[lo:lo + k]`` by bounded insertion (``O(n)`` typically, most labels
    rejected by one comparison); beyond, ``order[lo:hi]`` is sorted by label
    (``O(n log n)``, ``buf`` as scratch).
    """
    n = hi - lo
    kk = n if (k <= 0 or k > n) else k
    acc = 0.0
    if kk <= SMALL_K:
        cnt = 0
        for i in range(lo, hi):
            r = y[i]
            if cnt == kk:
                if r <= top[lo + kk - 1]:
                    continue
                j = kk - 1
            else:
                j = cnt
                cnt += 1
            while j > 0 and top[lo + j - 1] < r:
                top[lo + j] = top[lo + j - 1]
                j -= 1
            top[lo + j] = r
        for p in range(cnt):
            acc += gain(top[lo + p], exp_gain) * discount(p)
        return acc
    for i in range(lo, hi):
        order[i] = i
    stable_sort(order, buf, lo, hi, y, y, IDEAL)
    for p in range(kk):
        acc += gain(y[order[lo + p]], exp_gain) * discount(p)
    return acc


@njit(cache=True)
def inverse_normaliser(metric, y, lo, hi, k, exp_gain, threshold, order, buf, top):
    """Per-query factor of the normalised metrics: ``1 / IDCG@k`` (NDCG),
    ``1 / min(R, k)`` (MAP, ``R`` relevant documents), 1 for the others; 0
    when the normaliser is 0 (no gain, no relevant document), so such a
    query gets no gradient. ``order``, ``buf``, ``top``: scratch for
    :func:`ideal_dcg`."""
    if metric == NDCG:
        ideal = ideal_dcg(y, lo, hi, k, exp_gain, order, buf, top)
        return 1.0 / ideal if ideal > 0.0 else 0.0
    if metric == MAP:
        n_rel = 0
        for i in range(lo, hi):
            if is_relevant(y[i], threshold):
                n_rel += 1
        denom = min(n_rel, k) if k > 0 else n_rel
        return 1.0 / denom if denom > 0 else 0.0
    return 1.0


# -- ERR's label mapping ---------------------------------------------------------
def err_scale(y, err_mapping, err_max_label, *, name="y"):
    """``err_scale`` for the kernels, after checking the labels against the mapping.

    :data:`NO_ERR_MAPPING` when ``err_mapping`` is None (the labels must then
    be probabilities in [0, 1]); ``2^{r_max}`` for Chapelle's mapping, with
    ``r_max = err_max_label`` (which must bound the labels) or the largest
    label of ``y``.
    """
    y = np.asarray(y)
    y_max = float(np.max(y)) if y.size else None
    if err_mapping is None:
        if y_max is not None and y_max > 1.0:
            raise ValueError(
                f"ERR and PFound with err_mapping=None need {name} to be stop probabilities in [0, 1], but "
                f"the largest label is {y_max:g}; pass err_mapping='chapelle' to map graded labels "
                "with (2^r - 1) / 2^r_max."
            )
        return NO_ERR_MAPPING
    if err_max_label is None:
        return _chapelle_scale(y_max, name) if y_max is not None else 1.0
    if y_max is not None and y_max > err_max_label:
        raise ValueError(
            f"err_max_label={err_max_label:g} is below the largest label {y_max:g} of {name}; "
            "pass err_max_label >= the largest label: the top of the label scale."
        )
    return _chapelle_scale(float(err_max_label), f"err_max_label={err_max_label:g} of {name}")


def _chapelle_scale(r_max, name):
    """``2^{r_max}``, or an error when it overflows float64 (``r_max >= 1024``)."""
    if r_max >= 1024.0:
        raise ValueError(
            f"{name}: err_mapping='chapelle' maps the label {r_max:g} with 2^r, which overflows float64 "
            "(labels below 1024 only); rescale the labels, or pass stop probabilities in [0, 1] with "
            "err_mapping=None."
        )
    return float(2.0**r_max)


def parse_metric(metric, k=None, *, accepted=None):
    """``"ndcg@10"`` -> ``("ndcg", 10)``; ``("ndcg", k)`` passes through.

    A ``@k`` suffix and an explicit ``k`` must agree. ``accepted`` lists the
    names the caller accepts (default: every metric of :data:`METRIC_IDS`),
    which the error for an unknown name lists, with the closest one as a
    suggestion; the caller refuses known metrics it does not accept itself,
    with its own reason.
    """
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string such as 'ndcg@10', got {metric!r}.")
    name, at, suffix = metric.lower().strip().partition("@")
    if name not in METRIC_IDS:
        # List what this caller takes, not every metric: an objective's error
        # must not offer metrics it then refuses, nor omit its own names.
        accepted = sorted(METRIC_IDS) if accepted is None else list(accepted)
        close = difflib.get_close_matches(name, accepted, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"Unknown metric {metric!r}{hint}; valid metrics are {accepted} "
            "(optionally with @k, e.g. 'ndcg@10')."
        )
    if at:
        if not suffix:
            # "ndcg@" is a cut-off left out, not a request for the whole list.
            raise ValueError(
                f"metric {metric!r}: '@' must be followed by the cut-off k, e.g. '{name}@10'; "
                f"write {name!r} without '@' for the whole list."
            )
        if not (suffix.isascii() and suffix.isdigit()):  # int() also reads "1_0", " 3" and "+3"
            raise ValueError(f"metric {metric!r}: the part after '@' must be an int written in digits, e.g. "
                             f"'{name}@10'.")
        k_suffix = int(suffix)
        if k_suffix <= 0:
            raise ValueError(f"metric {metric!r}: k must be a positive int.")
        check_k(k_suffix, name=f"metric {metric!r}: k")
        if k is not None and k != k_suffix:
            raise ValueError(f"metric {metric!r} says k={k_suffix} but k={k} was passed.")
        k = k_suffix
    # An objective's k passed scikit-learn's check, which has no upper bound.
    return name, check_k(k)
