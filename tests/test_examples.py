"""Every script in examples/ runs to completion (exit code 0).

Each example runs in a fresh interpreter, exactly as a user would start it,
from a temporary working directory so that nothing is written into the
repository. The examples check their own results where a check is
meaningful (``save_and_serve.py`` exits non-zero if the served model ranks
differently from the ranker), so a zero exit code is a real pass.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))

# An example must finish in under 30 s on 2 cores; the limit leaves room for
# numba's first compilation (cache=True then makes later runs fast) and for a
# loaded machine, while still catching a script that hangs.
TIMEOUT_S = 240

# What an example must show, beyond running: patterns its output must contain.
EXPECTED_OUTPUT = {
    # StochasticRank's toy: seeds counted at the global optimum with and without
    # SGLB, and LambdaMART at the local optimum 0.903 on every seed.
    "sglb.py": [
        r"StochasticRank NDCG@3 \+ SGLB +([7-9]|10)/10 ",
        r"StochasticRank NDCG@3 +\d+/10 ",
        r"LambdaMART NDCG@3 +0/10 +(0\.903 ){9}0\.903 ",
    ],
    "compare_rankers.py": [
        r"\| LambdaMART \(baseline\) \| 0\.\d{4} \[0\.\d{4}, 0\.\d{4}\] \|",
        r"\| YetiRank \| 0\.\d{4} \[0\.\d{4}, 0\.\d{4}\]\*? \| \d+/\d+/\d+ \|",
        r"Holm-corrected over the table",
        r"\\begin\{table\}",
        r"wrote a run of \d+ lines; its first line: \S+ Q0 D\d+ 1 \S+ LambdaMART",
    ],
    # ranker.score is NDCG@10 (the first eval_metric's default), and the line says so.
    "quickstart.py": [r"NDCG@10 \(ties worst, exp gain\) on held-out queries: 0\.\d{4}"],
    "plotting.py": [
        r"panel 3: LambdaMART better: \d+, tie: \d+, QueryRMSE better: \d+, mean difference [+-]0\.\d{4}",
        r"figure written to \S+\.png",
    ],
    "early_stopping.py": [
        r"stopped at iteration \d+ by early stopping, best iteration \d+, best validation_1-ndcg@10 0\.\d{5}",
        r"iteration_range=\(0, best_iteration_ \+ 1\)\): True",
    ],
}


def test_examples_folder_is_not_empty():
    assert {p.name for p in SCRIPTS} >= {
        "quickstart.py",
        "grid_search_dataframe.py",
        "early_stopping.py",
        "sglb.py",
        "save_and_serve.py",
        "save_and_serve_lightgbm.py",
        "engine_objectives.py",
    }


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_example_runs(script, tmp_path):
    env = dict(os.environ)
    # Examples must not depend on where they are started from.
    env.pop("PYTHONPATH", None)
    # A file an example leaves in the temporary directory on purpose (plotting.py's figure
    # without a path argument) goes to this test's, not to the machine's /tmp.
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    env["TMPDIR"] = str(tmp)
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert proc.returncode == 0, (
        f"{script.name} exited with {proc.returncode}\n--- stdout ---\n{proc.stdout[-3000:]}"
        f"\n--- stderr ---\n{proc.stderr[-3000:]}"
    )
    assert proc.stdout.strip(), f"{script.name} printed nothing"
    for pattern in EXPECTED_OUTPUT.get(script.name, []):
        assert re.search(pattern, proc.stdout), f"{script.name} did not print {pattern!r}:\n{proc.stdout}"
    assert list(cwd.iterdir()) == [], f"{script.name} left files in its working directory"


PACKAGE = Path(__file__).resolve().parents[1] / "rankkit"
# Every module whose docstrings carry examples.
DOCTEST_MODULES = sorted(
    ".".join(("rankkit", *p.relative_to(PACKAGE).with_suffix("").parts))
    for p in PACKAGE.rglob("*.py")
    if ">>>" in p.read_text()
)


@pytest.mark.parametrize("module", DOCTEST_MODULES)
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
