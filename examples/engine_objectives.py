"""rankkit objectives inside XGBoost's and LightGBM's own training APIs.

Every objective in ``rankkit.objectives`` is a callable that both engines
accept as a custom objective, so an existing training script keeps its
engine and swaps only the loss:

1. ``xgboost.train(params, dtrain, obj=objective)`` (``dtrain`` built with ``qid=``);
2. ``lightgbm.train({"objective": objective, ...}, dataset)`` (``dataset`` built with ``group=`` sizes);
3. ``lightgbm.LGBMRanker(objective=objective).fit(X, y, group=sizes)``.

With a callable objective LightGBM starts every score at 0 (no boost from an
average); XGBoost needs ``base_score=0`` (it keeps 0.5 otherwise). Eval
metrics, if you watch eval sets: ``lightgbm.train`` computes none unless you
set ``metric="ndcg"`` (and ``eval_at``), XGBoost falls back to ``rmse`` unless
you set ``eval_metric="ndcg@10"``, ``LGBMRanker`` reports ``ndcg@1..5``
(``eval_at=[10]`` to change). Scores here are ``rankkit.metrics.ndcg_score``
with worst-order ties.

Run: ``.venv/bin/python examples/engine_objectives.py``
"""

import numpy as np

from rankkit.datasets import make_ranking
from rankkit.metrics import ndcg_score
from rankkit.model_selection import query_train_test_split
from rankkit.objectives import LambdaMART, YetiRank

import lightgbm  # noqa: E402  isort: skip  (after rankkit: docs/backends.md, "OpenMP")
import xgboost  # noqa: E402  isort: skip

X, y, qid = make_ranking(n_queries=300, random_state=0)
X_tr, X_te, y_tr, y_te, q_tr, q_te = query_train_test_split(X, y, qid=qid, test_size=0.3, random_state=0)
# Engines want each query's rows contiguous; sort the training rows by query.
order = np.argsort(q_tr, kind="stable")
X_tr, y_tr, q_tr = X_tr[order], y_tr[order], q_tr[order]
sizes = np.unique(q_tr, return_counts=True)[1]


def report(name, scores):
    value = ndcg_score(y_te, scores, qid=q_te, k=10, ties="worst")
    print(f"{name:52s} test NDCG@10 = {value:.4f}")
    return value


baseline = report("constant scores (every tie broken the worst way)", np.zeros(len(y_te)))

# 1. XGBoost's native API.
booster = xgboost.train(
    {"tree_method": "hist", "max_depth": 6, "eta": 0.1, "base_score": 0.0, "nthread": 2},
    xgboost.DMatrix(X_tr, y_tr, qid=q_tr),
    num_boost_round=100,
    obj=LambdaMART("ndcg@10"),
)
xgb_ndcg = report("xgboost.train(obj=LambdaMART('ndcg@10'))", booster.predict(xgboost.DMatrix(X_te), output_margin=True))

# 2. LightGBM's native API: the objective goes into params.
params = {"objective": LambdaMART("ndcg@10"), "num_leaves": 31, "learning_rate": 0.1, "min_child_samples": 5,
          "num_threads": 2, "verbose": -1}
lgb_booster = lightgbm.train(params, lightgbm.Dataset(X_tr, y_tr, group=sizes), num_boost_round=100)
lgb_ndcg = report("lightgbm.train({'objective': LambdaMART('ndcg@10')})", lgb_booster.predict(X_te, raw_score=True))

# 3. LightGBM's scikit-learn API (it calls objective(y_true, y_pred, weight, group)).
ranker = lightgbm.LGBMRanker(objective=YetiRank(random_state=0), n_estimators=100, num_leaves=31,
                             min_child_samples=5, n_jobs=2, verbose=-1)
ranker.fit(X_tr, y_tr, group=sizes)
sk_ndcg = report("lightgbm.LGBMRanker(objective=YetiRank())", ranker.predict(X_te, raw_score=True))

if min(xgb_ndcg, lgb_ndcg, sk_ndcg) < baseline + 0.1:
    raise SystemExit("a model trained with a rankkit objective did not beat constant scores")
