"""Fixtures of the LLM tests: a real local OpenAI-compatible server and a client pointed at it with fast retries."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evaluation.llm.client import ChatClient
from evaluation.llm.config import EndpointConfig
from evaluation.llm.server import LocalChatServer

KEY = "sk-test-7f3a9c2e41b84d6a9e0c55d1"
CHATEVAL = str(Path(sys.executable).parent / "chateval")


@pytest.fixture
def server():
    with LocalChatServer(expected_key=KEY) as running:
        yield running


def fast_config(base_url: str, **fields) -> EndpointConfig:
    """Retries that wait milliseconds, so fault tests finish quickly."""
    defaults = dict(api_key=KEY, backoff_base_s=0.01, backoff_max_s=0.05, retry_after_cap_s=0.2, max_retries=3)
    return EndpointConfig(base_url=base_url, model="judge-1", **{**defaults, **fields})


@pytest.fixture
def client(server) -> ChatClient:
    return ChatClient(fast_config(server.base_url))
