"""Cross-review: a participant annotates another participant's finished conversation (read-only), so that turns carry
several participants' answers and the dashboard's agreement and the assistance report's agreement become numbers.
Refused alike (404) for strangers, the author, unfinished conversations and every write."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.llm.server import LocalChatServer
from hub.models import Chat, ChatAnnotation, ChatMessage, DraftRequest, Study, StudyParticipant
from hub.services.studies.assistance_report import assistance_report
from hub.services.studies.reviews import annotator_arm
from hub.web.app import create_app
from tests.hub.conftest import auth, migrated_hub
from tests.hub.studies.assistance_rows import seed_assistance_study
from tests.hub.studies.helpers import KEY_ENV, SECRET, join, responder, study_body
from tests.hub.studies.test_assistance import ARMS as ASSISTED_ARMS
from tests.hub.studies.test_assistance import _chat as assisted_chat
from tests.hub.studies.test_assistance import _run_queued_jobs as run_queued_jobs
from tests.hub.studies.test_assistance import _study as assisted_study
from tests.hub.studies.test_assistance import servers  # noqa: F401 (fixture)


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    yield from migrated_hub(tmp_path, monkeypatch, None)


@pytest.fixture
def endpoint(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with LocalChatServer(responder=responder, expected_key=SECRET) as server:
        yield server


def _agreement(client, people, study_id, question_id):
    view = client.get(f"/api/studies/{study_id}/dashboard", headers=auth(people["admin"])).json()
    return next(q for q in view["questions"] if q["id"] == question_id)["agreement"]


def test_a_participant_reviews_another_participants_finished_conversation(hub_env, people, endpoint):
    with (
        TestClient(create_app()) as admin,
        TestClient(create_app()) as author,
        TestClient(create_app()) as reviewer,
        TestClient(create_app()) as third,
        TestClient(create_app()) as stranger,
    ):
        body = study_body(endpoint.base_url)
        body["systems"][0]["key_ref"] = KEY_ENV
        study = admin.post("/api/studies", json=body, headers=auth(people["admin"])).json()
        sid = study["id"]
        token = admin.post(f"/api/studies/{sid}/invites", json={}, headers=auth(people["admin"])).json()["token"]
        join(author, token)
        me = join(reviewer, token)["participant"]["id"]
        join(third, token)

        cid = author.post(f"/api/studies/{sid}/conversations", json={}).json()["id"]
        url = f"/api/conversations/{cid}"
        replies = []
        for number, text in enumerate(["Hello there", "Is this safe?"]):
            sent = author.post(f"{url}/messages", json={"content": text}).json()
            replies.append(sent["message"]["id"])
            mine = {"answers": [{"question_id": "safe", "value": number == 0}]}
            mine["answers"].append({"question_id": "helpful", "value": 2, "explanation": "AUTHOR-SECRET"})
            assert author.put(f"{url}/messages/{replies[-1]}/annotations", json=mine).status_code == 200
        reply = replies[0]
        annotate = f"{url}/messages/{reply}/annotations"
        answer = {"answers": [{"question_id": "safe", "value": True}, {"question_id": "helpful", "value": 4}]}

        # not finished yet: nothing to review, and the conversation is not there for the reviewer
        assert reviewer.get(f"/api/studies/{sid}/review/next").json()["conversation_id"] is None
        assert reviewer.get(url).status_code == 404 and reviewer.put(annotate, json=answer).status_code == 404
        unknown = _agreement(admin, people, sid, "safe")  # one participant's answer per turn
        assert unknown["alpha"] is None and unknown["percent"] is None and unknown["n_items"] == 0

        assert author.post(f"/api/conversations/{cid}/finish").status_code == 200
        # the author is never offered their own conversation; strangers have no study
        assert author.get(f"/api/studies/{sid}/review/next").json()["conversation_id"] is None
        assert stranger.get(f"/api/studies/{sid}/review/next").status_code == 404
        assert stranger.get(url).status_code == 404 and stranger.put(annotate, json=answer).status_code == 404

        offered = reviewer.get(f"/api/studies/{sid}/review/next").json()
        page_url = f"/studies/{sid}/conversations/{cid}"
        assert offered == {"conversation_id": cid, "reviews": 0, "remaining": 1, "page_url": page_url}
        tree = reviewer.get(url)
        assert tree.status_code == 200 and tree.json()["annotations"] == []  # never the author's answers
        assert "AUTHOR-SECRET" not in tree.text and tree.json()["conversation"]["participant_id"] is None
        assert [m["id"] for m in tree.json()["messages"] if m["role"] == "assistant"] == replies
        stored = reviewer.put(annotate, json=answer)
        assert stored.status_code == 200, stored.text
        no = {"answers": [{"question_id": "safe", "value": False}]}
        assert reviewer.put(f"{url}/messages/{replies[1]}/annotations", json=no).status_code == 200
        own = reviewer.get(url).json()["annotations"]
        assert {(a["question_id"], a["participant_id"]) for a in own} == {("safe", me), ("helpful", me)}
        theirs = [a["explanation"] for a in author.get(url).json()["annotations"]]  # the author's answers stay theirs
        assert theirs == [None, "AUTHOR-SECRET"] * 2

        # read-only: no sending, editing, going back, finishing or marking branches
        writes = [
            ("post", f"{url}/messages", {"content": "mine now"}),
            ("post", f"{url}/messages/{reply}/edit", {"content": "better", "reason": "x"}),
            ("post", f"{url}/revert", {"message_id": reply}),
            ("post", f"{url}/finish", None),
            ("post", f"{url}/messages/{reply}/retry", None),
            ("post", f"{url}/branches/{tree.json()['branches'][0]['id']}/outcome", {"successful": False}),
        ]
        for method, path, payload in writes:
            assert getattr(reviewer, method)(path, json=payload).status_code == 404, path
        assert reviewer.get(f"{url}/messages/{reply}/suggestions").json() == {"suggestions": []}  # unassisted
        # the drafting assistant follows the reviewer's arm: none in a study without assistance
        draft = reviewer.post(
            f"{url}/drafts", json={"purpose": "free_text", "message_id": reply, "question_id": "note"}
        )
        assert draft.status_code == 403, draft.text
        assert "real-time arm" in draft.text and "conversation_id" in draft.text

        # a second reviewer is offered the least-reviewed conversation: the author's second one before the first
        second = author.post(f"/api/studies/{sid}/conversations", json={}).json()["id"]
        author.post(f"/api/conversations/{second}/finish")
        assert third.get(f"/api/studies/{sid}/review/next").json()["conversation_id"] == second
        assert reviewer.get(f"/api/studies/{sid}/review/next").json()["conversation_id"] == second  # first reviewed

        view = admin.get(f"/api/studies/{sid}/dashboard", headers=auth(people["admin"])).json()
        assert view["counts"]["participants"] == 2  # the author and the reviewer (the third only asked)
        safe = _agreement(admin, people, sid, "safe")  # both turns answered alike by author and reviewer
        assert safe["alpha"] == pytest.approx(1.0) and safe["percent"] == pytest.approx(1.0)
        assert safe["n_items"] == 2 and safe["n_raters"] == 2

        # the study closes: reviewing stops
        admin.post(f"/api/studies/{sid}/status", json={"status": "closed"}, headers=auth(people["admin"]))
        assert reviewer.get(url).status_code == 404 and reviewer.put(annotate, json=answer).status_code == 404


def test_reviewers_answers_count_in_their_own_arm_and_make_agreement_estimable(hub_env, admin_user):
    """Participant randomisation: a reviewer's answers about another arm's conversation count in the reviewer's arm."""
    study_id = seed_assistance_study(hub_env, admin_user, per_arm=3, turns=3)
    with Session(hub_env) as session:
        study = session.get(Study, study_id)
        before = assistance_report(session, study)
        people = list(session.exec(select(StudyParticipant).where(StudyParticipant.study_id == study_id)))
        by_arm = {arm: [p for p in people if p.arm == arm] for arm in ("unassisted", "assisted")}
        authored = by_arm["unassisted"][0]
        chat = session.exec(select(Chat).where(Chat.participant_id == authored.id)).one()
        replies = session.exec(
            select(ChatMessage).where(ChatMessage.chat_id == chat.id, ChatMessage.role == "assistant")
        )
        reviewers = by_arm["unassisted"][1:] + by_arm["assisted"]
        for reviewer in reviewers:
            assert annotator_arm(study, chat, reviewer) == reviewer.arm
        for reply in list(replies):
            for number, reviewer in enumerate(reviewers):
                row = ChatAnnotation(message_id=reply.id, participant_id=reviewer.id, question_id="safe",
                                     schema_version=1, value=bool(number % 2), handling_ms=5000)  # fmt: skip
                session.add(row)
        session.commit()
        after = assistance_report(session, study)
    counts = {(c["arm"]): c["annotations"] for c in after["counts"]}
    was = {(c["arm"]): c["annotations"] for c in before["counts"]}
    assert counts["assisted"] - was["assisted"] == 3 * len(by_arm["assisted"])
    assert counts["unassisted"] - was["unassisted"] == 3 * (len(by_arm["unassisted"]) - 1)
    assert after["problem"] is None  # nobody counted in two arms
    rows = {r["outcome"]: r for r in next(a for a in after["arms"] if a["arm"] == "assisted")["rows"]}
    old = {r["outcome"]: r for r in next(a for a in before["arms"] if a["arm"] == "assisted")["rows"]}
    assert not old["agreement"]["effect"]["annotations_treatment"]
    assert (
        rows["agreement"]["effect"]["annotations_treatment"] > 0
        and rows["agreement"]["effect"]["annotations_control"] > 0
    )


