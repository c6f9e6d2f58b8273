"""The contract between rankers and boosting engines.

A backend knows trees, never what a query means. The ranker hands it the
training features (rows already sorted by query), a gradient callback and an
SGLB shrink schedule; the backend grows one tree per iteration and keeps the
raw scores of the training set and of every eval set up to date, *including*
shrinkage, so that gradients and eval metrics always see the model that will
be saved.

Iteration ``t`` (0-based) of :meth:`Backend.fit`:

1. ``factor = shrink(t)`` (``None``: no shrinkage); the whole model, and so
   every tracked raw score, is multiplied by ``factor`` (SGLB step 1);
2. ``grad, hess = grad_fn(raw_train, t)`` (SGLB noise is added inside);
3. a tree is grown on ``grad, hess`` (gradient leaves when the ranker says the
   objective has no useful hessian: the ranker then passes ``hess = 1``),
   scaled by ``learning_rate``, and added to the model and raw scores;
4. ``callback(t, raw_train, raw_evals)`` returns True to stop.

After ``fit`` the backend's own model object predicts exactly the tracked raw
scores (shrink factors folded into leaves where the engine cannot scale old
trees in place).
"""

from __future__ import annotations

COMMON_PARAMS = (
    "n_estimators",
    "learning_rate",
    "max_depth",
    "min_child_weight",
    "reg_lambda",
    "subsample",
    "colsample_bytree",
    "max_bin",
    "n_jobs",
    "random_state",
)


class Backend:
    """Base class; see the module docstring for the training loop."""

    name = None

    def __init__(self, *, n_estimators, learning_rate, max_depth, min_child_weight, reg_lambda,
                 subsample, colsample_bytree, max_bin, n_jobs, random_state, backend_params=None):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.max_bin = max_bin
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.backend_params = dict(backend_params or {})

    def fit(self, X, grad_fn, *, eval_X=(), shrink=None, callback=None, feature_names=None):
        """Train; see the module docstring. Returns self."""
        raise NotImplementedError

    def predict(self, X, n_iterations=None):
        """Raw scores (float64) of the first ``n_iterations`` trees (all by default)."""
        raise NotImplementedError

    def truncate(self, n_iterations):
        """Keep the model as it was after ``n_iterations`` iterations (early stopping)."""
        raise NotImplementedError

    def feature_importances(self, importance_type="gain"):
        """Per-feature importance, normalised to sum to 1 (zeros if no split)."""
        raise NotImplementedError
