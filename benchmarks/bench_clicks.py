"""Learning from simulated clicks: debiased rankkit objectives against XGBoost and LightGBM.

The semi-synthetic protocol of Joachims, Swaminathan & Schnabel (2017): a
logging ranker (rankkit LambdaMART, 50 trees) is trained on 1% of the
labelled training queries (at least one); ``rankkit.datasets.simulate_clicks``
then simulates sessions under the position-based model, examination
``(1/k) ** eta``, every document of the query shown, aggregated to click
counts per (query, document). Every learner trains on the clicks of the
training queries and is evaluated by NDCG@10 (exp gain, worst-order ties,
queries without a relevant document excluded) on the true labels of the
held-out test queries.

Learners (100 trees, learning rate 0.1, one thread each):

* ``naive``: rankkit LambdaMART on the click-through rates as labels;
* ``ipw <objective>``: rankkit with ``position_bias="known"`` and the true
  propensities, for every objective;
* ``em <objective>`` / ``pairwise <objective>``: ``position_bias="estimate"``
  with that ``propensity_estimator``, plus the maximum relative error of
  ``position_bias_`` over positions 1-10;

(rankkit's learners get click-through rates, clicks / impressions, as labels
and the impressions as sample weights);
* ``xgboost unbiased``: ``XGBRanker(objective="rank:ndcg",
  lambdarank_unbiased=True)`` (rows ordered by position inside each query,
  which is how XGBoost reads positions), click counts as labels with linear
  gain (XGBoost's exp gain needs integer labels below 32), and the error of
  its estimated propensities ``t+`` (read from the booster's saved config);
* ``lightgbm position``: ``lambdarank`` with ``Dataset(position=...)``,
  click counts as labels with a linear ``label_gain`` (LightGBM needs
  integer labels);
* ``ceiling *``: rankkit LambdaMART, XGBoost ``rank:ndcg`` and LightGBM
  ``lambdarank`` on the true labels of the training queries.

Linear gain for the click-trained metric objectives: a click count is not a
grade, and ``2^count`` would make one query's most clicked document
everything. The paired test compares each debiased learner with ``naive``
per test query (Wilcoxon signed-rank, two-sided).

``--model noisy`` simulates the PBM with clicks on irrelevant documents
(``eps = 0.1``; the true propensities are still the PBM's), ``--model
cascade`` the cascade model, which has no per-position propensity: its run
has no ``ipw`` learners and no propensity errors.

``--folds 1 2 3 4 5`` pools the test queries of five folds (the LETOR folds
of MQ2008 and ClueWeb09; five query folds of the Yahoo sample's pooled
queries): each fold has its own logging ranker, click log and models, and
every test query is held out once, so the paired test has five times the
queries of one split.

    python benchmarks/bench_clicks.py --datasets mq2008 --sessions 10000 100000 --etas 0.5 1 2
    python benchmarks/bench_clicks.py --datasets clueweb09 --folds 1 2 3 4 5 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

from _common import SHARED_DATA, load_svmlight, load_yahoo_pooled, markdown_table, save_result

from rankkit import LambdaMARTRanker, QueryRMSERanker, StochasticRankRanker, XENDCGRanker, YetiRanker
from rankkit._groups import make_groups
from rankkit.datasets import pbm_propensities, simulate_clicks
from rankkit.metrics import ndcg_score

COMMON = dict(n_estimators=100, learning_rate=0.1, n_jobs=1)

OBJECTIVES = {
    # LambdaMART on the whole list (k=None), as section 5 of benchmarks/README.md was measured.
    "lambdamart": lambda **kw: LambdaMARTRanker(gain="linear", k=None, **kw),
    "yetirank": lambda **kw: YetiRanker(gain="linear", n_permutations=3, **kw),
    "stochasticrank": lambda **kw: StochasticRankRanker(metric="ndcg@10", gain="linear", **kw),
    "xendcg": lambda **kw: XENDCGRanker(**kw),
    "queryrmse": lambda **kw: QueryRMSERanker(**kw),
}


def load(name, fold=None):
    """``(X_train, y_train, qid_train, X_test, y_test, qid_test)``: the
    standard split (None: Fold1 of MQ2008 and ClueWeb09, the Yahoo sample's
    train/test files) or fold 1-5 (of the LETOR folds; for the Yahoo sample,
    five query folds of its pooled train and test queries, fixed shuffle)."""
    if name == "mq2008":
        folder = SHARED_DATA / "MQ2008" / f"Fold{fold or 1}"
        return (*load_svmlight(folder / "train.txt.gz", 46), *load_svmlight(folder / "test.txt.gz", 46))
    if name == "clueweb09":
        folder = SHARED_DATA / "ClueWeb09-webis" / f"Fold{fold or 1}"
        return (*load_svmlight(folder / "train.txt.gz", 42), *load_svmlight(folder / "test.txt.gz", 42))
    if name == "yahoo":
        if fold is None:
            folder = SHARED_DATA / "LightGBM-lambdarank-example"
            return (*load_svmlight(folder / "rank.train.gz", 300), *load_svmlight(folder / "rank.test.gz", 300))
        X, y, q = load_yahoo_pooled()
        queries = np.random.default_rng(0).permutation(np.unique(q))
        test_rows = np.isin(q, np.array_split(queries, 5)[fold - 1])
        return X[~test_rows], y[~test_rows], q[~test_rows], X[test_rows], y[test_rows], q[test_rows]
    raise ValueError(name)


def logging_scores(X, y, qid, seed):
    """Scores of a LambdaMART trained on 1% of the training queries (at least one)."""
    uniques = np.unique(qid)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(uniques, size=max(1, int(round(0.01 * uniques.size))), replace=False)
    rows = np.isin(qid, chosen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant model on a query with one label warns
        logger = LambdaMARTRanker(k=None, n_estimators=50, learning_rate=0.1, n_jobs=1, random_state=seed).fit(
            X[rows], y[rows], qid=qid[rows])
    return logger.predict(X), int(chosen.size)


def test_ndcg(y, score, qid):
    """Per-query NDCG@10 on the test queries (nan: no relevant document)."""
    return np.asarray(ndcg_score(y, score, qid=qid, k=10, per_query=True, empty="exclude"), dtype=np.float64)


def sort_by_position(qid, position):
    """Row order grouping queries and, inside each, ascending position (XGBoost reads positions from it)."""
    codes = make_groups(qid).codes
    return np.lexsort((position, codes))


def fit_xgboost(X, y, qid, seed, *, unbiased, position=None):
    import xgboost as xgb

    params = dict(objective="rank:ndcg", n_estimators=COMMON["n_estimators"], learning_rate=0.1, max_depth=6,
                  tree_method="hist", n_jobs=1, random_state=seed)
    if unbiased:
        order = sort_by_position(qid, position)
        X, y, qid = X[order], y[order], qid[order]
        params.update(lambdarank_unbiased=True, ndcg_exp_gain=False)
    else:
        order = np.lexsort((np.arange(len(qid)), make_groups(qid).codes))
        X, y, qid = X[order], y[order], qid[order]
    return xgb.XGBRanker(**params).fit(X, y, qid=make_groups(qid).codes)


def xgboost_propensities(model):
    """XGBoost's estimated click propensities ``t+`` (Unbiased LambdaMART), relative to rank 1."""
    config = json.loads(model.get_booster().save_config())["learner"]["objective"]
    theta = np.asarray(config["ti+"], dtype=np.float64)
    theta = theta[theta > 0]  # unused slots past the deepest position are 0
    return theta / theta[0]


