"""Typed errors for bad user input: each carries a message naming the file and, where known, the line."""

from __future__ import annotations

from pathlib import Path


class EvaluationError(Exception):
    """Base class of every error the toolkit raises on purpose; `exit_code` is what the CLI returns."""

    exit_code = 1

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        super().__init__(self.describe())

    def describe(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}, line {self.line}"
            where += ": "
        return f"{where}{self.message}"


class InvalidInputError(EvaluationError):
    """A user-supplied file (responses, log-likelihoods, dataset) is malformed."""

    exit_code = 3


class NotFoundError(EvaluationError):
    """A named dataset, metric or file does not exist."""

    exit_code = 4


class ConfigurationError(EvaluationError):
    """A metric cannot run as configured (e.g. no word vectors given for embedding-average)."""

    exit_code = 5


class NetworkError(EvaluationError):
    """A server could not be reached or failed to answer: a dataset download (`chateval datasets fetch`) or the hub
    (`chateval submit`: connection refused, time-out, no hub at the address, 5xx, busy). Trying again later may work."""

    exit_code = 8


class CredentialsRefused(EvaluationError):
    """The hub refused the API token (HTTP 401/403): unknown, revoked, or the account is disabled."""

    exit_code = 9
