"""The chat client against a real local HTTP server: answers, retries, failures by kind, concurrency, usage."""

from __future__ import annotations

import logging
import socket

import pytest

from evaluation.llm.client import ChatClient, retry_after_seconds
from evaluation.llm.errors import (
    EndpointAuthError,
    EndpointMalformed,
    EndpointRateLimited,
    EndpointServerError,
    EndpointTimeout,
    EndpointUnreachable,
)
from evaluation.llm.server import LocalChatServer
from tests.llm.conftest import KEY, fast_config

HELLO = [{"role": "user", "content": "hello there"}]


def test_completion_carries_text_tokens_and_model(client, server):
    server.responder = lambda request: f"echo: {request['messages'][-1]['content']} ({request['model']})"
    result = client.complete(HELLO)
    assert result.text == "echo: hello there (judge-1)"
    assert (result.prompt_tokens, result.completion_tokens) == (2, 4)
    assert result.finish_reason == "stop" and result.model == "judge-1" and not result.cached
    assert client.usage.calls == 1 and client.usage.prompt_tokens == 2 and client.usage.completion_tokens == 4


def test_request_sends_configured_model_temperature_and_max_tokens(server):
    seen = []
    server.responder = lambda request: seen.append(request) or "ok"
    client = ChatClient(fast_config(server.base_url, temperature=0.7, max_tokens=33))
    client.complete(HELLO)
    client.complete(HELLO, temperature=0.0, max_tokens=5)
    assert [(r["model"], r["temperature"], r["max_tokens"]) for r in seen] == [
        ("judge-1", 0.7, 33),
        ("judge-1", 0.0, 5),
    ]
    with pytest.raises(TypeError, match="unknown override"):
        client.complete(HELLO, api_key="x")


def test_rate_limited_then_succeeds_honouring_retries(client, server):
    server.inject("rate_limit", times=2, retry_after_s=0.05)
    assert client.complete(HELLO).text
    assert server.counts["rate_limit"] == 2 and server.counts["/v1/chat/completions"] == 3
    assert client.usage.retries == 2 and client.usage.failed_calls == 0


def test_rate_limit_exhausted_is_its_own_error(client, server):
    server.inject("rate_limit", retry_after_s=0.01)
    with pytest.raises(EndpointRateLimited, match=r"rate-limiting \(HTTP 429\) after 4 attempt"):
        client.complete(HELLO)
    assert server.counts["/v1/chat/completions"] == 4  # 1 + max_retries
    assert client.usage.failed_calls == 1


@pytest.mark.parametrize("kind", ["server_error", "drop"])
def test_server_errors_and_dropped_connections_are_retried(client, server, kind):
    server.inject(kind, times=2)
    assert client.complete(HELLO).text == "I am a local test endpoint."
    assert server.counts[kind] == 2 and server.counts["/v1/chat/completions"] == 3


def test_server_error_exhausted(client, server):
    server.inject("server_error")
    with pytest.raises(EndpointServerError, match="HTTP 500 after 4 attempt"):
        client.complete(HELLO)


def test_timeout_is_retried_then_reported(server):
    client = ChatClient(fast_config(server.base_url, timeout_s=0.2, max_retries=1))
    server.inject("slow", times=1, delay_s=2.0)
    assert client.complete(HELLO).text  # the second attempt is answered at once
    server.inject("slow", delay_s=2.0)
    with pytest.raises(EndpointTimeout, match=r"within 0\.2 s"):
        client.complete(HELLO)


def test_unreachable_endpoint():
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = ChatClient(fast_config(f"http://127.0.0.1:{port}/v1", max_retries=2))
    with pytest.raises(EndpointUnreachable, match=f"cannot reach http://127.0.0.1:{port}/v1/chat/completions") as info:
        client.complete(HELLO)
    assert info.value.exit_code == 6


def test_wrong_key_is_refused_at_once_and_never_echoed(server):
    client = ChatClient(fast_config(server.base_url, api_key="sk-wrong-key-0123456789abcdef"))
    with pytest.raises(EndpointAuthError, match="refused the API key") as info:
        client.complete(HELLO)
    assert server.counts["unauthorized"] == 1  # not retried
    assert "sk-wrong" not in str(info.value) and "0123456789abcdef" not in str(info.value)
    assert info.value.exit_code == 7


