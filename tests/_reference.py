"""Naive, obviously-correct references for every numba kernel: the executable spec.

Each area keeps its references in its own module; this index names them.
Tests compare the fast kernels with these on random inputs full of ties,
single-document queries and all-zero-label queries.

- :mod:`tests._reference_metrics`: every metric from an explicit order
  (``value_of_order``, the one naive metric every reference uses), tie
  policies by sorting, ``ties="average"`` by enumerating tied blocks.
- :mod:`tests._reference_random`: the counter-based generator and each
  objective's keying of its noise, re-implemented from the specification.
- :mod:`tests._reference_objectives`: swap differences by recomputing the metric
  after the swap; LambdaMART, YetiRank/YetiLoss and XE-NDCG by brute force.
- :mod:`tests._reference_stochastic_rank`: the CCS estimate by inserting each
  document at every position and recomputing the metric; SFA.
- :mod:`tests._reference_gbm`: histograms, split finding, tree growth and
  prediction of the numba booster, in plain Python.
"""

from . import _reference_gbm as gbm  # noqa: F401
from . import _reference_metrics as metrics  # noqa: F401
from . import _reference_objectives as objectives  # noqa: F401
from . import _reference_random as random  # noqa: F401
from . import _reference_stochastic_rank as stochastic_rank  # noqa: F401
