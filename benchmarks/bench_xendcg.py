"""rankkit's XE-NDCG on LightGBM's engine against LightGBM's own ``rank_xendcg``.

Issue 21, deliverable 3. Two things differ between ``XENDCGRanker(backend=
"lightgbm")`` and ``LGBMRanker(objective="rank_xendcg")`` on the same engine:

* the per-document value handed to the tree: rankkit's is the exact gradient
  ``g = rho - phi`` of Bruch's loss for the drawn gamma; LightGBM's adds the
  first two terms of a Neumann series of the inverse Hessian (Bruch 2019,
  section 4.4): ``lambda = g + O D^-1 g + (O D^-1)^2 g`` with
  ``D = diag(rho (1 - rho))`` and ``O_ij = rho_i rho_j`` (i != j), i.e. an
  approximation of ``D H^-1 g``. Both use ``h = rho (1 - rho)``;
* the leaf regularisation: rankkit scales hessians to a mean of 1 per query and
  uses ``reg_lambda=3``, ``min_child_weight=1`` in those units and
  ``min_data_in_leaf=0``; LightGBM uses raw hessians, ``lambda_l2=0``,
  ``min_sum_hessian_in_leaf=1e-3``, ``min_data_in_leaf=20``.

To separate them, one harness trains ``lightgbm.train`` with a Python
objective for each cell of {formula: exact (rankkit), Neumann (LightGBM)} x
{regularisation: rankkit's, LightGBM's}, with the same gamma draws for both
formulas; the real ``XENDCGRanker`` and the real ``rank_xendcg`` are the
anchors. The harness cell that reproduces an anchor checks the harness. All
runs: depth 6, ``num_leaves=64`` (rankkit's ``2 ** max_depth``), max_bin 255,
``--trees`` trees, learning rate 0.05, no early stopping, random states
``0..--seeds-1``; test NDCG@10 by ``rankkit.metrics`` (exp gain, worst-order
ties, a query without a relevant document counts 1), per query averaged over
the random states; the difference to ``rank_xendcg`` is paired over test
queries (t-test). LightGBM bins features by quantiles, so a monotone
transform of the features (``--heavy``: ``exp(3 * x)``-like heavy tails)
changes nothing on this engine except ties in the bin boundaries.

Data (about 40 training queries, like the MSLR-WEB sample of the issue):
MQ2008 Fold1 (42 training queries sampled, test file), ClueWeb09 Fold1
(its 48 training queries of 230-728 documents), the Yahoo sample (42
training queries sampled, test file) and ``make_ranking`` (42 training and
200 test queries of 80-160 documents, 136 features).

Run from the repository root (about 3 minutes with 3 seeds, 5 with 5, on 2 shared cores)::

    .venv/bin/python benchmarks/bench_xendcg.py
    .venv/bin/python benchmarks/bench_xendcg.py --datasets mq2008 synthetic --seeds 5
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_DATA, load_svmlight, machine_line, markdown_table, save_result  # noqa: E402

import lightgbm  # noqa: E402
from scipy import stats  # noqa: E402

from rankkit import XENDCGRanker  # noqa: E402
from rankkit import metrics as M  # noqa: E402
from rankkit.datasets import make_ranking  # noqa: E402

N_TRAIN_QUERIES = 42


# ============================================================================ data
def _subsample(X, y, qid, n_queries, seed=0):
    uq = np.unique(qid)
    keep = np.random.default_rng(seed).choice(uq, size=min(n_queries, uq.size), replace=False)
    m = np.isin(qid, keep)
    return X[m], y[m], qid[m]


def _heavy(X, rng):
    """Each feature through a random monotone heavy-tailed map (``exp(a x)`` or ``x^5``, scaled)."""
    X = np.asarray(X, dtype=np.float64)
    Z = (X - X.min(0)) / np.maximum(X.max(0) - X.min(0), 1e-12)
    out = np.empty_like(Z)
    for j in range(Z.shape[1]):
        out[:, j] = np.exp(3.0 * Z[:, j]) if rng.random() < 0.5 else 1e4 * Z[:, j] ** 5
    return out


def load(name):
    if name == "mq2008":
        d = SHARED_DATA / "MQ2008" / "Fold1"
        tr = load_svmlight(d / "train.txt.gz")
        te = load_svmlight(d / "test.txt.gz", n_features=tr[0].shape[1])
        return _subsample(*tr, N_TRAIN_QUERIES), te
    if name == "clueweb09":
        d = SHARED_DATA / "ClueWeb09-webis" / "Fold1"
        tr = load_svmlight(d / "train.txt.gz")
        te = load_svmlight(d / "test.txt.gz", n_features=tr[0].shape[1])
        return tr, te
    if name == "yahoo":
        d = SHARED_DATA / "LightGBM-lambdarank-example"
        tr = load_svmlight(d / "rank.train.gz", n_features=300)
        te = load_svmlight(d / "rank.test.gz", n_features=300)
        return _subsample(*tr, N_TRAIN_QUERIES), te
    if name == "synthetic":
        X, y, q = make_ranking(N_TRAIN_QUERIES + 200, n_features=136, min_docs=80, max_docs=160, random_state=0)
        tr = np.isin(q, np.unique(q)[:N_TRAIN_QUERIES])
        return (X[tr], y[tr], q[tr]), (X[~tr], y[~tr], q[~tr])
    raise ValueError(name)


def _ptr(qid):
    change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    return np.concatenate(([0], change, [qid.shape[0]]))


# ======================================================================= objectives
def xendcg_python(y, ptr, rng, formula, units):
    """A ``fobj`` for ``lightgbm.train``: XE-NDCG with ``formula`` ``"exact"``
    (``g = rho - phi``, rankkit) or ``"neumann"`` (LightGBM's lambdas), both
    with ``h = rho (1 - rho)`` and the same gamma draws; ``units="query"``
    rescales both so that the hessians sum to the number of queries (rankkit's
    ``query_hessian_units``, with its 1e-6 floor)."""
    pow2 = np.power(2.0, np.floor(y))  # LightGBM truncates labels; integer here anyway
    n_q = ptr.shape[0] - 1

    def fobj(preds, _data):
        gamma = rng.random(y.shape[0])
        grad = np.zeros_like(preds)
        hess = np.zeros_like(preds)
        for q in range(n_q):
            lo, hi = ptr[q], ptr[q + 1]
            if hi - lo < 2:
                continue
            z = preds[lo:hi]
            rho = np.exp(z - z.max())
            rho /= rho.sum()
            p = pow2[lo:hi] - gamma[lo:hi]
            g = rho - p / p.sum()
            lam = g.copy()
            if formula == "neumann":
                t = g / (1.0 - rho)
                term = rho * (t.sum() - t)
                lam += term
                t = term / (1.0 - rho)
                lam += rho * (t.sum() - t)
            grad[lo:hi] = lam
            hess[lo:hi] = rho * (1.0 - rho)
        if units == "query":
            f = n_q / hess.sum()
            grad *= f
            hess = np.maximum(hess * f, 1e-6)
        return grad, hess

    return fobj


# ========================================================================== methods
TREE = dict(max_depth=6, num_leaves=64, max_bin=255, learning_rate=0.05)
REG = {
    "rankkit": dict(lambda_l2=3.0, min_sum_hessian_in_leaf=1.0, min_data_in_leaf=0),
    "lightgbm": dict(lambda_l2=0.0, min_sum_hessian_in_leaf=1e-3, min_data_in_leaf=20),
}
#: label -> (kind, settings). "harness" cells: (formula, hessian units, regularisation).
METHODS = {
    "LightGBM rank_xendcg (reference)": ("lgb", {}),
    "LightGBM rank_xendcg, num_leaves=31": ("lgb", dict(num_leaves=31)),
    "rankkit XENDCGRanker, defaults": ("rankkit", {}),
    "rankkit XENDCGRanker, LightGBM's regularisation": (
        "rankkit", dict(reg_lambda=0.0, min_child_weight=1e-3, max_bin=255, backend_params={"min_data_in_leaf": 20})),
    "rankkit XENDCGRanker, reg_lambda=0": ("rankkit", dict(reg_lambda=0.0)),
    "rankkit XENDCGRanker, min_data_in_leaf=20": ("rankkit", dict(backend_params={"min_data_in_leaf": 20})),
    "harness exact g, rankkit reg (query units)": ("harness", ("exact", "query", "rankkit")),
    "harness Neumann g, rankkit reg (query units)": ("harness", ("neumann", "query", "rankkit")),
    "harness exact g, LightGBM reg (raw units)": ("harness", ("exact", "raw", "lightgbm")),
    "harness Neumann g, LightGBM reg (raw units)": ("harness", ("neumann", "raw", "lightgbm")),
}


def fit_predict(kind, spec, train, test, seed, trees):
    X, y, q = train
    ptr = _ptr(q)
    if kind == "rankkit":
        kw = dict(n_estimators=trees, learning_rate=TREE["learning_rate"], max_depth=TREE["max_depth"],
                  random_state=seed, backend="lightgbm", n_jobs=1)
        kw.update(spec)
        return XENDCGRanker(**kw).fit(X, y, qid=q).predict(test[0])
    base = dict(verbosity=-1, seed=seed, num_threads=1, deterministic=True, force_col_wise=True, **TREE)
    if kind == "lgb":
        params = dict(base, objective="rank_xendcg", objective_seed=seed, **spec)
        ds = lightgbm.Dataset(X, y, group=np.diff(ptr), params=params)
        return lightgbm.train(params, ds, num_boost_round=trees).predict(test[0])
    formula, units, reg = spec
    params = dict(base, objective=xendcg_python(y, ptr, np.random.default_rng(seed), formula, units), **REG[reg])
    ds = lightgbm.Dataset(X, y, params=params)
    return lightgbm.train(params, ds, num_boost_round=trees).predict(test[0])


def run(dataset, cfg):
    train, test = load(dataset)
    if cfg.heavy:
        rng = np.random.default_rng(1)
        Xtr = np.asarray(train[0], dtype=np.float64)
        both = _heavy(np.vstack([Xtr, np.asarray(test[0], dtype=np.float64)]), rng)
        train = (both[: Xtr.shape[0]], train[1], train[2])
        test = (both[Xtr.shape[0]:], test[1], test[2])
    per_query = {}
    for label, (kind, spec) in METHODS.items():
        if cfg.only and not any(s in label for s in cfg.only):
            continue
        t0 = time.perf_counter()
        scores = [M.ndcg_score(test[1], fit_predict(kind, spec, train, test, s, cfg.trees), qid=test[2], k=10,
                               gain="exp", ties="worst", empty=1.0, per_query=True) for s in range(cfg.seeds)]
        per_query[label] = np.mean(scores, axis=0)
        print(f"{dataset:10s} {label:50s} {per_query[label].mean():.4f}  "
              f"(seeds {' '.join(f'{np.mean(s):.4f}' for s in scores)}; {time.perf_counter() - t0:.0f}s)", flush=True)
    ref = per_query.get("LightGBM rank_xendcg (reference)")
    rows = []
    for label, v in per_query.items():
        if ref is None or v is ref:
            rows.append([label, f"{v.mean():.4f}", "", ""])
            continue
        d = v - ref
        p = stats.ttest_rel(v, ref).pvalue if np.any(d) else 1.0
        rows.append([label, f"{v.mean():.4f}", f"{100 * d.mean():+.2f}", f"{p:.3f}"])
    n_train = np.unique(train[2]).size
    return (f"### {dataset}{' (heavy-tailed features)' if cfg.heavy else ''}: {n_train} training queries, "
            f"{np.unique(test[2]).size} test queries\n\n"
            + markdown_table(["method", "NDCG@10", "vs rank_xendcg (points)", "paired t p"], rows))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="*", default=["mq2008", "clueweb09", "yahoo", "synthetic"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trees", type=int, default=300)
    parser.add_argument("--heavy", action="store_true", help="heavy-tailed monotone transform of every feature")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of method labels")
    cfg = parser.parse_args(argv)
    sections = []
    for dataset in cfg.datasets:
        if dataset != "synthetic" and not SHARED_DATA.exists():
            print(f"skipping {dataset}: {SHARED_DATA} is absent")
            continue
        sections.append(run(dataset, cfg))
    text = (f"XE-NDCG on LightGBM's engine: {cfg.trees} trees, lr 0.05, depth 6, num_leaves 64, no early stopping, "
            f"{cfg.seeds} random states; {machine_line()}\n\n" + "\n\n".join(sections))
    print("\n" + text)
    save_result("bench_xendcg.md", text)


if __name__ == "__main__":
    main()
