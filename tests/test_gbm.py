"""The numba GBDT kernels against their naive twins in tests/_reference_gbm.py."""

import numpy as np
import pytest

from rankkit._backends._base import iter_row_blocks
from rankkit._backends._gbm import binning, histogram, splitting
from rankkit._backends._gbm.grower import (TreeGrower, level_histograms, misplaced_positions, partition_segments,
                                           split_sides)
from rankkit._backends._gbm.predictor import (add_tree_binned, add_tree_positions, flat_trees, oblivious_tables,
                                              predict_oblivious, predict_raw)
from tests import _reference_gbm as ref
from tests._reference_gbm import group_features


def tied_data(rng, n, F, n_values=4, missing=0.15):
    """Few distinct values (many ties), some NaN, a constant and an all-NaN column."""
    X = rng.integers(0, n_values, size=(n, F)).astype(np.float64)
    X[rng.random((n, F)) < missing] = np.nan
    if F >= 3:
        X[:, 1] = 7.0
        X[:, 2] = np.nan
    return X


def dyadic(rng, n, lo=-8, hi=9):
    """Gradients on a 1/4 grid: all sums are exact, so gains tie exactly."""
    return rng.integers(lo, hi, size=n) / 4.0


def engine_block(X):
    """``X`` as the engine hands it to the predictors: one read-only C-contiguous block."""
    return next(iter_row_blocks(X, len(X)))[1]


def binned(X, max_bins=255):
    """``(n, F)`` bins (from the grower's layout), edges, edges_ptr."""
    edges, ptr = binning.fit_bin_edges(X, max_bins)
    return ref.ungroup_features(binning.transform(X, edges, ptr), X.shape[1]), edges, ptr


# -- binning ---------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_greedy_logsum_edges_match_exhaustive_search(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        n_distinct = int(rng.integers(3, 40))
        values = np.round(rng.normal(size=n_distinct), 3)
        # Heavy ties: a few values carry most of the rows, as in sparse features.
        x = rng.choice(values, size=int(rng.integers(50, 400)), p=rng.dirichlet(np.full(n_distinct, 0.3)))
        x[rng.random(x.size) < 0.05] = np.nan
        max_bins = int(rng.integers(2, 12))
        edges, ptr = binning.fit_bin_edges(x[:, None], max_bins, "greedy_logsum")
        observed = np.unique(x[~np.isnan(x)])
        if observed.size <= max_bins:  # every distinct value its own bin, as with quantiles
            np.testing.assert_array_equal(edges, binning.fit_bin_edges(x[:, None], max_bins)[0])
        else:
            np.testing.assert_allclose(edges, ref.ref_greedy_logsum_edges(x[~np.isnan(x)], max_bins), rtol=0, atol=0)
            assert ptr[1] == max_bins - 1


def test_greedy_logsum_gives_a_tied_value_its_own_bin_and_keeps_the_rest_fine():
    rng = np.random.default_rng(0)
    x = np.where(rng.random(20000) < 0.6, 0.0, rng.exponential(size=20000))
    quantile = np.diff(binning.fit_bin_edges(x[:, None], 255)[1])[0]
    greedy = np.diff(binning.fit_bin_edges(x[:, None], 255, "greedy_logsum")[1])[0]
    assert quantile < 120 and greedy == 254


@pytest.mark.parametrize("max_bins", [2, 5, 255])
def test_binning_matches_reference_and_thresholds(max_bins):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=3000), rng.integers(0, 3, 3000),
                         np.round(rng.normal(size=3000), 1), np.full(3000, 2.5)])
    X[rng.random(X.shape) < 0.1] = np.nan
    X[0, 0], X[1, 0] = np.inf, -np.inf
    Xb, edges, ptr = binned(X, max_bins)
    assert Xb.dtype == np.uint8 and Xb.flags.f_contiguous
    np.testing.assert_array_equal(Xb, ref.ref_bin(X, edges, ptr))
    nb = np.diff(ptr) + 1
    assert nb.max() <= max_bins and nb[3] == 1 and nb[1] == min(3, max_bins)
    # bin <= t  <=>  x <= edges[t]: bins and raw thresholds are the same split.
    for f in range(X.shape[1]):
        e = edges[ptr[f]:ptr[f + 1]]
        ok = ~np.isnan(X[:, f])
        for t in range(e.size):
            np.testing.assert_array_equal(Xb[ok, f] <= t, X[ok, f] <= e[t])
    # Quantile bins hold roughly equal counts on continuous data.
    if max_bins == 5:
        counts = np.bincount(Xb[~np.isnan(X[:, 0]), 0], minlength=5)
        assert counts.min() > 0.15 * counts.sum()


