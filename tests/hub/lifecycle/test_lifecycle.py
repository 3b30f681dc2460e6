"""Item 3: statuses in words, my submissions (page and API), withdrawing, public/private later, drafts in the queue."""

from __future__ import annotations

import json

from sqlmodel import Session, select

from hub import storage
from hub.models import AuditEntry, Notification, Score, Submission, SubmissionStatus, User
from hub.models.common import utcnow
from hub.services.notifications.status_words import EXPERIMENT, SUBMISSION
from hub.services.submissions.evaluation import EvaluationRun
from tests.hub.conftest import DATASET, auth, post


def test_every_status_has_words_a_next_step_and_who_acts():
    from hub.models import ExperimentStatus

    assert set(SUBMISSION) == set(SubmissionStatus) and set(EXPERIMENT) == set(ExperimentStatus)
    for words in (*SUBMISSION.values(), *EXPERIMENT.values()):
        assert words.label and words.meaning.endswith(".") and words.next_step.endswith(".")
        assert words.who_acts in {"admin", "researcher", "hub", "raters", "nobody"}
        assert "_" not in words.label + words.meaning + words.next_step  # no internal names such as human_evaluation


def in_scores_download(client, submission_id: int) -> bool:
    rows = [json.loads(line) for line in client.get("/api/downloads/scores.jsonl").text.splitlines() if line]
    return submission_id in {row.get("submission_id") for row in rows}


def _submit_and_score(client, people, baselines) -> int:
    data = {"is_public": "true", "baselines": [str(baselines["echo"])]}
    [created] = post(client, people["owner"], data).json()
    assert created["status_words"]["who_acts"] == "admin"
    approved = client.post(f"/api/admin/submissions/{created['id']}/approve", headers=auth(people["admin"]))
    assert approved.status_code == 200, approved.text
    assert EvaluationRun(client.app_engine, storage.get_storage(), created["id"]).run() == "human_evaluation"
    return created["id"]


def test_a_researcher_follows_withdraws_and_republishes(client, people, baselines, hub_env):
    client.app_engine = hub_env
    submission_id = _submit_and_score(client, people, baselines)

    # My submissions, API: the owner's only, each status in words with its drafted experiment.
    mine = client.get("/api/submissions?mine=1", headers=auth(people["owner"]))
    assert mine.status_code == 200
    [row] = mine.json()
    assert row["id"] == submission_id and row["status"] == "human_evaluation"
    assert row["status_words"]["label"] == "Human evaluation" and row["status_words"]["who_acts"] == "admin"
    assert [e["status_words"]["who_acts"] for e in row["experiments"]] == ["admin"]
    assert client.get("/api/submissions?mine=1", headers=auth(people["other"])).json() == []
    assert client.get("/api/submissions?mine=1").status_code == 401
    refused = client.get("/api/submissions?mine=0", headers=auth(people["owner"]))
    assert refused.status_code == 400 and refused.json()["field"] == "mine"

    # The draft waits in the admin's queue with its cost and a launch button.
    queue_page = client.get("/admin/queue", headers={**auth(people["admin"]), "accept": "text/html"})
    experiment_id = row["experiments"][0]["id"]
    assert f'id="draft-{experiment_id}"' in queue_page.text
    assert f'action="/admin/experiments/{experiment_id}/launch"' in queue_page.text and "Launch ($" in queue_page.text

    # Public on the leaderboard, then withdrawn: off the leaderboard, the downloads and the public API; rows kept.
    def listed() -> bool:
        board = client.get(f"/api/leaderboards/{DATASET}").json()
        return submission_id in {r.get("submission_id") for r in board["rows"]} or "My bot" in str(board)

    def in_download() -> bool:
        return in_scores_download(client, submission_id)

    assert listed() and in_download()
    assert client.get(f"/api/submissions/{submission_id}").status_code == 200
    withdrawn = client.post(f"/api/submissions/{submission_id}/withdraw", headers=auth(people["owner"]))
    assert withdrawn.status_code == 200 and withdrawn.json()["status"] == "withdrawn"
    assert not listed() and not in_download()
    assert client.get(f"/api/submissions/{submission_id}").status_code == 404
    assert (
        client.get(f"/api/submissions/{submission_id}", headers=auth(people["owner"])).json()["status"] == "withdrawn"
    )
    assert (
        f'id="draft-{experiment_id}"'
        not in client.get("/admin/queue", headers={**auth(people["admin"]), "accept": "text/html"}).text
    )
    again = client.post(f"/api/submissions/{submission_id}/withdraw", headers=auth(people["owner"]))
    assert again.status_code == 409
    stranger = client.post(f"/api/submissions/{submission_id}/withdraw", headers=auth(people["other"]))
    assert stranger.status_code == 404
    with Session(hub_env) as session:
        assert session.exec(select(Score).where(Score.submission_id == submission_id)).first() is not None
        actions = [e.action for e in session.exec(select(AuditEntry))]
    assert "withdraw_submission" in actions


