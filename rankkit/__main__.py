"""``python -m rankkit``: train and compare rankers on built-in synthetic data.

Generates :func:`rankkit.datasets.make_ranking` data (no download), splits it
by query, trains every rankkit ranker and XGBoost's built-in ``rank:ndcg``
with the same trees, depth and learning rate, and prints test metrics (worst
ties) and fit times.
"""

import argparse
import time

import numpy as np


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rankkit", description=__doc__.splitlines()[0])
    parser.add_argument("--n-queries", type=int, default=600)
    parser.add_argument("--n-estimators", type=int, default=200)
    parser.add_argument("--max-depth", type=int, default=6)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--backend", default="xgboost", help="xgboost, lightgbm or numba")
    parser.add_argument("--random-state", type=int, default=0)
    args = parser.parse_args(argv)

    import rankkit
    from rankkit.datasets import make_ranking
    from rankkit.metrics import err_score, map_score, mrr_score, ndcg_score
    from rankkit.model_selection import query_train_test_split

    X, y, qid = make_ranking(args.n_queries, random_state=args.random_state)
    X_tr, X_te, y_tr, y_te, q_tr, q_te = query_train_test_split(
        X, y, qid=qid, test_size=0.3, random_state=args.random_state
    )
    print(
        f"make_ranking: {len(np.unique(qid))} queries, {X.shape[0]} documents, {X.shape[1]} features; "
        f"train {len(np.unique(q_tr))} / test {len(np.unique(q_te))} queries"
    )
    common = dict(
        n_estimators=args.n_estimators,
        max_depth=args.max_depth,
        learning_rate=args.learning_rate,
        random_state=args.random_state,
        backend=args.backend,
    )
    models = {
        "StochasticRank NDCG@10": rankkit.StochasticRankRanker(metric="ndcg", k=10, **common),
        "YetiRank": rankkit.YetiRanker(**common),
        "YetiLoss NDCG@10": rankkit.YetiRanker(metric="ndcg", k=10, **common),
        "LambdaMART NDCG@10": rankkit.LambdaMARTRanker(metric="ndcg", k=10, **common),
        "XE-NDCG": rankkit.XENDCGRanker(**common),
        "QueryRMSE": rankkit.QueryRMSERanker(**common),
    }
    rows = []
    for name, model in models.items():
        t0 = time.perf_counter()
        model.fit(X_tr, y_tr, qid=q_tr)
        fit_s = time.perf_counter() - t0
        rows.append((name, model.predict(X_te), fit_s))

    try:
        import xgboost as xgb

        t0 = time.perf_counter()
        ref = xgb.XGBRanker(
            objective="rank:ndcg", n_estimators=args.n_estimators, max_depth=args.max_depth,
            learning_rate=args.learning_rate, tree_method="hist", random_state=args.random_state,
        ).fit(X_tr, y_tr, qid=q_tr)
        fit_s = time.perf_counter() - t0
        rows.append(("xgboost rank:ndcg (built-in)", ref.predict(X_te), fit_s))
    except ImportError:
        pass

    header = f"{'model':32s} {'NDCG@10':>8s} {'MRR':>7s} {'MAP':>7s} {'ERR@10':>7s} {'fit s':>7s}"
    print("\nTest metrics (ties='worst'; queries without relevant documents score 1.0)")
    print(header)
    print("-" * len(header))
    for name, pred, fit_s in rows:
        vals = (
            ndcg_score(y_te, pred, qid=q_te, k=10),
            mrr_score(y_te, pred, qid=q_te),
            map_score(y_te, pred, qid=q_te),
            err_score(y_te, pred, qid=q_te, k=10, err_mapping="chapelle"),
        )
        print(f"{name:32s} " + " ".join(f"{v:8.4f}" if i == 0 else f"{v:7.4f}" for i, v in enumerate(vals)) + f" {fit_s:7.2f}")
    rand = np.random.default_rng(args.random_state).normal(size=y_te.shape[0])
    print(f"{'random scores':32s} {ndcg_score(y_te, rand, qid=q_te, k=10):8.4f}")


if __name__ == "__main__":
    main()
