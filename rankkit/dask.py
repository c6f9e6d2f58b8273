"""Rankers that train on a Dask cluster, through ``xgboost.dask``.

``DaskLambdaMARTRanker``, ``DaskStochasticRankRanker``, ``DaskYetiRanker``,
``DaskXENDCGRanker``, ``DaskQueryRMSERanker`` and ``DaskRanker(objective=...)``
take the parameters of their in-memory rankers (derived from them, plus
``client``), fit on dask collections and return dask predictions, the pattern
of ``xgboost.dask`` and LightGBM's Dask estimators::

    from distributed import Client
    from rankkit.dask import DaskLambdaMARTRanker

    client = Client(...)                      # or client=... in the ranker
    df = dask.dataframe.read_parquet(...)     # features, a "qid" column, labels
    model = DaskLambdaMARTRanker(metric="ndcg@10", n_estimators=500)
    model.fit(df.drop(columns="label"), df["label"])
    scores = model.predict(df.drop(columns="label"))   # partitioned like df
    local = model.to_local()                  # a LambdaMARTRanker, pickles

How training works, and why:

1. **Whole queries per partition.** A list-wise gradient needs all the
   documents of a query at once, and ``xgboost.dask.train`` hands the custom
   objective each worker's rows with no regard for queries. So the rows
   (features, label, query id, weight) are first shuffled by a hash of the
   query id, so that each query lives in one partition, and each partition is
   sorted by query, the rows of a query in the caller's order. Rows may arrive
   in any order across partitions.
2. **Queries travel with their rows.** Each row carries its query's place
   ``(partition, query within the partition)`` in the DMatrix's label-bound
   fields (``label_lower_bound``/``label_upper_bound``: float32, exact for
   integers below 2^24, read by XGBoost only for survival objectives). On a
   worker the objective reads the query boundaries from them, whatever
   partitions XGBoost gave that worker and in whatever order, and checks that
   no query is cut. Both steps are :mod:`rankkit._dask_layout`'s.
3. **Randomness and bins independent of the layout.** A random objective
   keys each query's draws by a hash of the query id's value
   (:mod:`rankkit._random`), and every worker seeds iteration ``t`` as the
   in-memory ranker does, so a query gets the same gradients for the same
   scores on any worker. XGBoost's distributed quantile sketch merges the
   workers' summaries, so its cuts would depend on which worker holds which
   rows; instead the driver fits the bin edges (the numba engine's quantile
   rule, on every training row up to 200,000, beyond on rows picked by a hash
   of query id and feature values), XGBoost trains on the features' bin
   codes, whose cuts are exact on any layout, and the trained splits are moved
   back onto the raw features (:class:`rankkit._dask_layout.BinEdges`).
4. **The in-memory gradient pipeline, its global quantities global.** Each
   worker runs the in-memory ranker's own pipeline
   (:func:`rankkit._training.gradient_function`: gradients,
   sample weights, query units, Langevin noise) with its ``total`` hook
   all-reducing over the workers (``xgboost.collective``): the hessian sum
   and number of queries of the query units every iteration, and the first
   iteration's ``sum g^2`` and number of documents of
   ``diffusion_temperature="auto"``. Every worker thus uses the factor and the
   temperature of the whole training set, as in memory.
5. **Exact global eval metrics, the in-memory monitor.** XGBoost averages a
   custom metric over workers without weights; here each worker sums its
   queries' values of every ``eval_metric``, the sums and counts are
   all-reduced, and every worker records the exact means with the in-memory
   rule (:class:`rankkit._training.PartMonitor`, :meth:`~rankkit._training.EvalMonitor.record`:
   best iteration, early stopping), so all stop together; the driver replays the record.
   ``verbose=N`` lines are sent by worker 0 as Dask events and printed by
   the driver. ``callbacks`` are refused: they take the ranker and may stop
   training, but the iterations run on the workers.
6. **Exact SGLB, the one boosting loop.** Training is the XGBoost backend
   with a Dask data factory (:mod:`rankkit._backends.xgboost_dask`): every
   worker runs the in-memory loop's steps on XGBoost's margins, so with
   ``model_shrink_rate > 0`` it tracks the shrunk model on its own rows
   (training and eval) with the in-memory bookkeeping
   (:class:`rankkit._sglb.ShrunkScores`); the driver folds the shrink factors
   into the leaves once, as in memory, so the saved model predicts what
   training used.
7. **Click data, positions with their rows.** With ``position_bias="known"``
   each input partition debiases its own rows' clicks before the shuffle.
   With ``"estimate"`` the clicks stay the labels and each row's position
   rides beside its query's place in the label-bound field
   (:func:`rankkit._dask_layout.lay_out_partition`); every worker runs the
   estimator (:class:`rankkit._clicks.RegressionEM`,
   :class:`rankkit._clicks.PairwiseEstimator`) on its queries with the
   ``total`` hook of step 4, so its per-position sums, the scores' mean and
   variance and the logistic fit are all-reduced every iteration: every
   worker holds the propensities of all the rows, and the driver gets them
   back with the metric history (``position_bias_``).

Only XGBoost trains here (``backend="xgboost"``, or the default ``"auto"``, which
means it here: the Dask rankers grow depth-wise trees, not the in-memory
default's oblivious ones). Within a query, documents tied on score and label
take the caller's row order (as in memory). The bin edges (step 3) are
unweighted, as the numba engine's, and differ from the in-memory XGBoost
backend's weighted sketch on a feature with more distinct values than
``max_bin`` (``docs/scaling.md``). With fewer, and at most 200,000 training
rows (all of them then fit the edges), both separate every value: the trees
split the training rows alike and predict them alike (the thresholds between
two values differ: midpoints here, XGBoost's cut values in memory; and with
``sample_weight``, XGBoost's weighted sketch leaves out values that only rows
of weight 0 hold, which the edges here separate). Models on
different layouts agree up to the floating-point order of XGBoost's histogram
sums over the workers.
"""