def test_binning_sparse_equals_dense():
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5000, 6)) * (rng.random((5000, 6)) < 0.3)
    dense = binned(X)
    sparse = binned(sp.csr_matrix(X))
    for a, b in zip(dense, sparse):
        np.testing.assert_array_equal(a, b)


# -- histograms ------------------------------------------------------------
def test_histograms_and_subtraction_match_reference():
    rng = np.random.default_rng(2)
    n, F = 600, 5
    Xb, _, ptr = binned(tied_data(rng, n, F))
    grad, hess = rng.normal(size=n), rng.random(n) + 0.1
    rows = np.sort(rng.permutation(n)[:500]).astype(np.int32)
    h = np.full((256, 2), np.nan)
    for f in range(F):
        histogram.build_one(Xb[:, f], rows, 100, 420, grad, hess, h)
        np.testing.assert_allclose(h, ref.ref_histogram(Xb, rows[100:420], grad, hess, f), rtol=1e-12, atol=1e-12)
    # The fused level kernel: parent over all rows, child built from rows[:230],
    # sibling by subtraction equal to a direct build of rows[230:]. Column
    # subsets: a non-contiguous one (general path) and all features (fast path).
    Xg = np.ascontiguousarray(group_features(Xb)[:, rows, :])  # bins by position in rows
    gh = np.ascontiguousarray(np.stack([grad[rows], hess[rows]]))  # gradients by position
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731

    def used_bins(f):  # a feature's non-missing bins and the missing bin
        used = np.zeros(256, dtype=bool)
        used[: ptr[f + 1] - ptr[f] + 1] = used[255] = True
        return used

    for feats in (np.array([0, 2, 3, 4], dtype=np.int64), np.arange(F, dtype=np.int64)):
        nf = feats.shape[0]
        parent = np.empty((1, F, 256, 2))
        g0, h0 = np.array([grad[rows].sum()]), np.array([hess[rows].sum()])
        outs = [np.empty((3, nf)), np.empty((3, nf)), np.empty((3, nf), np.uint8), np.empty((3, nf), np.uint8),
                np.empty((3, nf)), np.empty((3, nf))]
        no_noise = (0.0, np.uint64(0), i64(0, 1, 2), F)
        level_histograms(Xg, gh, feats, np.diff(ptr) + 1, i64(0), i64(500), i64(0), i64(-1),
                         i64(0), parent, parent, g0, h0, 1.0, 0.0, 0.0, 0.0, False, *no_noise, *outs)
        hist = np.full((2, F, 256, 2), np.nan)
        level_histograms(Xg, gh, feats, np.diff(ptr) + 1, i64(0), i64(230), i64(1), i64(0),
                         i64(0), parent, hist, np.zeros(2), np.ones(2), 1.0, 0.0, 0.0, 0.0, False, *no_noise, *outs)
        for j, f in enumerate(feats):
            used = used_bins(f)  # the others are neither written nor read: still NaN
            np.testing.assert_allclose(parent[0, j, used], ref.ref_histogram(Xb, rows, grad, hess, f)[used],
                                       rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(hist[1, j, used], ref.ref_histogram(Xb, rows[:230], grad, hess, f)[used],
                                       rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(hist[0, j, used], ref.ref_histogram(Xb, rows[230:], grad, hess, f)[used],
                                       atol=1e-10)
            assert np.isnan(hist[:, j, ~used]).all()
            assert np.all(ref.ref_histogram(Xb, rows, grad, hess, f)[~used] == 0.0)
        # A node in the middle of the row array.
        level_histograms(Xg, gh, feats, np.diff(ptr) + 1, i64(100), i64(140), i64(1), i64(-1),
                         i64(0), parent, hist, np.zeros(2), np.ones(2), 1.0, 0.0, 0.0, 0.0, False, *no_noise, *outs)
        for j, f in enumerate(feats):
            used = used_bins(f)
            np.testing.assert_allclose(hist[1, j, used], ref.ref_histogram(Xb, rows[100:140], grad, hess, f)[used],
                                       rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("F", [1, 8, 13, 17])
def test_transform_writes_the_grouped_layout(F):
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(20_000, F)), 2)  # more rows than one block
    X[rng.random(X.shape) < 0.1] = np.nan
    X[0, 0], X[1, 0] = np.inf, -np.inf
    edges, ptr = binning.fit_bin_edges(X, 255)
    Xg = binning.transform(X.astype(np.float32) if F == 13 else X, edges, ptr)
    assert Xg.shape == ((F + 7) // 8, X.shape[0], 8) and Xg.flags.c_contiguous and Xg.dtype == np.uint8
    want = ref.ref_bin(X.astype(np.float32) if F == 13 else X, edges, ptr)
    np.testing.assert_array_equal(Xg, group_features(want))  # padding lanes 0 too


# -- split finding ---------------------------------------------------------
@pytest.mark.parametrize("lam,mcw", [(0.0, 0.0), (1.0, 1.0), (2.5, 6.0)])
def test_node_split_matches_exhaustive_search(lam, mcw):
    rng = np.random.default_rng(3)
    for trial in range(6):
        n, F = int(rng.integers(2, 60)), 4
        Xb, _, ptr = binned(tied_data(rng, n, F))
        n_bins = np.diff(ptr) + 1
        grad, hess = dyadic(rng, n), rng.integers(1, 5, n) / 2.0
        rows = np.arange(n, dtype=np.int32)
        h = np.empty((256, 2))
        found = []
        for f in range(F):
            histogram.build_one(Xb[:, f], rows, 0, n, grad, hess, h)
            found.append(splitting.best_split_one(h, n_bins[f], grad.sum(), hess.sum(), lam, mcw, 0.0, -np.inf, 0.0,
                                                  np.uint64(0), 0)[1:])
        best = ref.ref_best_split(Xb, rows, grad, hess, range(F), n_bins, lam, mcw)
        gains = [x[0] for x in found]
        if best is None:
            assert np.all(np.isneginf(gains))
            continue
        j = int(np.argmax(gains))
        assert (found[j][0], j) + tuple(found[j][1:]) == best


# -- whole trees -----------------------------------------------------------
def grow(X, grad, hess, noise_sd=0.0, noise_key=0, **kw):
    Xb, edges, ptr = binned(X)
    g = TreeGrower(group_features(Xb), np.diff(ptr) + 1, edges, ptr, **kw)
    nodes = g.grow(grad, hess, np.arange(X.shape[1], dtype=np.int64), noise_sd, noise_key)
    return nodes, Xb


def leaves_in_order(nodes, i=0):
    if nodes["left"][i] < 0:
        return [float(nodes["value"][i])]
    return leaves_in_order(nodes, nodes["left"][i]) + leaves_in_order(nodes, nodes["right"][i])


@pytest.mark.parametrize("seed", range(8))
def test_depthwise_tree_equals_exhaustive_greedy_tree(seed):
    rng = np.random.default_rng(10 + seed)
    n, F = int(rng.integers(1, 80)), 5
    X = tied_data(rng, n, F)
    grad = dyadic(rng, n)
    hess = np.ones(n) if seed % 2 else rng.integers(1, 4, n) / 2.0
    kw = dict(max_depth=int(rng.integers(1, 5)), reg_lambda=float(rng.choice([0.0, 1.0, 3.0])),
              min_child_weight=float(rng.choice([0.0, 1.0, 4.0])), min_split_gain=float(rng.choice([0.0, 0.5])))
    nodes, Xb = grow(X, grad, hess, **kw)
    n_bins = np.diff(binned(X)[2]) + 1
    expected = ref.ref_grow_depthwise(Xb, np.arange(n), grad, hess, range(F), n_bins, max_depth=kw["max_depth"],
                                      lam=kw["reg_lambda"], mcw=kw["min_child_weight"],
                                      min_split_gain=kw["min_split_gain"])
    assert ref.tree_to_dict(nodes) == expected


@pytest.mark.parametrize("seed", range(5))
def test_oblivious_tree_equals_exhaustive_search(seed):
    rng = np.random.default_rng(30 + seed)
    n, F = int(rng.integers(1, 50)), 4
    X = tied_data(rng, n, F)
    grad, hess = dyadic(rng, n), np.ones(n)
    depth, lam, mcw = int(rng.integers(1, 4)), float(rng.choice([0.0, 1.0])), float(rng.choice([0.0, 2.0]))
    nodes, Xb = grow(X, grad, hess, max_depth=depth, reg_lambda=lam, min_child_weight=mcw,
                     grow_policy="oblivious")
    n_bins = np.diff(binned(X)[2]) + 1
    splits, leaves = ref.ref_grow_oblivious(Xb, np.arange(n), grad, hess, range(F), n_bins,
                                            max_depth=depth, lam=lam, mcw=mcw)
    assert leaves_in_order(nodes) == leaves
    # Every internal node of a level carries that level's split.
    level = [0]
    for f, t, ml in splits:
        nxt = []
        for i in level:
            assert (nodes["feature"][i], nodes["bin_threshold"][i], nodes["missing_left"][i]) == (f, t, ml)
            nxt += [nodes["left"][i], nodes["right"][i]]
        level = nxt
    assert all(nodes["left"][i] < 0 for i in level)


def test_all_zero_gradients_and_single_row_give_a_leaf():
    X = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 1.0]])
    nodes, _ = grow(X, np.zeros(3), np.ones(3), max_depth=3, reg_lambda=1.0, min_child_weight=0.0)
    assert nodes.shape[0] == 1 and nodes["value"][0] == 0.0
    nodes, _ = grow(X[:1], np.array([2.0]), np.ones(1), max_depth=3, reg_lambda=1.0, min_child_weight=0.0)
    assert nodes.shape[0] == 1 and nodes["value"][0] == -1.0


