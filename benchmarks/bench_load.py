"""Fit times on an idle machine and beside busy processes: how each ranker shares cores.

Every method fits MQ2008 Fold1 train (9,630 documents x 46 features; rows
sorted by query) with the same budget: 200 trees, depth 6, learning rate 0.1,
256 bins, ``n_jobs`` threads. Methods:

* rankkit ``LambdaMARTRanker``, ``StochasticRankRanker`` and ``YetiRanker`` on
  ``backend="xgboost"``, ``"lightgbm"`` and ``"numba"``;
* XGBoost's own ``rank:ndcg`` (``hist``), LightGBM's own ``lambdarank`` (the
  tree settings rankkit's LightGBM backend uses) and CatBoost's
  ``LambdaMart:metric=NDCG`` (depth-6 symmetric trees).

Each (method, ``n_jobs``, condition) runs in a fresh process: a 5-tree
warm-up fit (imports, numba's on-disk cache), then ``--repeats`` timed fits;
the table shows the median wall time, the CPU seconds of the process during
the fit (all its threads) and the slowdown ``loaded / idle``. The engines'
own methods never import rankkit, so they run as their users get them.

Conditions:

* **idle**: nothing started by the benchmark. On a shared machine this is
  not idle: every row reports the 1-minute load average when the run started
  and the CPU other processes used during the timed fits, in cores
  (machine-wide busy time from ``/proc/stat`` minus the fitting process's own
  CPU time, divided by the wall time).
* **loaded**: ``--busy`` (default 2) background processes, each a pure-Python
  busy loop, start before the fitting process and are killed after it. With
  2 cores, ``n_jobs=2`` and two busy processes, fair sharing gives each of the
  four runnable threads half a core: a slowdown of about 2x.

Environment: the benchmark sets nothing; ``--env NAME=VALUE`` (repeatable)
passes a variable to every fitting process (e.g. ``OMP_WAIT_POLICY=PASSIVE``
to compare wait policies), and ``--import-first MODULES`` imports those modules
before rankkit in rankkit's processes (e.g. ``sklearn,lightgbm``: what a
script that imports them at the top does).

Run from the repository root::

    .venv/bin/python benchmarks/bench_load.py                         # everything (about 15 min)
    .venv/bin/python benchmarks/bench_load.py --only "lambdamart [xgboost],xgboost rank" --n-jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

RANKKIT_RANKERS = {
    "LambdaMART": ("LambdaMARTRanker", {"metric": "ndcg"}),
    "StochasticRank": ("StochasticRankRanker", {"metric": "ndcg"}),
    "YetiRank": ("YetiRanker", {}),
}
BACKENDS = ("xgboost", "lightgbm", "numba")
METHODS = (
    [f"rankkit {r} [{b}]" for b in BACKENDS for r in RANKKIT_RANKERS]
    + ["XGBoost rank:ndcg", "LightGBM lambdarank", "CatBoost LambdaMart"]
)


# --------------------------------------------------------------------------- worker side
def _machine_busy_seconds():
    """CPU seconds the whole machine has spent busy (all cores), from /proc/stat; None elsewhere."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()[1:]
    except OSError:
        return None
    ticks = [int(v) for v in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def make_fit(method, cfg):
    """``fit(X, y, qid, n_trees) -> seconds in rankkit's gradients (0 for the engines)``."""
    if method.startswith("rankkit"):
        import rankkit
        from rankkit._objectives._base import RankingObjective

        name, backend = method[len("rankkit "):].rstrip("]").split(" [")
        cls_name, params = RANKKIT_RANKERS[name]
        grad_seconds = [0.0]
        original = RankingObjective._gradient_hessian_sorted

        def timed(self, *args):
            t0 = time.perf_counter()
            try:
                return original(self, *args)
            finally:
                grad_seconds[0] += time.perf_counter() - t0

        RankingObjective._gradient_hessian_sorted = timed

        def fit(X, y, qid, n_trees):
            grad_seconds[0] = 0.0
            model = getattr(rankkit, cls_name)(
                **params, n_estimators=n_trees, max_depth=cfg["depth"], learning_rate=cfg["lr"],
                max_bin=256, n_jobs=cfg["n_jobs"], random_state=0, backend=backend,
            )
            model.fit(X, y, qid=qid)
            return grad_seconds[0]

        return fit

    if method == "XGBoost rank:ndcg":
        import xgboost

        def fit(X, y, qid, n_trees):
            params = {"objective": "rank:ndcg", "tree_method": "hist", "eta": cfg["lr"],
                      "max_depth": cfg["depth"], "max_bin": 256, "lambda": 1.0, "min_child_weight": 1.0,
                      "nthread": cfg["n_jobs"], "seed": 0, "disable_default_eval_metric": 1}
            dtrain = xgboost.DMatrix(X, y, qid=qid, nthread=cfg["n_jobs"])
            xgboost.train(params, dtrain, num_boost_round=n_trees)
            return 0.0

        return fit

    if method == "LightGBM lambdarank":
        import lightgbm

        def fit(X, y, qid, n_trees):
            sizes = np.unique(qid, return_counts=True)[1]
            params = {"objective": "lambdarank", "metric": "None", "learning_rate": cfg["lr"],
                      "max_depth": cfg["depth"], "num_leaves": 2 ** cfg["depth"],
                      "min_sum_hessian_in_leaf": 1.0, "min_data_in_leaf": 0, "lambda_l2": 1.0,
                      "max_bin": 256, "deterministic": True, "force_col_wise": True,
                      "num_threads": cfg["n_jobs"], "verbosity": -1}
            lightgbm.train(params, lightgbm.Dataset(X, y, group=sizes), num_boost_round=n_trees)
            return 0.0

        return fit

    if method == "CatBoost LambdaMart":
        import catboost

        def fit(X, y, qid, n_trees):
            model = catboost.CatBoost({
                "loss_function": "LambdaMart:metric=NDCG", "iterations": n_trees, "depth": cfg["depth"],
                "learning_rate": cfg["lr"], "border_count": 255, "thread_count": cfg["n_jobs"],
                "random_seed": 0, "verbose": False, "allow_writing_files": False,
            })
            model.fit(catboost.Pool(X, y, group_id=qid))
            return 0.0

        return fit

    raise SystemExit(f"unknown method {method!r}; known: {METHODS}")


def worker(args):
    if args.realtime:
        # SCHED_FIFO: the fit's threads (they inherit it) run whenever they are
        # runnable, ahead of every ordinary process: an idle machine for the fit.
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    for module in filter(None, (args.import_first or "").split(",")):
        if args.worker.startswith("rankkit"):
            __import__(module)
    cfg = {"depth": args.depth, "lr": args.lr, "n_jobs": args.n_jobs}
    fit = make_fit(args.worker, cfg)
    data = np.load(args.data)
    X, y, qid = data["X"], data["y"], data["qid"]
    fit(X, y, qid, 5)  # warm-up: imports, numba's cache, the engines' first-call set-up
    runs = []
    for _ in range(args.repeats):
        busy0, cpu0, t0 = _machine_busy_seconds(), time.process_time(), time.perf_counter()
        grad = fit(X, y, qid, args.trees)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        busy1 = _machine_busy_seconds()
        others = None if busy0 is None else max(0.0, (busy1 - busy0 - cpu) / wall)
        runs.append({"wall": wall, "cpu": cpu, "grad": grad, "others": others})
    print(json.dumps(runs))


# --------------------------------------------------------------------------- driver side
def load_rows(path):
    """MQ2008 Fold1 train as float32 X, y, qid with each query's rows contiguous and sorted."""
    sys.path.insert(0, str(HERE))
    from _common import load_svmlight

    X, y, qid = load_svmlight(path, n_features=46)
    order = np.argsort(qid, kind="stable")
    return np.ascontiguousarray(X[order]), y[order], qid[order]


BUSY_LOOP = "while True:\n    pass\n"


def start_busy(n):
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(n)]


