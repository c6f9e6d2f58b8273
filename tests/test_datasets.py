import gzip
import math
import re

import numpy as np
import pytest
import scipy.sparse as sp

from rankkit.datasets import load_svmlight, make_ranking, make_stochasticrank_toy

# ---------------------------------------------------------------------------
# make_stochasticrank_toy


def _ndcg_exp_gain(labels_in_rank_order, k):
    """NDCG@k with gain 2^r - 1 and discount 1/log2(i + 1), written out by hand."""
    def dcg(labels):
        return sum((2.0**r - 1.0) / math.log2(i + 2) for i, r in enumerate(labels[:k]))

    return dcg(labels_in_rank_order) / dcg(sorted(labels_in_rank_order, reverse=True))


def _labels_in_order(X, y, qid, feature_order):
    """Per query, labels ranked by the position of each document's one-hot feature."""
    rank_of_feature = {f: i for i, f in enumerate(feature_order)}
    out = []
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        feats = X[rows].argmax(axis=1)
        out.append([y[r] for r in sorted(rows, key=lambda r: rank_of_feature[X[r].argmax()])])
        assert len(set(feats)) == len(feats)
    return out


def test_stochasticrank_toy_layout():
    X, y, qid = make_stochasticrank_toy()
    assert X.shape == (5, 3) and X.dtype == np.float64
    assert qid.dtype == np.int64 and y.dtype == np.float64
    # One-hot rows: every document is exactly one of x1, x2, x3.
    assert np.array_equal(X.sum(axis=1), np.ones(5))
    q0 = qid == qid[0]
    # Query 0: x1, x2, x3 with labels 3, 2, 1; query 1: x3 -> 3, x1 -> 2.
    assert dict(zip(X[q0].argmax(axis=1), y[q0])) == {0: 3.0, 1: 2.0, 2: 1.0}
    assert dict(zip(X[~q0].argmax(axis=1), y[~q0])) == {2: 3.0, 0: 2.0}


@pytest.mark.parametrize(
    "order, expected",
    [((0, 1, 2), 0.917), ((0, 2, 1), 0.903)],
    ids=["global-x1>x2>x3", "local-x1>x3>x2"],
)
def test_stochasticrank_toy_optima(order, expected):
    X, y, qid = make_stochasticrank_toy()
    per_query = [_ndcg_exp_gain(labels, 3) for labels in _labels_in_order(X, y, qid, order)]
    assert round(float(np.mean(per_query)), 3) == expected


def test_stochasticrank_toy_global_optimum_is_best_order():
    import itertools

    X, y, qid = make_stochasticrank_toy()
    values = {
        order: np.mean([_ndcg_exp_gain(lab, 3) for lab in _labels_in_order(X, y, qid, order)])
        for order in itertools.permutations(range(3))
    }
    assert max(values, key=values.get) == (0, 1, 2)
    assert round(values[(0, 1, 2)], 3) == 0.917


def test_stochasticrank_toy_agrees_with_rankkit_metric():
    metrics = pytest.importorskip("rankkit.metrics")
    X, y, qid = make_stochasticrank_toy()
    for weights, expected in (([3.0, 2.0, 1.0], 0.917), ([3.0, 1.0, 2.0], 0.903)):
        value = metrics.ndcg_score(y, X @ np.array(weights), qid=qid, k=3, gain="exp")
        assert round(value, 3) == expected


# ---------------------------------------------------------------------------
# make_ranking


def test_make_ranking_shapes_and_layout():
    X, y, qid = make_ranking(n_queries=40, n_features=7, min_docs=3, max_docs=9, random_state=0)
    n = X.shape[0]
    assert X.shape == (n, 7) and y.shape == (n,) and qid.shape == (n,)
    assert X.dtype == np.float64 and y.dtype == np.float64 and qid.dtype == np.int64
    # Queries 0..n_queries-1 in contiguous, increasing blocks.
    assert np.array_equal(np.unique(qid), np.arange(40))
    assert np.all(np.diff(qid) >= 0)
    sizes = np.bincount(qid)
    assert sizes.min() >= 3 and sizes.max() <= 9
    assert len(set(sizes.tolist())) > 1  # variable list lengths
    assert set(np.unique(y)) <= {0.0, 1.0, 2.0, 3.0, 4.0}


