"""TREC files and ``ties="trec"`` against trec_eval (pytrec_eval) and ir_measures on real runs."""

import math

import numpy as np
import pandas as pd
import pytest

from rankkit.datasets import load_svmlight
from rankkit.metrics import (
    map_score,
    mrr_score,
    ndcg_score,
    precision_score,
    recall_score,
    rprecision_score,
)
from rankkit.trec import align, read_qrels, read_run, write_qrels, write_run

# rankkit metric (keyword arguments) -> trec_eval measure, per query. trec_eval's
# conventions: linear gain, rel >= 1 relevant, a query without relevant document scores 0.
TREC_MEASURES = [
    (precision_score, {"k": 5}, "P_5"),
    (precision_score, {"k": 10}, "P_10"),
    (precision_score, {"k": 1000}, "P_1000"),  # far past every list: divided by k
    (recall_score, {"k": 5}, "recall_5"),
    (recall_score, {"k": 30}, "recall_30"),
    (rprecision_score, {}, "Rprec"),
    (map_score, {}, "map"),
    (mrr_score, {}, "recip_rank"),
    (ndcg_score, {"gain": "linear"}, "ndcg"),
    (ndcg_score, {"gain": "linear", "k": 10}, "ndcg_cut_10"),
    (ndcg_score, {"gain": "linear", "k": 1000}, "ndcg_cut_1000"),
]


def _runs(shared_data):
    """Real queries with runs full of ties: one feature, and the same feature rounded."""
    out = []
    for name, path in [("MQ2008", "MQ2008/Fold1/test.txt.gz"), ("ClueWeb09", "ClueWeb09-webis/Fold1/test.txt.gz"),
                       ("Yahoo", "LightGBM-lambdarank-example/rank.test.gz")]:
        X, y, qid = load_svmlight(shared_data / path, dense=True)
        for column in (0, 3):
            out.append((f"{name}-f{column}", y, X[:, column], qid))
        out.append((f"{name}-rounded", y, np.round(X[:, 1] * 4) / 4, qid))
    return out


def _write(tmp_path, y, score, qid, doc_ids=None):
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    write_run(run, score, qid=qid, doc_ids=doc_ids)
    write_qrels(qrels, y, qid=qid, doc_ids=doc_ids)
    return run, qrels


def test_every_metric_equals_pytrec_eval_on_real_runs(shared_data, tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    measures = {m for _, _, m in TREC_MEASURES}
    for name, y, score, qid in _runs(shared_data):
        run_path, qrels_path = _write(tmp_path, y, score, qid)
        run, qrels = read_run(run_path), read_qrels(qrels_path)
        y_a, s_a, q_a, d_a = align(run, qrels)
        run_dict, qrels_dict = {}, {}
        for row in run.itertuples():
            run_dict.setdefault(row.qid, {})[row.docno] = row.score
        for row in qrels.itertuples():
            qrels_dict.setdefault(row.qid, {})[row.docno] = int(row.relevance)
        want = pytrec_eval.RelevanceEvaluator(qrels_dict, measures).evaluate(run_dict)
        order = list(dict.fromkeys(q_a))
        assert sorted(want) == sorted(order)  # every query, those without relevant document too
        if name.startswith("MQ2008"):  # the empty-query rule is exercised
            assert any(not y[qid == q].any() for q in np.unique(qid))
        for fn, kwargs, measure in TREC_MEASURES:
            got = fn(y_a, s_a, qid=q_a, ties="trec", doc_ids=d_a, per_query=True, empty=0.0, **kwargs)
            ref = np.array([want[q][measure] for q in order])
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9, err_msg=f"{name} {measure}")


