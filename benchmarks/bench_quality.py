"""Ranking quality with default settings: every rankkit objective beside its peers.

Every dataset in ``../shared/data``, every rankkit ranker with its defaults
(only the target metric, the tree budget and the learning rate are set), and
CatBoost's, LightGBM's and XGBoost's counterparts under the same protocol:

* at most ``--n-estimators`` trees (500), depth 6, learning rate 0.05, early
  stopping on a validation split after ``--patience`` rounds (100) of no
  improvement in the validation NDCG@10 (each engine watches its own);
* test metrics all computed by ``rankkit.metrics`` (worst order among tied
  scores, exp gain): NDCG@10 (a query without a relevant document counts 1),
  MRR and MAP (over queries with a relevant document), ERR@10 (Chapelle's
  mapping, over all queries);
* mean and spread over folds; for each rankkit ranker the paired per-fold
  difference to its counterpart and a paired test over all test queries of
  all folds (Wilcoxon signed-rank on per-query NDCG@10);
* the random learners, rankkit's and CatBoost's (random split strength,
  bootstrap, the objectives' own noise), fitted with random states
  ``0..--seeds-1`` and their per-query metrics averaged; LightGBM and
  XGBoost (no subsampling) are deterministic and fitted once.

Datasets and their splits:

* ``mq2008``: LETOR 4.0 MQ2008, the standard 5 folds (train / vali / test);
* ``clueweb09``: Webis ClueWeb09 features, 5 folds (train / test); the
  validation split is 20% of each fold's training queries (seeded);
* ``yahoo``: the LightGBM lambdarank example (a Yahoo! LTR sample); its
  train and test files pooled and split into 5 query folds, the validation
  split carved from training queries as for ClueWeb09;
* ``synthetic``: ``rankkit.datasets.make_ranking`` (no download), 5 folds.

Ablations (``--ablations``) repeat the papers' comparisons: StochasticRank
CCS -> +SFA -> +SGLB -> +mu (Ustimenko & Prokhorenkova 2020, Table 3),
YetiLoss vs YetiRank trained and early-stopped on MRR and on MAP, and YetiLoss
with 1, 2 and all neighbours (Lyzhin et al. 2022, Tables 5-10).

Fitted results are cached in ``benchmarks/results/quality_cache`` keyed by
the dataset, fold, method, parameters, protocol and package version of the
engine, so a re-run only trains what changed (``--no-cache`` to ignore it).

Run from the repository root::

    .venv/bin/python benchmarks/bench_quality.py                 # everything, slow
    .venv/bin/python benchmarks/bench_quality.py --quick         # 2 folds, 200 trees
    .venv/bin/python benchmarks/bench_quality.py --datasets clueweb09 --only rankkit
    .venv/bin/python benchmarks/bench_quality.py --ablations --datasets mq2008
    .venv/bin/python benchmarks/bench_quality.py --only "rankkit yetiloss" --set min_child_weight=0
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    RESULTS,
    SHARED_DATA,
    Timer,
    group_sizes,
    load_svmlight,
    machine_line,
    markdown_table,
    mean_std,
    median,
    save_result,
)

CACHE = RESULTS / "quality_cache"
METRICS = ("ndcg@10", "mrr", "map", "err@10")


# =========================================================================== data
def _carve_validation(X, y, q, seed):
    """Split ``(X, y, q)`` into train / validation by whole queries (20% vali)."""
    from rankkit.model_selection import QueryShuffleSplit

    tr, va = next(QueryShuffleSplit(n_splits=1, test_size=0.2, random_state=seed).split(X, y, groups=q))
    tr.sort()
    va.sort()
    return (X[tr], y[tr], q[tr]), (X[va], y[va], q[va])


def _mq2008():
    root = SHARED_DATA / "MQ2008"
    for k in range(1, 6):
        yield {part: load_svmlight(root / f"Fold{k}" / f"{part}.txt.gz", n_features=46)
               for part in ("train", "vali", "test")}


def _clueweb09():
    root = SHARED_DATA / "ClueWeb09-webis"
    for k in range(1, 6):
        train = load_svmlight(root / f"Fold{k}" / "train.txt.gz", n_features=42)
        test = load_svmlight(root / f"Fold{k}" / "test.txt.gz", n_features=42)
        tr, va = _carve_validation(*train, seed=k)
        yield {"train": tr, "vali": va, "test": test}


def _query_folds(X, y, q, n_folds=5):
    from rankkit.model_selection import QueryKFold

    for k, (rest, test) in enumerate(QueryKFold(n_folds, shuffle=True, random_state=0).split(X, y, groups=q)):
        rest.sort()
        test.sort()
        tr, va = _carve_validation(X[rest], y[rest], q[rest], seed=k + 1)
        yield {"train": tr, "vali": va, "test": (X[test], y[test], q[test])}


def _yahoo():
    root = SHARED_DATA / "LightGBM-lambdarank-example"
    train = load_svmlight(root / "rank.train.gz", n_features=300)
    test = load_svmlight(root / "rank.test.gz", n_features=300)
    # The two files number their queries independently: offset the test ids.
    q_test = test[2] + train[2].max() + 1
    X = np.vstack([train[0], test[0]])
    y = np.concatenate([train[1], test[1]])
    q = np.concatenate([train[2], q_test])
    yield from _query_folds(X, y, q)


def _synthetic():
    from rankkit.datasets import make_ranking

    X, y, q = make_ranking(1500, random_state=0)
    yield from _query_folds(np.asarray(X, dtype=np.float32), np.asarray(y, dtype=np.float64), np.asarray(q))


DATASETS = {"mq2008": _mq2008, "clueweb09": _clueweb09, "yahoo": _yahoo, "synthetic": _synthetic}
_NEEDS = {"mq2008": "MQ2008", "clueweb09": "ClueWeb09-webis", "yahoo": "LightGBM-lambdarank-example"}


# =========================================================================== methods
# A method: (engine, parameters, counterpart label or None). rankkit parameters
# are the ranker's; only the target metric is set, everything else is default.
RANKKIT = {
    "rankkit StochasticRank": ("StochasticRankRanker", dict(metric="ndcg", k=10)),
    "rankkit YetiRank": ("YetiRanker", dict(metric="classic")),
    "rankkit YetiLoss": ("YetiRanker", dict(metric="ndcg", k=10)),
    "rankkit LambdaMART": ("LambdaMARTRanker", dict(metric="ndcg", k=10)),
    "rankkit QueryRMSE": ("QueryRMSERanker", dict()),
    "rankkit XE-NDCG": ("XENDCGRanker", dict()),
}
CATBOOST = {
    "CatBoost StochasticRank": "StochasticRank:metric=NDCG;top=10",
    "CatBoost YetiRank": "YetiRank",
    "CatBoost YetiLoss": "YetiRank:mode=NDCG;top=10",
    "CatBoost LambdaMart": "LambdaMart:metric=NDCG;top=10",
    "CatBoost QueryRMSE": "QueryRMSE",
}
LIGHTGBM = {"LightGBM lambdarank": "lambdarank", "LightGBM rank_xendcg": "rank_xendcg"}
XGBOOST = {"XGBoost rank:ndcg": "rank:ndcg"}
COUNTERPART = {
    "rankkit StochasticRank": "CatBoost StochasticRank",
    "rankkit YetiRank": "CatBoost YetiRank",
    "rankkit YetiLoss": "CatBoost YetiLoss",
    "rankkit LambdaMART": "CatBoost LambdaMart",
    "rankkit QueryRMSE": "CatBoost QueryRMSE",
    "rankkit XE-NDCG": "LightGBM rank_xendcg",
}

# Ablations: label -> (ranker, parameters, early-stopping metric).
ABLATIONS = {
    # StochasticRank, Ustimenko & Prokhorenkova 2020 Table 3 (CCS -> +SFA -> +SGLB -> +mu).
    # mu is rankkit's default 0.1 in the last step only (the earlier steps set the paper's mu = 0).
    "SR CCS": ("StochasticRankRanker", dict(metric="ndcg", k=10, sfa=False, mu=0.0), "ndcg@10"),
    "SR CCS+SFA": ("StochasticRankRanker", dict(metric="ndcg", k=10, mu=0.0), "ndcg@10"),
    "SR CCS+SFA+SGLB": ("StochasticRankRanker", dict(metric="ndcg", k=10, langevin=True, mu=0.0), "ndcg@10"),
    "SR CCS+SFA+SGLB+mu": ("StochasticRankRanker", dict(metric="ndcg", k=10, langevin=True, mu=0.1), "ndcg@10"),
    # YetiLoss vs YetiRank for MRR and MAP (Lyzhin et al. 2022).
    "YetiRank (early-stopped on MRR)": ("YetiRanker", dict(metric="classic", eval_metric="mrr"), "mrr"),
    "YetiLoss MRR": ("YetiRanker", dict(metric="mrr"), "mrr"),
    "StochasticRank MRR": ("StochasticRankRanker", dict(metric="mrr"), "mrr"),
    "LambdaMART MRR": ("LambdaMARTRanker", dict(metric="mrr"), "mrr"),
    "YetiRank (early-stopped on MAP)": ("YetiRanker", dict(metric="classic", eval_metric="map"), "map"),
    "YetiLoss MAP": ("YetiRanker", dict(metric="map"), "map"),
    # Neighbours (2022, Tables 5-10): one or two are enough.
    "YetiLoss NDCG@10, 1 neighbour": ("YetiRanker", dict(metric="ndcg", k=10, num_neighbors=1), "ndcg@10"),
    "YetiLoss NDCG@10, 2 neighbours": ("YetiRanker", dict(metric="ndcg", k=10, num_neighbors=2), "ndcg@10"),
    "YetiLoss NDCG@10, all pairs": ("YetiRanker", dict(metric="ndcg", k=10, num_neighbors=-1), "ndcg@10"),
}


def _engine_version(engine):
    import importlib

    return getattr(importlib.import_module(engine), "__version__", "?")


def fit_rankkit(cls_name, params, fold, cfg, eval_metric="ndcg@10", seed=0):
    import rankkit

    params = {
        "n_estimators": cfg.n_estimators, "learning_rate": cfg.lr, "max_depth": cfg.depth,
        "n_jobs": cfg.n_jobs, "random_state": seed, "backend": cfg.backend, "eval_metric": eval_metric,
        "early_stopping_rounds": cfg.patience, **params, **cfg.overrides,
    }
    model = getattr(rankkit, cls_name)(**params)
    (Xt, yt, qt), (Xv, yv, qv) = fold["train"], fold["vali"]
    with Timer() as t:
        model.fit(Xt, yt, qid=qt, eval_set=[(Xv, yv)], eval_qid=[qv])
    return model.predict, t.seconds, model.best_iteration_ + 1


#: Engines whose default learner is random (rankkit: random split strength and
#: StochasticRank's / YetiRank's noise; CatBoost: random split strength and
#: bootstrap): fitted with random states 0..seeds-1 and averaged. LightGBM and
#: XGBoost without subsampling are deterministic: one fit.
RANDOM_ENGINES = ("rankkit", "catboost")

_CATBOOST_EVAL = {"ndcg@10": "NDCG:top=10;type=Exp", "mrr": "MRR", "map": "MAP"}


def fit_catboost(loss, fold, cfg, eval_metric="ndcg@10", seed=0):
    import catboost

    (Xt, yt, qt), (Xv, yv, qv) = fold["train"], fold["vali"]
    model = catboost.CatBoost({
        "loss_function": loss, "iterations": cfg.n_estimators, "depth": cfg.depth,
        "learning_rate": cfg.lr, "eval_metric": _CATBOOST_EVAL[eval_metric], "od_type": "Iter",
        "od_wait": cfg.patience, "use_best_model": True, "random_seed": seed,
        "thread_count": cfg.n_jobs, "verbose": False, "allow_writing_files": False,
        **cfg.catboost_overrides,
    })
    with Timer() as t:
        model.fit(catboost.Pool(Xt, yt, group_id=qt), eval_set=catboost.Pool(Xv, yv, group_id=qv))
    return model.predict, t.seconds, model.get_best_iteration() + 1


def fit_lightgbm(objective, fold, cfg, eval_metric="ndcg@10"):
    import lightgbm as lgb

    (Xt, yt, qt), (Xv, yv, qv) = fold["train"], fold["vali"]
    params = {
        "objective": objective, "learning_rate": cfg.lr, "max_depth": cfg.depth,
        "num_leaves": 2 ** cfg.depth, "metric": "ndcg", "eval_at": [10],
        "num_threads": cfg.n_jobs, "seed": 0, "verbose": -1,
    }
    dtrain = lgb.Dataset(Xt, yt, group=group_sizes(qt))
    dvali = lgb.Dataset(Xv, yv, group=group_sizes(qv), reference=dtrain)
    with Timer() as t:
        booster = lgb.train(params, dtrain, num_boost_round=cfg.n_estimators, valid_sets=[dvali],
                            callbacks=[lgb.early_stopping(cfg.patience, verbose=False)])
    best = booster.best_iteration
    return (lambda X: booster.predict(X, num_iteration=best)), t.seconds, best


def fit_xgboost(objective, fold, cfg, eval_metric="ndcg@10"):
    import xgboost as xgb

    def dmatrix(X, y, q):
        d = xgb.DMatrix(X, y)
        d.set_group(group_sizes(q))
        return d

    (Xt, yt, qt), (Xv, yv, qv) = fold["train"], fold["vali"]
    params = {"objective": objective, "eta": cfg.lr, "max_depth": cfg.depth, "tree_method": "hist",
              "eval_metric": "ndcg@10", "nthread": cfg.n_jobs, "seed": 0}
    with Timer() as t:
        booster = xgb.train(params, dmatrix(Xt, yt, qt), num_boost_round=cfg.n_estimators,
                            evals=[(dmatrix(Xv, yv, qv), "vali")], early_stopping_rounds=cfg.patience,
                            verbose_eval=False)
    rng = (0, booster.best_iteration + 1)
    return (lambda X: booster.predict(xgb.DMatrix(X), iteration_range=rng)), t.seconds, rng[1]


def method_table(cfg):
    """label -> (engine, fit function, argument, parameters for the cache key, eval metric)."""
    out = {}
    if cfg.ablations:
        for label, (cls, params, metric) in ABLATIONS.items():
            out[label] = ("rankkit", fit_rankkit, (cls, params), params, metric)
        return out
    for label in RANKKIT:
        cls, params = RANKKIT[label]
        out[label] = ("rankkit", fit_rankkit, (cls, params), params, "ndcg@10")
        peer = COUNTERPART[label]
        if peer in CATBOOST:
            out[peer] = ("catboost", fit_catboost, (CATBOOST[peer],), CATBOOST[peer], "ndcg@10")
    for label, obj in LIGHTGBM.items():
        out[label] = ("lightgbm", fit_lightgbm, (obj,), obj, "ndcg@10")
    for label, obj in XGBOOST.items():
        out[label] = ("xgboost", fit_xgboost, (obj,), obj, "ndcg@10")
    return out


# =========================================================================== evaluation
def per_query_metrics(y, score, qid):
    """Per-query test metrics, all by rankkit.metrics (worst-order ties, exp gain)."""
    from rankkit import metrics as M

    common = dict(qid=qid, ties="worst", per_query=True)
    return {
        "ndcg@10": M.ndcg_score(y, score, k=10, empty=1.0, **common),
        "mrr": M.mrr_score(y, score, empty="exclude", **common),
        "map": M.map_score(y, score, empty="exclude", **common),
        "err@10": M.err_score(y, score, k=10, err_mapping="chapelle", **common),
    }


@functools.lru_cache(maxsize=None)
def _rankkit_source_hash():
    """A hash of rankkit's source: cached rankkit fits are reused only by the
    code that made them (``--cache-rankkit``)."""
    import rankkit

    digest = hashlib.sha1()
    for path in sorted(Path(rankkit.__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_key(dataset, fold, label, engine, params, metric, cfg):
    version = _rankkit_source_hash() if engine == "rankkit" else _engine_version(engine)
    items = [dataset, fold, label, engine, version, repr(params), metric, cfg.n_estimators,
             cfg.lr, cfg.depth, cfg.patience, cfg.backend if engine == "rankkit" else None,
             cfg.seeds if engine in RANDOM_ENGINES else 1,
             sorted(cfg.overrides.items()) if engine == "rankkit" else None]
    if engine == "catboost" and cfg.catboost_overrides:
        items.append(sorted(cfg.catboost_overrides.items()))
    blob = json.dumps(items, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def run_one(dataset, k, fold, label, spec, cfg):
    engine, fit, args, params, metric = spec
    key = _cache_key(dataset, k, label, engine, params, metric, cfg)
    path = CACHE / f"{key}.json"
    if cfg.cache and path.exists() and engine != "rankkit" or (cfg.cache_rankkit and path.exists()):
        return json.loads(path.read_text())
    Xs, ys, qs = fold["test"]
    # Random learners are averaged over ``--seeds`` fits (per-query metrics
    # averaged), so a comparison is not decided by one draw of the noise.
    runs = []
    for seed in range(cfg.seeds if engine in RANDOM_ENGINES else 1):
        kw = {"seed": seed} if engine in RANDOM_ENGINES else {}
        predict, seconds, trees = fit(*args, fold, cfg, eval_metric=metric, **kw)
        runs.append((per_query_metrics(ys, np.asarray(predict(Xs), dtype=np.float64), qs), seconds, trees))
    pq = {m: np.mean([np.asarray(r[0][m], dtype=np.float64) for r in runs], axis=0) for m in METRICS}
    out = {"seconds": float(np.median([r[1] for r in runs])), "trees": int(np.median([r[2] for r in runs])),
           "per_query": {m: v.tolist() for m, v in pq.items()}}
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return out


def _mean(values):
    values = np.asarray(values, dtype=np.float64)
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else float("nan")


def _paired(ours, theirs):
    """Per-query NDCG@10 differences pooled over folds: mean and Wilcoxon p-value."""
    from scipy.stats import wilcoxon

    a = np.concatenate([np.asarray(r["per_query"]["ndcg@10"]) for r in ours])
    b = np.concatenate([np.asarray(r["per_query"]["ndcg@10"]) for r in theirs])
    d = a - b
    if not np.any(d != 0):
        return 0.0, 1.0, 0, 0
    p = float(wilcoxon(a, b, zero_method="wilcox").pvalue)
    return float(d.mean()), p, int((d > 0).sum()), int((d < 0).sum())


def report(dataset, results, folds, cfg):
    cols = [f"{m} mean ± std" for m in METRICS]
    header = ["method"] + cols + ["trees (median)", "fit s (median)"]
    rows = []
    for label, per_fold in results.items():
        cells = [label]
        for m in METRICS:
            mu, sd = mean_std([_mean(r["per_query"][m]) for r in per_fold])
            cells.append(f"{mu:.4f} ± {sd:.4f}")
        cells += [f"{median([r['trees'] for r in per_fold]):.0f}", f"{median([r['seconds'] for r in per_fold]):.2f}"]
        rows.append(cells)
    text = f"### {dataset} (folds {folds})\n\n" + markdown_table(header, rows)
    pairs = [(a, b) for a, b in COUNTERPART.items() if a in results and b in results]
    if pairs:
        prow = []
        for a, b in pairs:
            fold_d = [_mean(x["per_query"]["ndcg@10"]) - _mean(y["per_query"]["ndcg@10"])
                      for x, y in zip(results[a], results[b])]
            d, p, wins, losses = _paired(results[a], results[b])
            prow.append([f"{a} - {b}", " ".join(f"{v:+.3f}" for v in fold_d), f"{np.mean(fold_d):+.4f}",
                         f"{wins}/{losses}", f"{p:.3g}"])
        text += "\n\nPaired NDCG@10 differences against the counterpart:\n\n" + markdown_table(
            ["pair", "per fold", "mean", "queries better/worse", "Wilcoxon p"], prow)
    return text


def _parse_settings(items):
    """``["name=value", ...]`` as a dict, values parsed as JSON where they are."""
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            out[name] = json.loads(value)
        except json.JSONDecodeError:
            out[name] = value
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--folds", type=int, nargs="*", default=None, help="fold numbers (default 1..5)")
    parser.add_argument("--quick", action="store_true", help="folds 1-2, 200 trees, patience 50")
    parser.add_argument("--ablations", action="store_true", help="the papers' ablations instead of the peers")
    parser.add_argument("--n-estimators", type=int, default=500)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--patience", type=int, default=100)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--backend", default="auto", help="rankkit backend (default: the rankers' own, auto)")
    parser.add_argument("--seeds", type=int, default=1,
                        help="fit every rankkit and CatBoost method with random states 0..seeds-1 and average")
    parser.add_argument("--only", default=None, help="comma-separated substrings of method labels")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a rankkit parameter for every rankkit method (repeatable)")
    parser.add_argument("--catboost-set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a CatBoost parameter for every CatBoost peer (repeatable), e.g. "
                             "grow_policy=Depthwise to see what its tree learner is worth")
    parser.add_argument("--no-cache", dest="cache", action="store_false", help="refit the peers too")
    parser.add_argument("--cache-rankkit", action="store_true", help="reuse cached rankkit fits as well")
    cfg = parser.parse_args(argv)
    cfg.overrides, cfg.catboost_overrides = _parse_settings(cfg.set), _parse_settings(cfg.catboost_set)
    if cfg.quick:
        cfg.n_estimators, cfg.patience = 200, 50
        cfg.folds = cfg.folds or [1, 2]
    cfg.folds = cfg.folds or [1, 2, 3, 4, 5]

    todo = method_table(cfg)
    if cfg.only:
        keys = [s.strip().lower() for s in cfg.only.split(",")]
        todo = {lab: spec for lab, spec in todo.items() if any(k in lab.lower() for k in keys)}

    t0 = time.perf_counter()
    sections = []
    for dataset in cfg.datasets:
        if dataset in _NEEDS and not (SHARED_DATA / _NEEDS[dataset]).is_dir():
            print(f"skipping {dataset}: {SHARED_DATA / _NEEDS[dataset]} not found", flush=True)
            continue
        results = {label: [] for label in todo}
        for k, fold in enumerate(DATASETS[dataset](), start=1):
            if k not in cfg.folds:
                continue
            for label, spec in todo.items():
                r = run_one(dataset, k, fold, label, spec, cfg)
                results[label].append(r)
                print(f"{dataset} fold {k} {label:34s} ndcg@10={_mean(r['per_query']['ndcg@10']):.4f} "
                      f"mrr={_mean(r['per_query']['mrr']):.4f} trees={r['trees']} fit={r['seconds']:.1f}s",
                      flush=True)
        sections.append(report(dataset, results, cfg.folds, cfg))

    settings = (
        f"max {cfg.n_estimators} trees, depth {cfg.depth}, lr {cfg.lr}, early stopping on the validation "
        f"split (patience {cfg.patience}), {cfg.n_jobs} threads, rankkit backend={cfg.backend}; "
        f"rankkit and CatBoost averaged over random states 0-{cfg.seeds - 1}"
        + (f", rankkit overrides {cfg.overrides}" if cfg.overrides else "")
        + (f", CatBoost overrides {cfg.catboost_overrides}" if cfg.catboost_overrides else "")
    )
    text = (
        f"Quality benchmark: {settings}.\nTest metrics by rankkit.metrics, worst-order ties, exp gain; "
        "NDCG@10 counts queries without a relevant document as 1; MRR and MAP exclude them; ERR@10 "
        f"(Chapelle) is over all queries.\nMachine: {machine_line()}\n\n" + "\n\n".join(sections)
        + f"\n\nTotal wall time: {time.perf_counter() - t0:.0f} s"
    )
    print()
    print(text)
    tag = ("ablations" if cfg.ablations else "peers") + ("_quick" if cfg.quick else "")
    print(f"\n(saved to {save_result(f'quality_{tag}.md', text)})")


if __name__ == "__main__":
    main()
