"""MQ2008 (LETOR 4.0), 5 folds: rankkit rankers next to CatBoost, LightGBM, XGBoost.

Every model gets the same budget: the same maximum number of trees, depth,
learning rate, and early stopping on the fold's validation file with the same
patience (each engine watches its own NDCG@10 with exp gain on ``vali``).
Every model is then scored on ``test`` by the same rankkit.metrics functions:
NDCG@10 (exp gain; worst order among tied scores; queries without a relevant
document counted as 1, and separately excluded), MRR and MAP over queries
with a relevant document, and ERR@10 (Chapelle's mapping) over all queries
(ERR is not normalised: a query without a relevant document scores 0).

A separate timing run fits rankkit's LambdaMART and the engine's own
LambdaMART (XGBoost's ``rank:ndcg``; LightGBM's ``lambdarank`` with
``--backend lightgbm``, at the same number of leaves) with exactly the same
number of trees (no early stopping) on Fold1/train and reports the ratio of
median fit times. ``benchmarks/bench_backends_ranking.py`` compares all
engines in fresh processes.

Run from the repository root::

    .venv/bin/python benchmarks/bench_mq2008.py                     # 5 folds, 500 trees
    .venv/bin/python benchmarks/bench_mq2008.py --quick             # 2 folds, 100 trees
    .venv/bin/python benchmarks/bench_mq2008.py --backend numba     # rankkit's numba GBDT
    .venv/bin/python benchmarks/bench_mq2008.py --only rankkit --backend xgboost,lightgbm,numba
                                                    # every rankkit ranker on every backend
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    SHARED_DATA,
    Timer,
    evaluate,
    group_sizes,
    load_svmlight,
    machine_line,
    markdown_table,
    mean_std,
    median,
    save_result,
)

METRIC_COLUMNS = ["ndcg@10", "ndcg@10_excl", "mrr_excl", "map_excl", "err@10"]


# --------------------------------------------------------------------------- rankkit
def _ranker(name):
    import rankkit

    if hasattr(rankkit, name):
        return getattr(rankkit, name)
    from rankkit import _estimators

    return getattr(_estimators, name)


RANKKIT = {
    "rankkit StochasticRank NDCG": ("StochasticRankRanker", dict(metric="ndcg")),
    "rankkit YetiRank (classic)": ("YetiRanker", dict(metric="classic")),
    "rankkit YetiLoss NDCG": ("YetiRanker", dict(metric="ndcg")),
    "rankkit LambdaMART NDCG": ("LambdaMARTRanker", dict(metric="ndcg")),
    "rankkit QueryRMSE": ("QueryRMSERanker", dict()),
    "rankkit XE-NDCG": ("XENDCGRanker", dict()),
}


def fit_rankkit(label, fold, cfg, *, early_stopping=True, n_estimators=None, backend=None):
    base, _, suffix = label.partition(" [")  # "rankkit X [lightgbm]" when several backends run
    cls_name, params = RANKKIT[base]
    backend = backend or (suffix.rstrip("]") if suffix else cfg.backends[0])
    model = _ranker(cls_name)(
        **params,
        n_estimators=n_estimators or cfg.n_estimators,
        max_depth=cfg.depth,
        learning_rate=cfg.lr,
        n_jobs=cfg.n_jobs,
        random_state=0,
        backend=backend,
        eval_metric="ndcg@10",
    )
    Xt, yt, qt = fold["train"]
    kw = {}
    if early_stopping:
        Xv, yv, qv = fold["vali"]
        kw = dict(eval_set=[(Xv, yv)], eval_qid=[qv])
        model.set_params(early_stopping_rounds=cfg.patience)
    with Timer() as t:
        model.fit(Xt, yt, qid=qt, **kw)
    n_trees = (model.best_iteration_ + 1) if getattr(model, "best_iteration_", None) is not None else None
    return model.predict, t.seconds, n_trees


# --------------------------------------------------------------------------- CatBoost
CATBOOST = {
    "CatBoost StochasticRank:metric=NDCG": "StochasticRank:metric=NDCG",
    "CatBoost YetiRank": "YetiRank",
    "CatBoost YetiRank:mode=NDCG (YetiLoss)": "YetiRank:mode=NDCG",
    "CatBoost LambdaMart:metric=NDCG": "LambdaMart:metric=NDCG",
    "CatBoost QueryRMSE": "QueryRMSE",
}


def fit_catboost(label, fold, cfg, **_):
    import catboost

    Xt, yt, qt = fold["train"]
    Xv, yv, qv = fold["vali"]
    model = catboost.CatBoost({
        "loss_function": CATBOOST[label],
        "iterations": cfg.n_estimators,
        "depth": cfg.depth,
        "learning_rate": cfg.lr,
        "eval_metric": "NDCG:top=10;type=Exp",
        "od_type": "Iter",
        "od_wait": cfg.patience,
        "use_best_model": True,
        "random_seed": 0,
        "thread_count": cfg.n_jobs,
        "verbose": False,
        "allow_writing_files": False,
    })
    with Timer() as t:
        model.fit(catboost.Pool(Xt, yt, group_id=qt), eval_set=catboost.Pool(Xv, yv, group_id=qv))
    return model.predict, t.seconds, model.get_best_iteration() + 1


# --------------------------------------------------------------------------- LightGBM
LIGHTGBM = {
    "LightGBM lambdarank": "lambdarank",
    "LightGBM rank_xendcg": "rank_xendcg",
}


def fit_lightgbm(label, fold, cfg, *, early_stopping=True, n_estimators=None):
    import lightgbm as lgb

    Xt, yt, qt = fold["train"]
    Xv, yv, qv = fold["vali"]
    if not early_stopping:
        # The timing run: exactly the tree settings rankkit's LightGBM backend
        # uses, so both sides grow the same trees-and-leaves budget.
        params = {"objective": LIGHTGBM[label], "metric": "None", "learning_rate": cfg.lr,
                  "max_depth": cfg.depth, "num_leaves": 2 ** cfg.depth, "min_sum_hessian_in_leaf": 1.0,
                  "min_data_in_leaf": 0, "lambda_l2": 1.0, "max_bin": 256, "deterministic": True,
                  "force_col_wise": True, "num_threads": cfg.n_jobs, "verbose": -1}
        dtrain = lgb.Dataset(Xt, yt, group=group_sizes(qt))
        with Timer() as t:
            booster = lgb.train(params, dtrain, num_boost_round=n_estimators or cfg.n_estimators)
        return (lambda X: booster.predict(X)), t.seconds, None
    params = {
        "objective": LIGHTGBM[label],
        "learning_rate": cfg.lr,
        "max_depth": cfg.depth,
        # a depth-d oblivious/level-wise tree has 2^d leaves: the same budget
        "num_leaves": 2 ** cfg.depth,
        "metric": "ndcg",
        "eval_at": [10],
        "num_threads": cfg.n_jobs,
        "seed": 0,
        "verbose": -1,
    }
    dtrain = lgb.Dataset(Xt, yt, group=group_sizes(qt))
    dvali = lgb.Dataset(Xv, yv, group=group_sizes(qv), reference=dtrain)
    with Timer() as t:
        booster = lgb.train(
            params, dtrain, num_boost_round=cfg.n_estimators, valid_sets=[dvali],
            callbacks=[lgb.early_stopping(cfg.patience, verbose=False)],
        )
    best = booster.best_iteration
    return (lambda X: booster.predict(X, num_iteration=best)), t.seconds, best


# --------------------------------------------------------------------------- XGBoost
def _xgb_params(cfg):
    return {
        "objective": "rank:ndcg",
        "eta": cfg.lr,
        "max_depth": cfg.depth,
        "tree_method": "hist",
        "max_bin": 256,
        "eval_metric": "ndcg@10",
        "nthread": cfg.n_jobs,
        "seed": 0,
    }


def _xgb_dmatrix(X, y, qid):
    import xgboost as xgb

    # DMatrix(qid=...) demands non-decreasing ids; MQ2008's are contiguous but
    # not sorted (Fold4), so pass the contiguous blocks as group sizes.
    d = xgb.DMatrix(X, y)
    d.set_group(group_sizes(qid))
    return d


def fit_xgboost(label, fold, cfg, *, early_stopping=True, n_estimators=None):
    import xgboost as xgb

    Xt, yt, qt = fold["train"]
    dtrain = _xgb_dmatrix(Xt, yt, qt)
    kw = {}
    if early_stopping:
        Xv, yv, qv = fold["vali"]
        kw = dict(evals=[(_xgb_dmatrix(Xv, yv, qv), "vali")], early_stopping_rounds=cfg.patience,
                  verbose_eval=False)
    with Timer() as t:
        booster = xgb.train(_xgb_params(cfg), dtrain, num_boost_round=n_estimators or cfg.n_estimators, **kw)
    if early_stopping:
        rng = (0, booster.best_iteration + 1)
        return (lambda X: booster.predict(xgb.DMatrix(X), iteration_range=rng)), t.seconds, rng[1]
    return (lambda X: booster.predict(xgb.DMatrix(X))), t.seconds, None


XGBOOST = {"XGBoost rank:ndcg": "rank:ndcg"}


def methods(backends=("xgboost",)):
    """(label, fit function) in table order: each rankkit ranker beside its counterpart.

    With several rankkit backends, each rankkit ranker appears once per backend,
    labelled ``"rankkit X [backend]"``.
    """
    pairs = [
        ("rankkit StochasticRank NDCG", "CatBoost StochasticRank:metric=NDCG"),
        ("rankkit YetiRank (classic)", "CatBoost YetiRank"),
        ("rankkit YetiLoss NDCG", "CatBoost YetiRank:mode=NDCG (YetiLoss)"),
        ("rankkit LambdaMART NDCG", "CatBoost LambdaMart:metric=NDCG"),
        ("rankkit QueryRMSE", "CatBoost QueryRMSE"),
        ("rankkit XE-NDCG", "LightGBM rank_xendcg"),
    ]
    out = []
    for ours, theirs in pairs:
        if len(backends) == 1:
            out.append((ours, fit_rankkit))
        else:
            out.extend((f"{ours} [{b}]", fit_rankkit) for b in backends)
        out.append((theirs, fit_catboost if theirs in CATBOOST else fit_lightgbm))
    out.append(("LightGBM lambdarank", fit_lightgbm))
    out.append(("XGBoost rank:ndcg", fit_xgboost))
    return out


def load_fold(root, k):
    # MQ2008 has 46 feature columns; fixing the width keeps train/vali/test aligned.
    return {part: load_svmlight(root / f"Fold{k}" / f"{part}.txt.gz", n_features=46)
            for part in ("train", "vali", "test")}


def timing_counterpart(backend):
    """The engine's own LambdaMART that rankkit's LambdaMART on ``backend`` is timed against."""
    if backend == "lightgbm":
        return "LightGBM lambdarank", fit_lightgbm
    return "XGBoost rank:ndcg", fit_xgboost


def timing_run(fold, cfg):
    """Median fit time of rankkit LambdaMART vs the engine's own at equal trees."""
    rows = {}
    backend = cfg.backends[0]
    for label, fn in (("rankkit LambdaMART NDCG", fit_rankkit), timing_counterpart(backend)):
        kw = {"backend": backend} if fn is fit_rankkit else {}
        fn(label, fold, cfg, early_stopping=False, n_estimators=5, **kw)  # warm-up: numba compile, imports
        times = []
        for _ in range(cfg.timing_repeats):
            times.append(fn(label, fold, cfg, early_stopping=False, n_estimators=cfg.timing_trees, **kw)[1])
        rows[label] = times
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 folds, 100 trees, patience 20")
    parser.add_argument("--folds", type=int, nargs="*", default=None, help="fold numbers (default 1..5)")
    parser.add_argument("--n-estimators", type=int, default=500)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--patience", type=int, default=50)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--backend", default="auto",
                        help="rankkit backend(s): auto (the rankers' default), xgboost, lightgbm, numba, "
                             "or a comma-separated list")
    parser.add_argument("--timing-trees", type=int, default=200)
    parser.add_argument("--timing-repeats", type=int, default=3)
    parser.add_argument("--only", default=None, help="comma-separated substrings: run matching methods only")
    parser.add_argument("--data", type=Path, default=SHARED_DATA / "MQ2008")
    cfg = parser.parse_args(argv)
    cfg.backends = tuple(b.strip() for b in cfg.backend.split(","))
    if cfg.quick:
        cfg.n_estimators, cfg.patience, cfg.timing_trees = 100, 20, 100
        cfg.folds = cfg.folds or [1, 2]
    cfg.folds = cfg.folds or [1, 2, 3, 4, 5]
    if not cfg.data.is_dir():
        sys.exit(f"MQ2008 not found at {cfg.data}; pass --data /path/to/MQ2008")

    todo = methods(cfg.backends)
    if cfg.only:
        keys = [s.strip().lower() for s in cfg.only.split(",")]
        todo = [(lab, fn) for lab, fn in todo if any(k in lab.lower() for k in keys)]

    t_start = time.perf_counter()
    results = {lab: {"metrics": [], "time": [], "trees": []} for lab, _ in todo}
    fold1 = None
    for k in cfg.folds:
        fold = load_fold(cfg.data, k)
        fold1 = fold1 or fold
        Xs, ys, qs = fold["test"]
        for label, fn in todo:
            predict, seconds, n_trees = fn(label, fold, cfg)
            m = evaluate(ys, np.asarray(predict(Xs), dtype=np.float64), qs)
            results[label]["metrics"].append(m)
            results[label]["time"].append(seconds)
            results[label]["trees"].append(n_trees)
            print(f"fold {k} {label:42s} ndcg@10={m['ndcg@10']:.4f} trees={n_trees} fit={seconds:.2f}s",
                  flush=True)

    header = ["method"] + [f"{c} mean ± std" for c in METRIC_COLUMNS] + ["median fit s", "median trees"]
    rows = []
    for label, _ in todo:
        r = results[label]
        cells = [label]
        for c in METRIC_COLUMNS:
            mu, sd = mean_std([m[c] for m in r["metrics"]])
            cells.append(f"{mu:.4f} ± {sd:.4f}")
        cells.append(f"{median(r['time']):.2f}")
        trees = [t for t in r["trees"] if t is not None]
        cells.append(f"{median(trees):.0f}" if trees else "n/a")
        rows.append(cells)

    text = (
        f"MQ2008 test, folds {cfg.folds}: max {cfg.n_estimators} trees, depth {cfg.depth}, "
        f"lr {cfg.lr}, early stopping on vali NDCG@10 (patience {cfg.patience}), "
        f"{cfg.n_jobs} threads, rankkit backend={cfg.backend}.\n"
        "All metrics by rankkit.metrics, worst-order ties, exp gain; ndcg@10 counts queries "
        "without a relevant document as 1, *_excl columns exclude them; ERR@10 (Chapelle's mapping) "
        "is over all queries (0 for those).\n"
        f"Machine: {machine_line()}\n\n" + markdown_table(header, rows)
    )

    if fold1 is not None and (not cfg.only or any("lambdamart" in lab.lower() for lab, _ in todo)):
        timing = timing_run(fold1, cfg)
        counterpart = timing_counterpart(cfg.backends[0])[0]
        ours = median(timing["rankkit LambdaMART NDCG"])
        theirs = median(timing[counterpart])
        spread = {k: f"{min(v):.2f}-{max(v):.2f}" for k, v in timing.items()}
        text += (
            f"\n\nFit time at equal trees ({cfg.timing_trees} trees, depth {cfg.depth}, Fold1/train, "
            f"median of {cfg.timing_repeats}, after a warm-up fit):\n\n"
            + markdown_table(
                ["method", "median fit s", "min-max s"],
                [[k, f"{median(v):.2f}", spread[k]] for k, v in timing.items()],
            )
            + f"\n\nratio rankkit LambdaMART (backend={cfg.backends[0]}) / {counterpart} = "
            f"{ours / theirs:.2f}x (target <= 1.3x)"
        )
    text += f"\n\nTotal wall time: {time.perf_counter() - t_start:.0f} s"
    print()
    print(text)
    tag = "quick" if cfg.quick else "full"
    path = save_result(f"mq2008_{'+'.join(cfg.backends)}_{tag}.md", text)
    print(f"\n(saved to {path})")


if __name__ == "__main__":
    main()