def test_map_cut_of_trec_eval_divides_by_all_relevant(shared_data, tmp_path):
    """trec_eval's map_cut_k divides by R; rankkit's map@k by min(R, k) (CatBoost's MAP:top=k)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    name, y, score, qid = _runs(shared_data)[0]
    run_path, qrels_path = _write(tmp_path, y, score, qid)
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    y_a, s_a, q_a, d_a = align(run, qrels)
    run_dict, qrels_dict = {}, {}
    for row in run.itertuples():
        run_dict.setdefault(row.qid, {})[row.docno] = row.score
    for row in qrels.itertuples():
        qrels_dict.setdefault(row.qid, {})[row.docno] = int(row.relevance)
    want = pytrec_eval.RelevanceEvaluator(qrels_dict, {"map_cut"}).evaluate(run_dict)
    got = map_score(y_a, s_a, qid=q_a, k=5, ties="trec", doc_ids=d_a, empty=0.0, per_query=True)
    for i, q in enumerate(dict.fromkeys(q_a)):
        n_rel = int((y_a[q_a == q] >= 1).sum())
        scale = min(n_rel, 5) / n_rel if n_rel else 0.0
        assert math.isclose(got[i] * scale, want[q]["map_cut_5"], abs_tol=1e-9)


def test_ir_measures_reads_our_files_and_agrees(shared_data, tmp_path):
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import AP, RR, P, R, Rprec, nDCG

    cases = [(P @ 5, precision_score, {"k": 5}), (P @ 1000, precision_score, {"k": 1000}),
             (R @ 20, recall_score, {"k": 20}), (Rprec, rprecision_score, {}), (AP, map_score, {}),
             (RR, mrr_score, {}), (nDCG @ 10, ndcg_score, {"gain": "linear", "k": 10}),
             (nDCG, ndcg_score, {"gain": "linear"})]
    for name, y, score, qid in _runs(shared_data)[::3]:
        # String ids of varying length: "doc10" sorts before "doc9" in trec_eval.
        doc_ids = np.array([f"doc{i % 97}-{i}" for i in range(len(y))])
        run_path, qrels_path = _write(tmp_path, y, score, qid, doc_ids)
        qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
        run = list(ir_measures.read_trec_run(str(run_path)))
        per_query = {}
        for m in ir_measures.iter_calc([c[0] for c in cases], qrels, run):
            per_query[(str(m.measure), m.query_id)] = m.value
        y_a, s_a, q_a, d_a = align(read_run(run_path), read_qrels(qrels_path))
        for measure, fn, kwargs in cases:
            got = fn(y_a, s_a, qid=q_a, ties="trec", doc_ids=d_a, per_query=True, empty=0.0, **kwargs)
            ref = [per_query[(str(measure), q)] for q in dict.fromkeys(q_a)]
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9, err_msg=f"{name} {measure}")


def test_trec_ties_differ_from_worst_on_these_runs(shared_data):
    """The runs really have ties that matter: otherwise the tests above would not test the tie rule."""
    name, y, score, qid = _runs(shared_data)[0]
    doc_ids = np.array([f"D{i}" for i in range(len(y))])
    trec = ndcg_score(y, score, qid=qid, ties="trec", doc_ids=doc_ids, gain="linear", per_query=True)
    worst = ndcg_score(y, score, qid=qid, ties="worst", gain="linear", per_query=True)
    best = ndcg_score(y, score, qid=qid, ties="best", gain="linear", per_query=True)
    assert np.sum(trec != worst) > 10 and np.sum(trec != best) > 10


# ------------------------------------------------------------------ files

def test_run_round_trip_keeps_scores_and_writes_trec_order(tmp_path):
    rng = np.random.default_rng(0)
    n = 50
    qid = np.repeat(["q2", "q1", "q10"], [20, 20, 10])
    score = np.round(rng.normal(size=n), 1)  # ties
    score[3] = 1 / 3  # needs all 17 digits
    ids = np.array([f"d{i}" for i in range(n)])
    assert write_run(tmp_path / "run", score, qid=qid, doc_ids=ids, tag="mine") == n
    run = read_run(tmp_path / "run")
    assert run["tag"].unique().tolist() == ["mine"] and (run["Q0"] == "Q0").all()
    back = dict(zip(run["docno"], run["score"]))
    assert all(back[d] == s for d, s in zip(ids, score))  # exact float64
    assert list(dict.fromkeys(run["qid"])) == ["q2", "q1", "q10"]
    for q, part in run.groupby("qid", sort=False):
        assert part["rank"].tolist() == list(range(1, len(part) + 1))
        want = sorted(part["docno"], key=lambda d: (-back[d], tuple(-ord(c) for c in d)))
        assert part["docno"].tolist() == want
    assert write_run(tmp_path / "cut", score, qid=qid, doc_ids=ids, depth=5) == 15
    assert write_qrels(tmp_path / "qrels", rng.integers(0, 3, n), qid=qid, doc_ids=ids) == n
    qrels = read_qrels(tmp_path / "qrels")
    assert qrels.columns.tolist() == ["qid", "iteration", "docno", "relevance"]


def test_default_doc_ids_agree_between_run_and_qrels(tmp_path):
    y, s, qid = np.array([1, 0, 2, 0]), np.array([0.1, 0.1, 0.3, 0.0]), np.array([1, 1, 2, 2])
    write_run(tmp_path / "run", s, qid=qid)
    write_qrels(tmp_path / "qrels", y, qid=qid)
    y_a, s_a, q_a, d_a = align(read_run(tmp_path / "run"), read_qrels(tmp_path / "qrels"))
    assert sorted(d_a) == ["D0", "D1", "D2", "D3"]
    assert ndcg_score(y_a, s_a, qid=q_a, ties="trec", doc_ids=d_a) == ndcg_score(
        y, s, qid=qid, ties="trec", doc_ids=[f"D{i}" for i in range(4)])


def _frames(run_lines, qrels_lines, tmp_path):
    (tmp_path / "run").write_text("\n".join(run_lines) + "\n")
    (tmp_path / "qrels").write_text("\n".join(qrels_lines) + "\n")
    return tmp_path / "run", tmp_path / "qrels"


def test_bad_files_and_mismatches_are_clear_errors(tmp_path):
    run, qrels = _frames(["1 Q0 a 1 0.5 r", "1 Q0 b 2 nan r"], ["1 0 a 1"], tmp_path)
    with pytest.raises(ValueError, match="line 2 has the score nan"):
        read_run(run)
    run, qrels = _frames(["1 Q0 a 1 0.5 r", "1 Q0 a 2 0.4 r"], ["1 0 a 1"], tmp_path)
    with pytest.raises(ValueError, match="document 'a' is listed twice for query '1'"):
        read_run(run)
    run, qrels = _frames(["1 Q0 a 1 0.5"], ["1 0 a 1"], tmp_path)
    with pytest.raises(ValueError, match="6 whitespace-separated fields"):
        read_run(run)
    run, qrels = _frames(["1 Q0 a 1 0.5 r", "2 Q0 b 1 0.5 r"], ["1 0 a 1", "3 0 c 1"], tmp_path)
    with pytest.raises(ValueError, match=r"1 only in the run \['2'\], 1 only in the qrels \['3'\]"):
        align(read_run(run), read_qrels(qrels))
    y, s, q, d = align(read_run(run), read_qrels(qrels), missing_queries="drop")
    assert q.tolist() == ["1"] and y.tolist() == [1.0]
    # Unjudged retrieved documents are non-relevant; unranked relevant ones are an error.
    run, qrels = _frames(["1 Q0 a 1 0.5 r", "1 Q0 x 2 0.4 r"], ["1 0 a 1", "1 0 b 0"], tmp_path)
    y, s, q, d = align(read_run(run), read_qrels(qrels))
    assert y.tolist() == [1.0, 0.0]
    run, qrels = _frames(["1 Q0 a 1 0.5 r"], ["1 0 a 1", "1 0 b 2"], tmp_path)
    with pytest.raises(ValueError, match="does not rank 1 relevant judged document.*'b' of query '1'"):
        align(read_run(run), read_qrels(qrels))
    with pytest.raises(ValueError, match="integer relevance grades"):
        write_qrels(tmp_path / "q", [0.5], qid=[1])
    with pytest.raises(ValueError, match="no spaces"):
        write_run(tmp_path / "r", [0.5], qid=[1], doc_ids=["a b"])
    with pytest.raises(ValueError, match="y_score contains NaN"):
        write_run(tmp_path / "r", [np.nan], qid=[1])
    with pytest.raises(ValueError, match="document 'a' appears 2 times"):
        write_run(tmp_path / "r", [0.5, 0.1], qid=[1, 1], doc_ids=["a", "a"])


def test_ids_that_pandas_reads_as_missing_stay_ids(tmp_path):
    """NA, null, nan, None are document and query ids like any other (they
    became NaN: wrong tie order, or 'listed twice')."""
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    run.write_text("NA Q0 NA 1 1.0 t\nNA Q0 b 2 1.0 t\nNA Q0 null 3 0.5 t\n")
    qrels.write_text("NA 0 NA 0\nNA 0 b 1\nNA 0 null 0\n")
    assert read_run(run)["docno"].tolist() == ["NA", "b", "null"] and read_run(run)["qid"].tolist() == ["NA"] * 3
    y, s, q, d = align(read_run(run), read_qrels(qrels))
    # trec_eval breaks the tie by docno, descending as strings: b before NA.
    assert mrr_score(y, s, qid=q, ties="trec", doc_ids=d) == 1.0


def test_align_refuses_any_unranked_positive_grade(tmp_path):
    """The ideal DCG counts every positive grade whatever -l is: at -l 2 a
    run that omits a grade-1 document gave NDCG 1.0 where trec_eval gives 0.76."""
    qrels = pd.DataFrame({"qid": ["1", "1"], "iteration": "0", "docno": ["a", "b"], "relevance": [2, 1]})
    run = pd.DataFrame({"qid": ["1"], "Q0": "Q0", "docno": ["a"], "rank": [1], "score": [3.0], "tag": "t"})
    with pytest.raises(ValueError, match="does not rank 1 relevant judged document"):
        align(run, qrels, relevance_level=2)
    # At 0 unjudged documents (grade 0 here, -1 to trec_eval) became relevant; nothing was checked.
    for level in (0, -5, 1.5, True, None, "2"):
        with pytest.raises(ValueError, match=r"relevance_level must be a positive int \(trec_eval's -l\)"):
            align(run, qrels, relevance_level=level)


def test_malformed_lines_are_named(tmp_path):
    cases = {
        "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 0.5 t extra\n": r"every run line must have 6 .*; line 2 has 7\.$",
        "q1 Q0 a x 1.0 t\n": r"line 1 has the rank 'x'; it must be an integer",
        "": r"the run file is empty",
    }
    for text, message in cases.items():
        (tmp_path / "run").write_text(text)
        with pytest.raises(ValueError, match=message):
            read_run(tmp_path / "run")
    (tmp_path / "qrels").write_text("q1 0 a 1.5\n")  # read as grade 1 before
    with pytest.raises(ValueError, match=r"line 1 has the relevance '1.5'; it must be an integer"):
        read_qrels(tmp_path / "qrels")


def test_comment_and_blank_lines_are_skipped_as_trec_eval_10_does(tmp_path):
    """trec_eval 10 reads '#' comment lines in runs and qrels; they were an
    error that named the next line ("Expected 5 fields in line 2, saw 6")."""
    (tmp_path / "run").write_text("# run of 2026-11-27\nq1 Q0 a 1 1.0 t\n\n  # indented comment\nq1 Q0 b 2 x t\n")
    with pytest.raises(ValueError, match=r"line 5 has the score x"):  # the file's line, comments counted
        read_run(tmp_path / "run")
    (tmp_path / "run").write_text("# run\nq1 Q0 a 1 1.0 t\n\nq1 Q0 #b 2 0.5 t\n")
    assert read_run(tmp_path / "run")["docno"].tolist() == ["a", "#b"]  # '#' inside a line is text
    (tmp_path / "qrels").write_text("#qid iter docno rel\nq1 0 a 1\n")
    assert read_qrels(tmp_path / "qrels")["relevance"].tolist() == [1]
    (tmp_path / "qrels").write_text("# only a comment\n\n")
    with pytest.raises(ValueError, match="the qrels file is empty"):
        read_qrels(tmp_path / "qrels")


def test_compressed_files_open_files_and_byte_order_marks_are_read(tmp_path):
    import gzip
    import io

    import bz2
    import lzma
    import zipfile

    for name, opener in (("run.gz", gzip.open), ("run.GZ", gzip.open), ("run.bz2", bz2.open), ("run", lzma.open)):
        with opener(tmp_path / name, "wt") as handle:  # the content, not the name, says how to read it
            handle.write("q1 Q0 a 1 1.0 t\n")
        assert read_run(tmp_path / name)["score"].tolist() == [1.0]
    with zipfile.ZipFile(tmp_path / "run.zip", "w") as archive:
        archive.writestr("run", "q1 Q0 a 1 1.0 t\n")
    with pytest.raises(ValueError, match="is a ZIP archive: extract the file first"):
        read_run(tmp_path / "run.zip")
    (tmp_path / "bom").write_text("\ufeffq1\tQ0 a 1 1.0 t\r\n", encoding="utf-8")
    assert read_run(tmp_path / "bom")["qid"].tolist() == ["q1"]  # not "\ufeffq1"
    assert read_qrels(io.StringIO("q1 0 a 2\n"))["relevance"].tolist() == [2]
    assert read_run(io.BytesIO(b"q1 Q0 a 1 1.0 t\n"))["docno"].tolist() == ["a"]
    assert read_run(io.StringIO("\ufeffq1 Q0 a 1 1.0 t\n"))["qid"].tolist() == ["q1"]  # a file opened as text
    assert read_qrels(io.BytesIO(b"BZh9 0 d1 1\n"))["qid"].tolist() == ["BZh9"]  # text, not a bzip2 header


def test_write_run_and_qrels_arguments(tmp_path):
    for depth in (0, -1, 2.5):
        with pytest.raises(ValueError, match="depth must be a positive int"):
            write_run(tmp_path / "r", [0.3, 0.2], qid=[1, 1], depth=depth)
    with pytest.raises(ValueError, match="tag must be a non-empty word without whitespace"):
        write_run(tmp_path / "r", [0.3, 0.2], qid=[1, 1], tag="my\trun")
    # Negative grades ("in the pool, not judged" to trec_eval) are written as read.
    write_qrels(tmp_path / "q", [-1, 0, 2], qid=[1, 1, 1])
    assert read_qrels(tmp_path / "q")["relevance"].tolist() == [-1, 0, 2]


def test_qrels_frame_is_what_pandas_users_expect(tmp_path):
    write_qrels(tmp_path / "q", [0, 2], qid=["x", "x"], doc_ids=["a", "b"])
    frame = read_qrels(tmp_path / "q")
    pd.testing.assert_frame_equal(frame, pd.DataFrame({"qid": ["x", "x"], "iteration": ["0", "0"],
                                                       "docno": ["a", "b"], "relevance": [0, 2]}))


def test_evaluate_runs_equals_pytrec_eval_and_compares(shared_data, tmp_path):
    """Two runs of the same queries from files: per-query values as trec_eval's, then a comparison."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from rankkit.evaluation import compare, evaluate_runs

    _, y, score, qid = _runs(shared_data)[0]
    other = _runs(shared_data)[2][2]
    write_qrels(tmp_path / "qrels", y, qid=qid)
    write_run(tmp_path / "a", score, qid=qid, tag="a")
    write_run(tmp_path / "b", other, qid=qid, tag="b")
    qrels = read_qrels(tmp_path / "qrels")
    runs = {"a": read_run(tmp_path / "a"), "b": read_run(tmp_path / "b")}
    res = evaluate_runs(runs, qrels, metrics=["map", "precision@5"],
                        empty=0.0)
    qrels_dict = {}
    for row in qrels.itertuples():
        qrels_dict.setdefault(row.qid, {})[row.docno] = int(row.relevance)
    for name, run in runs.items():
        run_dict = {}
        for row in run.itertuples():
            run_dict.setdefault(row.qid, {})[row.docno] = row.score
        want = pytrec_eval.RelevanceEvaluator(qrels_dict, {"map", "P_5"}).evaluate(run_dict)
        for metric, measure in (("map", "map"), ("precision@5", "P_5")):
            part = res[(res.ranker == name) & (res.metric == metric)]
            got = dict(zip(part["query"], part["value"]))
            assert got.keys() == want.keys()
            assert all(abs(got[q] - want[q][measure]) <= 1e-9 for q in got)
    table = compare(res, n_resamples=500).table
    assert len(table) == 4 and table["n_queries"].eq(len(qrels_dict)).all()
    with pytest.raises(TypeError, match="non-empty dict"):
        evaluate_runs([runs["a"]], qrels)
    # Paths are read; anything else is named (a str was indexed as a DataFrame).
    by_path = evaluate_runs({"a": tmp_path / "a", "b": str(tmp_path / "b")}, str(tmp_path / "qrels"),
                            metrics=["map", "precision@5"], empty=0.0)
    pd.testing.assert_frame_equal(by_path, res)
    with pytest.raises(TypeError, match=r"runs\['a'\] must be a DataFrame from rankkit.trec.read_run"):
        evaluate_runs({"a": run_dict}, qrels)
    with pytest.raises(TypeError, match=r"qrels must be a DataFrame from rankkit.trec.read_qrels"):
        evaluate_runs(runs, qrels_dict)
    # ties= and doc_ids= reached evaluate twice ("got multiple values for keyword argument").
    with pytest.raises(ValueError, match=r"ties must be 'trec' or 'trec_double', got 'worst'"):
        evaluate_runs(runs, qrels, ties="worst")
    with pytest.raises(TypeError, match=r"evaluate_runs got doc_ids: the document ids are the runs'"):
        evaluate_runs(runs, qrels, doc_ids=qid)
    with pytest.raises(ValueError, match="gain must be"):
        evaluate_runs(runs, qrels, metrics="map", gain="linaer")


