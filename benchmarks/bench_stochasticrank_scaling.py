"""How StochasticRank's gradient cost grows with list length, next to CatBoost.

For each list length L (queries of L documents, about ``--docs`` documents in
all) this times one StochasticRank NDCG@10 gradient (one noise sample, SFA on)
as the median of ``--runs`` calls, and reports microseconds per document. The
same is measured on the ClueWeb09-webis lists (230 to 728 documents per query).

CatBoost's StochasticRank computes its gradient inside ``fit``; its cost per
document and iteration is estimated as

    (time of fit with StochasticRank - time of the same fit with QueryRMSE)
    / (documents * iterations)

on the same lists (5 random features, depth 2, 2 threads), i.e. the fit with a
cheap loss isolates tree building. CatBoost's default ``top=-1`` (the whole
list, O(n^2) per query) is measured where it fits in ``--catboost-budget``
seconds, and ``top=10`` (the like-for-like of NDCG@10) always.

Run from the repository root::

    python benchmarks/bench_stochasticrank_scaling.py            # full sizes
    python benchmarks/bench_stochasticrank_scaling.py --docs 200000 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numba
import numpy as np

from rankkit._objectives.stochastic_rank import StochasticRank

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def time_rankkit(y, ptr, runs, seed=0):
    """Median wall and process-CPU seconds of one gradient call (sorted path).

    CPU time (all threads) is reported too: on a shared machine the wall time
    mostly measures the other processes.
    """
    raw = np.random.default_rng(seed).normal(size=y.shape[0])
    obj = StochasticRank("ndcg@10", random_state=0)
    obj._check_params()
    y = obj._check_labels(y)
    obj._gradient_hessian_sorted(y, raw, ptr, 1)  # compile / warm caches
    times, cpu = [], []
    for r in range(runs):
        t, c = time.perf_counter(), time.process_time()
        obj._gradient_hessian_sorted(y, raw, ptr, r + 2)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(times), statistics.median(cpu)


def time_catboost_fit(X, y, qid, loss, iterations, runs, threads):
    """Median wall and process-CPU seconds of a CatBoost fit (CatBoost runs in-process)."""
    import catboost

    pool = catboost.Pool(X, y, group_id=qid)
    params = dict(loss_function=loss, iterations=iterations, depth=2, thread_count=threads,
                  verbose=False, border_count=32, random_seed=0)
    times, cpu = [], []
    for _ in range(runs):
        model = catboost.CatBoost(params)
        t, c = time.perf_counter(), time.process_time()
        model.fit(pool)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(times), statistics.median(cpu)


def catboost_per_doc(X, y, qid, top, iterations, runs, threads):
    """Wall and CPU seconds per document per iteration of CatBoost's StochasticRank
    gradient (fit minus the same fit with QueryRMSE), and the StochasticRank fit's wall time."""
    loss = "StochasticRank:metric=NDCG" + ("" if top is None else f";top={top}")
    w_sr, c_sr = time_catboost_fit(X, y, qid, loss, iterations, runs, threads)
    w_base, c_base = time_catboost_fit(X, y, qid, "QueryRMSE", iterations, runs, threads)
    denom = len(y) * iterations
    return max(w_sr - w_base, 0.0) / denom, max(c_sr - c_base, 0.0) / denom, w_sr


