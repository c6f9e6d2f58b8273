"""Tie-aware ranking metrics against naive references, scikit-learn and CatBoost."""

import math
import warnings
import zlib

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankkit._metrics._api import METRICS, evaluate_sorted, metric_function
from rankkit._metrics._common import TIES as TIES_REGISTRY
from rankkit.metrics import (
    dcg_score,
    err_score,
    expdcg_score,
    map_score,
    mrr_score,
    ndcg_score,
    pfound_score,
    precision_score,
    recall_score,
    rprecision_score,
)
from tests import _reference_metrics as ref

# The registries parametrise the tests: every tie policy and every metric.
TIES = list(TIES_REGISTRY)
NAMES = list(METRICS)
NORMALISED = ["ndcg", "err", "mrr", "map", "precision", "recall", "rprecision", "pfound"]
CASCADE = ("err", "pfound")

# Metric parameter sets exercised for each metric (public keyword names).
PARAMS = {
    "ndcg": [{"gain": "exp"}, {"gain": "linear", "empty": 0.0}, {"empty": "exclude"}],
    "dcg": [{"gain": "exp"}, {"gain": "linear"}],
    "err": [{"err_mapping": "chapelle"}, {"err_mapping": None}],
    "mrr": [{}, {"relevance_threshold": 1.0, "empty": 0.0}, {"empty": "exclude"}],
    "map": [{}, {"relevance_threshold": 1.0, "empty": "exclude"}, {"empty": 0.0}],
    "expdcg": [{}, {"decay": 0.5}],
    "precision": [{}, {"relevance_threshold": 1.0, "empty": 0.0}, {"empty": "exclude"}],
    "recall": [{}, {"relevance_threshold": 1.0, "empty": "exclude"}, {"empty": 0.0}],
    "rprecision": [{}, {"relevance_threshold": 1.0, "empty": 0.0}, {"empty": "exclude"}],
    "pfound": [{"err_mapping": "chapelle"}, {"err_mapping": None, "decay": 0.6}],
}


def test_every_metric_has_parameter_sets():
    assert set(PARAMS) == set(METRICS)


def ref_params(name, params, y):
    """Public keyword arguments -> keyword arguments of the reference."""
    out = {}
    if "gain" in params:
        out["gain_type"] = params["gain"]
    if "empty" in params:
        out["empty"] = params["empty"]
    if "relevance_threshold" in params:
        out["threshold"] = params["relevance_threshold"]
    if "decay" in params:
        out["decay"] = params["decay"]
    if name in CASCADE and params.get("err_mapping") == "chapelle":
        out["err_scale"] = 2.0 ** max(y)
    return out


def labels_for(name, params, y):
    """ERR without mapping needs probabilities: rescale graded labels to [0, 1]."""
    if name in CASCADE and params.get("err_mapping") is None:
        return y / 3.0
    return y


def random_queries(rng, n_queries, max_size, n_score_values=3):
    """Small queries with heavy ties, single documents and all-zero labels."""
    ys, ss, qs = [], [], []
    for q in range(n_queries):
        n = int(rng.integers(1, max_size + 1))
        y = rng.choice([0, 0, 1, 2, 3], size=n).astype(float)
        if q % 5 == 0:
            y[:] = 0.0
        s = rng.integers(0, n_score_values, size=n).astype(float)
        ys.append(y)
        ss.append(s)
        qs.append(np.full(n, q))
    return np.concatenate(ys), np.concatenate(ss), np.concatenate(qs)


def per_query_reference(name, y, s, qid, ties, k, params):
    rp = ref_params(name, params, y)
    out = []
    for q in dict.fromkeys(qid):
        mask = qid == q
        v = ref.reference_query(name, list(y[mask]), list(s[mask]), ties, k=k, **rp)
        out.append(np.nan if v is None else v)
    return np.array(out)


@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("name", NAMES)
def test_kernel_matches_reference(name, ties, k):
    # crc32, not hash(): str hashes change between interpreter runs.
    rng = np.random.default_rng(zlib.crc32(f"{name}-{ties}-{k}".encode()))
    y0, s, qid = random_queries(rng, 30, 7)
    for params in PARAMS[name]:
        y = labels_for(name, params, y0)
        got = METRICS[name](y, s, qid=qid, k=k, ties=ties, per_query=True, **params)
        want = per_query_reference(name, y, s, qid, ties, k, params)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{name} {params}")


@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("name", NAMES)
def test_policies_bound_and_average_all_tie_orders(name, k):
    """worst = min and best = max over every tie order; average = their mean."""
    rng = np.random.default_rng(7 + (k or 0))
    y0, s, qid = random_queries(rng, 25, 7, n_score_values=2)
    params = PARAMS[name][0]
    y = labels_for(name, params, y0)
    rp = ref_params(name, params, y)
    res = {t: METRICS[name](y, s, qid=qid, k=k, ties=t, per_query=True, **params) for t in TIES}
    for qi, q in enumerate(dict.fromkeys(qid)):
        mask = qid == q
        values = ref.enumerate_values(name, list(y[mask]), list(s[mask]), k=k, **rp)
        assert math.isclose(res["worst"][qi], min(values), rel_tol=1e-12, abs_tol=1e-12)
        assert math.isclose(res["best"][qi], max(values), rel_tol=1e-12, abs_tol=1e-12)
        assert math.isclose(res["average"][qi], sum(values) / len(values), rel_tol=1e-12, abs_tol=1e-12)
        assert min(values) - 1e-12 <= res["input"][qi] <= max(values) + 1e-12


