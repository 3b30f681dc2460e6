"""What every metric is: a card, a versioned configuration with a mechanical signature, and `compute`."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evaluation.loglik import LogLikelihoods

Progress = Callable[[int, int], None]
"""Called as progress(done, total) by metrics that work through large inputs in chunks."""


@dataclass(frozen=True)
class MetricCard:
    """What a metric measures, for people: shown by `chateval metrics list` and on the hub."""

    description: str
    higher_is_better: bool | None
    citation: str = ""
    needs: tuple[str, ...] = ("responses",)  # any of: responses, references, loglik, embeddings


@dataclass(frozen=True)
class MetricInputs:
    """Everything a metric may read, aligned by prompt (index i is the dataset's i-th prompt)."""

    responses: Sequence[str]
    references: Sequence[Sequence[str]]
    prompt_ids: Sequence[str] = ()
    loglik: LogLikelihoods | None = None


@dataclass(frozen=True)
class MetricResult:
    """A corpus score, one score per prompt (None where a prompt was left out) and the signature."""

    metric: str
    version: str
    signature: str
    corpus: float
    per_prompt: list[float | None]
    higher_is_better: bool | None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, per_prompt: bool = True) -> dict[str, Any]:
        # asdict copies element by element: the per-prompt list (100,000 floats) is shared instead
        data = dataclasses.asdict(dataclasses.replace(self, per_prompt=[]))
        if per_prompt:
            data["per_prompt"] = list(self.per_prompt)
        else:
            data.pop("per_prompt")
        return data


def _signature_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


class Metric(ABC):
    """A metric family (e.g. `distinct`) with one configuration (e.g. n=2).

    Subclasses declare `family`, `version`, `card` and a frozen dataclass `Config`; optionally `parameter`,
    the config field that a numeric suffix sets (`distinct-3` -> n=3).
    """

    family: ClassVar[str]
    version: ClassVar[str]
    card: ClassVar[MetricCard]
    Config: ClassVar[type]
    parameter: ClassVar[str | None] = None

    def __init__(self, config: Any | None = None):
        self.config = config if config is not None else self.Config()

    @property
    def name(self) -> str:
        if self.parameter is None:
            return self.family
        return f"{self.family}-{getattr(self.config, self.parameter)}"

    def library_versions(self) -> dict[str, str]:
        """Versions of third-party code whose behaviour the scores depend on; part of the signature."""
        return {}

    def signature_fields(self) -> dict[str, Any]:
        """The whole configuration, field by field, so no setting can be left out of the signature."""
        return {f.name: getattr(self.config, f.name) for f in dataclasses.fields(self.config)}

    @property
    def signature(self) -> str:
        parts = [f"{self.name}", f"v{self.version}"]
        parts += [f"{k}={_signature_value(v)}" for k, v in sorted(self.signature_fields().items())]
        parts += [f"{k}={v}" for k, v in sorted(self.library_versions().items())]
        return "|".join(parts)

    def result(self, corpus: float, per_prompt: Sequence[float | None], **details: Any) -> MetricResult:
        return MetricResult(
            metric=self.name,
            version=self.version,
            signature=self.signature,
            corpus=float(corpus),
            per_prompt=[None if v is None else float(v) for v in per_prompt],
            higher_is_better=self.card.higher_is_better,
            details=details,
        )

    @abstractmethod
    def compute(self, inputs: MetricInputs, *, progress: Progress | None = None) -> MetricResult:
        """Score all responses; must be deterministic."""
