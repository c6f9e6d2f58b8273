"""Look at a model: learning curves, feature importance, two rankers query by query.

Two rankers are trained on the same synthetic queries with a validation set
and early stopping: the QueryRMSE baseline and LambdaMART for NDCG@10. One
figure then shows

1. ``plot_metric``: validation NDCG@10 per iteration of each ranker, with
   its best iteration (where early stopping cut the model back);
2. ``plot_importance``: the features LambdaMART splits on, by total gain;
3. ``plot_query_comparison``: NDCG@10 of LambdaMART minus QueryRMSE on every
   held-out query, sorted, with how many queries each ranker wins.

The figure is written to the path given on the command line, or to a new
temporary PNG file whose path is printed. matplotlib is needed (``pip install
matplotlib``); the figure is drawn without pyplot, so no display is used.

Run: ``.venv/bin/python examples/plotting.py [figure.png]``
"""

import sys
import tempfile

import numpy as np
from matplotlib.figure import Figure

from rankkit import LambdaMARTRanker, QueryRMSERanker
from rankkit.datasets import make_ranking
from rankkit.metrics import ndcg_score
from rankkit.plotting import plot_importance, plot_metric, plot_query_comparison

X, y, qid = make_ranking(n_queries=300, random_state=0, as_frame=True)  # columns qid, f0 .. f19
queries = np.unique(qid)
train = qid.isin(queries[:180])
valid = qid.isin(queries[180:240])  # drives early stopping
test = qid.isin(queries[240:])  # judged once, at the end

# One thread: the data is small, and the model is the same for any thread count.
common = dict(n_estimators=300, learning_rate=0.1, max_depth=4, eval_metric="ndcg@10", early_stopping_rounds=25,
              random_state=0, n_jobs=1)
rankers = {
    "QueryRMSE": QueryRMSERanker(**common),
    "LambdaMART": LambdaMARTRanker(metric="ndcg", k=10, **common),
}
for name, ranker in rankers.items():
    ranker.fit(X[train], y[train], eval_set=[(X[valid], y[valid])])
    print(f"{name:10s}: best iteration {ranker.best_iteration_:3d}, "
          f"validation NDCG@10 {ranker.best_score_:.4f}, test NDCG@10 {ranker.score(X[test], y[test]):.4f}")

fig = Figure(figsize=(15, 9), layout="constrained")
axes = fig.subplot_mosaic([["QueryRMSE", "LambdaMART", "importance"], ["queries"] * 3])

# 1. Learning curves, one panel per ranker; the dashed line is the best iteration.
for name, ranker in rankers.items():
    plot_metric(ranker, "ndcg@10", ax=axes[name], title=f"{name}: validation NDCG@10")

# 2. What LambdaMART splits on.
plot_importance(rankers["LambdaMART"], max_num_features=10, ax=axes["importance"])

# 3. Query by query on the test set.
scores_a = rankers["QueryRMSE"].predict(X[test])
scores_b = rankers["LambdaMART"].predict(X[test])
plot_query_comparison(y[test], scores_a, scores_b, qid=qid[test], metric="ndcg@10",
                      labels=("QueryRMSE", "LambdaMART"), ax=axes["queries"])

# The mean difference drawn in panel 3 is the difference of the two mean test
# scores over the queries that have a relevant document (the others are left out).
means = [ndcg_score(y[test], s, qid=qid[test], k=10, empty="exclude") for s in (scores_a, scores_b)]
print(f"test NDCG@10 over queries with a relevant document: QueryRMSE {means[0]:.4f}, "
      f"LambdaMART {means[1]:.4f}, difference {means[1] - means[0]:+.4f}")
print("panel 3:", ", ".join(t.get_text() for t in axes["queries"].get_legend().get_texts()))

if len(sys.argv) > 1:
    path = sys.argv[1]
else:
    with tempfile.NamedTemporaryFile(prefix="rankkit_plots_", suffix=".png", delete=False) as f:
        path = f.name
fig.savefig(path, dpi=100)
print(f"figure written to {path}")
