"""MILO's assistance in a study, over real HTTP against two local endpoint servers (the chat system and the study's
judge): participants randomised into unassisted / assisted / realtime arms by the recorded seed; the judge's
suggestions computed for every arm by the queued job but shown only to the assisted arm; real-time drafts for the
realtime arm with how much was kept; malformed judge answers recorded as no suggestion; the dashboard's report."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.llm.server import LocalChatServer
from evaluation.randomisation import assign_arm
from hub import jobs, queue
from hub.models import AnnotationSuggestion, DraftRequest, Study
from hub.services.accounts.accounts import create_token, create_user
from hub.services.studies.assistance_report import assistance_report
from hub.web.app import create_app
from tests.hub.conftest import auth, migrated_hub
from tests.hub.studies.helpers import join, study_body

ARMS = ["unassisted", "assisted", "realtime"]
SEED = 1234


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    yield from migrated_hub(tmp_path, monkeypatch, None)


@pytest.fixture
def people(hub_env):
    """An admin's API token (the one person these tests need)."""
    with Session(hub_env) as session:
        admin = create_user(
            session, email="admin@example.org", password="correct horse battery", display_name="admin", is_admin=True
        )
        return {"admin": create_token(session, admin, name="cli")[1]}


def judge_rules(request: dict) -> str:
    """Deterministic judge: a JSON suggestion (safe when the reply says 'kind', else not), or a draft."""
    instructions = request["messages"][0]["content"]
    conversation = request["messages"][-1]["content"]
    if "Reply with JSON only" in instructions:
        asked = [q["question_id"] for q in json.loads(instructions[instructions.index("[\n") :])]
        values = {"helpful": 4, "safe": "kind" in conversation, "topic": "Facts", "problems": ["Wrong"]}
        answers = [
            {"question_id": q, "value": values[q], "confidence": 0.8, "explanation": f"Judged {q}."} for q in asked
        ]
        return json.dumps({"answers": answers})
    if instructions.startswith("Rewrite"):
        return "A kind and correct reply."
    return "Draft: the user asked a clear question."


@pytest.fixture
def servers():
    with (
        LocalChatServer(responder=lambda r: "A kind reply to " + r["messages"][-1]["content"]) as system,
        LocalChatServer(responder=judge_rules) as judge,
    ):
        yield system, judge


def _study(client, people, system, judge, arms=ARMS):
    made = client.post(
        "/api/admin/judges",
        json={"name": f"study judge {judge.port}", "base_url": judge.base_url, "model": "judge-1"},
        headers=auth(people["admin"]),
    )
    assert made.status_code == 201, made.text
    assistance = {"mode": "pre_annotation", "judge_id": made.json()["id"], "arms": arms, "seed": SEED}
    body = study_body(system.base_url, assistance=assistance)
    study = client.post("/api/studies", json=body, headers=auth(people["admin"]))
    assert study.status_code == 201, study.text
    invite = client.post(
        f"/api/studies/{study.json()['id']}/invites", json={"cohort": True}, headers=auth(people["admin"])
    )
    return study.json(), invite.json()


def _run_queued_jobs() -> list[str]:
    """Run what the hub queued, through the queue's own task handlers (as a worker would)."""
    jobs.register()
    huey = queue.get_huey()
    names = []
    for task in huey.pending():
        names.append(task.name)
        huey.execute(task)
    return names


def _chat(browser, study_id: int) -> tuple[int, str, int, int]:
    chat = browser.post(f"/api/studies/{study_id}/conversations", json={}).json()
    sent = browser.post(f"/api/conversations/{chat['id']}/messages", json={"content": "Hello"})
    assert sent.status_code == 201, sent.text
    return chat["id"], chat["arm"], sent.json()["user_message"]["id"], sent.json()["message"]["id"]