def fit_lightgbm(X, y, qid, seed, *, position=None):
    import lightgbm as lgb

    order = np.lexsort((np.arange(len(qid)), make_groups(qid).codes))
    X, y, qid = X[order], y[order], qid[order]
    sizes = np.diff(make_groups(qid).group_ptr)
    params = dict(objective="lambdarank", learning_rate=0.1, num_leaves=31, num_threads=1, seed=seed, verbose=-1,
                  deterministic=True)
    labels = np.rint(y).astype(np.int64)
    if position is not None:
        position = position[order]
        params["label_gain"] = list(range(int(labels.max()) + 1))  # linear gain on click counts
    data = lgb.Dataset(X, labels, group=sizes, position=None if position is None else position - 1)
    return lgb.train(params, data, num_boost_round=COMMON["n_estimators"])


def run_setting(data, logger, eta, n_sessions, seed, objectives, estimators, model="pbm"):
    Xtr, ytr, qtr, Xte, yte, qte = data
    Xc, clicks, qc, position, impressions = simulate_clicks(
        Xtr, ytr, qtr, logger, n_sessions=n_sessions, model=model, eta=eta, aggregate=True,
        return_impressions=True, random_state=seed)
    shown = impressions > 0  # queries no session drew have no data
    Xc, clicks, qc, position, impressions = Xc[shown], clicks[shown], qc[shown], position[shown], impressions[shown]
    # The cascade model has no per-position propensity: no truth, no IPW with it.
    truth = None if model == "cascade" else pbm_propensities(int(position.max()), eta)
    out = {}

    def record(name, model, seconds, theta=None):
        entry = {"per_query": test_ndcg(yte, model.predict(Xte), qte), "seconds": seconds}
        if theta is not None and truth is not None:
            k = min(10, theta.shape[0])
            entry["propensity_error"] = float(np.max(np.abs(theta[:k] / truth[:k] - 1)))
        out[name] = entry

    base = dict(COMMON, random_state=seed)
    # rankkit learns from click-through rates with the impressions as sample
    # weights: labels on one scale whatever the traffic (StochasticRank's
    # relevance shift and exponential gains depend on the label scale).
    ctr = dict(sample_weight=impressions)
    t = time.perf_counter()
    naive = LambdaMARTRanker(gain="linear", k=None, **base).fit(Xc, clicks / impressions, qid=qc, **ctr)
    record("naive", naive, time.perf_counter() - t)
    for name in objectives if truth is not None else ():
        t = time.perf_counter()
        ranker = OBJECTIVES[name](position_bias="known", propensities=truth, **base)
        record(f"ipw {name}", ranker.fit(Xc, clicks / impressions, qid=qc, position=position, **ctr),
               time.perf_counter() - t)
    for estimator, name in estimators:
        t = time.perf_counter()
        ranker = OBJECTIVES[name](position_bias="estimate", propensity_estimator=estimator, **base)
        ranker.fit(Xc, clicks / impressions, qid=qc, position=position, **ctr)
        record(f"{estimator} {name}", ranker, time.perf_counter() - t, ranker.position_bias_)
    t = time.perf_counter()
    xgb_model = fit_xgboost(Xc, clicks, qc, seed, unbiased=True, position=position)
    record("xgboost unbiased", xgb_model, time.perf_counter() - t, xgboost_propensities(xgb_model))
    t = time.perf_counter()
    record("lightgbm position", fit_lightgbm(Xc, clicks, qc, seed, position=position), time.perf_counter() - t)
    return out


