"""The dashboard's assistance report on a seeded randomised study (tests/hub/studies/assistance_rows.py): assisted
participants were faster and copied the judge more often, so the report shows a shorter handling time and a higher
share of answers equal to the suggestion, with intervals and one-sided p-values; drafts' kept share; counts per
arm; plain words where nothing can be estimated. Served in the dashboard's JSON twin and page."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from evaluation.assistance_outcomes import kept_fraction
from hub.models import Chat, ChatAnnotation, ChatMessage, Study, User
from hub.services.accounts.accounts import create_token, create_user
from hub.services.studies.assistance_report import assistance_report
from hub.web.app import create_app
from tests.hub.conftest import auth, migrated_hub
from tests.hub.studies.assistance_rows import seed_assistance_study


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    yield from migrated_hub(tmp_path, monkeypatch, None)


@pytest.fixture
def admin(hub_env):
    with Session(hub_env) as session:
        user = create_user(session, email="admin@example.org", password="correct horse battery", display_name="admin",
                           is_admin=True)  # fmt: skip
        token = create_token(session, user, name="cli")[1]
        return session.exec(select(User).where(User.id == user.id)).one(), token


def test_the_report_shows_each_arms_effects_with_intervals(hub_env, admin):
    study_id = seed_assistance_study(hub_env, admin[0], per_arm=4)
    with Session(hub_env) as session:
        report = assistance_report(session, session.get(Study, study_id))
    assert report is not None and report["randomise"] == "participant" and report["seed"] == 77
    counts = {c["arm"]: c for c in report["counts"]}
    assert counts["assisted"] == {"arm": "assisted", "participants": 4, "conversations": 4, "annotations": 48,
                                  "timed": 48, "with_suggestion": 48}  # fmt: skip
    assisted = {row["outcome"]: row for row in next(a for a in report["arms"] if a["arm"] == "assisted")["rows"]}
    time, copied = assisted["log_time"], assisted["equals_suggestion"]
    assert time["estimated"] and time["effect"]["estimate"] < 0 and time["estimate"].startswith("-")
    assert time["effect"]["p_one_sided"] < 0.05 and time["units"] == "4 vs 4"
    assert copied["estimated"] and copied["effect"]["estimate"] > 0 and copied["effect"]["low"] > 0
    # each participant annotates only their own conversation: no turn has two participants' answers
    assert not assisted["agreement"]["estimated"]
    assert assisted["agreement"]["note"].startswith("no turn has categorical answers")
    realtime = next(a for a in report["arms"] if a["arm"] == "realtime")
    assert [row["outcome"] for row in realtime["rows"]] == ["log_time", "agreement"]
    assert realtime["rows"][0]["effect"]["estimate"] > 0  # slower with the drafting assistant
    drafts = report["drafts"]
    second = kept_fraction("A helpful and safe answer to the question.", "My own answer, helpful to the question.")
    assert drafts["requests"] == drafts["used"] == 8 and drafts["kept"]["units"] == 4
    assert drafts["kept"]["mean"] == pytest.approx((1 + second) / 2) == drafts["kept"]["low"]  # every one the same


def test_too_few_participants_are_said_plainly_and_the_page_shows_the_report(hub_env, admin):
    study_id = seed_assistance_study(hub_env, admin[0], per_arm=1, seed=4)
    with TestClient(create_app()) as client:
        data = client.get(f"/api/studies/{study_id}/dashboard", headers=auth(admin[1]))
        assert data.status_code == 200, data.text
        rows = data.json()["assistance"]["arms"][0]["rows"]
        assert rows[0]["note"] == (
            "too few participants to estimate: 1 in assisted and 1 in unassisted with annotations "
            "(at least 2 in each needed)"
        )
    with Session(hub_env) as session:
        study = session.get(Study, study_id)
        study.assistance = {"mode": "none"}
        session.add(study)
        session.commit()
        assert assistance_report(session, study) is None


def test_a_participant_found_in_two_arms_is_reported_not_a_server_error(hub_env, admin):
    study_id = seed_assistance_study(hub_env, admin[0], per_arm=2, turns=2, seed=5)
    with Session(hub_env) as session:
        chat = session.exec(select(Chat).where(Chat.study_id == study_id, Chat.arm == "assisted")).first()
        chat.arm = "unassisted"  # this participant now has conversations in two arms
        second = Chat(study_id=study_id, system_id=chat.system_id, participant_id=chat.participant_id, arm="assisted")
        session.add_all([chat, second])
        session.flush()
        message = ChatMessage(chat_id=second.id, role="assistant", content="Hi")
        session.add(message)
        session.flush()
        session.add(ChatAnnotation(message_id=message.id, participant_id=chat.participant_id, question_id="safe",
                                   schema_version=1, value=True, handling_ms=900))  # fmt: skip
        session.commit()
        report = assistance_report(session, session.get(Study, study_id))
    assert report["problem"] == (
        "a randomised unit has annotations in two arms (randomised by conversation? pair them)"
    )
    assert all(not row["estimated"] for arm in report["arms"] for row in arm["rows"])