@pytest.mark.parametrize("policy", ["depthwise", "oblivious"])
def test_random_split_strength_matches_reference(policy):
    """With split noise every node's (or level's) choice is the reference's:
    the largest sqrt(S_L + S_R) + sd * normal(key, counter) over all
    candidates. The noise must change some trees, or this proves nothing."""
    changed = 0
    for seed in range(6):
        rng = np.random.default_rng(50 + seed)
        n, F = int(rng.integers(20, 70)), 4
        # Seeds 4 and 5 without missing values: only "missing right" candidates.
        X = tied_data(rng, n, F, missing=0.15 if seed < 4 else 0.0)
        if seed >= 4:
            X[:, 2] = rng.integers(0, 5, n)
        grad, hess = dyadic(rng, n), (np.ones(n) if seed % 2 else rng.integers(1, 4, n) / 2.0)
        kw = dict(max_depth=3, reg_lambda=float(rng.choice([0.0, 1.0])), min_child_weight=float(rng.choice([0.0, 1.0])))
        noise = dict(noise_sd=1.5, noise_key=int(rng.integers(2**63)))
        nodes, Xb = grow(X, grad, hess, grow_policy=policy, **noise, **kw)
        plain, _ = grow(X, grad, hess, grow_policy=policy, **kw)
        n_bins = np.diff(binned(X)[2]) + 1
        args = (Xb, np.arange(n), grad, hess, range(F), n_bins)
        ref_kw = dict(max_depth=kw["max_depth"], lam=kw["reg_lambda"], mcw=kw["min_child_weight"], **noise)
        if policy == "depthwise":
            assert ref.tree_to_dict(nodes) == ref.ref_grow_depthwise(*args, **ref_kw)
        else:
            splits, leaves = ref.ref_grow_oblivious(*args, **ref_kw)
            assert leaves_in_order(nodes) == leaves
            assert [tuple(int(nodes[k][0]) for k in ("feature", "bin_threshold", "missing_left"))] == splits[:1]
            if seed >= 4:
                assert not nodes["missing_left"].any()
        changed += nodes.tobytes() != plain.tobytes()
    assert changed >= 2


