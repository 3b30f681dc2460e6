"""Reply rules of the local endpoint server: a regex on the last user message picks a reply template."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaluation.errors import InvalidInputError, NotFoundError

MAX_RULES_BYTES = 1024 * 1024
GROUP_REF = re.compile(r"\\(\d+)|\\g<(\w+)>")
FaultKind = Literal["rate_limit", "server_error", "slow", "drop", "non_json", "empty_choices", "stall_stream"]


class FaultSpec(BaseModel):
    """A fault the server injects on the next `times` requests (every request when `times` is omitted)."""

    model_config = ConfigDict(extra="forbid")
    kind: FaultKind
    times: int | None = Field(default=None, ge=1, le=10**9)
    retry_after_s: float = Field(default=1.0, ge=0.0, le=3_600.0)
    delay_s: float = Field(default=5.0, ge=0.0, le=3_600.0)


class RuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(min_length=1, max_length=10_000)
    reply: str = Field(max_length=100_000, description=r"Template; \1 or \g<name> insert the match's groups.")


class RulesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    default: str = Field(default="I am a local test endpoint.", max_length=100_000)
    rules: list[RuleSpec] = Field(default_factory=list, max_length=10_000)
    faults: list[FaultSpec] = Field(default_factory=list, max_length=100)


@dataclass(frozen=True)
class ReplyRules:
    """First matching rule wins (re.search on the last user message); otherwise the default reply."""

    compiled: tuple[tuple[re.Pattern[str], str], ...] = ()
    default: str = "I am a local test endpoint."
    faults: tuple[FaultSpec, ...] = ()

    def reply(self, last_user_message: str) -> str:
        for pattern, template in self.compiled:
            match = pattern.search(last_user_message)
            if match:
                return match.expand(template)
        return self.default

    @classmethod
    def from_spec(cls, spec: RulesFile, *, source: str | Path | None = None) -> ReplyRules:
        compiled = []
        for number, rule in enumerate(spec.rules):
            try:
                pattern = re.compile(rule.pattern)
            except re.error as exc:
                raise InvalidInputError(f"rules[{number}].pattern: not a valid regex ({exc})", path=source) from exc
            for ref in GROUP_REF.findall(rule.reply):
                name = next(part for part in ref if part)
                known = int(name) <= pattern.groups if name.isdigit() else name in pattern.groupindex
                if not known:
                    raise InvalidInputError(
                        f"rules[{number}].reply: refers to group {name!r}, which the pattern does not have",
                        path=source,
                    )
            compiled.append((pattern, rule.reply))
        return cls(tuple(compiled), spec.default, tuple(spec.faults))

    @classmethod
    def from_file(cls, path: str | Path) -> ReplyRules:
        """Load `default:`, `rules: [{pattern, reply}]` and optional `faults: [{kind, times, ...}]` from YAML."""
        path = Path(path)
        if not path.is_file():
            raise NotFoundError("rules file not found", path=path)
        if path.stat().st_size > MAX_RULES_BYTES:
            raise InvalidInputError(f"rules file is larger than {MAX_RULES_BYTES:,} bytes", path=path)
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (UnicodeDecodeError, yaml.YAMLError) as exc:
            raise InvalidInputError(f"rules file is not valid YAML ({exc})", path=path) from exc
        try:
            spec = RulesFile.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "rules file"
            raise InvalidInputError(f"{where}: {first['msg']}", path=path) from None
        return cls.from_spec(spec, source=path)
