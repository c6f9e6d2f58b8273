"""Naive, obviously-correct ranking metrics: the executable specification.

Plain Python on one query at a time. A metric is computed from an explicit
order of labels; tie policies build that order with ``sorted``; the
``average`` policy enumerates every order of the tied blocks (or, for ERR,
every subset of block-mates that can precede a document). Slow by design.
"""

import itertools
import math
import struct


def exp_gain(r):
    """``2^r - 1`` as ``exp(r ln 2) - 1``, without ``2.0**r - 1``'s cancellation for tiny ``r``."""
    return math.expm1(r * math.log(2.0))


def gain(r, gain_type):
    return exp_gain(r) if gain_type == "exp" else float(r)


def err_prob(r, err_scale):
    return r if err_scale <= 0 else exp_gain(r) / err_scale


def value_of_order(metric, labels, *, k=None, gain_type="exp", empty=1.0, threshold=0.0,
                   err_scale=0.0, decay=0.85):
    """Metric of one query whose documents are ranked in the order ``labels``.

    Returns ``None`` for a query excluded by ``empty="exclude"``.
    """
    n = len(labels)
    kk = n if k is None else min(k, n)
    top = labels[:kk]
    if metric in ("dcg", "ndcg"):
        dcg = sum(gain(r, gain_type) / math.log2(i + 2) for i, r in enumerate(top))
        if metric == "dcg":
            return dcg
        ideal_top = sorted(labels, reverse=True)[:kk]
        ideal = sum(gain(r, gain_type) / math.log2(i + 2) for i, r in enumerate(ideal_top))
        if ideal == 0:
            return None if empty == "exclude" else float(empty)
        return dcg / ideal
    if metric == "expdcg":
        return sum(decay**i * r for i, r in enumerate(top))
    if metric == "err":
        total, not_stopped = 0.0, 1.0
        for i, r in enumerate(top):
            p = err_prob(r, err_scale)
            total += not_stopped * p / (i + 1)
            not_stopped *= 1 - p
        return total
    if metric == "pfound":
        # Yandex / CatBoost: PLook_1 = 1, PLook_i = PLook_{i-1} (1 - R_{i-1}) decay.
        total, look = 0.0, 1.0
        for r in top:
            p = err_prob(r, err_scale)
            total += look * p
            look *= (1 - p) * decay
        return total
    relevant = [r > threshold for r in labels]
    n_rel = sum(relevant)
    if n_rel == 0:
        return None if empty == "exclude" else float(empty)
    if metric == "mrr":
        for i in range(kk):
            if relevant[i]:
                return 1.0 / (i + 1)
        return 0.0
    if metric == "map":
        hits, total = 0, 0.0
        for i in range(kk):
            if relevant[i]:
                hits += 1
                total += hits / (i + 1)
        return total / min(n_rel, kk)
    if metric == "precision":
        # trec_eval: P@k divides by k even past the end of the list.
        return sum(relevant[:kk]) / (n if k is None else k)
    if metric == "recall":
        return sum(relevant[:kk]) / n_rel
    if metric == "rprecision":
        cut = min(n_rel, kk)
        return sum(relevant[:cut]) / cut
    raise ValueError(metric)


def tie_blocks(labels, scores):
    """Documents (indices) grouped by equal score, blocks by decreasing score."""
    by_score = {}
    for i, s in enumerate(scores):
        by_score.setdefault(s, []).append(i)
    return [by_score[s] for s in sorted(by_score, reverse=True)]


def order_for_policy(labels, scores, ties, doc_ids=None):
    """Document indices ranked by score desc with the tie policy applied.

    ``trec``: equal scores by document id descending, compared as strings
    (trec_eval's ``strcmp`` on ``docno``), the scores in single precision
    (trec_eval up to 9.0.8); ``trec_double``: the same in double precision
    (trec_eval 10).
    """
    idx = range(len(labels))
    if ties in ("trec", "trec_double"):
        if ties == "trec":
            scores = [struct.unpack("f", struct.pack("f", v))[0] for v in scores]
        by_id = sorted(idx, key=lambda i: str(doc_ids[i]), reverse=True)
        return sorted(by_id, key=lambda i: -scores[i])
    if ties == "worst":
        return sorted(idx, key=lambda i: (-scores[i], labels[i], i))
    if ties == "best":
        return sorted(idx, key=lambda i: (-scores[i], -labels[i], i))
    if ties == "input":
        return sorted(idx, key=lambda i: (-scores[i], i))
    raise ValueError(ties)


def all_tie_orders(labels, scores):
    """Every ranking consistent with the scores (all orders of tied blocks)."""
    blocks = tie_blocks(labels, scores)
    for perms in itertools.product(*(itertools.permutations(b) for b in blocks)):
        yield [i for p in perms for i in p]


def enumerate_values(metric, labels, scores, **params):
    """Metric value of every tie order (``None`` entries for excluded queries)."""
    return [value_of_order(metric, [labels[i] for i in order], **params)
            for order in all_tie_orders(labels, scores)]


def reference_query(metric, labels, scores, ties, doc_ids=None, **params):
    """Reference value of one query: explicit order, or the enumerated mean."""
    if ties == "average":
        values = enumerate_values(metric, labels, scores, **params)
        if values[0] is None:
            return None
        return sum(values) / len(values)
    order = order_for_policy(labels, scores, ties, doc_ids)
    return value_of_order(metric, [labels[i] for i in order], **params)


def err_average_by_subsets(labels, scores, *, k=None, err_scale=0.0):
    """Expected ERR over random tie orders, by enumerating subsets.

    A second, independent route to ``ties="average"`` for ERR that scales to
    blocks of ~12 documents: for document ``u`` in a block of ``t`` at offset
    ``a``, the set ``S`` of block-mates ranked before it is exactly a given
    ``j``-subset with probability ``j! (t - 1 - j)! / t!``.
    """
    n = len(labels)
    kk = n if k is None else min(k, n)
    total, prefix, a = 0.0, 1.0, 0
    for block in tie_blocks(labels, scores):
        t = len(block)
        for u in block:
            others = [v for v in block if v != u]
            for j in range(t):
                if a + j >= kk:
                    break
                p_set = math.factorial(j) * math.factorial(t - 1 - j) / math.factorial(t)
                for subset in itertools.combinations(others, j):
                    prod = 1.0
                    for v in subset:
                        prod *= 1 - err_prob(labels[v], err_scale)
                    total += prefix * p_set * err_prob(labels[u], err_scale) * prod / (a + j + 1)
        for v in block:
            prefix *= 1 - err_prob(labels[v], err_scale)
        a += t
    return total
