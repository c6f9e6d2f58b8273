"""A publishable comparison of the rankers of ``python -m rankkit``.

Every ranker is fitted on the training queries of each of 3 query folds and
scored on that fold's test queries (rankkit.evaluation.cross_evaluate), so each
query is a test query exactly once and every ranker is judged on the same
queries. compare() then gives the mean of every metric with a 95% bootstrap
interval over queries, a paired randomisation test of every ranker against
LambdaMART with Holm's correction over the whole table, and the queries won,
tied and lost. The table is printed in Markdown and in LaTeX; last, one
ranker's scores are written as a TREC run (with its qrels) that trec_eval
reads as it is.

Pass a LETOR fold (e.g. ``../shared/data/MQ2008/Fold1/train.txt.gz``) as the
first argument to compare on real queries instead of synthetic ones.
"""

import sys
import tempfile
from pathlib import Path

import xgboost

import rankkit
from rankkit.__main__ import RANKERS
from rankkit.datasets import load_svmlight, make_ranking
from rankkit.evaluation import compare, cross_evaluate
from rankkit.model_selection import QueryKFold
from rankkit.trec import read_run, write_qrels, write_run

if len(sys.argv) > 1:
    X, y, qid = load_svmlight(sys.argv[1], dense=True)
else:
    X, y, qid = make_ranking(240, random_state=0)

common = dict(n_estimators=40, max_depth=4, learning_rate=0.1, random_state=0)
rankers = {}
for label, short, cls_name, params in RANKERS.values():
    if cls_name is None:  # XGBoost's own LambdaMART, as python -m rankkit runs it
        rankers[short] = xgboost.XGBRanker(objective="rank:ndcg", tree_method="hist", n_jobs=1, **common)
    else:
        rankers[short] = getattr(rankkit, cls_name)(**params, **common, n_jobs=1)

per_query = cross_evaluate(
    rankers, X, y, qid=qid, cv=QueryKFold(n_splits=3, shuffle=True, random_state=0),
    metrics=["ndcg@10", "map", "mrr", "precision@5", "err@10"],
)
comparison = compare(per_query, baseline="LambdaMART", test="randomization", correction="holm")
print(comparison.to_markdown())
print(comparison.to_latex(digits=3))

# Every ranker's mean of every metric, from per_query (one row per query, ranker and metric:
# the per-query numbers, for a paper's appendix or further tests).
wide = per_query.pivot_table(index="ranker", columns="metric", values="value", aggfunc="mean")
print(wide.round(4).to_string())

# One ranker fitted on every query, its scores as a TREC run with the qrels: `trec_eval qrels.txt run.txt`.
with tempfile.TemporaryDirectory() as folder:
    folder = Path(folder)
    model = rankers["LambdaMART"].fit(X, y, qid=qid)
    lines = write_run(folder / "run.txt", model.predict(X), qid=qid, tag="LambdaMART")
    write_qrels(folder / "qrels.txt", y, qid=qid)
    print(f"\nwrote a run of {lines} lines; its first line: {(folder / 'run.txt').read_text().splitlines()[0]}")
    assert len(read_run(folder / "run.txt")) == lines
