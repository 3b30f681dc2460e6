"""Imports the built-in metrics so that they register themselves, like any plugin would."""

from evaluation.metrics import bleu, distinct, embedding, perplexity  # noqa: F401
