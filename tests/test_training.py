"""The training API that XGBoost, LightGBM and scikit-learn users expect:
early stopping and eval metrics on the ranker, callbacks, progress lines,
``predict(iteration_range=)`` (exact with SGLB shrinkage) and query sizes
(``group=``), on every backend available."""

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.model_selection import KFold, cross_validate

import rankkit._estimators as est
import rankkit._training as training
from rankkit import LambdaMARTRanker, QueryRMSERanker
from rankkit.callback import CallbackEnv, TrainingCallback
from rankkit.datasets import make_ranking
from rankkit.metrics import mrr_score, ndcg_score
from rankkit.model_selection import qid_from_group

from ._backends import BACKENDS_UNDER_TEST

BOOST = {"n_estimators": 12, "max_depth": 3, "learning_rate": 0.3, "n_jobs": 1, "random_state": 0}


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=80, n_features=8, max_docs=25, random_state=0)
    train = qid < 50
    return X[train], y[train], qid[train], X[~train], y[~train], qid[~train]


def _lambdamart(backend="xgboost", **params):
    return LambdaMARTRanker("ndcg@10", **{**BOOST, "min_child_weight": 1e-3, "backend": backend, **params})


# -- 3. early stopping, eval metrics, callbacks -----------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_early_stopping_rounds_on_the_ranker_and_deprecated_in_fit(data, backend):
    X, y, qid, Xv, yv, qv = data
    kw = dict(eval_set=[(Xv, yv)], eval_qid=[qv])
    params = dict(n_estimators=200, learning_rate=0.8, max_depth=5)
    on_ranker = _lambdamart(backend, early_stopping_rounds=3, **params).fit(X, y, qid=qid, **kw)
    curve = on_ranker.evals_result_["validation_0"]["ndcg@10"]
    assert len(curve) == on_ranker.best_iteration_ + 1 + 3 < 200
    assert on_ranker.backend_.n_iterations_ == on_ranker.best_iteration_ + 1
    # fit(early_stopping_rounds=) still works, warns, and overrides the ranker's value (as XGBoost 2).
    with pytest.warns(FutureWarning, match=r"fit\(early_stopping_rounds=...\) is deprecated.*"
                                           r"LambdaMARTRanker\(early_stopping_rounds=3\)") as record:
        in_fit = _lambdamart(backend, early_stopping_rounds=100, **params).fit(
            X, y, qid=qid, early_stopping_rounds=3, **kw)
    assert record[0].filename == __file__  # points at the caller's line
    assert in_fit.evals_result_ == on_ranker.evals_result_
    np.testing.assert_array_equal(in_fit.predict(Xv), on_ranker.predict(Xv))
    # The constructor parameter is a parameter: clone and set_params keep it.
    assert on_ranker.get_params()["early_stopping_rounds"] == 3


def test_early_stopping_rounds_is_validated(data):
    X, y, qid, Xv, yv, qv = data
    with pytest.raises(ValueError, match="early_stopping_rounds"):
        _lambdamart(early_stopping_rounds=0).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_eval_metric_list_records_each_and_the_first_drives_early_stopping(data, backend):
    X, y, qid, Xv, yv, qv = data
    kw = dict(eval_set=[(Xv, yv)], eval_qid=[qv])
    params = dict(n_estimators=60, learning_rate=0.3, early_stopping_rounds=8)
    a = _lambdamart(backend, eval_metric=["ndcg@10", "mrr"], **params).fit(X, y, qid=qid, **kw)
    b = _lambdamart(backend, eval_metric=["mrr", "NDCG@10"], **params).fit(X, y, qid=qid, **kw)
    for model, first in ((a, "ndcg@10"), (b, "mrr")):
        curves = model.evals_result_["validation_0"]
        assert list(curves) == ([first, "mrr"] if first == "ndcg@10" else [first, "ndcg@10"])
        # Strict improvement of the first metric: its first maximum, then 8 more iterations.
        assert model.best_iteration_ == int(np.argmax(curves[first]))
        assert model.best_score_ == max(curves[first])
        assert len(curves[first]) == model.best_iteration_ + 1 + 8 or len(curves[first]) == 60
        # Every recorded value is the metric of the model after that iteration.
        n = model.backend_.n_iterations_
        pred = model.predict(Xv)
        assert curves["ndcg@10"][n - 1] == pytest.approx(ndcg_score(yv, pred, qid=qv, k=10), rel=1e-12)
        assert curves["mrr"][n - 1] == pytest.approx(mrr_score(yv, pred, qid=qv), rel=1e-12)
        # score is the first metric.
        assert model.score(Xv, yv, qid=qv) == pytest.approx(model.best_score_, rel=1e-9)
    # MRR and NDCG@10 peak at different iterations here: the order of the list decides.
    assert b.best_iteration_ != a.best_iteration_


