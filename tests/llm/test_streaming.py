"""Streamed chat completions against the real local server: the deltas are the reply word by word and add up to
the non-streamed reply; a stream that stalls past the time-out, a refused key, a server error and a connection that
is not there each raise their own error, with the key never in a message."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from evaluation.llm.client import ChatClient
from evaluation.llm.errors import EndpointAuthError, EndpointServerError, EndpointTimeout, EndpointUnreachable
from evaluation.llm.rules import ReplyRules, RulesFile
from evaluation.llm.server import LocalChatServer
from evaluation.llm.streaming import ChatStream, collect
from tests.llm.conftest import KEY, fast_config

REPLY = "The capital of France is Paris, a city of about two million people."
RULES = ReplyRules.from_spec(RulesFile.model_validate({"rules": [{"pattern": "(?i)capital", "reply": REPLY}]}))
ASK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is the capital of France?"}]


async def _deltas(config, messages=ASK):
    stream = ChatStream(config, messages)
    return [delta async for delta in stream], stream.completion


def test_the_stream_sends_the_reply_word_by_word_and_adds_up_to_the_whole():
    with LocalChatServer(RULES, expected_key=KEY) as server:
        config = fast_config(server.base_url)
        deltas, completion = asyncio.run(_deltas(config))
        words = "The| capital| of| France| is| Paris,| a| city| of| about| two| million| people."
        assert deltas == words.split("|")
        whole = ChatClient(config).complete(ASK)
        assert completion is not None and completion.text == REPLY == whole.text
        assert completion.finish_reason == "stop" and completion.model == "judge-1"
        assert (completion.prompt_tokens, completion.completion_tokens) == (whole.prompt_tokens, 13)


def test_the_wire_format_is_openai_server_sent_events():
    with LocalChatServer(RULES) as server:
        body = {"model": "m", "messages": ASK, "stream": True}
        response = httpx.post(server.base_url + "/chat/completions", json=body, timeout=10)
        assert response.headers["content-type"] == "text/event-stream"
        events = [line for line in response.text.split("\n\n") if line]
        assert all(event.startswith("data: ") for event in events)
        assert events[-1] == "data: [DONE]" and '"object": "chat.completion.chunk"' in events[0]
        assert '"finish_reason": "stop"' in events[-2] and '"usage"' in events[-2]


def test_vision_parts_are_sent_and_read_as_text_and_image_markers():
    with LocalChatServer(
        ReplyRules.from_spec(RulesFile.model_validate({"rules": [{"pattern": ".*", "reply": "seen: \\g<0>"}]}))
    ) as server:
        message = {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        }
        completion = asyncio.run(collect(fast_config(server.base_url, api_key=None), [message]))
        assert completion.text == "seen: What is this? [image image/png]"


def test_a_stream_that_stalls_mid_reply_times_out_after_the_first_words():
    with LocalChatServer(RULES, expected_key=KEY) as server:
        server.inject("stall_stream", times=1, delay_s=30)
        config = fast_config(server.base_url, timeout_s=1.0)
        got: list[str] = []

        async def run() -> None:
            async for delta in ChatStream(config, ASK):
                got.append(delta)

        started = time.monotonic()
        with pytest.raises(EndpointTimeout) as caught:
            asyncio.run(run())
        assert time.monotonic() - started < 20  # the 30 s stall was not waited out
        assert "".join(got) == "The capital of France is Paris,"  # the first half arrived before the stall
        assert "stalled after 31 characters" in caught.value.message
        assert server.counts["stall_stream"] == 1


def test_refusals_and_failures_raise_their_error_without_the_key():
    with LocalChatServer(RULES, expected_key=KEY) as server:
        with pytest.raises(EndpointAuthError) as refused:
            asyncio.run(collect(fast_config(server.base_url, api_key="sk-wrong-0000000000000000"), ASK))
        assert "sk-wrong" not in refused.value.describe()
        server.inject("server_error", times=1)
        with pytest.raises(EndpointServerError, match="HTTP 500"):
            asyncio.run(collect(fast_config(server.base_url), ASK))
        assert asyncio.run(collect(fast_config(server.base_url), ASK)).text == REPLY
        port = server.port
    with pytest.raises(EndpointUnreachable):
        asyncio.run(collect(fast_config(f"http://127.0.0.1:{port}/v1"), ASK))


def test_malformed_messages_are_refused_before_anything_is_sent():
    with pytest.raises(ValueError, match="message 0"):
        ChatStream(fast_config("http://127.0.0.1:9/v1"), [{"role": "robot", "content": "x"}])
    with pytest.raises(ValueError, match="1 to"):
        ChatStream(fast_config("http://127.0.0.1:9/v1"), [])
    with pytest.raises(TypeError, match="unknown override"):
        ChatStream(fast_config("http://127.0.0.1:9/v1"), ASK, colour="blue")
