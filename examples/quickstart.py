"""Quickstart: fit a ranker, rank new queries, score them.

A ranker learns one score per document; only the order of the scores inside
each query matters. ``qid`` tells the ranker which rows belong together.

Run: ``.venv/bin/python examples/quickstart.py``
"""

import numpy as np

from rankkit import LambdaMARTRanker
from rankkit.datasets import make_ranking

X, y, qid = make_ranking(n_queries=200, random_state=0)

# Hold out whole queries: a query's documents must never be split between
# training and evaluation.
test = qid >= np.quantile(np.unique(qid), 0.8)

ranker = LambdaMARTRanker(metric="ndcg", n_estimators=100, random_state=0)
ranker.fit(X[~test], y[~test], qid=qid[~test])
scores = ranker.predict(X[test])  # one score per document; sort each query by it
print(f"NDCG@10 (ties worst, exp gain) on held-out queries: {ranker.score(X[test], y[test], qid=qid[test]):.4f}")

# The ranking itself, for the first test query that has a relevant document:
# its documents' labels sorted by predicted score (best first).
y_test, q_test = y[test], qid[test]
one = q_test == q_test[np.flatnonzero(y_test > 0)[0]]
order = np.argsort(-scores[one], kind="stable")
print("top-10 labels of one test query, as ranked:", y_test[one][order][:10].astype(int).tolist())
print("the same labels, ideally ordered:          ", np.sort(y_test[one])[::-1][:10].astype(int).tolist())
