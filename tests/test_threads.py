"""Threads: ``n_jobs`` bounds rankkit's kernels; OpenMP runtimes rankkit loads sleep when idle.

The wait-policy tests run in fresh interpreters: a runtime reads its policy
once, when it is loaded, so only a new process shows what ``import rankkit``
does.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading

import numba
import numpy as np
import pytest

import rankkit
from rankkit import Ranker
from rankkit import _training
from rankkit._threads import (
    SPIN_COUNT,
    USER_WAIT_VARIABLES,
    WAIT_POLICY,
    kernel_threads,
    limit_threads,
    openmp_wait_policy,
    resolve_n_jobs,
)
from rankkit.datasets import make_ranking
from rankkit.objectives import QueryRMSE

from ._backends import BACKENDS_UNDER_TEST, installed

TWO = min(2, numba.config.NUMBA_NUM_THREADS)


#: Thread-count variables that ``distributed.LocalCluster`` sets to 1 in the
#: *parent* process's environment (for its workers) and leaves there, so after
#: the Dask tests a child would inherit single-threaded OpenMP.
_THREAD_COUNT_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _clean_env(**extra):
    """The test process's environment without any wait-policy or thread-count choice, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in USER_WAIT_VARIABLES + _THREAD_COUNT_VARIABLES}
    env.update(extra)
    return env


def _run(code, env):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


# --------------------------------------------------------------------------- n_jobs
class _RecordingQueryRMSE(QueryRMSE):
    """QueryRMSE that records numba's thread count each time its kernel runs."""

    seen = []

    def _compute(self, *args):
        type(self).seen.append(numba.get_num_threads())
        super()._compute(*args)


def _record_metric_threads(monkeypatch, module):
    """numba's thread count at every call of ``module.evaluate_sorted`` (the metric kernels)."""
    seen = []
    original = module.evaluate_sorted

    def recording(*args, **kwargs):
        seen.append(numba.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, "evaluate_sorted", recording)
    return seen


@pytest.fixture
def metric_threads(monkeypatch):
    """numba's thread count at every ranker metric evaluation (eval sets, score)."""
    return _record_metric_threads(monkeypatch, _training)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_n_jobs_bounds_the_gradient_and_metric_kernels(backend, n_jobs, metric_threads):
    X, y, qid = make_ranking(n_queries=30, n_features=4, max_docs=12, random_state=0)
    before = numba.get_num_threads()
    _RecordingQueryRMSE.seen = []
    ranker = Ranker(objective=_RecordingQueryRMSE(), n_estimators=3, max_depth=2, n_jobs=n_jobs,
                    random_state=0, backend=backend)
    ranker.fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid])
    ranker.score(X, y, qid=qid)
    expected = min(n_jobs, numba.config.NUMBA_NUM_THREADS)
    assert _RecordingQueryRMSE.seen == [expected] * 3
    assert metric_threads == [expected] * 4  # 3 eval iterations and score
    assert numba.get_num_threads() == before  # the caller's setting is restored


def test_n_jobs_none_leaves_numbas_setting_alone():
    X, y, qid = make_ranking(n_queries=10, n_features=3, max_docs=8, random_state=0)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        _RecordingQueryRMSE.seen = []
        Ranker(objective=_RecordingQueryRMSE(), n_estimators=2, max_depth=2, random_state=0,
               backend="numba").fit(X, y, qid=qid)
        assert _RecordingQueryRMSE.seen == [1, 1]
    finally:
        numba.set_num_threads(before)


def test_evaluation_n_jobs_bounds_the_metric_kernels(monkeypatch, tmp_path):
    from rankkit import evaluation
    from rankkit.trec import write_qrels, write_run

    seen = _record_metric_threads(monkeypatch, evaluation)
    X, y, qid = make_ranking(n_queries=40, n_features=4, max_docs=12, random_state=0)
    y = y.astype(int)
    before = numba.get_num_threads()
    expected = 1
    evaluation.evaluate({"a": X[:, 0], "b": X[:, 1]}, None, y, qid=qid, metrics=["ndcg@10", "map"], n_jobs=1)
    assert seen == [expected] * 4
    ranker = Ranker(objective=QueryRMSE(), n_estimators=2, max_depth=2, n_jobs=1, random_state=0)
    seen.clear()
    evaluation.cross_evaluate({"r": ranker}, X, y, qid=qid, cv=2, n_jobs=1)
    assert seen == [expected]
    write_run(tmp_path / "run", X[:, 0], qid=qid)
    write_qrels(tmp_path / "qrels", y, qid=qid)
    seen.clear()
    evaluation.evaluate_runs({"run": tmp_path / "run"}, tmp_path / "qrels", n_jobs=1)
    assert seen == [expected]
    assert numba.get_num_threads() == before  # the caller's setting is restored
    for bad in (0, 1.5, True, "1"):
        with pytest.raises(ValueError, match="n_jobs must be"):
            evaluation.evaluate({"a": X[:, 0]}, None, y, qid=qid, n_jobs=bad)