def _n_tie_orders(s):
    _, counts = np.unique(s, return_counts=True)
    return math.prod(math.factorial(int(c)) for c in counts)


@pytest.mark.parametrize("k", [None, 10, 40])
@pytest.mark.parametrize("name", NAMES)
def test_long_queries_match_reference(name, k):
    """Queries of up to 90 documents: the merge sort and the ideal-DCG paths."""
    rng = np.random.default_rng(17)
    ys, ss, qs = [], [], []
    for q in range(24):
        n = int(rng.integers(1, 91))
        y = rng.choice([0, 0, 0, 1, 2, 3], size=n).astype(float)
        if q % 6 == 0:
            y[:] = 0.0
        # Odd queries: few score values (huge tied blocks); even: small blocks.
        hi = 4 if q % 2 else 2 * n
        ys.append(y)
        ss.append(rng.integers(0, hi, size=n).astype(float))
        qs.append(np.full(n, q))
    y0, s, qid = np.concatenate(ys), np.concatenate(ss), np.concatenate(qs)
    for params in PARAMS[name]:
        y = labels_for(name, params, y0)
        rp = ref_params(name, params, y)
        for ties in TIES:
            got = METRICS[name](y, s, qid=qid, k=k, ties=ties, per_query=True, **params)
            for qi, q in enumerate(dict.fromkeys(qid)):
                m = qid == q
                if ties == "average" and _n_tie_orders(s[m]) > 2000:
                    continue
                want = ref.reference_query(name, list(y[m]), list(s[m]), ties, k=k, **rp)
                want = np.nan if want is None else want
                np.testing.assert_allclose(got[qi], want, rtol=1e-12, atol=1e-12,
                                           err_msg=f"{name} {params} {ties} query {q}")


@pytest.mark.parametrize("k", [None, 2, 5])
def test_err_average_large_blocks_by_subsets(k):
    """Exact ERR expectation on tied blocks too large to enumerate orders (t <= 11)."""
    rng = np.random.default_rng(3)
    for mapping in ("chapelle", None):
        for _ in range(6):
            n = int(rng.integers(8, 12))
            y = rng.choice([0, 1, 2, 3, 4], size=n).astype(float)
            if mapping is None:
                y = y / 4.0
            s = rng.integers(0, 2, size=n).astype(float)
            got = err_score(y, s, qid=np.zeros(n), k=k, ties="average", err_mapping=mapping)
            scale = 2.0 ** y.max() if mapping else 0.0
            want = ref.err_average_by_subsets(list(y), list(s), k=k, err_scale=scale)
            assert math.isclose(got, want, rel_tol=1e-11, abs_tol=1e-13)


def test_average_huge_tied_block_is_finite_and_bounded():
    """A 3,000-document all-tied query: no overflow in the ERR recursion."""
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.choice([0, 1, 2, 3, 4], size=n).astype(float)
    s = np.zeros(n)
    qid = np.zeros(n)
    for name in NAMES:
        params = _kw(name)
        vals = {t: METRICS[name](y, s, qid=qid, k=10, ties=t, **params) for t in ("worst", "average", "best")}
        assert np.isfinite(vals["average"])
        assert vals["worst"] - 1e-12 <= vals["average"] <= vals["best"] + 1e-12
    # All tied: each of the top-10 positions holds a uniformly random document.
    mean_gain = np.mean(2.0**y - 1.0)
    want = mean_gain * sum(1 / math.log2(i + 2) for i in range(10))
    assert math.isclose(dcg_score(y, s, qid=qid, k=10, ties="average"), want, rel_tol=1e-12)


@pytest.mark.parametrize("k", [None, 2, 40])
@pytest.mark.parametrize("gain", ["exp", "linear"])
def test_average_ties_among_equal_labels_of_an_ideal_ranking_score_exactly_one(gain, k):
    """Scores that order the labels perfectly, ties only among equal labels:
    every tie order is ideal, so NDCG is exactly 1 (it was 1 +- 2e-16)."""
    assert ndcg_score([2, 2, 2], [1, 1, 1], qid=[0, 0, 0], ties="average", gain=gain, k=k) == 1.0
    rng = np.random.default_rng(5)
    ys, qs = [], []
    for q in range(200):
        n = int(rng.integers(2, 60))
        y = rng.integers(0, 5, size=n) * (0.37 if q % 3 == 0 else 1.0)
        y[0] = 1.0  # a relevant document: no empty queries
        ys.append(y)
        qs.append(np.full(n, q))
    y, qid = np.concatenate(ys), np.concatenate(qs)
    values = ndcg_score(y, 3.0 * y + 1.0, qid=qid, ties="average", gain=gain, k=k, per_query=True)
    np.testing.assert_array_equal(values, 1.0)


@pytest.mark.parametrize("k", [None, 1, 5])
def test_sklearn_ndcg_and_dcg_per_query(k):
    from sklearn.metrics import dcg_score as sk_dcg
    from sklearn.metrics import ndcg_score as sk_ndcg

    rng = np.random.default_rng(11)
    y, s, qid = random_queries(rng, 40, 12)
    ours_n = ndcg_score(y, s, qid=qid, k=k, ties="average", gain="linear", empty=0.0, per_query=True)
    ours_d = dcg_score(y, s, qid=qid, k=k, ties="average", gain="linear", per_query=True)
    for qi, q in enumerate(dict.fromkeys(qid)):
        m = qid == q
        if m.sum() < 2:  # scikit-learn rejects single-document queries
            continue
        assert math.isclose(ours_n[qi], sk_ndcg([y[m]], [s[m]], k=k), rel_tol=1e-12, abs_tol=1e-15)
        assert math.isclose(ours_d[qi], sk_dcg([y[m]], [s[m]], k=k), rel_tol=1e-12, abs_tol=1e-15)


