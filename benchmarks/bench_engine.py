"""The default engine against XGBoost, LightGBM and CatBoost: fit, predict, memory, stages.

Two scales (``--scale``):

* ``200k``: 2,000 queries of 100 documents, 50 float32 features, labels 0-4
  from a noisy linear score; 200 trees of depth 6 (``--trees``, ``--depth``
  override);
* ``web30k``: ``bench_scale.make_web30k_like(--docs)`` (default 3.7 million
  documents, 136 features, WEB30K's list lengths and label skew); depth 8.

Methods, per objective (``--objectives``; LambdaMART optimises NDCG@10,
StochasticRank NDCG@10, YetiRank its default), each in a fresh process:

* ``default``: the ranker as a user gets it (``backend="auto"``: the numba
  engine, oblivious trees with random split strength);
* ``numba depthwise``: ``backend_params={"grow_policy": "depthwise",
  "random_strength": 0}``;
* ``on XGBoost``: the same ranker with ``backend="xgboost"`` (XGBoost's
  ``hist`` engine driven by rankkit's gradients: the engine-for-engine
  comparison);

and once per scale the peers' own rankers: XGBoost ``rank:ndcg`` on a
``QuantileDMatrix`` (``inplace_predict``), LightGBM ``lambdarank`` and, with
``--catboost``, CatBoost ``YetiRank`` (oblivious trees; slow: off by
default). All with the same trees, depth, learning rate 0.1, 256 bins and
``--threads`` threads.

A worker builds the data, fits a 5-tree warm-up on 20,000 rows (imports,
numba's cache, thread pools), resets the peak-memory counter, then fits
``--repeats`` times (median wall time) and predicts the training rows
``--repeats`` times (median). "Memory" is the peak resident set of the
first full fit above what the process held before it (the data itself, the
same for every method, excluded). For the default engine the first fit also
runs under cProfile, and the time of each numba kernel is summed into stages
(gradients, histograms, split search, partition, score update, binning).
Ratios are to XGBoost ``rank:ndcg`` measured in the same run.

Run from the repository root (results also in benchmarks/results/)::

    .venv/bin/python benchmarks/bench_engine.py                              # 200k, 1 and 2 threads
    .venv/bin/python benchmarks/bench_engine.py --scale web30k --trees 200 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import machine_line, markdown_table, median, reset_peak, save_result  # noqa: E402
from bench_scale import memory_mb  # noqa: E402

RANKERS = {"lambdamart": ("LambdaMARTRanker", {"metric": "ndcg", "k": 10}),
           "yetirank": ("YetiRanker", {}),
           "stochasticrank": ("StochasticRankRanker", {"metric": "ndcg", "k": 10})}
VARIANTS = {"default": {}, "numba depthwise": {"backend": "numba", "backend_params": {
    "grow_policy": "depthwise", "random_strength": 0}}, "on XGBoost": {"backend": "xgboost"}}
PEERS = ("XGBoost rank:ndcg", "LightGBM lambdarank", "CatBoost YetiRank")

#: numba kernels (by name) summed into each stage of the profile.
STAGES = {
    "histograms": ("level_histograms",),
    "split search": ("best_oblivious_split", "oblivious_node_gains", "best_split_one"),
    "partition": ("split_sides", "partition_segments", "gather_gradients", "sampled_sides", "sum_segment"),
    "score update": ("scatter_leaf_values", "add_tree_positions", "add_tree_binned"),
    "binning": ("fit_bin_edges", "bin_block", "transform", "_greedy", "quantile"),
}


def make_data(scale, docs):
    if scale == "web30k":
        from bench_scale import make_web30k_like

        return make_web30k_like(docs)
    rng = np.random.default_rng(0)
    nq, nd, nf = 2000, 100, 50
    X = rng.normal(size=(nq * nd, nf)).astype(np.float32)
    s = X @ rng.normal(size=nf) + rng.normal(size=nq * nd) * 2
    y = np.clip(np.floor((s - s.mean()) / s.std() * 1.2 + 1.5), 0, 4)
    return X, y, np.repeat(np.arange(nq), nd)


# --------------------------------------------------------------------------- worker side
def make_fit(method, cfg):
    """``fit(X, y, qid) -> predict(X)`` for one method."""
    common = dict(n_estimators=cfg["trees"], max_depth=cfg["depth"], learning_rate=0.1)
    threads = cfg["threads"]
    if method == "XGBoost rank:ndcg":
        import xgboost

        def fit(X, y, qid, trees=cfg["trees"]):
            params = {"objective": "rank:ndcg", "tree_method": "hist", "eta": 0.1, "max_depth": cfg["depth"],
                      "max_bin": 256, "nthread": threads, "seed": 0, "disable_default_eval_metric": 1}
            booster = xgboost.train(params, xgboost.QuantileDMatrix(X, y, qid=qid, max_bin=256, nthread=threads),
                                    num_boost_round=trees)
            return lambda Z: booster.inplace_predict(Z, predict_type="margin")
        return fit
    if method == "LightGBM lambdarank":
        import lightgbm

        def fit(X, y, qid, trees=cfg["trees"]):
            model = lightgbm.LGBMRanker(objective="lambdarank", n_estimators=trees, max_depth=cfg["depth"],
                                        num_leaves=2 ** cfg["depth"], learning_rate=0.1, max_bin=255,
                                        n_jobs=threads, random_state=0, verbose=-1)
            model.fit(X, y, group=np.unique(qid, return_counts=True)[1])
            return model.predict
        return fit
    if method == "CatBoost YetiRank":
        import catboost

        def fit(X, y, qid, trees=cfg["trees"]):
            model = catboost.CatBoostRanker(loss_function="YetiRank", iterations=trees, depth=cfg["depth"],
                                            learning_rate=0.1, border_count=255, thread_count=threads,
                                            random_seed=0, verbose=False)
            model.fit(X, y, group_id=qid)
            return model.predict
        return fit
    import rankkit

    objective, variant = method.split(" ", 1)
    name, kw = RANKERS[objective]

    def fit(X, y, qid, trees=cfg["trees"]):
        model = getattr(rankkit, name)(**dict(common, n_estimators=trees), **kw, **VARIANTS[variant],
                                       n_jobs=threads, random_state=0)
        model.fit(X, y, qid=qid)
        return model.predict
    return fit


def stage_profile(fit, X, y, qid):
    """Seconds per stage of one fit (cProfile's time of each numba kernel)."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    t0 = time.perf_counter()
    fit(X, y, qid)
    total = time.perf_counter() - t0
    profile.disable()
    stages = dict.fromkeys(list(STAGES) + ["gradients"], 0.0)
    for (path, _, func), (_, _, tottime, _, _) in pstats.Stats(profile).stats.items():
        stage = next((s for s, names in STAGES.items() if func in names), None)
        if stage is None and "_objectives" in path and "kernel" in func:
            stage = "gradients"
        if stage is not None:
            stages[stage] += tottime
    stages["other (Python, numpy, metrics)"] = total - sum(stages.values())
    return total, stages


def worker(args):
    cfg = {"trees": args.trees, "depth": args.depth, "threads": int(args.threads)}
    X, y, qid = make_data(args.scale, args.docs)
    fit = make_fit(args.worker, cfg)
    fit(X[:20_000], y[:20_000], qid[:20_000], trees=5)
    loaded = memory_mb("VmRSS")
    reset_peak()
    fits, predicts = [], []
    t0 = time.perf_counter()
    predict = fit(X, y, qid)
    fits.append(time.perf_counter() - t0)
    extra = memory_mb("VmHWM") - loaded
    for _ in range(args.repeats - 1):
        t0 = time.perf_counter()
        predict = fit(X, y, qid)
        fits.append(time.perf_counter() - t0)
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        predict(X)
        predicts.append(time.perf_counter() - t0)
    out = {"fit": median(fits), "fits": fits, "predict": median(predicts), "extra_mb": extra}
    if args.profile:
        out["profile_total"], out["stages"] = stage_profile(fit, X, y, qid)
    print(json.dumps(out))


# --------------------------------------------------------------------------- driver side
def run(method, threads, args, profile=False):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", method, "--scale", args.scale,
           "--docs", str(args.docs), "--trees", str(args.trees), "--depth", str(args.depth),
           "--threads", str(threads), "--repeats", str(args.repeats)] + (["--profile"] if profile else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent)
    if proc.returncode != 0:
        raise SystemExit(f"{method} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=["200k", "web30k"], default="200k")
    parser.add_argument("--docs", type=int, default=3_700_000, help="documents at --scale web30k")
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--depth", type=int)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--objectives", default="lambdamart,yetirank,stochasticrank")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--catboost", action="store_true", help="also CatBoost YetiRank (slow)")
    parser.add_argument("--peers", default=",".join(PEERS[:2]),
                        help="the engines' own rankers (XGBoost rank:ndcg is the reference of every ratio)")
    parser.add_argument("--no-profile", action="store_true", help="skip the stage profile (one more fit)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.depth is None:
        args.depth = 6 if args.scale == "200k" else 8
    if args.worker:
        return worker(args)

    methods = [f"{o} {v}" for o in args.objectives.split(",") for v in args.variants.split(",")]
    peers = args.peers.split(",") + (["CatBoost YetiRank"] if args.catboost else [])
    if "XGBoost rank:ndcg" not in peers:
        parser.error("--peers must include 'XGBoost rank:ndcg', the reference of every ratio")
    methods = peers + methods
    threads = [int(t) for t in args.threads.split(",")]
    results = {}
    for t in threads:
        for method in methods:
            results[method, t] = run(method, t, args, profile=method.endswith(" default") and not args.no_profile)
            r = results[method, t]
            print(f"{method:32s} {t} thread(s): fit {r['fit']:8.2f} s  predict {r['predict']:7.3f} s  "
                  f"memory +{r['extra_mb']:7.0f} MB", flush=True)

    rows = []
    for method in methods:
        row = [method]
        for t in threads:
            r, ref = results[method, t], results["XGBoost rank:ndcg", t]
            row += [f"{r['fit']:.2f} ({r['fit'] / ref['fit']:.2f}x)",
                    f"{r['predict']:.3f} ({r['predict'] / ref['predict']:.2f}x)"]
        r, ref = results[method, threads[-1]], results["XGBoost rank:ndcg", threads[-1]]
        row.append(f"{r['extra_mb']:.0f} ({r['extra_mb'] / ref['extra_mb']:.2f}x)")
        rows.append(row)
    header = ["method"] + [h for t in threads for h in (f"fit s, {t} thr (vs XGBoost)",
                                                         f"predict s, {t} thr (vs XGBoost)")]
    header.append(f"peak MB above the data, {threads[-1]} thr (vs XGBoost)")
    text = [f"bench_engine --scale {args.scale}: {args.trees} trees of depth {args.depth}, median of "
            f"{args.repeats}; {machine_line()}", "", markdown_table(header, rows)]
    for method in methods:
        if not method.endswith(" default") or args.no_profile:
            continue
        for t in threads:
            r = results[method, t]
            stage_rows = [[s, f"{v:.2f}", f"{v / r['profile_total']:.0%}"] for s, v in r["stages"].items()]
            text += ["", f"Stages of one fit, {method}, {t} thread(s) (cProfile, {r['profile_total']:.2f} s):", "",
                     markdown_table(["stage", "s", "share"], stage_rows)]
    text = "\n".join(text)
    print("\n" + text)
    save_result(f"bench_engine_{args.scale}.md", text)


if __name__ == "__main__":
    main()
