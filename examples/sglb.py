"""SGLB: Stochastic Gradient Langevin Boosting (Ustimenko & Prokhorenkova, 2021).

With ``langevin=True`` every boosting iteration

1. shrinks the model, ``F <- (1 - model_shrink_rate * learning_rate) F``
   (``model_shrink_mode="constant"``; ``"decreasing"`` uses ``1 - rate / t``);
2. computes the gradients at the shrunk model;
3. adds Gaussian noise to every document's gradient:
   ``g_i += sqrt(2 / (learning_rate * diffusion_temperature)) * N(0, 1)``.

Noise lets boosting leave local optima; the shrinkage keeps the model
bounded, so the chain settles around a global optimum of the regularised loss
(the guarantee StochasticRank's global convergence relies on). Larger
``diffusion_temperature`` (an inverse temperature) means less noise.

The data is StochasticRank's two-query example: NDCG@3 has a global optimum
of 0.917 and a local one of 0.903 (ICML 2020, Table 1).

Run: ``.venv/bin/python examples/sglb.py``
"""

import math

from rankkit import StochasticRankRanker
from rankkit.datasets import make_stochasticrank_toy
from rankkit.metrics import ndcg_score

X, y, qid = make_stochasticrank_toy()
learning_rate, diffusion_temperature = 0.1, 1e3
print(f"gradient noise std per document: sqrt(2 / (eta * beta)) = "
      f"{math.sqrt(2 / (learning_rate * diffusion_temperature)):.3f}")

for langevin in (False, True):
    ranker = StochasticRankRanker(
        metric="ndcg", k=3,
        n_estimators=300, max_depth=3, learning_rate=learning_rate,
        langevin=langevin,
        diffusion_temperature=diffusion_temperature,  # beta: inverse temperature of the noise
        model_shrink_rate=1e-3,                        # gamma: shrinkage per unit of learning rate
        model_shrink_mode="constant",
        random_state=0,
    ).fit(X, y, qid=qid)
    value = ndcg_score(y, ranker.predict(X), qid=qid, k=3, ties="worst", gain="exp")
    print(f"langevin={langevin!s:5}: NDCG@3 = {value:.3f}")