def test_make_ranking_is_deterministic():
    a = make_ranking(n_queries=30, random_state=7)
    b = make_ranking(n_queries=30, random_state=7)
    c = make_ranking(n_queries=30, random_state=8)
    for u, v in zip(a, b):
        assert np.array_equal(u, v)
    assert a[0].shape != c[0].shape or not np.array_equal(a[0], c[0])


def test_make_ranking_label_distribution_is_skewed():
    _, y, _ = make_ranking(n_queries=300, random_state=0)
    freq = np.bincount(y.astype(np.int64), minlength=5) / y.shape[0]
    # Most documents irrelevant, each grade rarer than the one below, the top rare.
    assert freq[0] > 0.45
    assert np.all(np.diff(freq) < 0)
    assert 0.005 < freq[4] < 0.08


def test_make_ranking_grades_count_thresholds_strictly_exceeded():
    # A grade counts the thresholds a latent relevance exceeds. When every
    # latent is equal (one document, or identical documents without label
    # noise) the thresholds, quantiles of the latents, equal them too: no
    # document exceeds any, so all are grade 0, not the top grade.
    for seed in range(5):
        _, y, _ = make_ranking(n_queries=1, min_docs=1, max_docs=1, empty_query_fraction=0.0, random_state=seed)
        assert y.tolist() == [0.0]
    _, y, _ = make_ranking(
        n_queries=1, min_docs=3, max_docs=3, noise=0.0, duplicate_fraction=0.9, empty_query_fraction=0.0,
        random_state=0,
    )
    assert y.tolist() == [0.0, 0.0, 0.0]


def test_make_ranking_relevance_levels_parameter():
    _, y, _ = make_ranking(n_queries=100, n_relevance_levels=3, random_state=0)
    assert set(np.unique(y)) == {0.0, 1.0, 2.0}


def test_make_ranking_has_duplicates_and_empty_queries():
    X, y, qid = make_ranking(
        n_queries=100, duplicate_fraction=0.2, empty_query_fraction=0.2, random_state=1
    )
    n_dup_rows, n_dup_with_other_label = 0, 0
    empty = 0
    for q in range(100):
        rows = np.flatnonzero(qid == q)
        _, inverse, counts = np.unique(X[rows], axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.ravel()
        n_dup_rows += int((counts[inverse] > 1).sum())
        for g in np.flatnonzero(counts > 1):
            labels = y[rows][inverse == g]
            n_dup_with_other_label += int(labels.min() != labels.max())
        empty += int(y[rows].max() == 0)
    assert n_dup_rows > 0.1 * X.shape[0]
    # Duplicated features do not force duplicated labels (ties must be resolved).
    assert n_dup_with_other_label > 0
    assert empty >= 20

    X0, _, qid0 = make_ranking(n_queries=50, duplicate_fraction=0.0, empty_query_fraction=0.0, random_state=1)
    for q in range(50):
        rows = X0[qid0 == q]
        assert np.unique(rows, axis=0).shape[0] == rows.shape[0]


def test_make_ranking_as_frame():
    pd = pytest.importorskip("pandas")
    X, y, qid = make_ranking(n_queries=10, n_features=4, random_state=0)
    F, ys, qs = make_ranking(n_queries=10, n_features=4, random_state=0, as_frame=True)
    assert isinstance(F, pd.DataFrame) and isinstance(ys, pd.Series) and isinstance(qs, pd.Series)
    assert list(F.columns) == ["qid", "f0", "f1", "f2", "f3"]
    assert np.array_equal(F.drop(columns="qid").to_numpy(), X)
    assert np.array_equal(F["qid"].to_numpy(), qid) and np.array_equal(qs.to_numpy(), qid)
    assert np.array_equal(ys.to_numpy(), y)
    for value in ("yes", 0, None):  # a frame from "yes", arrays from 0: refused as the other parameters are
        with pytest.raises(ValueError, match="as_frame must be True or False"):
            make_ranking(n_queries=10, as_frame=value)


def test_make_ranking_linear_score_beats_random():
    from sklearn.linear_model import Ridge

    metrics = pytest.importorskip("rankkit.metrics")
    X, y, qid = make_ranking(random_state=0)
    train = qid < 150
    test = ~train
    score = Ridge().fit(X[train], y[train]).predict(X[test])
    rng = np.random.default_rng(0)
    kw = dict(qid=qid[test], k=10, empty="exclude")
    linear = metrics.ndcg_score(y[test], score, **kw)
    random_mean = np.mean(
        [metrics.ndcg_score(y[test], rng.normal(size=score.shape[0]), **kw) for _ in range(20)]
    )
    # Measured: linear 0.75, random 0.37; a generator without learnable
    # signal would put both near the random level.
    assert linear > random_mean + 0.15


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_queries=0), "n_queries"),
        (dict(min_docs=10, max_docs=5), "max_docs"),
        (dict(n_informative=30), "n_informative"),
        (dict(n_relevance_levels=1), "n_relevance_levels"),
        (dict(duplicate_fraction=1.0), "duplicate_fraction"),
        (dict(empty_query_fraction=-0.1), "empty_query_fraction"),
        (dict(noise=-1.0), "noise"),
        # An infinite noise made every latent NaN: labels from NaN thresholds, silently.
        (dict(noise=float("inf")), "noise must be a finite float"),
        # numpy's messages named no parameter ("Seed must be between 0 and 2**32 - 1").
        (dict(random_state=-1), "random_state must be an int in"),
        (dict(random_state=np.random.default_rng(0)), "random_state must be an int in"),
    ],
)
def test_make_ranking_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_ranking(**kwargs)