CATBOOST_CASES = [
    # (CatBoost metric string, rankkit metric, keyword arguments, labels in [0, 1])
    ("NDCG:type=Exp", "ndcg", {"gain": "exp"}, False),
    ("NDCG:top=5;type=Exp", "ndcg", {"gain": "exp", "k": 5}, False),
    ("NDCG", "ndcg", {"gain": "linear"}, False),
    ("NDCG:top=3;denominator=LogPosition", "ndcg", {"gain": "linear", "k": 3}, False),
    ("DCG:type=Exp", "dcg", {"gain": "exp"}, False),
    ("DCG:top=3", "dcg", {"gain": "linear", "k": 3}, False),
    # CatBoost's MRR/MAP give 0 to a query without relevant document.
    ("MRR", "mrr", {"empty": 0.0}, False),
    ("MRR:top=3", "mrr", {"empty": 0.0, "k": 3}, False),
    ("MAP", "map", {"empty": 0.0}, False),
    ("MAP:top=3", "map", {"empty": 0.0, "k": 3}, False),
    # CatBoost's ERR reads labels as probabilities (it clips graded labels to 1).
    ("ERR", "err", {}, True),
    ("ERR:top=3", "err", {"k": 3}, True),
]


@pytest.mark.parametrize("cb_metric,name,kwargs,unit", CATBOOST_CASES)
def test_catboost_eval_metric_worst_ties(cb_metric, name, kwargs, unit):
    eval_metric = pytest.importorskip("catboost.utils").eval_metric
    rng = np.random.default_rng(5)
    y, s, qid = random_queries(rng, 60, 15, n_score_values=4)
    if unit:
        # Quarters are exact in float32, the precision CatBoost stores labels in.
        y = y / 4.0
    want = eval_metric(y, s, cb_metric, group_id=qid)[0]
    got = METRICS[name](y, s, qid=qid, ties="worst", **kwargs)
    assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


def test_thread_count_does_not_change_results():
    rng = np.random.default_rng(2)
    y, s, qid = random_queries(rng, 400, 40)
    before = numba.get_num_threads()
    try:
        results = []
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            results.append([
                METRICS[n](y, s, qid=qid, ties=t, k=5, per_query=True, **_kw(n))
                for n in NAMES for t in TIES
            ])
    finally:
        numba.set_num_threads(before)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_evaluate_sorted_matches_public_and_parses_at_k():
    rng = np.random.default_rng(9)
    y, s, qid = random_queries(rng, 50, 9)
    ptr = np.r_[0, np.flatnonzero(np.diff(qid)) + 1, len(qid)].astype(np.int64)
    got = evaluate_sorted("ndcg@3", y, s, ptr, ties="average", gain="linear", empty="exclude")
    want = ndcg_score(y, s, qid=qid, k=3, ties="average", gain="linear", empty="exclude", per_query=True)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got).sum() == sum(1 for q in dict.fromkeys(qid) if not y[qid == q].any())
    assert metric_function("map@5") is map_score
    assert set(METRICS) == set(NAMES)
    with pytest.raises(ValueError, match="ndcg@3.*k=4"):
        evaluate_sorted("ndcg@3", y, s, ptr, k=4)


# ---------------------------------------------------------------- properties

@st.composite
def ranking_data(draw):
    sizes = draw(st.lists(st.integers(1, 8), min_size=1, max_size=6))
    n = sum(sizes)
    y = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=float)
    s = np.array(draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n)), dtype=float)
    qid = np.repeat(np.arange(len(sizes)) * 7 % 5 + np.arange(len(sizes)) * 10, sizes)
    k = draw(st.sampled_from([None, 1, 2, 4]))
    return y, s, qid, k


def _kw(name):
    return {"err_mapping": "chapelle"} if name in CASCADE else {}


@settings(max_examples=40, deadline=None)
@given(data=ranking_data(), name=st.sampled_from(NAMES))
def test_property_worst_average_best_ordered(data, name):
    y, s, qid, k = data
    v = {t: METRICS[name](y, s, qid=qid, k=k, ties=t, per_query=True, **_kw(name)) for t in TIES}
    assert np.all(v["worst"] <= v["average"] + 1e-12)
    assert np.all(v["average"] <= v["best"] + 1e-12)
    assert np.all(v["worst"] <= v["input"] + 1e-12) and np.all(v["input"] <= v["best"] + 1e-12)


@settings(max_examples=40, deadline=None)
@given(data=ranking_data(), name=st.sampled_from(NAMES), ties=st.sampled_from(TIES),
       scale=st.sampled_from([0.25, 2.0, 8.0]), shift=st.integers(-5, 5))
def test_property_positive_affine_invariance(data, name, ties, scale, shift):
    # Powers of two and integer shifts keep small integer scores exact, so
    # ties are neither created nor broken by rounding.
    y, s, qid, k = data
    a = METRICS[name](y, s, qid=qid, k=k, ties=ties, per_query=True, **_kw(name))
    b = METRICS[name](y, s * scale + shift, qid=qid, k=k, ties=ties, per_query=True, **_kw(name))
    np.testing.assert_array_equal(a, b)


