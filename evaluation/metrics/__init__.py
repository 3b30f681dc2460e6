"""Automatic metrics: registry, built-ins and the compatibility configurations."""

from evaluation.metrics.base import Metric, MetricCard, MetricInputs, MetricResult
from evaluation.metrics.registry import create, families, load_plugin_file, metric, register

__all__ = [
    "Metric",
    "MetricCard",
    "MetricInputs",
    "MetricResult",
    "create",
    "families",
    "load_plugin_file",
    "metric",
    "register",
]