@pytest.mark.parametrize("eval_metric, error, match", [
    ([], ValueError, "eval_metric is empty"),
    (["ndcg@10", "ndcg@10"], ValueError, "lists 'ndcg@10' twice"),
    (["ndcg", 3], TypeError, "entries must be metric names"),
    (["ndcg", "auc"], ValueError, "Unknown metric 'auc'"),
    (3, ValueError, "eval_metric"),
])
def test_eval_metric_is_validated(data, eval_metric, error, match):
    X, y, qid, _, _, _ = data
    with pytest.raises(error, match=match):
        _lambdamart(eval_metric=eval_metric).fit(X, y, qid=qid)


class _Recorder(TrainingCallback):
    """Records what it sees; asks to stop after iteration ``stop_at``."""

    def __init__(self, stop_at=None):
        self.stop_at = stop_at
        self.calls = []

    def before_training(self, ranker):
        self.calls.append(("before", hasattr(ranker, "backend_")))

    def after_iteration(self, ranker, iteration, evals_log):
        copy = {name: {m: list(v) for m, v in result.items()} for name, result in evals_log.items()}
        self.calls.append(("iteration", iteration, copy))
        return iteration == self.stop_at

    def after_training(self, ranker):
        self.calls.append(("after", ranker.n_iterations_, ranker.evals_result_))


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_callback_objects_and_functions(data, backend):
    X, y, qid, Xv, yv, qv = data
    recorder = _Recorder(stop_at=4)
    envs = []

    def function_callback(env):
        envs.append(env)
        return False

    model = _lambdamart(backend, n_estimators=30, callbacks=[recorder, function_callback])
    model.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    # before_training sees the ranker before it is fitted.
    assert recorder.calls[0] == ("before", False)
    iterations = [c for c in recorder.calls if c[0] == "iteration"]
    assert [c[1] for c in iterations] == [0, 1, 2, 3, 4]  # True after iteration 4 stopped training
    assert model.n_iterations_ == 5 and len(model.evals_result_["validation_0"]["ndcg@10"]) == 5
    # evals_log is the history so far, shaped like evals_result_.
    assert iterations[2][2] == {"validation_0": {"ndcg@10": model.evals_result_["validation_0"]["ndcg@10"][:3]}}
    assert recorder.calls[-1] == ("after", 5, model.evals_result_)
    # A function gets a CallbackEnv after every iteration, the one that stopped included.
    assert [e.iteration for e in envs] == [0, 1, 2, 3, 4]
    assert all(isinstance(e, CallbackEnv) and e.ranker is model for e in envs)
    # Without early stopping, a callback's stop keeps every tree grown.
    assert model.backend_.n_iterations_ == 5


def test_callbacks_without_eval_set_get_an_empty_log(data):
    X, y, qid, _, _, _ = data
    logs = []
    model = _lambdamart(callbacks=[lambda env: logs.append(env.evals_log) or env.iteration == 2])
    model.fit(X, y, qid=qid)
    assert logs == [{}, {}, {}] and model.n_iterations_ == 3 and model.evals_result_ == {}


