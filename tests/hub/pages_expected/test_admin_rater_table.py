"""The admin's rater table shows the label the admin typed for the invite each rater came through, and a short
hash (the full one in its title) so the table fits the page."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.hub.conftest import auth, new_experiment
from tests.hub.test_cohort_invites import CSRF_FIELD, answer, api, app, claim, make_invite  # noqa: F401


def test_rater_rows_show_their_invite_label(hub_env, people, admin_user, baselines, api, app):  # noqa: F811
    experiment = new_experiment(hub_env, admin_user, baselines, raters_per_prompt=3, prompt_ids=["hov1-001"])
    invite = make_invite(api, people["admin"], experiment.id, cohort=True, label="Lab cohort, May")
    with TestClient(app) as rater:
        task = claim(rater, invite["token"], "someone").json()
        assert answer(rater, invite["token"], task).status_code == 200
    screening = api.get(f"/api/experiments/{experiment.id}", headers=auth(people["admin"])).json()["raters"]
    [only] = screening
    with TestClient(app, headers={"accept": "text/html"}) as browser:
        token = CSRF_FIELD.search(browser.get("/login").text).group(1)
        form = {"csrf_token": token, "email": "admin@example.org", "password": "correct horse battery"}
        assert browser.post("/login", data=form, follow_redirects=False).status_code == 303
        page = browser.get(f"/admin/experiments/{experiment.id}").text
    row = page.split(f'<tr id="rater-{only["rater"]}">', 1)[1].split("</tr>", 1)[0]
    assert f'<code title="{only["rater"]}">{only["rater"][:10]}…</code>' in row
    assert '<span class="invite-label">Lab cohort, May</span>' in row
