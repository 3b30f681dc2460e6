"""Runs a set of metrics over one response file of one dataset and collects the results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import evaluation
from evaluation.dataset import Dataset
from evaluation.errors import ConfigurationError
from evaluation.loglik import LogLikelihoods
from evaluation.metrics.base import MetricInputs, MetricResult
from evaluation.metrics.compat import compat_overrides
from evaluation.metrics.registry import create, families

DEFAULT_METRICS = ("distinct-1", "distinct-2", "avg-length", "bleu-2", "embedding-average", "perplexity")

EvaluationProgress = Callable[[str, int, int], None]
"""Called as progress(metric_name, done, total)."""


@dataclass(frozen=True)
class MetricOutcome:
    """A metric's result, or the plain reason it could not run (e.g. no word vectors configured)."""

    metric: str
    result: MetricResult | None = None
    unavailable: str | None = None

    def to_dict(self, *, per_prompt: bool = True) -> dict[str, Any]:
        if self.result is None:
            return {"metric": self.metric, "unavailable": self.unavailable}
        return self.result.to_dict(per_prompt=per_prompt)


@dataclass(frozen=True)
class EvaluationReport:
    dataset: str
    prompt_ids: tuple[str, ...]
    outcomes: list[MetricOutcome] = field(default_factory=list)
    toolkit_version: str = evaluation.__version__

    def to_dict(self, *, per_prompt: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "dataset": self.dataset,
            "toolkit_version": self.toolkit_version,
            "prompts": len(self.prompt_ids),
            "metrics": [o.to_dict(per_prompt=per_prompt) for o in self.outcomes],
        }
        if per_prompt:
            data["prompt_ids"] = list(self.prompt_ids)
        return data


def evaluate(
    dataset: Dataset,
    responses: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    compat: str | None = None,
    embeddings: str | None = None,
    loglik: LogLikelihoods | None = None,
    progress: EvaluationProgress | None = None,
) -> EvaluationReport:
    """Score `responses` (in dataset order). Metrics asked for by name must run; of the defaults, those
    missing an input (vectors, log-likelihoods) are reported as unavailable with the reason."""
    explicit = metrics is not None
    overrides = {family: dict(values) for family, values in compat_overrides(compat).items()}
    if embeddings:
        overrides.setdefault("embedding-average", {})["vectors"] = str(embeddings)
    inputs = MetricInputs(
        responses=list(responses), references=dataset.references, prompt_ids=dataset.prompt_ids, loglik=loglik
    )
    report = EvaluationReport(dataset=dataset.fingerprint, prompt_ids=dataset.prompt_ids)
    for spec in metrics if metrics is not None else default_metric_names():
        metric = create(spec, overrides)
        missing = _missing_input(metric.card.needs, embeddings=embeddings, loglik=loglik)
        if missing and not explicit:
            report.outcomes.append(MetricOutcome(metric=metric.name, unavailable=missing))
            continue
        if missing:
            raise ConfigurationError(f"{metric.name}: {missing}")

        def step(done: int, total: int, name: str = metric.name) -> None:
            if progress:
                progress(name, done, total)

        result = metric.compute(inputs, progress=step)
        step(1, 1)
        report.outcomes.append(MetricOutcome(metric=metric.name, result=result))
    return report


def default_metric_names() -> list[str]:
    """The built-in defaults plus every registered plugin metric, so plugins run without being named."""
    shipped = ("evaluation.metrics.", "evaluation.function_metrics.")  # shipped ones run when named
    plugins = [name for name, cls in families().items() if not cls.__module__.startswith(shipped)]
    return [*DEFAULT_METRICS, *(name for name in plugins if families()[name].parameter is None)]


def _missing_input(needs: Sequence[str], *, embeddings: str | None, loglik: LogLikelihoods | None) -> str | None:
    if "embeddings" in needs and not embeddings:
        return "no word vectors configured (pass --embeddings PATH)"
    if "conversations" in needs:
        return "scores whole conversations (use chateval evaluate --conversations FILE)"
    if "loglik" in needs and loglik is None:
        return "no reference log-likelihood file given (pass --loglik FILE)"
    return None