def test_every_callback_is_called_even_after_a_stop(data):
    X, y, qid, _, _, _ = data
    seen = []
    model = _lambdamart(callbacks=[lambda env: True, lambda env: seen.append(env.iteration)]).fit(X, y, qid=qid)
    assert seen == [0] and model.n_iterations_ == 1


def test_callbacks_of_a_refit_see_this_fits_state(data):
    """A callback sees the training state of the fit it runs in, live
    (evals_result_, n_iterations_, best_iteration_, best_score_), and no model
    before training ends. Before, a refit's callbacks read the previous fit's
    attributes until it ended (n_iterations_ 5 and its evals_result_ at every
    iteration of a 3-iteration refit), and predict gave the previous model's scores."""
    from sklearn.exceptions import NotFittedError

    X, y, qid, Xv, yv, qv = data
    seen = []

    def callback(env):
        ranker = env.ranker
        with pytest.raises(NotFittedError):
            ranker.predict(Xv)
        seen.append((env.iteration, ranker.n_iterations_, ranker.best_iteration_, ranker.best_score_,
                     ranker.evals_result_ is env.evals_log))

    model = _lambdamart(n_estimators=5, callbacks=[callback]).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    first = list(seen)
    curve = model.evals_result_["validation_0"]["ndcg@10"]
    assert [s[:2] for s in first] == [(t, t + 1) for t in range(5)] and all(s[4] for s in first)
    assert [s[2] for s in first] == [int(np.argmax(curve[:t + 1])) for t in range(5)]
    assert [s[3] for s in first] == [max(curve[:t + 1]) for t in range(5)]
    seen.clear()
    model.set_params(n_estimators=3).fit(X, y, qid=qid)  # a refit without an eval set
    assert seen == [(t, t + 1, t, None, True) for t in range(3)]
    assert model.evals_result_ == {} and model.n_iterations_ == 3


def test_lightgbm_style_callback_gets_a_clear_error(data):
    X, y, qid, _, _, _ = data
    with pytest.raises(AttributeError, match="evaluation_result_list.*env.evals_log"):
        _lambdamart(callbacks=[lambda env: env.evaluation_result_list]).fit(X, y, qid=qid)


def _engine_callbacks():
    out = []
    xgboost = pytest.importorskip("xgboost")

    class MyXGBoostCallback(xgboost.callback.TrainingCallback):
        pass

    out += [(xgboost.callback.EarlyStopping(rounds=3), "early_stopping_rounds="),
            (xgboost.callback.EvaluationMonitor(), r"verbose=N"),
            (MyXGBoostCallback(), "xgboost callback")]
    try:
        import lightgbm
    except ImportError:
        return out
    return out + [(lightgbm.early_stopping(3), "early_stopping_rounds="),
                  (lightgbm.log_evaluation(10), "verbose=N"),
                  (lightgbm.record_evaluation({}), "evals_result_"),
                  (lightgbm.reset_parameter(learning_rate=[0.1] * 12), "not supported")]


def test_engine_callbacks_are_refused_with_the_rankers_equivalent(data):
    X, y, qid, _, _, _ = data
    for callback, hint in _engine_callbacks():
        with pytest.raises(TypeError, match=rf"callbacks\[1\] is a (xgboost|lightgbm) callback.*{hint}"):
            _lambdamart(callbacks=[TrainingCallback(), callback]).fit(X, y, qid=qid)
    # A class instead of an instance: its methods would take the ranker for self.
    with pytest.raises(TypeError, match=r"callbacks\[1\] is the class _Recorder, not a callback: pass an "
                                        r"instance, callbacks=\[_Recorder\(...\)\]"):
        _lambdamart(callbacks=[TrainingCallback(), _Recorder]).fit(X, y, qid=qid)
    with pytest.raises(TypeError, match=r"callbacks\[0\] is 3, neither a function"):
        _lambdamart(callbacks=[3]).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="callbacks"):
        _lambdamart(callbacks="print").fit(X, y, qid=qid)  # parameter validation


