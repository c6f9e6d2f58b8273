"""Learning-to-rank datasets: SVMlight/LETOR loading and synthetic generators.

Every function returns ``X, y, qid``: one query id per row, never group
sizes, because scikit-learn's cross-validation slices per-row arrays only.
"""

from __future__ import annotations

import gzip
import numbers
import zlib
from pathlib import Path

import numpy as np

from ._click_simulator import pbm_propensities, simulate_clicks
from ._groups import group_ptr_from_sizes

__all__ = ["load_svmlight", "make_ranking", "make_stochasticrank_toy", "pbm_propensities", "simulate_clicks"]

# Above this fraction of non-zero entries ``dense=None`` densifies: a dense
# float64 array then costs at most about 2.5x the memory of CSR (8 bytes per
# cell against about 12 per stored value), and tree binning and most
# scikit-learn estimators are much faster on dense arrays.
_DENSE_THRESHOLD = 0.3


def _open_text(path):
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt")
    return open(path)


def _find_query_file(path):
    """LightGBM's companion group file: ``<path>.query`` or ``<stem>.query.gz``."""
    path = Path(path)
    candidates = [Path(str(path) + ".query")]
    if path.suffix == ".gz":
        stem = path.with_suffix("")
        candidates += [Path(str(stem) + ".query.gz"), Path(str(stem) + ".query")]
    else:
        candidates.append(Path(str(path) + ".query.gz"))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


#: What Python's gzip raises for a truncated file, or a plain one named ``.gz``.
_GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


def _broken_gzip(path, error):
    # Python's gzip and bz2 errors name neither the file nor the cause.
    kind, suffix = ("bzip2", ".bz2") if str(path).endswith(".bz2") else ("gzip", ".gz")
    return ValueError(
        f"{str(path)!r} is not a complete {kind} file (truncated, or not {kind}-compressed despite its {suffix} "
        f"suffix): {error}"
    )


def _read_group_sizes(query_path):
    try:
        with _open_text(query_path) as f:
            tokens = f.read().split()
    except _GZIP_ERRORS as error:
        raise _broken_gzip(query_path, error) from None
    try:
        sizes = np.array([int(t) for t in tokens], dtype=np.int64)
    except ValueError:
        raise ValueError(
            f"query file {query_path} must hold one integer group size per line."
        ) from None
    if (sizes <= 0).any():
        raise ValueError(f"query file {query_path} holds a group size <= 0; sizes must be positive.")
    return sizes