def test_scores_equal_in_single_precision_are_trec_eval_ties(tmp_path):
    """trec_eval reads scores into a C float: 12.345678901 and 12.345678902 are a tie it breaks by
    docno ("z" before "a"), so the relevant "a" is at rank 2, not at rank 1 as in float64."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from rankkit.evaluation import evaluate_runs

    score, ids, y = np.array([12.345678901, 12.345678902, 3.0]), ["z", "a", "m"], [0, 1, 0]
    run_path, qrels_path = _write(tmp_path, y, score, ["q1"] * 3, doc_ids=ids)
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    assert sorted(run["score"]) == sorted(score)  # the file keeps float64
    assert run["docno"].tolist() == ["z", "a", "m"]  # ranks written in trec_eval's order
    want = pytrec_eval.RelevanceEvaluator({"q1": dict(zip(ids, y))}, {"recip_rank", "ndcg"}).evaluate(
        {"q1": dict(zip(run["docno"], run["score"]))})["q1"]
    assert want["recip_rank"] == 0.5
    y_a, s_a, q_a, d_a = align(run, qrels)
    assert mrr_score(y_a, s_a, qid=q_a, ties="trec", doc_ids=d_a) == want["recip_rank"]
    assert ndcg_score(y_a, s_a, qid=q_a, ties="trec", doc_ids=d_a, gain="linear") == pytest.approx(want["ndcg"])
    assert evaluate_runs({"r": run}, qrels, metrics="mrr")["value"].tolist() == [want["recip_rank"]]


def test_trec_double_equals_trec_eval_10(tmp_path):
    """trec_eval 10 reads the scores in double precision: scores equal in float32 but not in float64
    are ranked by score there, by document id in trec_eval 9 (``ties="trec"``). The expected values
    were printed by trec_eval 10.0 (``trec_eval -q -m ndcg -m map -m recip_rank -m P.3 qrels run``,
    four decimals) on these files: 6 queries of 8 documents, scores 10, 11 or 12 plus 0 or 1e-9."""
    from rankkit.evaluation import evaluate_runs

    base = "212212202021111110012122211012102112211111111220"
    tiny = "000110011111110111010000101101110010100010000010"
    grades = "020120101020210020002220210210011211121112200200"
    run, qrels = [], []
    for i, (b, e, g) in enumerate(zip(base, tiny, grades)):
        q, d = f"q{i // 8}", f"d{i % 8}"
        run.append(f"{q} Q0 {d} {i % 8 + 1} {10 + int(b) + int(e) * 1e-9!r} r")
        qrels.append(f"{q} 0 {d} {g}")
    (tmp_path / "run").write_text("\n".join(run) + "\n")
    (tmp_path / "qrels").write_text("\n".join(qrels) + "\n")
    want = {  # query: ndcg, map, recip_rank, P_3
        "q0": (0.7179, 0.7679, 1.0, 0.6667), "q1": (0.9148, 0.8875, 1.0, 0.6667),
        "q2": (0.7316, 0.6083, 0.5, 0.6667), "q3": (0.6484, 0.5193, 0.5, 0.3333),
        "q4": (0.8241, 1.0, 1.0, 1.0), "q5": (0.6693, 0.5595, 0.5, 0.6667),
    }
    metrics = ["ndcg", "map", "mrr", "precision@3"]
    kwargs = dict(metrics=metrics, gain="linear", empty=0.0)
    got = evaluate_runs({"r": tmp_path / "run"}, tmp_path / "qrels", ties="trec_double", **kwargs)
    table = got.pivot(index="query", columns="metric", values="value")[metrics]
    np.testing.assert_allclose(table.loc[list(want)].to_numpy(), np.array(list(want.values())), atol=5e-5)
    single = evaluate_runs({"r": tmp_path / "run"}, tmp_path / "qrels", **kwargs)
    assert np.abs(single["value"].to_numpy() - got["value"].to_numpy()).max() > 0.05  # trec_eval 9's other ties
    # The metric functions agree with evaluate_runs on the aligned arrays.
    y, score, qid, doc_ids = align(read_run(tmp_path / "run"), read_qrels(tmp_path / "qrels"))
    assert ndcg_score(y, score, qid=qid, ties="trec_double", doc_ids=doc_ids, gain="linear", per_query=True) == \
        pytest.approx(table["ndcg"].to_numpy(), abs=0)


def test_a_line_with_a_missing_field_is_an_error(tmp_path):
    """A later line with fewer fields than the first was padded with NaN: a run line without its tag
    was read as tag NaN (trec_eval refuses the file), a qrels line without its grade gave 'relevance nan'."""
    (tmp_path / "run").write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 0.5\n")
    with pytest.raises(ValueError, match=r"every run line must have 6 whitespace-separated fields .*; line 2 has 5\.$"):
        read_run(tmp_path / "run")
    (tmp_path / "qrels").write_text("q1 0 a 1\nq1 b 0\n")
    with pytest.raises(ValueError, match=r"every qrels line must have 4 .*; line 2 has 3\.$"):
        read_qrels(tmp_path / "qrels")


def test_ids_are_written_as_given_and_every_one_is_checked(tmp_path):
    """A '"' in an id was CSV-quoted ('a"b' written as '"a""b"', another docno to trec_eval, which
    reads no quotes), and only the first 100,000 ids were checked for spaces."""
    write_run(tmp_path / "run", [0.5, 0.4], qid=['q"1', 'q"1'], doc_ids=['a"b', "'c'"])
    write_qrels(tmp_path / "qrels", [1, 0], qid=['q"1', 'q"1'], doc_ids=['a"b', "'c'"])
    assert (tmp_path / "run").read_text().splitlines()[0] == 'q"1 Q0 a"b 1 0.5 rankkit'
    assert (tmp_path / "qrels").read_text().splitlines()[0] == 'q"1 0 a"b 1'
    assert read_run(tmp_path / "run")["docno"].tolist() == ['a"b', "'c'"]
    assert read_qrels(tmp_path / "qrels")["qid"].tolist() == ['q"1', 'q"1']
    n = 100_005
    ids = np.array([f"d{i}" for i in range(n)], dtype=object)
    ids[-1] = "bad id"
    with pytest.raises(ValueError, match="doc_ids has the id 'bad id'"):
        write_run(tmp_path / "big", np.zeros(n), qid=np.arange(n) // 5, doc_ids=ids)
    with pytest.raises(ValueError, match="doc_ids has the id 'bad id'"):
        write_qrels(tmp_path / "big", np.zeros(n), qid=np.arange(n) // 5, doc_ids=ids)


def test_ties_trec_on_raw_scores_compares_them_in_single_precision():
    """``ties="trec"`` on a model's float64 predictions gives trec_eval's number: scores equal in
    single precision are a tie broken by docno (here "z" first), whatever their float64 digits."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    score, ids, y = np.array([12.345678901, 12.345678902, 3.0]), ["z", "a", "m"], [0, 1, 0]
    want = pytrec_eval.RelevanceEvaluator({"q1": dict(zip(ids, y))}, {"recip_rank"}).evaluate(
        {"q1": dict(zip(ids, score.tolist()))})["q1"]["recip_rank"]
    assert want == 0.5
    assert mrr_score(y, score, qid=[0] * 3, ties="trec", doc_ids=ids) == want
    # Scores that differ in single precision keep their order.
    assert mrr_score(y, [12.3456, 12.3457, 3.0], qid=[0] * 3, ties="trec", doc_ids=ids) == 1.0


