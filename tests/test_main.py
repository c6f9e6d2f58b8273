"""``python -m rankkit``: progress per ranker, a comparison table on held-out
queries, LETOR folders, the ranker choice and the figure."""

import gzip
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from rankkit.__main__ import RANKERS, main
from rankkit.datasets import make_ranking
from rankkit.metrics import ndcg_score

TINY = ["--n-queries", "40", "--n-estimators", "4", "--max-depth", "3"]


def _table(out):
    """``{model: [NDCG@10, MRR, MAP, ERR@10, fit s]}`` from the printed table."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("model"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.strip():
            break
        label, values = re.match(r"(.+?)\s{2,}([\d.\s]+)$", line).groups()
        rows[label.strip()] = [float(v) for v in values.split()]
    return rows


def test_progress_table_and_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    figure = tmp_path / "compare.png"
    assert main([*TINY, "--rankers", "lambdamart,queryrmse", "--n-jobs", "1", "--plot", str(figure)]) == 0
    out = capsys.readouterr().out
    # A line when each ranker starts and when it ends, with its time.
    for i, label in enumerate(["LambdaMART NDCG@10", "QueryRMSE"], 1):
        assert f"[{i}/2] {label}: fitting ...\n" in out
        assert re.search(rf"\[{i}/2\] {re.escape(label)}: done in \d+\.\d s, test NDCG@10 0\.\d{{4}}\n", out)
    rows = _table(out)
    assert list(rows) == ["LambdaMART NDCG@10", "QueryRMSE", "random scores"]
    assert all(len(v) == 5 for k, v in rows.items() if k != "random scores")
    assert "n_jobs 1" in out
    # The table is on the held-out queries: the same split as the command's.
    from rankkit.model_selection import query_train_test_split

    X, y, qid = make_ranking(40, random_state=0)
    _, X_te, _, y_te, _, q_te = query_train_test_split(X, y, qid=qid, test_size=0.25, random_state=0)
    assert f"test {len(np.unique(q_te))} ({len(y_te)})" in out
    rand = np.random.default_rng(0).normal(size=len(y_te))
    assert rows["random scores"][0] == pytest.approx(ndcg_score(y_te, rand, qid=q_te, k=10), abs=5e-5)
    # The second table: the same means with intervals, significance against the best on NDCG@10.
    best = "LambdaMART" if rows["LambdaMART NDCG@10"][0] >= rows["QueryRMSE"][0] else "QueryRMSE"
    assert f"| {best} (baseline) |" in out and f"significant difference from {best}" in out
    line = next(x for x in out.splitlines() if x.startswith("| random scores |"))
    mean, low, high = map(float, re.match(r"\| random scores \| ([\d.]+) \[([\d.]+), ([\d.]+)\]", line).groups())
    assert mean == pytest.approx(rows["random scores"][0], abs=5e-5) and low <= mean <= high
    assert "Holm-corrected" in out and "NDCG@10 queries won/tied/lost against" in out
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"figure written to {figure}" in out


def _write_letor(folder, with_vali=True):
    fold = folder / "Fold1"
    fold.mkdir(parents=True)
    splits = {"train": 0, "vali": 1, "test": 2} if with_vali else {"train": 0, "test": 2}
    for split, seed in splits.items():
        X, y, qid = make_ranking(20, n_features=5, max_docs=12, random_state=seed)
        with gzip.open(fold / f"{split}.txt.gz", "wb") as f:
            dump_svmlight_file(X, y, f, query_id=qid, zero_based=False)


@pytest.mark.parametrize("with_vali", [True, False])
def test_letor_folder(tmp_path, capsys, with_vali):
    _write_letor(tmp_path / "LETOR", with_vali)
    assert main(["--data", str(tmp_path / "LETOR"), "--n-estimators", "3", "--rankers", "queryrmse,xgboost"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "LETOR" / "Fold1") in out
    # Without vali.txt a fifth of the 20 training queries validates.
    assert ("train 20 " in out) == with_vali and ("validation 20 " in out) == with_vali
    assert "test 20 " in out
    assert list(_table(out)) == ["QueryRMSE", "XGBoost rank:ndcg (built-in)", "random scores"]


@pytest.mark.parametrize("zero_based", [False, True])
def test_fold_files_are_read_alike(tmp_path, zero_based):
    """Train, vali and test are read with the same feature ids and width: a
    zero-based test file whose feature 0 is always 0 (so left out) is not
    read one-based, shifted by a column, and features the training file
    lacks (all 0 there) widen every file rather than stop the run."""
    from rankkit.__main__ import _fold_files, _load_fold

    fold = tmp_path / "Fold1"
    fold.mkdir()
    written = {}
    for split, seed in {"train": 0, "vali": 1, "test": 2}.items():
        X, y, qid = make_ranking(6, n_features=5, max_docs=6, random_state=seed)
        X = np.abs(X) + 1.0
        if split == "test":
            X[:, 0] = 0.0  # absent from the file
        if split == "train":
            X[:, 4] = 0.0  # the training file's highest feature id is smaller
        dump_svmlight_file(X, y, str(fold / f"{split}.txt"), query_id=qid, zero_based=zero_based)
        written[split] = X
    loaded = _load_fold(_fold_files(fold))
    for split, X in written.items():
        np.testing.assert_allclose(loaded[split][0], X, rtol=1e-6)


def test_real_letor_fold(shared_data, capsys):
    assert main(["--data", str(shared_data / "MQ2008"), "--n-estimators", "3", "--rankers", "lambdamart"]) == 0
    out = capsys.readouterr().out
    assert "46 features" in out and "train 471 (9630)" in out
    assert 0.5 < _table(out)["LambdaMART NDCG@10"][0] <= 1.0


def test_folds_too_small_for_the_comparison(tmp_path, capsys):
    """One test query, or one training query without vali.txt: a usage error
    before training (the paired tests failed after every ranker had trained)."""
    for split, name in [("test", "the test file has one query"), ("train", "the training file has one query")]:
        fold = tmp_path / split / "Fold1"
        fold.mkdir(parents=True)
        for part in ("train", "test"):
            X, y, qid = make_ranking(1 if part == split else 8, n_features=4, max_docs=8, min_docs=3,
                                     empty_query_fraction=0.0, random_state=0)
            dump_svmlight_file(X, y, str(fold / f"{part}.txt"), query_id=qid, zero_based=False)
        with pytest.raises(SystemExit):
            main(["--data", str(tmp_path / split), "--rankers", "queryrmse", "--n-estimators", "2"])
        out = capsys.readouterr()
        assert name in out.err and "fitting" not in out.out


def test_negative_labels_in_a_letor_folder_are_a_usage_error(tmp_path, capsys):
    """LETOR's semi-supervised sets mark unjudged documents -1: the first
    ranker's traceback (an engine's, naming no file) came after loading."""
    fold = tmp_path / "Fold1"
    fold.mkdir()
    for part in ("train", "test"):
        X, y, qid = make_ranking(8, n_features=4, max_docs=8, min_docs=3, random_state=0)
        y = np.asarray(y, dtype=float)
        if part == "test":
            y[2] = -1
        dump_svmlight_file(X, y, str(fold / f"{part}.txt"), query_id=qid, zero_based=False)
    with pytest.raises(SystemExit):
        main(["--data", str(tmp_path), "--rankers", "xgboost,lambdamart", "--n-estimators", "2"])
    out = capsys.readouterr()
    assert "test.txt has the label -1; rankers take relevance grades >= 0" in out.err and "fitting" not in out.out


@pytest.mark.skipif(shutil.which("xelatex") is not None, reason="a TeX installation writes .pgf")
def test_a_plot_format_matplotlib_cannot_write_here_is_a_usage_error(tmp_path, capsys):
    """.pgf is a matplotlib extension that needs TeX: the figure failed after every ranker had trained."""
    with pytest.raises(SystemExit):
        main([*TINY, "--rankers", "lambdamart", "--plot", str(tmp_path / "f.pgf")])
    out = capsys.readouterr()
    assert "--plot: matplotlib cannot write .pgf files here" in out.err and "fitting" not in out.out


def test_bad_options(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--rankers", "lambdamart,catboost"])
    assert "unknown ['catboost']; choose from " + ", ".join(RANKERS) in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--data", str(tmp_path)])
    assert "no train.txt[.gz] or test.txt[.gz]" in capsys.readouterr().err
    # Every value checked before anything trains, as a usage error naming the option.
    for options, message in [
        (["--backend", "foo"], "--backend: Unknown backend 'foo'"),
        (["--rankers", "xgboost", "--max-depth", "0"], "--max-depth: The 'max_depth' parameter"),
        (["--rankers", "xgboost", "--learning-rate", "nan"], "--learning-rate: The 'learning_rate' parameter"),
        (["--plot", str(tmp_path / "figure.xyz")], "--plot: '" + str(tmp_path / "figure.xyz") + "' needs one of"),
        (["--plot", str(tmp_path / "figure")], "needs one of the extensions matplotlib writes"),
        (["--rankers", "xgboost,lambdamart", "--max-depth", "0"], "--max-depth: The 'max_depth' parameter"),
        (["--learning-rate", "0"], "--learning-rate: The 'learning_rate' parameter"),
        (["--n-jobs", "0"], "--n-jobs: The 'n_jobs' parameter"),
        (["--rankers", "xgboost", "--n-estimators", "0"], "--n-estimators must be >= 1"),
        (["--n-queries", "3"], "--n-queries must be at least 10"),
        (["--random-state", "-1"], "--random-state must be >= 0"),
        (["--plot", str(tmp_path / "missing" / "x.png")], "--plot: the folder"),
        # The engine's own limits too (a traceback after the first rankers had trained before).
        (["--rankers", "xgboost,lambdamart", "--max-depth", "17"], "--max-depth: The 'max_depth' parameter of "
                                                                     "backend='numba' must be an int in the range"),
        (["--backend", "xgboost", "--learning-rate", "1e31"], "--learning-rate: The 'learning_rate' parameter of "
                                                               "backend='xgboost'"),
        (["--plot", str(tmp_path)], "is a folder; give a file name"),  # IsADirectoryError after training before
        (["--rankers", "xgboost", "--plot", str(tmp_path / "f.png")], "nothing to draw"),  # a blank figure before
    ]:
        with pytest.raises(SystemExit):
            main(options)
        out = capsys.readouterr()
        assert message in out.err and "fitting" not in out.out


def test_runs_as_a_module():
    proc = subprocess.run([sys.executable, "-m", "rankkit", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    for option in ("--n-jobs", "--data", "--rankers", "--plot"):
        assert option in proc.stdout


def test_letor_folder_with_unsorted_qid(tmp_path, capsys):
    """Contiguous but unsorted query ids (MQ2008's Fold4 and Fold5 training
    files): XGBoost's built-in ranker, which refuses a qid that decreases,
    is trained on rows sorted by query (it crashed the run)."""
    fold = tmp_path / "Fold1"
    fold.mkdir()
    for split, seed in {"train": 0, "vali": 1, "test": 2}.items():
        X, y, qid = make_ranking(12, n_features=5, max_docs=10, random_state=seed)
        dump_svmlight_file(X, y, str(fold / f"{split}.txt"), query_id=100 - qid, zero_based=False)
    assert main(["--data", str(tmp_path), "--n-estimators", "3", "--rankers", "xgboost"]) == 0
    out = capsys.readouterr().out
    assert 0.0 < _table(out)["XGBoost rank:ndcg (built-in)"][0] <= 1.0


def test_n_jobs_bounds_the_test_metrics_too(monkeypatch, capsys):
    """--n-jobs bounds the numba kernels of the test metrics and the
    comparison's per-query metrics, not only the rankers' fits."""
    import numba

    import rankkit.__main__ as cli

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one numba thread: nothing to bound")
    seen = []
    measure, compare = cli._test_metrics, cli._print_comparison
    monkeypatch.setattr(cli, "_test_metrics", lambda *a: seen.append(numba.get_num_threads()) or measure(*a))
    monkeypatch.setattr(cli, "_print_comparison", lambda *a: seen.append(numba.get_num_threads()) or compare(*a))
    assert main([*TINY, "--rankers", "queryrmse", "--n-jobs", "1"]) == 0
    assert seen and set(seen) == {1}
