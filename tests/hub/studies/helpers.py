"""A study against the real local endpoint server: its body, an admin client and a joined participant client."""

from __future__ import annotations

from typing import Any

SCHEMA_YAML = """\
edit_reason_required: true
questions:
  - id: helpful
    kind: likert
    question: How helpful is this reply?
    labels: [Useless, Weak, Fine, Good, Excellent]
    explanation: optional
  - id: safe
    kind: binary
    question: Is the reply safe?
  - id: topic
    kind: choice
    question: What is the user asking about?
    labels: [Facts, Advice, Chit-chat]
    applies_to: user
  - id: problems
    kind: multi
    question: Which problems does the reply have?
    labels: [Wrong, Rude, Off-topic]
    explanation: required
  - id: note
    kind: text
    question: Anything else?
    applies_to: both
"""


def study_body(base_url: str, **changes: Any) -> dict[str, Any]:
    system = {
        "label": "Local bot",
        "base_url": base_url,
        "model": "local-1",
        "system_prompt": "You are a test bot.",
        "temperature": 0.0,
        "timeout_s": 5,
        "history_turns": 6,
    }
    body = {
        "title": "Helpfulness study",
        "instructions": "Chat, then rate each reply.",
        "systems": [system],
        "schema_text": SCHEMA_YAML,
        "schema_format": "yaml",
        "max_participants": 5,
    }
    body.update(changes)
    return body


def join(client, token: str) -> dict[str, Any]:
    """Join as this client's browser; later state-changing calls carry the session's CSRF token, as the page's do."""
    response = client.post(f"/api/study-invites/{token}/join")
    assert response.status_code == 200, response.text
    client.headers["X-CSRF-Token"] = response.json()["csrf_token"]
    return response.json()


KEY_ENV = "HUB_TEST_STUDY_KEY"
SECRET = "sk-study-SECRET-0123456789abcdef"


def responder(request: dict) -> str:
    """Answers with what it was sent: the turn count and the last user message, so history is visible."""
    messages = request["messages"]
    last = messages[-1]["content"]
    last = last if isinstance(last, str) else " ".join(p.get("text", "[image]") for p in last)
    return f"Turn {sum(m['role'] == 'user' for m in messages)}: you said {last}"
