"""``python -m rankkit``: train and compare rankers on held-out queries.

The data is synthetic (:func:`rankkit.datasets.make_ranking`, no download)
or a LETOR folder (``--data DIR``: ``DIR/Fold1/{train,vali,test}.txt[.gz]``,
or a fold folder itself; without ``vali`` a fifth of the training queries
validates). Every ranker is trained with the same trees, depth and learning
rate, records NDCG@10 on the validation queries every iteration (the
learning curves of ``--plot``), and is judged once on the test queries:
NDCG@10, MRR, MAP and ERR@10 (worst-order ties; a query without a relevant
document scores 1.0 in NDCG, MRR and MAP and 0 in ERR, which stops at no
document; ERR with Chapelle's mapping) and the fit time. A second
table (:func:`rankkit.evaluation.compare`) gives every mean a 95% bootstrap
interval over the test queries and marks with ``*`` the rankers that differ
significantly from the best one on NDCG@10 (paired t-tests, Holm-corrected
over the table), with the queries each wins, ties and loses against it. A
line is printed when each ranker starts and ends. The fit time excludes numba's
one-time compilation of rankkit's kernels (a 2-tree fit on a few queries
runs first; the compiled kernels are cached for later runs).

With ``--plot FILE`` a figure is saved (matplotlib needed): the validation
NDCG@10 curve of every rankkit ranker, and the per-query comparison of the
best two rankers on the test queries (:mod:`rankkit.plotting`).
"""

import argparse
import io
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from rankkit._params import BOOSTING_PARAMS

#: ``--rankers`` name -> (label, short label, class name in rankkit or None, objective parameters).
RANKERS = {
    "stochasticrank": ("StochasticRank NDCG@10", "StochasticRank", "StochasticRankRanker", {"metric": "ndcg", "k": 10}),
    "yetirank": ("YetiRank", "YetiRank", "YetiRanker", {}),
    "yetiloss": ("YetiLoss NDCG@10", "YetiLoss", "YetiRanker", {"metric": "ndcg", "k": 10}),
    "lambdamart": ("LambdaMART NDCG@10", "LambdaMART", "LambdaMARTRanker", {"metric": "ndcg", "k": 10}),
    "xendcg": ("XE-NDCG", "XE-NDCG", "XENDCGRanker", {}),
    "queryrmse": ("QueryRMSE", "QueryRMSE", "QueryRMSERanker", {}),
    "xgboost": ("XGBoost rank:ndcg (built-in)", "XGBoost", None, {}),
}


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m rankkit", description=__doc__.splitlines()[0].split(": ", 1)[1],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--data", metavar="DIR", default=None,
                        help="LETOR folder (DIR/Fold1/train.txt[.gz], vali, test) instead of synthetic data")
    parser.add_argument("--rankers", default=",".join(RANKERS),
                        help=f"comma-separated, from: {', '.join(RANKERS)}")
    parser.add_argument("--n-queries", type=int, default=600, help="synthetic data: number of queries")
    parser.add_argument("--n-estimators", type=int, default=BOOSTING_PARAMS["n_estimators"].default,
                        help="trees of every ranker (the rankers' default)")
    parser.add_argument("--max-depth", type=int, default=6, help="depth of every tree")
    parser.add_argument("--learning-rate", type=float, default=BOOSTING_PARAMS["learning_rate"].default,
                        help="learning rate of every ranker (the rankers' default)")
    parser.add_argument("--backend", default="auto", help="auto (the rankers' default), xgboost, lightgbm or numba")
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="threads per fit (-1: all cores); one is fastest on data this small")
    parser.add_argument("--random-state", type=int, default=0,
                        help="seed of the synthetic data, the validation split and every ranker")
    parser.add_argument("--plot", metavar="FILE", default=None,
                        help="save a figure (FILE.png, .pdf, .svg, ...): learning curves and the best two "
                             "rankers query by query")
    return parser


def _rankers(text, parser):
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in RANKERS]
    if unknown or not names:
        parser.error(f"--rankers: unknown {unknown or 'empty list'}; choose from {', '.join(RANKERS)}")
    return list(dict.fromkeys(names))


def _fold_files(directory):
    """``{split: path}`` of a LETOR fold: ``DIR/Fold1`` if present, else ``DIR`` itself."""
    directory = Path(directory)
    fold = directory / "Fold1" if (directory / "Fold1").is_dir() else directory
    files = {}
    for split in ("train", "vali", "test"):
        for name in (f"{split}.txt", f"{split}.txt.gz"):
            if (fold / name).is_file():
                files[split] = fold / name
    missing = [split for split in ("train", "test") if split not in files]
    if missing:
        raise ValueError(
            f"--data {directory}: no {' or '.join(f'{m}.txt[.gz]' for m in missing)} in {fold} "
            "(a LETOR folder has Fold1/train.txt, vali.txt and test.txt, optionally gzipped)"
        )
    return files


