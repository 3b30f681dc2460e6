"""A study's dashboard (JSON twin and page) on the seeded study: label distributions per question and system,
agreement between the two participants (hand-worked alphas), edit rate and size per system, where the reversal went
back to; admins see every row, anyone else a published study's participants' rows only, and nothing of a draft."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from hub.models import ChatAnnotation
from hub.web.app import create_app
from tests.hub.conftest import auth
from tests.hub.studies.study_rows import seed_study


@pytest.fixture
def client():
    with TestClient(create_app()) as client:
        yield client


def _question(view, question_id):
    [question] = [q for q in view["questions"] if q["id"] == question_id]
    return question


def test_the_dashboard_figures_of_the_seeded_study(hub_env, admin_user, people, client):
    seeded = seed_study(hub_env, admin_user)
    response = client.get(f"/api/studies/{seeded.study_id}/dashboard", headers=auth(people["admin"]))
    assert response.status_code == 200, response.text
    view = response.json()
    assert view["counts"] == {
        "participants": 2,
        "conversations": 3,
        "user_turns": 5,
        "system_turns": 5,
        "post_edits": 2,
        "reversals": 1,
        "annotations": 16,
    }
    helpful = _question(view, "helpful")
    # Answers 5,4 (a4) 4,4 (a8) 2,1 (a10) and the admin's 1 on the test chat.
    assert [(r["label"], r["all"]["count"]) for r in helpful["rows"]] == [
        ("Useless", 2),
        ("Weak", 1),
        ("Fine", 0),
        ("Good", 3),
        ("Excellent", 1),
    ]
    assert [(s["system"], s["answers"]) for s in helpful["per_system"]] == [("Bot A", 5), ("Bot B", 2)]
    assert [r["systems"][1] and r["systems"][1]["count"] for r in helpful["rows"]] == [1, 1, 0, 0, 0]
    # Ordinal alpha over the three turns both participants rated (the admin's answer takes no part). Coincidences:
    # 4-5 once each way, 4-4 twice, 1-2 once each way; marginals n1=1 n2=1 n4=3 n5=1, n=6. delta(4,5) = (4 - 2)^2 = 4,
    # delta(1,2) = (2 - 1)^2 = 1, delta(1,4) = 9, delta(1,5) = 25, delta(2,4) = 4, delta(2,5) = 16:
    # alpha = 1 - (n - 1) * (2*4 + 2*1) / (2 * (1 + 27 + 25 + 12 + 16 + 12)) = 1 - 50 / 186.
    agreement = helpful["agreement"]
    assert agreement["level"] == "ordinal" and (agreement["n_items"], agreement["n_raters"]) == (3, 2)
    assert agreement["alpha"] == pytest.approx(1 - 50 / 186)
    assert agreement["percent"] == pytest.approx(1 / 3)
    low, high = agreement["alpha_interval"]
    assert low <= agreement["alpha"] <= high and "n-bootstrap=1000" in agreement["signature"]
    # Yes/yes, yes/no, no/no: nominal alpha 4/9 and percent agreement 2/3 (worked in tests/test_label_agreement.py).
    safe = _question(view, "safe")["agreement"]
    assert (safe["level"], safe["alpha"], safe["percent"]) == ("nominal", pytest.approx(4 / 9), pytest.approx(2 / 3))
    problems = _question(view, "problems")
    assert [(r["label"], r["all"]["count"]) for r in problems["rows"]] == [("Wrong", 1), ("Rude", 0), ("Off-topic", 1)]
    assert problems["agreement"]["n_items"] == 0 and problems["agreement"]["alpha"] is None
    note = _question(view, "note")
    assert note["agreement"] is None and note["distribution"]["non_empty"] == 1 and note["chart"] is None
    assert helpful["chart"]["values"] == pytest.approx([2 / 7, 1 / 7, 0, 3 / 7, 1 / 7])
    # Bot A wrote a2, a6 and a8 (the admin chat's reply failed); a2 -> a4 changed 7 of the edit's 9 words:
    # "Paris is the capital." -> "The capital of France is Paris, on the Seine." keeps "is" and "the" in order.
    a, b = view["edits"]
    assert (a["system"], a["replies"], a["edited"], a["edits"], a["edit_rate"]) == (
        "Bot A",
        3,
        1,
        2,
        pytest.approx(1 / 3),
    )
    assert (a["mean_words_changed"], a["mean_relative_size"]) == (7.0, pytest.approx(7 / 9))
    assert (b["system"], b["replies"], b["edited"], b["edit_rate"]) == ("Bot B", 1, 0, 0.0)
    # The reversal from a6 went back to a4: turn 1, u5 and a6 abandoned.
    reversal_a, reversal_b = view["reversals"]
    assert (reversal_a["count"], reversal_a["by_turn"], reversal_a["by_abandoned"]) == (1, {"1": 1}, {"2": 1})
    assert reversal_b["count"] == 0 and view["reversal_chart"]["labels"] == ["turn 1"]
    assert view["edit_chart"]["values"] == pytest.approx([1 / 3, 0.0])
    # The study randomised participants into assisted and unassisted arms: milo's assistance report is included.
    assert view["assistance"] is not None
    page = client.get(f"/studies/{seeded.study_id}/dashboard", headers=auth(people["admin"]))
    assert page.status_code == 200 and 'id="assistance-report"' in page.text


def test_a_published_dashboard_shows_participants_rows_to_anyone(hub_env, admin_user, client):
    seeded = seed_study(hub_env, admin_user, status="closed", public=True)
    view = client.get(f"/api/studies/{seeded.study_id}/dashboard").json()
    assert view["counts"]["conversations"] == 2 and view["counts"]["annotations"] == 15
    assert [r["all"]["count"] for r in _question(view, "helpful")["rows"]] == [1, 1, 0, 3, 1]  # no admin answer
    page = client.get(f"/studies/{seeded.study_id}/dashboard", headers={"accept": "text/html"})
    assert page.status_code == 200
    for words in ("Labels per question", "Krippendorff", "Post-edits per system", "Where reversals happen"):
        assert words in page.text
    assert f"/api/studies/{seeded.study_id}/annotations.csv" in page.text and "PRIVATEQX9" not in page.text


def test_a_draft_dashboard_is_404_for_everyone_but_admins(hub_env, admin_user, people, client):
    seeded = seed_study(hub_env, admin_user, status="draft", public=False)
    with Session(hub_env) as session:  # a stored value the schema would refuse (written around it) takes no part
        bad = ChatAnnotation(
            message_id=seeded.m["a6"], participant_id=seeded.participants[1], question_id="helpful", schema_version=1
        )
        bad.value = "oops"
        session.add(bad)
        session.commit()
    for url in (f"/api/studies/{seeded.study_id}/dashboard", f"/studies/{seeded.study_id}/dashboard"):
        for headers in ({}, auth(people["other"])):
            response = client.get(url, headers=headers)
            assert response.status_code == 404 and "Helpfulness" not in response.text
        assert client.get(url, headers=auth(people["admin"])).status_code == 200
    view = client.get(f"/api/studies/{seeded.study_id}/dashboard", headers=auth(people["admin"])).json()
    assert _question(view, "helpful")["agreement"]["n_items"] == 3