# ---------------------------------------------------------------------------
# load_svmlight on small files written here


def _write(path, text, compress=False):
    if compress:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


LETOR_TEXT = (
    "2 qid:30 1:0.5 2:1.0 # doc a\n"
    "0 qid:30 1:0.1 3:0.2\n"
    "1 qid:7 2:0.3 3:0.4\n"
    "0 qid:7 1:0.9 2:0.9 3:0.9\n"
    "1 qid:12 1:0.2\n"
)


@pytest.mark.parametrize("compress", [False, True])
def test_load_letor_with_qid(tmp_path, compress):
    path = _write(tmp_path / ("t.txt.gz" if compress else "t.txt"), LETOR_TEXT, compress)
    X, y, qid = load_svmlight(path)
    assert isinstance(X, np.ndarray) and X.dtype == np.float64  # density 0.67: dense
    assert X.shape == (5, 3)
    assert np.allclose(X[0], [0.5, 1.0, 0.0]) and np.allclose(X[3], [0.9, 0.9, 0.9])
    assert y.tolist() == [2.0, 0.0, 1.0, 0.0, 1.0]
    # Non-monotonic ids come back as written.
    assert qid.dtype == np.int64 and qid.tolist() == [30, 30, 7, 7, 12]


def test_load_dense_switch(tmp_path):
    path = _write(tmp_path / "t.txt", LETOR_TEXT)
    Xs, _, _ = load_svmlight(path, dense=False)
    Xd, _, _ = load_svmlight(path, dense=True)
    assert sp.issparse(Xs) and Xs.format == "csr"
    assert np.array_equal(Xs.toarray(), Xd)
    X32, _, _ = load_svmlight(path, dtype=np.float32, n_features=5)
    assert X32.dtype == np.float32 and X32.shape == (5, 5)
    # Sparse rows (1 value in 100 columns) stay CSR by default.
    sparse_text = "".join(f"0 qid:{i // 3} {i + 1}:1.0\n" for i in range(30))
    Xa, _, _ = load_svmlight(_write(tmp_path / "s.txt", sparse_text), n_features=100)
    assert sp.issparse(Xa)
    with pytest.raises(ValueError, match="dense"):
        load_svmlight(path, dense="yes")


def test_load_n_features_too_small_names_the_parameter(tmp_path):
    """A file with a higher feature id than n_features: the error names
    n_features and the fix (it said the file was not an SVMlight file)."""
    path = _write(tmp_path / "t.txt", LETOR_TEXT)
    with pytest.raises(ValueError, match=r"n_features=2 but .* pass n_features=None"):
        load_svmlight(path, n_features=2)


NO_QID_TEXT = "1 1:0.5\n0 2:0.5\n2 1:0.1 2:0.2\n0 1:1\n1 2:1\n"


@pytest.mark.parametrize(
    "data_name, query_name",
    [("rank.train", "rank.train.query"), ("rank.train.gz", "rank.train.query.gz"), ("d.txt", "d.txt.query")],
)
def test_load_lightgbm_layout_detects_query_file(tmp_path, data_name, query_name):
    data = _write(tmp_path / data_name, NO_QID_TEXT, data_name.endswith(".gz"))
    _write(tmp_path / query_name, "2\n3\n", query_name.endswith(".gz"))
    X, y, qid = load_svmlight(data)
    assert qid.tolist() == [0, 0, 1, 1, 1]
    assert y.tolist() == [1.0, 0.0, 2.0, 0.0, 1.0]
    assert X.shape == (5, 2)