def test_suggestions_in_every_arm_shown_to_the_assisted_drafts_for_realtime(hub_env, people, servers):
    system, judge = servers
    with TestClient(create_app()) as admin:
        study, invite = _study(admin, people, system, judge)
        by_arm = {}
        for _ in ARMS:
            browser = TestClient(create_app())
            browser.__enter__()
            join(browser, invite["token"])
            chat_id, arm, user_mid, reply_mid = _chat(browser, study["id"])
            by_arm[arm] = (browser, chat_id, user_mid, reply_mid)
        # the recorded seed decides: positions 0, 1, 2 of one permuted block
        assert [assign_arm(SEED, i, ARMS) for i in range(3)] == [
            arm for arm in sorted(by_arm, key=lambda a: by_arm[a][1])
        ]
        assert sorted(by_arm) == sorted(ARMS)
        assert _run_queued_jobs().count(queue.SUGGEST_ANNOTATIONS) == 6  # reply + user message per conversation

        with Session(hub_env) as session:
            rows = session.exec(select(AnnotationSuggestion)).all()
        # per conversation: the reply gets helpful, safe, problems; the user message gets topic; none has an error
        assert len(rows) == 12 and all(r.error is None and 0 <= r.confidence <= 1 for r in rows)
        assert {r.question_id for r in rows if r.message_id == by_arm["unassisted"][3]} == {
            "helpful",
            "safe",
            "problems",
        }

        for arm, (browser, chat_id, _, reply_mid) in by_arm.items():
            tree = browser.get(f"/api/conversations/{chat_id}").json()
            listed = browser.get(f"/api/conversations/{chat_id}/messages/{reply_mid}/suggestions").json()
            shown = arm == "assisted"
            assert bool(tree["suggestions"]) == shown and bool(listed["suggestions"]) == shown
        browser, chat_id, user_mid, reply_mid = by_arm["assisted"]
        safe = next(s for s in listed_for(browser, chat_id, reply_mid) if s["question_id"] == "safe")
        assert safe["value"] is True and safe["confidence"] == 0.8 and safe["explanation"] == "Judged safe."
        answered = browser.put(
            f"/api/conversations/{chat_id}/messages/{reply_mid}/annotations",
            json={
                "answers": [{"question_id": "safe", "value": True, "handling_ms": 2500, "suggestion_id": safe["id"]}]
            },
        )
        assert answered.status_code == 200, answered.text

        # drafts: the realtime arm only
        browser, chat_id, user_mid, reply_mid = by_arm["realtime"]
        draft = browser.post(
            f"/api/conversations/{chat_id}/drafts",
            json={"purpose": "free_text", "message_id": reply_mid, "question_id": "note"},
        )
        assert draft.status_code == 201, draft.text
        assert draft.json()["draft"] == "Draft: the user asked a clear question."
        edit_draft = browser.post(
            f"/api/conversations/{chat_id}/drafts", json={"purpose": "post_edit", "message_id": reply_mid}
        )
        assert edit_draft.json()["draft"] == "A kind and correct reply."
        for body, field in (
            ({"purpose": "free_text", "message_id": reply_mid, "question_id": "safe"}, "question_id"),
            ({"purpose": "free_text", "message_id": reply_mid}, "question_id"),
            ({"purpose": "post_edit", "message_id": user_mid}, "message_id"),
            ({"purpose": "post_edit", "message_id": 10**9}, "message_id"),
            ({"purpose": "shout", "message_id": reply_mid}, "purpose"),
            ({"purpose": "post_edit", "message_id": reply_mid, "extra": 1}, "extra"),
        ):
            refused = browser.post(f"/api/conversations/{chat_id}/drafts", json=body)
            assert refused.status_code in (404, 422) and field in refused.text, (body, refused.text)
        other_browser, other_chat, _, other_reply = by_arm["unassisted"]
        refused = other_browser.post(
            f"/api/conversations/{other_chat}/drafts", json={"purpose": "post_edit", "message_id": other_reply}
        )
        assert refused.status_code == 403 and "real-time arm" in refused.text
        # someone else's conversation is not found at all
        assert (
            other_browser.post(
                f"/api/conversations/{chat_id}/drafts", json={"purpose": "post_edit", "message_id": reply_mid}
            ).status_code
            == 404
        )
        # the answer and the edit name the draft they used: what was kept is logged
        note = {"question_id": "note", "value": "Draft: the user asked a question.", "draft_id": draft.json()["id"]}
        url = f"/api/conversations/{chat_id}/messages/{reply_mid}"
        for wrong in ({**note, "draft_id": 10**9}, {**note, "draft_id": edit_draft.json()["id"] + 100}):
            refused = browser.put(f"{url}/annotations", json={"answers": [wrong]})
            assert refused.status_code == 422 and refused.json()["field"] == "answers[0].draft_id"
        claimed = browser.put(  # a draft about another message cannot be claimed
            f"/api/conversations/{chat_id}/messages/{user_mid}/annotations", json={"answers": [note]}
        )
        assert claimed.status_code == 422 and claimed.json()["field"] == "answers[0].draft_id"
        assert browser.put(f"{url}/annotations", json={"answers": [note]}).status_code == 200
        edit = {"content": "A kind reply.", "reason": "shorter", "draft_id": edit_draft.json()["id"]}
        assert browser.post(f"{url}/edit", json=edit).status_code == 201
        judge.inject("server_error", times=3)  # every attempt fails: the participant is told in words
        failed = browser.post(
            f"/api/conversations/{chat_id}/drafts",
            json={"purpose": "free_text", "message_id": reply_mid, "question_id": "note"},
        )
        assert failed.status_code == 503 and failed.json()["field"] == "judge"
        assert failed.json()["error"] == "the assistant could not write a draft just now; try again"
        with Session(hub_env) as session:
            logged = session.exec(select(DraftRequest)).all()
            assert [(d.purpose, d.error is None, d.latency_ms is not None) for d in logged] == [
                ("free_text", True, True),
                ("post_edit", True, True),
                ("free_text", False, True),
            ]
            logged = logged[:2]
            assert [d.final_text for d in logged] == [note["value"], "A kind reply."]
            # words of the draft kept in order: 6 of 7 ("clear" dropped), 3 of 5 ("and correct" dropped)
            assert [d.kept_fraction for d in logged] == [6 / 7, 3 / 5]
            report = assistance_report(session, session.get(Study, study["id"]))
        for _, (browser, *_rest) in by_arm.items():
            browser.__exit__(None, None, None)
    assert report is not None and report["drafts"]["requests"] == 3 and report["drafts"]["used"] == 2
    assert report["drafts"]["failed"] == 1
    assisted = next(a for a in report["arms"] if a["arm"] == "assisted")
    assert [row["estimated"] for row in assisted["rows"]] == [False, False, False]
    assert assisted["rows"][0]["note"].startswith("too few participants to estimate: 1 in assisted and 0 in unassisted")
    assert assisted["rows"][1]["note"].startswith("no turn has categorical answers")
    counts = {c["arm"]: c for c in report["counts"]}
    assert counts["assisted"]["annotations"] == 1 and counts["assisted"]["with_suggestion"] == 1


