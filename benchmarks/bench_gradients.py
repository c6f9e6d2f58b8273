"""Gradient throughput of rankkit's ranking objectives on 1,000,000 documents.

10,000 queries of 100 documents, graded labels 0..4, scores rounded to one
decimal (many ties). Each objective: one warm-up call (numba compilation),
then the median wall time of ``--repeats`` calls of the path a booster uses
(``_gradient_hessian_sorted``: labels already checked, rows grouped), and
the peak memory allocated during one call (``tracemalloc``, which sees NumPy
buffers), reported per document to show it is O(n). ``cpu s`` is the process
CPU time of a call summed over threads: on a shared machine the wall time
overstates the cost, and ``cpu s / threads`` is what an idle machine would
approach.

Run::

    python benchmarks/bench_gradients.py            # 2 threads
    python benchmarks/bench_gradients.py --threads 1
    python benchmarks/bench_gradients.py --objective yeti --queries 2000   # YetiRank/YetiLoss only
"""

import argparse
import importlib.util
import statistics
import time
import tracemalloc

import numba
import numpy as np


def make_data(n_queries=10_000, size=100, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, size=n_queries * size).astype(np.float64)
    raw = np.round(rng.normal(size=y.shape[0]), 1)
    group_ptr = np.arange(0, n_queries * size + 1, size, dtype=np.int64)
    return y, raw, group_ptr


def objectives():
    from rankkit._objectives.lambdamart import LambdaMART
    from rankkit._objectives.query_rmse import QueryRMSE
    from rankkit._objectives.xendcg import XENDCG
    from rankkit._objectives.yetirank import YetiRank

    objs = {}
    if importlib.util.find_spec("rankkit._objectives.stochastic_rank") is not None:
        from rankkit._objectives.stochastic_rank import StochasticRank

        objs["StochasticRank ndcg@10, 1 sample"] = StochasticRank("ndcg@10", n_estimations=1, random_state=0)
    objs["LambdaMART ndcg, truncation 30"] = LambdaMART("ndcg", k=None, truncation=30)
    objs["LambdaMART ndcg, all pairs"] = LambdaMART("ndcg", k=None)
    objs["YetiRank classic, 10 perms"] = YetiRank(n_permutations=10, random_state=0)
    objs["YetiLoss ndcg, 10 perms"] = YetiRank("ndcg", n_permutations=10, random_state=0)
    objs["XE-NDCG"] = XENDCG(random_state=0)
    objs["QueryRMSE"] = QueryRMSE()
    return objs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--objective", default="", help="only objectives whose name contains this (case-insensitive)")
    args = parser.parse_args()
    numba.set_num_threads(args.threads)
    y, raw, ptr = make_data(args.queries)
    n = y.shape[0]
    print(f"{n:,} documents, {args.queries:,} queries, {numba.get_num_threads()} threads, "
          f"median of {args.repeats} after warm-up")
    print(f"{'objective':36s} {'median s':>9s} {'cpu s':>7s} {'Mdoc/s':>8s} {'peak MB':>8s} {'B/doc':>6s}")
    for name, obj in objectives().items():
        if args.objective.lower() not in name.lower():
            continue
        obj._check_params()
        yy = obj._check_labels(y)
        obj._gradient_hessian_sorted(yy, raw, ptr, 1)  # compile / load cache
        times, cpu = [], []
        for rep in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            obj._gradient_hessian_sorted(yy, raw, ptr, 2 + rep)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        tracemalloc.start()
        obj._gradient_hessian_sorted(yy, raw, ptr, 99)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        med = statistics.median(times)
        print(f"{name:36s} {med:9.3f} {statistics.median(cpu):7.3f} {n / med / 1e6:8.1f} "
              f"{peak / 1e6:8.1f} {peak / n:6.0f}")


if __name__ == "__main__":
    main()