def test_n_jobs_has_scikit_learns_meaning():
    import joblib

    cores = joblib.cpu_count()
    assert resolve_n_jobs(None) is None
    assert resolve_n_jobs(3) == 3
    assert resolve_n_jobs(-1) == cores
    assert resolve_n_jobs(-2) == max(1, cores - 1)
    assert resolve_n_jobs(-10 * cores) == 1
    with pytest.raises(ValueError, match="n_jobs=0"):
        resolve_n_jobs(0)
    limit = numba.config.NUMBA_NUM_THREADS
    assert kernel_threads(None) is None
    assert kernel_threads(1) == 1
    assert kernel_threads(-1) == min(cores, limit)
    assert kernel_threads(10 * limit) == limit


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_every_backend_resolves_n_jobs_alike(backend):
    """-2 is all cores but one on every engine (it was every core on XGBoost and
    LightGBM); 0 is refused by every ranker, naming the parameter."""
    from sklearn.utils._param_validation import InvalidParameterError

    X, y, qid = make_ranking(n_queries=10, n_features=3, max_docs=8, random_state=0)
    model = Ranker(QueryRMSE(), n_estimators=2, backend=backend, n_jobs=-2).fit(X, y, qid=qid)
    engine = {"xgboost": "nthread", "lightgbm": "num_threads"}.get(backend)
    if engine is not None:
        assert model.backend_.params_[engine] == resolve_n_jobs(-2)
    with pytest.raises(InvalidParameterError, match="'n_jobs' parameter"):
        Ranker(QueryRMSE(), backend=backend, n_jobs=0).fit(X, y, qid=qid)


def test_limit_threads_is_per_thread():
    """numba's thread count is per thread: a limit in one thread leaves the others alone."""
    inside, other = [], []
    with limit_threads(1):
        inside.append(numba.get_num_threads())
        t = threading.Thread(target=lambda: other.append(numba.get_num_threads()))
        t.start()
        t.join()
    assert inside == [1]
    assert other == [numba.config.NUMBA_NUM_THREADS]


_THREADS_THAT_RAN = """
    import os, sys, time
    import numpy as np
    import rankkit
    from rankkit.datasets import make_ranking

    def cpu_ns_per_thread():
        out = {}
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/schedstat") as fh:
                    out[tid] = int(fh.read().split()[0])
            except OSError:  # the thread ended meanwhile
                pass
        return out

    def share_outside_main(step):
        # Repeated for 0.3 s at least: schedstat counts CPU time in scheduler ticks.
        before = cpu_ns_per_thread()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.3:
            step()
        after = cpu_ns_per_thread()
        used = {tid: ns - before.get(tid, 0) for tid, ns in after.items()}
        main = used.pop(str(os.getpid()))
        return sum(used.values()) / (main + sum(used.values()))

    # Large enough to wake every pool: OpenBLAS threads a dot product only
    # above 10,000 elements, numpy's sorts and reductions never.
    X, y, qid = make_ranking(n_queries=500, n_features=8, max_docs=100, random_state=0)
    assert len(y) > 20_000
    kw = dict(n_permutations=4, n_estimators=6, max_depth=3, random_state=0, backend=sys.argv[1])
    rankkit.YetiRanker(**kw, n_jobs=2).fit(X, y, qid=qid).score(X, y, qid=qid)  # warm-up: every pool started
    # Learning from clicks, propensities estimated every iteration (EM's regressions).
    from rankkit.datasets import simulate_clicks
    Xc, clicks, session, position = simulate_clicks(X, y, qid, X[:, 0], n_sessions=3_000, top_k=10,
                                                    aggregate=False, random_state=0)
    assert len(clicks) > 20_000
    ckw = dict(n_estimators=4, max_depth=3, random_state=0, backend=sys.argv[1], position_bias="estimate")
    rankkit.LambdaMARTRanker(**ckw, n_jobs=2).fit(Xc, clicks, qid=session, position=position)
    clicks_model = rankkit.LambdaMARTRanker(**ckw, n_jobs=1)
    print("clicks", share_outside_main(lambda: clicks_model.fit(Xc, clicks, qid=session, position=position)))
    for n_jobs in (1, 2):
        model = rankkit.YetiRanker(**kw, n_jobs=n_jobs)
        fit = share_outside_main(lambda: model.fit(X, y, qid=qid))
        predict = share_outside_main(lambda: model.predict(X))
        score = share_outside_main(lambda: model.score(X, y, qid=qid))
        print(fit, predict, score)
    # Trained on two threads, served on one: n_jobs changed after fit binds predict and score,
    # and rankkit's scorer (it ran its metric on every numba thread).
    import sklearn
    from rankkit.metrics import make_ranking_scorer
    scorer = make_ranking_scorer("ndcg@10")
    model.set_params(n_jobs=1)
    with sklearn.config_context(enable_metadata_routing=True):  # qid= to a scorer
        print("served", share_outside_main(lambda: model.predict(X)),
              share_outside_main(lambda: model.score(X, y, qid=qid)),
              share_outside_main(lambda: scorer(model, X, y, qid=qid)))
"""


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/schedstat"),
                    reason="needs Linux's per-thread /proc/<pid>/task/<tid>/schedstat")