def synthetic(L, n_docs, seed=0):
    rng = np.random.default_rng(seed)
    n_q = max(1, n_docs // L)
    y = rng.integers(0, 5, n_q * L).astype(float)
    ptr = np.arange(n_q + 1, dtype=np.int64) * L
    return y, ptr


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[100, 300, 1000, 3000, 10000])
    ap.add_argument("--docs", type=int, default=1_000_000, help="documents per setting (rankkit)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--catboost", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--catboost-docs", type=int, default=20_000, help="documents per setting (CatBoost)")
    ap.add_argument("--catboost-iterations", type=int, default=10)
    ap.add_argument("--catboost-runs", type=int, default=3)
    ap.add_argument("--catboost-budget", type=float, default=60.0,
                    help="skip a CatBoost top=-1 fit predicted to take longer (seconds)")
    args = ap.parse_args()
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))

    rows = []
    pair_cost = None  # CatBoost top=-1 seconds per (document, list position) pair

    def add_row(name, y, ptr, X=None, qid=None):
        t, c = time_rankkit(y, ptr, args.runs)
        row = [name, len(y), f"{1e6 * t / len(y):.3f}", f"{1e6 * c / len(y):.3f}"]
        if args.catboost:
            rng = np.random.default_rng(1)
            if X is None:
                m = min(len(y), max(args.catboost_docs, int(ptr[1])))
                m = int(ptr[np.searchsorted(ptr, m, side="right") - 1])  # whole queries
                yc = y[:m]
                qc = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))[:m]
                Xc = rng.normal(size=(m, 5))
            else:
                yc, qc, Xc = y, qid, X
            sizes = np.unique(qc, return_counts=True)[1]
            pairs = float((sizes.astype(float) ** 2).sum())
            row.append(len(yc))
            nonlocal pair_cost
            iters, runs, mark = args.catboost_iterations, args.catboost_runs, ""
            predicted = None if pair_cost is None else pair_cost * pairs * iters * runs
            if predicted is not None and predicted > args.catboost_budget:
                # Whole-list CatBoost is O(n^2) per query: fall back to one fit of one iteration.
                iters, runs, mark = 1, 1, "*"
                predicted = pair_cost * pairs
            if predicted is not None and predicted > args.catboost_budget:
                row.append(f"skip (~{predicted:.0f}s)")
            else:
                w, c, t_sr = catboost_per_doc(Xc, yc, qc, None, iters, runs, args.threads)
                pair_cost = t_sr / (pairs * iters)
                row.append(f"{1e6 * w:.3f}{mark} / {1e6 * c:.3f}{mark}")
            w, c, _ = catboost_per_doc(Xc, yc, qc, 10, args.catboost_iterations,
                                       args.catboost_runs, args.threads)
            row.append(f"{1e6 * w:.3f} / {1e6 * c:.3f}")
        rows.append(row)
        print(" | ".join(str(c) for c in row), flush=True)

    print(f"threads={args.threads}  rankkit: median of {args.runs} gradient calls; CatBoost: "
          f"median of {args.catboost_runs} fits of {args.catboost_iterations} iterations, minus QueryRMSE")
    print("lists | rankkit docs | rankkit NDCG@10 us/doc (wall) | (CPU, all threads) | CatBoost docs | CatBoost top=-1 us/doc/iter "
          "| CatBoost top=10 us/doc/iter")
    for L in args.lengths:
        y, ptr = synthetic(L, args.docs)
        add_row(f"L={L}", y, ptr)

    path = DATA / "ClueWeb09-webis" / "Fold1" / "train.txt.gz"
    if path.exists():
        from sklearn.datasets import load_svmlight_file

        X, y, qid = load_svmlight_file(str(path), query_id=True)
        ptr = np.concatenate([[0], np.cumsum(np.unique(qid, return_counts=True)[1])]).astype(np.int64)
        add_row("ClueWeb09 Fold1 train", y.astype(float), ptr, X=X.toarray(), qid=qid)
    else:
        print(f"(ClueWeb09-webis not found at {path}: skipped)")

    # Throughput target: 1,000,000 documents (10,000 queries of 100), NDCG@10, one sample.
    y, ptr = synthetic(100, 1_000_000)
    t, c = time_rankkit(y, ptr, args.runs)
    print(f"throughput: 1,000,000 docs (10,000 x 100), NDCG@10, 1 sample, {args.threads} threads: "
          f"{t:.3f} s wall, {c:.3f} s CPU (all threads) per gradient (target <= 0.25 s wall)")


if __name__ == "__main__":
    main()
