"""Streamed chat completions (`"stream": true`, OpenAI's server-sent events): the reply's text as it arrives.

`ChatStream(config, messages)` is iterated with `async for delta in stream`; afterwards `stream.completion` holds
the whole reply (text, token counts, finish reason). Failures raise the client's EndpointError kinds, the key
scrubbed from every message: EndpointTimeout when the whole reply takes longer than `config.timeout_s` or the
endpoint sends nothing for that long (a stalled stream), EndpointUnreachable, EndpointAuthError (401/403),
EndpointRateLimited (429), EndpointServerError (other statuses), EndpointMalformed (not an event stream, a chunk that
is not JSON, an answer past MAX_RESPONSE_BYTES, or a stream that ends without `[DONE]` or a finish reason).
A stream is not retried: what was shown already cannot be taken back, and the caller decides (a person retries).
Messages may be vision messages (`content` a list of text and image_url parts).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from evaluation.llm.client import MAX_MESSAGES, MAX_RESPONSE_BYTES, OVERRIDABLE, ROLES, Completion
from evaluation.llm.config import EndpointConfig
from evaluation.llm.errors import (
    EndpointAuthError,
    EndpointError,
    EndpointMalformed,
    EndpointRateLimited,
    EndpointServerError,
    EndpointTimeout,
    EndpointUnreachable,
    scrub,
)

MAX_EVENT_BYTES = 1024 * 1024


def check_chat_messages(messages: object) -> list[dict[str, Any]]:
    """Refuse anything but a list of {role, content} messages whose content is text or a list of parts."""
    if not isinstance(messages, list) or not messages or len(messages) > MAX_MESSAGES:
        raise ValueError(f"messages must be a list of 1 to {MAX_MESSAGES} chat messages")
    for number, message in enumerate(messages):
        if not isinstance(message, dict) or set(message) != {"role", "content"} or message["role"] not in ROLES:
            raise ValueError(f"message {number}: needs exactly a known 'role' and a 'content'")
        if not isinstance(message["content"], str | list):
            raise ValueError(f"message {number}: content must be text or a list of parts")
    return messages


class ChatStream:
    """One streamed chat completion; iterate it once."""

    def __init__(self, config: EndpointConfig, messages: list[dict[str, Any]], **overrides: Any):
        unknown = set(overrides) - OVERRIDABLE
        if unknown:
            raise TypeError(f"unknown override(s): {', '.join(sorted(unknown))}")
        self.config = config
        self.body: dict[str, Any] = {
            "model": config.model,
            "messages": check_chat_messages(messages),
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            **overrides,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        self.completion: Completion | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._deltas()

    async def _deltas(self) -> AsyncIterator[str]:
        key = self.config.secret_key()
        try:
            async for delta in self._stream(key):
                yield delta
        except EndpointError as exc:
            exc.message = scrub(exc.message, key)
            exc.args = (exc.describe(),)
            raise

    async def _stream(self, key: str | None) -> AsyncIterator[str]:
        url = self.config.base_url + "/chat/completions"
        limit = self.config.timeout_s
        deadline = time.monotonic() + limit
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        timeout = aiohttp.ClientTimeout(total=None, connect=limit, sock_read=limit)
        parts: list[str] = []
        state: dict[str, Any] = {"usage": {}, "finish": None, "model": "", "done": False}
        try:
            async with (
                aiohttp.ClientSession(headers=headers, timeout=timeout) as http,
                http.post(url, json=self.body) as response,
            ):
                await _refuse_status(response, url)
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    raise EndpointMalformed(f"{url} did not answer with an event stream")
                size = 0
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    line = await asyncio.wait_for(response.content.readline(), timeout=left)
                    if not line:
                        break
                    size += len(line)
                    if size > MAX_RESPONSE_BYTES or len(line) > MAX_EVENT_BYTES:
                        raise EndpointMalformed(f"{url} sent a reply larger than {MAX_RESPONSE_BYTES:,} bytes")
                    delta = _event(line, url, state)
                    if delta:
                        parts.append(delta)
                        yield delta
                    if state["done"]:
                        break
        except TimeoutError:
            got = "no reply" if not parts else f"the reply stalled after {len(''.join(parts)):,} characters"
            raise EndpointTimeout(f"{got}: {url} did not finish within {limit:g} s") from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            raise EndpointUnreachable(
                f"cannot reach {url} ({type(exc).__name__}: {exc or 'connection dropped'})"
            ) from None
        except aiohttp.ClientError as exc:
            raise EndpointError(f"cannot call {url} ({type(exc).__name__}: {exc})") from None
        except ValueError:  # aiohttp's readline past its buffer: one event line far too long
            raise EndpointMalformed(f"{url} sent a stream line longer than the reader accepts") from None
        if not state["done"] and state["finish"] is None:
            raise EndpointMalformed(f"{url} ended the reply's stream before it was finished")
        usage = state["usage"]
        self.completion = Completion(
            text="".join(parts),
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            cached=False,
            finish_reason=state["finish"],
            model=state["model"],
        )


async def _refuse_status(response: aiohttp.ClientResponse, url: str) -> None:
    status = response.status
    if status == 200:
        return
    text = (await response.content.read(2_000)).decode("utf-8", errors="replace")
    excerpt = text[:200] + ("..." if len(text) > 200 else "")
    if status in (401, 403):
        raise EndpointAuthError(f"{url} refused the API key (HTTP {status}): check the key's variable")
    if status == 429:
        raise EndpointRateLimited(f"{url} is rate-limiting (HTTP 429)")
    raise EndpointServerError(f"{url} failed with HTTP {status}: {excerpt!r}")


def _event(line: bytes, url: str, state: dict[str, Any]) -> str:
    """The text delta of one server-sent event line ('' for comments, blank lines and the last chunks)."""
    text = line.decode("utf-8", errors="replace").strip()
    if not text.startswith("data:"):
        return ""
    payload = text[5:].strip()
    if payload == "[DONE]":
        state["done"] = True
        return ""
    try:
        chunk = json.loads(payload)
    except json.JSONDecodeError:
        raise EndpointMalformed(f"{url} sent a stream chunk that is not JSON: {payload[:200]!r}") from None
    if not isinstance(chunk, dict):
        raise EndpointMalformed(f"{url} sent a stream chunk that is not a JSON object")
    if isinstance(chunk.get("usage"), dict):
        state["usage"] = chunk["usage"]
    if isinstance(chunk.get("model"), str):
        state["model"] = chunk["model"]
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    first = choices[0]
    if isinstance(first.get("finish_reason"), str):
        state["finish"] = first["finish_reason"]
    delta = first.get("delta")
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else ""


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9 else 0


async def collect(config: EndpointConfig, messages: list[dict[str, Any]], **overrides: Any) -> Completion:
    """The whole streamed reply at once."""
    stream = ChatStream(config, messages, **overrides)
    async for _ in stream:
        pass
    assert stream.completion is not None
    return stream.completion