@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_n_jobs_1_runs_fit_predict_and_score_on_one_thread(backend):
    """The share of CPU time spent outside the calling thread in fit, predict
    and score, in a fresh process after a warm-up with two threads (so every
    pool has its workers, BLAS's included): about 0 with ``n_jobs=1``, large
    in fit with ``n_jobs=2``, and about 0 again in predict and score once
    ``set_params(n_jobs=1)`` follows a fit with two. CPU time per thread, unlike CPU seconds per
    wall second, does not depend on how busy the machine is. (The bound is 1%,
    not 0, a margin for stray CPU time outside the calling thread.)"""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_THREADS_THAT_RAN), backend],
                          env=_clean_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    one, two = ([float(v) for v in line.split()] for line in lines[-3:-1])
    assert max(one) < 0.01, f"n_jobs=1: share of CPU outside the calling thread in fit/predict/score: {one}"
    served = [float(v) for v in lines[-1].split()[1:]]
    assert max(served) < 0.01, \
        f"set_params(n_jobs=1) after a fit with 2: predict/score/scorer outside the thread: {served}"
    clicks = float(lines[-4].split()[1])
    assert clicks < 0.01, f"n_jobs=1, position_bias='estimate': share of CPU outside the calling thread: {clicks}"
    assert two[0] > 0.1