@pytest.mark.parametrize("estimator", ["em", "pairwise"])
def test_early_stopping_keeps_the_position_bias_of_the_best_iteration(estimator):
    """position_bias="estimate" rewrites the propensities before every
    iteration; early stopping cuts the model back to the best iteration, and
    position_bias_ goes back with it: the estimate its last tree was trained
    with, as training best_iteration_ + 1 iterations leaves it, so score(...,
    position=) and a saved model debias as the kept model was trained, and
    best_score_ is the curve's value there. Before, position_bias_ was the
    last iteration's estimate (EM: 0.2941 at rank 5 against 0.2594), and
    score() on the held-out clicks 0.4104 against 0.4259 for the same trees."""
    from rankkit.datasets import simulate_clicks

    X, y, qid = make_ranking(60, n_features=6, max_docs=20, random_state=0)
    logger = X[:, 0] + np.random.default_rng(0).normal(size=y.shape[0])
    Xc, clicks, sid, position = simulate_clicks(X, y, qid, logger, n_sessions=600, top_k=8, aggregate=False,
                                                random_state=0)
    tr, va = sid < 400, sid >= 400
    kw = dict(n_jobs=1, random_state=0, learning_rate=0.5, eval_metric="dcg@10", backend="numba",
              position_bias="estimate", propensity_estimator=estimator)
    fit = dict(qid=sid[tr], position=position[tr])
    stopped = LambdaMARTRanker(n_estimators=60, early_stopping_rounds=3, **kw).fit(
        Xc[tr], clicks[tr], **fit, eval_set=[(Xc[va], clicks[va])], eval_qid=[sid[va]], eval_position=[position[va]])
    best = stopped.best_iteration_
    assert best + 1 < stopped.n_iterations_  # cut back
    short = LambdaMARTRanker(n_estimators=best + 1, **kw).fit(Xc[tr], clicks[tr], **fit)
    np.testing.assert_array_equal(stopped.predict(Xc[va]), short.predict(Xc[va]))
    np.testing.assert_array_equal(stopped.position_bias_, short.position_bias_)
    held_out = stopped.score(Xc[va], clicks[va], qid=sid[va], position=position[va])
    assert stopped.best_score_ == pytest.approx(held_out, rel=1e-12)
    assert stopped.best_score_ == pytest.approx(stopped.evals_result_["validation_0"]["dcg@10"][best], rel=1e-12)


# -- 3. predict(iteration_range=) -----------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_iteration_range_with_sglb_shrinkage_is_exact(data, backend):
    X, y, qid, Xv, _, _ = data
    rate, eta, n = 0.5, 0.3, 12
    c = 1 - rate * eta  # the factor applied before every iteration t >= 1
    model = _lambdamart(backend, model_shrink_rate=rate).fit(X, y, qid=qid)
    # XGBoost stores leaves as float32: folded factors round there.
    rtol = 1e-6 if backend == "xgboost" else 1e-12
    scale = np.abs(model.predict(Xv)).max()
    # (0, end) is the model after `end` iterations: the same as training `end` iterations.
    for end in (1, 5, n):
        short = _lambdamart(backend, model_shrink_rate=rate, n_estimators=end).fit(X, y, qid=qid)
        np.testing.assert_allclose(model.predict(Xv, iteration_range=(0, end)), short.predict(Xv),
                                   rtol=0, atol=rtol * scale)
    np.testing.assert_array_equal(model.predict(Xv, iteration_range=(0, n)), model.predict(Xv))
    # Tree t counts with its factor relative to `end`: c^(end - 1 - t) times the tree as grown
    # (the range (t, t + 1) is the tree of iteration t in the model after t + 1 iterations).
    trees = [model.predict(Xv, iteration_range=(t, t + 1)) for t in range(n)]
    for start, end in ((0, n), (3, n), (3, 7), (6, 7)):
        want = sum(c ** (end - 1 - t) * trees[t] for t in range(start, end))
        np.testing.assert_allclose(model.predict(Xv, iteration_range=(start, end)), want,
                                   rtol=0, atol=rtol * scale)
        # start > 0: the model after `end` minus the shrunk model after `start`.
        rest = model.predict(Xv, iteration_range=(0, end)) - c ** (end - start) * (
            model.predict(Xv, iteration_range=(0, start)) if start else 0.0)
        np.testing.assert_allclose(model.predict(Xv, iteration_range=(start, end)), rest,
                                   rtol=0, atol=10 * rtol * scale)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_iteration_range_without_shrinkage_adds_up(data, backend):
    X, y, qid, Xv, _, _ = data
    model = _lambdamart(backend).fit(X, y, qid=qid)
    parts = model.predict(Xv, iteration_range=(0, 5)) + model.predict(Xv, iteration_range=(5, 12))
    np.testing.assert_allclose(parts, model.predict(Xv), rtol=0, atol=1e-6 * np.abs(parts).max())
    assert np.abs(model.predict(Xv, iteration_range=(5, 12))).max() > 0


