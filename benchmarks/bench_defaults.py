"""How rankkit's defaults were chosen: the alternatives, measured side by side.

The protocol of ``bench_quality.py`` (max 500 trees, depth 6, learning rate
0.05, early stopping on a validation split after 100 rounds; test NDCG@10
by ``rankkit.metrics``, worst-order ties) on MQ2008, ClueWeb09 and the Yahoo
sample, every rankkit variant averaged over ``--seeds`` random states. Each
study compares the default with the alternatives that were candidates
(``docs/user_guide.md``, "Defaults and why"):

* ``hessians``: what unit ``min_child_weight`` and ``reg_lambda`` count in for
  objectives with Newton leaves (YetiRank, YetiLoss, LambdaMART, XE-NDCG):
  the objective's raw hessians (the engines' own convention, rankkit before
  0.2), raw with ``min_child_weight=0`` (LightGBM/CatBoost-like), hessians
  scaled to a mean of 1 per document, or per query (the default);
* ``stochasticrank``: ``mu`` (0, 0.03, 0.1 = default) and gradients scaled to
  a root mean square of 1 (steps of a fixed size, an alternative to ``sigma``
  relative to the scale of the scores);
* ``sglb``: StochasticRank without Langevin noise, with fixed temperatures
  1e4 (rankkit 0.1's default) and 1e6, a negligible noise (1e20: a control
  for the change of random path alone), and ``"auto"`` (noise a fixed share
  of the first gradients' root mean square, ``rankkit._sglb.AUTO_NOISE_TO_GRADIENT``)
  at 10%, 3% and 1% of it, with and without model shrinkage.

The alternatives that the rankers do not offer as parameters (raw and
per-document hessian units, unit-RMS gradients) are an objective wrapper
here, trained through ``rankkit.Ranker(objective=...)``.

Run from the repository root::

    .venv/bin/python benchmarks/bench_defaults.py                       # all studies, 3 seeds
    .venv/bin/python benchmarks/bench_defaults.py --study hessians --datasets clueweb09
    .venv/bin/python benchmarks/bench_defaults.py --quick               # folds 1-2, 1 seed
    .venv/bin/python benchmarks/bench_defaults.py --study sglb --variants "no SGLB,% noise"
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, SHARED_DATA, machine_line, markdown_table, mean_std, save_result  # noqa: E402
from bench_quality import _NEEDS, DATASETS, _rankkit_source_hash, per_query_metrics  # noqa: E402

from rankkit._objectives._base import RankingObjective  # noqa: E402


#: A variant's key for the noise-to-gradient ratio of ``diffusion_temperature="auto"``
#: (``rankkit._sglb.AUTO_NOISE_TO_GRADIENT``, 0.1), not a ranker parameter.
AUTO_NOISE = "auto_noise_to_gradient"


class Rescaled(RankingObjective):
    """An objective whose gradients (and hessians) reach the booster rescaled.

    ``units="raw"``: as the objective gives them; ``"documents"``: hessians
    scaled to sum to the number of documents; ``"unit-rms"``: gradients scaled
    to a root mean square of 1 (gradient-leaf objectives). The rankers' own
    per-query units are off for this wrapper (``per_query_loss = False``).
    """

    per_query_loss = False
    _parameter_constraints = {"objective": [RankingObjective], "units": [str]}

    def __init__(self, objective, units="raw"):
        self.objective = objective
        self.units = units

    @property
    def uses_hessian(self):
        return self.objective.uses_hessian

    def _resolve(self):
        self.objective._check_params()

    def _check_labels(self, y):
        return self.objective._check_labels(y)

    def _default_eval_metric(self):
        return self.objective._default_eval_metric()

    def _eval_metric_settings(self):
        return self.objective._eval_metric_settings()

    def _gradient_hessian_sorted(self, y, raw, group_ptr, seed, query_keys=None):
        grad, hess = self.objective._gradient_hessian_sorted(y, raw, group_ptr, seed, query_keys)
        if self.units == "documents":
            factor = hess.shape[0] / hess.sum()
            grad *= factor
            hess *= factor
        elif self.units == "unit-rms":
            rms = float(np.sqrt(np.mean(grad * grad)))
            if rms > 0:
                grad /= rms
        return grad, hess


def _objective(name, **params):
    from rankkit.objectives import XENDCG, LambdaMART, StochasticRank, YetiRank

    return {
        "YetiRank": lambda: YetiRank(**params),
        "YetiLoss NDCG@10": lambda: YetiRank("ndcg", 10, **params),
        "LambdaMART NDCG@10": lambda: LambdaMART("ndcg", 10, **params),
        "XE-NDCG": lambda: XENDCG(**params),
        "StochasticRank NDCG@10": lambda: StochasticRank("ndcg", 10, **params),
    }[name]()


NEWTON = ["YetiRank", "YetiLoss NDCG@10", "LambdaMART NDCG@10", "XE-NDCG"]
SR = "StochasticRank NDCG@10"

#: study -> [(objective, variant label, objective wrapper units or None, objective params, ranker params)];
#: an objective's first variant is the rankers' default, the one the others are paired with.
STUDIES = {
    "hessians": [
        (obj, variant, units, {}, ranker)
        for obj in NEWTON
        for variant, units, ranker in [
            ("mean 1 per query (default)", None, {}),
            ("raw hessians (engine units)", "raw", {}),
            ("raw, min_child_weight=0", "raw", {"min_child_weight": 0.0}),
            ("mean 1 per document", "documents", {}),
        ]
    ],
    "stochasticrank": [
        (SR, "mu=0.1 (default)", None, {}, {}),
        (SR, "mu=0", None, {"mu": 0.0}, {}),
        (SR, "mu=0.03", None, {"mu": 0.03}, {}),
        (SR, "unit-RMS gradients", "unit-rms", {}, {}),
    ],
    "sglb": [
        (SR, "no SGLB", None, {}, {}),
        (SR, "beta=1e4", None, {}, {"langevin": True, "diffusion_temperature": 1e4}),
        (SR, "beta=1e6", None, {}, {"langevin": True, "diffusion_temperature": 1e6}),
        # Noise below 1e-6 of the gradients' RMS on these datasets (sqrt(2 / (0.05 * 1e20)) = 6e-10):
        # a control that changes the random path of training and nothing else.
        (SR, "beta=1e20", None, {}, {"langevin": True, "diffusion_temperature": 1e20}),
        (SR, "beta=auto (default)", None, {}, {"langevin": True}),
        (SR, "beta=auto, gamma=1e-3", None, {}, {"langevin": True, "model_shrink_rate": 1e-3}),
        # What "auto" could have been: noise 3% and 1% of the first gradients' RMS instead of 10%.
        (SR, "beta=auto at 3% noise", None, {}, {"langevin": True, AUTO_NOISE: 0.03}),
        (SR, "beta=auto at 1% noise", None, {}, {"langevin": True, AUTO_NOISE: 0.01}),
        # SGLB's noise as the only randomisation of the split search (SGLB's Algorithm 1).
        (SR, "beta=auto, no split noise", None, {}, {"langevin": True, "backend_params": {"random_strength": 0.0}}),
        (SR, "no SGLB, no split noise", None, {}, {"backend_params": {"random_strength": 0.0}}),
    ],
}


CACHE = RESULTS / "defaults_cache"


def cached_fit(dataset, k, variant_spec, fold, cfg, seed):
    """:func:`fit_variant`'s ``(mean test NDCG@10, trees)``, cached per fit and
    keyed by rankkit's source, the protocol, the variant and the seed, so more
    seeds or another summary reuse the fits already made."""
    items = [_rankkit_source_hash(), dataset, k, repr(variant_spec), seed, cfg.n_estimators, cfg.lr,
             cfg.depth, cfg.patience, cfg.backend]
    path = CACHE / (hashlib.sha1(json.dumps(items, default=str).encode()).hexdigest()[:16] + ".json")
    if path.exists():
        return tuple(json.loads(path.read_text()))
    obj, _, units, obj_params, ranker_params = variant_spec
    per_query, trees = fit_variant(obj, units, obj_params, ranker_params, fold, cfg, seed)
    out = (float(np.mean(per_query)), int(trees))
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return out


def paired_difference(fits, base):
    """Mean and standard error of ``fits - base`` over the (fold, seed) fits
    both have: the seeds pair the fits, so the spread between folds and
    between random states of the baseline cancels as far as it can."""
    pairs = [fits[key] - base[key] for key in fits if key in base]
    if len(pairs) < 2:
        return float("nan"), float("nan")
    pairs = np.asarray(pairs)
    return float(pairs.mean()), float(pairs.std(ddof=1) / np.sqrt(pairs.size))


def fit_variant(obj_name, units, obj_params, ranker_params, fold, cfg, seed):
    from rankkit import Ranker, _sglb

    ranker_params = dict(ranker_params)
    noise = ranker_params.pop(AUTO_NOISE, None)
    if noise is not None:  # another ratio of noise to gradients for diffusion_temperature="auto"
        default, _sglb.AUTO_NOISE_TO_GRADIENT = _sglb.AUTO_NOISE_TO_GRADIENT, noise
        try:
            return fit_variant(obj_name, units, obj_params, ranker_params, fold, cfg, seed)
        finally:
            _sglb.AUTO_NOISE_TO_GRADIENT = default

    objective = _objective(obj_name, **obj_params)
    if units is not None:
        objective = Rescaled(objective, units)
    model = Ranker(
        objective=objective, n_estimators=cfg.n_estimators, learning_rate=cfg.lr, max_depth=cfg.depth,
        n_jobs=cfg.n_jobs, random_state=seed, eval_metric="ndcg@10", early_stopping_rounds=cfg.patience,
        backend=cfg.backend, **ranker_params,
    )
    (Xt, yt, qt), (Xv, yv, qv) = fold["train"], fold["vali"]
    model.fit(Xt, yt, qid=qt, eval_set=[(Xv, yv)], eval_qid=[qv])
    Xs, ys, qs = fold["test"]
    return per_query_metrics(ys, model.predict(Xs), qs)["ndcg@10"], model.best_iteration_ + 1


def _selected(variant, wanted, study):
    """Whether ``--variants`` selects ``variant``: an item equal to a label of
    the study selects that label only, any other item every label containing it."""
    labels = {spec[1] for spec in study}
    for item in (v.strip() for v in wanted.split(",")):
        if item == variant or (item not in labels and item in variant):
            return True
    return False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--study", nargs="*", default=list(STUDIES), choices=list(STUDIES))
    parser.add_argument("--variants", default=None,
                        help="comma-separated labels (exact) or substrings: run matching variants only")
    parser.add_argument("--datasets", nargs="*", default=["mq2008", "clueweb09", "yahoo"], choices=list(DATASETS))
    parser.add_argument("--folds", type=int, nargs="*", default=None)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="folds 1-2, 1 seed, 200 trees, patience 50")
    parser.add_argument("--n-estimators", type=int, default=500)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--patience", type=int, default=100)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--backend", default="auto", help="rankkit backend (default: the rankers' own, auto)")
    cfg = parser.parse_args(argv)
    if cfg.quick:
        cfg.folds, cfg.seeds, cfg.n_estimators, cfg.patience = cfg.folds or [1, 2], 1, 200, 50
    cfg.folds = cfg.folds or [1, 2, 3, 4, 5]

    t0 = time.perf_counter()
    sections = []
    for study in cfg.study:
        rows = {}  # (objective, variant) -> {dataset: {(fold, seed): NDCG@10}}
        for dataset in cfg.datasets:
            if dataset in _NEEDS and not (SHARED_DATA / _NEEDS[dataset]).is_dir():
                print(f"skipping {dataset}: not found", flush=True)
                continue
            for k, fold in enumerate(DATASETS[dataset](), start=1):
                if k not in cfg.folds:
                    continue
                for spec in STUDIES[study]:
                    obj, variant = spec[:2]
                    if cfg.variants and not _selected(variant, cfg.variants, STUDIES[study]):
                        continue
                    fits = rows.setdefault((obj, variant), {}).setdefault(dataset, {})
                    trees = []
                    for seed in range(cfg.seeds):
                        fits[k, seed], t = cached_fit(dataset, k, spec, fold, cfg, seed)
                        trees.append(t)
                    print(f"{study} {dataset} fold {k} {obj} | {variant}: "
                          f"ndcg@10={np.mean([fits[k, s] for s in range(cfg.seeds)]):.4f} "
                          f"trees={int(np.median(trees))}", flush=True)
        datasets = [d for d in cfg.datasets if any(d in r for r in rows.values())]
        table = []
        baselines = {}  # objective -> its first variant's fits: what the others are paired with
        for (obj, variant), per in rows.items():
            base = baselines.setdefault(obj, (variant, per))
            cells = [obj, variant]
            for d in datasets:
                fold_means = [np.mean([v for (k, _), v in per.get(d, {}).items() if k == f]) for f in cfg.folds
                              if any(k == f for k, _ in per.get(d, {}))]
                mu, sd = mean_std(fold_means)
                cell = f"{mu:.4f} ± {sd:.4f}"
                if base[0] != variant and d in per and d in base[1]:
                    diff, se = paired_difference(per[d], base[1][d])
                    cell += f" ({100 * diff:+.2f} ± {100 * se:.2f})"
                cells.append(cell)
            cells.append(f"{np.mean([np.mean(list(per[d].values())) for d in datasets if d in per]):.4f}")
            table.append(cells)
        sections.append(f"### {study}\n\n" + markdown_table(
            ["objective", "variant"] + [f"{d} NDCG@10" for d in datasets] + ["mean over datasets"], table))
    text = (
        f"Defaults study: max {cfg.n_estimators} trees, depth {cfg.depth}, lr {cfg.lr}, early stopping "
        f"(patience {cfg.patience}), folds {cfg.folds}, {cfg.seeds} seed(s) averaged, {cfg.n_jobs} threads, "
        f"backend={cfg.backend}. Test NDCG@10 (worst-order ties, exp gain, queries without a relevant "
        "document count 1), mean ± std over folds; in brackets, the difference in points to the "
        "objective's first variant (the default), mean ± standard error over the (fold, random state) fits, paired.\n"
        f"Machine: {machine_line()}\n\n" + "\n\n".join(sections)
        + f"\n\nTotal wall time: {time.perf_counter() - t0:.0f} s"
    )
    print()
    print(text)
    print(f"\n(saved to {save_result('defaults' + ('_quick' if cfg.quick else '') + '.md', text)})")


if __name__ == "__main__":
    main()