@pytest.mark.parametrize("policy", ["depthwise", "oblivious"])
def test_splits_scored_on_weights_with_leaves_from_the_hessians_match_reference(policy):
    """``leaf_hess``: the splits are chosen on ``(grad, weights)``, the leaf
    values are Newton steps on the true hessians (split_score="gradient"),
    with and without split noise. The structure must differ from the one the
    hessians alone choose in some trees, or this proves nothing."""
    changed = 0
    for seed in range(8):
        rng = np.random.default_rng(70 + seed)
        n, F = int(rng.integers(2, 70)), 4
        X = tied_data(rng, n, F)
        grad = dyadic(rng, n)
        hess = rng.choice([0.125, 0.25, 4.0, 8.0], n)  # far from equal, so they choose other splits
        weights = np.full(n, 0.75)  # dyadic, as grad and hess: the sums are exact in any order
        kw = dict(max_depth=int(rng.integers(1, 4)), reg_lambda=float(rng.choice([0.0, 1.0])),
                  min_child_weight=float(rng.choice([0.0, 1.0])))
        noise = dict(noise_sd=1.5 if seed % 2 else 0.0, noise_key=int(rng.integers(2**63)))
        Xb, edges, ptr = binned(X)
        grower = TreeGrower(group_features(Xb), np.diff(ptr) + 1, edges, ptr, grow_policy=policy, **kw)
        nodes = grower.grow(grad, weights, np.arange(F, dtype=np.int64), noise["noise_sd"], noise["noise_key"],
                            leaf_hess=hess)
        newton, _ = grow(X, grad, hess, grow_policy=policy, **noise, **kw)
        args = (Xb, np.arange(n), grad, weights, range(F), np.diff(ptr) + 1)
        ref_kw = dict(max_depth=kw["max_depth"], lam=kw["reg_lambda"], mcw=kw["min_child_weight"], leaf_hess=hess,
                      **noise)
        if policy == "depthwise":
            assert ref.tree_to_dict(nodes) == ref.ref_grow_depthwise(*args, **ref_kw)
        else:
            splits, leaves = ref.ref_grow_oblivious(*args, **ref_kw)
            assert leaves_in_order(nodes) == leaves
        changed += not np.array_equal(nodes[["feature", "bin_threshold"]], newton[["feature", "bin_threshold"]])
    assert changed >= 2


