"""How close can regression EM get to the true propensities? (target: within 10% at 10^6 sessions)

The setting of ``bench_clicks.py`` (one fixed logging ranker trained on 1%
of the training queries, PBM clicks aggregated per (query, document), CTR
labels with the impressions as sample weights), and the maximum relative
error of the estimated propensities over positions 1-10 for variants of
regression EM:

* ``naive``: each position's click-through rate relative to position 1 (no
  model; what confounding alone leaves);
* ``default``: ``LambdaMARTRanker(position_bias="estimate")`` with its
  estimator as shipped (3 EM steps per boosting iteration on the current
  scores), on the whole list (``k=None``, with which benchmarks/README.md
  section 5 was measured);
* ``steps10``: 10 EM steps per iteration;
* ``final``: after training, EM run to convergence (``--em-steps`` steps)
  on the final model's scores, from the shipped estimate;
* ``final-noq``: the same without the per-query offsets of the relevance model;
* ``features``: EM whose relevance model is a logistic regression on the
  standardised features plus per-query offsets (no ranker at all);
* ``features+score``: the same with the final model's score as one more feature;
* ``oracle``: the M-step alone, with the simulator's true ``P(relevant)`` of
  every row held fixed (the error left when relevance is known);
* ``labels``: the shipped estimator's relevance model (logistic map plus
  per-query offsets) given the true labels as the scores (the error of the
  map itself when the scores rank perfectly);
* ``xfit-clicks`` (with ``--cross-fitted``): EM as shipped (logistic map
  plus per-query offsets), run to convergence (``--em-steps``) on
  out-of-fold scores: five query folds of the click log, each scored by
  ``LambdaMARTRanker(position_bias="estimate")`` fitted on the other four;
* ``xfit-labels`` (with ``--cross-fitted``): the same on out-of-fold scores
  of a ``LambdaMARTRanker`` fitted on the other folds' *true labels*: a
  relevance model as good as these features give with full supervision,
  so about the closest any feature-based estimate can get from one fixed
  logger;
* ``xgboost``: XGBoost's Unbiased LambdaMART (``bench_clicks.py``'s
  ``xgboost unbiased``) on the same clicks, as a peer's estimate of the same
  propensities (run with ``--default-only`` too; with ``--rankings`` above 1
  each (query, ranking) list is its own query group, as ``simulate_clicks``
  returns it, so XGBoost, which reads positions from the row order, sees
  every impression list at its ranks).

``--cross-fitted`` runs ``naive``, ``default``, ``xfit-clicks`` and
``xfit-labels`` only.

``--per-session`` runs ``naive``, ``default`` and ``per-session`` only:
``per-session`` is the shipped estimator on the same simulated traffic
logged one row per shown document per session (``simulate_clicks(...,
aggregate=False)``: 0/1 clicks, each session its own query group, no
weights), the layout of the user guide's first click example, against
``default``'s one group per shown list with click-through rates and the
impressions as weights.

``--rankings K`` randomises the logger (``simulate_clicks(n_rankings=K,
ranking_noise=--ranking-noise)``: each query shown in its logging order and
in ``K - 1`` Plackett-Luce samples of it); ``--default-only`` runs only the
shipped estimator; ``--ndcg`` runs ``default`` and ``steps10`` only and adds
each model's NDCG@10 on the true labels of the test queries (as in
``bench_clicks.py``; queries without a relevant document excluded), so the two
can be compared as rankers, not only as estimators.

    python benchmarks/bench_click_em.py --datasets mq2008 --etas 1 --sessions 1000000
    python benchmarks/bench_click_em.py --datasets mq2008 yahoo --rankings 8 --ranking-noise 2 --default-only
    python benchmarks/bench_click_em.py --datasets mq2008 yahoo --seeds 0 1 2 --ndcg --rankings 16 --ranking-noise 4
    python benchmarks/bench_click_em.py --datasets mq2008 yahoo clueweb09 --seeds 0 1 2 --cross-fitted --em-steps 300
    python benchmarks/bench_click_em.py --datasets mq2008 --etas 1 --sessions 20000 100000 --seeds 0 1 2 --rankings 16 --ranking-noise 4 --per-session
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import bench_clicks as bc
from _common import save_result

from rankkit import LambdaMARTRanker
from rankkit._clicks import RegressionEM, _offset_fit, _sigmoid
from rankkit._groups import make_groups
from rankkit.datasets import pbm_propensities, simulate_clicks
from rankkit.model_selection import QueryKFold


def error(theta, truth):
    k = min(10, theta.shape[0])
    return float(np.max(np.abs(theta[:k] / truth[:k] - 1)))


def propensity_step(em, gamma):
    """The E-step of :class:`RegressionEM` ``em`` at relevance ``gamma`` and
    its propensity update; returns the posterior relevance of every row."""
    theta = em.theta[em.index]
    c = em.clicks
    denom = np.maximum(1.0 - theta * gamma, 1e-12)
    examined = c + (1.0 - c) * theta * (1.0 - gamma) / denom
    em.theta = np.clip(np.bincount(em.index, weights=examined * em.weight, minlength=em.n_positions) / em.count,
                       1e-6, 1.0)
    return c + (1.0 - c) * (1.0 - theta) * gamma / denom


class FeatureEM:
    """Regression EM with ``P(relevant) = sigmoid(F w + b + offset_q)``,
    ``F`` standardised features (ridge-penalised Newton steps on ``w, b``)."""

    def __init__(self, ctr, position, weight, group_ptr, F, ridge=1.0):
        self.em = RegressionEM(ctr, position, weight, group_ptr=group_ptr)
        std = F.std(axis=0)
        std[std == 0] = 1.0
        self.F = np.column_stack([(F - F.mean(axis=0)) / std, np.ones(F.shape[0])])
        self.coef = np.zeros(self.F.shape[1])
        self.coef[-1] = self.em.b
        self.ridge = ridge

    def step(self):
        em = self.em
        base = self.F @ self.coef
        relevant = propensity_step(em, _sigmoid(base + em.offset[em.query]))
        for _ in range(3):
            p = _sigmoid(self.F @ self.coef + em.offset[em.query])
            r = em.weight * (relevant - p)
            w = em.weight * np.maximum(p * (1 - p), 1e-12)
            g = self.F.T @ r - self.ridge * self.coef
            h = (self.F * w[:, None]).T @ self.F + self.ridge * np.eye(self.F.shape[1])
            self.coef = self.coef + np.linalg.solve(h, g)
        em.offset = _offset_fit(em.query, self.F @ self.coef, relevant, em.weight, em.offset)

    def relative(self):
        return self.em.relative()


def sorted_rows(qid):
    groups = make_groups(qid)
    return groups, np.argsort(groups.codes, kind="stable")


def converged_em(ctr, position, weight, group_ptr, raw, n_steps):
    """The shipped estimator's propensities after ``n_steps`` EM steps at fixed scores ``raw``."""
    em = RegressionEM(ctr, position, weight, group_ptr=group_ptr)
    for _ in range(n_steps):
        em.step(raw)
    return em.relative()