def test_iteration_range_errors_and_early_stopping(data):
    X, y, qid, Xv, yv, qv = data
    model = _lambdamart(n_estimators=200, learning_rate=0.8, max_depth=5, early_stopping_rounds=3).fit(
        X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    kept = model.best_iteration_ + 1
    assert kept < model.n_iterations_
    # The default is the early-stopped model, as XGBoost's best_iteration.
    np.testing.assert_array_equal(model.predict(Xv), model.predict(Xv, iteration_range=(0, kept)))
    with pytest.raises(ValueError, match=rf"early stopping cut it back to best_iteration_ \+ 1 = {kept}"):
        model.predict(Xv, iteration_range=(0, kept + 1))
    with pytest.raises(ValueError, match=r"XGBoost reads \(0, 0\) as the whole model: pass None"):
        model.predict(Xv, iteration_range=(0, 0))
    with pytest.raises(ValueError, match=r"0 <= start < end"):
        model.predict(Xv, iteration_range=(2, 1))
    with pytest.raises(TypeError, match="pair of ints"):
        model.predict(Xv, iteration_range=(0.0, 2))
    with pytest.raises(TypeError, match="pair of ints"):
        model.predict(Xv, iteration_range=3)


# -- 4. progress and the training metric --------------------------------------------------------
def test_verbose_without_eval_set_prints_the_training_metric_and_a_final_line(data, capsys):
    X, y, qid, _, _, _ = data
    model = _lambdamart(eval_metric=["ndcg@10", "map"]).fit(X, y, qid=qid, verbose=5)
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split("\t")[0] for line in lines[:-1]] == ["[0]", "[5]", "[10]", "[11]"]  # and the last
    last = lines[-2].split("\t")
    assert last[1] == f"training-ndcg@10:{model.score(X, y, qid=qid):.5f}"
    assert last[2].startswith("training-map:")
    assert lines[-1] == "trained 12 iterations"
    # Printing the training metric does not record it: nothing was asked for.
    assert model.evals_result_ == {}