@settings(max_examples=40, deadline=None)
@given(data=ranking_data(), name=st.sampled_from(NORMALISED), ties=st.sampled_from(TIES))
def test_property_normalised_in_unit_interval_and_length(data, name, ties):
    y, s, qid, k = data
    v = METRICS[name](y, s, qid=qid, k=k, ties=ties, per_query=True, **_kw(name))
    assert v.shape == (len(np.unique(qid)),)
    assert np.all((v >= 0.0) & (v <= 1.0 + 1e-12))


@settings(max_examples=40, deadline=None)
@given(data=ranking_data(), name=st.sampled_from(NAMES), ties=st.sampled_from(["worst", "average", "best"]),
       seed=st.integers(0, 2**31 - 1))
def test_property_row_shuffle_invariance(data, name, ties, seed):
    y, s, qid, k = data
    perm = np.random.default_rng(seed).permutation(len(y))
    a = METRICS[name](y, s, qid=qid, k=k, ties=ties, per_query=True, **_kw(name))
    b = METRICS[name](y[perm], s[perm], qid=qid[perm], k=k, ties=ties, per_query=True, **_kw(name))
    # per_query follows first appearance of each qid: compare by qid.
    qa = list(dict.fromkeys(qid))
    qb = list(dict.fromkeys(qid[perm]))
    np.testing.assert_allclose(b, [a[qa.index(q)] for q in qb], rtol=1e-13, atol=1e-15)
    assert math.isclose(
        METRICS[name](y, s, qid=qid, k=k, ties=ties, **_kw(name)),
        METRICS[name](y[perm], s[perm], qid=qid[perm], k=k, ties=ties, **_kw(name)),
        rel_tol=1e-12, abs_tol=1e-15,
    )


# ------------------------------------------------------------ edge cases

def test_single_document_queries():
    y = np.array([0.0, 2.0, 1.0])
    s = np.array([0.3, -1.0, 5.0])
    qid = np.array([1, 2, 3])
    for t in TIES:
        np.testing.assert_array_equal(ndcg_score(y, s, qid=qid, ties=t, per_query=True), [1.0, 1.0, 1.0])
        np.testing.assert_array_equal(mrr_score(y, s, qid=qid, ties=t, per_query=True, empty=0.0), [0.0, 1.0, 1.0])
        np.testing.assert_array_equal(dcg_score(y, s, qid=qid, ties=t, per_query=True), [0.0, 3.0, 1.0])
        np.testing.assert_allclose(err_score(y, s, qid=qid, ties=t, per_query=True, err_mapping="chapelle"),
                                   [0.0, 0.75, 0.25])


@pytest.mark.parametrize("fn", [ndcg_score, mrr_score, map_score])
def test_empty_policy(fn):
    y = np.array([0, 0, 1, 0, 0.0])
    s = np.array([1, 2, 0, 3, 3.0])
    qid = np.array([4, 4, 8, 8, 6])
    ones = fn(y, s, qid=qid, per_query=True, empty=1.0)
    zeros = fn(y, s, qid=qid, per_query=True, empty=0.0)
    excl = fn(y, s, qid=qid, per_query=True, empty="exclude")
    assert ones[0] == 1.0 and ones[2] == 1.0 and zeros[0] == 0.0 and zeros[2] == 0.0
    assert np.isnan(excl[0]) and np.isnan(excl[2]) and excl[1] == ones[1] == zeros[1]
    assert fn(y, s, qid=qid, empty="exclude") == excl[1]
    assert math.isclose(fn(y, s, qid=qid, empty=0.0), zeros[1] / 3)
    with pytest.warns(Warning, match="every query was excluded"):
        assert np.isnan(fn(np.zeros(3), s[:3], qid=[0, 0, 1], empty="exclude"))


def test_err_of_all_zero_query_is_zero_and_dcg_has_no_empty():
    y, s, qid = np.zeros(3), np.array([1.0, 2.0, 3.0]), np.zeros(3)
    assert err_score(y, s, qid=qid) == 0.0
    assert dcg_score(y, s, qid=qid) == 0.0
    with pytest.raises(TypeError):
        dcg_score(y, s, qid=qid, empty=1.0)


def test_contiguous_non_monotonic_and_unsorted_qids():
    y = np.array([1, 0, 0, 2, 1.0])
    s = np.array([0.1, 0.9, 0.5, 0.2, 0.0])
    qid = np.array([5, 5, 2, 2, 9])
    v = ndcg_score(y, s, qid=qid, per_query=True, gain="linear")
    q5 = (0 + 1 / math.log2(3)) / 1.0
    q2 = (0 + 2 / math.log2(3)) / 2.0
    np.testing.assert_allclose(v, [q5, q2, 1.0])
    # Interleaved rows: queries keep the order of first appearance.
    perm = np.array([2, 0, 4, 3, 1])
    np.testing.assert_allclose(
        ndcg_score(y[perm], s[perm], qid=qid[perm], per_query=True, gain="linear"), [q2, q5, 1.0])


# ------------------------------------------------------------- bad input

