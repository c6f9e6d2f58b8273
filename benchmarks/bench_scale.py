"""Scale on one machine: a WEB30K-sized synthetic set, rankkit vs XGBoost's own rank:ndcg.

The data (``make_web30k_like``): ``--docs`` documents (default 3,700,000,
MSLR-WEB30K's size) with 136 float32 features, ~31,000 queries whose list
lengths are drawn log-normally between 20 and 1,000 (mean about 120, as in
WEB30K), graded labels 0-4 with WEB30K's skew (about half the documents
irrelevant); rows sorted by query. ``--list-scale 4`` makes every list 4x
longer with the same number of documents (a quarter of the queries), for
"what changes when lists get longer".

Methods, each in a fresh process that loads the rows, fits a 5-tree warm-up
on the first 20,000 rows (imports, numba's on-disk cache), resets the
process's peak-memory counter and fits once with ``--trees`` trees of depth
``--depth`` (learning rate 0.1, 256 bins, ``--threads`` threads):

* ``XGBoost rank:ndcg``: ``xgboost.train`` on a ``QuantileDMatrix(X, y,
  qid=qid)``, what ``XGBRanker.fit`` builds for ``tree_method="hist"``;
* rankkit ``LambdaMARTRanker(metric="ndcg")`` and
  ``StochasticRankRanker(metric="ndcg@10")`` on ``backend="xgboost"`` and
  ``backend="numba"``;
* ``rankkit.dask`` LambdaMART (with ``--dask-all`` also StochasticRank) on a
  ``distributed.LocalCluster`` of ``--workers`` worker processes with
  ``--threads / --workers`` threads each, reading the same rows from
  Parquet files (``--partitions`` of them, written once, outside the timed
  fit): the fit time includes reading, the shuffle by query (its share is
  reported as "layout") and building each worker's DMatrix; memory is each
  worker's peak resident set above its size before the fit, its share of
  the data included; with ``--dask-all``, XGBoost's own ``DaskXGBRanker(
  objective="rank:ndcg", allow_group_split=False)`` on the same cluster and
  files beside it.

Reported per method: fit wall time, peak resident memory of the fitting
process above what it held after loading the data (the data itself, 136 x 4
bytes per document, is on top, the same for every method), both as ratios
to XGBoost's, and training NDCG@10 (``rankkit.metrics``, worst-order ties).
Set ``OMP_WAIT_POLICY=PASSIVE`` on a loaded machine (OpenMP threads that
spin while waiting for a busy core make every engine several times slower).

Run from the repository root::

    .venv/bin/python benchmarks/bench_scale.py                               # full size: 3.7M docs, 500 trees
    .venv/bin/python benchmarks/bench_scale.py --docs 200000 --trees 20      # a quick look
    .venv/bin/python benchmarks/bench_scale.py --docs 370000 --list-scale 1,4 --no-dask
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

METHODS = [
    "XGBoost rank:ndcg",
    "rankkit LambdaMART on xgboost",
    "rankkit StochasticRank on xgboost",
    "rankkit LambdaMART on numba",
    "rankkit StochasticRank on numba",
    "rankkit.dask LambdaMART",
    "rankkit.dask StochasticRank",
    "XGBoost rank:ndcg through xgboost.dask",
]
N_FEATURES = 136


# --------------------------------------------------------------------------- data
def make_web30k_like(n_docs, *, list_scale=1.0, seed=0):
    """``(X, y, qid)``: WEB30K-sized synthetic rows sorted by query (see the module docstring)."""
    rng = np.random.default_rng(seed)
    lengths = []
    total = 0
    while total < n_docs:
        n = int(np.clip(round(np.exp(rng.normal(np.log(95.0), 0.65)) * list_scale), 20 * list_scale,
                        1000 * list_scale))
        lengths.append(min(n, n_docs - total))
        total += lengths[-1]
    lengths = np.asarray(lengths, dtype=np.int64)
    qid = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    X = np.empty((n_docs, N_FEATURES), dtype=np.float32)
    s = np.empty(n_docs, dtype=np.float32)
    w = rng.standard_normal(20).astype(np.float32)
    difficulty = rng.standard_normal(lengths.size).astype(np.float32)[qid]
    for a in range(0, n_docs, 100_000):  # chunks: no float64 copy of the whole matrix
        b = min(n_docs, a + 100_000)
        X[a:b] = rng.standard_normal((b - a, N_FEATURES), dtype=np.float32)
        X[a:b, 100:] = np.round(X[a:b, 100:] * 2)  # a block of few-valued, heavily tied features
        s[a:b] = (np.tanh(X[a:b, :20]) @ w + 0.5 * X[a:b, 20] * X[a:b, 21] + difficulty[a:b]
                  + rng.standard_normal(b - a, dtype=np.float32))
    y = np.digitize(s, np.quantile(s, [0.52, 0.8, 0.93, 0.985])).astype(np.float64)
    return X, y, qid


def memory_mb(field="VmHWM"):
    """This process's peak (VmHWM) or current (VmRSS) resident memory, MB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak():
    """Restart the VmHWM counter at the current resident size (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _on_cluster(method):
    return "dask" in method


# --------------------------------------------------------------------------- worker side
def fit_in_memory(method, X, y, qid, cfg):
    """Fit one in-memory method; returns training predictions."""
    common = dict(n_estimators=cfg["trees"], max_depth=cfg["depth"], learning_rate=0.1, max_bin=256,
                  n_jobs=cfg["threads"], random_state=0)
    if method == "XGBoost rank:ndcg":
        import xgboost

        params = {"objective": "rank:ndcg", "tree_method": "hist", "eta": 0.1, "max_depth": cfg["depth"],
                  "max_bin": 256, "lambda": 1.0, "min_child_weight": 1.0, "nthread": cfg["threads"],
                  "seed": 0, "disable_default_eval_metric": 1}
        dtrain = xgboost.QuantileDMatrix(X, y, qid=qid, max_bin=256, nthread=cfg["threads"])
        booster = xgboost.train(params, dtrain, num_boost_round=cfg["trees"])
        return booster.inplace_predict(X, predict_type="margin")
    from rankkit import LambdaMARTRanker, StochasticRankRanker

    name, backend = method.split()[1], method.rsplit(" ", 1)[1]
    if name == "LambdaMART":
        model = LambdaMARTRanker(metric="ndcg", backend=backend, **common)
    else:
        model = StochasticRankRanker(metric="ndcg@10", backend=backend, **common)
    model.fit(X, y, qid=qid)
    return model.predict(X)


def fit_dask(method, parquet, cfg):
    """Fit through rankkit.dask on a fresh LocalCluster; returns (predictions,
    seconds, each worker's peak MB above its resident size before the fit,
    the client process's peak MB)."""
    import dask.dataframe as dd
    import distributed

    import xgboost.dask as dxgb

    from rankkit.dask import DaskLambdaMARTRanker, DaskStochasticRankRanker, _DaskRanker

    threads = max(1, cfg["threads"] // cfg["workers"])
    common = dict(n_estimators=cfg["trees"], max_depth=cfg["depth"], learning_rate=0.1, max_bin=256,
                  n_jobs=threads, random_state=0)
    with distributed.LocalCluster(n_workers=cfg["workers"], threads_per_worker=threads, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        def warm_up():
            # Imports and numba's on-disk cache, as the in-memory warm-up.
            import rankkit.dask  # noqa: F401
            from rankkit._objectives.lambdamart import LambdaMART
            from rankkit._objectives.stochastic_rank import StochasticRank

            y = np.array([0.0, 1.0, 2.0])
            for obj in (LambdaMART(k=None), StochasticRank("ndcg@10")):
                obj.gradient_hessian(y, np.zeros(3), qid=[0, 0, 0])
            return True

        client.run(warm_up)
        client.run(reset_peak)
        baselines = list(client.run(memory_mb, "VmRSS").values())
        reset_peak()
        frame = dd.read_parquet(str(parquet))
        X, y = frame.drop(columns=["label", "row"]), frame["label"]
        layout = [0.0]
        if method.startswith("XGBoost"):
            model = dxgb.DaskXGBRanker(objective="rank:ndcg", tree_method="hist", n_estimators=cfg["trees"],
                                       max_depth=cfg["depth"], learning_rate=0.1, max_bin=256, n_jobs=threads,
                                       random_state=0, allow_group_split=False)
            model.client = client
            t0 = time.perf_counter()
            model.fit(X.drop(columns=["qid"]), y, qid=X["qid"])
            seconds = time.perf_counter() - t0
            X = X.drop(columns=["qid"])
        else:
            model_class = DaskLambdaMARTRanker if "LambdaMART" in method else DaskStochasticRankRanker
            model = model_class(**common, **({} if "LambdaMART" in method else {"metric": "ndcg@10"}),
                                client=client)
            original = _DaskRanker._lay_out

            def timed(self, *a, **k):  # the shuffle by query and its summary
                t = time.perf_counter()
                out = original(self, *a, **k)
                layout[0] += time.perf_counter() - t
                return out

            _DaskRanker._lay_out = timed
            t0 = time.perf_counter()
            model.fit(X, y)
            seconds = time.perf_counter() - t0
            _DaskRanker._lay_out = original
        peaks = [p - b for p, b in zip(client.run(memory_mb).values(), baselines)]
        client_peak = memory_mb()
        pred = client.compute(model.predict(X)).result().to_numpy()
        rows = client.compute(frame["row"]).result().to_numpy()
    back = np.empty_like(pred)
    back[rows] = pred  # the caller's row order
    return back, seconds, peaks, client_peak, layout[0]


def worker(args):
    cfg = {"trees": args.trees, "depth": args.depth, "threads": args.threads, "workers": args.workers}
    if _on_cluster(args.worker):
        pred, seconds, peaks, client_peak, layout = fit_dask(args.worker, args.parquet, cfg)
        np.save(args.pred, pred)
        print(json.dumps({"seconds": seconds, "worker_peak_mb": peaks, "client_peak_mb": client_peak,
                          "layout_seconds": layout}))
        return
    X = np.load(args.data + ".X.npy")
    y = np.load(args.data + ".y.npy")
    qid = np.load(args.data + ".qid.npy")
    small = dict(cfg, trees=5)
    fit_in_memory(args.worker, X[:20_000], y[:20_000], qid[:20_000], small)
    loaded = memory_mb("VmRSS")
    exact = reset_peak()
    t0 = time.perf_counter()
    pred = fit_in_memory(args.worker, X, y, qid, cfg)
    seconds = time.perf_counter() - t0
    peak = memory_mb("VmHWM")
    np.save(args.pred, np.asarray(pred, dtype=np.float64))
    print(json.dumps({"seconds": seconds, "extra_mb": peak - loaded, "loaded_mb": loaded, "exact_peak": exact}))


# --------------------------------------------------------------------------- driver side
def run(method, files, args):
    pred = Path(files["tmp"]) / "pred.npy"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", method, "--data", files["data"],
           "--parquet", files["parquet"], "--pred", str(pred), "--trees", str(args.trees), "--depth",
           str(args.depth), "--threads", str(args.threads), "--workers", str(args.workers)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{method} failed:\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["pred"] = np.load(pred)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=3_700_000)
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="rankkit.dask worker processes")
    parser.add_argument("--partitions", type=int, default=16, help="Parquet files read by rankkit.dask")
    parser.add_argument("--list-scale", default="1", help="comma-separated list-length multipliers")
    parser.add_argument("--only", default=None, help="comma-separated substrings of method names")
    parser.add_argument("--no-dask", action="store_true", help="skip the rankkit.dask methods")
    parser.add_argument("--dask-all", action="store_true",
                        help="also StochasticRank through rankkit.dask and XGBoost's own DaskXGBRanker")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--parquet", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--pred", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)

    sys.path.insert(0, str(HERE))
    from _common import machine_line, markdown_table, save_result

    from rankkit.metrics import ndcg_score

    methods = [m for m in METHODS if not (args.no_dask and _on_cluster(m))]
    if not args.dask_all:
        methods = [m for m in methods if m not in ("rankkit.dask StochasticRank",
                                                   "XGBoost rank:ndcg through xgboost.dask")]
    if args.only:
        keys = [k.strip().lower() for k in args.only.split(",")]
        methods = [m for m in methods if any(k in m.lower() for k in keys)]
    sections = []
    for scale in [float(s) for s in args.list_scale.split(",")]:
        t0 = time.perf_counter()
        X, y, qid = make_web30k_like(args.docs, list_scale=scale)
        sizes = np.bincount(qid)
        name = (f"{args.docs:,} documents x {N_FEATURES} features, {sizes.size:,} queries of "
                f"{sizes.min()}-{sizes.max()} documents (mean {sizes.mean():.0f}, median {np.median(sizes):.0f})")
        print(f"{name} (made in {time.perf_counter() - t0:.0f} s)", flush=True)
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            files = {"tmp": tmp, "data": str(Path(tmp) / "rows"), "parquet": str(Path(tmp) / "parquet")}
            for part, values in (("X", X), ("y", y), ("qid", qid)):
                np.save(f"{files['data']}.{part}.npy", values)
            if any(_on_cluster(m) for m in methods):
                import pandas as pd

                os.makedirs(files["parquet"])
                # Rows shuffled over the files: every query is spread over many partitions.
                order = np.random.default_rng(1).permutation(args.docs)
                for i, rows in enumerate(np.array_split(order, args.partitions)):
                    rows = np.sort(rows)
                    part = pd.DataFrame(X[rows], columns=[f"x{j}" for j in range(N_FEATURES)])
                    part["qid"] = qid[rows]
                    part["label"] = y[rows]
                    part["row"] = rows
                    part.to_parquet(Path(files["parquet"]) / f"part-{i:04d}.parquet", index=False)
            del X
            for method in methods:
                res = run(method, files, args)
                pred = res.pop("pred")
                res["ndcg"] = float(ndcg_score(y, pred, qid=qid, k=10, ties="worst"))
                res["docs"] = args.docs
                results[method] = res
                print(f"  {method:36s} {json.dumps(res)}", flush=True)
        sections.append(table(name, results, args, markdown_table))
    policy = os.environ.get("OMP_WAIT_POLICY", "not set")
    text = (f"{args.trees} trees of depth {args.depth}, learning rate 0.1, 256 bins, {args.threads} threads; "
            f"rankkit.dask: {args.workers} worker processes; OMP_WAIT_POLICY {policy}.\n"
            f"Machine: {machine_line()}; load average at the end {os.getloadavg()[0]:.1f}\n\n"
            + "\n\n".join(sections))
    print()
    print(text)
    print(f"(saved to {save_result(f'scale_{args.docs}_{args.trees}.md', text)})")


def table(name, results, args, markdown_table):
    base = results.get("XGBoost rank:ndcg")
    rows = []
    for method, res in results.items():
        if _on_cluster(method):
            # A worker's peak includes its share of the data, read from Parquet.
            peaks = res["worker_peak_mb"]
            memory = f"{' / '.join(f'{p:,.0f}' for p in peaks)} per worker, data included"
            if res.get("layout_seconds"):
                memory += f"; layout {res['layout_seconds']:.0f} s of the fit"
            extra = None
        else:
            extra = res["extra_mb"]
            memory = f"{extra:,.0f}"
        time_ratio = f"{res['seconds'] / base['seconds']:.2f}" if base else "-"
        mem_ratio = f"{extra / base['extra_mb']:.2f}" if base and extra is not None else "-"
        rows.append([method, f"{res['seconds']:.1f}", time_ratio, memory, mem_ratio,
                     f"{(extra or 0) * 2**20 / args.docs:.0f}" if extra is not None else "-", f"{res['ndcg']:.4f}"])
    return f"{name}:\n\n" + markdown_table(
        ["method", "fit s", "time / XGBoost", "peak MB above the data", "memory / XGBoost", "bytes per doc",
         "train NDCG@10"], rows)


if __name__ == "__main__":
    main()
