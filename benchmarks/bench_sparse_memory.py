"""Memory and time of training on a sparse matrix, per backend.

rankkit gives a sparse matrix scikit-learn's meaning on every backend: an
absent entry is 0, NaN is missing. XGBoost on its own reads absent entries as
missing, so the XGBoost backend hands it dense row blocks (64 MB each) that
XGBoost quantises into a ``QuantileDMatrix`` as they come. This script
measures what that costs against XGBoost's own ``DMatrix`` of the sparse
matrix (absent = missing, the backend's former behaviour) and of the dense
array, and against the other backends, on the same CSR matrix.

Every configuration runs in a fresh process: the data are built, the peak
resident memory is reset (``/proc/self/clear_refs``), then the fit runs; the
table gives the rise of the peak (``VmHWM``) during the fit above the loaded
data, the fit time, and the size of the data themselves. Gradients come from
rankkit's QueryRMSE on 120-document queries; depth 6, 256 bins.

Usage::

    python benchmarks/bench_sparse_memory.py                 # 1,000,000 x 136, 30% non-zero, 10 trees
    python benchmarks/bench_sparse_memory.py --rows 100000   # quicker
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import reset_peak, rss_peak_mb  # noqa: E402

CONFIGS = {
    "xgboost DMatrix(csr), absent = missing (before)": "xgb_dmatrix_csr",
    "xgboost DMatrix(dense array)": "xgb_dmatrix_dense",
    "rankkit xgboost backend, csr (dense blocks)": "backend_xgboost_csr",
    "rankkit xgboost backend, dense array": "backend_xgboost_dense",
    "rankkit lightgbm backend, csr": "backend_lightgbm_csr",
    "rankkit numba backend, csr": "backend_numba_csr",
}


def make_data(rows, features, density, seed=0):
    """CSR float32 matrix with ``density`` non-zeros, labels and ``group_ptr``
    (queries of 120 rows), built in blocks (no dense copy of the whole)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    blocks, labels = [], []
    w = rng.normal(size=features).astype(np.float32)
    for a in range(0, rows, 50_000):
        b = min(rows, a + 50_000)
        block = rng.normal(size=(b - a, features)).astype(np.float32)
        block[rng.random((b - a, features)) >= density] = 0.0
        score = block @ w + rng.normal(size=b - a).astype(np.float32)
        labels.append(np.digitize(score, np.quantile(score, [0.5, 0.75, 0.9, 0.97])))
        blocks.append(sp.csr_matrix(block))
    X = sp.vstack(blocks, format="csr")
    y = np.concatenate(labels).astype(np.float64)
    ptr = np.append(np.arange(0, rows, 120), rows).astype(np.int64)
    return X, y, ptr


def worker(args):
    from rankkit.objectives import QueryRMSE

    X, y, ptr = make_data(args.rows, args.features, args.density)
    obj = QueryRMSE()
    out = {"config": args.config, "rows": X.shape[0], "features": X.shape[1],
           "nonzero_share": X.nnz / (X.shape[0] * X.shape[1]),
           "csr_mb": (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20}
    if args.config.endswith("dense"):
        X = X.toarray()
        out["dense_mb"] = X.nbytes / 2**20

    def grad_fn(raw, t=0):
        return obj._gradient_hessian_sorted(y, np.asarray(raw, dtype=np.float64), ptr, 0)

    # Engines imported before the measurement: their import is not the fit's memory.
    from rankkit._backends import get_backend

    engine = "xgboost" if args.config.startswith("xgb_") else args.config.split("_")[1]
    backend_cls = get_backend(engine)
    settings = dict(n_estimators=args.trees, learning_rate=0.1, max_depth=6, min_child_weight=1.0, reg_lambda=1.0,
                    subsample=1.0, colsample_bytree=1.0, max_bin=256, n_jobs=args.threads, random_state=0)
    if engine == "numba":  # load the cached kernels before measuring
        backend_cls(**{**settings, "n_estimators": 1}).fit(X[:256], lambda r, t: (r, np.ones_like(r)))
    reset_peak()
    base = rss_peak_mb()
    t0 = time.perf_counter()
    if args.config.startswith("xgb_dmatrix"):
        import xgboost

        params = {"tree_method": "hist", "max_depth": 6, "eta": 0.1, "max_bin": 256, "nthread": args.threads,
                  "base_score": 0.0, "disable_default_eval_metric": 1}
        dtrain = xgboost.DMatrix(X, nthread=args.threads)
        xgboost.train(params, dtrain, args.trees, obj=lambda preds, d: grad_fn(preds))
    else:
        backend_cls(**settings).fit(X, grad_fn)
    out["fit_s"] = time.perf_counter() - t0
    out["peak_rise_mb"] = rss_peak_mb() - base
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--density", type=float, default=0.3)
    parser.add_argument("--trees", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.config:
        worker(args)
        return
    print(f"{args.rows:,} x {args.features}, {args.density:.0%} non-zero, {args.trees} trees, depth 6, "
          f"{args.threads} threads")
    print("| configuration | peak rise during fit, MB | fit s |")
    print("|---|---|---|")
    for label, config in CONFIGS.items():
        cmd = [sys.executable, __file__, "--config", config, "--rows", str(args.rows), "--features",
               str(args.features), "--density", str(args.density), "--trees", str(args.trees),
               "--threads", str(args.threads)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"| {label} | failed: {run.stderr.strip().splitlines()[-1]} | |")
            continue
        res = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"| {label} | {res['peak_rise_mb']:.0f} | {res['fit_s']:.1f} |", flush=True)
    print(f"(data: CSR {res['csr_mb']:.0f} MB; the dense float32 array would be "
          f"{args.rows * args.features * 4 / 2**20:.0f} MB)")


if __name__ == "__main__":
    main()