@pytest.mark.parametrize(
    ("kind", "message"),
    [("non_json", "not JSON"), ("empty_choices", "empty or missing 'choices'")],
)
def test_malformed_answers(client, server, kind, message):
    server.inject(kind, times=1)
    with pytest.raises(EndpointMalformed, match=message):
        client.complete(HELLO)


def test_missing_content_is_malformed(client, server):
    server.responder = lambda request: None  # the server then sends "content": null
    with pytest.raises(EndpointMalformed, match="no message content"):
        client.complete(HELLO)


def test_complete_many_keeps_order_and_isolates_a_failure(server):
    client = ChatClient(fast_config(server.base_url, concurrency=4, max_retries=0))
    server.responder = lambda request: request["messages"][-1]["content"].upper()
    server.inject("server_error", times=1)
    requests = [[{"role": "user", "content": f"prompt {i}"}] for i in range(40)]
    results = client.complete_many(requests)
    failures = [r for r in results if isinstance(r, EndpointServerError)]
    assert len(failures) == 1
    for i, result in enumerate(results):
        if not isinstance(result, EndpointServerError):
            assert result.text == f"PROMPT {i}"
    assert client.usage.calls == 39 and client.usage.failed_calls == 1


def test_concurrency_is_limited():
    with LocalChatServer(latency_s=0.05) as server:
        client = ChatClient(fast_config(server.base_url, concurrency=3))
        results = client.complete_many([[{"role": "user", "content": f"{i}"}] for i in range(24)])
    assert all(r.text for r in results)
    assert server.max_in_flight == 3


def test_auth_failure_stops_the_requests_not_yet_sent(server):
    client = ChatClient(fast_config(server.base_url, api_key="sk-wrong-key-0123456789abcdef", concurrency=2))
    results = client.complete_many([HELLO] * 20)
    assert all(isinstance(r, EndpointAuthError) for r in results)
    assert server.counts["unauthorized"] <= 2


def test_cost_accounting_uses_the_configured_prices(server):
    server.responder = lambda request: "one two three four five"
    client = ChatClient(fast_config(server.base_url, price_prompt_per_1k=0.5, price_completion_per_1k=1.5))
    client.complete_many([[{"role": "user", "content": "a b c"}]] * 10)
    usage = client.usage
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (10, 30, 50)
    assert usage.cost_usd == pytest.approx(30 / 1000 * 0.5 + 50 / 1000 * 1.5)
    assert "cost $0.0900" in usage.summary()
    assert ChatClient(fast_config(server.base_url)).usage.cost_usd is None


def test_bad_messages_are_refused_naming_the_request(client):
    from evaluation.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="request 1, message 0: role must be one of"):
        client.complete_many([HELLO, [{"role": "robot", "content": "x"}]])
    with pytest.raises(InvalidInputError, match="request 0: messages must be a list"):
        client.complete([])


def test_backoff_honours_retry_after_with_a_cap(server):
    client = ChatClient(fast_config(server.base_url, backoff_base_s=1.0, backoff_max_s=8.0, retry_after_cap_s=20.0))
    for attempt in range(6):
        assert 0.0 <= client._backoff(attempt, None) <= min(8.0, 2.0**attempt)
    assert 3.0 <= client._backoff(0, 3.0) <= 3.0 + 0.1
    assert 20.0 <= client._backoff(0, 500.0) <= 20.0 + 0.1  # capped
    assert retry_after_seconds("2.5") == 2.5
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_works_when_called_from_async_code(client):
    import asyncio

    async def inside_a_loop():
        return client.complete(HELLO)

    assert asyncio.run(inside_a_loop()).text


def test_key_never_in_logs(server, caplog):
    caplog.set_level(logging.DEBUG)
    client = ChatClient(fast_config(server.base_url))
    server.inject("rate_limit", times=1, retry_after_s=0.01)
    client.complete(HELLO)
    bad = ChatClient(fast_config(server.base_url, api_key=KEY[::-1]))
    with pytest.raises(EndpointAuthError):
        bad.complete(HELLO)
    assert "retrying" in caplog.text  # the retry was logged ...
    assert KEY not in caplog.text and KEY[::-1] not in caplog.text  # ... without either key
    assert KEY not in repr(client) and KEY not in str(client.config) and KEY not in client.config.model_dump_json()


def test_an_oversized_answer_is_refused(client, server):
    server.responder = lambda request: "x" * (33 * 1024 * 1024)
    with pytest.raises(EndpointMalformed, match="larger than 33,554,432 bytes"):
        client.complete(HELLO)