def out_of_fold_scores(make_model, fit, X, qid, seed):
    """Each row scored by a model fitted on the other four of five query folds."""
    raw = np.zeros(X.shape[0])
    for train, test in QueryKFold(5, shuffle=True, random_state=seed).split(X, groups=qid):
        raw[test] = fit(make_model(), train).predict(X[test])
    return raw


def run(dataset, eta, n_sessions, seed, em_steps, n_rankings=1, ranking_noise=1.0, default_only=False, ndcg=False,
        cross_fitted=False, per_session=False):
    data = bc.load(dataset)
    Xtr, ytr, qtr = data[:3]
    logger, _ = bc.logging_scores(Xtr, ytr, qtr, seed)
    # The label rides along as a last column, so each click row keeps its true label.
    Xc, clicks, qc, position, impressions = simulate_clicks(
        np.column_stack([Xtr, ytr]), ytr, qtr, logger, n_sessions=n_sessions, eta=eta, aggregate=True,
        return_impressions=True, n_rankings=n_rankings, ranking_noise=ranking_noise, random_state=seed)
    shown = impressions > 0
    Xc, clicks, qc, position, impressions = Xc[shown], clicks[shown], qc[shown], position[shown], impressions[shown]
    Xc, yc = np.ascontiguousarray(Xc[:, :-1], dtype=Xtr.dtype), Xc[:, -1].astype(np.float64)
    truth = pbm_propensities(int(position.max()), eta)
    ctr = clicks / impressions
    out = {}
    base = dict(bc.COMMON, random_state=seed)

    ctr_at = np.bincount(position - 1, weights=clicks) / np.maximum(np.bincount(position - 1, weights=impressions), 1)
    out["naive"] = (error(ctr_at / ctr_at[0], truth), 0.0)

    t = time.perf_counter()
    model = LambdaMARTRanker(gain="linear", k=None, position_bias="estimate", **base)
    model.fit(Xc, ctr, qid=qc, position=position, sample_weight=impressions)
    out["default"] = (error(model.position_bias_, truth), time.perf_counter() - t)
    if ndcg:
        out["default"] += (bc.test_ndcg(data[4], model.predict(data[3]), data[5]),)
    if per_session:  # the same traffic, one row per shown document per session
        Xs, s_clicks, session, s_position = simulate_clicks(
            Xtr, ytr, qtr, logger, n_sessions=n_sessions, eta=eta, aggregate=False, n_rankings=n_rankings,
            ranking_noise=ranking_noise, random_state=seed)
        t = time.perf_counter()
        model = LambdaMARTRanker(gain="linear", k=None, position_bias="estimate", **base)
        model.fit(Xs, s_clicks, qid=session, position=s_position)
        out["per-session"] = (error(model.position_bias_, truth), time.perf_counter() - t)
        return out
    if cross_fitted:
        groups, order = sorted_rows(qc)
        s_ctr, s_pos, s_w = ctr[order], position[order], impressions[order]

        def make_model(**kw):
            return lambda: LambdaMARTRanker(gain="linear", k=None, **kw, **base)

        fits = {
            "xfit-clicks": (make_model(position_bias="estimate"), lambda m, rows: m.fit(
                Xc[rows], ctr[rows], qid=qc[rows], position=position[rows], sample_weight=impressions[rows])),
            "xfit-labels": (make_model(), lambda m, rows: m.fit(Xc[rows], yc[rows], qid=qc[rows])),
        }
        for name, (make, fit) in fits.items():
            t = time.perf_counter()
            raw = out_of_fold_scores(make, fit, Xc, qc, seed)[order]
            out[name] = (error(converged_em(s_ctr, s_pos, s_w, groups.group_ptr, raw, em_steps), truth),
                         time.perf_counter() - t)
        return out
    t = time.perf_counter()
    xgb_model = bc.fit_xgboost(Xc, clicks, qc, seed, unbiased=True, position=position)
    out["xgboost"] = (error(bc.xgboost_propensities(xgb_model), truth), time.perf_counter() - t)
    if ndcg:
        out["xgboost"] += (bc.test_ndcg(data[4], xgb_model.predict(data[3]), data[5]),)
    if default_only:
        return out

    defaults = RegressionEM.__init__.__kwdefaults__
    t = time.perf_counter()
    defaults["n_steps"] = 10
    try:
        more = LambdaMARTRanker(gain="linear", k=None, position_bias="estimate", **base)
        more.fit(Xc, ctr, qid=qc, position=position, sample_weight=impressions)
    finally:
        defaults["n_steps"] = 3
    out["steps10"] = (error(more.position_bias_, truth), time.perf_counter() - t)
    if ndcg:
        out["steps10"] += (bc.test_ndcg(data[4], more.predict(data[3]), data[5]),)
        return out

    groups, order = sorted_rows(qc)
    ptr = groups.group_ptr
    raw = model.predict(Xc)[order]
    s_ctr, s_pos, s_w, s_X = ctr[order], position[order], impressions[order], Xc[order]
    for name, group_ptr in (("final", ptr), ("final-noq", None)):
        t = time.perf_counter()
        out[name] = (error(converged_em(s_ctr, s_pos, s_w, group_ptr, raw, em_steps), truth), time.perf_counter() - t)
    for name, F in (("features", s_X), ("features+score", np.column_stack([s_X, raw]))):
        t = time.perf_counter()
        fem = FeatureEM(s_ctr, s_pos, s_w, ptr, F)
        for _ in range(em_steps):
            fem.step()
        out[name] = (error(fem.relative(), truth), time.perf_counter() - t)
    s_y = yc[order]
    t = time.perf_counter()
    em = RegressionEM(s_ctr, s_pos, s_w, group_ptr=ptr)
    relevant = (np.exp2(s_y) - 1.0) / (np.exp2(ytr.max()) - 1.0)  # the simulator's P(click | examined)
    for _ in range(em_steps):
        propensity_step(em, relevant)
    out["oracle"] = (error(em.relative(), truth), time.perf_counter() - t)
    t = time.perf_counter()
    out["labels"] = (error(converged_em(s_ctr, s_pos, s_w, ptr, s_y, em_steps), truth), time.perf_counter() - t)
    return out


