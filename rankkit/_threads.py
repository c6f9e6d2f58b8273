"""Start numba's thread pool so that it sleeps, rather than spins, when idle.

rankkit's gradient kernels run between XGBoost's tree-building steps. numba's
OpenMP pool (the system libgomp) and XGBoost's (its own bundled libgomp) are
two separate runtimes; by default each keeps its worker threads spinning for
milliseconds after a parallel region ends. On a machine with as many threads
as cores, numba's spinning workers then steal the cores XGBoost is building
trees on, and a LambdaMART fit on MQ2008 took many times longer than with
numba's pool passive (measurements and commands: ``benchmarks/README.md``,
"an OpenMP spin-wait problem"). XGBoost's own pool is left as it is, since a
passive XGBoost is slower.

libgomp reads ``OMP_WAIT_POLICY`` once, when it is loaded; numba loads it when
its threads are first launched. So we launch them now, with the variable set
only for that moment. Nothing is done when the user has chosen a policy or a
threading layer, or when numba's threads are already running.
"""

import os


def start_numba_threads_passive():
    if "OMP_WAIT_POLICY" in os.environ or "NUMBA_THREADING_LAYER" in os.environ:
        return
    try:
        from numba.np.ufunc import parallel
    except ImportError:  # pragma: no cover - numba is a hard dependency
        return
    if getattr(parallel, "_is_initialized", True):
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        parallel._launch_threads()
    except Exception:  # a missing layer surfaces later, with numba's own message
        pass
    finally:
        del os.environ["OMP_WAIT_POLICY"]