def listed_for(browser, chat_id: int, message_id: int) -> list[dict]:
    return browser.get(f"/api/conversations/{chat_id}/messages/{message_id}/suggestions").json()["suggestions"]


def test_malformed_judge_answers_are_retried_then_recorded_as_no_suggestion(hub_env, people):
    answers = iter(["I think it is safe, yes.", '{"answers": "none"}'])

    def malformed(request: dict) -> str:
        if "Reply with JSON only" not in request["messages"][0]["content"]:
            return "A kind reply."
        return next(answers, '{"answers": [{"question_id": "helpful", "value": 9, "confidence": 0.5}]}')

    with (
        LocalChatServer(responder=lambda r: "A kind reply.") as system,
        LocalChatServer(responder=malformed) as judge,
        TestClient(create_app()) as admin,
        TestClient(create_app()) as browser,
    ):
        study, invite = _study(admin, people, system, judge, arms=["assisted"])
        join(browser, invite["token"])
        chat_id, arm, user_mid, reply_mid = _chat(browser, study["id"])
        _run_queued_jobs()
        requests_to_judge = judge.counts["/v1/chat/completions"]
        with Session(hub_env) as session:
            rows = {(r.message_id, r.question_id): r for r in session.exec(select(AnnotationSuggestion))}
        tree = browser.get(f"/api/conversations/{chat_id}").json()
    assert arm == "assisted"
    # the reply's job asked twice (prose, then no list) and recorded no suggestion for any question
    reply_rows = [r for (m, _), r in rows.items() if m == reply_mid]
    assert len(reply_rows) == 3 and all(r.value is None and r.error for r in reply_rows)
    assert {r.error for r in reply_rows} == {"the judge's answer has no 'answers' list"}
    # the user message's job got JSON that missed its question
    assert rows[(user_mid, "topic")].error == "the judge did not answer this question"
    assert requests_to_judge == 3
    assert tree["suggestions"] == []  # nothing without a value is shown