@pytest.mark.parametrize("seed", [4, 5])
def test_partition_moves_bins_gradients_and_rows_by_the_swap_rule(seed):
    rng = np.random.default_rng(seed)
    n = 500
    Xb, _, _ = binned(tied_data(rng, n, 12))
    Xg = group_features(Xb)
    grad, hess = rng.normal(size=n), rng.random(n)
    before = rng.permutation(n).astype(np.int32)
    rows = before.copy()
    pos = np.ascontiguousarray(Xg[:, rows, :])  # bins by position
    gh = np.ascontiguousarray(np.stack([grad[rows], hess[rows]]))
    # Segments of 1 and 0 rows, one whose rows all go one way, and two ordinary ones.
    starts = np.array([0, 200, 201, 201, 260], dtype=np.int64)
    ends = np.array([200, 201, 201, 260, 480], dtype=np.int64)
    f = np.array([0, 3, 3, 5, 11], dtype=np.int64)
    t = np.array([1, 0, 0, 255, 0], np.uint8)
    ml = np.array([1, 0, 0, 1, 0], np.uint8)
    m = starts.shape[0]
    go, nl, misplaced = np.empty(n, np.uint8), np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64)
    split_sides(pos, starts, ends, f, t, ml, go, nl)
    where = np.empty(n, np.int32)
    misplaced_positions(go, starts, ends, nl, where, misplaced)
    partition_segments(pos.view(np.uint64)[:, :, 0], gh.view(np.uint64), rows, where, starts, nl, misplaced)
    for k in range(m):
        seg = before[starts[k]:ends[k]]
        left = np.array([ref.ref_goes_left(b, t[k], ml[k]) for b in Xb[seg, f[k]]], dtype=bool)
        np.testing.assert_array_equal(rows[starts[k]:ends[k]], ref.ref_partition(seg, left))
        assert nl[k] == left.sum()
        assert misplaced[k] == np.sum(~left[: left.sum()])
    assert misplaced[0] > 10 and misplaced[4] > 10  # the swaps were exercised
    # Every position still holds its row's bins and gradients; positions outside the segments are untouched.
    np.testing.assert_array_equal(rows[480:], before[480:])
    np.testing.assert_array_equal(pos, Xg[:, rows, :])
    np.testing.assert_array_equal(gh, np.stack([grad[rows], hess[rows]]))