from __future__ import annotations

import copy
import functools
import inspect

import numpy as np

try:
    import dask
    import dask.dataframe as dd
    import distributed
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "rankkit.dask needs dask[dataframe] and distributed: pip install 'rankkit[dask]'."
    ) from error

import pandas as pd
from sklearn.base import _fit_context
from sklearn.utils import check_array
from sklearn.utils.validation import check_is_fitted

from . import _estimators
from ._backends.xgboost_dask import XGBoostDaskBackend, worker_threads
from ._clicks import (
    MAX_POSITION, check_position, check_position_bias_params, click_settings, dask_click_settings,
    debiased_metric_settings, missing_positions_error, position_without_debiasing_error, propensity_table,
)
from ._dask_layout import (
    KEY,
    BinEdges,
    LaidOut,
    LocalReader,
    assemble,
    assemble_frames,
    check_aligned,
    dmatrix_factory,
    is_dask,
    lay_out_partition,
    partition_summary,
    quiet_shuffle_log,
    row_blocks,
    score_partition,
)
from ._groups import missing_qid_error
from ._metrics._callable import CALLABLE_METRICS, check_some_part_counted
from ._params import store_arguments
from ._random import seed_from
from ._validation import DASK_FIT_KEYWORDS, explains_other_libraries_keywords, per_eval_set
from ._sglb import shrink_schedule
from ._training import (
    EvalMonitor,
    PartMonitor,
    check_clicks_train_on_grades,
    check_err_scale_is_fixed,
    check_metric_settings_read,
    curvature_unit,
    eval_metrics,
    pin_err_max_label,
    uses_err_scale,
)
from .callback import CallbackList

__all__ = [
    "DaskRanker",
    "DaskStochasticRankRanker",
    "DaskYetiRanker",
    "DaskLambdaMARTRanker",
    "DaskXENDCGRanker",
    "DaskQueryRMSERanker",
]

def _report(loop):
    """What the driver gets back of a worker: its monitor's metric history
    and, when the propensities were estimated, their last estimate and the
    one the best iteration's tree was trained with (the same on every
    worker: all-reduced sums)."""
    clicks = getattr(loop.grad_fn, "clicks", None)
    monitor = None if loop.callback is None else loop.callback.monitor
    best = None
    if clicks is not None and monitor is not None and monitor.best_iteration is not None and clicks.trained_with:
        best = [float(v) for v in clicks.trained_with[monitor.best_iteration]]
    return {"history": {} if monitor is None else monitor.history,
            "best_rescored": [] if monitor is None else monitor.best_rescored,
            "position_bias": None if clicks is None else [float(v) for v in clicks.theta],
            "best_position_bias": best}


# ---------------------------------------------------------------------------
# The rankers.
# ---------------------------------------------------------------------------
def _predict_partition(x, backend, iteration_range=None):
    """Raw scores of one partition (float64), as the in-memory ranker computes them."""
    index = getattr(x, "index", None)
    x = check_array(x, dtype=(np.float64, np.float32), ensure_all_finite="allow-nan", ensure_min_samples=0)
    if not x.shape[0]:
        out = np.zeros(0)
    elif iteration_range is None:
        out = backend.predict(x)
    else:
        out = backend.predict(x, iteration_range[1], start_iteration=iteration_range[0])
    return out if index is None else pd.Series(out, index=index)


def _set_settings(settings, laid, objective):
    """The metric settings of a laid-out set: debiased click labels are
    scored in the gain they are written in (:func:`rankkit._clicks.debiased_metric_settings`)."""
    return debiased_metric_settings(settings, objective) if laid.debiased else settings


def _with_err_max_label(settings, max_label):
    """ERR's Chapelle mapping scales by the largest label: of all the rows, not
    of one worker's (the in-memory ranker sees all of them); ``max_label``
    None leaves it to the labels each part holds."""
    if max_label is not None and settings.get("err_mapping") is not None and settings.get("err_max_label") is None:
        return {**settings, "err_max_label": max_label}
    return settings


