"""Held-out quality of the default rankers at two git revisions, paired over test queries.

A speed change to an engine must not change what it learns beyond noise.
This trains each ranker with its defaults (plus ``--trees`` and ``--lr``) at revision
``--base`` (checked out with ``git worktree`` into a temporary folder) and
at the working tree, on folds 1-``--folds`` of every dataset of
``bench_quality`` (MQ2008, ClueWeb09, the Yahoo sample; those in
``../shared/data``), ``--seeds`` random states each, and reports the mean
test NDCG@10 (worst-order ties, exp gain, empty queries count 1) of both,
their paired difference over (fold, test query) pairs (each averaged over
the seeds), its standard error and the difference in units of it.

``--objectives`` takes ``bench_quality``'s rankkit methods instead of the
three rankers with every parameter default (``StochasticRank,YetiRank,
YetiLoss,LambdaMART,QueryRMSE,XE-NDCG``: the target metric NDCG@10 where
there is one), and ``--patience`` stops each fit early on the fold's
validation split, as ``bench_quality`` does.

Run from the repository root::

    .venv/bin/python benchmarks/compare_revisions.py --base 404e2af
    .venv/bin/python benchmarks/compare_revisions.py --base 404e2af --datasets yahoo --folds 5 --seeds 10 \
        --trees 200 --patience 50 --objectives StochasticRank,YetiRank,YetiLoss,LambdaMART,QueryRMSE,XE-NDCG
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import SHARED_DATA, markdown_table, save_result  # noqa: E402

RANKERS = {name: (name, {}) for name in ("LambdaMARTRanker", "YetiRanker", "StochasticRankRanker")}


def rankers(objectives):
    """label -> (ranker class name, parameters)."""
    if not objectives:
        return RANKERS
    from bench_quality import RANKKIT

    return {label: RANKKIT[f"rankkit {label}"] for label in objectives.split(",")}


def worker(args):
    """Per-query NDCG@10 of every (dataset, ranker, seed, fold) with the rankkit on sys.path."""
    import rankkit
    from bench_quality import DATASETS, per_query_metrics

    out = {}
    for dataset in args.datasets.split(","):
        for k, fold in enumerate(DATASETS[dataset](), start=1):
            if k > args.folds:
                break
            (X, y, q), (Xt, yt, qt) = fold["train"], fold["test"]
            for name, (cls, params) in rankers(args.objectives).items():
                for seed in range(args.seeds):
                    model = getattr(rankkit, cls)(n_estimators=args.trees, learning_rate=args.lr, n_jobs=2,
                                                  random_state=seed, **params)
                    if args.patience:
                        Xv, yv, qv = fold["vali"]
                        model.set_params(eval_metric="ndcg@10", early_stopping_rounds=args.patience)
                        model.fit(X, y, qid=q, eval_set=[(Xv, yv)], eval_qid=[qv])
                    else:
                        model.fit(X, y, qid=q)
                    values = per_query_metrics(yt, model.predict(Xt), qt)["ndcg@10"]
                    out.setdefault(f"{dataset}|{name}|{k}", []).append(np.asarray(values).tolist())
    print(json.dumps(out))


def run(source, args):
    env = dict(os.environ, PYTHONPATH=str(source))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--datasets", args.datasets,
           "--folds", str(args.folds), "--seeds", str(args.seeds), "--trees", str(args.trees), "--lr", str(args.lr),
           "--patience", str(args.patience), "--objectives", args.objectives]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=HERE.parent)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-4000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="HEAD")
    parser.add_argument("--datasets", default="mq2008,clueweb09,yahoo")
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.1,
                        help="learning rate of every ranker, given to both revisions (0.1: the rankers' default "
                             "before 300 trees at 0.05, and the rate of the runs in benchmarks/README.md)")
    parser.add_argument("--patience", type=int, default=0,
                        help="early stopping on each fold's validation split after this many rounds (0: none)")
    parser.add_argument("--objectives", default="",
                        help="comma-separated bench_quality methods without 'rankkit ' (default: the three "
                             "rankers with every parameter default)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.objectives:
        from bench_quality import RANKKIT

        unknown = [o for o in args.objectives.split(",") if f"rankkit {o}" not in RANKKIT]
        if unknown:
            parser.error(f"--objectives: unknown {unknown}; choose from "
                         + ",".join(label.removeprefix("rankkit ") for label in RANKKIT))
    from bench_quality import _NEEDS

    args.datasets = ",".join(d for d in args.datasets.split(",") if (SHARED_DATA / _NEEDS[d]).exists())
    root = HERE.parent
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=root, check=True,
                       capture_output=True)
        try:
            before = run(base, args)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=root, capture_output=True)
    after = run(root, args)
    rows = []
    for key in dict.fromkeys(k.rsplit("|", 1)[0] for k in before):
        folds = [k for k in before if k.rsplit("|", 1)[0] == key]
        a = np.concatenate([np.mean(before[k], axis=0) for k in folds])  # (fold, query), mean over seeds
        b = np.concatenate([np.mean(after[k], axis=0) for k in folds])
        d = b - a
        se = d.std(ddof=1) / np.sqrt(d.size)
        dataset, name = key.split("|")
        rows.append([dataset, name, f"{a.mean():.4f}", f"{b.mean():.4f}", f"{d.mean():+.4f}", f"{se:.4f}",
                     f"{d.mean() / se:+.2f}" if se > 0 else "identical"])
    stopping = f", early stopping after {args.patience} rounds" if args.patience else ""
    text = (f"compare_revisions --base {args.base}: {args.trees} trees at {args.lr}{stopping}, folds 1-{args.folds}, "
            f"{args.seeds} seeds\n\n"
            + markdown_table(["dataset", "ranker", f"NDCG@10 at {args.base}", "NDCG@10 now", "difference",
                              "standard error", "difference / SE"], rows))
    print(text)
    save_result("compare_revisions.md", text)


if __name__ == "__main__":
    main()
