"""Train on LightGBM with SGLB, save the model, serve it with plain lightgbm.

With ``backend="lightgbm"``, ``ranker.booster_`` is an ordinary
``lightgbm.Booster``. rankkit's objectives start from a score of 0 (no boost
from an average) and the SGLB shrinkage applied during training is folded
into the leaf values when training ends (and again when early stopping keeps
fewer trees), so the saved text model predicts, with ``raw_score=True``,
exactly what ``ranker.predict`` returns.

Run: ``.venv/bin/python examples/save_and_serve_lightgbm.py``
"""

import tempfile
from pathlib import Path

import numpy as np

from rankkit import StochasticRankRanker
from rankkit.datasets import make_ranking
from rankkit.model_selection import query_train_test_split

# rankkit first, then lightgbm: see "OpenMP" in docs/backends.md.
import lightgbm  # noqa: E402  isort: skip

X, y, qid = make_ranking(n_queries=200, random_state=2)
X_tr, X_va, y_tr, y_va, q_tr, q_va = query_train_test_split(X, y, qid=qid, test_size=0.25, random_state=0)
ranker = StochasticRankRanker(
    metric="ndcg", k=10, n_estimators=300, backend="lightgbm", langevin=True, model_shrink_rate=1e-2,
    random_state=0, early_stopping_rounds=20,
).fit(X_tr, y_tr, qid=q_tr, eval_set=[(X_va, y_va)], eval_qid=[q_va])
print(f"best iteration {ranker.best_iteration_} of {ranker.n_iterations_}, "
      f"validation NDCG@10 {ranker.best_score_:.4f}")

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "ranker.txt"
    ranker.booster_.save_model(str(path))  # the training side
    print(f"saved {path.name}: {path.stat().st_size / 1024:.0f} KiB")

    # The serving side: plain lightgbm, no rankkit.
    served = lightgbm.Booster(model_file=str(path))
    scores = served.predict(X, raw_score=True)

ours = ranker.predict(X)
print("max |served - ranker.predict| =", float(np.max(np.abs(scores - ours))))
if not np.allclose(scores, ours, rtol=1e-12, atol=1e-12):
    raise SystemExit("served model does not reproduce ranker.predict")
print("the served model ranks exactly like the ranker")
