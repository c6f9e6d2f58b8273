"""Paired differences between two sets of ``bench_curves`` fits, from its cache.

``bench_curves.py`` pairs each rankkit objective with its counterpart. This
pairs two rankkit runs instead: rows A minus rows B on the same draws, per
objective and curve point (mean over the random states' test queries, ±
standard error, Wilcoxon p), and the mean over the points. It fits nothing:
run the ``bench_curves.py`` commands first (the same ``--seeds``; a point
with fewer cached states is paired over those, marked ``[k states]``).

* A: the rankkit rows at ``--budget N LR`` (trees, learning rate), or those
  of ``--variant`` (as given to ``bench_curves.py``) at that budget.
* B: the same rows at ``--against N LR`` (default: ``--budget``); with
  ``--against-default``, the rankkit rows without the variant; with
  ``--against-variant VARIANT``, the rows of that other variant; with
  ``--against-catboost VARIANT``, CatBoost's counterpart run with that
  ``--catboost-variant`` (fitted at ``bench_curves``' default budget).

Run from the repository root (the commands behind benchmarks/README.md
section 6, "The number of trees and the learning rate")::

    .venv/bin/python benchmarks/pair_curves.py --budget 100 0.1 --against 300 0.05
    .venv/bin/python benchmarks/pair_curves.py --budget 100 0.1 --against 300 0.05 --seeds 5 --sizes 40 100 \\
        --variant 'xgboost:backend=xgboost'
    .venv/bin/python benchmarks/pair_curves.py --budget 300 0.05 --seeds 5 --datasets mq2008 yahoo clueweb09 \\
        --against-catboost 'lib:iterations=1000,learning_rate=null'
    .venv/bin/python benchmarks/pair_curves.py --variant 'k30:k=30' --against-variant 'full:k=null'
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_curves as bc  # noqa: E402

SIZES = {"mq2008": [40, 100, 300], "yahoo": [40, 100], "clueweb09": [40], "synthetic": [40, 100, 300, 1000],
         "synthetic-long": [40, 100, 300]}
_DEFAULT_BUDGET = (300, 0.05)  # bench_curves' own --n-estimators and --lr


def _cfg(budget, variants=(), catboost_variants=()):
    return argparse.Namespace(only=None, variants=list(variants), catboost_variants=list(catboost_variants),
                              objectives=None, peers=None, n_estimators=budget[0], lr=budget[1], depth=6)


def _cell(a, b):
    mean, se, p = bc._paired(100 * np.concatenate(a), 100 * np.concatenate(b))
    return mean, f"{mean:+.2f} ± {se:.2f} (p {p:.2g})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", nargs=2, type=float, default=list(_DEFAULT_BUDGET), metavar=("N", "LR"))
    parser.add_argument("--against", nargs=2, type=float, default=None, metavar=("N", "LR"))
    parser.add_argument("--variant", default=None)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--against-default", action="store_true")
    group.add_argument("--against-catboost", default=None, metavar="VARIANT")
    group.add_argument("--against-variant", default=None, metavar="VARIANT")
    parser.add_argument("--datasets", nargs="*", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args(argv)
    budget = (int(args.budget[0]), args.budget[1])
    against = budget if args.against is None else (int(args.against[0]), args.against[1])
    variants = [args.variant] if args.variant else []
    name = bc._variant(args.variant)[0] if args.variant else None

    cfg_a = _cfg(budget, variants)
    rows_a = {k: v for k, v in bc.learners(cfg_a).items() if k.startswith("rankkit") and
              (name is None or k.endswith(f"[{name}]")) and (name is not None or "[" not in k)}
    if args.against_catboost:
        cfg_b = _cfg(_DEFAULT_BUDGET, catboost_variants=[args.against_catboost])
        peers = bc.learners(argparse.Namespace(**{**vars(cfg_b), "only": "peers"}))
        cb = bc._variant(args.against_catboost)[0]
        pairs = {k: peers[f"{bc.COUNTERPART[k.split(' ')[1]]} [{cb}]"] for k in rows_a
                 if bc.COUNTERPART[k.split(" ")[1]].startswith("CatBoost")}
        rows_a = {k: v for k, v in rows_a.items() if k in pairs}
        what = f"CatBoost's counterpart [{cb}]"
    elif args.against_variant:
        cfg_b = _cfg(against, [args.against_variant])
        learners_b = bc.learners(cfg_b)
        other = bc._variant(args.against_variant)[0]
        pairs = {k: learners_b[f"{k.split(' [')[0]} [{other}]"] for k in rows_a}
        what = f"{against[0]} trees at {against[1]} [{other}]"
    else:
        cfg_b = _cfg(against, [] if args.against_default else variants)
        learners_b = bc.learners(cfg_b)
        pairs = {k: learners_b[k.split(" [")[0] if args.against_default else k] for k in rows_a}
        what = f"{against[0]} trees at {against[1]}" + ("" if args.against_default or not name else f" [{name}]")
    labels = [k.split(" ")[1] for k in rows_a]
    print(f"{budget[0]} trees at {budget[1]}{f' [{name}]' if name else ''} - {what}, NDCG@10 points")
    print("| dataset | queries | " + " | ".join(labels) + " |")
    print("|---|---|" + "---|" * len(labels))
    means = {label: [] for label in labels}
    for dataset in args.datasets:
        for n in [s for s in SIZES[dataset] if args.sizes is None or s in args.sizes]:
            cells = []
            for (label_a, (engine_a, _, spec_a)), label in zip(rows_a.items(), labels):
                engine_b, _, spec_b = pairs[label_a]
                a, b = [], []
                for seed in range(args.seeds):
                    x = bc.cached(dataset, "raw", n, seed, engine_a, spec_a, cfg_a)
                    z = bc.cached(dataset, "raw", n, seed, engine_b, spec_b, cfg_b)
                    if x is not None and z is not None:
                        a.append(x)
                        b.append(z)
                if len(a) < 2:
                    cells.append(f"({len(a)} states)")
                    continue
                mean, text = _cell(a, b)
                means[label].append(mean)
                cells.append(text + ("" if len(a) == args.seeds else f" [{len(a)} states]"))
            print(f"| {dataset} | {n} | " + " | ".join(cells) + " |")
    print("mean over the points: " + ", ".join(f"{k} {np.mean(v):+.2f}" for k, v in means.items() if v))


if __name__ == "__main__":
    main()