def _load_fold(files):
    """The fold's files read alike: one-based feature ids (LETOR's), or
    zero-based for all if any file has a feature 0, so that a file whose
    feature 0 is always 0 (and left out) is not read shifted; and as many
    columns as the widest file has (a feature absent from one file is 0
    there)."""
    from rankkit.datasets import load_svmlight

    try:
        loaded = {part: load_svmlight(path, dense=True, zero_based=False) for part, path in files.items()}
    except ValueError as error:
        if "zero_based=True" not in str(error):
            raise
        loaded = {part: load_svmlight(path, dense=True, zero_based=True) for part, path in files.items()}
    width = max(X.shape[1] for X, _, _ in loaded.values())
    return {part: (np.pad(X, ((0, 0), (0, width - X.shape[1]))), y, qid) for part, (X, y, qid) in loaded.items()}


def load_data(args):
    """``(description, {"train": (X, y, qid), "vali": ..., "test": ...})``."""
    from rankkit.datasets import make_ranking
    from rankkit.model_selection import query_train_test_split

    if args.data is None:
        X, y, qid = make_ranking(args.n_queries, random_state=args.random_state)
        X_rest, X_te, y_rest, y_te, q_rest, q_te = query_train_test_split(
            X, y, qid=qid, test_size=0.25, random_state=args.random_state)
        name = f"make_ranking({args.n_queries}, random_state={args.random_state})"
        parts = {"rest": (X_rest, y_rest, q_rest), "test": (X_te, y_te, q_te)}
    else:
        files = _fold_files(args.data)
        loaded = _load_fold(files)
        for split, (_, y, _) in loaded.items():
            if y.size and y.min() < 0:  # LETOR's semi-supervised sets mark unjudged documents -1
                raise ValueError(f"--data: {files[split]} has the label {y.min():g}; rankers take relevance grades "
                                 ">= 0. Drop or relabel those documents first.")
        parts = {"rest" if "vali" not in files else "train": loaded["train"], "test": loaded["test"]}
        if "vali" in files:
            parts["vali"] = loaded["vali"]
        name = str(files["train"].parent)
    if len(np.unique(parts["test"][2])) < 2:
        raise ValueError("--data: the test file has one query; the paired tests need at least two.")
    if "rest" in parts:  # a fifth of the training queries validates
        X, y, qid = parts.pop("rest")
        if len(np.unique(qid)) < 2:
            raise ValueError("--data: the training file has one query and there is no vali.txt; a fifth of the "
                             "training queries would validate: give it at least two queries, or a vali.txt.")
        X_tr, X_va, y_tr, y_va, q_tr, q_va = query_train_test_split(
            X, y, qid=qid, test_size=0.2, random_state=args.random_state)
        parts["train"], parts["vali"] = (X_tr, y_tr, q_tr), (X_va, y_va, q_va)
    return name, parts


def _make(name, args):
    import rankkit

    _, _, cls_name, params = RANKERS[name]
    common = dict(n_estimators=args.n_estimators, max_depth=args.max_depth, learning_rate=args.learning_rate,
                  n_jobs=args.n_jobs, random_state=args.random_state)
    if cls_name is None:
        import xgboost

        return xgboost.XGBRanker(objective="rank:ndcg", tree_method="hist", **common)
    return getattr(rankkit, cls_name)(**params, **common, backend=args.backend, eval_metric="ndcg@10")


def _warm_up(model, data):
    """A 2-tree fit on a few queries: numba compiles (or loads from its cache)
    the kernels once, so the timed fit measures training only."""
    from sklearn.base import clone

    parts = []
    for split in ("train", "vali"):
        X, y, qid = data[split]
        rows = np.isin(qid, np.unique(qid)[:5])
        parts.append((X[rows], y[rows], qid[rows]))
    (X, y, qid), (X_va, y_va, q_va) = parts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # two trees on five queries may well grow no split
        clone(model).set_params(n_estimators=2).fit(X, y, qid=qid, eval_set=[(X_va, y_va)], eval_qid=[q_va])


def _test_metrics(y, pred, qid):
    from rankkit.metrics import err_score, map_score, mrr_score, ndcg_score

    return (ndcg_score(y, pred, qid=qid, k=10), mrr_score(y, pred, qid=qid), map_score(y, pred, qid=qid),
            err_score(y, pred, qid=qid, k=10, err_mapping="chapelle"))