def test_training_metric_computed_only_when_printed_or_asked(data, monkeypatch, capsys):
    X, y, qid, _, _, _ = data
    calls = []
    real = training.mean_metric
    monkeypatch.setattr(training, "mean_metric", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    _lambdamart().fit(X, y, qid=qid)
    assert calls == []  # no eval set, no verbose: no metric at all
    _lambdamart().fit(X, y, qid=qid, verbose=5)
    assert calls == ["ndcg@10"] * 4  # iterations 0, 5, 10 and the last, 11
    calls.clear()
    model = _lambdamart().fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid])
    assert calls == ["ndcg@10"] * 12  # asked for: every iteration, recorded
    assert list(model.evals_result_) == ["training"]
    assert model.evals_result_["training"]["ndcg@10"][-1] == pytest.approx(model.score(X, y, qid=qid), rel=1e-12)
    assert capsys.readouterr().out.count("\n") == 5


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_training_entry_with_validation_and_shrinkage(data, backend, capsys):
    X, y, qid, Xv, yv, qv = data
    model = _lambdamart(backend, model_shrink_rate=0.5, langevin=True, diffusion_temperature=1e3)
    model.fit(X, y, qid=qid, eval_set=[(X, y), (Xv, yv)], eval_qid=[qid, qv], verbose=True)
    result = model.evals_result_
    assert list(result) == ["training", "validation_1"]  # names by position, as XGBoost's
    # The training curve is the metric of the model itself (shrinkage folded in) on the training rows.
    assert result["training"]["ndcg@10"][-1] == pytest.approx(model.score(X, y, qid=qid), rel=1e-6)
    assert result["validation_1"]["ndcg@10"][-1] == pytest.approx(model.score(Xv, yv, qid=qv), rel=1e-6)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 13 and lines[3].startswith("[3]\ttraining-ndcg@10:")
    assert lines[3].split("\t")[1:] == [f"training-ndcg@10:{result['training']['ndcg@10'][3]:.5f}",
                                        f"validation_1-ndcg@10:{result['validation_1']['ndcg@10'][3]:.5f}"]
    assert lines[-1] == (f"trained 12 iterations, best iteration {model.best_iteration_}, "
                         f"best validation_1-ndcg@10 {model.best_score_:.5f}")


def test_a_copy_of_the_training_data_is_an_ordinary_eval_set(data):
    X, y, qid, _, _, _ = data
    model = _lambdamart().fit(X, y, qid=qid, eval_set=[(X.copy(), y)], eval_qid=[qid])
    assert list(model.evals_result_) == ["validation_0"]


def test_stopped_by_callback_final_line(data, capsys):
    X, y, qid, _, _, _ = data
    _lambdamart(callbacks=[lambda env: env.iteration == 2]).fit(X, y, qid=qid, verbose=10)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].startswith("[2]\ttraining-ndcg@10:")
    assert lines[-1] == "stopped at iteration 2 by a callback"


def test_plot_metric_draws_the_training_curve(data, tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from rankkit.plotting import plot_metric

    X, y, qid, Xv, yv, qv = data
    model = _lambdamart().fit(X, y, qid=qid, eval_set=[(X, y), (Xv, yv)], eval_qid=[qid, qv])
    ax = plot_metric(model)
    assert [line.get_label() for line in ax.lines] == ["training", "validation_1"]
    ax.figure.savefig(tmp_path / "curves.png")


# -- 10. query sizes (group=) ----------------------------------------------------------------------
def test_qid_from_group():
    np.testing.assert_array_equal(qid_from_group([2, 3, 1]), [0, 0, 1, 1, 1, 2])
    np.testing.assert_array_equal(qid_from_group(np.array([2.0, 0, 1])), [0, 0, 2])
    assert qid_from_group([]).shape == (0,)
    for bad in ([2, -1], [2.5, 1], [[1, 2], [3, 4]], ["a"]):
        with pytest.raises(ValueError, match="non-negative ints"):
            qid_from_group(bad)


@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_fit_with_group_sizes_equals_qid(data, backend):
    X, y, qid, Xv, yv, qv = data
    sizes = np.unique(qid, return_counts=True)[1]  # make_ranking's queries are contiguous and sorted
    vsizes = np.unique(qv, return_counts=True)[1]
    by_qid = _lambdamart(backend).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    by_group = _lambdamart(backend).fit(X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[vsizes])
    np.testing.assert_array_equal(by_group.predict(Xv), by_qid.predict(Xv))
    assert by_group.evals_result_ == by_qid.evals_result_
    # The training data given with the same group object is the "training" entry.
    both = _lambdamart(backend).fit(X, y, group=sizes, eval_set=[(X, y), (Xv, yv)], eval_group=[sizes, vsizes])
    assert list(both.evals_result_) == ["training", "validation_1"]


def test_group_errors(data):
    X, y, qid, Xv, yv, qv = data
    sizes = np.unique(qid, return_counts=True)[1]
    with pytest.raises(ValueError, match=r"qid= and group= were both passed"):
        _lambdamart().fit(X, y, qid=qid, group=sizes)
    df = pd.DataFrame(X).rename(columns=str).assign(qid=qid)
    with pytest.raises(ValueError, match=r"'qid' column and group= was passed"):
        _lambdamart().fit(df, y, group=sizes)
    with pytest.raises(ValueError, match=rf"group sizes add up to {len(y) - 1} rows but there are {len(y)}.*"
                                         "cannot be split with the rows.*qid_from_group"):
        _lambdamart().fit(X, y, group=np.r_[sizes[:-1], sizes[-1] - 1])
    with pytest.raises(ValueError, match=r"eval_qid\[0\]= and eval_group\[0\]= were both passed"):
        _lambdamart().fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv], eval_group=[[len(yv)]])
    with pytest.raises(ValueError, match=r"eval_group\[0\] sizes add up to 3 rows"):
        _lambdamart().fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_group=[[3]])
    with pytest.raises(ValueError, match="eval_group has 2 entries but eval_set has 1"):
        _lambdamart().fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_group=[[3], [4]])
    with pytest.raises(ValueError, match="eval_group was given without eval_set"):
        _lambdamart().fit(X, y, qid=qid, eval_group=[[3]])


