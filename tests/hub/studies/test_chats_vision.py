"""Images in a conversation: an uploaded image goes to a vision system as a data URL inside the user turn; a system
that takes no images refuses them, naming the field."""

from __future__ import annotations

import base64

from fastapi.testclient import TestClient

from evaluation.llm.server import LocalChatServer
from hub.web.app import create_app
from tests.hub.conftest import auth
from tests.hub.studies.helpers import join, study_body
from tests.hub.studies.test_images import png


def test_an_image_reaches_a_vision_system_as_a_data_url(hub_env, people):
    sent: list[dict] = []

    def responder(request: dict) -> str:
        sent.append(request)
        return "I see it."

    with (
        LocalChatServer(responder=responder) as server,
        TestClient(create_app()) as admin,
        TestClient(create_app()) as browser,
    ):
        body = study_body(server.base_url)
        body["systems"].append({**body["systems"][0], "label": "Vision bot", "vision": True})
        study = admin.post("/api/studies", json=body, headers=auth(people["admin"])).json()
        blind, vision = (s["id"] for s in study["systems"])
        invite = admin.post(f"/api/studies/{study['id']}/invites", json={}, headers=auth(people["admin"])).json()
        join(browser, invite["token"])
        image = png()
        uploaded = browser.post(f"/api/studies/{study['id']}/images", files={"image": ("cat.png", image, "image/png")})
        assert uploaded.status_code == 201, uploaded.text
        key = uploaded.json()["id"]

        chat = browser.post(f"/api/studies/{study['id']}/conversations", json={"system_id": vision}).json()
        said = browser.post(
            f"/api/conversations/{chat['id']}/messages", json={"content": "What is this?", "images": [key]}
        )
        assert said.status_code == 201 and said.json()["message"]["content"] == "I see it."
        assert said.json()["user_message"]["images"] == [{"key": key, "mime": "image/png"}]
        parts = sent[-1]["messages"][-1]["content"]
        assert parts[0] == {"type": "text", "text": "What is this?"}
        assert parts[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(image).decode()

        other = browser.post(f"/api/studies/{study['id']}/conversations", json={"system_id": blind}).json()
        refused = browser.post(
            f"/api/conversations/{other['id']}/messages", json={"content": "And this?", "images": [key]}
        )
        assert refused.status_code == 422 and refused.json()["field"] == "images"
        assert len(sent) == 1
