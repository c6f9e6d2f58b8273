"""Semi-synthetic click logs from a labelled LETOR set (Joachims et al. 2017)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import _num_samples

from ._groups import make_groups
from ._validation import check_labels, check_scores

CLICK_MODELS = ("pbm", "cascade", "noisy")


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_number(value):
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _check_eta(eta):
    if not (_is_number(eta) and eta >= 0):  # inf: only the top position is examined
        raise ValueError(f"eta must be a number >= 0 (examination (1 / k) ** eta), got {eta!r}.")


def pbm_propensities(max_position, eta=1.0):
    """The PBM examination probabilities ``(1 / k) ** eta`` for ``k = 1..max_position``."""
    if not (_is_int(max_position) and max_position >= 1):
        raise ValueError(f"max_position must be a positive int, got {max_position!r}.")
    _check_eta(eta)
    return (1.0 / np.arange(1, int(max_position) + 1)) ** float(eta)


def _relevance_probability(y, max_label, noise):
    """``P(click | examined)``: ``eps + (1 - eps) (2^y - 1) / (2^max - 1)``
    (Chapelle et al. 2009's mapping, with ``eps`` the noise clicks)."""
    if max_label <= 0:
        return np.full(y.shape, noise)
    p = noise + (1.0 - noise) * (np.exp2(y) - 1.0) / (np.exp2(max_label) - 1.0)
    return np.clip(p, 0.0, 1.0)  # eps + (1 - eps) can round above 1


def _check_args(model, n_sessions, eta, noise, top_k, n_rankings, ranking_noise, max_label, aggregate,
                return_impressions):
    # Bools are refused where ints are meant (True read as 1 session), text where numbers are.
    if not (_is_int(n_rankings) and n_rankings >= 1):
        raise ValueError(f"n_rankings must be a positive int, got {n_rankings!r}.")
    if not (_is_number(ranking_noise) and 0 <= ranking_noise < np.inf):
        raise ValueError(f"ranking_noise must be a finite number >= 0, got {ranking_noise!r}.")
    if model not in CLICK_MODELS:
        raise ValueError(f"click model {model!r} is not one of {list(CLICK_MODELS)}.")
    if not (_is_int(n_sessions) and n_sessions >= 1):
        raise ValueError(f"n_sessions must be a positive int, got {n_sessions!r}.")
    _check_eta(eta)
    if not (_is_number(noise) and 0 <= noise < 1):
        raise ValueError(f"noise must be a number in [0, 1), got {noise!r}.")
    if top_k is not None and not (_is_int(top_k) and top_k >= 1):
        raise ValueError(f"top_k must be a positive int or None, got {top_k!r}.")
    # A top label whose 2^max overflows makes every attractiveness (2^r - 1) / (2^max - 1) zero: no click.
    if max_label is not None and not (_is_number(max_label) and 0 <= max_label < 1024):
        raise ValueError(f"max_label must be a label in [0, 1024) (the top of the label scale, below the "
                         f"labels whose 2^r overflows) or None, got {max_label!r}.")
    for name, value in (("aggregate", aggregate), ("return_impressions", return_impressions)):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {value!r}.")


def _shown_lists(scores, groups, top_k, n_rankings, ranking_noise, rng):
    """Per query and ranking, the rows shown and their 1-based positions, in
    the sorted layout; ``lists`` numbers the (query, ranking) lists.

    Ranking 0 of a query is the logging ranker's order (ties by row order);
    ranking ``r >= 1`` sorts ``scores + ranking_noise * sd * G`` with ``G``
    standard Gumbel draws and ``sd`` the standard deviation of the query's
    scores (1 when they are all equal): a Plackett-Luce sample of the
    logger's softmax."""
    ptr = groups.group_ptr
    shown, position, lists = [], [], []
    for q in range(ptr.shape[0] - 1):
        lo, hi = ptr[q], ptr[q + 1]
        s = scores[lo:hi]
        # Scores all equal (sd 0): the logger's softmax is uniform, sampled by the
        # Gumbel draws at any positive scale; scaled by 0 they left every ranking
        # the row order, and a constant logger was never randomised.
        sd = s.std() if s.std() > 0 else 1.0
        for r in range(n_rankings):
            key = s if r == 0 else s + ranking_noise * sd * rng.gumbel(size=s.shape[0])
            order = lo + np.argsort(-key, kind="stable")
            if top_k is not None:
                order = order[:top_k]
            shown.append(order)
            position.append(np.arange(1, order.shape[0] + 1))
            lists.append(np.full(order.shape[0], q * n_rankings + r))
    return np.concatenate(shown), np.concatenate(position), np.concatenate(lists)


def _cascade_clicks(rel, sessions, rng):
    """Cascade model (Craswell et al. 2008): scan from the top, click the
    first document found relevant, stop. ``rel`` is one query's list in
    shown order; returns (sessions, n) 0/1 clicks."""
    relevant = rng.random((sessions, rel.shape[0])) < rel
    clicked = np.zeros(relevant.shape, dtype=np.int8)
    has = relevant.any(axis=1)
    clicked[np.flatnonzero(has), relevant.argmax(axis=1)[has]] = 1
    return clicked


def simulate_clicks(X, y, qid, scores, *, n_sessions=10_000, model="pbm", eta=1.0, noise=0.1, top_k=None,
                    max_label=None, n_rankings=1, ranking_noise=1.0, aggregate=True, return_impressions=False,
                    random_state=None):
    r"""Simulate a click log from graded labels and a logging ranker's scores.

    The semi-synthetic protocol of Joachims, Swaminathan & Schnabel (2017):
    each session draws a query uniformly at random and shows its documents in
    the order of the logging ranker's ``scores`` (ties keep row order), the
    top ``top_k`` of them (all by default). A shown document is clicked when
    the simulated user examines it and finds it attractive,
    ``P(attractive) = eps + (1 - eps) (2^r - 1) / (2^{r_max} - 1)``:

    * ``"pbm"``: position-based model, examination ``(1 / k) ** eta`` at rank
      ``k`` independently per document, ``eps = 0`` (no click on a document
      with label 0);
    * ``"noisy"``: the same with ``eps = noise`` (clicks on irrelevant documents);
    * ``"cascade"``: the user scans from the top and clicks the first
      attractive document, then leaves (``eps = 0``; ``eta`` unused); its
      examination depends on the documents above, so no per-position
      propensity describes it exactly.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Returned row by row as shown; a DataFrame keeps its columns, a query
        column included: drop it before ``fit(..., qid=...)`` with the
        returned ids (a ranker refuses query ids given twice).
    y : array-like of shape (n_samples,)
        Graded relevance labels (>= 0).
    qid : array-like of shape (n_samples,)
    scores : array-like of shape (n_samples,)
        The logging ranker's scores.
    n_sessions : int, default=10_000
    model : {"pbm", "cascade", "noisy"}, default="pbm"
    eta : float, default=1.0
        Severity of the position bias.
    noise : float, default=0.1
        ``eps`` of ``"noisy"``.
    top_k : int or None, default=None
        Documents shown per session.
    max_label : float, optional
        ``r_max`` of the mapping; default the largest label of ``y``.
    n_rankings : int, default=1
        Rankings the logger shows for each query. The first is the order of
        ``scores`` (the deterministic logger of the protocol); each other one
        sorts ``scores + ranking_noise * sd_q * G``, ``G`` standard Gumbel
        draws and ``sd_q`` the standard deviation of the query's scores, 1
        when they are all equal (a Plackett-Luce sample of the logger's
        softmax, drawn once: uniform for a constant logger). A
        query's sessions are spread uniformly at random over its rankings. A
        randomised logger shows a document at several ranks, which is what
        lets ``position_bias="estimate"`` tell position from relevance (one
        fixed ranking confounds them).
    ranking_noise : float, default=1.0
        Scale of the Gumbel noise of rankings ``2..n_rankings``.
    aggregate : bool, default=True
        True: one row per shown (query, ranking, document) with the number of
        clicks over the sessions that saw that ranking as the label, and as
        ``qid`` the query's own id when ``n_rankings=1`` (each query shows
        one list, so every position appears once per query), else the
        number of the (query, ranking) list, ``q * n_rankings + r`` with
        ``q`` the query's place in order of first appearance. Lists that no
        session drew have no rows. False: one row per
        shown document per session, 0/1 clicks, and the session number as
        ``qid`` (a query group is one impression list).
    return_impressions : bool, default=False
        With ``aggregate``, also return how many sessions showed each row
        (its list's sessions): ``clicks / impressions`` are click-through
        rates, the input of ``propensity_estimator="em"`` with
        ``sample_weight=impressions``.
    random_state : int, Generator or None

    Returns
    -------
    X_clicks, clicks, qid_clicks, position[, impressions]
        ``position`` is the 1-based rank at which each row was shown. The
        true propensities of ``"pbm"`` and ``"noisy"`` are
        :func:`pbm_propensities`\ ``(max_position, eta)``.

    Examples
    --------
    >>> from rankkit.datasets import make_ranking, simulate_clicks
    >>> X, y, qid = make_ranking(20, random_state=0)
    >>> Xc, clicks, qc, position = simulate_clicks(X, y, qid, X[:, 0], n_sessions=100, random_state=0)
    >>> bool(position.min() == 1 and clicks.min() >= 0)
    True
    """
    _check_args(model, n_sessions, eta, noise, top_k, n_rankings, ranking_noise, max_label, aggregate,
                return_impressions)
    if return_impressions and not aggregate:
        raise ValueError("return_impressions=True applies to aggregate=True: with aggregate=False every row is "
                         "one impression (one session's view of a document).")
    y = check_labels(y, name="y")
    scores = check_scores(scores, name="scores")
    # Rows are matched by number: a longer array would be silently cut, a
    # shorter scores silently leave documents unshown.
    for name, n in (("X", _num_samples(X)), ("scores", scores.shape[0])):
        if n != y.shape[0]:
            raise ValueError(f"{name} has {n} rows but y has {y.shape[0]}: pass one row of X, one label and "
                             "one logging score per document.")
    groups = make_groups(qid, y.shape[0])
    rng = np.random.default_rng(random_state)
    ys, ss = groups.sort(y), groups.sort(scores)
    shown, position, lists = _shown_lists(ss, groups, top_k, n_rankings, ranking_noise, rng)
    rmax = float(ys.max()) if max_label is None else float(max_label)
    if rmax >= 1024:  # 2^r overflows: every attractiveness would be nan or 0
        raise ValueError(f"y has the label {ys.max():g}: the click models' attractiveness (2^r - 1) / "
                         "(2^max_label - 1) needs labels below 1024; pass graded labels (0-4, say).")
    if max_label is not None and not ys.max() <= rmax:
        raise ValueError(f"max_label={max_label!r} is below the largest label {ys.max():g} of y: it is the top of "
                         "the label scale (relevance (2^r - 1) / (2^max_label - 1) must not exceed 1); pass "
                         "max_label >= the largest label, or None.")
    rel = _relevance_probability(ys[shown], rmax, noise if model == "noisy" else 0.0)
    exam = pbm_propensities(position.max(), eta)[position - 1]
    n_queries = groups.n_queries
    n_lists = n_queries * n_rankings
    per_list = rng.multinomial(n_sessions, np.full(n_queries, 1.0 / n_queries))
    if n_rankings > 1:  # each query's sessions over its rankings
        per_list = np.concatenate([rng.multinomial(m, np.full(n_rankings, 1.0 / n_rankings)) for m in per_list])
    sizes = np.bincount(lists, minlength=n_lists)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    rows = groups.order[shown] if groups.order is not None else shown  # caller's row numbers
    if aggregate:
        if model == "cascade":
            clicks = np.concatenate([
                _cascade_clicks(rel[starts[k]:starts[k + 1]], per_list[k], rng).sum(axis=0)
                for k in range(n_lists)])
        else:  # independent sessions: the sum of Bernoulli clicks is binomial
            clicks = rng.binomial(per_list[lists], exam * rel)
        out_qid = np.asarray(qid)[rows] if n_rankings == 1 else lists
        # A list no session drew was never shown: it has no rows (the draws
        # above are made for every list, so a seed gives the same clicks).
        seen = per_list[lists] > 0
        out = (_take(X, rows[seen]), clicks[seen].astype(np.float64), out_qid[seen], position[seen])
        return (*out, per_list[lists][seen].astype(np.float64)) if return_impressions else out
    return _sessions(X, rows, rel, exam, position, per_list, starts, model, rng)


def _sessions(X, rows, rel, exam, position, per_list, starts, model, rng):
    """One row per shown document per session (session ids 0, 1, ...);
    ``per_list[k]`` sessions see list ``k``, rows ``starts[k]:starts[k + 1]``."""
    parts_rows, parts_clicks, parts_pos, parts_sid = [], [], [], []
    next_session = 0
    for k in np.flatnonzero(per_list):
        lo, hi = starts[k], starts[k + 1]
        m, n = int(per_list[k]), hi - lo
        if model == "cascade":
            clicks = _cascade_clicks(rel[lo:hi], m, rng)
        else:
            clicks = (rng.random((m, n)) < exam[lo:hi] * rel[lo:hi]).astype(np.int8)
        parts_rows.append(np.tile(rows[lo:hi], m))
        parts_clicks.append(clicks.ravel())
        parts_pos.append(np.tile(position[lo:hi], m))
        parts_sid.append(np.repeat(np.arange(next_session, next_session + m), n))
        next_session += m
    # Sessions in random order, as a log would interleave queries.
    sid = np.concatenate(parts_sid)
    perm = rng.permutation(next_session)
    sid = perm[sid]
    order = np.argsort(sid, kind="stable")
    rows = np.concatenate(parts_rows)[order]
    return (_take(X, rows), np.concatenate(parts_clicks)[order].astype(np.float64), sid[order],
            np.concatenate(parts_pos)[order])


def _take(X, rows):
    if hasattr(X, "iloc"):
        return X.iloc[rows].reset_index(drop=True)
    if hasattr(X, "tocsr"):
        return X.tocsr()[rows]
    return np.asarray(X)[rows]
