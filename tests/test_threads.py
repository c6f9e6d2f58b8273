import os
import subprocess
import sys


def test_import_starts_numba_threads_without_leaking_the_wait_policy():
    code = (
        "import os, rankkit\n"
        "from numba.np.ufunc import parallel\n"
        "assert parallel._is_initialized, 'numba threads not started'\n"
        "assert 'OMP_WAIT_POLICY' not in os.environ, 'wait policy leaked into the environment'\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "NUMBA_THREADING_LAYER")}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def test_a_user_choice_is_left_alone():
    code = (
        "import os, rankkit\n"
        "from numba.np.ufunc import parallel\n"
        "assert not parallel._is_initialized\n"
        "assert os.environ['OMP_WAIT_POLICY'] == 'ACTIVE'\n"
    )
    env = dict(os.environ, OMP_WAIT_POLICY="ACTIVE")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