class _DaskRanker:
    """The Dask half of every ``rankkit.dask`` ranker; the other half is the
    in-memory ranker (``_local_class``), whose parameters, objective and
    fitted attributes it shares."""

    _local_class = None

    # -- client and checks -------------------------------------------------------
    def _get_client(self):
        client = self.client
        if client is None:
            try:
                client = distributed.default_client()
            except ValueError:
                raise ValueError(
                    f"{type(self).__name__} found no Dask client: start one (distributed.Client(...) or "
                    "distributed.LocalCluster) before fit/predict, or pass client=."
                ) from None
        if client.status in ("closing", "closed"):  # else "IOLoop is closed" from deep inside distributed
            raise ValueError(
                f"{type(self).__name__}'s Dask client is closed: pass an open one (set_params(client=...)) or "
                "set client=None to use the current default client."
            )
        return client

    def __getstate__(self):
        # A client cannot be pickled; the unpickled ranker uses the current client.
        state = dict(super().__getstate__())
        state["client"] = None
        return state

    def __sklearn_clone__(self):
        # A client is a connection, not a value to copy: the clone shares it
        # (GridSearchCV and cross_validate clone the ranker for every fit).
        client, self.client = self.client, None
        try:
            new = super().__sklearn_clone__()
        finally:
            self.client = client
        new.client = client
        return new

    def _split_qid(self, X, qid, *, where, qid_name):
        """``(features, qid)`` of a dask input: the query column of a dask
        DataFrame or ``qid=``; a clear error when there are none or both."""
        if not is_dask(X):
            row_blocks(X, where)  # raises the type error
        if isinstance(X, dd.DataFrame) and X.columns.duplicated().any():  # as in memory, not a worker's error
            raise ValueError(f"{where} has duplicate column names "
                             f"{sorted(set(X.columns[X.columns.duplicated()]))}: rename them.")
        if isinstance(X, dd.DataFrame) and self.qid_col is not None and self.qid_col in X.columns:
            if qid is not None:
                raise ValueError(
                    f"Query ids given twice: {where} has a '{self.qid_col}' column and {qid_name}= was passed. "
                    f"Drop the column or pass qid_col=None to use {qid_name}=."
                )
            return X.drop(columns=[self.qid_col]), X[self.qid_col]
        if qid is None:
            raise missing_qid_error(X._meta if isinstance(X, dd.DataFrame) else X, self.qid_col, where=where,
                                    qid_name=qid_name)
        return X, qid

    def _n_features(self, X, where="X"):
        if isinstance(X, dd.DataFrame):
            self._check_numeric_columns(X, where)
            return len(X.columns)
        if X.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got {X.ndim} dimensions.")
        return int(X.shape[1])

    def _check_numeric_columns(self, X, where="X", skip=()):
        """An error naming the columns that are not numbers (but ``skip``): categorical and
        text columns train in memory only (the in-memory backends split on
        categories), and said here beats a worker's conversion error."""
        other = [c for c, d in X.dtypes.items() if c not in skip
                 and not (pd.api.types.is_numeric_dtype(d) or pd.api.types.is_bool_dtype(d))]
        if other:
            first = other[0]
            raise ValueError(
                ("" if where == "X" else f"{where}: ")
                + f"{type(self).__name__} trains on numeric columns only; {other} are not numbers "
                f"({X.dtypes[first]} for {first!r}). Encode them as numbers first (a category column's codes, "
                f"X[{first!r}].cat.codes; a text column's, X[{first!r}].astype(pd.CategoricalDtype(categories)).cat.codes "
                f"with one fixed list of categories for training and serving), or fit the in-memory {type(self)._local_class.__name__}, whose "
                "backends split on pandas category columns natively."
            )

    def _set_feature_names(self, X):
        columns = list(X.columns) if isinstance(X, dd.DataFrame) else None
        if columns is not None and columns and all(isinstance(c, str) for c in columns):
            self.feature_names_in_ = np.asarray(columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _check_features(self, X, where="X"):
        prefix = "" if where == "X" else f"{where}: "  # which eval set, as in memory
        n = self._n_features(X, where)
        if n != self.n_features_in_:
            raise ValueError(f"{prefix}X has {n} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        names = getattr(self, "feature_names_in_", None)
        if names is not None and isinstance(X, dd.DataFrame) and list(X.columns) != list(names):
            raise ValueError(
                f"{prefix}The feature names should match those that were passed during fit: got "
                f"{list(X.columns)}, expected {list(names)}."
            )

    # -- layout ----------------------------------------------------------------------
    def _lay_out(self, client, X, y, qid, objective, *, training, sample_weight=None, where="X", qid_name="qid",
                 position=None, position_name="position"):
        """Shuffle the rows so that each query lives in one partition, sorted
        by query; persist; summarise (query keys, largest label, weights).
        The objective checks the labels of the ``training`` rows only."""
        X, qid = self._split_qid(X, qid, where=where, qid_name=qid_name)
        X, position = self._split_position(X, position, where, position_name)
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None: "
                             "pass the relevance labels.")
        n_features = self._n_features(X, where)
        label_name = "y" if where == "X" else f"the y of {where}"
        others = {label_name: y, qid_name: qid, "sample_weight": sample_weight, position_name: position}
        for name, values in others.items():
            if values is None:
                continue
            if not is_dask(values):
                raise TypeError(f"{name} must be a dask collection partitioned like {where} "
                                f"(a dask Series or array), got {type(values).__name__}.")
            shape = (None, len(values.columns)) if isinstance(values, dd.DataFrame) else values.shape
            if len(shape) > 2 or (len(shape) == 2 and shape[1] != 1):
                # As in memory; a worker's "X has 454 rows but 908 labels" before.
                raise ValueError(f"{name} must be one-dimensional (one value per row), got "
                                 f"{shape[1] if len(shape) == 2 else len(shape)} "
                                 f"{'columns' if len(shape) == 2 else 'dimensions'}.")
            check_aligned(X, values, name, where)
        dtypes = X.dtypes if isinstance(X, dd.DataFrame) else [X.dtype]
        dtype = np.float32 if all(str(d) == "float32" for d in dtypes) else np.float64
        modulus = getattr(self, "_position_modulus", None)  # set by fit while estimating
        clicks = None if position is None else dask_click_settings(self, objective, fitting=modulus is not None)
        settings = dict(n_features=n_features, dtype=dtype, objective=objective if training else None, where=where,
                        qid_name=qid_name, clicks=clicks)
        qid_meta = (qid._meta if isinstance(qid, (dd.Series, dd.DataFrame)) else np.zeros(0, dtype=qid.dtype))
        meta = assemble(np.zeros((0, n_features), dtype=dtype), np.zeros(0), np.asarray(qid_meta).ravel(),
                         None if sample_weight is None else np.zeros(0), 0,
                         None if position is None else np.zeros(0, dtype=np.int64), **settings)
        if isinstance(X, dd.DataFrame) and all(v is None or isinstance(v, (dd.Series, dd.DataFrame))
                                               for v in others.values()):
            # One expression for all of them: dask optimises it as a whole, so
            # the partitions stay aligned (optimised separately, a column read
            # from Parquet alone may come in fewer, fused partitions).
            present = tuple(v is not None for v in others.values())
            frame = dd.map_partitions(assemble_frames, X, *[v for v in others.values() if v is not None],
                                      present=present, **settings, meta=meta, align_dataframes=False)
        else:
            x_blocks = row_blocks(X, where)
            blocks = [[None] * len(x_blocks) if v is None else row_blocks(v, name) for name, v in others.items()]
            delayed_assemble = dask.delayed(assemble, pure=True)
            frame = dd.from_delayed([delayed_assemble(xb, yb, qb, wb, i, pb, **settings)
                                     for i, (xb, yb, qb, wb, pb) in enumerate(zip(x_blocks, *blocks))],
                                    meta=meta, verify_meta=False)
        frame = frame.shuffle(on=KEY, npartitions=frame.npartitions)
        frame = frame.map_partitions(lay_out_partition, position_modulus=modulus, position_name=position_name,
                                     meta=lay_out_partition(meta, position_modulus=modulus))
        with quiet_shuffle_log(client):
            frame = client.persist(frame)
            try:
                summaries = client.compute([dask.delayed(partition_summary)(p) for p in frame.to_delayed()],
                                           sync=True)
            except RuntimeError as error:
                if "P2P" not in str(error):
                    raise
                raise RuntimeError(
                    f"{error}. rankkit.dask shuffles the rows of {where} by query id (dask's p2p shuffle); one "
                    f"cause of this failure is query ids ({qid_name}) of different types in different partitions "
                    "(ints in one, strings in another): give them one type. Others are a worker's memory or disk."
                ) from error
        keys = [s[0] for s in summaries]
        if sum(k.size for k in keys) == 0:
            raise ValueError(f"{where} has no rows.")
        counted = (sum(s[2] for s in summaries), sum(s[3] for s in summaries))
        if sample_weight is not None and not counted[1] > 0:
            raise ValueError("sample_weight is zero for every row: at least one weight must be positive.")
        return LaidOut(frame, n_features, keys, max(s[1] for s in summaries), sample_weight is not None,
                       counted, sum(s[4] for s in summaries), debiased=clicks is not None), X

    def _split_position(self, X, position, where, name="position"):
        """``(features, position)``: ``position=`` (``name``) or the ``position_col``
        column of a dask DataFrame, when ``position_bias`` is set."""
        col = self.position_col
        if self.position_bias is None:
            if position is not None:
                raise position_without_debiasing_error(name)
            return X, None
        if isinstance(X, dd.DataFrame) and col is not None and col in X.columns:
            if position is not None:
                raise ValueError(f"Positions given twice: {where} has a '{col}' column and {name}= was passed. "
                                 f"Drop the column or pass position_col=None to use {name}=.")
            return X.drop(columns=[col]), X[col]
        return X, position

    def _prepare(self, X, y, qid, objective, *, reset, sample_weight=None, where="X", qid_name="qid",
                 position=None, position_name="position"):
        """The Dask counterpart of :meth:`rankkit._estimators.BaseRanker._prepare`
        (which ``_eval_sets`` calls): the rows laid out on the cluster
        (:class:`LaidOut`); ``reset`` sets the fitted feature attributes,
        otherwise the features are checked against them."""
        laid, X_features = self._lay_out(self._get_client(), X, y, qid, objective, training=reset,
                                         sample_weight=sample_weight, where=where, qid_name=qid_name,
                                         position=position, position_name=position_name)
        if reset:
            self.n_features_in_ = len(laid.features)
            self._set_feature_names(X_features)
            self.categories_ = {}  # no categorical features on Dask (they are refused as non-numeric)
        else:
            self._check_features(X_features, where)
        return laid

    def _why_constant(self, train, grad_fn, objective):
        return (
            "rankkit.dask does not look for the cause: the in-memory ranker finds it from the training rows and "
            "the first gradients in one process. Fit the in-memory ranker "
            f"({self._local_class.__name__}) on a sample of the queries to see it, or lower min_child_weight."
        )

    # -- fit -----------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    @explains_other_libraries_keywords(hints=DASK_FIT_KEYWORDS)
    @_estimators.keeps_the_model_on_error
    def fit(self, X, y, *, qid=None, group=None, sample_weight=None, eval_set=None, eval_qid=None,
            eval_group=None, eval_sample_weight=None, verbose=False, early_stopping_rounds=None, position=None,
            eval_position=None):
        """Fit on a Dask cluster.

        Parameters
        ----------
        X : dask DataFrame or dask array of shape (n_samples, n_features)
            Features; a DataFrame may carry the query ids in its ``qid_col``
            column. Rows may be in any order across partitions.
        y : dask Series or array, partitioned like ``X``
            Relevance labels.
        qid : dask Series or array, partitioned like ``X``, optional
            Query id of every row, unless ``X`` has the query column.
        group : None
            Query sizes describe consecutive rows, which a partitioned
            collection does not keep: refused, pass ``qid``.
        sample_weight : dask Series or array, partitioned like ``X``, optional
            Per-row weights multiplying gradients and hessians; queries and
            rows count by weight as in the in-memory ranker's ``fit`` (a
            query of weight 0 trains as if it were left out).
        eval_set : list of (X, y) pairs of dask collections, optional
            Sets evaluated every iteration with every ``eval_metric`` (exact
            means over all their queries, ``evals_result_``); the last one
            that is not the training data drives early stopping. An entry
            that is the training data itself (the same ``X`` and ``y``
            objects, the same ``qid``) is recorded as ``"training"``; the
            others as ``"validation_<i>"``.
        eval_qid : list of dask Series or arrays, optional
            Query ids of each eval set (unless it carries the query column).
        eval_group : None
            Refused, as ``group``: pass ``eval_qid``.
        eval_sample_weight : list of dask Series or arrays (or None), optional
            As the in-memory ranker's: row weights of each eval set
            (partitioned like its X), whose metrics are then query-weighted
            means; the training data's entry is weighted by ``sample_weight``.
            The workers read weights from XGBoost's DMatrix, which holds them
            in float32 (so do the training gradients).
        verbose : bool or int, default=False
            As the in-memory ranker's: a progress line every ``verbose``
            iterations and at the last one (the training metrics, all-reduced
            over the workers, and every eval set's), sent by a worker and
            printed by the driver as training runs, then a final line.
        early_stopping_rounds : int, optional
            Deprecated: set ``early_stopping_rounds`` on the ranker. Given
            here, it overrides the ranker's value (with a ``FutureWarning``).
        position : dask Series or array, partitioned like ``X``, optional
            Click data (``y``: clicks) with ``position_bias`` set: the
            1-based rank each row was shown at (or the ``position_col``
            column). Positions stay with their rows: with ``"known"`` each
            partition turns its rows' clicks into debiased labels before any
            shuffle; with ``"estimate"`` each worker reads its rows'
            positions and the estimator's per-position statistics are summed
            over all the workers every iteration (all-reduced), so the
            propensities (``position_bias_``) and the model are the
            in-memory ranker's, up to floating-point summation order.
        eval_position : list of dask Series or arrays (or None), optional
            As the in-memory ranker's: one entry per eval set, the positions
            of a click eval set (partitioned like its X), whose metrics are
            then computed on the debiased labels, or None for a set of graded
            labels (or one carrying the ``position_col`` column).

        Returns
        -------
        self
        """
        client = self._get_client()
        if self.backend not in ("auto", "xgboost"):
            raise ValueError(
                f"{type(self).__name__} trains through xgboost.dask: backend must be 'xgboost' (or 'auto'), got "
                f"{self.backend!r}. The numba and lightgbm backends train in memory "
                f"({self._local_class.__name__})."
            )
        for name, value, alternative in (("group", group, "qid"), ("eval_group", eval_group, "eval_qid")):
            if value is not None:
                raise ValueError(
                    f"{type(self).__name__} does not take {name}=: query sizes describe consecutive rows, which "
                    f"the partitions of a dask collection do not keep. Pass {alternative}= (per-row query ids, "
                    "partitioned like X; rankkit.model_selection.qid_from_group converts sizes) or a query column."
                )
        if CallbackList(self.callbacks):
            raise ValueError(
                f"{type(self).__name__} does not run callbacks: its iterations run on the workers, inside "
                "xgboost.dask.train, where neither this ranker nor a callback's state exists. Use "
                "early_stopping_rounds= to stop, fit(verbose=N) for progress and evals_result_ after fit; "
                f"callbacks run with the in-memory ranker ({self._local_class.__name__})."
            )
        check_position_bias_params(self)
        objective = self._objective_for_fit()
        check_clicks_train_on_grades(self.position_bias, objective)
        shrink = shrink_schedule(self.model_shrink_rate, self.model_shrink_mode, self.learning_rate)
        # The engine's parameters before any row moves: XGBoost would refuse
        # some only on the workers, after the shuffle (or after training).
        XGBoostDaskBackend(**self._backend_settings(0)).check_params(shrink)
        # The eval metrics' names and settings too (their checks against the labels follow the layout),
        # ERR's scale under estimated propensities, and what the monitor follows: verbose, early stopping
        # and an eval set to stop on.
        named_metrics, metric_settings = eval_metrics(self.eval_metric, objective)
        check_metric_settings_read(self, objective, named_metrics, metric_settings)
        check_err_scale_is_fixed(self.position_bias, objective, named_metrics)
        early_stopping_rounds = self._early_stopping_rounds(early_stopping_rounds)
        entries, per_set = per_eval_set(eval_set, eval_qid=eval_qid, eval_position=eval_position)
        EvalMonitor.check_settings(verbose, early_stopping_rounds, any(
            not (isinstance(pair, (tuple, list)) and len(pair) == 2
                 and _estimators.is_training_entry(pair, q, None, p, (X, y, qid, None, position)))
            for pair, q, p in zip(entries, *per_set.values())))
        self.position_bias_ = None
        clicks = None  # ClickSettings of the workers when they estimate the propensities
        if dask_click_settings(self, objective, fitting=True) is not None:
            shown = self._split_position(X, position, "X")[1]
            if shown is None:
                raise missing_positions_error(self.position_bias, self.position_col)
            if not is_dask(shown):  # the layout's error, before .max() is asked of it
                raise TypeError(f"position must be a dask collection partitioned like X "
                                f"(a dask Series or array), got {type(shown).__name__}.")
            deepest = float(client.compute(shown.max()).result())  # on this ranker's cluster, not the default
            if np.isfinite(deepest) and deepest > MAX_POSITION:  # a document id: before any table that deep
                check_position(np.array([deepest]), 1)
            n_positions = int(deepest) if np.isfinite(deepest) and deepest >= 1 else 1  # else the layout explains
            if self.position_bias == "known":
                self.position_bias_ = propensity_table(self.propensities, n_positions)
            else:
                clicks = click_settings(self, objective, n_positions)
        # While estimating, the layout keeps the clicks and puts every row's
        # position beside its query's place (rankkit._dask_layout.lay_out_partition).
        modulus = None if clicks is None else clicks.n_positions + 1
        self._position_modulus = modulus
        # The eval sets' columns before the training rows are shuffled, naming the set.
        for i, pair in enumerate(eval_set or ()):
            if isinstance(pair, (tuple, list)) and pair and isinstance(pair[0], dd.DataFrame):
                self._check_numeric_columns(pair[0], where=f"eval_set[{i}]",
                                            skip=(self.qid_col, self.position_col if self.position_bias else None))
        try:
            train = self._prepare(X, y, qid, objective, reset=True, sample_weight=sample_weight, position=position)
            sets = self._eval_sets(eval_set, eval_qid, None, objective, (X, y, qid, None, position), eval_position,
                                   eval_sample_weight, sample_weight)
            # ERR's Chapelle scale left to the data is the largest label of all the rows in memory; each
            # worker sees its own, so it is pinned to all of them (the debiased labels with known
            # propensities too). Estimated, they change every iteration: see below.
            if self.position_bias is None or (self.position_bias == "known" and uses_err_scale(
                    objective, eval_metrics(self.eval_metric, objective)[0])):
                objective = pin_err_max_label(objective, train.max_label,
                                              [(name, laid.max_label) for name, laid in sets if laid is not None],
                                              debiased=self.position_bias is not None)
        finally:
            del self._position_modulus
        metrics, settings = self._eval_metrics(objective, train.max_label)
        check_metric_settings_read(self, objective, metrics, settings)
        monitor = EvalMonitor(self, None, sets, metrics, settings, early_stopping_rounds=early_stopping_rounds,
                               verbose=verbose, callbacks=None, relabelled=self._relabelled(sets))
        seed_base = seed_from(self.random_state)
        # The in-memory ranker of the same parameters records the metrics on the workers.
        local = self._local_class(**self._local_params())
        worker_monitor = PartMonitor(
            EvalMonitor(local, None, [(name, None if data is None else name) for name, data in sets], metrics, {},
                        early_stopping_rounds=monitor.early_stopping_rounds, verbose=verbose, callbacks=None,
                        relabelled=self._relabelled(sets)),
            # While the propensities are estimated the labels change every iteration: no scale to fix.
            {name: _with_err_max_label(_set_settings(settings, train if data is None else data, objective),
                                       None if self.position_bias == "estimate"
                                       else (train if data is None else data).max_label)
             for name, data in [*sets, (EvalMonitor.TRAINING, None)]},
        )
        edges = BinEdges.fit(client, train, self.max_bin)
        backend = XGBoostDaskBackend(
            client=client, data_factory=functools.partial(dmatrix_factory, client, int(self.max_bin), edges),
            model_thresholds=edges.raw_thresholds,
            local_reader=LocalReader(train.query_keys, modulus), report=_report, progress=bool(monitor.period),
            **self._backend_settings(seed_base, curvature_unit(objective, *train.counted)),
        )
        pipeline = self._gradient_pipeline(objective, seed_base)
        pipeline.clicks = clicks
        backend.fit(train, pipeline.build,
                    eval_X=[data for _, data in sets if data is not None], shrink=shrink,
                    callback=worker_monitor.start if monitor.active else None,
                    feature_names=getattr(self, "feature_names_in_", None))
        rescored = backend.report_["best_rescored"] or [None] * backend.n_iterations_  # [] without a monitor
        for t in range(backend.n_iterations_):  # the workers' record, replayed by the same rule
            monitor.record(t, {name: {m: curve[t] for m, curve in result.items()}
                               for name, result in backend.report_["history"].items()}, rescored[t])
        if clicks is not None:
            self.position_bias_ = np.asarray(backend.report_["position_bias"], dtype=np.float64)
            if backend.report_.get("best_position_bias") is not None:  # kept if early stopping cuts back
                monitor.best_position_bias = np.asarray(backend.report_["best_position_bias"], dtype=np.float64)
        self.diffusion_temperature_ = backend.diffusion_temperature_
        self._finish(backend.in_memory(), objective, monitor, None, None)
        monitor.after_training(self)
        return self

    # -- predict / score / to_local ------------------------------------------------
    def _features(self, X):
        if not is_dask(X) or isinstance(X, dd.Series):
            raise TypeError(f"{type(self).__name__}.predict takes a dask DataFrame or array, got "
                            f"{type(X).__name__}; for data in memory use to_local().predict(X).")
        if isinstance(X, dd.DataFrame) and self.qid_col is not None and self.qid_col in X.columns:
            X = X.drop(columns=[self.qid_col])
        X, _ = self._split_position(X, None, "X")  # as in memory: the position column is not a feature
        self._check_features(X)
        return X

    def _worker_backend(self):
        """The fitted engine the workers predict with: with ``n_jobs`` changed
        since ``fit`` (``set_params``), a copy whose threads follow it on the
        workers, as the in-memory ranker's follow it on its machine."""
        if self.backend_.n_jobs == self.n_jobs:
            return self.backend_
        backend = copy.deepcopy(self.backend_)
        # Only n_jobs < 0 counts threads on the workers: a client is needed for nothing else here.
        client = self._get_client() if self.n_jobs is not None and self.n_jobs < 0 else None
        backend.set_threads(worker_threads(client, self.n_jobs))
        return backend

    def predict(self, X, iteration_range=None):
        """Raw ranking scores (higher ranks first), a dask collection
        partitioned like ``X``: a Series for a DataFrame (same index), an
        array for an array. A DataFrame's query column, if present, is dropped.
        ``iteration_range``: as :meth:`rankkit.LambdaMARTRanker.predict`'s
        (exact with SGLB shrinkage).
        """
        check_is_fitted(self, "backend_")
        X = self._features(X)
        if iteration_range is not None:
            iteration_range = self._check_iteration_range(iteration_range)
        backend = dask.delayed(self._worker_backend(), pure=True)
        if isinstance(X, dd.DataFrame):
            return X.map_partitions(_predict_partition, backend, iteration_range, meta=pd.Series(dtype=np.float64))
        X = X.rechunk({1: -1})
        return X.map_blocks(_predict_partition, backend, iteration_range, drop_axis=1, dtype=np.float64,
                            meta=np.zeros(0, dtype=np.float64))

    def score(self, X, y, *, qid=None, sample_weight=None, position=None):
        """Mean per-query ranking metric over all queries, computed on the
        cluster, as :meth:`rankkit.LambdaMARTRanker.score`: the first
        ``eval_metric`` (``ndcg@10`` by default), worst-case ties, and with
        ``sample_weight`` (partitioned like ``X``) weighted by query.
        ``position`` (partitioned like ``X``, or the ``position_col``
        column; ``position_bias`` set): ``y`` are clicks and the metric is
        computed on the debiased labels (IPW gains at ``position_bias_``),
        debiased on the partitions that hold the rows, as in memory.

        Returns
        -------
        float
        """
        check_is_fitted(self, "backend_")
        if not is_dask(X) or isinstance(X, dd.Series):  # as predict: the fitted model scores in memory too
            raise TypeError(f"{type(self).__name__}.score takes a dask DataFrame or array, got "
                            f"{type(X).__name__}; for data in memory use to_local().score(X, y).")
        client = self._get_client()
        laid = self._prepare(X, y, qid, self.objective_, reset=False, sample_weight=sample_weight, position=position)
        metrics, settings = self._eval_metrics(self.objective_)
        pinned = settings.get("err_max_label")
        if (pinned is not None and getattr(self, "err_max_label", 0) is None and not laid.debiased
                and isinstance(metrics[0], str) and metrics[0].split("@")[0] in ("err", "pfound")
                and laid.max_label > pinned):
            # As in memory: the metric's own message (from a worker) would name
            # an err_max_label the user never passed.
            raise ValueError(
                f"This ranker maps ERR labels by its largest training label, {pinned:g} (err_max_label=None), "
                f"and y has the label {laid.max_label:g}: refit with err_max_label set to the top of your label "
                f"scale (err_max_label={laid.max_label:g} or more)."
            )
        settings = _with_err_max_label(_set_settings(settings, laid, self.objective_), laid.max_label)
        backend = dask.delayed(self._worker_backend(), pure=True)
        sums = laid.frame.map_partitions(score_partition, backend, laid.features, metrics[0], settings,
                                         meta=pd.DataFrame({"sum": [0.0], "count": [0.0]}).iloc[:0])
        sums = client.compute(sums).result()
        count = float(sums["count"].sum())
        functions = settings.get(CALLABLE_METRICS, {})
        if metrics[0] in functions:
            check_some_part_counted(metrics[0], functions[metrics[0]], count)
        return float(sums["sum"].sum()) / count if count > 0 else float("nan")

    def _local_params(self):
        """The in-memory ranker's parameters: all but ``client``, and the
        engine named (``"auto"`` in memory would choose the numba engine)."""
        params = {k: v for k, v in self.get_params(deep=False).items() if k != "client"}
        params["backend"] = "xgboost"
        return params

    def to_local(self):
        """The equivalent in-memory ranker (same parameters but ``client``,
        same fitted model): it pickles and predicts on arrays and DataFrames
        exactly as this ranker predicts on dask collections."""
        check_is_fitted(self, "backend_")
        params = self._local_params()
        local = self._local_class(**params)
        for name, value in self.__dict__.items():
            if name.endswith("_") and not name.startswith("_") and name not in params:
                setattr(local, name, value)
        # Its own engine, whose threads follow n_jobs on this machine: the booster
        # keeps the thread count that n_jobs gave on a worker (n_jobs=-1: the worker's cores).
        local.backend_ = copy.deepcopy(self.backend_)
        local.backend_.set_threads(local.n_jobs)
        return local


def _dask_class(local_class):
    """``Dask<Name>``: the Dask half over the in-memory ranker, with its
    ``__init__`` signature plus ``client=None``."""
    signature = inspect.signature(local_class.__init__)
    client = inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None)
    signature = signature.replace(parameters=[*signature.parameters.values(), client])

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        store_arguments(self, bound.arguments)

    __init__.__signature__ = signature
    name = f"Dask{local_class.__name__}"
    summary = (local_class.__doc__ or "").strip().splitlines()[0]
    doc = f"""{summary} On a Dask cluster.

    Trains through ``xgboost.dask`` with whole queries per worker (see
    :mod:`rankkit.dask`); takes the parameters of :class:`rankkit.{local_class.__name__}`
    plus ``client``, fits on dask collections, predicts dask collections, and
    :meth:`to_local` returns the equivalent :class:`rankkit.{local_class.__name__}`.

    Parameters
    ----------
    (all of :class:`rankkit.{local_class.__name__}`'s)
    client : distributed.Client or None, default=None
        The cluster's client; None uses the current one (``distributed.default_client()``).
    """
    __init__.__qualname__ = f"{name}.__init__"
    cls = type(name, (_DaskRanker, local_class), {
        "__init__": __init__,
        "__doc__": doc,
        "__module__": __name__,
        "_local_class": local_class,
        "_parameter_constraints": {**local_class._parameter_constraints, "client": "no_validation"},
    })
    return cls


DaskRanker = _dask_class(_estimators.Ranker)
DaskStochasticRankRanker = _dask_class(_estimators.StochasticRankRanker)
DaskYetiRanker = _dask_class(_estimators.YetiRanker)
DaskLambdaMARTRanker = _dask_class(_estimators.LambdaMARTRanker)
DaskXENDCGRanker = _dask_class(_estimators.XENDCGRanker)
DaskQueryRMSERanker = _dask_class(_estimators.QueryRMSERanker)

#: In-memory ranker -> its Dask ranker.
DASK_RANKERS = {cls._local_class: cls for cls in (DaskRanker, DaskStochasticRankRanker, DaskYetiRanker,
                                                   DaskLambdaMARTRanker, DaskXENDCGRanker, DaskQueryRMSERanker)}
