"""Learning from clicks: train on a simulated click log without position bias.

Users click what they see first, so clicks confound relevance with the rank a
document was shown at. This example simulates a click log from labelled data
(the position-based model: a document at rank k is examined with probability
1/k), trains LambdaMART on the clicks naively, with the known propensities
(inverse propensity weighting) and with propensities estimated during
training, and evaluates all three on the true labels of held-out queries.

Run: ``.venv/bin/python examples/learning_from_clicks.py``
"""

import numpy as np

from rankkit import LambdaMARTRanker
from rankkit.datasets import make_ranking, pbm_propensities, simulate_clicks
from rankkit.metrics import ndcg_score

X, y, qid = make_ranking(n_queries=300, n_features=10, max_docs=30, random_state=0)
X_test, y_test, qid_test = make_ranking(n_queries=100, n_features=10, max_docs=30, random_state=1)

# A weak logging ranker: its order is what the simulated users see.
logger = X[:, 0] + np.random.default_rng(0).normal(size=len(y))
# One row per shown document per session; each session is its own query group.
X_log, clicks, session, position = simulate_clicks(
    X, y, qid, logger, n_sessions=3_000, eta=1.0, top_k=10, aggregate=False, random_state=0)
print(f"{session.max() + 1} sessions, {int(clicks.sum())} clicks on {len(clicks)} shown documents")

params = dict(n_estimators=60, gain="linear", random_state=0)
models = {
    "clicks as labels": LambdaMARTRanker(**params).fit(X_log, clicks, qid=session),
    "known propensities": LambdaMARTRanker(position_bias="known", propensities=lambda k: 1.0 / k, **params)
    .fit(X_log, clicks, qid=session, position=position),
    "estimated propensities": LambdaMARTRanker(position_bias="estimate", **params)
    .fit(X_log, clicks, qid=session, position=position),
}
for name, model in models.items():
    ndcg = ndcg_score(y_test, model.predict(X_test), qid=qid_test, k=10)
    print(f"{name:>24}: NDCG@10 on true labels {ndcg:.4f}")

estimated = models["estimated propensities"].position_bias_
print("true propensities     :", np.round(pbm_propensities(10, 1.0), 2).tolist())
print("estimated propensities:", np.round(estimated, 2).tolist())