def test_a_system_goes_private_and_public_again_audited(client, people, baselines, hub_env):
    client.app_engine = hub_env
    submission_id = _submit_and_score(client, people, baselines)
    system_id = client.get(f"/api/submissions/{submission_id}").json()["system"]["id"]
    assert client.get(f"/api/submissions/{submission_id}").status_code == 200
    private = client.post(
        f"/api/systems/{system_id}/visibility", json={"is_public": False}, headers=auth(people["owner"])
    )
    assert private.status_code == 200 and private.json()["is_public"] is False
    assert client.get(f"/api/submissions/{submission_id}").status_code == 404
    assert not in_scores_download(client, submission_id)
    public = client.post(
        f"/api/systems/{system_id}/visibility", json={"is_public": True}, headers=auth(people["owner"])
    )
    assert public.status_code == 200 and client.get(f"/api/submissions/{submission_id}").status_code == 200
    refused = client.post(
        f"/api/systems/{system_id}/visibility", json={"is_public": "x"}, headers=auth(people["owner"])
    )
    assert refused.status_code == 422
    stranger = client.post(
        f"/api/systems/{system_id}/visibility", json={"is_public": False}, headers=auth(people["other"])
    )
    assert stranger.status_code == 404
    with Session(hub_env) as session:
        changes = [e.detail for e in session.exec(select(AuditEntry).where(AuditEntry.action == "change_visibility"))]
    assert changes == [{"from": "public", "to": "private"}, {"from": "private", "to": "public"}]


def test_the_my_submissions_page_withdraws_with_a_form(client, people, baselines, hub_env):
    [created] = post(client, people["owner"]).json()
    html = {**auth(people["owner"]), "accept": "text/html"}
    page = client.get("/account/submissions", headers=html)
    assert page.status_code == 200
    assert "Waiting for review" in page.text and "An admin approves it" in page.text  # words, not "submitted"
    done = client.post(f"/account/submissions/{created['id']}/withdraw", headers=html)
    assert done.status_code == 303 and done.headers["location"] == "/account/submissions"
    with Session(hub_env) as session:
        assert session.get(Submission, created["id"]).status == SubmissionStatus.withdrawn
    # A withdrawn file no longer blocks submitting it again.
    assert post(client, people["owner"]).status_code == 201


def test_every_state_change_notifies_the_owner_and_admins_hear_of_review_launch_and_finish(
    client, people, baselines, hub_env
):
    from hub.services.human import experiments, human_pipeline

    client.app_engine = hub_env
    submission_id = _submit_and_score(client, people, baselines)
    with Session(hub_env) as session:
        admin = session.exec(select(User).where(User.email == "admin@example.org")).one()
        [experiment_id] = [
            e["id"]
            for e in client.get("/api/submissions?mine=1", headers=auth(people["owner"])).json()[0]["experiments"]
        ]
        experiments.launch(session, admin, experiment_id)
        human_pipeline.close(session, admin, experiment_id)

    def kinds(role: str) -> list[str]:
        body = client.get("/api/notifications", headers=auth(people[role])).json()
        return [n["kind"] for n in reversed(body["notifications"])]

    assert kinds("owner") == [
        "submission.submitted",
        "submission.approved",
        "submission.evaluating",
        "submission.evaluated",
        "experiment.draft",
        "submission.human_evaluation",
        "experiment.open",
        "experiment.closed",
        "submission.complete",
    ]
    assert kinds("admin") == ["admin.review", "admin.launch", "admin.closed"]
    assert kinds("other") == []
    owner = client.get("/api/notifications", headers=auth(people["owner"])).json()
    assert owner["unread"] == 9
    page = client.get("/account", headers={**auth(people["owner"]), "accept": "text/html"})
    assert 'aria-label="9 unread"' in page.text
    assert client.post("/api/notifications/read", json={}, headers=auth(people["owner"])).json() == {"unread": 0}
    del submission_id


def test_a_rejection_and_a_failure_tell_the_owner_why(client, people, hub_env):
    [first] = post(client, people["owner"]).json()
    rejected = client.post(
        f"/api/admin/submissions/{first['id']}/reject", json={"reason": "wrong file"}, headers=auth(people["admin"])
    )
    assert rejected.status_code == 200
    with Session(hub_env) as session:  # a failure written by a bulk update, as the evaluation writes it
        from sqlalchemy import update

        submission = session.get(Submission, first["id"])
        submission.status = SubmissionStatus.approved  # (re-opened by hand for the test)
        session.add(submission)
        session.commit()
        session.execute(
            update(Submission)
            .where(Submission.id == first["id"])
            .values(status=SubmissionStatus.failed, error="metric bleu-2 crashed", updated_at=utcnow())
        )
        session.commit()
        bodies = {
            n.kind: n.body
            for n in session.exec(select(Notification).where(Notification.kind.startswith("submission.")))
        }
    assert "Reason: wrong file" in bodies["submission.rejected"]
    assert "Error: metric bleu-2 crashed" in bodies["submission.failed"]
