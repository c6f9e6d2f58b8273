"""Grid search with query-aware cross-validation and a ranking scorer.

Two ways to hand query ids through scikit-learn's machinery:

1. a DataFrame with a query column (``qid_col="qid"``, the default): the
   ranker and the scorer both read the column, and ``QueryKFold`` keeps every
   query's rows in one fold, so no routing is needed at all;
2. plain arrays plus ``qid=`` routed by scikit-learn's metadata routing
   (``sklearn.set_config(enable_metadata_routing=True)``).

Run: ``.venv/bin/python examples/grid_search_dataframe.py``
"""

import pandas as pd
import sklearn
from sklearn.model_selection import GridSearchCV

from rankkit import LambdaMARTRanker
from rankkit.datasets import make_ranking
from rankkit.metrics import make_ranking_scorer
from rankkit.model_selection import QueryKFold

X, y, qid = make_ranking(n_queries=150, random_state=3)
df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
df.insert(0, "qid", qid)  # the query column travels with the rows through every split

grid = {"max_depth": [3, 6]}
scorer = make_ranking_scorer("ndcg@10")  # NDCG@10, exp gain, worst-order ties

# 1. DataFrame with a query column.
search = GridSearchCV(
    LambdaMARTRanker(n_estimators=20, random_state=0),
    grid,
    cv=QueryKFold(n_splits=3, shuffle=True, random_state=0),
    scoring=scorer,
)
search.fit(df, y)
print("DataFrame path  : best", search.best_params_, f"NDCG@10 = {search.best_score_:.4f}")

# 2. Arrays + metadata routing: qid= goes to the ranker's fit, the scorer and
#    the splitter.
with sklearn.config_context(enable_metadata_routing=True):
    search = GridSearchCV(
        LambdaMARTRanker(n_estimators=20, random_state=0),
        grid,
        cv=QueryKFold(n_splits=3, shuffle=True, random_state=0),
        scoring=scorer,
    )
    search.fit(X, y, qid=qid)
print("routing path    : best", search.best_params_, f"NDCG@10 = {search.best_score_:.4f}")