def test_bad_input_messages():
    y = np.array([1.0, 0.0, 2.0])
    s = np.array([0.5, 0.1, 0.3])
    q = np.zeros(3)
    with pytest.raises(ValueError, match="y_score.*NaN"):
        ndcg_score(y, [np.nan, 0, 1], qid=q)
    with pytest.raises(ValueError, match="y_score.*NaN or infinite"):
        ndcg_score(y, [np.inf, 0, 1], qid=q)
    with pytest.raises(ValueError, match="y_true.*NaN"):
        map_score([np.nan, 0, 1], s, qid=q)
    with pytest.raises(ValueError, match="y_true.*negative"):
        mrr_score([-1, 0, 1], s, qid=q)
    with pytest.raises(ValueError, match="err_mapping='chapelle'"):
        err_score(y, s, qid=q)
    with pytest.raises(ValueError, match="err_max_label"):
        err_score(y, s, qid=q, err_mapping="chapelle", err_max_label=1)
    with pytest.raises(ValueError, match="err_mapping"):
        err_score(y, s, qid=q, err_mapping="linear")
    for bad in (np.nan, np.inf, -1.0):  # NaN gave NaN, and a warning about excluded queries
        with pytest.raises(ValueError, match="err_max_label must be a finite label >= 0"):
            err_score(y, s, qid=q, err_mapping="chapelle", err_max_label=bad)
    with pytest.raises(TypeError, match="per_query must be True or False"):
        ndcg_score(y, s, qid=q, per_query="no")  # a truthy string gave the per-query array
    with pytest.raises(ValueError, match="y_true has 3.*y_score has 2"):
        dcg_score(y, s[:2], qid=q)
    with pytest.raises(ValueError, match="qid has 2"):
        dcg_score(y, s, qid=q[:2])
    with pytest.raises(ValueError, match="qid is required"):
        ndcg_score(y, s, qid=None)
    with pytest.raises(TypeError):
        ndcg_score(y, s)  # qid is keyword-only and required
    with pytest.raises(ValueError, match="k must be a positive int"):
        ndcg_score(y, s, qid=q, k=0)
    with pytest.raises(TypeError, match="k must be a positive int"):
        ndcg_score(y, s, qid=q, k=2.5)
    with pytest.raises(ValueError, match="ties must be one of.*average.*best.*input.*worst"):
        ndcg_score(y, s, qid=q, ties="random")
    with pytest.raises(ValueError, match="gain must be"):
        ndcg_score(y, s, qid=q, gain="log")
    with pytest.raises(ValueError, match="empty must be"):
        ndcg_score(y, s, qid=q, empty=0.5)
    with pytest.raises(ValueError, match="decay must be"):
        expdcg_score(y, s, qid=q, decay=1.5)


def test_cut_offs_beyond_int64_and_empty_cut_offs_are_errors():
    """k reaches the kernels as an int64: a larger k is refused naming k (it
    was a numba typing error), not clipped, since P@k divides by k itself."""
    y, s, q = [1.0, 0.0], [0.1, 0.2], [0, 0]
    with pytest.raises(ValueError, match=r"k=9223372036854775808 is beyond the largest cut-off, 2\*\*63 - 1"):
        ndcg_score(y, s, qid=q, k=2**63)
    with pytest.raises(ValueError, match=r"metric 'map@99999999999999999999': k=99999999999999999999 is beyond"):
        evaluate_sorted("map@99999999999999999999", np.array(y), np.array(s), [0, 2])
    # An objective's k passes scikit-learn's bounds [1, inf): the metric's check refuses it.
    from rankkit.objectives import LambdaMART

    with pytest.raises(ValueError, match=r"k=9223372036854775808 is beyond"):
        LambdaMART("ndcg", k=2**63).gradient_hessian(y, s, qid=q)
    assert ndcg_score(y, s, qid=q, k=2**63 - 1) == ndcg_score(y, s, qid=q)
    assert precision_score(y, s, qid=q, k=2**63 - 1) == 1 / (2**63 - 1)
    # "ndcg@" is a cut-off left out, not the whole list.
    for metric, name in [("ndcg@", "ndcg"), ("MAP@ ", "map")]:
        with pytest.raises(ValueError, match=rf"metric '{metric}': '@' must be followed by the cut-off k, "
                                             rf"e\.g\. '{name}@10'; write '{name}' without '@'"):
            evaluate_sorted(metric, np.array(y), np.array(s), [0, 2])
    # int() reads these too ("1_0" as 10): only digits are a cut-off.
    for metric in ("ndcg@1_0", "ndcg@+3", "ndcg@ 3", "ndcg@3.0", "ndcg@\u0663", "ndcg@ten"):
        with pytest.raises(ValueError, match=r"the part after '@' must be an int written in digits, e\.g\. 'ndcg@10'"):
            evaluate_sorted(metric, np.array(y), np.array(s), [0, 2])
    assert evaluate_sorted("ndcg@010", np.array(y), np.array(s), [0, 2]) == evaluate_sorted(
        "ndcg@10", np.array(y), np.array(s), [0, 2])


