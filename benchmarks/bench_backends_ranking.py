"""Fit time of LambdaMART on every engine, rankkit's gradients vs each engine's own.

Methods (all at the same number of trees, no early stopping):

* rankkit ``LambdaMARTRanker(metric="ndcg")`` on ``backend="lightgbm"``,
  ``"xgboost"`` and ``"numba"``;
* LightGBM's own ``lambdarank`` with the tree settings the rankkit LightGBM
  backend hands LightGBM (``num_leaves = 2 ** depth``, ``max_depth``,
  ``min_data_in_leaf = 0``, 256 bins, ``deterministic``, ``force_col_wise``;
  the worker checks them against the backend's own ``params_``): the same
  trees and leaves budget. The regularisers are each side's own:
  ``min_sum_hessian_in_leaf = 1`` and ``lambda_l2 = 3`` on LambdaMART's raw
  hessians for ``lambdarank``, the ranker's ``min_child_weight = 1`` and
  ``reg_lambda = 3`` in its query units (times the curvature unit, user guide
  section 9) for rankkit;
* XGBoost's own ``rank:ndcg`` (``hist``, same depth, bins, ``lambda``,
  ``min_child_weight``).

Every method runs in a fresh process that loads the rows (sorted by query)
from a temporary file, fits once with 5 trees (imports, numba's cache), then
``--repeats`` times with ``--trees`` trees; the table gives the median and
range of the timed fits, the time spent computing rankkit's gradients, the
mean number of leaves per tree and the training NDCG@10 (rankkit.metrics,
worst-order ties) as a sanity check. The engines' own methods never import
rankkit, so they run with their OpenMP defaults, as their users get them;
rankkit's methods run as rankkit's users get them (importing rankkit starts
the OpenMP runtime that numba and LightGBM share with passive waiting,
``rankkit/_threads.py``). The script sets no ``OMP_WAIT_POLICY``; one you set
is passed to every process.

Run from the repository root::

    .venv/bin/python benchmarks/bench_backends_ranking.py                 # MQ2008 Fold1 train
    .venv/bin/python benchmarks/bench_backends_ranking.py --docs 200000   # synthetic WEB30K-like rows
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

METHODS = [
    "rankkit LambdaMART on lightgbm",
    "LightGBM lambdarank",
    "rankkit LambdaMART on xgboost",
    "XGBoost rank:ndcg",
    "rankkit LambdaMART on numba",
]


# --------------------------------------------------------------------------- worker side
def lightgbm_tree_params(cfg):
    """The tree settings rankkit's LightGBM backend uses (checked in the worker)."""
    return {
        "learning_rate": cfg["lr"],
        "max_depth": cfg["depth"],
        "num_leaves": 2 ** cfg["depth"],
        "min_sum_hessian_in_leaf": 1.0,
        "min_data_in_leaf": 0,
        "lambda_l2": 3.0,
        "max_bin": 256,
        "deterministic": True,
        "force_col_wise": True,
        "num_threads": cfg["threads"],
    }


def fit_method(method, X, y, qid, n_trees, cfg):
    """Fit once; returns (predict_train, mean leaves per tree, seconds in rankkit gradients)."""
    if method.startswith("rankkit"):
        from rankkit import LambdaMARTRanker
        from rankkit._objectives.lambdamart import LambdaMART

        grad_seconds = [0.0]
        original = LambdaMART._gradient_hessian_sorted

        def timed(self, *args):
            t0 = time.perf_counter()
            out = original(self, *args)
            grad_seconds[0] += time.perf_counter() - t0
            return out

        LambdaMART._gradient_hessian_sorted = timed
        try:
            backend = method.rsplit(" ", 1)[1]
            model = LambdaMARTRanker(metric="ndcg", n_estimators=n_trees, max_depth=cfg["depth"],
                                     learning_rate=cfg["lr"], max_bin=256, n_jobs=cfg["threads"],
                                     random_state=0, backend=backend)
            model.fit(X, y, qid=qid)
        finally:
            LambdaMART._gradient_hessian_sorted = original
        if backend == "lightgbm":
            params = model.backend_.params_
            own_units = ("min_sum_hessian_in_leaf", "lambda_l2")  # rankkit's in query units, scaled
            expected = {k: v for k, v in lightgbm_tree_params(cfg).items() if k not in own_units}
            differ = {k: (params.get(k), v) for k, v in expected.items() if params.get(k) != v}
            if differ:
                raise SystemExit(f"LightGBM settings differ from the backend's: {differ}")
            leaves = np.mean([t["num_leaves"] for t in model.booster_.dump_model()["tree_info"]])
        elif backend == "xgboost":
            leaves = np.mean([d.count("leaf=") for d in model.booster_.get_dump()])
        else:
            leaves = np.mean([int(np.sum(t["left"] < 0)) for t in model.booster_.trees])
        return model.predict(X), float(leaves), grad_seconds[0]
    sizes = np.unique(qid, return_counts=True)[1]  # rows are sorted by query
    if method == "LightGBM lambdarank":
        import lightgbm

        # No seed: it drives only bagging and feature subsampling, both off here.
        params = {**lightgbm_tree_params(cfg), "objective": "lambdarank", "metric": "None", "verbosity": -1}
        booster = lightgbm.train(params, lightgbm.Dataset(X, y, group=sizes), num_boost_round=n_trees)
        leaves = np.mean([t["num_leaves"] for t in booster.dump_model()["tree_info"]])
        return booster.predict(X, raw_score=True), float(leaves), 0.0
    if method == "XGBoost rank:ndcg":
        import xgboost

        params = {"objective": "rank:ndcg", "tree_method": "hist", "eta": cfg["lr"], "max_depth": cfg["depth"],
                  "max_bin": 256, "lambda": 3.0, "min_child_weight": 1.0, "nthread": cfg["threads"],
                  "seed": 0, "disable_default_eval_metric": 1}
        dtrain = xgboost.DMatrix(X, y)
        dtrain.set_group(sizes)
        booster = xgboost.train(params, dtrain, num_boost_round=n_trees)
        leaves = np.mean([d.count("leaf=") for d in booster.get_dump()])
        return booster.predict(xgboost.DMatrix(X), output_margin=True), float(leaves), 0.0
    raise SystemExit(f"unknown method {method!r}")