def test_grower_reused_across_trees_grows_the_trees_of_a_fresh_one():
    """The binned matrix is reordered in place and the next tree starts from
    the order the last one left: a grower reused for the next tree (all rows,
    a subsample, all rows again) grows the trees a fresh one grows, up to the
    order in which the histograms sum (exact here: dyadic gradients), and the
    positions always hold their rows' bins."""
    rng = np.random.default_rng(9)
    n, F = 700, 19
    X = tied_data(rng, n, F)
    Xb, edges, ptr = binned(X)
    kw = dict(max_depth=5, reg_lambda=1.0, min_child_weight=0.0)
    reused = TreeGrower(group_features(Xb), np.diff(ptr) + 1, edges, ptr, **kw)
    feats = np.arange(F, dtype=np.int64)
    for trial in range(4):
        grad, hess = dyadic(rng, n), rng.integers(1, 5, n) / 2.0
        sampled = None if trial % 2 == 0 else rng.random(n) < 0.6
        a = reused.grow(grad, hess, feats, sampled=sampled)
        b = TreeGrower(group_features(Xb), np.diff(ptr) + 1, edges, ptr, **kw).grow(grad, hess, feats,
                                                                                     sampled=sampled)
        assert a.shape[0] > 7
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(reused.X, group_features(Xb)[:, reused.rows, :])
        # Each row's leaf value, from the leaves' segments and by walking the tree, agree.
        by_segment, by_walk = np.zeros(n), np.zeros(n)
        reused.add_leaf_values(a, by_segment)
        add_tree_positions(a, reused.X, reused.rows, reused.n_sampled, 1.0, by_segment)
        add_tree_binned(a, group_features(Xb), 1.0, by_walk)
        np.testing.assert_array_equal(by_segment, by_walk)
        assert reused.n_sampled == (n if sampled is None else sampled.sum())


