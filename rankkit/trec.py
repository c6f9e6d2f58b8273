"""TREC run and qrels files: a model's output into ``trec_eval`` and back.

A *run* lists, for every query, the ranked documents of one system, one line
each::

    qid Q0 docno rank score tag

a *qrels* file the judged documents of every query::

    qid 0 docno relevance

(whitespace-separated; ``Q0`` and ``0`` are unused columns; blank lines and
lines starting with ``#`` are skipped: trec_eval 10 reads such comment lines
too). ``trec_eval``
ranks a run by ``score`` descending, ties by ``docno`` descending as strings,
and ignores the ``rank`` column. Up to version 9.0.8 (the one pytrec_eval
and ir_measures bundle) it reads the scores into single precision (a C
``float``), so scores that differ only past about 7 significant digits are
ties to it: ``ties="trec"`` in :mod:`rankkit.metrics` compares them so.
trec_eval 10 reads them in double precision: ``ties="trec_double"``.
:func:`write_run` writes ranks in the single-precision order and the scores
in full (``repr``), so the file reads back to the exact float64 scores,
which :func:`align` returns.

:func:`align` turns a run and qrels into per-row arrays for the metrics of
:mod:`rankkit.metrics` with ``ties="trec"``, under trec_eval's conventions:
a retrieved document absent from the qrels is non-relevant. Two choices
differ from trec_eval's silent defaults and are errors instead, because each
changes the numbers without a trace: queries in one file but not the other
(trec_eval skips run queries without judgments and, without ``-c``, drops
judged queries the run misses; ``missing_queries="drop"`` does the same
explicitly), and relevant judged documents the run does not rank (they count
in trec_eval's recall, R-precision, MAP and ideal DCG, while rankkit's
metrics are defined on the ranked list; rank every judged document, as
:func:`write_run` does from predictions on all rows).
"""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
import numbers
import re

import numpy as np
import pandas as pd

from rankkit._groups import make_groups
from rankkit._metrics._api import doc_id_key, trec_eval_scores
from rankkit._validation import check_labels, check_same_length, check_scores

__all__ = ["write_run", "write_qrels", "read_run", "read_qrels", "align"]

RUN_COLUMNS = ["qid", "Q0", "docno", "rank", "score", "tag"]
QRELS_COLUMNS = ["qid", "iteration", "docno", "relevance"]


def _text_ids(values, n, name):
    """Ids as strings without whitespace (a TREC file is whitespace-separated);
    a query id starting with ``#`` is refused (trec_eval 10 and :func:`read_run`
    read such a line as a comment, so the query would vanish from both files)."""
    raw = np.asarray(values)
    if raw.ndim == 1 and raw.dtype.kind in "fO" and pd.isna(raw).any():
        # astype(str) wrote "None" and "nan": rows of different missing ids became one query.
        raise ValueError(f"{name} contains missing values (None/NaN); every row needs an id.")
    text = raw.astype(str)
    if text.ndim != 1 or text.shape[0] != n:
        raise ValueError(f"{name} must hold one id per row: got shape {text.shape} for {n} rows.")
    if name == "qid" and n:
        comment = np.flatnonzero(np.char.startswith(text, "#"))
        if comment.size:
            raise ValueError(f"qid has the id {str(text[comment[0]])!r}: a line starting with '#' is a comment to "
                             "read_run and trec_eval 10, so the query would be dropped from the run and the qrels "
                             "without a trace. Rename the query ids (e.g. strip the '#').")
    # Every id, not a prefix: an id with a space past the first rows wrote a line of 7 fields.
    as_series = pd.Series(text, dtype=object)
    bad = np.flatnonzero(((as_series == "") | as_series.str.contains(r"\s", regex=True)).to_numpy())
    if bad.size:
        raise ValueError(f"{name} has the id {str(text[bad[0]])!r}: TREC files are whitespace-separated, so ids "
                         "must be non-empty and contain no spaces.")
    return text


def _default_doc_ids(n):
    """``D0, D1, ...``: one id per row of the input, so a run and its qrels agree."""
    return np.array([f"D{i}" for i in range(n)])


def trec_order(y_score, qid, doc_ids):
    """Row indices by query (first appearance), then score descending (in
    single precision, as trec_eval holds it), then document id descending as
    ``strcmp`` compares them: trec_eval's order."""
    groups = make_groups(qid, len(y_score))
    key = doc_id_key(doc_ids, groups)
    codes = groups.sorted_codes()
    rows = groups.sort(np.arange(len(y_score)))
    order = np.lexsort((-key, -trec_eval_scores(groups.sort(y_score)), codes))
    return rows[order], codes[order]