def load_svmlight(path, *, query_path=None, dtype=np.float64, n_features=None, dense=None, zero_based="auto"):
    """Load a learning-to-rank file in SVMlight/LETOR format.

    Two layouts are understood:

    * LETOR/SVMlight with a ``qid:`` field on every line
      (``2 qid:10002 1:0.03 2:0.5 ... # docid``), as in MQ2008, MSLR-WEB
      and Yahoo! LTR; the ids are returned as they are in the file
      (contiguous but unsorted ids, as in MQ2008's Fold4 and Fold5 training
      files, stay intact and in file order).
    * LightGBM's layout: no ``qid:`` in the data file, group sizes (one
      integer per line, in row order) in a companion ``.query`` file,
      given as ``query_path`` or found next to the data file as
      ``<path>.query`` or ``<stem>.query.gz`` (``rank.train.gz`` ->
      ``rank.train.query.gz``). Queries are then numbered ``0, 1, ...``.
      LightGBM itself reads feature ids as zero-based: pass
      ``zero_based=True`` for the columns LightGBM sees.

    Parameters
    ----------
    path : str or path-like
        Data file, plain or gzip-compressed (``.gz``).
    query_path : str or path-like, default=None
        Group-size file for data without ``qid:`` (found automatically when
        it sits next to the data file). If the data file has ``qid:`` too,
        both must describe the same groups, else a ``ValueError``.
    dtype : numpy dtype, default=np.float64
        Dtype of ``X``.
    n_features : int, default=None
        Number of feature columns; pass the training file's value when
        loading a test file whose highest feature index may be smaller.
    dense : bool or None, default=None
        ``True``: ``X`` is a dense ndarray; ``False``: a
        ``scipy.sparse.csr_matrix``; ``None``: dense when more than 30% of
        the entries are non-zero (LETOR features are dense, web-scale
        feature sets often are not).
    zero_based : bool or "auto", default="auto"
        Whether feature ids start at 0 (``True``: scikit-learn's
        ``dump_svmlight_file`` writes them so) or at 1 (``False``: LETOR,
        MSLR-WEB, Yahoo! LTR). ``"auto"`` decides per file: a file without
        a feature ``0`` is read as one-based. Give training and test files
        the same explicit value: a zero-based test file whose feature 0 is
        0 on every row (and so left out) would otherwise be read one-based,
        its columns shifted by one against the training file's.

    Returns
    -------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of float64, shape (n_samples,)
        Relevance labels.
    qid : ndarray of int64, shape (n_samples,)
        Query id of every row.

    Notes
    -----
    With ``zero_based="auto"`` feature indices follow scikit-learn's rule:
    files without a feature ``0`` are read as one-based, so column ``j`` of
    ``X`` is feature ``j + 1`` of a LETOR file.

    Examples
    --------
    >>> from rankkit.datasets import load_svmlight
    >>> X, y, qid = load_svmlight("MQ2008/Fold1/train.txt.gz")  # doctest: +SKIP
    >>> X.shape, len(set(qid))  # doctest: +SKIP
    ((9630, 46), 471)
    """
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}.")
    if dense not in (None, True, False):
        raise ValueError(f"dense must be True, False or None (automatic), got {dense!r}.")
    if n_features is not None and (
        isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral) or n_features <= 0
    ):
        raise ValueError(f"n_features must be a positive int or None, got {n_features!r}.")
    if zero_based not in (True, False, "auto"):
        raise ValueError(f'zero_based must be True, False or "auto", got {zero_based!r}.')

    try:
        X, y, qid = load_svmlight_file(
            str(path), n_features=n_features, dtype=dtype, query_id=True, zero_based=zero_based
        )
    except _GZIP_ERRORS as error:
        raise _broken_gzip(path, error) from None
    except OSError as error:
        if str(path).endswith(".bz2") and "Invalid data stream" in str(error):  # bz2's word for it
            raise _broken_gzip(path, error) from None
        raise
    except (ValueError, OverflowError) as error:
        if zero_based is False and "index 0" in str(error):
            raise ValueError(
                f"{str(path)!r} has a feature id 0, so its ids are zero-based: pass zero_based=True "
                "(to this file and to the files read with it)."
            ) from None
        if n_features is not None and "n_features was set" in str(error):
            raise ValueError(
                f"n_features={n_features} but {str(path)!r} has a higher feature id: pass n_features=None, "
                f"or at least the number of features of the widest file ({error})."
            ) from None
        # scikit-learn's parser names neither the file nor the field (qid:q1 is "invalid literal for int()").
        raise ValueError(
            f"{str(path)!r} is not an SVMlight/LETOR file rankkit can read ('<label> qid:<integer> <id>:<value> "
            f"... # comment' per line): {error}"
        ) from None
    n_samples = X.shape[0]
    if n_samples == 0:
        raise ValueError(f"{str(path)!r} has no data lines (only comments or nothing).")
    # scikit-learn returns one qid per line that has a qid: field.
    if 0 < qid.shape[0] < n_samples:
        raise ValueError(
            f"{str(path)!r} has a qid: field on {qid.shape[0]} of its {n_samples} lines: give every line "
            "one, or none (with group sizes in a query file)."
        )
    has_qid = qid.shape[0] == n_samples

    if query_path is not None:
        query_path = Path(query_path)
        if not query_path.is_file():
            raise FileNotFoundError(f"query_path: no such file {str(query_path)!r}.")
    elif not has_qid:
        query_path = _find_query_file(path)

    if query_path is not None:
        sizes = _read_group_sizes(query_path)
        if sizes.sum() != n_samples:
            raise ValueError(
                f"query file {str(query_path)!r} has group sizes summing to {int(sizes.sum())} "
                f"but {str(path)!r} has {n_samples} rows; the two files do not belong together."
            )
        file_qid = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
        if has_qid:
            bounds = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True])
            # The same groups: the runs of equal ids are the sizes, and no id comes back later.
            if not np.array_equal(np.diff(bounds), sizes) or np.unique(qid).shape[0] != sizes.shape[0]:
                raise ValueError(
                    f"{str(path)!r} has qid: fields that disagree with the group sizes in "
                    f"query_path={str(query_path)!r}; pass only one source of query ids."
                )
            qid = np.asarray(qid, dtype=np.int64)
        else:
            qid = file_qid
    elif not has_qid:
        raise ValueError(
            f"{str(path)!r} has no qid: field and no query file was found next to it "
            "(tried <path>.query and <stem>.query.gz); pass query_path= with the group sizes."
        )
    else:
        qid = np.asarray(qid, dtype=np.int64)

    y = np.asarray(y, dtype=np.float64)
    if dense is None:
        cells = X.shape[0] * X.shape[1]
        dense = cells > 0 and X.count_nonzero() / cells > _DENSE_THRESHOLD
    if dense:
        X = X.toarray()
    return X, y, qid