def test_load_explicit_query_path(tmp_path):
    data = _write(tmp_path / "data.txt", NO_QID_TEXT)
    groups = _write(tmp_path / "sizes.txt", "1\n1\n3\n")
    _, _, qid = load_svmlight(data, query_path=groups)
    assert qid.tolist() == [0, 1, 2, 2, 2]


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="path"):
        load_svmlight(tmp_path / "missing.txt")
    data = _write(tmp_path / "data.txt", NO_QID_TEXT)
    with pytest.raises(ValueError, match="query_path"):
        load_svmlight(data)  # no qid:, no query file
    with pytest.raises(FileNotFoundError, match="query_path"):
        load_svmlight(data, query_path=tmp_path / "nope.query")
    bad = _write(tmp_path / "bad.query", "2\n2\n")
    with pytest.raises(ValueError, match="summing to 4 .* 5 rows"):
        load_svmlight(data, query_path=bad)
    letor = _write(tmp_path / "l.txt", LETOR_TEXT)
    with pytest.raises(ValueError, match="disagree"):
        load_svmlight(letor, query_path=_write(tmp_path / "l.query", "1\n4\n"))
    # Agreeing qid: and group sizes are accepted.
    _, _, qid = load_svmlight(letor, query_path=_write(tmp_path / "ok.query", "2\n2\n1\n"))
    assert qid.tolist() == [30, 30, 7, 7, 12]
    with pytest.raises(ValueError, match="integer"):
        load_svmlight(data, query_path=_write(tmp_path / "x.query", "2\nabc\n"))
    # Runs of equal ids that match the sizes but an id that comes back: other groups.
    back = _write(tmp_path / "back.txt", LETOR_TEXT.replace("qid:12", "qid:30"))
    with pytest.raises(ValueError, match="disagree"):
        load_svmlight(back, query_path=_write(tmp_path / "back.query", "2\n2\n1\n"))


def test_load_svmlight_qid_on_some_lines_or_no_data(tmp_path):
    partial = _write(tmp_path / "p.txt", LETOR_TEXT.replace("1 qid:7 2:0.3", "1 2:0.3"))
    _write(tmp_path / "p.txt.query", "2\n2\n1\n")  # a query file beside it does not hide the problem
    with pytest.raises(ValueError, match="qid: field on 4 of its 5 lines"):
        load_svmlight(partial)
    with pytest.raises(ValueError, match="no data lines"):
        load_svmlight(_write(tmp_path / "empty.txt", "# only a comment\n"))


# ---------------------------------------------------------------------------
# Real files from ../shared/data


def _qids_from_text(path):
    with gzip.open(path, "rt") as f:
        return np.array([int(line.split()[1].split(":")[1]) for line in f if line.strip()])


def test_load_mq2008_fold1(shared_data):
    path = shared_data / "MQ2008" / "Fold1" / "train.txt.gz"
    X, y, qid = load_svmlight(path)
    assert isinstance(X, np.ndarray)
    assert X.shape == (9630, 46)
    assert len(np.unique(qid)) == 471
    assert set(np.unique(y)) == {0.0, 1.0, 2.0}
    # Ids intact, in file order, one contiguous block per query.
    assert np.array_equal(qid, _qids_from_text(path))
    assert len(np.flatnonzero(qid[1:] != qid[:-1])) == 470


def test_load_mq2008_non_monotonic_ids_intact(shared_data):
    # Fold1's files happen to list queries in increasing id order; Fold4's
    # training file does not (one block goes back to a smaller id).
    path = shared_data / "MQ2008" / "Fold4" / "train.txt.gz"
    _, _, qid = load_svmlight(path)
    assert np.array_equal(qid, _qids_from_text(path))
    starts = np.r_[0, np.flatnonzero(qid[1:] != qid[:-1]) + 1]
    assert len(np.unique(qid)) == len(starts)  # contiguous blocks
    assert (np.diff(qid[starts]) < 0).any()  # not sorted


