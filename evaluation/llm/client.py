"""The judge/generation client: OpenAI-compatible calls with retries, a call cache, usage accounting, progress."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import aiohttp

from evaluation.errors import InvalidInputError
from evaluation.llm.cache import CallCache
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
from evaluation.llm.progress import call_progress

log = logging.getLogger(__name__)
T = TypeVar("T")
OVERRIDABLE = frozenset({"model", "temperature", "max_tokens", "seed", "stop", "top_p"})
ROLES = frozenset({"system", "user", "assistant"})
MAX_MESSAGES = 1_000
MAX_MESSAGE_CHARS = 1_000_000
MAX_RESPONSE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    finish_reason: str | None
    model: str


@dataclass
class RunUsage:
    """Calls answered live (billed), from the cache (free) and failed; tokens and cost are the live calls'."""

    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    retries: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        cost = "cost unknown (no prices configured)" if self.cost_usd is None else f"cost ${self.cost_usd:.4f}"
        return (
            f"{self.calls} live call(s), {self.cached_calls} from cache, {self.failed_calls} failed, "
            f"{self.retries} retr{'y' if self.retries == 1 else 'ies'}; tokens: {self.prompt_tokens:,} prompt + "
            f"{self.completion_tokens:,} completion; {cost}"
        )


def check_messages(messages: object, *, index: int) -> list[dict[str, str]]:
    """Refuse anything but a non-empty list of {role, content} chat messages, naming the request's index."""
    where = f"request {index}"
    if not isinstance(messages, list) or not messages or len(messages) > MAX_MESSAGES:
        raise InvalidInputError(f"{where}: messages must be a list of 1 to {MAX_MESSAGES} chat messages")
    for number, message in enumerate(messages):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            raise InvalidInputError(f"{where}, message {number}: needs exactly the keys 'role' and 'content'")
        if message["role"] not in ROLES:
            raise InvalidInputError(f"{where}, message {number}: role must be one of {', '.join(sorted(ROLES))}")
        if not isinstance(message["content"], str) or len(message["content"]) > MAX_MESSAGE_CHARS:
            raise InvalidInputError(f"{where}, message {number}: content must be a string of at most 1,000,000 chars")
    return messages


