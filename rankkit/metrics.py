"""Tie-aware ranking metrics and their scikit-learn scorers.

Every metric takes per-row labels, scores and query ids, an explicit tie
policy (``ties``), and returns the mean over queries or, with
``per_query=True``, one value per query.
"""

from rankkit._metrics._api import (
    dcg_score,
    err_score,
    expdcg_score,
    map_score,
    mrr_score,
    ndcg_score,
    pfound_score,
    precision_score,
    recall_score,
    rprecision_score,
)
from rankkit._metrics._scorers import SCORER_METRICS, get_ranking_scorer, make_ranking_scorer

__all__ = [
    "ndcg_score",
    "dcg_score",
    "err_score",
    "mrr_score",
    "map_score",
    "expdcg_score",
    "precision_score",
    "recall_score",
    "rprecision_score",
    "pfound_score",
    "make_ranking_scorer",
    "get_ranking_scorer",
    "SCORER_METRICS",
]