@pytest.mark.parametrize("fn", [ndcg_score, dcg_score])
def test_labels_whose_exp_gain_overflows_are_an_error_naming_label_and_fix(fn):
    # 2^1024 is infinite in float64: DCG would be inf and NDCG inf/inf = nan,
    # and one such query alone used to give a wrong "every query was excluded" warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning instead of the error
        with pytest.raises(ValueError, match=r"label 1024\b.*overflows float64.*gain='linear'"):
            fn([1024, 0, 1], [0.3, 0.2, 0.1], qid=[0, 0, 0])
        with pytest.raises(ValueError, match=r"label 2000\b.*gain='linear'"):
            fn([1, 0, 2000, 3], [0.3, 0.2, 0.1, 0.0], qid=[0, 0, 1, 1])
        # Finite gains whose sum over a query overflows (2 * 2^1023.5): same error.
        with pytest.raises(ValueError, match=r"label 1023.5.*2 documents.*gain='linear'"):
            fn([1023.5, 1023.5], [0.2, 0.1], qid=[0, 0])
        # The fix works, and labels below the limit are fine with exp gain.
        assert np.isfinite(fn([1024, 0, 1], [0.3, 0.2, 0.1], qid=[0, 0, 0], gain="linear"))
        assert np.isfinite(fn([1000, 0, 1], [0.3, 0.2, 0.1], qid=[0, 0, 0]))
        # Metrics without gains do not care.
        assert mrr_score([2000, 0], [0.1, 0.2], qid=[0, 0]) == 0.5


def test_exp_gain_overflow_is_checked_query_by_query():
    """Each query's own sum of gains must be finite, not 2^(largest label of
    any query) times the size of the largest query."""
    # 2^1023 - 1 + 0 is finite: the DCG is too.
    assert dcg_score([1023, 0], [1.0, 2.0], qid=[0, 0]) == pytest.approx((2.0**1023 - 1) / math.log2(3), rel=1e-15)
    # The large label alone in its query, the longer query all zeros.
    np.testing.assert_array_equal(ndcg_score([1023, 0, 0], [1.0, 1.0, 2.0], qid=[0, 1, 1], per_query=True), [1, 1])
    assert np.isfinite(ndcg_score([1014] + [0] * 1024, [1.0] * 1025, qid=[0] + [1] * 1024, per_query=True)).all()
    # A query whose own gains overflow is still refused, and named by its largest label and size.
    with pytest.raises(ValueError, match=r"label 1023 in a query of 3 documents whose exp gains.*gain='linear'"):
        ndcg_score([5, 0, 1023, 1023, 0], [0.1] * 5, qid=[0, 0, 1, 1, 1])
    # Empty queries of a group_ptr (reduceat reads an empty segment as one element).
    assert np.isfinite(evaluate_sorted("dcg", [1023.0, 0.0], [1.0, 2.0], [0, 0, 2, 2])[1])
    with pytest.raises(ValueError, match=r"label 1023 in a query of 2 documents"):
        evaluate_sorted("dcg", [1023.0, 1023.0], [1.0, 2.0], [0, 2, 2])


def test_gain_of_tiny_and_integer_labels():
    """2^r - 1 with expm1 below 1, so that a tiny positive label has a
    positive gain (pow(2, 1e-17) - 1 is 0); integer labels keep exactly 2^r - 1."""
    assert ndcg_score([1e-17, 0.0], [0.0, 1.0], qid=[0, 0]) == pytest.approx(1 / math.log2(3), rel=1e-15)
    assert ndcg_score([1e-17, 0.0], [0.0, 1.0], qid=[0, 0], empty=0.0) == pytest.approx(1 / math.log2(3), rel=1e-15)
    assert dcg_score([1e-17], [0.0], qid=[0]) == pytest.approx(1e-17 * math.log(2.0), rel=1e-15, abs=0)
    assert dcg_score([0.5], [0.0], qid=[0]) == pytest.approx(math.sqrt(2.0) - 1.0, rel=1e-15)
    # Chapelle's stop probability (2^r - 1) / 2^r_max uses the same gain.
    assert err_score([1e-17, 0.0], [1.0, 0.0], qid=[0, 0], err_mapping="chapelle", err_max_label=1) == \
        pytest.approx(1e-17 * math.log(2.0) / 2, rel=1e-15, abs=0)
    labels = [0.0, 3e-12, 1e-17, 0.25, 2.0]  # ranked in this order
    for name in ("ndcg", "dcg"):
        assert METRICS[name](labels, [5.0, 4.0, 3.0, 2.0, 1.0], qid=[0] * 5) == \
            pytest.approx(ref.value_of_order(name, labels), rel=1e-14, abs=0)
    # One document: DCG = G(r) * 1 / log2(2), exact, so the gain is compared bit for bit.
    for r in [*range(64), 1023]:
        assert dcg_score([float(r)], [0.0], qid=[0]) == 2.0**r - 1.0, r


def test_average_ties_with_large_finite_gains_stay_finite():
    """A tied block's expected DCG is its gain sum times its mean position
    weight; multiplying by the weight sum first overflowed for a block whose
    gain sum is finite."""
    assert ndcg_score([8e307, 8e307], [1.0, 1.0], qid=[0, 0], gain="linear", ties="average") == pytest.approx(1.0)
    gains = 2.0**1023 - 1 + 2.0**1022.5 - 1
    assert dcg_score([1023, 1022.5], [1.0, 1.0], qid=[0, 0], ties="average") == \
        pytest.approx(gains * ((1 + 1 / math.log2(3)) / 2), rel=1e-14)


