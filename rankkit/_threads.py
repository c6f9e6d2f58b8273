"""Threads: ``n_jobs`` for rankkit's kernels; OpenMP runtimes that sleep soon when idle.

rankkit's work runs on two kinds of thread pools: numba's, for rankkit's own
kernels (gradients, metrics, the numba backend's trees), and the engines'
OpenMP pools (XGBoost, LightGBM). Two rules keep them from fighting over the
cores, which matters most on a shared machine (``docs/backends.md``,
"Threads and shared machines"; measurements: ``benchmarks/bench_load.py``).

**``n_jobs`` bounds every pool.** The engines get it as ``nthread`` /
``num_threads``; rankkit's kernels get it through
:func:`limit_threads`, which sets numba's thread count for the calling
thread (numba's setting is per thread, so concurrent fits in different
threads do not disturb each other) and restores it afterwards. ``None``
leaves every pool at its default: the engines' own and numba's
(``NUMBA_NUM_THREADS``, all cores unless set).

**Idle OpenMP threads spin briefly, then sleep.** After a parallel region
GNU OpenMP (libgomp) keeps its worker threads spinning for 300,000
iterations (about 3 ms) by default; LLVM's libomp for 200 ms. rankkit
alternates between two runtimes every boosting iteration (numba's kernels,
then the engine's trees: XGBoost's wheel bundles its own libgomp, the one
scikit-learn's wheel bundles too, while numba and LightGBM use the system's),
so one runtime's spinning workers hold the cores the other needs; and when
other processes want the cores, a spinning worker burns the share of CPU the
working threads would get, in every one of the engines' many short parallel
regions. Sleeping at once (``OMP_WAIT_POLICY=PASSIVE``) fixes that but costs a
wake-up per region on an idle machine, because the engines start their
regions back to back a few microseconds apart. Spinning :data:`SPIN_COUNT` iterations (about 10
microseconds at libgomp's estimate of 100,000 per millisecond) catches those
gaps and then sleeps. Measurements: ``docs/backends.md``, "Threads and shared
machines".

A runtime reads its policy once, when it is loaded, so :func:`openmp_wait_policy`
sets ``GOMP_SPINCOUNT`` (libgomp) and ``OMP_WAIT_POLICY=PASSIVE`` (the other
runtimes; libgomp lets an explicit spin count take precedence) in the
environment only while rankkit loads the runtimes it drives (numba's pool and
scikit-learn's runtime when rankkit is imported, an engine's when its backend is
first used), then removes them: nothing stays in ``os.environ`` and child
processes see the user's environment. Nothing is changed when the user chose a
policy (any of :data:`USER_WAIT_VARIABLES` set), and a runtime loaded before
rankkit was imported (``import sklearn``, ``import xgboost`` or ``import
lightgbm`` first) keeps the policy it was loaded with.
"""

from __future__ import annotations

import contextlib
import os
import threading

import numba

#: Environment variables through which a user chooses how idle OpenMP threads wait.
USER_WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")

#: Spin iterations of an idle libgomp thread before it sleeps (libgomp's default: 300,000).
SPIN_COUNT = 1000

#: What :func:`openmp_wait_policy` puts in the environment while runtimes load.
WAIT_POLICY = {"GOMP_SPINCOUNT": str(SPIN_COUNT), "OMP_WAIT_POLICY": "PASSIVE"}

# openmp_wait_policy may be entered from several threads at once (and nested):
# the variables are set by the first entry and removed by the last exit.
_lock = threading.Lock()
_depth = 0


@contextlib.contextmanager
def openmp_wait_policy():
    """OpenMP runtimes first loaded inside this block spin briefly, then sleep.

    Sets :data:`WAIT_POLICY` in the environment for the duration of the block
    unless one of :data:`USER_WAIT_VARIABLES` is set; removes it on exit.
    """
    global _depth
    with _lock:
        owned = _depth > 0 or not any(name in os.environ for name in USER_WAIT_VARIABLES)
        if owned:
            if _depth == 0:
                os.environ.update(WAIT_POLICY)
            _depth += 1
    try:
        yield
    finally:
        if owned:
            with _lock:
                _depth -= 1
                if _depth == 0:
                    for name in WAIT_POLICY:
                        os.environ.pop(name, None)


def start_numba_threads():
    """Start numba's thread pool now (it loads its threading layer, e.g. libgomp).

    Called inside :func:`openmp_wait_policy` when rankkit is imported. A missing
    or unusable threading layer is left for numba to report, with its own
    message, at the first parallel kernel.
    """
    try:
        numba.get_num_threads()  # launches the pool on first use
    except Exception:  # pragma: no cover - depends on the numba installation
        pass


def resolve_n_jobs(n_jobs):
    """``n_jobs`` as a thread count, with scikit-learn's meaning on every backend.

    ``None`` stays ``None`` (each pool keeps its default); a positive value is
    itself; ``-1`` means every core, ``-2`` all but one, and so on
    (``cpu_count + 1 + n_jobs``, at least 1; cores as joblib counts them, CPU
    affinity and container limits included). 0 is refused by the rankers'
    parameter validation.
    """
    if n_jobs is None:
        return None
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs=0 is not a thread count: use a positive count, -1 for every core, "
                         "or None for the engine's default.")
    if n_jobs > 0:
        return n_jobs
    import joblib

    return max(1, joblib.cpu_count() + 1 + n_jobs)


def kernel_threads(n_jobs):
    """Threads for rankkit's numba kernels under ``n_jobs``; None leaves numba's setting.

    :func:`resolve_n_jobs`, capped at the threads numba has (``NUMBA_NUM_THREADS``).
    """
    n = resolve_n_jobs(n_jobs)
    return None if n is None else min(n, numba.config.NUMBA_NUM_THREADS)


@contextlib.contextmanager
def limit_threads(n_jobs):
    """numba kernels called inside this block use :func:`kernel_threads` threads.

    numba's thread count is a per-thread setting: this changes it for the
    calling thread only and restores it on exit.
    """
    n = kernel_threads(n_jobs)
    if n is None:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)