def ceilings(data, seed):
    Xtr, ytr, qtr, Xte, yte, qte = data
    out = {}
    model = LambdaMARTRanker(k=None, **COMMON, random_state=seed).fit(Xtr, ytr, qid=qtr)
    out["ceiling rankkit"] = test_ndcg(yte, model.predict(Xte), qte)
    out["ceiling xgboost"] = test_ndcg(yte, fit_xgboost(Xtr, ytr, qtr, seed, unbiased=False).predict(Xte), qte)
    out["ceiling lightgbm"] = test_ndcg(yte, fit_lightgbm(Xtr, ytr, qtr, seed).predict(Xte), qte)
    return out


def paired_p(a, b):
    """Two-sided Wilcoxon signed-rank p-value of per-query differences (nan queries dropped)."""
    from scipy.stats import wilcoxon

    keep = ~(np.isnan(a) | np.isnan(b))
    d = a[keep] - b[keep]
    if not np.any(d):
        return 1.0
    return float(wilcoxon(d).pvalue)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["mq2008"], choices=["mq2008", "clueweb09", "yahoo"])
    parser.add_argument("--sessions", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--etas", nargs="+", type=float, default=[0.5, 1.0, 2.0])
    parser.add_argument("--objectives", nargs="+", default=list(OBJECTIVES), choices=list(OBJECTIVES))
    parser.add_argument("--estimators", nargs="*", default=["em:lambdamart", "pairwise:lambdamart"],
                        help="estimator:objective pairs trained with position_bias='estimate'")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0],
                        help="each seed draws its own logging queries, click log and models")
    parser.add_argument("--folds", nargs="+", type=int, default=[None], choices=[1, 2, 3, 4, 5],
                        help="folds whose test queries are pooled (default: the standard split, see load)")
    parser.add_argument("--model", default="pbm", choices=["pbm", "noisy", "cascade"],
                        help="click model of simulate_clicks (noisy: PBM with clicks on irrelevant documents; "
                             "cascade: no per-position propensity, so no ipw learners and no propensity error)")
    parser.add_argument("--tag", default="", help="suffix of the result files")
    args = parser.parse_args()
    estimators = [tuple(e.split(":")) for e in args.estimators]
    pooled, raw = {}, []  # (dataset, eta, sessions, learner) -> per-query values over folds and seeds
    for dataset, fold in [(d, f) for d in args.datasets for f in args.folds]:
        data = load(dataset, fold)
        for seed in args.seeds:
            logger, n_logging = logging_scores(*data[:3], seed=seed)
            for name, values in ceilings(data, seed).items():
                pooled.setdefault((dataset, "", "", name), []).append({"per_query": values})
            print(f"{dataset} fold {fold} seed {seed}: logging ranker on {n_logging} queries", flush=True)
            for eta in args.etas:
                for n_sessions in args.sessions:
                    result = run_setting(data, logger, eta, n_sessions, seed, args.objectives, estimators,
                                         args.model)
                    for name, entry in result.items():
                        pooled.setdefault((dataset, eta, n_sessions, name), []).append(entry)
                        raw.append({"dataset": dataset, "fold": fold, "seed": seed, "eta": eta,
                                    "sessions": n_sessions, "learner": name,
                                    "ndcg@10": float(np.nanmean(entry["per_query"])),
                                    "propensity_error": entry.get("propensity_error"),
                                    "seconds": entry["seconds"]})
                        print(" | ".join(str(raw[-1][k]) for k in ("dataset", "fold", "seed", "eta", "sessions",
                                                                  "learner", "ndcg@10", "propensity_error")),
                              flush=True)
    text = summary_tables(pooled, len(args.seeds), len(args.folds))
    print(text)
    save_result(f"clicks{args.tag}.md", text)
    save_result(f"clicks{args.tag}.json", json.dumps(raw, indent=1))