_LANGEVIN_THREADS = """
    import os, sys
    import rankkit
    from rankkit.datasets import make_ranking

    def threads():
        return len(os.listdir("/proc/self/task"))

    # Large enough that a parallel kernel wakes numba's second thread.
    X, y, qid = make_ranking(300, random_state=0)
    kw = dict(langevin=True, n_estimators=5, random_state=0, backend=sys.argv[1])  # diffusion_temperature="auto"
    before = threads()
    rankkit.LambdaMARTRanker(**kw, n_jobs=1).fit(X, y, qid=qid)
    one = threads()
    rankkit.LambdaMARTRanker(**kw, n_jobs=2).fit(X, y, qid=qid)
    print(before, one, threads())
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc/self/task")
@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_n_jobs_1_langevin_auto_temperature_wakes_no_thread(backend):
    """``langevin=True`` with ``diffusion_temperature="auto"`` computes the
    first iteration's gradients before boosting, to set ``beta``: with
    ``n_jobs=1`` that pass runs on the calling thread too, so a first fit in a
    fresh process starts no thread (it started numba's second one). The
    control, ``n_jobs=2``, starts one: the data are large enough to wake it."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_LANGEVIN_THREADS), backend],
                          env=_clean_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    before, one, two = (int(v) for v in proc.stdout.split()[-3:])
    assert one == before, f"n_jobs=1, langevin=True: {one - before} new thread(s) in the fit"
    assert two > one


# --------------------------------------------------------------------------- wait policy
def test_openmp_wait_policy_is_set_only_inside_and_nests(monkeypatch):
    for k in USER_WAIT_VARIABLES:
        monkeypatch.delenv(k, raising=False)
    with openmp_wait_policy():
        assert {k: os.environ[k] for k in WAIT_POLICY} == WAIT_POLICY
        with openmp_wait_policy():
            assert {k: os.environ[k] for k in WAIT_POLICY} == WAIT_POLICY
        assert {k: os.environ[k] for k in WAIT_POLICY} == WAIT_POLICY
    assert not set(WAIT_POLICY) & set(os.environ)
    with pytest.raises(RuntimeError):
        with openmp_wait_policy():
            raise RuntimeError("an import failed")
    assert not set(WAIT_POLICY) & set(os.environ)


def test_openmp_wait_policy_from_concurrent_threads(monkeypatch):
    """The variables stay set while any thread is inside, and are gone after the last."""
    for k in USER_WAIT_VARIABLES:
        monkeypatch.delenv(k, raising=False)
    inside, leave, seen = threading.Barrier(3), threading.Event(), []

    def load():
        with openmp_wait_policy():
            inside.wait()
            leave.wait()
            seen.append(os.environ.get("GOMP_SPINCOUNT"))

    threads = [threading.Thread(target=load) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    leave.set()
    for t in threads:
        t.join()
    assert seen == [str(SPIN_COUNT)] * 2
    assert not set(WAIT_POLICY) & set(os.environ)


@pytest.mark.parametrize("name, value", [("OMP_WAIT_POLICY", "ACTIVE"), ("GOMP_SPINCOUNT", "1234"),
                                         ("KMP_BLOCKTIME", "0")])
def test_openmp_wait_policy_respects_a_user_choice(name, value, monkeypatch):
    for k in USER_WAIT_VARIABLES:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv(name, value)
    with openmp_wait_policy():
        assert {k: os.environ.get(k) for k in USER_WAIT_VARIABLES} == {
            k: (value if k == name else None) for k in USER_WAIT_VARIABLES}
    assert os.environ[name] == value


_NUMBA_RUNTIME = """
    import ctypes, json, os
    import rankkit, numba
    print(json.dumps({k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")}))
    numba.get_num_threads()  # the pool is running (rankkit started it)
    gomp = [l.split()[-1] for l in open('/proc/self/maps') if l.split()[-1].endswith('/libgomp.so.1.0.0')]
    if gomp:
        ctypes.CDLL(gomp[0]).omp_display_env(1)  # prints GOMP_SPINCOUNT to stderr
"""


def _numba_runtime(env):
    """(the wait variables in os.environ after ``import rankkit``, omp_display_env's output)."""
    proc = _run(_NUMBA_RUNTIME, env)
    if "GOMP_SPINCOUNT" not in proc.stderr:
        pytest.skip("numba's pool does not run on the system's GNU OpenMP here")
    return json.loads(proc.stdout.splitlines()[-1]), proc.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_import_starts_numbas_openmp_pool_with_a_short_spin_without_leaking():
    env, display = _numba_runtime(_clean_env())
    assert env == {k: None for k in USER_WAIT_VARIABLES}
    assert f"GOMP_SPINCOUNT = '{SPIN_COUNT}'" in display


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
@pytest.mark.parametrize("name, value, spincount", [("OMP_WAIT_POLICY", "ACTIVE", "30000000000"),
                                                    ("GOMP_SPINCOUNT", "1234", "1234"),
                                                    ("KMP_BLOCKTIME", "0", "300000")])
def test_import_respects_the_users_wait_policy(name, value, spincount):
    env, display = _numba_runtime(_clean_env(**{name: value}))
    assert env == {k: (value if k == name else None) for k in USER_WAIT_VARIABLES}
    assert f"GOMP_SPINCOUNT = '{spincount}'" in display


_XGBOOST_SPIN = """
    import os, time
    import numpy as np
    chosen = os.environ.get('GOMP_SPINCOUNT')
    import rankkit
    from rankkit._backends import get_backend
    get_backend("xgboost")  # imports xgboost as a fit does
    import xgboost
    assert os.environ.get('GOMP_SPINCOUNT') == chosen, 'leaked'
    X = np.random.default_rng(0).random((5000, 10), dtype=np.float32)
    booster = xgboost.train({"nthread": 2, "tree_method": "hist"}, xgboost.DMatrix(X, label=X[:, 0]), 2)
    burnt = 0.0
    for _ in range(20):
        booster.inplace_predict(X)  # a parallel region in XGBoost's OpenMP runtime
        c0 = time.process_time()
        time.sleep(0.05)  # the main thread sleeps: any CPU time now is idle workers spinning
        burnt += time.process_time() - c0
    print(burnt)
"""


@pytest.mark.skipif(not installed("xgboost"), reason="needs xgboost")
@pytest.mark.skipif(os.cpu_count() < 2, reason="needs two cores")
def test_xgboosts_openmp_workers_sleep_soon_when_rankkit_loaded_the_runtime():
    """Idle workers of XGBoost's runtime burn a small fraction of the CPU they
    burn at libgomp's default spin count (the control, set explicitly, which
    rankkit leaves alone) when rankkit loaded the runtime."""
    short = float(_run(_XGBOOST_SPIN, _clean_env()).stdout.split()[-1])
    default = float(_run(_XGBOOST_SPIN, _clean_env(GOMP_SPINCOUNT="300000")).stdout.split()[-1])
    if default <= 0.02:
        # On a machine whose cores are taken by other processes the spinning
        # workers may not run during the sleeps: then the measurement cannot
        # tell spinning from sleeping. Idle, the control burns about 0.075 s.
        pytest.skip(f"the default-spin control burnt only {default:.4f} CPU s here (busy machine?)")
    # Idle, rankkit's runtime burns about 0.003 s, a twenty-fifth of the control.
    assert short < default / 5, (short, default)
