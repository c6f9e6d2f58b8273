"""Query-aware cross-validation: a query is never cut across train and test.

Query ids reach a splitter in one of three ways, tried in this order:

1. ``groups=`` passed to ``split`` (scikit-learn's usual group argument);
2. ``qid=`` passed to ``split``; with
   ``sklearn.set_config(enable_metadata_routing=True)`` the splitters request
   ``qid`` (and ``groups``) by default, so
   ``GridSearchCV(est, cv=QueryKFold()).fit(X, y, qid=qid)`` routes it here;
3. the ``qid_col`` column of a DataFrame ``X`` (default ``"qid"``), which
   needs no routing at all.

Giving more than one of them is an error, and so is giving none: rows are
never silently treated as one query or as independent documents.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.model_selection import BaseCrossValidator, ShuffleSplit
from sklearn.utils import check_random_state
from sklearn.utils import _safe_indexing

from ._groups import is_dataframe, make_groups, qid_column_advice, qid_from_sizes

__all__ = ["QueryKFold", "QueryShuffleSplit", "query_train_test_split", "qid_from_group"]


def _resolve_groups(X, groups, qid, qid_col, n_samples):
    """One :class:`rankkit._groups.QueryGroups` from ``groups``, ``qid`` or a column."""
    has_column = is_dataframe(X) and qid_col is not None and qid_col in X.columns
    given = [name for name, v in (("groups", groups), ("qid", qid)) if v is not None]
    if has_column:
        given.append(f"the '{qid_col}' column of X")
    if len(given) > 1:
        raise ValueError(
            f"Query ids given more than once ({', '.join(given)}); pass exactly one of "
            "groups=, qid= or a DataFrame query column."
        )
    if not given:
        # cross_validate has no fit: it takes params={'qid': qid}, and refuses qid=.
        raise ValueError(
            "Missing query ids: a query-aware splitter needs one query id per row. Pass "
            "groups=qid or qid=qid to split() (with metadata routing, GridSearchCV(...).fit(X, y, qid=qid) "
            "or cross_validate(..., params={'qid': qid}) routes it), or "
            f"{qid_column_advice(qid_col, 'X')}."
        )
    if has_column:
        values, name = X[qid_col], qid_col
    elif groups is not None:
        values, name = groups, "groups"
    else:
        values, name = qid, "qid"
    return make_groups(values, n_samples, name=name)


def _n_samples(X):
    if hasattr(X, "shape") and len(X.shape) >= 1:
        return int(X.shape[0])
    return len(X)


def _check_n_splits(n_splits, minimum=2):
    if isinstance(n_splits, bool) or not isinstance(n_splits, numbers.Integral) or n_splits < minimum:
        raise ValueError(f"n_splits must be an int >= {minimum}, got {n_splits!r}.")
    return int(n_splits)


def _query_split_sizes(n_queries, test_size, train_size, default_test_size):
    """``(n_train, n_test)`` in queries, by scikit-learn's rules (a float is a
    fraction, an int a count), with errors that say the count is of queries:
    scikit-learn's own speaks of "samples", and a query splitter draws
    queries, never rows."""
    from sklearn.model_selection._split import _validate_shuffle_split

    try:
        return _validate_shuffle_split(n_queries, test_size, train_size, default_test_size=default_test_size)
    except ValueError as error:
        raise ValueError(
            f"{error} (A query splitter draws whole queries: the samples here are the data's {n_queries} "
            "queries, and an int test_size or train_size is a number of queries.)"
        ) from None


class QueryKFold(BaseCrossValidator):
    """K-fold cross-validation over whole queries.

    Every query lands in exactly one test fold; folds are balanced by number
    of **documents**: queries are laid out in order (their order of first
    appearance, or a random order with ``shuffle=True``) and the sequence is
    cut where the running document count crosses ``i * n_samples /
    n_splits``; a cut falls on a query boundary, so a fold's size differs
    from ``n_samples / n_splits`` by at most about two query lengths (and
    every fold holds at least one query). A query longer than a fold starts
    a fold when the queries before it come nearer the previous fold's size
    without it, and the folds after it share the remaining documents evenly
    (the folds before it are cut at the first targets: a long query late in
    the order leaves them uneven).
    Balancing documents rather than queries keeps the training cost and the
    metric's variance comparable across folds when list lengths vary.

    Query ids come from ``groups=``, ``qid=`` (requested through metadata
    routing by default) or the ``qid_col`` column of a DataFrame ``X``;
    rows may be in any order.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2 and at most the number of queries.
    shuffle : bool, default=False
        Shuffle the order of queries before cutting the folds.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffle; only with ``shuffle=True``. An int gives the
        same folds on every call.
    qid_col : str or None, default="qid"
        Query column of a DataFrame ``X``; ``None`` never looks for one.

    Examples
    --------
    >>> import numpy as np
    >>> from rankkit.model_selection import QueryKFold
    >>> X = np.zeros((6, 1)); qid = np.array([1, 1, 2, 2, 3, 3])
    >>> [test.tolist() for _, test in QueryKFold(n_splits=3).split(X, qid=qid)]
    [[0, 1], [2, 3], [4, 5]]
    """

    __metadata_request__split = {"groups": True, "qid": True}

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None, qid_col="qid"):
        self.n_splits = n_splits
        self.shuffle = shuffle
        self.random_state = random_state
        self.qid_col = qid_col

    def split(self, X, y=None, groups=None, qid=None):
        """Generate ``(train, test)`` row indices, each sorted ascending.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
            Ignored.
        groups, qid : array-like of shape (n_samples,), default=None
            Query id of every row (give one of them, or a query column).

        Yields
        ------
        train, test : ndarray of int64
        """
        n_splits = _check_n_splits(self.n_splits)
        if not isinstance(self.shuffle, bool):
            raise TypeError(f"shuffle must be True or False, got {self.shuffle!r}.")
        if not self.shuffle and self.random_state is not None:
            raise ValueError(
                "random_state has no effect with shuffle=False; leave it None or set shuffle=True."
            )
        n_samples = _n_samples(X)
        qg = _resolve_groups(X, groups, qid, self.qid_col, n_samples)
        n_queries = qg.n_queries
        if n_splits > n_queries:
            raise ValueError(
                f"n_splits={n_splits} is larger than the number of queries ({n_queries}); "
                "every fold needs at least one query. Lower n_splits."
            )
        sizes = np.bincount(qg.codes, minlength=n_queries)
        order = np.arange(n_queries)
        if self.shuffle:
            order = check_random_state(self.random_state).permutation(n_queries)
        cum = np.cumsum(sizes[order])
        # Cut after the query whose running count first reaches the target
        # i * n / k, keeping at least one query per fold. A query longer than
        # a fold can carry the count past later targets: the folds after it
        # then share the rows that remain evenly (targets from where it ends,
        # for every later fold: back on the first targets they would not),
        # rather than taking one query each and leaving the rest to the last.
        # Such a query starts a fold when the fold it would end is nearer its
        # target without it: cut before it, not stuffed with it (10 / 50 / 20
        # documents, not 60 / 10 / 10).
        cuts = np.empty(n_splits - 1, dtype=np.int64)
        done = 0  # queries before the fold being cut
        long_query = sizes[order] > n_samples / n_splits
        even_shares = False  # once past a target, every later fold takes an even share of what remains
        for i in range(n_splits - 1):
            rows = cum[done - 1] if done else 0
            target = (i + 1) * (n_samples / n_splits)
            if even_shares or rows >= target:
                even_shares = True
                target = rows + (n_samples - rows) / (n_splits - i)
            cut = int(np.searchsorted(cum, target, side="left")) + 1
            if done < cut - 1 < n_queries and long_query[cut - 1] and target - cum[cut - 2] < cum[cut - 1] - target:
                cut -= 1
            cuts[i] = done = min(max(cut, done + 1), n_queries - (n_splits - 1 - i))
        fold_of_query = np.empty(n_queries, dtype=np.int64)
        fold_of_query[order] = np.searchsorted(cuts, np.arange(n_queries), side="right")
        fold_of_row = fold_of_query[qg.codes]
        for fold in range(n_splits):
            test = fold_of_row == fold
            yield np.flatnonzero(~test), np.flatnonzero(test)

    def get_n_splits(self, X=None, y=None, groups=None, qid=None):
        """Number of folds, ``n_splits``."""
        return _check_n_splits(self.n_splits)

    def _iter_test_indices(self, X=None, y=None, groups=None):  # pragma: no cover
        # split() is overridden; BaseCrossValidator only requires this name.
        raise NotImplementedError


class QueryShuffleSplit(BaseCrossValidator):
    """Random train/test splits over whole queries.

    Each split draws ``test_size`` of the queries (not of the rows) for
    testing and ``train_size`` of them for training, like scikit-learn's
    ``GroupShuffleSplit``. Query ids are taken as in :class:`QueryKFold`.

    Parameters
    ----------
    n_splits : int, default=5
        Number of random splits, at least 1.
    test_size : float, int or None, default=None
        Fraction (float in (0, 1)) or number (int) of queries in the test set;
        ``None``: the complement of ``train_size``, or 0.2 if ``train_size``
        is None too (as ``GroupShuffleSplit``).
    train_size : float, int or None, default=None
        Same for the training set; ``None``: the complement of the test set.
    random_state : int, RandomState instance or None, default=None
    qid_col : str or None, default="qid"

    Examples
    --------
    >>> import numpy as np
    >>> from rankkit.model_selection import QueryShuffleSplit
    >>> qid = np.repeat(np.arange(10), 3)
    >>> train, test = next(QueryShuffleSplit(n_splits=1, random_state=0).split(qid, qid=qid))
    >>> len(test), len(set(qid[test]) & set(qid[train]))
    (6, 0)
    """

    __metadata_request__split = {"groups": True, "qid": True}

    def __init__(self, n_splits=5, *, test_size=None, train_size=None, random_state=None, qid_col="qid"):
        self.n_splits = n_splits
        self.test_size = test_size
        self.train_size = train_size
        self.random_state = random_state
        self.qid_col = qid_col

    def split(self, X, y=None, groups=None, qid=None):
        """Generate ``(train, test)`` row indices, each sorted ascending."""
        n_splits = _check_n_splits(self.n_splits, minimum=1)
        qg = _resolve_groups(X, groups, qid, self.qid_col, _n_samples(X))
        # A test_size default of 0.2 instead of None made train_size=0.9 alone an error (0.9 + 0.2 > 1) and
        # train_size=0.5 alone leave 30% of the queries unused: None is the complement, as in scikit-learn.
        n_train, n_test = _query_split_sizes(qg.n_queries, self.test_size, self.train_size, 0.2)
        # ShuffleSplit draws the queries, so a seed gives the splits it always gave.
        inner = ShuffleSplit(n_splits, test_size=n_test, train_size=n_train, random_state=self.random_state)
        for q_train, q_test in inner.split(np.empty((qg.n_queries, 1))):
            yield np.flatnonzero(np.isin(qg.codes, q_train)), np.flatnonzero(np.isin(qg.codes, q_test))

    def get_n_splits(self, X=None, y=None, groups=None, qid=None):
        """Number of splits, ``n_splits``."""
        return _check_n_splits(self.n_splits, minimum=1)

    def _iter_test_indices(self, X=None, y=None, groups=None):  # pragma: no cover
        raise NotImplementedError


def query_train_test_split(
    *arrays, qid=None, test_size=None, train_size=None, random_state=None, shuffle=True, qid_col="qid"
):
    """Split arrays into train and test subsets of whole queries.

    Like :func:`sklearn.model_selection.train_test_split`, with sizes counted
    in queries. Rows keep their original relative order inside each subset,
    so queries that were contiguous stay contiguous.

    Parameters
    ----------
    *arrays : sequence of indexables with the same number of rows
        Arrays, sparse matrices, lists or DataFrames.
    qid : array-like of shape (n_samples,), default=None
        Query id of every row; if None, taken from the ``qid_col`` column of
        the first array, which must then be a DataFrame.
    test_size : float, int or None, default=None
        Fraction or number of queries in the test set; ``None``: the
        complement of ``train_size``, or 0.25 if ``train_size`` is None too
        (as ``train_test_split``).
    train_size : float, int or None, default=None
        Fraction or number of queries in the training set (default: the rest).
    random_state : int, RandomState instance or None, default=None
    shuffle : bool, default=True
        If False, the training set is the first queries in order of first
        appearance and the test set the queries right after them: the last
        ones, unless ``train_size`` leaves some queries out of both.
    qid_col : str, default="qid"

    Returns
    -------
    splitting : list
        ``[a_train, a_test, b_train, b_test, ..., qid_train, qid_test]``.

    Examples
    --------
    >>> import numpy as np
    >>> from rankkit.model_selection import query_train_test_split
    >>> X = np.arange(8).reshape(4, 2); y = np.array([1, 0, 2, 0]); qid = np.array([7, 7, 5, 5])
    >>> X_tr, X_te, y_tr, y_te, q_tr, q_te = query_train_test_split(
    ...     X, y, qid=qid, test_size=0.5, shuffle=False)
    >>> q_tr.tolist(), q_te.tolist()
    ([7, 7], [5, 5])
    """
    if not arrays:
        raise ValueError("query_train_test_split needs at least one array to split.")
    n_samples = _n_samples(arrays[0])
    for a in arrays[1:]:
        if _n_samples(a) != n_samples:
            raise ValueError(
                f"All arrays must have the same number of rows; got {n_samples} and {_n_samples(a)}."
            )
    first = arrays[0]
    has_column = is_dataframe(first) and qid_col is not None and qid_col in first.columns
    if qid is None:
        if not has_column:
            raise ValueError(
                "Missing query ids: pass qid= (one id per row), or "
                f"{qid_column_advice(qid_col, 'as the first array')}."
            )
        qid = first[qid_col]
    elif has_column:
        # qid= used to win silently: the column's queries, which the arrays keep, could be cut in two.
        raise ValueError(
            f"Query ids given more than once (qid= and the '{qid_col}' column of the first array); pass "
            "exactly one of them (qid_col=None ignores the column)."
        )
    qg = make_groups(qid, n_samples)
    n_queries = qg.n_queries
    n_train, n_test = _query_split_sizes(n_queries, test_size, train_size, default_test_size=0.25)
    if shuffle:
        perm = check_random_state(random_state).permutation(n_queries)
        q_test, q_train = perm[:n_test], perm[n_test : n_test + n_train]
    else:
        if random_state is not None:
            raise ValueError("random_state has no effect with shuffle=False; leave it None.")
        q_train, q_test = np.arange(n_train), np.arange(n_train, n_train + n_test)
    train = np.flatnonzero(np.isin(qg.codes, q_train))
    test = np.flatnonzero(np.isin(qg.codes, q_test))
    out = []
    for a in (*arrays, qid):
        out += [_safe_indexing(a, train), _safe_indexing(a, test)]
    return out


def qid_from_group(group):
    """Per-row query ids from group sizes (LightGBM's and XGBoost's ``group``).

    Query ``i`` is the next ``group[i]`` rows: the ids are ``i`` repeated
    ``group[i]`` times, so a size of 0 leaves its id unused. Per-row ids are
    what cross-validation needs: scikit-learn splits arrays with one entry per
    row, never group sizes, so a ``group`` array cannot follow the rows into
    the folds of ``GridSearchCV`` or ``cross_validate``, while ``qid=`` can.

    Parameters
    ----------
    group : array-like of int
        Number of rows of each query, in row order (whole numbers >= 0).

    Returns
    -------
    qid : ndarray of int64, shape (sum(group),)

    Examples
    --------
    >>> from rankkit.model_selection import qid_from_group
    >>> qid_from_group([2, 3, 1]).tolist()
    [0, 0, 1, 1, 1, 2]
    """
    return qid_from_sizes(group)