def write_run(path, y_score, *, qid, doc_ids=None, tag="rankkit", depth=None):
    """Write predictions as a TREC run file (``qid Q0 docno rank score tag``).

    Parameters
    ----------
    path : str or path-like
        File to write.
    y_score : array-like of shape (n_samples,)
        Predicted scores (finite); larger means ranked higher.
    qid : array-like of shape (n_samples,)
        Query id of every row.
    doc_ids : array-like of shape (n_samples,) or None, default=None
        Document id (``docno``) of every row; ``None`` writes ``D<row>``, the
        ids :func:`write_qrels` writes for the same rows.
    tag : str, default="rankkit"
        The run's name (last column).
    depth : int or None, default=None
        Keep only the top ``depth`` documents of each query (TREC runs are
        often cut at 1000); ``None`` writes every document.

    Returns
    -------
    int
        Number of lines written.

    Examples
    --------
    >>> import os, tempfile
    >>> from rankkit.trec import read_run, write_run
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> write_run(path, [0.2, 0.9, 0.5], qid=[7, 7, 7], doc_ids=["a", "b", "c"])
    3
    >>> read_run(path)["docno"].tolist()
    ['b', 'c', 'a']
    """
    score = check_scores(y_score, name="y_score")
    n = score.shape[0]
    ids = _default_doc_ids(n) if doc_ids is None else _text_ids(doc_ids, n, "doc_ids")
    qtext = _text_ids(qid, n, "qid")
    check_same_length(y_score=score, qid=qtext, doc_ids=ids)
    if not isinstance(tag, str) or not tag or any(c.isspace() for c in tag):
        raise ValueError(f"tag must be a non-empty word without whitespace, got {tag!r}.")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, numbers.Integral) or depth < 1):
        raise ValueError(f"depth must be a positive int (documents kept per query) or None, got {depth!r}.")
    rows, codes = trec_order(score, qtext, ids)
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    rank = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n])) + 1
    keep = slice(None) if depth is None else rank <= int(depth)
    frame = pd.DataFrame({"qid": qtext[rows], "Q0": "Q0", "docno": ids[rows], "rank": rank,
                          "score": [repr(float(v)) for v in score[rows]], "tag": tag})[keep]
    # QUOTE_NONE: the ids as given; the default wrote 'a"b' as '"a""b"', another id to trec_eval.
    frame.to_csv(path, sep=" ", header=False, index=False, quoting=csv.QUOTE_NONE)
    return len(frame)


