"""Function metrics: plain Python functions over each turn (or response) or whole conversation, with gates."""

from evaluation.function_metrics.registry import function_metric, function_metrics
from evaluation.function_metrics.spec import Dependency, FunctionMetricSpec

__all__ = ["Dependency", "FunctionMetricSpec", "function_metric", "function_metrics"]
