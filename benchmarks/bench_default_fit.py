"""Every ranker as a user gets it: defaults, no early stopping, fold 1 of every dataset.

For fold 1 of each dataset of ``bench_quality``, split as it splits it (MQ2008, ClueWeb09, the Yahoo sample,
``make_ranking``; those in ``../shared/data``) each rankkit ranker with its
defaults (the objective's target metric NDCG@10 where it has one) and with
``--old`` (100 trees at 0.1, the defaults before 300 at 0.05), next to
``xgboost.XGBRanker()``, ``lightgbm.LGBMRanker()`` and ``catboost.CatBoostRanker()``
(when installed) with theirs: fit time (one thread, median of ``--repeats`` fits
after a warm-up fit; and as a multiple of ``XGBRanker()``'s), test NDCG@10
(worst-order ties, exp gain) and the number of distinct test scores (1: a
constant model).

Run from the repository root::

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_default_fit.py
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_default_fit.py --datasets mq2008 --repeats 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_DATA, machine_line, markdown_table  # noqa: E402
from bench_quality import _NEEDS, DATASETS, RANKKIT, per_query_metrics  # noqa: E402

OLD = {"n_estimators": 100, "learning_rate": 0.1}


def methods(old):
    import lightgbm
    import xgboost

    import rankkit

    out = {}
    for label, (cls, params) in RANKKIT.items():
        out[label] = lambda X, y, q, c=cls, p=params: getattr(rankkit, c)(n_jobs=1, **p).fit(X, y, qid=q)
        if old:
            out[f"{label}, 100 trees at 0.1"] = (
                lambda X, y, q, c=cls, p=params: getattr(rankkit, c)(n_jobs=1, **OLD, **p).fit(X, y, qid=q))
    out["XGBRanker()"] = lambda X, y, q: xgboost.XGBRanker(n_jobs=1).fit(X, y, qid=q)
    out["LGBMRanker()"] = lambda X, y, q: lightgbm.LGBMRanker(n_jobs=1, verbose=-1).fit(
        X, y, group=np.unique(q, return_counts=True)[1])
    try:
        import catboost
    except ImportError:
        return out
    # CatBoost's ranker with its defaults: YetiRank, 1,000 iterations, its automatic learning rate.
    out["CatBoostRanker()"] = lambda X, y, q: catboost.CatBoostRanker(
        thread_count=1, verbose=False, allow_writing_files=False).fit(X, y, group_id=q)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--repeats", type=int, default=3, help="timed fits after the warm-up fit")
    parser.add_argument("--old", action="store_true", help="also 100 trees at 0.1 (the defaults before)")
    args = parser.parse_args(argv)
    print(machine_line())
    for dataset in args.datasets:
        if dataset in _NEEDS and not (SHARED_DATA / _NEEDS[dataset]).exists():
            print(f"skip {dataset}: {SHARED_DATA / _NEEDS[dataset]} not found")
            continue
        fold = next(iter(DATASETS[dataset]()))
        (X, y, q), (Xt, yt, qt) = fold["train"], fold["test"]
        order = np.argsort(q, kind="stable")  # query sizes for LightGBM describe consecutive rows
        X, y, q = X[order], y[order], q[order]
        rows = []
        for label, fit in methods(args.old).items():
            model = fit(X, y, q)  # warm-up (numba's kernels load from their cache)
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                model = fit(X, y, q)
                times.append(time.perf_counter() - start)
            score = np.asarray(model.predict(Xt), dtype=np.float64)
            ndcg = float(np.mean(per_query_metrics(yt, score, qt)["ndcg@10"]))
            rows.append([label, np.median(times), f"{ndcg:.4f}", str(np.unique(score).size)])
        xgb = next(row[1] for row in rows if row[0] == "XGBRanker()")
        rows = [[label, f"{t:.2f} ({t / xgb:.2f}x)", *rest] for label, t, *rest in rows]
        print(f"\n### {dataset}, fold 1: {X.shape[0]} training documents\n")
        print(markdown_table(["method", "fit s (median; x XGBRanker())", "test NDCG@10", "distinct test scores"],
                             rows))


if __name__ == "__main__":
    main()