@pytest.mark.parametrize("policy", ["depthwise", "oblivious"])
def test_raw_predictors_at_thresholds_and_missing(policy):
    """Rows exactly at a split threshold go left, one ulp above go right, NaN
    follows the node's learned side (both sides occur), float32 and float64;
    oblivious trees through their tables too, bit for bit as the walk."""
    rng = np.random.default_rng(11)
    n, F = 400, 4
    X = rng.normal(size=(n, F))
    X[rng.random((n, F)) < 0.3] = np.nan
    trees = [grow(X, rng.normal(size=n) + 3.0 * np.isnan(X[:, j]), np.ones(n), max_depth=1 + j, reg_lambda=1.0,
                  min_child_weight=0.0, grow_policy=policy, noise_sd=0.5 * (j % 2), noise_key=j)[0]
             for j in range(F)]
    trees.append(grow(X, np.zeros(n), np.ones(n), max_depth=3, grow_policy=policy, reg_lambda=1.0,
                      min_child_weight=0.0)[0])  # no split gains: a single leaf
    internal = np.concatenate([t["missing_left"][t["left"] >= 0] for t in trees])
    assert 0 < internal.sum() < internal.size
    # Thresholds moved onto float32 values (still valid trees), so that test rows
    # can sit exactly on them in float32 and float64 alike.
    candidates = [[np.nan] for _ in range(F)]
    for t in trees:
        finite = (t["left"] >= 0) & np.isfinite(t["threshold"])  # inf: "all values left"
        t["threshold"][finite] = t["threshold"][finite].astype(np.float32)
        for f, thr in zip(t["feature"][finite], t["threshold"][finite].astype(np.float32)):
            candidates[f] += [float(thr), float(np.nextafter(thr, np.float32(np.inf))),
                              float(np.nextafter(thr, np.float32(-np.inf)))]
    Xt = np.array([[rng.choice(candidates[f]) for f in range(F)] for _ in range(2000)])
    fields = flat_trees(trees)
    expected = [sum(ref.ref_predict_tree(t, x) for t in trees) for x in Xt]
    assert np.isin(Xt, np.concatenate([t["threshold"] for t in trees])).any()  # rows on thresholds
    tables = oblivious_tables(trees)
    assert (tables is None) == (policy == "depthwise")
    for Xc in (Xt, Xt.astype(np.float32)):  # every value is exact in float32
        out = np.zeros(len(Xc))
        predict_raw(*fields, len(trees), engine_block(Xc), 1.0, out, 0)
        np.testing.assert_allclose(out, expected, rtol=1e-14)
        if tables is not None:
            by_table = np.full(len(Xc) + 3, np.nan)
            predict_oblivious(*tables, len(trees), engine_block(Xc), 1.0, by_table, 3)
            np.testing.assert_array_equal(by_table[3:], out)
            for k in (0, 2, len(trees)):  # the first k trees
                predict_raw(*fields, k, engine_block(Xc), 0.5, out, 0)
                predict_oblivious(*tables, k, engine_block(Xc), 0.5, by_table, 3)
                np.testing.assert_array_equal(by_table[3:], out)


def test_predictors_match_reference_traversal():
    rng = np.random.default_rng(5)
    n, F = 400, 5
    X = tied_data(rng, n, F, n_values=6)
    X[:, 0] = rng.normal(size=n)
    trees = [grow(X, rng.normal(size=n), np.ones(n), max_depth=d, reg_lambda=1.0, min_child_weight=0.0)[0]
             for d in (1, 3, 5)]
    # An unbalanced tree: leaves at several depths (a leaf is its own child in flat_trees).
    trees.append(grow(X, rng.normal(size=n), np.ones(n), max_depth=5, reg_lambda=1.0, min_child_weight=60.0)[0])
    assert len(set(trees[-1]["depth"][trees[-1]["left"] < 0])) > 1
    internal = np.concatenate([t["missing_left"][t["left"] >= 0] for t in trees])
    assert 0 < internal.sum() < internal.size  # missing values go left at some nodes, right at others
    fields = flat_trees(trees)
    expected = [0.5 * sum(ref.ref_predict_tree(t, x) for t in trees) for x in X]
    for Xc in (X, X.astype(np.float32)):  # integer values: exact in float32, ties at the thresholds
        out = np.zeros(n)
        predict_raw(*fields, len(trees), engine_block(Xc), 0.5, out, 0)
        np.testing.assert_allclose(out, expected, rtol=1e-14)
    Xb = binned(X)[0]
    acc = np.zeros(n)
    for t in trees:
        add_tree_binned(t, group_features(Xb), 0.5, acc)
    np.testing.assert_allclose(acc, expected, rtol=1e-14)
