"""Early stopping on a validation set of queries.

``eval_set`` takes ``(X, y)`` pairs and ``eval_qid`` their query ids; training
stops when ``eval_metric`` on the *last* eval set has not improved for
``early_stopping_rounds`` iterations, and the model is cut back to its best
iteration (``best_iteration_``, 0-based). ``evals_result_`` keeps the curve.

Run: ``.venv/bin/python examples/early_stopping.py``
"""

import numpy as np

from rankkit import LambdaMARTRanker
from rankkit.datasets import make_ranking

X, y, qid = make_ranking(n_queries=300, random_state=1)
queries = np.unique(qid)
train = np.isin(qid, queries[:200])
valid = np.isin(qid, queries[200:250])
test = np.isin(qid, queries[250:])

ranker = LambdaMARTRanker(
    metric="ndcg",
    n_estimators=1000,  # an upper bound: early stopping picks the number
    learning_rate=0.1,
    max_depth=4,
    eval_metric="ndcg@10",  # NDCG@10, exp gain, worst-order ties
    random_state=0,
)
ranker.fit(
    X[train], y[train], qid=qid[train],
    eval_set=[(X[valid], y[valid])], eval_qid=[qid[valid]],
    early_stopping_rounds=20,
)
print(f"best iteration: {ranker.best_iteration_} (trees kept: {ranker.best_iteration_ + 1} of at most 1000)")
print(f"best validation score: {ranker.best_score_:.4f}")
curve = ranker.evals_result_["validation_0"]["ndcg@10"]
print(f"validation NDCG@10 recorded for {len(curve)} iterations; first {curve[0]:.4f}, best {max(curve):.4f}")
print(f"test NDCG@10 (score uses eval_metric): {ranker.score(X[test], y[test], qid=qid[test]):.4f}")