def test_evaluate_with_trec_ties_compares_raw_scores_in_single_precision():
    from rankkit.evaluation import evaluate

    score, ids, y = np.array([12.345678901, 12.345678902, 3.0]), ["z", "a", "m"], [0, 1, 0]
    out = evaluate({"r": score}, None, y, qid=[0] * 3, metrics=["mrr"], ties="trec", doc_ids=ids)
    assert out["value"].tolist() == [0.5]


def test_write_qrels_refuses_a_document_judged_twice_for_one_query(tmp_path):
    path = tmp_path / "q.txt"
    with pytest.raises(ValueError, match="'a' twice for qid 'q1'"):
        write_qrels(path, [1, 0], qid=["q1", "q1"], doc_ids=["a", "a"])
    assert not path.exists()
    assert write_qrels(path, [1, 0], qid=["q1", "q2"], doc_ids=["a", "a"]) == 2  # other queries: fine


def test_ids_trec_eval_would_lose_or_merge_are_refused(tmp_path):
    """A query id starting with '#' is a comment line to trec_eval and read_run: the query
    vanished from run and qrels alike, and the mean was over fewer queries without a word.
    Missing ids were written as "None"/"nan", one query of them all."""
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    for write, values in ((write_run, [3, 2, 1, 3, 2, 1]), (write_qrels, [1, 0, 0, 0, 0, 1])):
        with pytest.raises(ValueError, match=r"qid has the id '#5': a line starting with '#' is a comment"):
            write(run, values, qid=["#5"] * 3 + ["7"] * 3)
    assert not run.exists()
    assert write_run(run, [3, 2, 1], qid=["7"] * 3, doc_ids=["#a", "b", "c"]) == 3  # not first on the line: an id
    assert read_run(run)["docno"].tolist() == ["#a", "b", "c"]
    for qid, doc_ids, name in (([7, None, None], None, "qid"), ([7, np.nan, 8], None, "qid"),
                               ([7, 7, 7], ["a", None, "c"], "doc_ids")):
        with pytest.raises(ValueError, match=rf"{name} contains missing values"):
            write_run(run, [0.1, 0.9, 0.5], qid=qid, doc_ids=doc_ids)
        with pytest.raises(ValueError, match=rf"{name} contains missing values"):
            write_qrels(qrels, [1, 0, 1], qid=qid, doc_ids=doc_ids)


