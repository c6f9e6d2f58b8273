"""rankkit's own histogram gradient-boosting engine (numba).

One module per concern, after scikit-learn's ``_hist_gradient_boosting`` and
pygbm: :mod:`.binning` (quantile bins, uint8, in groups of 8 features),
:mod:`.histogram` (gradient/hessian histograms, sibling subtraction),
:mod:`.splitting` (best split per node, learned missing direction),
:mod:`.grower` (depth-wise and oblivious trees), :mod:`.predictor`
(traversal on raw or binned features) and :mod:`.booster` (the model: trees
and their SGLB scales). Trees are NumPy record arrays of
:data:`.tree.NODE_DTYPE`, so models pickle without special code.
"""