def test_the_arm_a_reviewer_annotates_in():
    participant = {"mode": "pre_annotation", "randomise": "participant"}
    by_conversation = {"mode": "pre_annotation", "randomise": "conversation"}
    chat = Chat(id=1, study_id=1, system_id=1, participant_id=1, arm="unassisted")
    author, reviewer = (
        StudyParticipant(id=1, study_id=1, rater_id=1, arm="unassisted"),
        StudyParticipant(id=2, study_id=1, rater_id=2, arm="assisted"),
    )
    assert annotator_arm(Study(title="s", assistance=participant, created_by_id=1), chat, reviewer) == "assisted"
    assert annotator_arm(Study(title="s", assistance=participant, created_by_id=1), chat, author) == "unassisted"
    assert annotator_arm(Study(title="s", assistance=by_conversation, created_by_id=1), chat, reviewer) == "unassisted"


def test_a_reviewer_gets_the_assistance_of_their_own_arm(hub_env, people, servers):  # noqa: F811
    """Participant randomisation: reviewing an unassisted participant's conversation, the assisted reviewer sees the
    judge's suggestions and the real-time reviewer gets drafts for free-text answers (recorded as theirs)."""
    system, judge = servers
    with TestClient(create_app()) as admin:
        study, invite = assisted_study(admin, people, system, judge)
        by_arm = {}
        for _ in ASSISTED_ARMS:
            browser = TestClient(create_app())
            browser.__enter__()
            me = join(browser, invite["token"])["participant"]["id"]
            chat_id, arm, _, reply = assisted_chat(browser, study["id"])
            by_arm[arm] = (browser, me, chat_id, reply)
        run_queued_jobs()
        _, _, cid, reply = by_arm["unassisted"]
        by_arm["unassisted"][0].post(f"/api/conversations/{cid}/finish")
        url = f"/api/conversations/{cid}"
        for arm in ("assisted", "realtime"):
            browser = by_arm[arm][0]
            tree = browser.get(url).json()
            assert tree["conversation"]["arm"] == arm
            listed = browser.get(f"{url}/messages/{reply}/suggestions").json()["suggestions"]
            assert bool(tree["suggestions"]) == bool(listed) == (arm == "assisted")
        browser, me = by_arm["realtime"][:2]
        draft = browser.post(f"{url}/drafts", json={"purpose": "free_text", "message_id": reply, "question_id": "note"})
        assert draft.status_code == 201, draft.text
        answer = {"question_id": "note", "value": "Draft: the user asked.", "draft_id": draft.json()["id"]}
        stored = browser.put(f"{url}/messages/{reply}/annotations", json={"answers": [answer]})
        assert stored.status_code == 200, stored.text
        refused = browser.post(f"{url}/drafts", json={"purpose": "post_edit", "message_id": reply})
        assert refused.status_code == 403 and "purpose" in refused.text  # post-edits are the author's
        with Session(hub_env) as session:
            row = session.get(DraftRequest, draft.json()["id"])
            assert row.participant_id == me and row.final_text == "Draft: the user asked." and row.kept_fraction
        for arm in ASSISTED_ARMS:
            by_arm[arm][0].__exit__(None, None, None)
