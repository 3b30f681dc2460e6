"""The reply streams through the hub as it arrives, over a real socket: while the endpoint is stalled halfway
through its reply, the participant has already read the first half of the words; the rest and `done` follow."""

from __future__ import annotations

import json

import httpx
from fastapi.testclient import TestClient

from evaluation.llm.server import LocalChatServer
from hub.web.app import create_app
from tests.hub.conftest import auth
from tests.hub.live_server import live_hub
from tests.hub.studies.helpers import KEY_ENV, SECRET, responder, study_body


def test_the_first_words_arrive_while_the_endpoint_is_still_stalled(hub_env, people, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with LocalChatServer(responder=responder, expected_key=SECRET) as endpoint:
        with TestClient(create_app()) as admin:
            body = study_body(endpoint.base_url)
            body["systems"][0].update(key_ref=KEY_ENV, timeout_s=60)
            study = admin.post("/api/studies", json=body, headers=auth(people["admin"])).json()
            invite = admin.post(f"/api/studies/{study['id']}/invites", json={}, headers=auth(people["admin"])).json()
        with live_hub() as (host, port), httpx.Client(base_url=f"http://{host}:{port}", timeout=60) as browser:
            joined = browser.post(f"/api/study-invites/{invite['token']}/join").json()
            browser.headers["X-CSRF-Token"] = joined["csrf_token"]
            chat = browser.post(f"/api/studies/{study['id']}/conversations", json={}).json()
            endpoint.inject("stall_stream", times=1, delay_s=3)
            events: list[tuple[str, dict, int]] = []  # name, data, requests the endpoint was still answering
            url = f"/api/conversations/{chat['id']}/messages"
            with browser.stream(
                "POST", url, json={"content": "one two three four"}, headers={"Accept": "text/event-stream"}
            ) as response:
                assert response.status_code == 201
                name = None
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        name = line.removeprefix("event: ")
                    elif line.startswith("data: ") and name:
                        events.append((name, json.loads(line.removeprefix("data: ")), endpoint.in_flight))
    deltas = [(data["text"], busy) for name, data, busy in events if name == "delta"]
    during_stall = "".join(text for text, busy in deltas if busy)
    reply = "Turn 1: you said one two three four"
    # The first 4 of the 8 words were read while the endpoint was still stalled 3 s in its reply (a buffering hub
    # would hand none over before the end; the words after the stall may race the endpoint's own bookkeeping).
    assert deltas[0][1] == 1 and during_stall.startswith("Turn 1: you said")
    assert "".join(text for text, _ in deltas) == reply
    assert events[-1][0] == "done" and events[-1][1]["message"]["content"] == reply and events[-1][2] == 0
