"""Where an LLM endpoint is and how to call it: from keyword arguments, a per-run YAML/JSON file, or settings."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from evaluation.errors import ConfigurationError, InvalidInputError, NotFoundError

MAX_CONFIG_BYTES = 64 * 1024


class EndpointConfig(BaseModel):
    """One OpenAI-compatible chat endpoint. The key is a SecretStr: masked in repr, str and JSON dumps."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(min_length=1, max_length=2_000, description="Up to and including /v1.")
    model: str = Field(min_length=1, max_length=200)
    api_key: SecretStr | None = Field(default=None, description="Sent as a Bearer token; never logged or cached.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1, le=131_072)
    timeout_s: float = Field(default=60.0, gt=0.0, le=3_600.0)
    concurrency: int = Field(default=8, ge=1, le=512)
    max_retries: int = Field(default=6, ge=0, le=20)
    price_prompt_per_1k: float | None = Field(default=None, ge=0.0, description="USD per 1,000 prompt tokens.")
    price_completion_per_1k: float | None = Field(default=None, ge=0.0, description="USD per 1,000 completion tokens.")
    backoff_base_s: float = Field(default=0.5, ge=0.0, le=60.0, description="First retry waits up to this long.")
    backoff_max_s: float = Field(default=30.0, ge=0.0, le=600.0, description="Longest wait between two attempts.")
    retry_after_cap_s: float = Field(default=60.0, ge=0.0, le=600.0, description="Longest Retry-After honoured.")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    def secret_key(self) -> str | None:
        return self.api_key.get_secret_value() if self.api_key is not None else None

    def public_dict(self) -> dict[str, Any]:
        """Every setting except the key (which is reported only as set or not)."""
        data = self.model_dump(exclude={"api_key"})
        data["api_key_set"] = self.api_key is not None
        return data

    def __str__(self) -> str:
        return f"EndpointConfig({self.model} at {self.base_url}, key {'set' if self.api_key else 'not set'})"

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> EndpointConfig:
        """Read a YAML or JSON file; the key is named by `api_key_env: VAR`, never written in the file."""
        path = Path(path)
        if not path.is_file():
            raise NotFoundError("endpoint config file not found", path=path)
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise InvalidInputError(f"endpoint config is larger than {MAX_CONFIG_BYTES:,} bytes", path=path)
        try:
            text = path.read_text(encoding="utf-8")
            raw = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        except (UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as exc:
            raise InvalidInputError(f"endpoint config is not valid YAML/JSON ({exc})", path=path) from exc
        if not isinstance(raw, dict):
            raise InvalidInputError("endpoint config must be a mapping of settings", path=path)
        if "api_key" in raw:
            raise InvalidInputError(
                "'api_key' must not be written in a config file; set 'api_key_env: VARIABLE' and export the key",
                path=path,
            )
        fields = dict(raw)
        env_name = fields.pop("api_key_env", None)
        if env_name is not None:
            if not isinstance(env_name, str) or not env_name:
                raise InvalidInputError("'api_key_env' must name an environment variable", path=path)
            if env_name not in os.environ:
                raise ConfigurationError(f"'api_key_env' names {env_name}, which is not set", path=path)
            fields["api_key"] = os.environ[env_name]
        fields.update({k: v for k, v in overrides.items() if v is not None})
        return cls.build(fields, source=path)

    @classmethod
    def from_settings(cls, **overrides: Any) -> EndpointConfig:
        """Read CHATEVAL_LLM_BASE_URL, CHATEVAL_LLM_MODEL and CHATEVAL_LLM_API_KEY; keyword arguments win."""
        settings = LLMSettings()
        fields: dict[str, Any] = {
            "base_url": settings.base_url,
            "model": settings.model,
            "api_key": settings.api_key if settings.api_key and settings.api_key.get_secret_value() else None,
        }
        fields.update({k: v for k, v in overrides.items() if v is not None})
        missing = [name for name in ("base_url", "model") if not fields.get(name)]
        if missing:
            raise ConfigurationError(
                "no endpoint " + " or ".join(missing) + ": give --endpoint/--model, a --config file, "
                "or set CHATEVAL_LLM_BASE_URL and CHATEVAL_LLM_MODEL"
            )
        return cls.build(fields, source=None)

    @classmethod
    def build(cls, fields: dict[str, Any], *, source: str | Path | None) -> EndpointConfig:
        """Validate fields into a config; an error names the field and never echoes the key."""
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "config"
            raise InvalidInputError(f"endpoint setting {where!r}: {first['msg']}", path=source) from None


class LLMSettings(BaseSettings):
    """Default endpoint from the environment (`CHATEVAL_LLM_*`), used when a command names none."""

    model_config = SettingsConfigDict(env_prefix="CHATEVAL_LLM_", extra="ignore")

    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