def test_labels_whose_sum_overflows_are_an_error_for_linear_gain_and_expdcg():
    """Labels finite one by one can sum to inf in a query: DCG and ExpDCG are
    then inf and NDCG inf/inf = nan, which the mean silently dropped."""
    y, s, q = [1.5e308, 1.5e308, 1.0, 0.0], [4.0, 3.0, 2.0, 1.0], [0, 0, 1, 1]
    message = r"label 1.5e\+308 in a query of 2 documents whose labels sum beyond float64's range.*divide the labels"
    with pytest.raises(ValueError, match=message + r".*NDCG is unchanged"):
        ndcg_score(y, s, qid=q, gain="linear")
    with pytest.raises(ValueError, match=message + r".*DCG is divided by it"):
        dcg_score(y, s, qid=q, gain="linear")
    with pytest.raises(ValueError, match=message + r".*ExpDCG is divided by it"):
        expdcg_score(y, s, qid=q, decay=1.0)
    # The fix named in the message: NDCG of the divided labels, a perfect ranking.
    np.testing.assert_array_equal(ndcg_score(np.divide(y, 4), s, qid=q, gain="linear", per_query=True), [1, 1])
    # Large labels whose query sums are finite are fine, in separate queries too, and so is
    # their mean over queries (the sum of the per-query values overflows).
    assert expdcg_score([1.5e308, 1.0, 1.5e308], [2.0, 1.0, 0.0], qid=[0, 0, 1], decay=1.0) == pytest.approx(1.5e308)
    assert dcg_score([1.5e308, 1.0e308], [2.0, 1.0], qid=[0, 1], gain="linear") == pytest.approx(1.25e308)
    assert mrr_score(y, s, qid=q) == 1.0  # metrics that do not sum labels do not care


def test_chapelle_err_mapping_overflow_is_an_error():
    with pytest.raises(ValueError, match=r"err_mapping='chapelle'.*label 1024\b.*overflows float64"):
        err_score([1024, 0], [0.2, 0.1], qid=[0, 0], err_mapping="chapelle")
    with pytest.raises(ValueError, match=r"err_max_label=1500.*overflows"):
        err_score([3, 0], [0.2, 0.1], qid=[0, 0], err_mapping="chapelle", err_max_label=1500)


# ------------------------------------------------------------- real data

def test_mq2008_feature_ranking_against_catboost_and_sklearn(shared_data):
    """MQ2008 Fold1 test, ranked by one feature (many exact ties at 0 and 1)."""
    from sklearn.datasets import load_svmlight_file
    from sklearn.metrics import ndcg_score as sk_ndcg

    eval_metric = pytest.importorskip("catboost.utils").eval_metric
    X, y, qid = load_svmlight_file(str(shared_data / "MQ2008" / "Fold1" / "test.txt.gz"), query_id=True)
    s = X[:, 0].toarray().ravel()
    y = y.astype(float)
    assert math.isclose(ndcg_score(y, s, qid=qid, k=10, gain="linear"),
                        eval_metric(y, s, "NDCG:top=10", group_id=qid)[0], rel_tol=1e-9)
    assert math.isclose(map_score(y, s, qid=qid, k=10, empty=0.0),
                        eval_metric(y, s, "MAP:top=10", group_id=qid)[0], rel_tol=1e-9)
    ours = ndcg_score(y, s, qid=qid, k=10, ties="average", gain="linear", empty=0.0, per_query=True)
    for qi, q in enumerate(dict.fromkeys(qid)):
        m = qid == q
        assert math.isclose(ours[qi], sk_ndcg([y[m]], [s[m]], k=10), rel_tol=1e-12, abs_tol=1e-15)
    # Queries without relevant documents are exactly the excluded ones.
    excluded = np.isnan(ndcg_score(y, s, qid=qid, empty="exclude", per_query=True))
    assert excluded.sum() == sum(1 for q in dict.fromkeys(qid) if not y[qid == q].any()) > 0