def make_ranking(
    n_queries=200,
    *,
    n_features=20,
    min_docs=5,
    max_docs=60,
    n_relevance_levels=5,
    n_informative=None,
    noise=1.0,
    duplicate_fraction=0.1,
    empty_query_fraction=0.1,
    random_state=None,
    as_frame=False,
):
    r"""Generate a synthetic learning-to-rank dataset that looks like real data.

    Each query draws a list length uniformly in ``[min_docs, max_docs]``
    and a difficulty ``c_q ~ N(0, 1)`` that shifts the relevance of all its
    documents (some queries have many relevant documents, some none, as in
    web search). Features are ``N(0, 1)``, like LETOR's query-normalised
    features. A document's latent relevance is a nonlinear function of the
    first ``n_informative`` features ``x_j``, with weights
    ``w_j ~ U(0.5, 1.5)``:

    .. math::

        s = \sum_j w_j \tanh(x_j) + x_0 x_1 + \cos(2 x_2)
            + c_q + \text{noise} \cdot \varepsilon, \quad \varepsilon \sim N(0, 1)

    (terms whose feature does not exist are dropped). Graded labels
    ``0 .. n_relevance_levels - 1`` count how many thresholds ``s``
    exceeds; the thresholds are quantiles of ``s`` chosen so that each
    grade is about half as frequent as the one below (about 52% of
    documents are irrelevant, 3% have the top grade with five levels), the
    skew of LETOR and MSLR labels.

    With the defaults (about 6,000 documents), NDCG@10 on 50 held-out
    queries (queries without relevant documents excluded) is about 0.75 for
    a linear regression, 0.83 for pointwise gradient-boosted trees and 0.34
    for a random order: there is signal, and it is not linear.

    Then ``duplicate_fraction`` of the documents of each query replace their
    features by a copy of another document of the same query (near-duplicate
    pages: identical features, possibly different labels, hence tied scores
    for any model), and ``empty_query_fraction`` of the queries get only
    zero labels (MQ2008 has 28% such queries).

    Parameters
    ----------
    n_queries : int, default=200
    n_features : int, default=20
        Total number of features; the remaining ones are pure noise.
    min_docs, max_docs : int, default=5, 60
        Range of documents per query (inclusive).
    n_relevance_levels : int, default=5
        Number of label grades (at least 2).
    n_informative : int or None, default=None
        Number of features the relevance depends on (``<= n_features``);
        ``None`` means ``min(5, n_features)``.
    noise : float, default=1.0
        Standard deviation of the label noise ``\varepsilon``.
    duplicate_fraction : float in [0, 1), default=0.1
    empty_query_fraction : float in [0, 1], default=0.1
    random_state : int, RandomState instance or None, default=None
        Seed; the same seed gives the same data.
    as_frame : bool, default=False
        If True, ``X`` is a DataFrame with feature columns ``f0 ..`` and a
        leading ``"qid"`` column (so it can be passed to rankkit rankers,
        scorers and splitters without ``qid=``), ``y`` a Series
        ``"relevance"`` and ``qid`` a Series. Pass either the frame with its
        column or ``qid=``, not both.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features) or DataFrame
    y : ndarray of float64 of shape (n_samples,) or Series
    qid : ndarray of int64 of shape (n_samples,) or Series
        Queries ``0 .. n_queries - 1``, rows of a query contiguous.

    Examples
    --------
    >>> from rankkit.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=50, random_state=0)
    >>> X.shape[0] == qid.shape[0] == y.shape[0]
    True
    >>> int(y.min()), int(y.max())
    (0, 4)
    """
    from sklearn.utils import check_random_state

    def _int(name, value, low):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}.")
        return int(value)

    def _frac(name, value, high_open):
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 <= value
        ok = ok and (value < 1 if high_open else value <= 1)
        if not ok:
            rng_text = "[0, 1)" if high_open else "[0, 1]"
            raise ValueError(f"{name} must be a float in {rng_text}, got {value!r}.")
        return float(value)

    n_queries = _int("n_queries", n_queries, 1)
    n_features = _int("n_features", n_features, 1)
    min_docs = _int("min_docs", min_docs, 1)
    max_docs = _int("max_docs", max_docs, 1)
    if max_docs < min_docs:
        raise ValueError(f"max_docs ({max_docs}) must be >= min_docs ({min_docs}).")
    n_levels = _int("n_relevance_levels", n_relevance_levels, 2)
    if n_informative is None:
        n_informative = min(5, n_features)
    n_informative = _int("n_informative", n_informative, 1)
    if n_informative > n_features:
        raise ValueError(
            f"n_informative ({n_informative}) must be <= n_features ({n_features})."
        )
    if not isinstance(noise, numbers.Real) or isinstance(noise, bool) or not 0 <= noise < np.inf:
        raise ValueError(f"noise must be a finite float >= 0, got {noise!r}.")
    duplicate_fraction = _frac("duplicate_fraction", duplicate_fraction, True)
    empty_query_fraction = _frac("empty_query_fraction", empty_query_fraction, False)
    if not isinstance(as_frame, (bool, np.bool_)):
        raise ValueError(f"as_frame must be True or False, got {as_frame!r}.")

    try:
        rng = check_random_state(random_state)
    except ValueError as error:  # numpy's and scikit-learn's messages name no parameter
        raise ValueError(
            f"random_state must be an int in [0, 2**32 - 1], a numpy RandomState or None, got {random_state!r} "
            f"({error})."
        ) from None
    sizes = rng.randint(min_docs, max_docs + 1, size=n_queries).astype(np.int64)
    n = int(sizes.sum())
    ptr = group_ptr_from_sizes(sizes)
    qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)

    offset = rng.standard_normal(n_queries)
    X = rng.standard_normal((n, n_features))
    # Near-duplicates: some documents take the features of another document
    # of the same query, so any model must give them tied scores; their
    # labels still get independent noise, as judged duplicates do.
    if duplicate_fraction > 0:
        n_dup = np.floor(duplicate_fraction * sizes + rng.uniform(size=n_queries)).astype(np.int64)
        for q in np.flatnonzero((n_dup > 0) & (sizes > 1)):
            perm = ptr[q] + rng.permutation(sizes[q])
            X[perm[: min(n_dup[q], sizes[q] - 1)]] = X[perm[-1]]

    u = X[:, :n_informative]
    weights = rng.uniform(0.5, 1.5, size=n_informative)
    latent = np.tanh(u) @ weights
    if n_informative >= 2:
        latent += u[:, 0] * u[:, 1]
    if n_informative >= 3:
        latent += np.cos(2.0 * u[:, 2])
    latent += offset[qid] + noise * rng.standard_normal(n)

    # Grade g is about half as frequent as grade g - 1: cut the latent at
    # the cumulative shares of grades 0 .. n_levels - 2.
    shares = 0.5 ** np.arange(n_levels)
    thresholds = np.quantile(latent, np.cumsum(shares / shares.sum())[:-1])
    y = np.searchsorted(thresholds, latent, side="left").astype(np.float64)

    n_empty = int(round(empty_query_fraction * n_queries))
    if n_empty:
        empty = rng.choice(n_queries, size=n_empty, replace=False)
        y[np.isin(qid, empty)] = 0.0

    if as_frame:
        import pandas as pd

        frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)])
        frame.insert(0, "qid", qid)
        return frame, pd.Series(y, name="relevance"), pd.Series(qid, name="qid")
    return X, y, qid