def test_group_sizes_are_not_cross_validation_safe_and_say_so(data):
    # scikit-learn slices per-row arrays only: the sizes reach each fold whole.
    X, y, qid, _, _, _ = data
    sizes = np.unique(qid, return_counts=True)[1]
    with pytest.raises(ValueError, match="cannot be split with the rows.*qid_from_group"):
        cross_validate(_lambdamart(), X, y, params={"group": sizes}, cv=KFold(3), error_score="raise")
    # Converted to per-row ids, they are (routed to fit and to score).
    with sklearn.config_context(enable_metadata_routing=True):
        scores = cross_validate(_lambdamart(), X, y, params={"qid": qid_from_group(sizes)}, cv=KFold(3),
                                error_score="raise")["test_score"]
    assert np.all(np.isfinite(scores))


# -- the rankers' signatures carry the new parameters ------------------------------------------------
def test_rankers_take_eval_and_callback_parameters():
    for cls in (est.Ranker, est.StochasticRankRanker, est.YetiRanker, est.LambdaMARTRanker, est.XENDCGRanker,
                est.QueryRMSERanker):
        params = cls().get_params()
        assert params["early_stopping_rounds"] is None and params["callbacks"] is None
        assert "eval_metric" in params
    assert QueryRMSERanker(eval_metric=["mrr", "map"]).get_params()["eval_metric"] == ["mrr", "map"]


def test_every_engine_runs_the_one_loop():
    """Backend.fit owns the boosting loop; the engines supply hooks only."""
    from rankkit._backends import BACKENDS, get_backend
    from rankkit._backends._base import Backend

    for name in BACKENDS:
        try:
            cls = get_backend(name)
        except ImportError:
            continue
        assert cls.fit is Backend.fit, name
        assert "_boost" not in vars(cls), name


def test_noise_resolver_is_pure(data):
    """resolve_diffusion_temperature returns beta and sets nothing; fit stores it."""
    X, y, qid, _, _, _ = data
    ranker = LambdaMARTRanker(n_estimators=2, langevin=True, random_state=0, n_jobs=1)
    objective = ranker._objective_for_fit()
    train = ranker._prepare(X, y, qid, objective, reset=True)
    before = dict(vars(ranker))
    beta = training.resolve_diffusion_temperature(True, "auto", 0.1, objective, train, 7)
    assert vars(ranker).keys() == before.keys()
    assert beta == training.resolve_diffusion_temperature(True, "auto", 0.1, objective, train, 7) > 0
    assert training.resolve_diffusion_temperature(False, "auto", 0.1, objective, train, 7) is None
    assert training.resolve_diffusion_temperature(True, 5.0, 0.1, objective, train, 7) == 5.0
    assert training.langevin_scale(0.1, None) == 0.0
    with pytest.raises(ValueError, match="overflows"):
        training.langevin_scale(1e-160, 1e-160)
    assert ranker.fit(X, y, qid=qid).diffusion_temperature_ > 0


