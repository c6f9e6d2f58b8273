"""Save a trained ranker as XGBoost JSON and serve it with plain xgboost.

With ``backend="xgboost"``, ``ranker.booster_`` is an ordinary
``xgboost.Booster``; the model file needs neither rankkit nor numba to
predict. Raw margins are the ranking scores: rankkit trains with
``base_score=0`` and folds any SGLB shrinkage into the leaves, so the saved
file predicts exactly what ``ranker.predict`` returns.

Run: ``.venv/bin/python examples/save_and_serve.py``
"""

import tempfile
from pathlib import Path

import numpy as np
import xgboost

from rankkit import StochasticRankRanker
from rankkit.datasets import make_ranking

X, y, qid = make_ranking(n_queries=150, random_state=2)
ranker = StochasticRankRanker(
    metric="ndcg", k=10, n_estimators=50, langevin=True, model_shrink_rate=1e-3, random_state=0,
    backend="xgboost",
).fit(X, y, qid=qid)

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "ranker.json"
    ranker.booster_.save_model(path)  # the training side
    print(f"saved {path.name}: {path.stat().st_size / 1024:.0f} KiB")

    # The serving side: plain xgboost, no rankkit.
    served = xgboost.Booster()
    served.load_model(path)
    scores = served.predict(xgboost.DMatrix(X), output_margin=True)

ours = ranker.predict(X)
print("max |served - ranker.predict| =", float(np.max(np.abs(scores - ours))))
if not np.allclose(scores, ours, rtol=1e-5, atol=1e-5):
    raise SystemExit("served model does not reproduce ranker.predict")
print("the served model ranks exactly like the ranker")
