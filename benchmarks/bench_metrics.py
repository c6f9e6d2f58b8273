"""NDCG@10 with every tie policy against scikit-learn, on 1,000,000 documents.

10,000 queries of 100 documents each (the equal-length layout that
``sklearn.metrics.ndcg_score`` needs), graded labels 0..4 and scores rounded
to one decimal so that ties are frequent. Each timing is the median of 5 runs
after a warm-up (which also triggers numba compilation). rankkit uses the
linear gain and ``empty=0.0`` here so that its ``ties="average"`` value is
scikit-learn's number.

Run: ``python benchmarks/bench_metrics.py``
"""

import statistics
import time

import numba
import numpy as np
from sklearn.metrics import ndcg_score as sk_ndcg_score

from rankkit._metrics._api import evaluate_sorted
from rankkit.metrics import ndcg_score

N_QUERIES, N_DOCS, K, REPEATS = 10_000, 100, 10, 5


def median_time(fn):
    """Median wall-clock and process-CPU seconds of ``fn`` over ``REPEATS`` runs.

    CPU time (summed over threads) is reported too because wall time on a
    shared machine mostly measures the other processes.
    """
    fn()  # warm-up
    wall, cpu = [], []
    for _ in range(REPEATS):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main():
    rng = np.random.default_rng(0)
    y2 = rng.choice(5, size=(N_QUERIES, N_DOCS), p=[0.5, 0.2, 0.15, 0.1, 0.05]).astype(np.float64)
    s2 = np.round(rng.random((N_QUERIES, N_DOCS)) + 0.1 * y2, 1)
    y, s = y2.ravel(), s2.ravel()
    qid = np.repeat(np.arange(N_QUERIES), N_DOCS)
    ptr = np.arange(0, N_QUERIES * N_DOCS + 1, N_DOCS, dtype=np.int64)
    distinct = np.mean([np.unique(row).size for row in s2[:200]])
    print(f"{N_QUERIES * N_DOCS:,} documents in {N_QUERIES:,} queries, "
          f"~{distinct:.0f} distinct scores per query of {N_DOCS}; numba threads: {numba.get_num_threads()}")

    t_sk = median_time(lambda: sk_ndcg_score(y2, s2, k=K))
    v_sk = sk_ndcg_score(y2, s2, k=K)
    rows = []
    for ties in ("worst", "average", "best", "input"):
        kw = dict(k=K, ties=ties, gain="linear", empty=0.0)
        t_pub = median_time(lambda: ndcg_score(y, s, qid=qid, **kw))
        t_fast = median_time(lambda: evaluate_sorted("ndcg", y, s, ptr, **kw))
        rows.append((ties, ndcg_score(y, s, qid=qid, **kw), t_pub, t_fast))

    print(f"\n{'implementation':<38}{'NDCG@10':>10}{'wall s':>9}{'cpu s':>9}{'sklearn/this (wall)':>21}")
    print(f"{'sklearn.metrics.ndcg_score (average)':<38}{v_sk:>10.6f}{t_sk[0]:>9.4f}{t_sk[1]:>9.4f}{1.0:>21.1f}")
    for ties, value, t_pub, t_fast in rows:
        print(f"{'rankkit ndcg_score ties=' + ties:<38}{value:>10.6f}{t_pub[0]:>9.4f}{t_pub[1]:>9.4f}"
              f"{t_sk[0] / t_pub[0]:>21.1f}")
        print(f"{'  evaluate_sorted ties=' + ties:<38}{'':>10}{t_fast[0]:>9.4f}{t_fast[1]:>9.4f}"
              f"{t_sk[0] / t_fast[0]:>21.1f}")

if __name__ == "__main__":
    main()