def test_grades_beyond_int64_are_errors_not_wrapped(tmp_path):
    """1e20 was written as -9223372036854775808 and read back so (then clipped to 0: not relevant)."""
    path = tmp_path / "qrels"
    with pytest.raises(ValueError, match=r"grade 1e\+20, beyond the 64-bit integers"):
        write_qrels(path, [0, 1e20], qid=[1, 1])
    path.write_text("q1 0 d1 99999999999999999999\nq1 0 d2 1\n")
    with pytest.raises(ValueError, match=r"line 1 has the relevance '99999999999999999999', beyond the 64-bit"):
        read_qrels(path)
    path.write_text("q1 0 d1 9223372036854775807\nq1 0 d2 -9223372036854775808\n")  # int64's own limits
    assert read_qrels(path)["relevance"].tolist() == [2**63 - 1, -(2**63)]
    path.write_text("q1 0 d1 9223372036854775808\n")
    with pytest.raises(ValueError, match=r"line 1 has the relevance '9223372036854775808', beyond the 64-bit"):
        read_qrels(path)


def test_scores_beyond_float_overflow_above_its_largest_as_in_trec_eval():
    """trec_eval holds scores as C floats: 1e39 overflows to infinity, above float's largest
    value (rankkit clipped it to that value, a tie broken by docno)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    fmax = float(np.finfo(np.float32).max)
    for score in ([1e39, fmax], [-fmax, -1e39], [1e39, 1e40]):
        ids, y = ["a", "b"], [0, 1]
        want = pytrec_eval.RelevanceEvaluator({"q": dict(zip(ids, y))}, {"ndcg"}).evaluate(
            {"q": dict(zip(ids, score))})["q"]["ndcg"]
        got = ndcg_score(y, score, qid=[0, 0], ties="trec", doc_ids=ids, gain="linear", empty=0.0)
        assert got == pytest.approx(want, abs=1e-12), score


def test_files_that_are_not_utf8_and_hand_made_frames_with_duplicates(tmp_path):
    path = tmp_path / "run"
    path.write_bytes("q1 Q0 caf\xe9 1 1.0 r\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"is not UTF-8 text .*convert it to UTF-8"):
        read_run(path)
    run = pd.DataFrame({"qid": ["q"] * 2, "docno": ["a", "a"], "score": [1.0, 2.0]})
    qrels = pd.DataFrame({"qid": ["q"], "docno": ["a"], "relevance": [1]})
    with pytest.raises(ValueError, match=r"run: document 'a' is listed twice for query 'q'"):
        align(run, qrels)