def write_qrels(path, y_true, *, qid, doc_ids=None):
    """Write labels as a TREC qrels file (``qid 0 docno relevance``).

    ``relevance`` must be integers, as trec_eval reads them. ``doc_ids=None``
    writes ``D<row>``, the ids :func:`write_run` writes for the same rows.

    Returns
    -------
    int
        Number of lines written.
    """
    # Negative grades are trec_eval's "in the pool, not judged": allowed, as read_qrels reads them.
    y = check_labels(y_true, name="y_true", allow_negative=True)
    n = y.shape[0]
    if np.any(y != np.round(y)):
        raise ValueError("y_true must hold integer relevance grades for a qrels file (trec_eval reads integers).")
    if _beyond_int64(y).any():
        raise ValueError(f"y_true holds the grade {y[np.argmax(np.abs(y))]:g}, beyond the 64-bit integers trec_eval "
                         "reads; grades are small integers (rescale them).")
    ids = _default_doc_ids(n) if doc_ids is None else _text_ids(doc_ids, n, "doc_ids")
    qtext = _text_ids(qid, n, "qid")
    frame = pd.DataFrame({"qid": qtext, "iteration": "0", "docno": ids, "relevance": y.astype(np.int64)})
    # read_qrels and trec_eval refuse a document judged twice for one query: never write such a file.
    dup = frame.duplicated(["qid", "docno"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise ValueError(f"doc_ids has {row['docno']!r} twice for qid {row['qid']!r}: a qrels file judges each "
                         "document once per query; drop the duplicate rows.")
    frame.to_csv(path, sep=" ", header=False, index=False, quoting=csv.QUOTE_NONE)
    return n


#: The first bytes of the compressed formats read, and how to decompress them (bzip2: "BZh", the block
#: size digit, then the block magic, so that a text starting "BZh" stays text).
_COMPRESSED = ((re.compile(rb"\x1f\x8b"), gzip.decompress), (re.compile(rb"BZh[1-9]1AY&SY"), bz2.decompress),
               (re.compile(rb"\xfd7zXZ\x00"), lzma.decompress))
_UNREAD = {b"PK\x03\x04": "a ZIP archive", b"\x28\xb5\x2f\xfd": "Zstandard-compressed"}


def _text_lines(path):
    """The lines of a text file or an open file: UTF-8 (a byte-order mark
    dropped), gzip, bzip2 or xz compressed whatever the file's name."""
    if hasattr(path, "read"):
        data = path.read()
    else:
        with open(path, "rb") as handle:
            data = handle.read()
    if isinstance(data, bytes):
        for magic, decompress in _COMPRESSED:
            if magic.match(data):
                data = decompress(data)
                break
        for magic, kind in _UNREAD.items():
            if data.startswith(magic):
                name = getattr(path, "name", "the file") if hasattr(path, "read") else path
                raise ValueError(f"{name} is {kind}: extract the file first (gzip, bzip2 and xz are read).")
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            name = getattr(path, "name", "the file") if hasattr(path, "read") else path
            raise ValueError(f"{name} is not UTF-8 text ({error.reason} at byte {error.start}): convert it to UTF-8 "
                             "(e.g. iconv -f latin1 -t utf-8) or open it with its encoding and pass the file "
                             "object.") from None
    return data.removeprefix("\ufeff").splitlines()  # a byte-order mark, also from a file opened as text


def _read(path, columns, what):
    """``(frame, line numbers)``: the fields of every line as strings, the
    1-based line of every row (for errors). Blank lines and comment lines,
    whose first non-blank character is ``#`` (trec_eval 10 reads comment
    lines too), are skipped. Ids are strings as written: "NA", "null" or
    "nan" are ids."""
    rows, numbers = [], []
    for number, line in enumerate(_text_lines(path), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != len(columns):
            raise ValueError(f"{path}: every {what} line must have {len(columns)} whitespace-separated fields "
                             f"({' '.join(columns)}); line {number} has {len(fields)}.")
        rows.append(fields)
        numbers.append(number)
    if not rows:
        raise ValueError(f"{path}: the {what} file is empty.")
    return pd.DataFrame(rows, columns=columns, dtype=str), numbers


def read_run(path):
    """Read a TREC run file (a path, or an open file) into a DataFrame.

    Columns ``qid``, ``Q0``, ``docno``, ``tag`` (str), ``rank`` (int) and
    ``score`` (float64), in file order. A score that is not a finite number,
    and a document listed twice for one query, are errors (trec_eval refuses
    duplicates too).
    """
    frame, lines = _read(path, RUN_COLUMNS, "run")
    frame["rank"] = _integers(frame["rank"], path, "rank", lines)
    text = frame["score"]
    frame["score"] = pd.to_numeric(text, errors="coerce").astype(np.float64)
    if not np.all(np.isfinite(frame["score"])):
        row = int(np.flatnonzero(~np.isfinite(frame["score"]))[0])
        raise ValueError(f"{path}: line {lines[row]} has the score {text[row]}; scores must be finite numbers.")
    _check_unique(frame, path)
    return frame


def read_qrels(path):
    """Read a TREC qrels file (a path, or an open file) into a DataFrame.

    Columns ``qid``, ``iteration``, ``docno`` (str) and ``relevance`` (int),
    in file order. A document judged twice for one query is an error.
    """
    frame, lines = _read(path, QRELS_COLUMNS, "qrels")
    frame["relevance"] = _integers(frame["relevance"], path, "relevance", lines)
    _check_unique(frame, path)
    return frame


def _integers(text, path, field, lines):
    """A column of 64-bit integers, or an error naming the file, the line and the value."""
    values = pd.to_numeric(text, errors="coerce")
    as_float = values.to_numpy(np.float64)
    bad = np.flatnonzero(~np.isfinite(as_float) | (values != np.round(values)).to_numpy())
    if bad.size:
        row = int(bad[0])
        raise ValueError(f"{path}: line {lines[row]} has the {field} {text[row]!r}; it must be an integer.")
    # Beyond int64 the cast wrapped around (1e20 read as -9.2e18).
    beyond = np.flatnonzero(_beyond_int64(values))
    if beyond.size:
        row = int(beyond[0])
        raise ValueError(f"{path}: line {lines[row]} has the {field} {text[row]!r}, beyond the 64-bit integers "
                         "trec_eval reads.")
    return values.astype(np.int64)


def _beyond_int64(values):
    """Which integer values (int64, uint64 or float64, as pandas parses them) int64 does not hold."""
    values = np.asarray(values)
    if values.dtype.kind == "u":
        return values > np.iinfo(np.int64).max
    if values.dtype.kind == "f":  # -2**63 and 2**63 are exact in float64
        return (values >= 2.0**63) | (values < -(2.0**63))
    return np.zeros(values.shape, dtype=bool)


def _check_unique(frame, path):
    dup = frame.duplicated(["qid", "docno"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise ValueError(f"{path}: document {row['docno']!r} is listed twice for query {row['qid']!r}; "
                         "each document may appear once per query.")


def align(run, qrels, *, missing_queries="error", relevance_level=1):
    """Per-row arrays of a run and its qrels, for :mod:`rankkit.metrics` with trec_eval's ties.

    Parameters
    ----------
    run, qrels : DataFrame
        As returned by :func:`read_run` and :func:`read_qrels`.
    missing_queries : {"error", "drop"}, default="error"
        Queries in one file but not in the other: an error that names them,
        or dropped (trec_eval's default without ``-c``: the mean is over the
        queries of both files).
    relevance_level : int, default=1
        trec_eval's ``-l`` (a positive int): a document is relevant iff its
        grade is at least this. It is used here only to find judged
        documents the run does not rank and trec_eval would count: those of
        grade at least this, and every positive grade (the ideal DCG counts
        them whatever ``-l`` is); pass ``relevance_threshold=relevance_level
        - 1`` to the metrics.

    Returns
    -------
    y_true, y_score : ndarray of float64
        Grade (0 for a document without judgment) and score of every run
        line, as read (``ties="trec"`` compares them in single precision,
        ``"trec_double"`` as they are).
    qid, doc_ids : ndarray of str
        Query and document id of every run line; pass them as ``qid=`` and
        ``doc_ids=`` with ``ties="trec"`` or ``"trec_double"``.
    """
    if missing_queries not in ("error", "drop"):
        raise ValueError(f"missing_queries must be 'error' or 'drop', got {missing_queries!r}.")
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, numbers.Integral) or relevance_level < 1:
        # At 0 or below trec_eval would count unjudged documents apart (grade -1), which the grade 0 given them
        # here cannot tell from judged non-relevant ones (pytrec_eval refuses such levels too).
        raise ValueError(f"relevance_level must be a positive int (trec_eval's -l), got {relevance_level!r}.")
    _check_unique(run, "run")  # frames made by hand, not read_run's
    _check_unique(qrels, "qrels")
    run_q, qrels_q = set(run["qid"]), set(qrels["qid"])
    if run_q != qrels_q:
        only_run, only_qrels = sorted(run_q - qrels_q), sorted(qrels_q - run_q)
        if missing_queries == "error":
            raise ValueError(
                f"The run's queries do not match the qrels': {len(only_run)} only in the run "
                f"{only_run[:5]}, {len(only_qrels)} only in the qrels {only_qrels[:5]}. Evaluate the "
                "same queries, or pass missing_queries='drop' to keep those in both (trec_eval's default)."
            )
        both = run_q & qrels_q
        run, qrels = run[run["qid"].isin(both)], qrels[qrels["qid"].isin(both)]
    merged = run[["qid", "docno", "score"]].merge(
        qrels[["qid", "docno", "relevance"]], on=["qid", "docno"], how="left", validate="one_to_one")
    relevant = qrels[(qrels["relevance"] >= relevance_level) | (qrels["relevance"] > 0)]
    unranked = relevant.merge(run[["qid", "docno"]], on=["qid", "docno"], how="left", indicator=True)
    unranked = unranked[unranked["_merge"] == "left_only"]
    if len(unranked):
        first = unranked.iloc[0]
        raise ValueError(
            f"The run does not rank {len(unranked)} relevant judged document(s) (e.g. {first['docno']!r} "
            f"of query {first['qid']!r}). rankkit's metrics are defined on the ranked list, while trec_eval "
            "counts unranked relevant documents in recall, R-precision, MAP and the ideal DCG; rank every "
            "judged document (write_run on predictions for all rows)."
        )
    # trec_eval: a negative grade is "in the pool, not judged", non-relevant like no grade at all.
    y = merged["relevance"].fillna(0).clip(lower=0).to_numpy(np.float64)
    return y, merged["score"].to_numpy(np.float64), merged["qid"].to_numpy(str), merged["docno"].to_numpy(str)
