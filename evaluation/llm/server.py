"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and rehearsals: scripted replies, injected faults.

Chat replies come from `responder(request_json) -> str` or from reply rules. `/v1/completions` with `echo` and
`logprobs` gives deterministic log-probabilities: the prompt splits into tokens `\\s*\\S+` (each keeps its leading
whitespace), token t gets -(0.5 + 5 * u(t)) where u(t) is the first 8 hex digits of sha256(t) over 2**32, and the
first token of the prompt gets null, as OpenAI's API does.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluation.llm.rules import FaultSpec, ReplyRules

Responder = Callable[[dict[str, Any]], str | None]
TOKEN = re.compile(r"\s*\S+")
MAX_BODY_BYTES = 16 * 1024 * 1024


class _DeliberateDrop(Exception):
    """Raised after the response started, so uvicorn closes the connection mid-answer."""


class _HideDeliberateDrops(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], _DeliberateDrop))


def token_logprob(token: str) -> float:
    unit = int(hashlib.sha256(token.encode("utf-8")).hexdigest()[:8], 16) / 2**32
    return -(0.5 + 5.0 * unit)


class LocalChatServer:
    """`with LocalChatServer(...) as server:` serves on `server.base_url` (ending in /v1) from a background thread.

    Faults (`inject(kind, times=None, ...)`, switchable while it runs): rate_limit (429 with Retry-After),
    server_error (500), slow (answers after `delay_s`), drop (connection closed mid-answer), non_json (200 with an
    HTML body), empty_choices (200 with `choices: []`), stall_stream (a streamed answer stops for `delay_s` halfway;
    an answer not streamed comes after `delay_s`). `"stream": true` chat requests are answered as OpenAI's
    server-sent events, one chunk per word. With `expected_key`, any other Bearer key gets 401.
    `counts` counts requests by path and by fault served; `requests` is the total; `max_in_flight` is the most
    requests it was answering at once.
    """

    def __init__(
        self,
        rules: ReplyRules | str | Path | None = None,
        responder: Responder | None = None,
        latency_s: float = 0.0,
        *,
        expected_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.rules = ReplyRules.from_file(rules) if isinstance(rules, str | Path) else (rules or ReplyRules())
        self.responder = responder
        self.latency_s = latency_s
        self.expected_key = expected_key
        self.host, self.port = host, port
        self.counts: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self._faults: list[list[Any]] = [[spec, spec.times] for spec in self.rules.faults]
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    # -- control ------------------------------------------------------------------------------------------------
    @property
    def requests(self) -> int:
        return self.counts["requests"]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def inject(self, kind: str, *, times: int | None = None, retry_after_s: float = 1.0, delay_s: float = 5.0) -> None:
        """Serve fault `kind` on the next `times` requests (all, until `clear_faults`, when None)."""
        spec = FaultSpec.model_validate(
            {"kind": kind, "times": times, "retry_after_s": retry_after_s, "delay_s": delay_s}
        )
        with self._lock:
            self._faults.append([spec, times])

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _next_fault(self) -> FaultSpec | None:
        with self._lock:
            if not self._faults:
                return None
            entry = self._faults[0]
            if entry[1] is not None:
                entry[1] -= 1
                if entry[1] <= 0:
                    self._faults.pop(0)
            return entry[0]

    def __enter__(self) -> LocalChatServer:
        import uvicorn

        logging.getLogger("uvicorn.error").addFilter(_HIDE_DROPS)
        config = uvicorn.Config(
            self, host=self.host, port=self.port, log_config=None, lifespan="off", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="local-chat-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the local chat server did not start on {self.host}:{self.port}")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- ASGI -------------------------------------------------------------------------------------------------------
    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await _send_json(send, 413, {"error": {"message": "request body too large"}})
                return
            if not message.get("more_body"):
                break
        path = scope["path"]
        self.counts["requests"] += 1
        self.counts[path] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self._answer(scope, path, body, send)
        finally:
            self.in_flight -= 1

    async def _answer(self, scope: dict, path: str, body: bytes, send: Callable) -> None:
        if self.expected_key is not None:
            headers = dict(scope["headers"])
            if headers.get(b"authorization", b"").decode("latin-1") != f"Bearer {self.expected_key}":
                self.counts["unauthorized"] += 1
                # Like OpenAI, echo what was sent: the client must keep it out of its errors.
                sent = headers.get(b"authorization", b"").decode("latin-1")
                await _send_json(send, 401, {"error": {"message": f"Incorrect API key provided: {sent}"}})
                return
        fault = self._next_fault()
        stall: FaultSpec | None = None
        if fault is not None:
            self.counts[fault.kind] += 1
            if fault.kind == "stall_stream":
                stall = fault
            elif await self._serve_fault(fault, send):
                return
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            await _send_json(send, 400, {"error": {"message": "request body is not JSON"}})
            return
        if scope["method"] == "POST" and path == "/v1/chat/completions" and isinstance(request, dict):
            if request.get("stream") is True:
                await self._stream_chat(self._chat(request), send, stall)
                return
            if stall is not None:
                await asyncio.sleep(stall.delay_s)
            await _send_json(send, 200, self._chat(request))
        elif scope["method"] == "POST" and path == "/v1/completions" and isinstance(request, dict):
            await _send_json(send, 200, self._completion(request))
        elif scope["method"] == "GET" and path == "/v1/models":
            await _send_json(send, 200, {"object": "list", "data": [{"id": "local", "object": "model"}]})
        else:
            await _send_json(send, 404, {"error": {"message": f"no route {scope['method']} {path}"}})

    async def _serve_fault(self, fault: FaultSpec, send: Callable) -> bool:
        """Answer with the fault; False when the request should then be answered normally (a slow answer)."""
        if fault.kind == "rate_limit":
            headers = [(b"retry-after", f"{fault.retry_after_s:g}".encode())]
            await _send_json(send, 429, {"error": {"message": "rate limited"}}, headers)
        elif fault.kind == "server_error":
            await _send_json(send, 500, {"error": {"message": "internal error"}})
        elif fault.kind == "slow":
            await asyncio.sleep(fault.delay_s)
            return False
        elif fault.kind == "drop":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1000")]})
            raise _DeliberateDrop()
        elif fault.kind == "non_json":
            await _send(send, 200, b"<html>502 Bad Gateway</html>", b"application/json")
        elif fault.kind == "empty_choices":
            await _send_json(send, 200, {"id": "x", "object": "chat.completion", "choices": [], "usage": {}})
        return True

    async def _stream_chat(self, answer: dict, send: Callable, stall: FaultSpec | None) -> None:
        """The answer as OpenAI's server-sent events: one chunk per word (with its leading space), a last chunk with
        the finish reason and usage, then `[DONE]`. A stall_stream fault stops for `delay_s` after half the words."""
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        choice = answer["choices"][0]
        pieces = TOKEN.findall(choice["message"]["content"] or "")
        base = {"id": answer["id"], "object": "chat.completion.chunk", "created": answer["created"]}
        base["model"] = answer["model"]

        async def event(data: Any) -> None:
            payload = data if isinstance(data, str) else json.dumps(data)
            await send({"type": "http.response.body", "body": f"data: {payload}\n\n".encode(), "more_body": True})

        await event({**base, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]})
        for number, piece in enumerate(pieces):
            if stall is not None and number == len(pieces) // 2:
                await asyncio.sleep(stall.delay_s)
            await event({**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        last = [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]
        await event({**base, "choices": last, "usage": answer["usage"]})
        await event("[DONE]")
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _chat(self, request: dict) -> dict:
        messages: list[Any] = request["messages"] if isinstance(request.get("messages"), list) else []
        users = [_text_of(m.get("content", "")) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        text = self.responder(request) if self.responder else self.rules.reply(str(users[-1]) if users else "")
        words = text.split() if text is not None else []  # a responder returning None scripts "content": null
        limit = request.get("max_tokens")
        finish = "stop"
        if text is not None and isinstance(limit, int) and 0 < limit < len(words):
            text, finish = " ".join(words[:limit]), "length"
        prompt_tokens = sum(len(_text_of(m.get("content", "")).split()) for m in messages if isinstance(m, dict))
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(request.get("model", "local")),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": min(len(words), limit) if isinstance(limit, int) and limit > 0 else len(words),
                "total_tokens": prompt_tokens + len(words),
            },
        }

    def _completion(self, request: dict) -> dict:
        prompt = str(request.get("prompt", ""))
        generated = [" ok"] * max(0, min(int(request.get("max_tokens") or 0), 64))
        tokens, offsets, logprobs = [], [], []
        if request.get("echo"):
            for index, match in enumerate(TOKEN.finditer(prompt)):
                tokens.append(match.group())
                offsets.append(match.start())
                logprobs.append(None if index == 0 else token_logprob(match.group()))
        position = len(prompt) if request.get("echo") else 0
        for token in generated:
            tokens.append(token)
            offsets.append(position)
            logprobs.append(token_logprob(token))
            position += len(token)
        text = (prompt if request.get("echo") else "") + "".join(generated)
        wanted = request.get("logprobs") is not None
        detail = {"tokens": tokens, "token_logprobs": logprobs, "text_offset": offsets, "top_logprobs": None}
        prompt_count = len(TOKEN.findall(prompt))
        return {
            "id": f"cmpl-{next(self._ids)}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": str(request.get("model", "local")),
            "choices": [{"index": 0, "text": text, "logprobs": detail if wanted else None, "finish_reason": "length"}],
            "usage": {
                "prompt_tokens": prompt_count,
                "completion_tokens": len(generated),
                "total_tokens": prompt_count + len(generated),
            },
        }


_HIDE_DROPS = _HideDeliberateDrops()


def _text_of(content: Any) -> str:
    """A message's text; a vision message's parts as their texts, each image as `[image <type>]`."""
    if not isinstance(content, list):
        return str(content)
    texts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        elif isinstance(part, dict) and part.get("type") == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            texts.append(f"[image {url[5:].split(';', 1)[0] if url.startswith('data:') else 'url'}]")
    return " ".join(texts)


async def _send(send: Callable, status: int, payload: bytes, content_type: bytes, extra: list | None = None) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(payload)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def _send_json(send: Callable, status: int, data: Any, extra: list | None = None) -> None:
    await _send(send, status, json.dumps(data).encode("utf-8"), b"application/json", extra)