def _print_comparison(results, random_scores, y, qid):
    """Intervals and paired tests against the best ranker on NDCG@10 (the same
    metric settings as the first table, so the means are equal)."""
    from rankkit.evaluation import compare, evaluate

    scores = {r["short"]: r["pred"] for r in results}
    scores["random scores"] = random_scores
    best = max(results, key=lambda r: r["metrics"][0])["short"]
    per_query = evaluate(scores, None, y, qid=qid, metrics=["ndcg@10", "mrr", "map", "err@10"])
    comparison = compare(per_query, baseline=best, test="t", correction="holm")
    print("\nConfidence intervals and significance against the best ranker on NDCG@10:\n")
    print(comparison.to_markdown(wtl=False), end="")
    ndcg = comparison.table[(comparison.table["metric"] == "ndcg@10") & (comparison.table["ranker"] != best)]
    counts = ", ".join(f"{r.ranker} {r.wins}/{r.ties}/{r.losses}" for r in ndcg.itertuples())
    print(f"NDCG@10 queries won/tied/lost against {best}: {counts}")


def _save_figure(path, results, test):
    """Learning curves of the rankkit rankers, and the best two query by query."""
    from matplotlib.figure import Figure

    from rankkit.plotting import plot_metric, plot_query_comparison

    curves = [r for r in results if getattr(r["model"], "evals_result_", None)]
    best = sorted(results, key=lambda r: r["metrics"][0], reverse=True)[:2]
    n_cols = max(1, len(curves))
    rows = [[r["short"] for r in curves] or ["empty"]]
    if len(best) == 2:
        rows.append(["queries"] * n_cols)
    fig = Figure(figsize=(max(10.0, 3.4 * n_cols), 3.6 * len(rows)), layout="constrained")
    axes = fig.subplot_mosaic(rows)
    for r in curves:
        plot_metric(r["model"], "ndcg@10", ax=axes[r["short"]], title=r["label"], ylabel="validation NDCG@10")
    if not curves:
        axes["empty"].set_axis_off()
    if len(best) == 2:
        second, first = best[1], best[0]
        y, qid = test[1], test[2]
        plot_query_comparison(y, second["pred"], first["pred"], qid=qid, metric="ndcg@10",
                              labels=(second["short"], first["short"]), ax=axes["queries"])
    fig.savefig(path, dpi=90)


#: The command-line option of each ranker parameter it sets.
_OPTIONS = {"n_estimators": "--n-estimators", "max_depth": "--max-depth", "learning_rate": "--learning-rate",
            "n_jobs": "--n-jobs", "random_state": "--random-state", "backend": "--backend"}


def _check_args(args, names, parser):
    """Every option checked before any data is loaded or any ranker trained:
    a bad value is a usage error naming the option, not a traceback after
    the first rankers have trained."""
    if args.random_state < 0:
        parser.error(f"--random-state must be >= 0, got {args.random_state}.")
    if args.data is None and args.n_queries < 10:
        parser.error(f"--n-queries must be at least 10 (a quarter of the queries tests, a fifth of the rest "
                     f"validates, and the paired tests need two test queries), got {args.n_queries}.")
    if args.n_estimators < 1:  # XGBoost's ranker would train nothing and report a constant model
        parser.error(f"--n-estimators must be >= 1, got {args.n_estimators}.")
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            parser.error("--plot needs matplotlib: pip install matplotlib (or 'rankkit[plot]')")
        folder = os.path.dirname(os.path.abspath(args.plot))
        if not os.path.isdir(folder):
            parser.error(f"--plot: the folder {folder} does not exist.")
        if os.path.isdir(args.plot):
            parser.error(f"--plot: {args.plot!r} is a folder; give a file name, such as compare.png.")
        if len(names) < 2 and all(RANKERS[name][2] is None for name in names):
            parser.error("--plot draws the learning curves of rankkit's rankers and the best two rankers query by "
                         "query: with XGBoost's own ranker alone there is nothing to draw. Add a ranker to "
                         "--rankers.")
        from matplotlib.figure import Figure

        formats = Figure().canvas.get_supported_filetypes()
        extension = os.path.splitext(args.plot)[1].lstrip(".").lower()
        if extension not in formats:
            parser.error(f"--plot: {args.plot!r} needs one of the extensions matplotlib writes: "
                         f"{', '.join('.' + f for f in sorted(formats))}.")
        try:  # some formats need more than matplotlib (.pgf: a TeX installation, to measure text)
            probe = Figure()
            probe.text(0.5, 0.5, "NDCG@10")
            probe.savefig(io.BytesIO(), format=extension)
        except Exception as exc:  # noqa: BLE001 -- whatever the backend raises, said before training
            parser.error(f"--plot: matplotlib cannot write .{extension} files here ({exc}); use .png or .pdf.")
    from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

    from rankkit._backends import get_backend

    if args.backend != "auto":
        try:
            get_backend(args.backend)
        except (ImportError, ValueError) as exc:
            parser.error(f"--backend: {exc}")
    # The options every ranker shares, checked by rankkit's rankers' rules even
    # when only XGBoost's own ranker runs (it would fail late, or read
    # --max-depth 0 as "no limit").
    checked = [name for name in names if RANKERS[name][2] is not None] or ["lambdamart"]
    # Then the limits of the engine that trains them (the numba engine's depth
    # of at most 16, XGBoost's and LightGBM's learning rate), which the
    # rankers check only when they start training.
    engine = get_backend("numba" if args.backend == "auto" else args.backend)
    common = {p: getattr(args, p) for p in _OPTIONS if p != "backend"}

    def usage_error(exc, help_text=""):
        option = next((o for p, o in _OPTIONS.items() if f"'{p}' parameter" in str(exc)), "an option")
        parser.error(f"{option}: {exc} {help_text}".rstrip())

    for name in checked:
        try:  # scikit-learn's parameter checks
            _make(name, args)._validate_params()
        except InvalidParameterError as exc:
            usage_error(exc)
    if any(RANKERS[name][2] is not None for name in names):
        try:
            validate_parameter_constraints(engine._engine_constraints, common, caller_name=f"backend={engine.name!r}")
        except InvalidParameterError as exc:
            usage_error(exc, engine._engine_constraints_help)


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    names = _rankers(args.rankers, parser)
    _check_args(args, names, parser)
    from rankkit._threads import limit_threads

    # The rankers take --n-jobs; the metrics and tests computed here run numba kernels too.
    with limit_threads(args.n_jobs):
        return _run(args, names, parser)


