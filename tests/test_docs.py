"""Every Python block of README.md and docs/*.md runs as it stands.

Each block runs alone, in a fresh namespace, from a temporary working
directory, so a snippet cannot lean on names defined by an earlier one (a
reader may start anywhere) nor leave files behind. scikit-learn's global
configuration (a snippet may enable metadata routing) is restored after each
block, and figures are drawn with matplotlib's Agg backend.
"""

import re
import textwrap
from pathlib import Path

import pytest
import sklearn

ROOT = Path(__file__).resolve().parents[1]
# docs/persistence.md is one walkthrough (a later block loads the file an
# earlier one saved): tests/test_persistence.py runs its blocks in order.
SEQUENTIAL = {"persistence.md"}
DOCUMENTS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in SEQUENTIAL)]
_BLOCK = re.compile(r"^([ \t]*)```python\n(.*?)^\1```", re.MULTILINE | re.DOTALL)


def _blocks():
    out = []
    for path in DOCUMENTS:
        text = path.read_text()
        for i, match in enumerate(_BLOCK.finditer(text)):
            line = text[: match.start()].count("\n") + 1
            out.append(pytest.param(textwrap.dedent(match.group(2)), id=f"{path.name}:{line}"))
    return out


BLOCKS = _blocks()


def test_the_documents_have_python_blocks():
    names = {param.id.split(":")[0] for param in BLOCKS}
    assert {"README.md", "user_guide.md"} <= names


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS)
def test_doc_block_runs(code, tmp_path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    try:
        with sklearn.config_context():  # restores the global configuration afterwards
            exec(compile(code, "<doc block>", "exec"), {"__name__": "__doc_block__"})
    finally:
        plt.close("all")
    assert list(tmp_path.iterdir()) == []


def test_api_md_method_signatures_are_the_rankers():
    """docs/api.md writes the rankers' fit, predict and score signatures out;
    they must be the real ones (and say nothing the rankers do not take)."""
    import inspect

    from rankkit import LambdaMARTRanker

    text = (ROOT / "docs" / "api.md").read_text()
    for method in ("fit", "predict", "score"):
        documented = re.search(rf"\| `{method}\((.*?)\)` \|", text).group(1)
        real = str(inspect.signature(getattr(LambdaMARTRanker, method))).strip("()")
        assert documented == real.replace("self, ", ""), method
