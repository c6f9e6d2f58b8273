import numpy as np
import pandas as pd
import pytest

from rankkit._groups import group_ptr_from_sizes, make_groups, missing_qid_error, split_qid


def naive_groups(qid):
    """Queries in order of first appearance, rows in input order inside each."""
    seen = []
    for q in qid:
        if q not in seen:
            seen.append(q)
    order = [i for q in seen for i, x in enumerate(qid) if x == q]
    sizes = [sum(1 for x in qid if x == q) for q in seen]
    return np.array(order), np.concatenate([[0], np.cumsum(sizes)])


@pytest.mark.parametrize("seed", range(20))
def test_matches_naive_grouping(seed):
    rng = np.random.default_rng(seed)
    qid = rng.integers(0, rng.integers(1, 8), size=rng.integers(1, 40)).tolist()
    groups = make_groups(qid)
    order, ptr = naive_groups(qid)
    np.testing.assert_array_equal(groups.group_ptr, ptr)
    sorted_rows = np.arange(len(qid)) if groups.order is None else groups.order
    np.testing.assert_array_equal(sorted_rows, order)
    x = rng.normal(size=len(qid))
    np.testing.assert_array_equal(groups.unsort(groups.sort(x)), x)


def test_contiguous_non_monotonic_ids_need_no_sort():
    groups = make_groups([5, 5, 2, 2, 2, 9])
    assert groups.is_sorted
    np.testing.assert_array_equal(groups.group_ptr, [0, 2, 5, 6])


def test_unsorted_rows_are_sorted_stably():
    groups = make_groups([1, 0, 1, 0])
    np.testing.assert_array_equal(groups.order, [0, 2, 1, 3])
    np.testing.assert_array_equal(groups.group_ptr, [0, 2, 4])


@pytest.mark.parametrize(
    "qid",
    [
        ["a", "b", "a"],
        pd.Series(["a", "b", "a"], dtype="category"),
        pd.Series(pd.Categorical(["a", "b", "a"], categories=["b", "a"])),
        np.array([3.0, 7.0, 3.0]),
        np.array(["2020-01-01", "2020-01-02", "2020-01-01"], dtype="datetime64[ns]"),
    ],
)
def test_qid_types(qid):
    groups = make_groups(qid)
    np.testing.assert_array_equal(groups.group_ptr, [0, 2, 3])
    np.testing.assert_array_equal(groups.order, [0, 2, 1])


@pytest.mark.parametrize(
    "qid, match",
    [
        (None, "qid is required"),
        ([1.0, np.nan], "NaN"),
        (np.array(["a", None], dtype=object), "missing"),
        (pd.Series(["a", None], dtype="category"), "missing"),
        # NaT was coded -1 and read as a query: a crash, or the row joining another query.
        (np.array(["2020-01-01", "NaT"], dtype="datetime64[ns]"), "missing values \\(NaT\\)"),
        (pd.Series(pd.to_datetime(["2020-01-01", None])), "missing values \\(NaT\\)"),
        ([1, 2, 3], "3 entries but there are 2 rows"),
    ],
)
def test_bad_qid(qid, match):
    with pytest.raises(ValueError, match=match):
        make_groups(qid, 2)


def test_group_ptr_from_sizes():
    np.testing.assert_array_equal(group_ptr_from_sizes([2, 0, 3]), [0, 2, 2, 5])
    with pytest.raises(ValueError):
        group_ptr_from_sizes([1, -1])


def test_split_qid():
    X = pd.DataFrame({"qid": [1, 1, 2], "f": [0.1, 0.2, 0.3]})
    X2, qid = split_qid(X)
    assert list(X2.columns) == ["f"]
    assert qid.tolist() == [1, 1, 2]
    with pytest.raises(ValueError, match="given twice"):
        split_qid(X, qid=[1, 1, 2])
    # No query ids at all: (X, None); the caller raises missing_qid_error.
    X4, qid4 = split_qid(X[["f"]])
    assert qid4 is None and list(X4.columns) == ["f"]
    assert split_qid(np.zeros((3, 1)))[1] is None
    X3, qid3 = split_qid(np.zeros((3, 1)), qid=[1, 2, 3])
    assert qid3 == [1, 2, 3]
    # qid_col=None: a column called qid is a feature.
    X5, qid5 = split_qid(X, qid_col=None)
    assert qid5 is None and list(X5.columns) == ["qid", "f"]


def test_missing_qid_error_says_how():
    msg = str(missing_qid_error(pd.DataFrame({"f": [0.1]}), "query"))
    assert "Missing query ids: X is a DataFrame without a 'query' column" in msg
    assert "enable_metadata_routing" in msg
    msg = str(missing_qid_error(np.zeros((1, 1)), where="eval_set[0]", qid_name="eval_qid[0]"))
    assert "eval_set[0] has no query column and no eval_qid[0] was given" in msg
    assert "pass eval_qid=[...] with one array per eval set" in msg and "routing" not in msg
