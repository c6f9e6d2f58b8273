"""Tree building: rankkit's numba GBDT (``backend="numba"``) vs XGBoost ``hist``.

Both engines get the same data, the same gradient callback (rankkit's
QueryRMSE on rows sorted by query), the same tree learner (depth-wise trees
without split noise: ``grow_policy="depthwise", random_strength=0`` on numba,
whose default learner ``bench_engine.py`` measures), depth, bins, learning
rate, L2 and number of trees, and the same number of threads, so the comparison is about
histogram tree building and prediction. Every measurement runs in a fresh
process: fit time (binning/DMatrix + boosting), predict time (all trees on
the training rows), peak resident memory above the process's footprint after
loading the data (``VmHWM`` after resetting it through
``/proc/self/clear_refs``), and final training loss. Numba compile time is
measured separately: first call in a fresh process with an empty numba cache
("cold"), then again with that cache filled ("cached").

Usage::

    python benchmarks/bench_backends.py            # MQ2008 Fold1 + 1,000,000 x 136 synthetic
    python benchmarks/bench_backends.py --quick    # synthetic set with 200,000 documents
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import reset_peak, rss_peak_mb  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MQ2008 = ROOT / ".." / "shared" / "data" / "MQ2008" / "Fold1" / "train.txt.gz"


def load(dataset, n_docs):
    """X (float32), y, group_ptr with rows grouped by query."""
    if dataset == "mq2008":
        from sklearn.datasets import load_svmlight_file

        X, y, qid = load_svmlight_file(str(MQ2008), query_id=True)
        X = X.toarray().astype(np.float32)
    else:
        # WEB30K-like: 136 features, ~120 documents per query, graded labels 0..4.
        rng = np.random.default_rng(0)
        X = np.empty((n_docs, 136), dtype=np.float32)
        for a in range(0, n_docs, 100_000):  # chunks: no float64 copy of the whole matrix
            b = min(n_docs, a + 100_000)
            X[a:b] = rng.standard_normal((b - a, 136), dtype=np.float32)
        X[:, 100:] = np.round(X[:, 100:] * 2)  # a block of heavily tied, few-valued features
        w = rng.standard_normal(20)
        s = X[:, :20] @ w.astype(np.float32) + 0.5 * X[:, 20] * X[:, 21] + rng.standard_normal(n_docs)
        y = np.digitize(s, np.quantile(s, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)
        qid = np.repeat(np.arange(n_docs // 120 + 1), 120)[:n_docs]
    _, starts = np.unique(qid, return_index=True)
    ptr = np.append(np.sort(starts), len(qid)).astype(np.int64)
    return X, np.asarray(y, dtype=np.float64), ptr


def best_of_3(res, predict):
    """Predict time: the best of three calls (wall and CPU), as timeit does."""
    walls, cpus = [], []
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        pred = predict()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    res["predict_s"], res["predict_cpu_s"] = min(walls), min(cpus)
    return pred


def worker(args):
    from rankkit.objectives import QueryRMSE

    X, y, ptr = load(args.dataset, args.n_docs)
    obj = QueryRMSE()

    def grad_fn(raw, t=0):
        return obj._gradient_hessian_sorted(y, raw, ptr, 0)

    p = dict(n_estimators=args.n_estimators, learning_rate=0.1, max_depth=args.max_depth,
             min_child_weight=1.0, reg_lambda=1.0, max_bin=256)
    res = {"engine": args.engine, "dataset": args.dataset, "n_docs": int(X.shape[0]),
           "n_features": int(X.shape[1])}
    if args.engine == "numba":
        from rankkit._backends.numba import NumbaBackend

        def make():
            # XGBoost's tree learner (depth-wise, no split noise): the comparison is tree building,
            # not the engine's default learner (oblivious trees with split noise, bench_engine.py).
            return NumbaBackend(subsample=1.0, colsample_bytree=1.0, n_jobs=args.threads, random_state=0,
                                backend_params={"grow_policy": "depthwise", "random_strength": 0.0}, **p)
        # Load the (cached) kernels before timing: compile time is reported apart.
        t0 = time.perf_counter()
        Xs, ys = X[:256], y[:256]  # same dtype as X: the same specialisations
        warm = make()
        warm.n_estimators = 2
        warm.fit(Xs, lambda r, t: (r - ys, np.ones_like(r)))
        warm.predict(Xs)
        res["load_s"] = time.perf_counter() - t0
        reset_peak()
        base = rss_peak_mb()
        t0, c0 = time.perf_counter(), time.process_time()
        model = make().fit(X, grad_fn)
        res["fit_s"], res["fit_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
        res["peak_mb"] = rss_peak_mb() - base
        pred = best_of_3(res, lambda: model.predict(X))
    else:
        import xgboost as xgb

        params = {"tree_method": "hist", "max_depth": p["max_depth"], "eta": p["learning_rate"],
                  "min_child_weight": p["min_child_weight"], "lambda": p["reg_lambda"],
                  "max_bin": p["max_bin"], "nthread": args.threads, "base_score": 0.0}
        reset_peak()
        base = rss_peak_mb()
        t0, c0 = time.perf_counter(), time.process_time()
        dtrain = xgb.DMatrix(X, label=y, nthread=args.threads)
        bst = xgb.train(params, dtrain, num_boost_round=p["n_estimators"],
                        obj=lambda preds, d: grad_fn(preds.astype(np.float64)))
        res["fit_s"], res["fit_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
        res["peak_mb"] = rss_peak_mb() - base
        pred = best_of_3(res, lambda: bst.inplace_predict(X)).astype(np.float64)
    g, _ = grad_fn(pred)
    res["train_query_rmse"] = float(np.sqrt(np.mean(g * g)))
    print(json.dumps(res))


def compile_worker(args):
    """First fit + predict on tiny data: cold (empty cache) or cached."""
    t0 = time.perf_counter()
    from rankkit._backends.numba import NumbaBackend

    t_import = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = X[:, 0]
    t0 = time.perf_counter()
    for policy in ("depthwise", "oblivious"):
        b = NumbaBackend(n_estimators=2, learning_rate=0.1, max_depth=3, min_child_weight=1.0,
                         reg_lambda=1.0, subsample=0.8, colsample_bytree=0.8, max_bin=256,
                         n_jobs=None, random_state=0, backend_params={"grow_policy": policy})
        b.fit(X, lambda r, t: (r - y, np.ones_like(r)), eval_X=[X])
        b.predict(X)
    print(json.dumps({"import_s": t_import, "first_fit_predict_s": time.perf_counter() - t0}))


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"worker failed: {' '.join(cmd)}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="synthetic set with 200,000 documents")
    ap.add_argument("--datasets", default="mq2008,synthetic")
    ap.add_argument("--n-estimators", type=int, default=100)
    ap.add_argument("--max-depth", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=["numba", "xgboost", "compile"])
    ap.add_argument("--dataset", default="mq2008")
    ap.add_argument("--n-docs", type=int, default=1_000_000)
    args = ap.parse_args()
    if args.worker == "compile":
        return compile_worker(args)
    if args.worker:
        args.engine = args.worker
        return worker(args)

    # Each engine runs under its own default OpenMP environment, as users get it:
    # no OMP_WAIT_POLICY is set here (XGBoost's pool keeps its default, spinning
    # policy; importing rankkit starts numba's pool passive, see rankkit/_threads.py).
    # A policy the caller set is passed on to both.
    env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    with tempfile.TemporaryDirectory() as cache:
        cenv = dict(env, NUMBA_CACHE_DIR=cache)
        cold = run([sys.executable, __file__, "--worker", "compile"], cenv)
        cached = run([sys.executable, __file__, "--worker", "compile"], cenv)
    print(f"numba compile, fresh process: cold {cold['first_fit_predict_s']:.1f} s, "
          f"cached {cached['first_fit_predict_s']:.2f} s (import {cached['import_s']:.2f} s)")
    n_docs = 200_000 if args.quick else 1_000_000
    header = (f"{'dataset':<10} {'docs':>9} {'engine':<8} {'fit s':>8} {'fit cpu s':>10} {'predict s':>10} "
              f"{'pred cpu s':>10} {'peak MB':>8} {'train loss':>11}")
    print(header)
    for ds in args.datasets.split(","):
        rows = {}
        for engine in ("xgboost", "numba"):
            cmd = [sys.executable, __file__, "--worker", engine, "--dataset", ds, "--n-docs", str(n_docs),
                   "--n-estimators", str(args.n_estimators), "--max-depth", str(args.max_depth),
                   "--threads", str(args.threads)]
            r = rows[engine] = run(cmd, env)
            print(f"{ds:<10} {r['n_docs']:>9} {engine:<8} {r['fit_s']:>8.2f} {r['fit_cpu_s']:>10.2f} {r['predict_s']:>10.3f} "
                  f"{r['predict_cpu_s']:>10.3f} {r['peak_mb']:>8.0f} {r['train_query_rmse']:>11.5f}", flush=True)
        x, nb = rows["xgboost"], rows["numba"]
        print(f"{ds:<10} ratios numba/xgboost: fit {nb['fit_s'] / x['fit_s']:.2f}x, "
              f"fit cpu {nb['fit_cpu_s'] / x['fit_cpu_s']:.2f}x, predict {nb['predict_s'] / x['predict_s']:.2f}x, "
              f"predict cpu {nb['predict_cpu_s'] / x['predict_cpu_s']:.2f}x, "
              f"peak memory {nb['peak_mb'] / max(x['peak_mb'], 1e-9):.2f}x", flush=True)


if __name__ == "__main__":
    main()
