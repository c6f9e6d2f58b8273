"""Learning curves: every objective with its defaults, beside its peers, from 40 queries up.

A default must hold at every data size and feature scale, not at one point.
For each dataset, training sets of ``--sizes`` queries (nested: the 100-query
set contains the 40-query set) are drawn from the pool of its queries, and
every learner is tested on the same held-out queries; each random state
draws new training and test queries, so a curve's spread is the data's as
well as the learner's. Protocol (fixed, no early stopping, so the learners'
regularisation is what is compared): ``--n-estimators`` trees (300), depth 6,
learning rate 0.05; test NDCG@10 by ``rankkit.metrics`` (exp gain, worst
order among tied scores, a query without a relevant document counts 1).

Datasets: ``mq2008`` (784 queries of ~19 documents), ``clueweb09`` (61 of
~430), ``yahoo`` (the Yahoo sample, 251 of ~15), ``synthetic``
(``make_ranking``, 20 features, ~32 documents per query) and ``synthetic-long``
(``make_ranking`` with 136 features, 12 of them informative, and ~118 documents per
query, the shape of an MSLR-WEB sample). ``--scales raw heavy``: ``heavy``
puts every feature through a random monotone, heavy-tailed transform
(``exp(3 z)`` or ``1e4 * z**5`` of the standardised feature, by feature), the
look of raw, unnormalised web features.

Learners: the rankkit rankers with their defaults (only the target metric set),
CatBoost's counterparts, LightGBM's ``lambdarank`` and ``rank_xendcg``,
XGBoost's ``rank:ndcg``. ``--variant 'name:param=value,...'`` adds rankkit
rankers with other settings; a value ``leaf*A`` is ``A * n_queries / 2**depth``
(a share of the mean leaf's query count, in the rankers' query units) and
``docs*A`` is ``A * n_queries / n_documents`` (``A`` documents' worth) and
``sqrtdocs*A`` is ``A * sqrt(n_queries / n_documents)`` and ``capdocs*A*C``
is ``A * min(1, C * n_queries / n_documents)`` (``A`` queries' worth, at most
``A * C`` documents'), to try size-relative rules; ``sqrtlen*A`` is ``A`` times
the square root of the mean list length. Values inside ``backend_params`` are
resolved the same way (``'ns:backend_params={"random_strength":"sqrtlen*1"}'``).
``--seeds-for synthetic=4`` runs another number of random states for one dataset.
``--catboost-variant 'name:param=value,...'`` adds CatBoost's learners with other
parameters (``'det:random_strength=0,bootstrap_type=No'``); a rankkit variant of the
same name is paired with them.

Every fit is cached in ``benchmarks/results/curves_cache`` (keyed by the
rankkit source or the engine's version), so a re-run only trains what changed;
``--only rankkit`` trains rankkit's rankers alone and takes the peers' results
from the cache where they are, for the paired tables.

Run from the repository root::

    .venv/bin/python benchmarks/bench_curves.py                          # everything (long)
    .venv/bin/python benchmarks/bench_curves.py --datasets mq2008 --sizes 40 100 --seeds 2
    .venv/bin/python benchmarks/bench_curves.py --only rankkit --variant 'lam1:reg_lambda=1'
    .venv/bin/python benchmarks/bench_curves.py --datasets synthetic-long --objectives StochasticRank \
        --peers 'CatBoost StochasticRank' XGBoost                       # one objective, its counterpart, the floor
    .venv/bin/python benchmarks/bench_curves.py --scales raw --plot docs/img/curves.png
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    RESULTS, SHARED_DATA, group_sizes, load_svmlight, load_yahoo_pooled, machine_line, markdown_table, save_result,
)
from bench_quality import (  # noqa: E402
    _NEEDS, CATBOOST, LIGHTGBM, RANKKIT, XGBOOST, _engine_version, _rankkit_source_hash,
)

CACHE = RESULTS / "curves_cache"

# =========================================================================== data


def _pool_mq2008():
    root = SHARED_DATA / "MQ2008" / "Fold1"
    parts = [load_svmlight(root / f"{p}.txt.gz", n_features=46) for p in ("train", "vali", "test")]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def _pool_clueweb09():
    root = SHARED_DATA / "ClueWeb09-webis" / "Fold1"
    parts = [load_svmlight(root / f"{p}.txt.gz", n_features=42) for p in ("train", "test")]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def _pool_synthetic():
    from rankkit.datasets import make_ranking

    X, y, q = make_ranking(1300, random_state=0)
    return np.asarray(X, dtype=np.float32), np.asarray(y, dtype=np.float64), np.asarray(q)


def _pool_synthetic_long():
    from rankkit.datasets import make_ranking

    X, y, q = make_ranking(400, n_features=136, n_informative=12, min_docs=80, max_docs=156, random_state=1)
    return np.asarray(X, dtype=np.float32), np.asarray(y, dtype=np.float64), np.asarray(q)


POOLS = {"mq2008": _pool_mq2008, "clueweb09": _pool_clueweb09, "yahoo": load_yahoo_pooled,
         "synthetic": _pool_synthetic, "synthetic-long": _pool_synthetic_long}
#: Held-out test queries per draw (at most a third of the pool).
TEST_QUERIES = {"mq2008": 200, "clueweb09": 20, "yahoo": 80, "synthetic": 300, "synthetic-long": 100}


def heavy_tailed(X, seed=12345):
    """Every feature through a random monotone heavy-tailed transform (NaN kept)."""
    rng = np.random.default_rng(seed)
    X = np.asarray(X, dtype=np.float64)
    mu = np.nanmean(X, axis=0)
    sd = np.nanstd(X, axis=0)
    sd[sd == 0] = 1.0
    Z = (X - mu) / sd
    out = np.empty_like(Z)
    for j in range(Z.shape[1]):
        out[:, j] = np.exp(3.0 * Z[:, j]) if rng.random() < 0.5 else 1e4 * Z[:, j] ** 5
    return out


def draws(dataset, scale, sizes, seed):
    """The training sets (nested, by size) and the test set of one random state."""
    X, y, q = POOLS[dataset]()
    if scale == "heavy":
        X = heavy_tailed(X)
    queries = np.unique(q)
    rng = np.random.default_rng(1000 + seed)
    rng.shuffle(queries)
    n_test = min(TEST_QUERIES[dataset], len(queries) // 3)
    test_q, rest = queries[:n_test], queries[n_test:]

    def take(qs):
        rows = np.flatnonzero(np.isin(q, qs))
        order = np.argsort(q[rows], kind="stable")
        rows = rows[order]
        return X[rows], y[rows], q[rows]

    train = {n: take(rest[:n]) for n in sizes if n <= len(rest)}
    return train, take(test_q)


# =========================================================================== learners
#: The peer no rankkit objective should fall below.
FLOOR = "XGBoost rank:ndcg"

#: The counterpart of each rankkit objective (by the objective part of its label).
COUNTERPART = {
    "StochasticRank": "CatBoost StochasticRank", "YetiRank": "CatBoost YetiRank", "YetiLoss": "CatBoost YetiLoss",
    "LambdaMART": "CatBoost LambdaMart", "QueryRMSE": "CatBoost QueryRMSE", "XE-NDCG": "LightGBM rank_xendcg",
}


def _resolve(value, n_queries, n_docs, depth):
    """A variant's setting: ``leaf*A`` is ``A`` mean leaves' worth of queries,
    ``docs*A`` is ``A`` documents' worth, both in the rankers' query units;
    ``sqrtlen*A`` is ``A`` times the square root of the mean list length.
    Inside a dict (``backend_params``) each value is resolved the same way."""
    if isinstance(value, dict):
        return {k: _resolve(v, n_queries, n_docs, depth) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("sqrtlen*"):
        return float(value[8:]) * (n_docs / n_queries) ** 0.5
    if isinstance(value, str) and value.startswith("leaf*"):
        return float(value[5:]) * n_queries / 2 ** depth
    if isinstance(value, str) and value.startswith("docs*"):
        return float(value[5:]) * n_queries / n_docs
    if isinstance(value, str) and value.startswith("sqrtdocs*"):
        return float(value[9:]) * (n_queries / n_docs) ** 0.5
    if isinstance(value, str) and value.startswith("capdocs*"):
        a, c = (float(v) for v in value[8:].split("*"))
        return a * min(1.0, c * n_queries / n_docs)
    return value


def fit_rankkit(spec, train, cfg, seed):
    import rankkit

    cls, params = spec
    n_q = len(np.unique(train[2]))
    params = {k: _resolve(v, n_q, len(train[2]), cfg.depth) for k, v in params.items()}
    model = getattr(rankkit, cls)(n_estimators=cfg.n_estimators, learning_rate=cfg.lr, max_depth=cfg.depth,
                                  n_jobs=cfg.n_jobs, random_state=seed, **params)
    model.fit(train[0], train[1], qid=train[2])
    return model.predict


def fit_catboost(spec, train, cfg, seed):
    import catboost

    loss, extra = spec if isinstance(spec, tuple) else (spec, {})  # a --catboost-variant: (loss, params)
    model = catboost.CatBoost({"loss_function": loss, "iterations": cfg.n_estimators, "depth": cfg.depth,
                               "learning_rate": cfg.lr, "random_seed": seed, "thread_count": cfg.n_jobs,
                               "verbose": False, "allow_writing_files": False, **extra})
    model.fit(catboost.Pool(train[0], train[1], group_id=train[2]))
    return model.predict


def fit_lightgbm(objective, train, cfg, seed):
    import lightgbm as lgb

    params = {"objective": objective, "learning_rate": cfg.lr, "max_depth": cfg.depth,
              "num_leaves": 2 ** cfg.depth, "num_threads": cfg.n_jobs, "seed": seed, "verbose": -1}
    booster = lgb.train(params, lgb.Dataset(train[0], train[1], group=group_sizes(train[2])),
                        num_boost_round=cfg.n_estimators)
    return booster.predict


def fit_xgboost(objective, train, cfg, seed):
    import xgboost as xgb

    d = xgb.DMatrix(train[0], train[1])
    d.set_group(group_sizes(train[2]))
    booster = xgb.train({"objective": objective, "eta": cfg.lr, "max_depth": cfg.depth, "tree_method": "hist",
                         "nthread": cfg.n_jobs, "seed": seed}, d, num_boost_round=cfg.n_estimators)
    return lambda X: booster.predict(xgb.DMatrix(X))


def _variant(text):
    """``'name:param=value,...'`` as ``(name, {param: value})``; values read as JSON where they parse."""
    name, _, settings = text.partition(":")
    items, depth, start = [], 0, 0
    for i, char in enumerate(settings):  # commas inside a JSON value ({"a": 1, "b": 2}) do not split
        depth += {"{": 1, "[": 1, "}": -1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(settings[start:i])
            start = i + 1
    items.append(settings[start:])
    extra = {}
    for item in filter(None, items):
        key, _, value = item.partition("=")
        try:
            extra[key] = json.loads(value)
        except json.JSONDecodeError:
            extra[key] = value
    return name, extra


def learners(cfg):
    """label -> (engine, fit, spec)."""
    out = {}
    if cfg.only in (None, "rankkit"):
        for label, spec in RANKKIT.items():
            out[label] = ("rankkit", fit_rankkit, spec)
        for name, extra in map(_variant, cfg.variants):
            for label, (cls, params) in RANKKIT.items():
                out[f"{label} [{name}]"] = ("rankkit", fit_rankkit, (cls, {**params, **extra}))
    if cfg.only in (None, "peers"):
        out.update({k: ("catboost", fit_catboost, v) for k, v in CATBOOST.items()})
        for name, extra in map(_variant, getattr(cfg, "catboost_variants", [])):
            out.update({f"{k} [{name}]": ("catboost", fit_catboost, (v, extra)) for k, v in CATBOOST.items()})
        out.update({k: ("lightgbm", fit_lightgbm, v) for k, v in LIGHTGBM.items()})
        out.update({k: ("xgboost", fit_xgboost, v) for k, v in XGBOOST.items()})
    if cfg.objectives:
        keep = tuple(cfg.objectives)
        out = {k: v for k, v in out.items() if any(o in k for o in keep) or not k.startswith("rankkit")}
    if getattr(cfg, "peers", None):
        keep = tuple(cfg.peers)
        out = {k: v for k, v in out.items() if k.startswith("rankkit") or any(p in k for p in keep)}
    return out


def per_query_ndcg(y, score, q):
    from rankkit.metrics import ndcg_score

    return np.asarray(ndcg_score(y, score, qid=q, k=10, empty=1.0, ties="worst", per_query=True))


def _cache_path(dataset, scale, size, seed, engine, spec, cfg):
    version = _rankkit_source_hash() if engine == "rankkit" else _engine_version(engine)
    blob = json.dumps([dataset, scale, size, seed, engine, version, repr(spec), cfg.n_estimators, cfg.lr,
                       cfg.depth], default=str)
    return CACHE / f"{hashlib.sha1(blob.encode()).hexdigest()[:16]}.json"


def cached(dataset, scale, size, seed, engine, spec, cfg):
    """The per-query NDCG@10 of a fit run before, or None."""
    path = _cache_path(dataset, scale, size, seed, engine, spec, cfg)
    return np.asarray(json.loads(path.read_text())) if path.exists() else None


def run(dataset, scale, size, seed, label, engine, fit, spec, train, test, cfg):
    path = _cache_path(dataset, scale, size, seed, engine, spec, cfg)
    if path.exists():
        return np.asarray(json.loads(path.read_text()))
    predict = fit(spec, train, cfg, seed)
    pq = per_query_ndcg(test[1], np.asarray(predict(test[0]), dtype=np.float64), test[2])
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(pq.tolist()))
    return pq


# =========================================================================== report
def _paired(a, b):
    """Mean difference of paired per-query scores, its standard error, Wilcoxon p."""
    from scipy.stats import wilcoxon

    d = a - b
    se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else float("nan")
    p = float(wilcoxon(a, b).pvalue) if np.any(d != 0) else 1.0
    return d.mean(), se, p


def report(dataset, scale, results, sizes):
    # A learner may be missing at some sizes (a peer cached for some of them only): blank cells.
    labels = list(dict.fromkeys(label for n in sizes for label in results[n]))
    header = ["learner"] + [f"{n} queries" for n in sizes]
    rows = []
    for label in labels:
        rows.append([label] + [f"{np.mean(results[n][label]):.4f}" if label in results[n] else "" for n in sizes])
    text = f"### {dataset}, {scale} features: NDCG@10 (mean over random states and test queries)\n\n"
    text += markdown_table(header, rows)
    prow = []
    for label in labels:
        if not label.startswith("rankkit"):
            continue
        obj, _, variant = label.split(" ", 1)[1].partition(" [")
        peer = COUNTERPART.get(obj)
        if variant and f"{peer} [{variant}" in labels:  # the CatBoost variant of the same name
            peer = f"{peer} [{variant}"
        cells = [f"{label} - {peer}"]
        for n in sizes:
            if n not in results or peer not in results[n]:
                cells.append("")
                continue
            d, se, p = _paired(results[n][label], results[n][peer])
            cells.append(f"{100 * d:+.2f} ± {100 * se:.2f} (p {p:.2g})")
        prow.append(cells)
    if prow:
        text += "\n\nPaired difference to the counterpart, NDCG@10 points (± standard error, Wilcoxon p):\n\n"
        text += markdown_table(["pair"] + [f"{n} queries" for n in sizes], prow)
    # The floor every objective should clear: XGBoost's rank:ndcg on the same queries.
    xrow = []
    for label in labels:
        if not label.startswith("rankkit") or not any(FLOOR in results[n] for n in sizes):
            continue
        cells = [f"{label} - {FLOOR}"]
        for n in sizes:
            if label in results[n] and FLOOR in results[n]:
                d, _, p = _paired(results[n][label], results[n][FLOOR])
                cells.append(f"{100 * d:+.2f} (p {p:.2g})")
            else:
                cells.append("")
        xrow.append(cells)
    if xrow:
        text += f"\n\nPaired difference to {FLOOR}, NDCG@10 points (Wilcoxon p):\n\n"
        text += markdown_table(["pair"] + [f"{n} queries" for n in sizes], xrow)
    # The best rankkit default against the best peer, each picked by its mean (so both after the fact).
    brow = []
    for n in sizes:
        ours = [k for k in results[n] if k.startswith("rankkit") and " [" not in k]
        theirs = [k for k in results[n] if not k.startswith("rankkit") and " [" not in k]
        if ours and theirs:
            a = max(ours, key=lambda k: results[n][k].mean())
            b = max(theirs, key=lambda k: results[n][k].mean())
            d, se, p = _paired(results[n][a], results[n][b])
            brow.append([f"{n} queries", a, b, f"{100 * d:+.2f} ± {100 * se:.2f} (p {p:.2g})"])
    if brow:
        text += "\n\nBest rankkit objective against the best peer, NDCG@10 points:\n\n"
        text += markdown_table(["size", "best rankkit", "best peer", "difference"], brow)
    return text


def plot(curves, path):
    """One panel per dataset and feature scale: each rankkit objective's paired
    difference to its counterpart (NDCG@10 points, +- one standard error)
    against the number of training queries; the grey band is +-1 point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(3.2 * len(curves), 3.4), sharey=True, squeeze=False)
    for ax, ((dataset, scale), results) in zip(axes[0], curves.items()):
        sizes = sorted(results)
        labels = [k for k in results[sizes[0]] if k.startswith("rankkit") and " [" not in k]
        for label in labels:
            peer = COUNTERPART[label.split(" ", 1)[1]]
            pts = [(n, *_paired(results[n][label], results[n][peer])[:2]) for n in sizes if peer in results[n]]
            if pts:
                n, d, se = (np.array(v) for v in zip(*pts))
                ax.errorbar(n, 100 * d, yerr=100 * se, marker="o", ms=3, capsize=2, label=label.split(" ", 1)[1])
        ax.axhspan(-1, 1, color="0.9", zorder=0)
        ax.axhline(0, color="0.5", lw=0.8)
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.minorticks_off()
        ax.set_title(dataset if scale == "raw" else f"{dataset} ({scale})", fontsize=10)
        ax.set_xlabel("training queries")
    axes[0][0].set_ylabel("NDCG@10 minus counterpart (points)")
    axes[0][-1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="*", default=list(POOLS), choices=list(POOLS))
    parser.add_argument("--scales", nargs="*", default=["raw", "heavy"], choices=["raw", "heavy"])
    parser.add_argument("--sizes", type=int, nargs="*", default=[40, 100, 300, 1000])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seeds-for", action="append", default=[], metavar="DATASET=N",
                        help="another number of random states for one dataset (repeatable)")
    parser.add_argument("--n-estimators", type=int, default=300)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--only", choices=["rankkit", "peers"], default=None)
    parser.add_argument("--objectives", nargs="*", default=None,
                        help="rankkit objectives to run (substrings of the labels); peers always")
    parser.add_argument("--peers", nargs="*", default=None,
                        help="peers to run (substrings of the labels, e.g. 'CatBoost StochasticRank' XGBoost); "
                             "default all")
    parser.add_argument("--variant", dest="variants", action="append", default=[])
    parser.add_argument("--catboost-variant", dest="catboost_variants", action="append", default=[])
    parser.add_argument("--plot", default=None, help="also draw the differences to the counterparts to this PNG")
    cfg = parser.parse_args(argv)

    seeds_for = {}
    for item in cfg.seeds_for:
        dataset, _, n = item.partition("=")
        if dataset not in POOLS or not n.isdigit():
            parser.error(f"--seeds-for {item!r}: expected DATASET=N with DATASET one of {list(POOLS)}")
        seeds_for[dataset] = int(n)
    print(machine_line())
    peers = learners(argparse.Namespace(**{**vars(cfg), "only": "peers"}))
    texts, curves = [], {}
    for dataset in cfg.datasets:
        if dataset in _NEEDS and not (SHARED_DATA / _NEEDS[dataset]).exists():
            print(f"skip {dataset}: {SHARED_DATA / _NEEDS[dataset]} not found")
            continue
        n_seeds = seeds_for.get(dataset, cfg.seeds)
        for scale in cfg.scales:
            results = {}
            for seed in range(n_seeds):
                train_sets, test = draws(dataset, scale, cfg.sizes, seed)
                for n, train in train_sets.items():
                    for label, (engine, fit, spec) in learners(cfg).items():
                        pq = run(dataset, scale, n, seed, label, engine, fit, spec, train, test, cfg)
                        results.setdefault(n, {}).setdefault(label, []).append(pq)
                    if cfg.only == "rankkit":  # the peers' cached fits still give the paired tables
                        for label, (engine, _, spec) in peers.items():
                            pq = cached(dataset, scale, n, seed, engine, spec, cfg)
                            if pq is not None:
                                results[n].setdefault(label, []).append(pq)
                print(f"{dataset} {scale} seed {seed} done", flush=True)
            for n, r in results.items():  # a peer cached for some seeds only cannot be paired
                for label in [k for k, v in r.items() if len(v) != n_seeds]:
                    print(f"{dataset} {scale} {n} queries: {label} left out, cached for {len(r[label])} of "
                          f"{n_seeds} seeds (run it: --only peers)", flush=True)
                    del r[label]
            results = {n: {k: np.concatenate(v) for k, v in r.items()} for n, r in results.items()}
            curves[dataset, scale] = results
            text = report(dataset, scale, results, [n for n in cfg.sizes if n in results])
            print(text + "\n", flush=True)
            texts.append(text)
    save_result("curves.md", "\n\n".join(texts))
    if cfg.plot and curves:
        print(f"plot: {plot(curves, cfg.plot)}")


if __name__ == "__main__":
    main()
