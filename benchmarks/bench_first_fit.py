"""The first fit after installing: what numba's compilation costs a new user.

numba compiles rankkit's kernels the first time they run and caches them on disk
(``cache=True``); later processes load them. For every ranker with its defaults
this runs, in a fresh process with an empty numba cache (``NUMBA_CACHE_DIR`` set
to a new temporary directory), what a user does first on a small dataset
(``make_ranking``, 60 queries, 8 features, ``n_jobs=1``): fit, predict and score
on a pandas DataFrame with a query column, then on NumPy arrays, then the same
six steps in a second process that finds the cache filled. Printed: the seconds
of every step, and for the first process the seconds numba spent compiling
(its compile events), median over ``--repeats`` processes.

Run from the repository root::

    .venv/bin/python benchmarks/bench_first_fit.py
    .venv/bin/python benchmarks/bench_first_fit.py --rankers YetiRanker --repeats 1
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, markdown_table  # noqa: E402

RANKERS = ["StochasticRankRanker", "YetiRanker", "LambdaMARTRanker", "QueryRMSERanker", "XENDCGRanker"]
STEPS = ["fit (pandas)", "predict (pandas)", "score (pandas)", "fit (numpy)", "predict (numpy)", "score (numpy)"]

# Runs in the child process: one ranker, the six steps, and numba's compile seconds.
_CHILD = """
import json, sys, time
import numpy as np, pandas as pd
from numba.core.event import install_recorder
t = time.perf_counter()
import rankkit
from rankkit.datasets import make_ranking
import_seconds = time.perf_counter() - t
X, y, qid = make_ranking(n_queries=60, n_features=8, random_state=0)
df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])]).assign(qid=qid)
labels = pd.Series(y, name="label")
ranker = getattr(rankkit, sys.argv[1])(n_jobs=1)
steps = [
    lambda: ranker.fit(df, labels), lambda: ranker.predict(df), lambda: ranker.score(df, labels),
    lambda: ranker.fit(X, y, qid=qid), lambda: ranker.predict(X), lambda: ranker.score(X, y, qid=qid),
]
seconds = []
compiling = 0.0
with install_recorder("numba:compile") as events:
    for step in steps:
        t = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - t)
starts = []
for stamp, event in events.buffer:
    if event.is_start:
        starts.append(stamp)
    else:
        start = starts.pop()
        if not starts:  # outermost compilations only: nested ones are inside them
            compiling += stamp - start
print(json.dumps({"import": import_seconds, "steps": seconds, "compile": compiling}))
"""


def run(ranker, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    # Run outside the checkout, so that rankkit is imported as installed (or from PYTHONPATH).
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", _CHILD, ranker], env=env, cwd=cache_dir,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{ranker} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rankers", nargs="*", default=RANKERS, choices=RANKERS)
    parser.add_argument("--repeats", type=int, default=3, help="fresh caches per ranker (the median is printed)")
    args = parser.parse_args(argv)
    print(machine_line())
    rows = []
    for ranker in args.rankers:
        cold, warm = [], []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache_dir:
                cold.append(run(ranker, cache_dir))
                warm.append(run(ranker, cache_dir))
        for label, runs in (("empty cache", cold), ("filled cache", warm)):
            steps = np.median([r["steps"] for r in runs], axis=0)
            rows.append([ranker, label, f"{np.median([r['import'] for r in runs]):.1f}"]
                        + [f"{s:.1f}" for s in steps] + [f"{steps.sum():.1f}",
                                                          f"{np.median([r['compile'] for r in runs]):.1f}"])
    print(markdown_table(["ranker", "numba cache", "import"] + STEPS + ["six steps", "compiling"], rows))


if __name__ == "__main__":
    main()