def summary_tables(pooled, n_seeds, n_folds=1):
    """A wide NDCG@10 table (means over every (fold, seed, test query);
    ``*`` marks p < 0.05 against ``naive``, Wilcoxon over those pairs) and
    the propensity errors (means over folds and seeds)."""
    settings = sorted({k[:3] for k in pooled if k[1] != ""}, key=lambda k: (k[0], k[1], k[2]))
    learners = [k[3] for k in pooled if k[:3] == settings[0]] if settings else []
    rows, errors = [], []
    for setting in settings:
        naive = np.concatenate([e["per_query"] for e in pooled[(*setting, "naive")]])
        cells = []
        for name in learners:
            entries = pooled[(*setting, name)]
            values = np.concatenate([e["per_query"] for e in entries])
            mean = np.nanmean(values)  # one fold: the mean of the seed means (same test queries)
            star = "*" if name != "naive" and paired_p(values, naive) < 0.05 and np.nanmean(values) > np.nanmean(naive) \
                else ""
            cells.append(f"{mean:.4f}{star}")
        rows.append([*setting, *cells])
        errs = [(name, np.mean([e["propensity_error"] for e in pooled[(*setting, name)]]))
                for name in learners if "propensity_error" in pooled[(*setting, name)][0]]
        if errs:
            errors.append([*setting, *(f"{v:.3f}" for _, v in errs)])
            error_names = [n for n, _ in errs]
    ceiling_rows = [[k[0], k[3], f"{np.nanmean(np.concatenate([e['per_query'] for e in v])):.4f}"]
                    for k, v in pooled.items() if k[1] == ""]
    folds = f"the test queries of {n_folds} folds, " if n_folds > 1 else ""
    text = f"NDCG@10 on the test queries' true labels, mean over {folds}{n_seeds} seed(s)\n\n"
    text += markdown_table(["dataset", "eta", "sessions", *learners], rows)
    text += "\n\nTrained on the true labels (the ceiling)\n\n" + markdown_table(["dataset", "learner", "NDCG@10"],
                                                                               ceiling_rows)
    if errors:
        text += ("\n\nMax relative error of the estimated propensities over positions 1-10\n\n"
                 + markdown_table(["dataset", "eta", "sessions", *error_names], errors))
    return text


if __name__ == "__main__":
    main()