def test_load_lightgbm_example(shared_data):
    folder = shared_data / "LightGBM-lambdarank-example"
    X, y, qid = load_svmlight(folder / "rank.train.gz")
    with gzip.open(folder / "rank.train.query.gz", "rt") as f:
        sizes = [int(t) for t in f.read().split()]
    assert X.shape[0] == sum(sizes)
    assert np.array_equal(np.bincount(qid), sizes)
    assert np.all(np.diff(qid) >= 0)
    assert set(np.unique(y)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    _, _, qid2 = load_svmlight(folder / "rank.train.gz", query_path=folder / "rank.train.query.gz")
    assert np.array_equal(qid, qid2)
    Xs, _, _ = load_svmlight(folder / "rank.train.gz", dense=False)
    assert sp.issparse(Xs) and Xs.shape == X.shape


def test_load_clueweb09_fold1(shared_data):
    path = shared_data / "ClueWeb09-webis" / "Fold1" / "train.txt.gz"
    X, y, qid = load_svmlight(path)
    assert X.shape[1] == 42
    assert np.array_equal(qid, _qids_from_text(path))
    sizes = np.unique(qid, return_counts=True)[1]
    assert sizes.min() >= 230 and sizes.max() <= 728
    assert y.max() <= 4


def test_load_svmlight_zero_based(tmp_path):
    """A zero-based file whose feature 0 is always 0 reads one-based under
    "auto" (shifted); zero_based=True reads it as written, and a one-based
    reading of a file with feature 0 says to pass zero_based=True."""
    from sklearn.datasets import dump_svmlight_file

    X = np.array([[0.0, 0.5, 0.25], [0.0, 0.0, 0.75]])
    dump_svmlight_file(X, [1, 0], str(tmp_path / "zero.txt"), query_id=[1, 1], zero_based=True)
    np.testing.assert_array_equal(load_svmlight(tmp_path / "zero.txt", dense=True, zero_based=True)[0], X)
    np.testing.assert_array_equal(load_svmlight(tmp_path / "zero.txt", dense=True)[0], X[:, 1:])  # "auto"
    X[0, 0] = 1.0
    dump_svmlight_file(X, [1, 0], str(tmp_path / "with0.txt"), query_id=[1, 1], zero_based=True)
    with pytest.raises(ValueError, match="has a feature id 0, so its ids are zero-based: pass zero_based=True"):
        load_svmlight(tmp_path / "with0.txt", zero_based=False)
    with pytest.raises(ValueError, match='zero_based must be True, False or "auto"'):
        load_svmlight(tmp_path / "with0.txt", zero_based="yes")


def test_load_svmlight_names_the_file_it_cannot_parse(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:q1 1:0.5\n")
    with pytest.raises(ValueError, match=r"bad\.txt' is not an SVMlight/LETOR file rankkit can read.*qid:<integer>"):
        load_svmlight(bad)


def test_load_broken_gzip_names_the_file(tmp_path):
    """A truncated .gz, or a plain file named .gz: a ValueError naming the
    file (it was Python's bare EOFError / BadGzipFile)."""
    full = _write(tmp_path / "full.txt.gz", LETOR_TEXT * 200, compress=True)
    truncated = tmp_path / "truncated.txt.gz"
    data = full.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    plain = _write(tmp_path / "plain.txt.gz", LETOR_TEXT)
    for path in (truncated, plain):
        with pytest.raises(ValueError, match=re.escape(repr(str(path))) + " is not a complete gzip file"):
            load_svmlight(path)
    # The same for a LightGBM group-size file.
    data = _write(tmp_path / "d.txt", "1 1:0.5\n0 1:0.1\n")
    broken = _write(tmp_path / "d.txt.query.gz", "2\n")
    with pytest.raises(ValueError, match=re.escape(repr(str(broken))) + " is not a complete gzip file"):
        load_svmlight(data, query_path=broken)
    # bzip2, which scikit-learn's reader opens by the suffix too: its bare OSError / EOFError before.
    import bz2

    whole = bz2.compress(LETOR_TEXT.encode() * 200)
    (tmp_path / "cut.txt.bz2").write_bytes(whole[: len(whole) // 2])
    for path in (_write(tmp_path / "plain.txt.bz2", LETOR_TEXT), tmp_path / "cut.txt.bz2"):
        with pytest.raises(ValueError, match=re.escape(repr(str(path))) + " is not a complete bzip2 file"):
            load_svmlight(path)
