"""StochasticRank's synthetic example: does SGLB find the global optimum?

Ustimenko & Prokhorenkova (ICML 2020), Table 1: two queries, labels (3, 2, 1)
on one-hot features x1, x2, x3 and (3, 2) on x3, x1. With NDCG@3 and exp gain
the best reachable value is 0.917 (order x1 > x2 > x3 in both queries); the
order x1 > x3 > x2 is a local optimum at 0.903, where LambdaMART stops.
Settings (paper): 1000 trees, depth 3, learning rate 0.1, SGLB with
diffusion temperature 1e3 and model shrink rate 1e-3.

Run from the repository root::

    .venv/bin/python benchmarks/bench_toy_sglb.py            # 10 seeds
    .venv/bin/python benchmarks/bench_toy_sglb.py --seeds 3  # quicker
    # where the SGLB chain sits, and with less noise (an experiment, not a setting):
    .venv/bin/python benchmarks/bench_toy_sglb.py --sglb-only --trace
    .venv/bin/python benchmarks/bench_toy_sglb.py --sglb-only --trace --diffusion-temperature 1e4

Every model is scored by ``rankkit.metrics.ndcg_score(k=3, ties="worst",
gain="exp")``: ties count as the worst order, so a model that leaves two
documents tied does not get credit for an order it never committed to.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Five documents per fit: parallel kernels only add thread start-up cost here.
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Timer, machine_line, markdown_table, save_result  # noqa: E402

GLOBAL, LOCAL = 0.917, 0.903
PAPER = dict(n_estimators=1000, max_depth=3, learning_rate=0.1)
SGLB = dict(langevin=True, diffusion_temperature=1e3, model_shrink_rate=1e-3)


def _rankers():
    try:
        from rankkit import LambdaMARTRanker, StochasticRankRanker
    except ImportError:
        from rankkit._estimators import LambdaMARTRanker, StochasticRankRanker
    return StochasticRankRanker, LambdaMARTRanker


def ndcg3(y, score, qid):
    from rankkit.metrics import ndcg_score

    return float(ndcg_score(y, score, qid=qid, k=3, ties="worst", gain="exp"))


def run_rankkit(cls, params, X, y, qid, seed, backend, trace=False):
    # Five documents: one engine thread is fastest, and results do not depend
    # on the thread count anyway (counter-based randomness).
    model = cls(**params, **PAPER, random_state=seed, backend=backend, n_jobs=1)
    with Timer() as t:
        model.fit(X, y, qid=qid)
    final = model.predict(X)
    if trace:
        # The first t trees of the saved model predict c * F_t with c > 0 (the
        # shrink factors after t are folded into the leaves), and NDCG ignores
        # scale, so these are the NDCG values the chain visited.
        visited = np.array([
            ndcg3(y, model.backend_.predict(X, n_iterations=n), qid)
            for n in range(5, PAPER["n_estimators"] + 1, 5)
        ])
        at_global = np.round(visited, 3) >= GLOBAL
        print(f"    trace: share at {GLOBAL}: all iterations {at_global.mean():.2f}, "
              f"last half {at_global[len(at_global) // 2:].mean():.2f}; final scores {np.round(final, 3)}")
    return ndcg3(y, final, qid), t.seconds


def run_catboost(loss, X, y, qid, seed, langevin=True):
    import catboost

    params = {
        "loss_function": loss,
        "iterations": PAPER["n_estimators"],
        "depth": PAPER["max_depth"],
        "learning_rate": PAPER["learning_rate"],
        "random_seed": seed,
        "verbose": False,
        "thread_count": 1,
        "allow_writing_files": False,
    }
    if langevin:
        params.update(
            langevin=True,
            diffusion_temperature=SGLB["diffusion_temperature"],
            model_shrink_rate=SGLB["model_shrink_rate"],
        )
    model = catboost.CatBoost(params)
    with Timer() as t:
        model.fit(catboost.Pool(X, y, group_id=qid))
    return ndcg3(y, model.predict(X), qid), t.seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="number of seeds (0..seeds-1)")
    parser.add_argument("--backend", default="auto", help="rankkit backend: auto (the default), xgboost, lightgbm or numba")
    parser.add_argument("--no-catboost", action="store_true", help="skip the CatBoost rows")
    parser.add_argument("--diffusion-temperature", type=float, default=SGLB["diffusion_temperature"],
                        help="SGLB beta (paper: 1e3); for experiments, not for the headline table")
    parser.add_argument("--trace", action="store_true",
                        help="print which NDCG@3 the SGLB chain visited (StochasticRank + SGLB rows)")
    parser.add_argument("--sglb-only", action="store_true", help="only the rankkit StochasticRank + SGLB row")
    args = parser.parse_args(argv)
    SGLB["diffusion_temperature"] = args.diffusion_temperature

    from rankkit.datasets import make_stochasticrank_toy

    X, y, qid = make_stochasticrank_toy()
    X = np.asarray(X, dtype=np.float64)
    seeds = list(range(args.seeds))
    SR, LM = _rankers()

    methods = [
        ("rankkit StochasticRank NDCG@3 + SGLB",
         lambda s: run_rankkit(SR, dict(metric="ndcg", k=3, **SGLB), X, y, qid, s, args.backend,
                               trace=args.trace)),
        # rankkit's defaults: langevin=True alone (diffusion_temperature="auto",
        # model_shrink_rate=0).
        ("rankkit StochasticRank NDCG@3 + SGLB, rankkit defaults",
         lambda s: run_rankkit(SR, dict(metric="ndcg", k=3, langevin=True), X, y, qid, s, args.backend)),
        ("rankkit StochasticRank NDCG@3, no SGLB",
         lambda s: run_rankkit(SR, dict(metric="ndcg", k=3), X, y, qid, s, args.backend)),
        ("rankkit LambdaMART NDCG@3",
         lambda s: run_rankkit(LM, dict(metric="ndcg", k=3), X, y, qid, s, args.backend)),
        # LambdaMART's hessians on 5 documents are far below 1, so the default
        # min_child_weight=1 forbids every split; CatBoost has no such floor.
        ("rankkit LambdaMART NDCG@3, min_child_weight=0",
         lambda s: run_rankkit(LM, dict(metric="ndcg", k=3, min_child_weight=0.0), X, y, qid, s,
                               args.backend)),
    ]
    if args.sglb_only:
        methods = methods[:1]
    elif not args.no_catboost:
        methods += [
            ("CatBoost StochasticRank:metric=NDCG;top=3 + SGLB",
             lambda s: run_catboost("StochasticRank:metric=NDCG;top=3", X, y, qid, s)),
            ("CatBoost LambdaMart:metric=NDCG;top=3",
             lambda s: run_catboost("LambdaMart:metric=NDCG;top=3", X, y, qid, s, langevin=False)),
        ]

    rows = []
    for name, fn in methods:
        scores, times = [], []
        for s in seeds:
            value, seconds = fn(s)
            scores.append(value)
            times.append(seconds)
            print(f"  {name:50s} seed {s}: NDCG@3 = {value:.4f} ({seconds:.2f} s)", flush=True)
        n_global = sum(round(v, 3) >= GLOBAL for v in scores)
        rows.append([
            name,
            f"{n_global}/{len(seeds)}",
            " ".join(f"{v:.3f}" for v in scores),
            f"{np.median(times):.2f}",
        ])

    header = ["method", "#seeds at 0.917", "final NDCG@3 per seed", "median fit s"]
    text = (
        f"Toy (StochasticRank paper, Table 1): 1000 trees, depth 3, lr 0.1; '+ SGLB' rows: "
        f"diffusion_temperature={SGLB['diffusion_temperature']:g}, model_shrink_rate=1e-3 (the paper's), "
        f"except the 'rankkit defaults' row (langevin=True only); "
        f"backend={args.backend}; "
        f"NDCG@3 exp gain, worst ties. Global optimum {GLOBAL}, local {LOCAL}.\n"
        f"Machine: {machine_line()}\n\n" + markdown_table(header, rows)
    )
    print()
    print(text)
    tag = "" if SGLB["diffusion_temperature"] == 1e3 and not args.sglb_only else \
        f"_beta{SGLB['diffusion_temperature']:g}{'_sglb' if args.sglb_only else ''}"
    path = save_result(f"toy_sglb_{args.backend}{tag}.md", text)
    print(f"\n(saved to {path})")


if __name__ == "__main__":
    main()