def worker(args):
    data = np.load(args.data)
    X, y, qid = data["X"], data["y"], data["qid"]
    cfg = {"depth": args.depth, "lr": args.lr, "threads": args.threads}
    fit_method(args.worker, X, y, qid, 5, cfg)  # warm-up: imports, numba's on-disk cache
    times, grads = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        pred, leaves, grad_s = fit_method(args.worker, X, y, qid, args.trees, cfg)
        times.append(time.perf_counter() - t0)
        grads.append(grad_s)
    np.save(args.pred, pred)
    print(json.dumps({"times": times, "grad": grads, "leaves": leaves}))


# --------------------------------------------------------------------------- driver side
def load_rows(args):
    """X (float32), y, qid with every query's rows contiguous and sorted by query."""
    sys.path.insert(0, str(HERE))
    from bench_backends import load

    if args.docs:
        X, y, ptr = load("synthetic", args.docs)
        name = f"synthetic {args.docs:,} x {X.shape[1]} (WEB30K-like, 120 docs per query)"
    else:
        X, y, ptr = load("mq2008", None)
        name = f"MQ2008 Fold1 train ({X.shape[0]:,} x {X.shape[1]})"
    qid = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    return np.ascontiguousarray(X, dtype=np.float32), y, qid, name


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--docs", type=int, default=0, help="synthetic rows instead of MQ2008 (0: MQ2008)")
    parser.add_argument("--only", default=None, help="comma-separated substrings of method names")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--pred", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)

    sys.path.insert(0, str(HERE))
    from _common import machine_line, markdown_table, save_result

    from rankkit.metrics import ndcg_score

    X, y, qid, name = load_rows(args)
    methods = METHODS
    if args.only:
        keys = [k.strip().lower() for k in args.only.split(",")]
        methods = [m for m in methods if any(k in m.lower() for k in keys)]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.npz"
        np.savez(data, X=X, y=y, qid=qid)
        for method in methods:
            pred = Path(tmp) / "pred.npy"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", method, "--data", str(data),
                   "--pred", str(pred), "--trees", str(args.trees), "--depth", str(args.depth),
                   "--lr", str(args.lr), "--threads", str(args.threads), "--repeats", str(args.repeats)]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            if proc.returncode != 0:
                raise SystemExit(f"{method} failed:\n{proc.stderr[-3000:]}")
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            res["ndcg"] = ndcg_score(y, np.load(pred), qid=qid, k=10, ties="worst")
            results[method] = res
            print(f"{method:32s} median {statistics.median(res['times']):.2f} s "
                  f"(runs {', '.join(f'{t:.2f}' for t in res['times'])})", flush=True)

    rows = []
    for method, res in results.items():
        t = res["times"]
        grad = statistics.median(res["grad"]) if method.startswith("rankkit") else None
        rows.append([method, f"{statistics.median(t):.2f}", f"{min(t):.2f}-{max(t):.2f}",
                     f"{grad:.2f}" if grad is not None else "-", f"{res['leaves']:.1f}", f"{res['ndcg']:.4f}"])

    def ratio(a, b):
        if a in results and b in results:
            r = statistics.median(results[a]["times"]) / statistics.median(results[b]["times"])
            return f"- {a} / {b}: {r:.2f}x\n"
        return ""

    policy = os.environ.get("OMP_WAIT_POLICY", "not set")
    text = (
        f"{name}: LambdaMART NDCG, {args.trees} trees, depth {args.depth} (at most {2 ** args.depth} leaves), "
        f"learning rate {args.lr}, 256 bins, {args.threads} threads; median of {args.repeats} fits in a fresh "
        f"process per method after a 5-tree warm-up; OMP_WAIT_POLICY {policy}.\n"
        f"Machine: {machine_line()}\n\n"
        + markdown_table(["method", "median fit s", "min-max s", "rankkit gradients s", "leaves per tree",
                          "train NDCG@10"], rows)
        + "\n\nRatios of median fit times:\n"
        + ratio("rankkit LambdaMART on lightgbm", "LightGBM lambdarank")
        + ratio("rankkit LambdaMART on xgboost", "XGBoost rank:ndcg")
        + ratio("rankkit LambdaMART on xgboost", "rankkit LambdaMART on lightgbm")
        + ratio("rankkit LambdaMART on numba", "rankkit LambdaMART on lightgbm")
    )
    print()
    print(text)
    tag = f"synthetic{args.docs}" if args.docs else "mq2008"
    print(f"(saved to {save_result(f'backends_ranking_{tag}.md', text)})")


if __name__ == "__main__":
    main()
