"""Token counts for a model request: each model family's own tokenizer, or the estimator where
none fits.

:mod:`harness.tokens.base` holds the :class:`~harness.tokens.base.Tokenizer` interface, the
framing and the totals; :mod:`harness.tokens.counts` the cached content counts;
:mod:`harness.tokens.estimator` the heuristic for models no tokenizer fits;
:mod:`harness.tokens.tokenizers` which tokenizer and framing each model has.
"""
