"""How rankkit's hessian floor changes XGBoost's tree building (MQ2008 Fold1).

LambdaMART gives zero curvature to documents that take part in no pair;
rankkit hands boosters ``max(h, HESSIAN_FLOOR)`` instead. This script fits
``LambdaMARTRanker`` (xgboost backend, 200 trees, depth 6, learning rate 0.1,
2 threads, ``--threads``) with the floor set to each value below and reports the median fit
time, the number of tree nodes and test NDCG@10: the trees, and so the model,
barely depend on the floor, but XGBoost's ``hist`` builder is slower on
hessians below 1e-6, which is why ``HESSIAN_FLOOR`` is 1e-6.

Run from the repository root::

    .venv/bin/python benchmarks/bench_hessian_floor.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_DATA, load_svmlight, machine_line, markdown_table, median  # noqa: E402


def n_nodes(booster):
    trees = json.loads(bytes(booster.save_raw("json")))["learner"]["gradient_booster"]["model"]["trees"]
    return sum(len(t["left_children"]) for t in trees)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--floors", type=float, nargs="+", default=[1e-9, 1e-8, 1e-7, 1e-6, 1e-4])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=SHARED_DATA / "MQ2008" / "Fold1")
    cfg = parser.parse_args(argv)
    if not cfg.data.is_dir():
        sys.exit(f"MQ2008 Fold1 not found at {cfg.data}; pass --data /path/to/MQ2008/Fold1")

    import rankkit
    from rankkit._objectives import _base

    X, y, qid = load_svmlight(cfg.data / "train.txt.gz", n_features=46)
    Xt, yt, qt = load_svmlight(cfg.data / "test.txt.gz", n_features=46)
    default = _base.HESSIAN_FLOOR

    def fit():
        model = rankkit.LambdaMARTRanker(metric="ndcg", n_estimators=200, max_depth=6, learning_rate=0.1,
                                         n_jobs=cfg.threads, random_state=0, backend="xgboost")
        start = time.perf_counter()
        model.fit(X, y, qid=qid)
        return model, time.perf_counter() - start

    fit()  # warm-up: numba compile, imports
    rows = []
    try:
        for floor in cfg.floors:
            _base.HESSIAN_FLOOR = floor  # read by every objective call
            times = []
            for _ in range(cfg.repeats):
                model, seconds = fit()
                times.append(seconds)
            score = model.score(Xt, yt, qid=qt)
            rows.append([f"{floor:g}", f"{median(times):.2f}", f"{min(times):.2f}-{max(times):.2f}",
                         str(n_nodes(model.booster_)), f"{score:.5f}"])
            print(f"floor {floor:g}: fit {median(times):.2f} s, test NDCG@10 {score:.5f}", flush=True)
    finally:
        _base.HESSIAN_FLOOR = default
    print()
    print(f"LambdaMARTRanker on XGBoost, MQ2008 Fold1, 200 trees, depth 6, {cfg.threads} threads, median of "
          f"{cfg.repeats} fits "
          f"(default floor {default:g}).\nMachine: {machine_line()}\n")
    print(markdown_table(["hessian floor", "median fit s", "min-max s", "tree nodes", "test NDCG@10"], rows))


if __name__ == "__main__":
    main()