def test_docstring_examples_run():
    import doctest

    from rankkit._metrics import _api

    result = doctest.testmod(_api, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 6 and result.failed == 0


def test_public_names():
    import rankkit.metrics as public

    for name in public.__all__:
        assert hasattr(public, name), name
    for name, fn in METRICS.items():
        assert getattr(public, f"{name}_score") is fn
    assert public.make_ranking_scorer("ndcg@10") is not None


# ------------------------------------------------------ trec ties, new metrics

def _doc_ids(rng, qid):
    """Per-query distinct string ids of varying length ("10" sorts before "9")."""
    ids = np.empty(len(qid), dtype=object)
    for q in np.unique(qid):
        m = np.flatnonzero(qid == q)
        ids[m] = [str(v) for v in rng.choice(200, size=len(m), replace=False)]
    return ids


@pytest.mark.parametrize("ties", ["trec", "trec_double"])
@pytest.mark.parametrize("k", [None, 1, 3, 50])
@pytest.mark.parametrize("name", NAMES)
def test_trec_ties_match_reference(name, k, ties):
    rng = np.random.default_rng(zlib.crc32(f"trec-{name}-{k}".encode()))
    y0, s, qid = random_queries(rng, 40, 9, n_score_values=3)
    # Half the scores moved by less than single precision resolves: ties to trec_eval 9, not to 10.
    s = s + 1.0 + rng.integers(0, 2, s.shape[0]) * 1e-9
    ids = _doc_ids(rng, qid)
    for params in PARAMS[name]:
        y = labels_for(name, params, y0)
        rp = ref_params(name, params, y)
        got = METRICS[name](y, s, qid=qid, k=k, ties=ties, doc_ids=ids, per_query=True, **params)
        want = []
        for q in dict.fromkeys(qid):
            m = qid == q
            v = ref.reference_query(name, list(y[m]), list(s[m]), ties, list(ids[m]), k=k, **rp)
            want.append(np.nan if v is None else v)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{name} {params}")


def test_trec_ties_compare_ids_as_text_and_follow_the_rows():
    # Three tied documents: trec_eval ranks by docno descending as strings: "9", "10", "1".
    y = np.array([1.0, 0.0, 0.0])
    got = precision_score(y, np.zeros(3), qid=np.zeros(3), k=1, ties="trec", doc_ids=[1, 9, 10])
    assert got == 0.0
    got = precision_score(y, np.zeros(3), qid=np.zeros(3), k=1, ties="trec", doc_ids=["z", "a", "b"])
    assert got == 1.0
    # Shuffling rows (with their ids) changes nothing; ids may repeat across queries.
    rng = np.random.default_rng(4)
    y, s, qid = random_queries(rng, 30, 8)
    ids = np.array([f"d{i % 5}{i}" for i in range(len(y))])
    perm = rng.permutation(len(y))
    a = ndcg_score(y, s, qid=qid, ties="trec", doc_ids=ids)
    b = ndcg_score(y[perm], s[perm], qid=qid[perm], ties="trec", doc_ids=ids[perm])
    assert math.isclose(a, b, rel_tol=1e-13)


def test_trec_ties_bad_input():
    y, s, q = np.array([1.0, 0.0]), np.array([0.5, 0.5]), np.zeros(2)
    with pytest.raises(ValueError, match="ties='trec'.*pass doc_ids="):
        ndcg_score(y, s, qid=q, ties="trec")
    with pytest.raises(ValueError, match="doc_ids is used only with ties='trec'"):
        ndcg_score(y, s, qid=q, doc_ids=["a", "b"])
    with pytest.raises(ValueError, match="doc_ids: document 'a' appears 2 times in one query"):
        map_score(y, s, qid=q, ties="trec", doc_ids=["a", "a"])
    with pytest.raises(ValueError, match="doc_ids must hold one document id per row"):
        map_score(y, s, qid=q, ties="trec", doc_ids=["a"])
    # The same id in two queries is fine.
    assert map_score(y, s, qid=[0, 1], ties="trec", doc_ids=["a", "a"], empty=0.0) == 0.5


def test_precision_recall_rprecision_by_hand():
    y = [2, 0, 1, 0, 0]
    s = [5.0, 4.0, 3.0, 2.0, 1.0]
    q = [0] * 5
    assert precision_score(y, s, qid=q, k=2) == 0.5
    assert precision_score(y, s, qid=q, k=10) == 0.2  # trec_eval: divided by k
    assert precision_score(y, s, qid=q) == 0.4  # the whole list: 2 of 5
    assert recall_score(y, s, qid=q, k=2) == 0.5
    assert recall_score(y, s, qid=q, k=3) == 1.0
    assert rprecision_score(y, s, qid=q) == 0.5  # R = 2: one relevant in the top 2
    assert rprecision_score(y, s, qid=q, k=1) == 1.0  # precision at min(R, k) = 1
    assert precision_score(y, s, qid=q, k=2, relevance_threshold=1.0) == 0.5


def test_pfound_by_hand():
    # R = (0.5, 0.25, 1): 0.5 + 0.5 * 0.85 * 0.25 + 0.5 * 0.75 * 0.85^2 * 1.
    want = 0.5 + 0.5 * 0.85 * 0.25 + 0.5 * 0.75 * 0.85**2
    assert math.isclose(pfound_score([0.5, 0.25, 1.0], [3, 2, 1], qid=[0, 0, 0]), want, rel_tol=1e-15)
    assert math.isclose(pfound_score([0.5, 0.25, 1.0], [3, 2, 1], qid=[0, 0, 0], k=2),
                        0.5 + 0.5 * 0.85 * 0.25, rel_tol=1e-15)
    with pytest.raises(ValueError, match="err_mapping='chapelle'"):
        pfound_score([2, 0], [1, 0], qid=[0, 0])


@pytest.mark.parametrize("cb_metric,kwargs", [
    ("PFound", {}), ("PFound:top=3", {"k": 3}), ("PFound:decay=0.5", {"decay": 0.5}),
    ("PFound:top=5;decay=0.9", {"k": 5, "decay": 0.9}),
])
def test_pfound_equals_catboost(cb_metric, kwargs):
    eval_metric = pytest.importorskip("catboost.utils").eval_metric
    rng = np.random.default_rng(8)
    y, s, qid = random_queries(rng, 60, 15, n_score_values=4)
    y = y / 4.0  # quarters: exact in CatBoost's float32 labels
    want = eval_metric(y, s, cb_metric, group_id=qid)[0]
    got = pfound_score(y, s, qid=qid, ties="worst", **kwargs)
    assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


def test_pfound_equals_catboost_on_mq2008(shared_data):
    from sklearn.datasets import load_svmlight_file

    eval_metric = pytest.importorskip("catboost.utils").eval_metric
    X, y, qid = load_svmlight_file(str(shared_data / "MQ2008" / "Fold1" / "test.txt.gz"), query_id=True)
    s = X[:, 0].toarray().ravel()
    y = y / 2.0  # labels 0, 1, 2 as probabilities 0, 0.5, 1
    for cb, kw in (("PFound", {}), ("PFound:top=10", {"k": 10})):
        assert math.isclose(pfound_score(y, s, qid=qid, **kw), eval_metric(y, s, cb, group_id=qid)[0],
                            rel_tol=1e-9)


def test_evaluation_metrics_are_not_offered_to_objectives():
    from rankkit.objectives import LambdaMART

    with pytest.raises(ValueError, match="does not optimise metric='precision@5'"):
        LambdaMART(metric="precision@5")._metric()
