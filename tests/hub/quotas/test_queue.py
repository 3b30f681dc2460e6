"""The public queue (/queue and GET /api/queue): every submission counted; only those the viewer may open named;
never an owner; reasons for owners and admins only; each of the viewer's submissions with its place in line."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub.models import Submission, SubmissionStatus, System, User
from hub.web.app import create_app
from tests.hub.conftest import auth

S = SubmissionStatus


@pytest.fixture
def seeded(hub_env, people):
    """Two researchers' public and private systems in every state, at known times (ids by label)."""
    now = datetime.now(UTC)
    early = max(now - timedelta(hours=3), now.replace(hour=0, minute=0, second=1, microsecond=0))
    at = [early + (now - early) * k / 10 for k in range(10)]  # increasing moments, all today (UTC)
    yesterday = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(hours=2)
    with Session(hub_env) as session:
        users = {u.display_name: u.id for u in session.exec(select(User))}

        def system(name, owner, public, baseline=False):
            row = System(name=name, owner_id=owner, is_public=public, is_baseline=baseline)
            session.add(row)
            session.flush()
            return row.id

        systems = {
            "open": system("Open bot", users["owner"], True),
            "secret": system("Secret bot", users["owner"], False),
            "other-open": system("Other public", users["other"], True),
            "other-secret": system("Other secret", users["other"], False),
            "baseline": system("Echo baseline", None, True, baseline=True),
        }
        plan = [  # label, system, status, created, updated, error / review reason
            ("S1", "open", S.submitted, at[2], at[2], None),
            ("S2", "open", S.approved, at[0], at[3], None),
            ("S3", "secret", S.approved, at[1], at[4], None),
            ("S4", "secret", S.failed, at[0], at[5], "line 3: the owner's own error"),
            ("S5", "other-open", S.approved, at[0], at[1], None),
            ("S6", "other-open", S.evaluating, at[0], at[2], None),
            ("S7", "other-secret", S.submitted, at[1], at[1], None),
            ("S8", "other-secret", S.failed, at[0], at[6], "the other researcher's secret error"),
            ("S9", "other-secret", S.complete, at[0], at[7], None),
            ("S10", "other-open", S.complete, yesterday, yesterday, None),
            ("S11", "other-open", S.withdrawn, at[0], at[8], None),
            ("S12", "baseline", S.evaluated, at[0], at[9], None),
            ("S13", "other-open", S.rejected, at[0], at[9], "not a dialogue system"),
        ]
        ids = {}
        for label, sys_label, status, created, updated, reason in plan:
            owner = None if sys_label == "baseline" else users["other" if sys_label.startswith("other") else "owner"]
            row = Submission(
                system_id=systems[sys_label],
                owner_id=owner,
                dataset_name="hub-open-v1",
                dataset_fingerprint="f",
                responses_sha256=label.lower().ljust(64, "0"),
                status=status,
                created_at=created,
                updated_at=updated,
                error=reason if status == S.failed else None,
                review_reason=reason if status == S.rejected else None,
                progress=0.25 if status == S.evaluating else 0.0,
            )
            session.add(row)
            session.flush()
            ids[label] = row.id
        session.commit()
    return ids


def _queue(client, token=None) -> dict:
    reply = client.get("/api/queue", headers=auth(token) if token else {})
    assert reply.status_code == 200, reply.text
    assert reply.headers["Cache-Control"] == "no-store"
    return reply.json()


def _section(queue, key) -> dict:
    return next(s for s in queue["sections"] if s["key"] == key)


def _listed(queue, key) -> list[tuple[int, int | None]]:
    return [(e["id"], e.get("position")) for e in _section(queue, key)["listed"]]


PRIVATE_WORDS = ("Secret bot", "Other secret", "owner@example.org", "other@example.org", "secret error", "own error")