def stop_busy(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def run_worker(method, n_jobs, args, data, env, realtime=False):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", method, "--data", str(data),
           "--trees", str(args.trees), "--depth", str(args.depth), "--lr", str(args.lr),
           "--n-jobs", str(n_jobs), "--repeats", str(args.repeats)]
    if args.import_first:
        cmd += ["--import-first", args.import_first]
    if realtime:
        cmd.append("--realtime")
    load = os.getloadavg()[0]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{method} (n_jobs={n_jobs}) failed:\n{proc.stderr[-3000:]}")
    runs = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"load": load, "runs": runs}


def summary(res):
    walls = [r["wall"] for r in res["runs"]]
    i = walls.index(sorted(walls)[(len(walls) - 1) // 2])  # the median run (lower median)
    med = res["runs"][i]
    others = [r["others"] for r in res["runs"] if r["others"] is not None]
    return {
        "wall": statistics.median(walls), "min": min(walls), "max": max(walls), "cpu": med["cpu"],
        "grad": med["grad"], "load": res["load"], "others": statistics.median(others) if others else None,
    }


def fmt_cell(s):
    spread = f" ({s['min']:.2f}-{s['max']:.2f})"
    return f"{s['wall']:.2f}{spread}", f"{s['cpu']:.2f}", (
        f"{s['load']:.1f} / {s['others']:.1f}" if s["others"] is not None else f"{s['load']:.1f} / -")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--n-jobs", default="2,1", help="comma-separated thread counts (default 2,1)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", type=int, default=2, help="busy background processes in the loaded condition")
    parser.add_argument("--conditions", default="idle,loaded")
    parser.add_argument("--only", default=None, help="comma-separated substrings of method names")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment variable for every fitting process (repeatable)")
    parser.add_argument("--import-first", default=None,
                        help="modules rankkit's processes import before rankkit, e.g. sklearn,lightgbm")
    parser.add_argument("--realtime-idle", action="store_true",
                        help="run the idle condition's fits at real-time priority (SCHED_FIFO, needs root): "
                             "what an idle machine would give, on a shared one")
    parser.add_argument("--realtime", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data" / "MQ2008")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        args.n_jobs = int(args.n_jobs)
        return worker(args)

    sys.path.insert(0, str(HERE))
    from _common import machine_line, markdown_table, save_result

    methods = list(METHODS)
    if args.only:
        keys = [k.strip().lower() for k in args.only.split(",")]
        methods = [m for m in methods if any(k in m.lower() for k in keys)]
    n_jobs_list = [int(v) for v in args.n_jobs.split(",")]
    conditions = [c.strip() for c in args.conditions.split(",")]
    env = dict(os.environ)
    for item in args.env:
        name, _, value = item.partition("=")
        env[name] = value
    # Busy processes are killed in a ``finally``; make SIGTERM run it too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    X, y, qid = load_rows(args.data.resolve() / "Fold1" / "train.txt.gz")
    t_start = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.npz"
        np.savez(data, X=X, y=y, qid=qid)
        for n_jobs in n_jobs_list:
            for method in methods:
                for condition in conditions:
                    busy = start_busy(args.busy) if condition == "loaded" else []
                    try:
                        res = run_worker(method, n_jobs, args, data, env,
                                         realtime=args.realtime_idle and condition == "idle")
                    finally:
                        stop_busy(busy)
                    s = results[(method, n_jobs, condition)] = summary(res)
                    walls = ", ".join(f"{r['wall']:.2f}" for r in res["runs"])
                    print(f"{method:34s} n_jobs={n_jobs} {condition:6s} median {s['wall']:6.2f} s "
                          f"(runs {walls}), CPU {s['cpu']:.2f} s, "
                          f"gradients {s['grad']:.2f} s, load {s['load']:.1f}, others "
                          f"{s['others'] if s['others'] is None else round(s['others'], 2)} cores", flush=True)

    header = ["method", "n_jobs"]
    for c in conditions:
        header += [f"{c} s (min-max)", f"{c} CPU s", f"{c} load avg / others' cores"]
    if {"idle", "loaded"} <= set(conditions):
        header.append("slowdown loaded / idle")
    rows = []
    for n_jobs in n_jobs_list:
        for method in methods:
            row = [method, str(n_jobs)]
            for c in conditions:
                row += list(fmt_cell(results[(method, n_jobs, c)]))
            if {"idle", "loaded"} <= set(conditions):
                ratio = results[(method, n_jobs, "loaded")]["wall"] / results[(method, n_jobs, "idle")]["wall"]
                row.append(f"**{ratio:.1f}x**")
            rows.append(row)
    set_env = ", ".join(args.env) or "nothing set"
    text = (
        f"MQ2008 Fold1 train ({X.shape[0]:,} x {X.shape[1]}), {args.trees} trees, depth {args.depth}, "
        f"learning rate {args.lr}, 256 bins; median of {args.repeats} fits per fresh process after a "
        f"5-tree warm-up; loaded = {args.busy} pure-Python busy processes beside the fit. "
        f"Environment: {set_env}"
        + (f"; rankkit imported after {args.import_first}" if args.import_first else "")
        + ("; idle fits at real-time priority (SCHED_FIFO)" if args.realtime_idle else "") + ".\n"
        f"Machine: {machine_line()}; shared with other jobs, so 'idle' is not idle: the load "
        "average at the start of each run and the cores other processes used during the fits "
        "(the loaded condition's own busy processes included) are given per row.\n\n"
        + markdown_table(header, rows)
        + f"\n\nTotal wall time: {time.perf_counter() - t_start:.0f} s"
    )
    print()
    print(text)
    print(f"(saved to {save_result('load.md', text)})")


if __name__ == "__main__":
    main()
