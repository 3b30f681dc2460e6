"""One turn of a conversation: the participant's message is stored with an empty reply marked "streaming"
(`begin_message`, or `begin_retry` for a failed reply), the system is asked with its prompt and the last
`history_turns` messages of the active branch (post-edits included, images as data URLs for vision systems), and the
reply is written when it ends (`finish`) — the text, or a failure in words that can be retried. No database
connection is held while the system answers."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

import anyio.to_thread
from sqlalchemy import Engine
from sqlmodel import Session

from evaluation.llm.client import Completion
from evaluation.llm.config import EndpointConfig
from evaluation.llm.errors import (
    EndpointAuthError,
    EndpointError,
    EndpointMalformed,
    EndpointRateLimited,
    EndpointTimeout,
    EndpointUnreachable,
)
from evaluation.llm.streaming import ChatStream
from hub.errors import Conflict, UnprocessableInput
from hub.models import ChatMessage, StudySystem
from hub.models.common import utcnow
from hub.services.studies import assistance, images, studies
from hub.services.studies.chats import active_path, chat_for, message_json, message_of, move_leaf
from hub.services.studies.participants import Viewer
from hub.storage import Storage

log = logging.getLogger(__name__)
MAX_MESSAGE_CHARS = 20_000
MAX_REPLY_CHARS = 200_000  # a system's reply is cut off (and fails, retryable) past this
STALE_AFTER = timedelta(seconds=60)  # beyond the system's time-out: a reply still "streaming" was cut off


@dataclass
class PendingTurn:
    """A reply being produced: where to write it and what to send."""

    chat_id: int
    reply_id: int
    user_message: dict[str, Any] | None
    config: EndpointConfig
    request: list[dict[str, Any]]
    timeout_s: float
    started: float = field(default_factory=time.monotonic)


def checked_content(content: object, *, field: str = "content") -> str:
    if not isinstance(content, str) or not content.strip():
        raise UnprocessableInput("write a message", field=field)
    if len(content) > MAX_MESSAGE_CHARS:
        raise UnprocessableInput(f"at most {MAX_MESSAGE_CHARS:,} characters", field=field)
    return content


def _request(storage: Storage, system: StudySystem, path: list[ChatMessage]) -> list[dict[str, Any]]:
    """The system prompt and the last `history_turns` messages of `path` as the endpoint takes them."""
    sent: list[dict[str, Any]] = [{"role": "system", "content": system.system_prompt}] if system.system_prompt else []
    for message in path[-system.history_turns :]:
        content: Any = message.content
        if message.role == "user" and message.images and system.vision:
            content = images.vision_content(storage, message.content, message.images)
        sent.append({"role": message.role, "content": content})
    return sent


def _pending(session: Session, storage: Storage, chat, reply: ChatMessage, user: ChatMessage | None) -> PendingTurn:
    system = session.get(StudySystem, chat.system_id)
    assert system is not None
    path = active_path(session, chat)[:-1]  # without the reply being made
    return PendingTurn(
        chat_id=chat.id,
        reply_id=reply.id or 0,
        user_message=message_json(user) if user is not None else None,
        config=studies.endpoint_config(system),
        request=_request(storage, system, path),
        timeout_s=system.timeout_s,
    )


def begin_message(
    session: Session, viewer: Viewer, storage: Storage, chat_id: int, content: object, image_ids: object = None
) -> PendingTurn:
    """Store the participant's message and an empty reply after the active leaf; refused while a reply is being
    made or after a failed one (retry it, or go back to an earlier turn)."""
    chat = chat_for(session, viewer, chat_id, writing=True)
    text = checked_content(content)
    refs = images.message_images(storage, image_ids)
    system = session.get(StudySystem, chat.system_id)
    assert system is not None
    if refs and not system.vision:
        raise UnprocessableInput("this system does not take images", field="images")
    leaf = session.get(ChatMessage, chat.current_leaf_id) if chat.current_leaf_id else None
    if leaf is not None and leaf.status == "streaming" and not _stale(leaf, system):
        raise Conflict("the system is still answering the last message", field="conversation_id")
    if leaf is not None and leaf.status != "ok":
        message = f"the last reply failed: retry it (message #{leaf.id}) or go back to an earlier turn"
        raise Conflict(message, field="conversation_id")
    depth = leaf.depth + 1 if leaf is not None else 0
    user = ChatMessage(chat_id=chat.id or 0, parent_id=leaf.id if leaf else None, depth=depth, role="user")
    user.content, user.images = text, refs
    session.add(user)
    session.flush()
    reply = ChatMessage(chat_id=chat.id or 0, parent_id=user.id, depth=depth + 1, role="assistant", status="streaming")
    session.add(reply)
    session.flush()
    move_leaf(session, chat, reply)
    pending = _pending(session, storage, chat, reply, user)  # the endpoint config first: an unset key refuses
    session.commit()
    return pending


def _stale(message: ChatMessage, system: StudySystem) -> bool:
    created = message.created_at
    return utcnow() - created > timedelta(seconds=system.timeout_s) + STALE_AFTER


def begin_retry(session: Session, viewer: Viewer, storage: Storage, chat_id: int, message_id: int) -> PendingTurn:
    """Ask the system again for a failed reply (the active leaf)."""
    chat = chat_for(session, viewer, chat_id, writing=True)
    reply = message_of(session, chat, message_id)
    system = session.get(StudySystem, chat.system_id)
    assert system is not None
    if reply.role != "assistant" or reply.id != chat.current_leaf_id:
        raise Conflict("only the last reply of the active branch can be retried", field="message_id")
    if reply.status == "ok" or (reply.status == "streaming" and not _stale(reply, system)):
        raise Conflict("this reply did not fail", field="message_id")
    pending = _pending(session, storage, chat, reply, None)
    reply.status, reply.error, reply.content, reply.created_at = "streaming", None, "", utcnow()
    session.add(reply)
    session.commit()
    return pending


def failure_words(error: Exception, timeout_s: float) -> str:
    """What a participant is told (never the endpoint's address or answer, which admins see in the log)."""
    if isinstance(error, EndpointTimeout):
        return f"The system did not finish its reply within {timeout_s:g} seconds. You can try again."
    if isinstance(error, EndpointRateLimited):
        return "The system is busy right now (too many requests). Wait a moment and try again."
    if isinstance(error, EndpointUnreachable):
        return "The system could not be reached. You can try again."
    if isinstance(error, EndpointAuthError):
        return "The system refused the hub's credentials. Please tell the study's organisers."
    if isinstance(error, EndpointMalformed):
        return "The system's reply could not be read. You can try again."
    return "The system failed to reply. You can try again."


async def produce(engine: Engine, pending: PendingTurn) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Ask the system: ("delta", {"text"}) as the reply arrives, then ("done", {"message"}) with the stored reply,
    or ("error", {"message"}) with the stored failure (what had arrived kept). A consumer that stops listening (the
    page was closed) leaves a failed reply, which can be retried."""
    parts: list[str] = []
    finished = False
    try:
        try:
            stream = ChatStream(pending.config, pending.request)
            size = 0
            async for delta in stream:
                size += len(delta)
                if size > MAX_REPLY_CHARS:
                    raise EndpointMalformed(f"the reply passed {MAX_REPLY_CHARS:,} characters")
                parts.append(delta)
                yield "delta", {"text": delta}
        except (EndpointError, ValueError) as exc:
            failed = partial(finish, engine, pending, text="".join(parts), completion=None, error=exc)
            message = await anyio.to_thread.run_sync(failed)
            finished = True
            yield "error", {"message": message}
            return
        done = partial(finish, engine, pending, text="".join(parts), completion=stream.completion, error=None)
        message = await anyio.to_thread.run_sync(done)
        finished = True
        yield "done", {"message": message}
    finally:
        if not finished:
            finish(engine, pending, text="".join(parts), completion=None, error=EndpointError("the reply was cut off"))


def finish(
    engine: Engine, pending: PendingTurn, *, text: str, completion: Completion | None, error: Exception | None
) -> dict[str, Any]:
    """Write the reply (or the failure in words, with what had arrived) in a session of its own."""
    with Session(engine) as session:
        reply = session.get(ChatMessage, pending.reply_id)
        assert reply is not None
        reply.content = completion.text if completion is not None else text
        reply.latency_ms = int((time.monotonic() - pending.started) * 1000)
        if error is None and completion is not None:
            reply.status, reply.error = "ok", None
            reply.prompt_tokens, reply.completion_tokens = completion.prompt_tokens, completion.completion_tokens
        else:
            if not isinstance(error, EndpointError):
                log.error("chat %s reply %s failed unexpectedly", pending.chat_id, pending.reply_id, exc_info=error)
            else:
                log.warning("chat %s reply %s failed: %s", pending.chat_id, pending.reply_id, error)
            reply.status = "error"
            reply.error = failure_words(error or EndpointError("cut off"), pending.timeout_s)[:2_000]
        session.add(reply)
        session.commit()
        session.refresh(reply)
        stored = message_json(reply)
    if stored["status"] == "ok":  # MILO: the judge's suggestions, in every arm, before anyone annotates
        assistance.queue_suggestions(engine, pending.reply_id)
    return stored
