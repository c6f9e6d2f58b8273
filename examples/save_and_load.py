"""Save a ranker to one file, load it back, and serve the model inside with plain XGBoost.

The ranker trains on a DataFrame with a query column and a categorical
column. ``save_model`` writes a ``rankkit-model`` file (a ZIP of a JSON header
and XGBoost's own model, no pickle; ``docs/persistence.md``);
``rankkit.load_model`` gives back a ranker with the same parameters, feature
names, categories and early-stopping results that predicts bit for bit the
same. The header's ``serving`` section says how a server without rankkit
builds the feature matrix for the XGBoost model inside.

Run: ``.venv/bin/python examples/save_and_load.py``
"""

import json
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import xgboost

import rankkit
from rankkit.datasets import make_ranking
from rankkit.model_selection import query_train_test_split

X, y, qid = make_ranking(n_queries=200, n_features=6, random_state=0)
df = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
df["qid"] = qid
# A categorical feature: the document's site; "wiki" pages are a little more relevant.
site = np.random.default_rng(0).choice(["news", "shop", "wiki"], size=len(df))
df["site"] = pd.Categorical(site)
y = y + (site == "wiki") * (y > 0)
train, test, y_train, y_test, _, _ = query_train_test_split(df, y, test_size=0.25, random_state=0)

ranker = rankkit.LambdaMARTRanker(metric="ndcg@10", n_estimators=200, learning_rate=0.1, random_state=0,
                                  early_stopping_rounds=20)
ranker.fit(train, y_train, eval_set=[(test, y_test)])
print(f"best iteration {ranker.best_iteration_}, validation NDCG@10 {ranker.best_score_:.4f}")

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "ranker.rkm"
    ranker.save_model(path)
    print(f"saved {path.name}: {path.stat().st_size / 1024:.0f} KiB, members "
          f"{zipfile.ZipFile(path).namelist()}")

    loaded = rankkit.load_model(path)
    assert np.array_equal(loaded.predict(test), ranker.predict(test)), "loaded model predicts differently"
    assert loaded.get_params() == ranker.get_params() and loaded.best_iteration_ == ranker.best_iteration_
    print("loaded:", type(loaded).__name__, "features", list(loaded.feature_names_in_),
          "categories", {loaded.feature_names_in_[j]: list(c) for j, c in loaded.categories_.items()})

    # The serving side: plain XGBoost and the header, no rankkit.
    with zipfile.ZipFile(path) as archive:
        serving = json.loads(archive.read("rankkit.json"))["serving"]
        model = archive.read(serving["model_file"])
    features = test[serving["feature_names"]].copy()  # the query column dropped, columns in order
    for j, categories in serving["categories"].items():
        column = features.columns[int(j)]
        codes = pd.Index(categories).get_indexer(features[column])
        features[column] = np.where(codes >= 0, codes, np.nan)
    scores = xgboost.Booster(model_file=bytearray(model)).inplace_predict(features.to_numpy(dtype=float))

if not np.array_equal(scores, ranker.predict(test)):
    raise SystemExit("the served model does not reproduce ranker.predict")
print("plain XGBoost on the model inside the file predicts exactly ranker.predict")