# -- units of reg_lambda and min_child_weight ------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS_UNDER_TEST)
def test_long_queries_count_as_several_units_of_curvature(backend):
    """On queries longer than ``UNIT_DOCUMENTS`` documents on average,
    ``reg_lambda`` and ``min_child_weight`` reach the engine times
    ``UNIT_DOCUMENTS * n_queries / n_rows`` for the per-query Newton losses,
    unchanged for the losses whose hessians count documents; on short
    queries they are the ranker's own numbers."""
    long_X, long_y, long_q = make_ranking(30, n_features=5, min_docs=80, max_docs=120, random_state=1)
    short_X, short_y, short_q = make_ranking(30, n_features=5, min_docs=2, max_docs=20, random_state=1)
    unit = training.UNIT_DOCUMENTS * 30 / long_y.size
    assert unit < 0.3
    kw = dict(n_estimators=2, max_depth=2, n_jobs=1, random_state=0, backend=backend)
    for cls, scaled in ((LambdaMARTRanker, True), (QueryRMSERanker, False)):
        model = cls(**kw, reg_lambda=2.0, min_child_weight=0.5).fit(long_X, long_y, qid=long_q)
        factor = unit if scaled else 1.0
        assert model.backend_.reg_lambda == pytest.approx(2.0 * factor, rel=1e-15)
        assert model.backend_.min_child_weight == pytest.approx(0.5 * factor, rel=1e-15)
        assert model.get_params()["reg_lambda"] == 2.0  # the ranker's parameter is untouched
        short = cls(**kw, reg_lambda=2.0, min_child_weight=0.5).fit(short_X, short_y, qid=short_q)
        assert (short.backend_.reg_lambda, short.backend_.min_child_weight) == (2.0, 0.5)


def test_curvature_unit():
    """One query of curvature, or ``UNIT_DOCUMENTS`` documents when queries
    are longer on average; documents for the losses that count them."""
    from rankkit.objectives import XENDCG, LambdaMART, QueryRMSE, StochasticRank, YetiRank

    n = training.UNIT_DOCUMENTS
    for objective in (LambdaMART(), YetiRank(), XENDCG()):
        assert training.curvature_unit(objective, 10, 10 * n) == 1.0
        assert training.curvature_unit(objective, 10, 5 * n) == 1.0
        assert training.curvature_unit(objective, 10, 40 * n) == 0.25
    for objective in (QueryRMSE(), StochasticRank()):
        assert training.curvature_unit(objective, 10, 40 * n) == 1.0


def test_early_stopping_on_a_metric_that_is_nan_is_an_error(data):
    """A scorer with empty="exclude" on an eval set without relevant documents is
    NaN at every iteration: no iteration beat the first, and early stopping cut
    the model back to one tree without a word."""
    from rankkit.metrics import make_ranking_scorer

    X, y, qid, Xv, _, qv = data
    ranker = _lambdamart(n_estimators=20, early_stopping_rounds=3,
                         eval_metric=make_ranking_scorer("mrr", empty="exclude"))
    with pytest.raises(ValueError, match="early stopping watches mrr on validation_0, and it is NaN"):  # "str"
        ranker.fit(X, y, qid=qid, eval_set=[(Xv, np.zeros_like(Xv[:, 0]))], eval_qid=[qv])
    # without early stopping the NaN curve is only recorded
    model = _lambdamart(n_estimators=4, eval_metric=make_ranking_scorer("mrr", empty="exclude")).fit(
        X, y, qid=qid, eval_set=[(Xv, np.zeros_like(Xv[:, 0]))], eval_qid=[qv])
    assert model.n_iterations_ == 4 and np.isnan(model.evals_result_["validation_0"][next(
        iter(model.evals_result_["validation_0"]))]).all()