def make_stochasticrank_toy():
    r"""The two-query dataset of StochasticRank's Table 1 (Ustimenko & Prokhorenkova, 2020).

    Three one-hot features ``x1, x2, x3`` (columns 0, 1, 2) identify three
    "documents"; a model can only order them, the same way in both queries:

    ========  =========================  =================
    query      documents (feature)         labels
    ========  =========================  =================
    0          x1, x2, x3                  3, 2, 1
    1          x3, x1                      3, 2
    ========  =========================  =================

    Mean NDCG@3 with exponential gain :math:`2^r - 1`:

    * order ``x1 > x2 > x3``: query 0 is perfect (1.0), query 1 scores
      :math:`(3 + 7/\log_2 3) / (7 + 3/\log_2 3) = 0.834`; mean **0.917**,
      the global optimum;
    * order ``x1 > x3 > x2``: query 0 scores 0.972, query 1 0.834; mean
      **0.903**, a local optimum: from it, moving x3 above x1 or x2 above x3
      alone lowers the mean. Pairwise, smooth surrogates (LambdaMART,
      LambdaLoss, SoftRank) stop at 0.903 in the paper; StochasticRank
      reaches 0.917 (1000 iterations, learning rate 0.1, depth 3).

    Returns
    -------
    X : ndarray of float64, shape (5, 3)
    y : ndarray of float64, shape (5,)
    qid : ndarray of int64, shape (5,)

    References
    ----------
    A. Ustimenko, L. Prokhorenkova. StochasticRank: Global Optimization of
    Scale-Free Discrete Functions. ICML 2020, Table 1.

    Examples
    --------
    >>> from rankkit.datasets import make_stochasticrank_toy
    >>> X, y, qid = make_stochasticrank_toy()
    >>> X.shape, y.tolist(), qid.tolist()
    ((5, 3), [3.0, 2.0, 1.0, 3.0, 2.0], [0, 0, 0, 1, 1])
    """
    eye = np.eye(3)
    X = np.vstack([eye[0], eye[1], eye[2], eye[2], eye[0]])
    y = np.array([3.0, 2.0, 1.0, 3.0, 2.0])
    qid = np.array([0, 0, 0, 1, 1], dtype=np.int64)
    return X, y, qid