def test_a_visitor_sees_counts_and_only_public_approved_submissions(seeded):
    with TestClient(create_app()) as client:
        queue = _queue(client)
    counts = {s["key"]: (s["count"], s["anonymous"]) for s in queue["sections"]}
    assert counts == {
        "waiting_review": (2, 2),  # not yet approved: counted only, public or not
        "waiting_evaluation": (3, 1),
        "evaluating": (1, 0),
        "done_today": (2, 1),  # S10 finished yesterday; S11 withdrawn is nowhere
        "failed_today": (3, 3),  # rejected S13 is the owner's business too
    }
    assert _listed(queue, "waiting_evaluation") == [(seeded["S5"], 1), (seeded["S2"], 2)]  # order of approval
    assert _listed(queue, "evaluating") == [(seeded["S6"], None)]
    assert _section(queue, "evaluating")["listed"][0]["progress"] == 0.25
    assert _listed(queue, "done_today") == [(seeded["S12"], None)]
    assert queue["mine"] == []
    text = json.dumps(queue)
    assert not any(word in text for word in PRIVATE_WORDS), text
    assert '"owner' not in text and "display_name" not in text


def test_the_owner_sees_each_submission_with_its_place_and_their_own_reasons_only(seeded, people):
    with TestClient(create_app()) as client:
        queue = _queue(client, people["owner"])
    mine = {e["id"]: (e["section"], e.get("position"), e["of"]) for e in queue["mine"]}
    assert mine == {
        seeded["S1"]: ("waiting_review", 2, 2),
        seeded["S2"]: ("waiting_evaluation", 2, 3),
        seeded["S3"]: ("waiting_evaluation", 3, 3),
        seeded["S4"]: ("failed_today", None, 3),
    }
    failed = {e["id"]: e["reason"] for e in _section(queue, "failed_today")["listed"]}
    assert failed == {seeded["S4"]: "line 3: the owner's own error"}
    assert _section(queue, "failed_today")["anonymous"] == 2
    assert _section(queue, "waiting_review")["anonymous"] == 1  # the other researcher's S7
    text = json.dumps(queue)
    assert "Other secret" not in text and "secret error" not in text and "not a dialogue system" not in text


def test_a_public_systems_failure_is_named_to_others_without_its_reason(seeded, people):
    with TestClient(create_app()) as client:
        for_owner = _queue(client, people["owner"])
        for_other = _queue(client, people["other"])
    assert seeded["S13"] not in [e["id"] for e in _section(for_owner, "failed_today")["listed"]]  # rejected: unnamed
    assert {e["id"]: e["reason"] for e in _section(for_other, "failed_today")["listed"]} == {
        seeded["S8"]: "the other researcher's secret error",
        seeded["S13"]: "not a dialogue system",
    }


def test_admins_see_every_submission_and_reason(seeded, people):
    with TestClient(create_app()) as client:
        queue = _queue(client, people["admin"])
    assert all(s["anonymous"] == 0 for s in queue["sections"])
    assert _listed(queue, "waiting_review") == [(seeded["S7"], 1), (seeded["S1"], 2)]
    reasons = {e["id"]: e["reason"] for e in _section(queue, "failed_today")["listed"]}
    assert (
        reasons[seeded["S4"]] == "line 3: the owner's own error" and reasons[seeded["S13"]] == "not a dialogue system"
    )


def test_the_page_shows_the_same_queue(seeded, people):
    with TestClient(create_app(), headers={"accept": "text/html"}) as client:
        visitor = client.get("/queue")
        owner = client.get("/queue", headers=auth(people["owner"]))
    assert visitor.status_code == 200 and "Waiting for evaluation" in visitor.text
    assert "Open bot" in visitor.text and "Other public" in visitor.text
    assert not any(word in visitor.text for word in PRIVATE_WORDS)
    assert "2 of them" in visitor.text and "counted only" in visitor.text
    assert "position 2 of 3" in owner.text and "position 3 of 3" in owner.text and "Secret bot" in owner.text
    assert "line 3: the owner&#39;s own error" in owner.text and "secret error" not in owner.text
