"""ChatEval evaluation toolkit: datasets, response files and automatic metrics, with no server involved."""

__version__ = "0.1.0"
