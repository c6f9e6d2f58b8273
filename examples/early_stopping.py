"""Early stopping on a validation set of queries, with progress lines.

As in XGBoost 3, ``early_stopping_rounds`` and ``eval_metric`` are set on the
ranker. ``eval_set`` takes ``(X, y)`` pairs and ``eval_qid`` their query ids;
every iteration records each ``eval_metric`` on each set (``evals_result_``).
Training stops when the *first* metric on the *last* eval set has not
improved for ``early_stopping_rounds`` iterations, and the model is cut back
to its best iteration (``best_iteration_``, 0-based), which ``predict`` and
``score`` use. Listing the training data itself in ``eval_set`` records its
curve too (as ``"training"``), and ``verbose=N`` prints a line every ``N``
iterations and a final line.

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
X_tr, y_tr, q_tr = X[train], y[train], qid[train]

ranker = LambdaMARTRanker(
    metric="ndcg",
    n_estimators=1000,  # an upper bound: early stopping picks the number
    learning_rate=0.1,
    max_depth=4,
    eval_metric=["ndcg@10", "mrr"],  # NDCG@10 (exp gain, worst-order ties) drives early stopping
    early_stopping_rounds=20,
    random_state=0,
)
ranker.fit(
    X_tr, y_tr, qid=q_tr,
    eval_set=[(X_tr, y_tr), (X[valid], y[valid])], eval_qid=[q_tr, qid[valid]],
    verbose=10,
)
print(f"best iteration: {ranker.best_iteration_} (trees kept: {ranker.best_iteration_ + 1} "
      f"of {ranker.n_iterations_} run, at most 1000)")
print(f"best validation NDCG@10: {ranker.best_score_:.4f}")
curves = ranker.evals_result_
print(f"recorded: {', '.join(f'{s}/{m}' for s, r in curves.items() for m in r)}; "
      f"training NDCG@10 at the best iteration {curves['training']['ndcg@10'][ranker.best_iteration_]:.4f}")
print(f"test NDCG@10 (score uses the first eval_metric): {ranker.score(X[test], y[test], qid=qid[test]):.4f}")
# The early-stopped model is the first best_iteration_ + 1 iterations.
same = np.array_equal(ranker.predict(X[test]), ranker.predict(X[test], iteration_range=(0, ranker.best_iteration_ + 1)))
print(f"predict(X) == predict(X, iteration_range=(0, best_iteration_ + 1)): {same}")
assert same