def _run(args, names, parser):
    try:
        name, data = load_data(args)
    except ValueError as exc:
        parser.error(str(exc))
    (X_tr, y_tr, q_tr), (X_va, y_va, q_va), test = data["train"], data["vali"], data["test"]
    X_te, y_te, q_te = test
    n_q = {split: len(np.unique(part[2])) for split, part in data.items()}
    print(f"data: {name}: {X_tr.shape[1]} features; queries (documents): train {n_q['train']} ({len(y_tr)}), "
          f"validation {n_q['vali']} ({len(y_va)}), test {n_q['test']} ({len(y_te)})")
    print(f"{len(names)} rankers: {args.n_estimators} trees of depth {args.max_depth}, learning rate "
          f"{args.learning_rate}, backend {args.backend}"
          + (" (the numba engine: the features are numeric)" if args.backend == "auto" else "")
          + f", n_jobs {args.n_jobs}", flush=True)

    results = []
    for i, key in enumerate(names, 1):
        label, short = RANKERS[key][:2]
        try:
            model = _make(key, args)
        except ImportError as exc:  # e.g. the built-in XGBoost ranker without xgboost
            print(f"[{i}/{len(names)}] {label}: skipped ({exc})", flush=True)
            continue
        print(f"[{i}/{len(names)}] {label}: fitting ...", flush=True)
        if RANKERS[key][2] is not None:
            _warm_up(model, data)
        else:  # XGBoost's ranker refuses a qid that decreases (MQ2008's Fold4 and Fold5 training files)
            order = np.argsort(q_tr, kind="stable")
        start = time.perf_counter()
        if RANKERS[key][2] is None:
            model.fit(X_tr[order], y_tr[order], qid=q_tr[order])
        else:
            model.fit(X_tr, y_tr, qid=q_tr, eval_set=[(X_va, y_va)], eval_qid=[q_va])
        seconds = time.perf_counter() - start
        pred = model.predict(X_te)
        metrics = _test_metrics(y_te, pred, q_te)
        results.append({"label": label, "short": short, "model": model, "pred": pred, "metrics": metrics,
                        "seconds": seconds})
        print(f"[{i}/{len(names)}] {label}: done in {seconds:.1f} s, test NDCG@10 {metrics[0]:.4f}", flush=True)

    width = max(len("random scores"), *(len(r["label"]) for r in results))
    header = f"{'model':<{width}}  {'NDCG@10':>7}  {'MRR':>6}  {'MAP':>6}  {'ERR@10':>6}  {'fit s':>6}"
    print(f"\nTest queries: {n_q['test']} (ties ordered worst first; a query without a relevant "
          "document scores 1.0, in ERR 0)")
    print(header)
    print("-" * len(header))
    for r in results:
        ndcg, mrr, map_, err = r["metrics"]
        print(f"{r['label']:<{width}}  {ndcg:7.4f}  {mrr:6.4f}  {map_:6.4f}  {err:6.4f}  {r['seconds']:6.1f}")
    rand = np.random.default_rng(args.random_state).normal(size=y_te.shape[0])
    ndcg, mrr, map_, err = _test_metrics(y_te, rand, q_te)
    print(f"{'random scores':<{width}}  {ndcg:7.4f}  {mrr:6.4f}  {map_:6.4f}  {err:6.4f}  {'':>6}")

    if results:
        _print_comparison(results, rand, y_te, q_te)

    if args.plot is not None:
        _save_figure(args.plot, results, test)
        print(f"\nfigure written to {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
