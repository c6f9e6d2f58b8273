"""Helpers shared by the benchmark scripts: data, evaluation, timing, tables.

Every model in every benchmark is evaluated by the same rankkit.metrics
functions (worst-order ties), so differences in the tables come from the
models, never from how each engine happens to compute its own metric.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO / ".." / "shared" / "data").resolve()
RESULTS = REPO / "benchmarks" / "results"


def machine_line():
    """One line describing where the numbers were measured."""
    return (
        f"{platform.machine()} {platform.system()}, {os.cpu_count()} logical cores, "
        f"Python {platform.python_version()}"
    )


def load_svmlight(path, n_features=None):
    """``(X, y, qid)`` of one LETOR file; dense float32 X (MQ2008 is tiny)."""
    from rankkit.datasets import load_svmlight as _load

    X, y, qid = _load(str(path), dtype=np.float32, n_features=n_features)
    if hasattr(X, "toarray"):
        X = X.toarray()
    return np.asarray(X, dtype=np.float32), np.asarray(y, dtype=np.float64), np.asarray(qid)


def load_yahoo_pooled():
    """``(X, y, qid)`` of the Yahoo sample's train and test files together
    (the test queries' ids shifted past the training ones)."""
    root = SHARED_DATA / "LightGBM-lambdarank-example"
    train = load_svmlight(root / "rank.train.gz", n_features=300)
    test = load_svmlight(root / "rank.test.gz", n_features=300)
    q_test = test[2] + train[2].max() + 1
    return np.vstack([train[0], test[0]]), np.concatenate([train[1], test[1]]), np.concatenate([train[2], q_test])


def group_sizes(qid):
    """Sizes of contiguous query blocks (rows of one query are adjacent in LETOR files)."""
    qid = np.asarray(qid)
    change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    bounds = np.concatenate(([0], change, [qid.shape[0]]))
    sizes = np.diff(bounds)
    if np.unique(qid).shape[0] != sizes.shape[0]:
        raise ValueError("query rows are not contiguous; sort the file by qid first")
    return sizes


def evaluate(y, score, qid):
    """Test-set metrics of one model, all through rankkit.metrics.

    Ties are broken the worst way (a less relevant document first), exp gain,
    ERR with Chapelle's mapping. Queries with no relevant document are counted
    as 1 for ``ndcg@10`` and excluded for every ``*_excl`` column; ERR@10 is
    over all queries (0 for a query without a relevant document).
    """
    from rankkit import metrics as M

    common = dict(qid=qid, ties="worst")
    out = {
        "ndcg@10": M.ndcg_score(y, score, k=10, gain="exp", empty=1.0, **common),
        "ndcg@10_excl": _excluded_mean(M.ndcg_score, y, score, k=10, gain="exp", **common),
        "mrr_excl": _excluded_mean(M.mrr_score, y, score, **common),
        "map_excl": _excluded_mean(M.map_score, y, score, **common),
        # ERR is not normalised: a query without a relevant document scores a
        # genuine 0 (rankkit's err_score has no ``empty`` option), over all queries.
        "err@10": M.err_score(y, score, k=10, err_mapping="chapelle", **common),
    }
    return {k: float(v) for k, v in out.items()}


def _excluded_mean(fn, y, score, **kw):
    """Mean over queries that have a relevant document.

    Uses the metric's own exclusion (per-query values are nan for excluded
    queries), so the rule for "no relevant document" lives in one place.
    """
    per_query = np.asarray(fn(y, score, per_query=True, empty=EXCLUDE, **kw), dtype=np.float64)
    return float(np.nanmean(per_query))


def _exclude_token():
    """The ``empty=`` value that excludes no-relevant-document queries.

    The public metrics return nan for such queries with ``empty="exclude"``
    (and reject unknown values, so a renamed option fails loudly).
    """
    return "exclude"


EXCLUDE = _exclude_token()


class Timer:
    """``with Timer() as t: ...; t.seconds`` (wall clock, perf_counter)."""

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t0
        return False


def mean_std(values):
    values = [v for v in values if v is not None and np.isfinite(v)]
    if not values:
        return float("nan"), float("nan")
    if len(values) == 1:
        return values[0], 0.0
    return statistics.fmean(values), statistics.stdev(values)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def markdown_table(header, rows):
    """A GitHub markdown table as a string."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def save_result(name, text):
    """Also write the table to benchmarks/results/ (git-ignored)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(text + "\n")
    return path


def rss_peak_mb():
    """The process's peak resident memory (``VmHWM``), in MB (Linux)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024


def reset_peak():
    """Reset the peak resident memory to the current one (``/proc/self/clear_refs``, Linux)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