def parse_chat(data: Any, *, cached: bool) -> Completion:
    """A Completion from a chat-completions JSON body; EndpointMalformed when it has no usable choice."""
    if not isinstance(data, dict):
        raise EndpointMalformed("the endpoint's answer is JSON but not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise EndpointMalformed("the endpoint's answer has an empty or missing 'choices' list")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise EndpointMalformed("the endpoint's first choice has no message content")
    usage = data["usage"] if isinstance(data.get("usage"), dict) else {}
    return Completion(
        text=content,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        cached=cached,
        finish_reason=first.get("finish_reason") if isinstance(first.get("finish_reason"), str) else None,
        model=str(data.get("model", "")),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9 else 0


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds (a number or an HTTP date), or None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class ChatClient:
    """Calls one endpoint; `complete_many` runs requests `config.concurrency` at a time on one event loop."""

    def __init__(self, config: EndpointConfig, cache: CallCache | None = None):
        self.config = config
        self.cache = cache
        self.usage = RunUsage(cost_usd=self._cost(0, 0))
        self._rng = random.Random()

    def __repr__(self) -> str:
        return f"ChatClient({self.config})"

    # -- public API -------------------------------------------------------------------------------------------
    def chat_body(self, messages: list[dict], **overrides: Any) -> dict[str, Any]:
        unknown = set(overrides) - OVERRIDABLE
        if unknown:
            raise TypeError(f"unknown override(s): {', '.join(sorted(unknown))}")
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        body.update(overrides)
        return body

    def complete(self, messages: list[dict], **overrides: Any) -> Completion:
        result = self.complete_many([messages], **overrides)[0]
        if isinstance(result, EndpointError):
            raise result
        return result

    def complete_many(
        self,
        requests: Sequence[list[dict]],
        *,
        progress: bool | str = False,
        on_result: Callable[[int, Completion | EndpointError], None] | None = None,
        **overrides: Any,
    ) -> list[Completion | EndpointError]:
        """Results in input order; a failed request gives its EndpointError in its place and the rest go on.

        A refused key (401/403) or an endpoint unreachable after every retry stops the requests not yet sent (they
        get an error of the same kind): every one of them would fail the same way. `on_result(index, result)` is
        called as each request finishes (generation appends its output file there).
        """
        bodies = [self.chat_body(check_messages(m, index=i), **overrides) for i, m in enumerate(requests)]
        jobs = [("/chat/completions", body, parse_chat) for body in bodies]
        label = progress if isinstance(progress, str) else "LLM calls"
        return self._run_sync(lambda: self._run_all(jobs, label if progress else None, on_result))

    def run_jobs(
        self,
        jobs: Sequence[tuple[str, dict[str, Any], Callable[..., T]]],
        *,
        progress: bool | str = False,
        on_result: Callable[[int, T | EndpointError], None] | None = None,
    ) -> list[T | EndpointError]:
        """Like complete_many for any endpoint path: each job is (path, JSON body, parse(data, cached=...))."""
        label = progress if isinstance(progress, str) else "LLM calls"
        return self._run_sync(lambda: self._run_all(list(jobs), label if progress else None, on_result))

    # -- engine ---------------------------------------------------------------------------------------------------
    @staticmethod
    def _run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(make())
        with ThreadPoolExecutor(max_workers=1) as pool:  # called from async code: run on a loop of our own
            return pool.submit(lambda: asyncio.run(make())).result()

    async def _run_all(self, jobs: list, label: str | None, on_result: Callable | None) -> list:
        results: list[Any] = [None] * len(jobs)
        semaphore = asyncio.Semaphore(self.config.concurrency)
        fatal: list[EndpointError] = []
        headers = {"Authorization": f"Bearer {self.config.secret_key()}"} if self.config.api_key else {}
        connector = aiohttp.TCPConnector(limit=self.config.concurrency, limit_per_host=self.config.concurrency)
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_s)
        with call_progress(label, len(jobs)) as advance:
            async with aiohttp.ClientSession(headers=headers, connector=connector, timeout=timeout) as http:

                async def one(index: int, path: str, body: dict, parse: Callable) -> None:
                    async with semaphore:
                        if fatal:
                            result: Any = type(fatal[0])(f"not sent, an earlier request failed: {fatal[0].message}")
                        else:
                            result = await self._call(http, path, body, parse)
                        if isinstance(result, EndpointAuthError | EndpointUnreachable) and not fatal:
                            fatal.append(result)
                    if isinstance(result, EndpointError):
                        self.usage.failed_calls += 1
                    results[index] = result
                    if on_result is not None:
                        on_result(index, result)
                    advance()

                await asyncio.gather(*(one(i, *job) for i, job in enumerate(jobs)))
        return results

    async def _call(self, http: aiohttp.ClientSession, path: str, body: dict, parse: Callable) -> Any:
        url = self.config.base_url + path
        if self.cache is not None:
            hit = self.cache.get(url, body)
            if hit is not None:
                self.usage.cached_calls += 1
                return parse(hit, cached=True)
        try:
            data = await self._post(http, url, body)
            result = parse(data, cached=False)
        except EndpointError as exc:
            exc.message = scrub(exc.message, self.config.secret_key())
            exc.args = (exc.describe(),)
            return exc
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        self.usage.calls += 1
        self.usage.prompt_tokens += _count(usage.get("prompt_tokens"))
        self.usage.completion_tokens += _count(usage.get("completion_tokens"))
        self.usage.cost_usd = self._cost(self.usage.prompt_tokens, self.usage.completion_tokens)
        if self.cache is not None:
            self.cache.put(url, body, data)
        return result

    async def _post(self, http: aiohttp.ClientSession, url: str, body: dict) -> Any:
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            retry_after: float | None = None
            try:
                async with http.post(url, json=body) as response:
                    status, payload = response.status, await _read_bounded(response)
                    retry_header = response.headers.get("retry-after")
            except TimeoutError:  # aiohttp's own timeouts subclass it
                failure: EndpointError = EndpointTimeout(
                    f"no answer from {url} within {self.config.timeout_s:g} s ({attempt + 1} attempt(s))"
                )
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                failure = EndpointUnreachable(
                    f"cannot reach {url} ({type(exc).__name__}: {exc or 'connection dropped'}; "
                    f"{attempt + 1} attempt(s))"
                )
            except aiohttp.ClientError as exc:
                raise EndpointError(f"cannot call {url} ({type(exc).__name__}: {exc})") from None
            else:
                text = payload.decode("utf-8", errors="replace")
                if status == 200:
                    try:
                        return json.loads(payload)
                    except (json.JSONDecodeError, UnicodeDecodeError):
                        raise EndpointMalformed(
                            f"{url} answered 200 with a body that is not JSON: {_excerpt(text)!r}"
                        ) from None
                if status in (401, 403):
                    raise EndpointAuthError(
                        f"{url} refused the API key (HTTP {status}): check the key's variable and its permissions"
                    )
                retry_after = retry_after_seconds(retry_header)
                if status == 429:
                    failure = EndpointRateLimited(f"{url} is rate-limiting (HTTP 429) after {attempt + 1} attempt(s)")
                elif status >= 500:
                    failure = EndpointServerError(
                        f"{url} failed with HTTP {status} after {attempt + 1} attempt(s): {_excerpt(text)!r}"
                    )
                else:
                    raise EndpointServerError(f"{url} refused the request (HTTP {status}): {_excerpt(text)!r}")
            if attempt + 1 == attempts:
                raise failure
            delay = self._backoff(attempt, retry_after)
            self.usage.retries += 1
            log.info("retrying %s in %.2f s: %s", url, delay, scrub(failure.message, self.config.secret_key()))
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with full jitter; a Retry-After (capped) is waited at least, plus a little jitter."""
        ceiling = min(self.config.backoff_max_s, self.config.backoff_base_s * 2**attempt)
        delay = self._rng.uniform(0.0, ceiling)
        if retry_after is not None:
            delay = min(retry_after, self.config.retry_after_cap_s) + self._rng.uniform(0.0, 0.1 * ceiling)
        return delay

    def _cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        price_in, price_out = self.config.price_prompt_per_1k, self.config.price_completion_per_1k
        if price_in is None or price_out is None:
            return None
        return prompt_tokens / 1000 * price_in + completion_tokens / 1000 * price_out


async def _read_bounded(response: aiohttp.ClientResponse) -> bytes:
    """The body, refused past MAX_RESPONSE_BYTES (an endpoint may not fill the memory)."""
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise EndpointMalformed(f"{response.url} sent an answer larger than {MAX_RESPONSE_BYTES:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _excerpt(text: str, limit: int = 200) -> str:
    return text[:limit] + ("..." if len(text) > limit else "")