def ndcg_table(rows):
    """Test NDCG@10 of ``default`` and ``steps10`` per dataset, eta and sessions:
    means over seeds and test queries, the paired difference and its Wilcoxon p."""
    from scipy.stats import wilcoxon

    cells = {}
    for dataset, _, eta, n_sessions, result in rows:
        a, b = result["default"][2], result["steps10"][2]
        keep = ~(np.isnan(a) | np.isnan(b))
        cell = cells.setdefault((dataset, eta, n_sessions), [[], [], [], []])
        cell[0].append(a[keep])
        cell[1].append(b[keep])
        cell[2].append(result["default"][0])
        cell[3].append(result["steps10"][0])
    text = ("| dataset | eta | sessions | error default | error steps10 | NDCG@10 default | NDCG@10 steps10 "
            "| steps10 - default (p) |\n|" + "---|" * 8 + "\n")
    for (dataset, eta, n_sessions), (a, b, ea, eb) in cells.items():
        a, b = np.concatenate(a), np.concatenate(b)
        p = float(wilcoxon(b - a).pvalue) if np.any(b != a) else 1.0
        text += (f"| {dataset} | {eta} | {n_sessions} | {np.mean(ea):.3f} | {np.mean(eb):.3f} | {a.mean():.4f} "
                 f"| {b.mean():.4f} | {100 * (b - a).mean():+.2f} (p {p:.2g}) |\n")
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["mq2008"], choices=["mq2008", "clueweb09", "yahoo"])
    parser.add_argument("--sessions", nargs="+", type=int, default=[1_000_000])
    parser.add_argument("--etas", nargs="+", type=float, default=[0.5, 1.0, 2.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--em-steps", type=int, default=100)
    parser.add_argument("--rankings", type=int, default=1, help="logging rankings per query (simulate_clicks)")
    parser.add_argument("--ranking-noise", type=float, default=1.0)
    parser.add_argument("--default-only", action="store_true", help="only the shipped estimator")
    parser.add_argument("--ndcg", action="store_true",
                        help="default and steps10 only, with their test NDCG@10 (paired over queries and seeds)")
    parser.add_argument("--cross-fitted", action="store_true",
                        help="naive, default and EM on out-of-fold scores (of click- and label-trained rankers) only")
    parser.add_argument("--per-session", action="store_true",
                        help="naive, default (one group per shown list) and the same traffic logged per session only")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    rows, raw = [], []
    for dataset in args.datasets:
        for seed in args.seeds:
            for eta in args.etas:
                for n_sessions in args.sessions:
                    result = run(dataset, eta, n_sessions, seed, args.em_steps, args.rankings, args.ranking_noise,
                                 args.default_only, args.ndcg, args.cross_fitted, args.per_session)
                    raw.append({"dataset": dataset, "seed": seed, "eta": eta, "sessions": n_sessions,
                                **{k: [v[0], v[1]] + ([v[2].tolist()] if len(v) > 2 else []) for k, v in result.items()}})
                    line = " | ".join(f"{k} {v[0]:.3f}" for k, v in result.items())
                    print(f"{dataset} seed {seed} eta {eta} sessions {n_sessions}: {line}", flush=True)
                    rows.append((dataset, seed, eta, n_sessions, result))
    names = list(rows[0][4])
    text = "| dataset | seed | eta | sessions | " + " | ".join(names) + " |\n|" + "---|" * (4 + len(names)) + "\n"
    for dataset, seed, eta, n_sessions, result in rows:
        text += f"| {dataset} | {seed} | {eta} | {n_sessions} | " + " | ".join(f"{result[n][0]:.3f}" for n in names) + " |\n"
    if args.ndcg:
        text += "\n" + ndcg_table(rows)
    print(text)
    save_result(f"click_em{args.tag}.md", text)
    save_result(f"click_em{args.tag}.json", json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
