"""``backend="xgboost"`` on a Dask cluster: the XGBoost backend with another data factory.

As XGBoost's scikit-learn module serves ``XGBRanker`` and ``DaskXGBRanker``
with one estimator and a data factory passed in, :class:`XGBoostDaskBackend`
is :class:`~rankkit._backends.xgboost.XGBoostBackend` (the same parameters,
the same model, SGLB folded the same way) whose data come from a factory:
``data_factory(data, ref=None)`` makes the ``DaskQuantileDMatrix`` of a set
laid out by query (:mod:`rankkit.dask`), and ``local_reader(dmat)``, run on a
worker, reads the worker's part of it as :class:`rankkit._training.QueryData`
(``with_keys=False``: without the keys of the queries' random draws, for eval sets).

``xgboost.dask.train`` runs XGBoost's own loop on every worker; the
iterations are still the one boosting loop of
:mod:`rankkit._backends._base`: the custom objective runs
:meth:`~rankkit._backends._base.BoostingLoop.gradients` (SGLB shrinkage,
then the gradients at the shrunk model) and an after-iteration callback
:meth:`~rankkit._backends._base.BoostingLoop.after_tree` (the tree's scores,
then the ranker's callback), on the hooks of :class:`_WorkerEngine`, which
reads XGBoost's margins. What must be global is all-reduced over the
workers (``xgboost.collective``): ``grad_fn`` and ``callback`` are factories
called on each worker with its rows and :func:`allreduce_sum`.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid

import distributed
import numpy as np
import xgboost
import xgboost.dask as dxgb
from xgboost import collective
from xgboost.callback import TrainingCallback

from .._sglb import ShrunkScores, shrink_factor
from .._threads import limit_threads
from ._base import BoostingLoop, check_float32_gradients
from .xgboost import XGBoostBackend

__all__ = ["XGBoostDaskBackend", "allreduce_sum"]


def allreduce_sum(values):
    """Sums over all the workers of ``xgboost.dask.train`` (XGBoost's collective)."""
    return [float(v) for v in collective.allreduce(np.asarray(values, dtype=np.float64), collective.Op.SUM)]


class _WorkerEngine:
    """The loop's hooks on a worker, from XGBoost's margins (unshrunk sums of
    the trees, float32 widened): the training rows' from the objective's
    ``preds`` (and the booster after a tree), every eval set's from the
    custom metric's ``predt``. A tree's scores are the margins' difference,
    ``P_{t+1} - P_t``."""

    def __init__(self, train_margin):
        self.train = [0, train_margin]  # [n_done, margin] of the training rows
        self.evals = []  # [previous margin, margin] of every eval set, in XGBoost's order
        self.dtrain = self.booster = None

    def train_margin(self, n_done, margin):
        self.train = [n_done, margin]

    def _train_at(self, n_done):
        if self.train[0] != n_done:
            margin = self.booster.predict(self.dtrain, output_margin=True, training=True)
            self.train = [n_done, np.asarray(margin, dtype=np.float64).ravel()]
        return self.train[1]

    def _running_scores(self, n_done, train_only=False):
        if train_only:
            return [self._train_at(n_done)]
        if n_done == 0:  # the eval sets are seen after the first tree (SGLB never shrinks before it)
            raise RuntimeError("rankkit.dask: shrinkage before the first tree is not supported.")
        return [self._train_at(n_done), *(margin for _, margin in self.evals)]

    def _shrink_model(self, factor):
        """Nothing: the driver folds the factors into the leaves."""

    def _tree_scores(self, t):
        before = self.train[1]
        now = self._train_at(t + 1)
        return [now - before, *(margin - previous for previous, margin in self.evals)]


class _WorkerTraining:
    """What runs on each worker: the custom objective, the custom metric and
    an after-iteration callback around one :class:`BoostingLoop`.

    ``xgboost.dask.train`` ships the objective, the metric and the callbacks
    to a worker in one pickle (the training function's closure), so on the
    worker they share this one object."""

    METRIC = "rankkit"

    def __init__(self, grad_fn, callback, shrink, local_reader, n_jobs, topic):
        self.make_grad_fn = grad_fn
        self.make_callback = callback
        self.shrink = shrink
        self.local_reader = local_reader
        self.n_jobs = n_jobs
        self.topic = topic
        self.loop = None
        self.beta = None
        self.eval_handles = {}
        self.eval_sets = []
        self.eval_data = None

    def objective(self, preds, dtrain):
        preds = np.asarray(preds, dtype=np.float64).ravel()
        with limit_threads(self.n_jobs):
            if self.loop is None:
                self._start(dtrain, preds)
            t = self.t
            self.engine.train_margin(t, preds)
            # Called on empty rows too: the all-reductions need every worker.
            grad, hess = self.loop.gradients(t)
            check_float32_gradients(grad, hess, t, "XGBoost", total=allreduce_sum)
            return grad, hess

    def _start(self, dtrain, preds):
        train = self.local_reader(dtrain)
        grad_fn, self.beta = self.make_grad_fn(train, allreduce_sum)
        # A grad_fn that rewrites the labels (click data) says which rows the
        # monitor scores as the training data and how eval sets' rows are read.
        self.train = getattr(grad_fn, "train", train)
        self.eval_data = getattr(grad_fn, "eval_data", None)
        self.engine = _WorkerEngine(preds)
        self.engine.dtrain = dtrain
        self.loop = BoostingLoop(self.engine, train.y.shape[0], grad_fn, ShrunkScores(self.shrink), None)
        self.t = 0

    def metric(self, predt, dmat):
        """Keeps the eval set's margin for the loop; XGBoost's own value is unused."""
        handle = dmat.handle.value
        if handle not in self.eval_handles:  # the sets come in order at the first iteration
            self.eval_handles[handle] = len(self.eval_sets)
            data = self.local_reader(dmat, with_keys=False)
            self.eval_sets.append(data if self.eval_data is None else self.eval_data(data))
            self.engine.evals.append([np.zeros(len(predt)), None])
        entry = self.engine.evals[self.eval_handles[handle]]
        margin = np.asarray(predt, dtype=np.float64).ravel()
        if entry[1] is not None:
            entry[0] = entry[1]
        entry[1] = margin
        return self.METRIC, float("nan")

    def after_iteration(self, model, epoch):
        self.engine.booster = model
        with limit_threads(self.n_jobs):
            if self.loop.callback is None and self.make_callback is not None:
                emit = self._emit if collective.get_rank() == 0 else None
                self.loop.callback = self.make_callback(self.train, self.eval_sets, allreduce_sum, emit)
            stop = self.loop.after_tree(epoch)
        self.t = epoch + 1
        return stop

    def _emit(self, t, line):
        if self.topic is not None:
            distributed.get_worker().log_event(self.topic, [t, line])


class _AfterIteration(TrainingCallback):
    """XGBoost's callback: :meth:`_WorkerTraining.after_iteration`, and at the
    end what the driver needs rides back in the booster (attribute
    ``rankkit_fit``, JSON, exact floats): ``report()`` of the ranker's
    callback (its history) and the ``diffusion_temperature_`` used."""

    ATTRIBUTE = "rankkit_fit"

    def __init__(self, training, report):
        super().__init__()
        self.training = training
        self.report = report

    def after_iteration(self, model, epoch, evals_log):
        return self.training.after_iteration(model, epoch)

    def after_training(self, model):
        model.set_attr(**{self.ATTRIBUTE: json.dumps({"report": self.report(self.training.loop),
                                                       "diffusion_temperature": self.training.beta})})
        return model


def _no_report(loop):
    return None


class _Progress:
    """The driver's end of the progress lines of ``fit(verbose=N)``: worker 0
    sends each line as a Dask event on a topic of this fit
    (:meth:`_WorkerTraining._emit`); the client prints them as they come."""

    def __init__(self, client):
        self.client = client
        self.topic = f"rankkit-progress-{uuid.uuid4().hex}"
        self.last = -1
        self._received = threading.Condition()
        client.subscribe_topic(self.topic, self._print)

    def _print(self, event):
        t, line = event[1]
        print(line, file=sys.stdout, flush=True)
        with self._received:
            self.last = int(t)
            self._received.notify_all()

    def wait_for(self, t, timeout=60.0):
        """Until the line of iteration ``t`` is printed (events come in order)."""
        with self._received:
            self._received.wait_for(lambda: self.last >= t, timeout)

    def close(self):
        self.client.unsubscribe_topic(self.topic)


def worker_threads(client, n_jobs):
    """``n_jobs`` as a thread count on the workers of ``client``: a negative
    one counts back from the threads of a worker (the fewest, when they
    differ), not from the driver's cores, so ``-1`` is every thread a worker has."""
    if n_jobs is None or n_jobs > 0:
        return n_jobs
    threads = min(client.nthreads().values())
    return max(1, threads + 1 + int(n_jobs))


class XGBoostDaskBackend(XGBoostBackend):
    """The XGBoost backend trained by ``xgboost.dask.train`` (module docstring).

    ``XGBoostDaskBackend(client=, data_factory=, local_reader=, model_thresholds=, **settings)``;
    :meth:`fit` takes laid-out sets and factories: ``grad_fn(train, total)
    -> (grad_fn, beta)`` and ``callback(train, evals, total, emit) ->
    callback`` (None: no callback), called on each worker with its rows;
    ``report(loop)`` gives what the driver gets back of the callback
    (:attr:`report_`). ``model_thresholds(model)``, given, rewrites the
    trained model (XGBoost's JSON, as a dict) before it is kept: the data
    factory of :mod:`rankkit.dask` hands XGBoost bin codes, whose splits it
    moves onto the raw features (:class:`rankkit._dask_layout.BinEdges`).
    :meth:`in_memory` is the fitted model as the in-memory XGBoost backend.
    """

    def __init__(self, *, client=None, data_factory=None, local_reader=None, report=None, progress=False,
                 model_thresholds=None, **settings):
        super().__init__(**settings)
        self.client = client
        self.data_factory = data_factory
        self.model_thresholds = model_thresholds
        self.local_reader = local_reader
        self.report = report
        self.progress = progress

    def check_params(self, shrink=None):
        """The parameters handed to XGBoost, checked: what the in-memory
        backend refuses when it starts training (``_begin``), and what
        ``xgboost.dask`` cannot train. :mod:`rankkit.dask` calls it before
        laying out any rows: XGBoost's own errors come only after the
        shuffle, from a worker, after a whole training (``num_parallel_tree``)."""
        params = self._params()
        if self.n_jobs is not None and self.client is not None:
            params["nthread"] = self._worker_threads()
        if shrink is not None and int(params.get("num_parallel_tree", 1)) > 1:
            raise ValueError(
                "backend_params={'num_parallel_tree': ...} cannot be combined with SGLB shrinkage "
                "(model_shrink_rate > 0): shrinkage is folded into one tree per iteration. Drop one of them."
            )
        if params.get("tree_method", "hist") not in ("hist", "auto"):
            raise ValueError(
                f"backend_params={{'tree_method': {params['tree_method']!r}}}: rankkit.dask trains with "
                "tree_method='hist' only (the rows reach XGBoost as a DaskQuantileDMatrix, which the other "
                "tree methods cannot read). Drop tree_method, or train in memory with the in-memory ranker."
            )
        return params

    def _worker_threads(self):
        return worker_threads(self.client, self.n_jobs)

    def fit(self, X, grad_fn, *, eval_X=(), shrink=None, callback=None, feature_names=None,
            categorical_features=()):
        """Train on the laid-out ``X`` and ``eval_X`` (see the class docstring). Returns self."""
        self.params_ = self.check_params(shrink)
        progress = _Progress(self.client) if self.progress else None
        try:
            self._train(X, grad_fn, eval_X, shrink, callback, progress, feature_names)
            if progress is not None:
                progress.wait_for(self.n_iterations_ - 1)  # the last iteration always has a line
        finally:
            if progress is not None:
                progress.close()
        return self

    def _train(self, X, grad_fn, eval_X, shrink, callback, progress, feature_names=None):
        training = _WorkerTraining(grad_fn, callback, shrink, self.local_reader, self._worker_threads(),
                                   None if progress is None else progress.topic)
        report = self.report or _no_report
        # xgboost.dask (3.2) asks distributed for the current client even when
        # given one (xgboost.dask._get_client calls distributed.get_client() to
        # check the type): make ours the current one while it runs.
        with self.client.as_current():
            dtrain = self.data_factory(X)
            evals = [(self.data_factory(E, ref=dtrain), f"eval_{i}") for i, E in enumerate(eval_X)]
            result = dxgb.train(
                self.client, self.params_, dtrain, num_boost_round=int(self.n_estimators), evals=evals or None,
                obj=training.objective, custom_metric=training.metric if evals else None,
                callbacks=[_AfterIteration(training, report)], verbose_eval=False,
            )
        booster = result["booster"]
        if self.model_thresholds is not None:  # trained on bin codes: the splits onto the raw features
            model, config = self.model_thresholds(json.loads(booster.save_raw("json"))), booster.save_config()
            booster = xgboost.Booster(model_file=bytearray(json.dumps(model).encode()))
            booster.load_config(config)  # the parameters (threads, ...) the model file does not keep
        # Trained on frames with columns f0, f1, ...: the caller's names, as
        # the in-memory backend stores them (none for arrays).
        booster.feature_names = self._engine_feature_names(feature_names)
        booster.feature_types = None
        fitted = json.loads(booster.attr(_AfterIteration.ATTRIBUTE))
        booster.set_attr(**{_AfterIteration.ATTRIBUTE: None})
        self.report_, self.diffusion_temperature_ = fitted["report"], fitted["diffusion_temperature"]
        self._keep(booster, [shrink_factor(shrink, t) for t in range(booster.num_boosted_rounds())])

    def in_memory(self):
        """The fitted model as :class:`~rankkit._backends.xgboost.XGBoostBackend` (no client, no Dask)."""
        local = XGBoostBackend(**self._settings())
        for name in ("params_", "_unfolded", "shrink_factors_", "n_iterations_", "booster_"):
            setattr(local, name, getattr(self, name))
        return local
