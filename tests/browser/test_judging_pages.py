"""The judging pages in Chromium: a judged hub (local endpoint server as the judge, human ratings seeded) served by
uvicorn; the leaderboard's rubric and judge columns, the report card, the PPI ranking, the profile's explanations
and the admin page render without console or CSP errors. Screenshots go to HUB_SCREENSHOT_DIR when it is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from evaluation.llm.server import LocalChatServer
from hub.web.app import create_app
from tests.hub.conftest import DATASET, baselines, hub_env, people  # noqa: F401 (fixtures)
from tests.hub.judging.helpers import KEY_ENV, SECRET, judge_responder, judged_hub
from tests.hub.live_server import live_hub

PASSWORD = "correct horse battery"


@pytest.fixture
def judged_site(hub_env, people, baselines, monkeypatch):  # noqa: F811 (the imported fixtures)
    monkeypatch.setenv(KEY_ENV, SECRET)
    server = LocalChatServer(responder=judge_responder, expected_key=SECRET)
    with server, TestClient(create_app(embedded_worker=True)) as client:
        hub = judged_hub(client, hub_env, people, baselines, server.base_url)
    assert hub["run"]["status"] == "done"
    with live_hub() as (host, port):
        yield f"http://{host}:{port}", hub


def _shot(page, name: str, at=None) -> None:
    """A screenshot of the viewport (scrolled to `at`, a locator, when given)."""
    folder = os.environ.get("HUB_SCREENSHOT_DIR")
    if folder:
        if at is not None:
            at.scroll_into_view_if_needed()
        page.screenshot(path=str(Path(folder) / f"judging-{name}.png"))


def test_the_judging_pages_render_in_chromium(browser, judged_site):
    url, hub = judged_site
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    page.goto(f"{url}/leaderboards/{DATASET}")
    assert page.locator("th.judging").count() == 2  # the rubric column and the judge's win rate
    card_link = page.locator(f'a[href="/judges/{DATASET}#judge-{hub["judge_id"]}"]').first
    assert card_link.is_visible()
    page.evaluate("document.querySelector('.table-wrap').scrollLeft = 100000")  # the judging columns come last
    _shot(page, "leaderboard", page.locator("th.judging").last)

    card_link.click()
    page.wait_for_url(f"**/judges/{DATASET}*")
    table = page.locator(f"#judge-{hub['judge_id']} table.judge-card-table")
    assert table.is_visible() and "Position consistency" in table.inner_text()
    _shot(page, "judges")

    page.goto(f"{url}/ppi/{DATASET}")
    assert page.locator("table.ppi-systems tbody tr").count() == 3
    assert "Effective human sample size" in page.locator("#ppi-summary").inner_text()
    _shot(page, "ppi")

    page.goto(f"{url}/systems/{hub['system_id']}")
    grades = page.locator(f"#rubric-grades-{hub['submission_id']}")
    grades.locator("summary").click()
    assert grades.locator("tbody tr").first.is_visible()
    assert "EXPLAINED:" in grades.inner_text()
    _shot(page, "profile", grades)

    page.goto(f"{url}/login?next=/admin/judging")
    page.fill('input[name="email"]', "admin@example.org")
    page.fill('input[name="password"]', PASSWORD)
    page.locator('form button[type="submit"]').first.click()
    page.wait_for_url("**/admin/judging")
    assert page.locator(f"#judge-{hub['judge_id']}").is_visible()
    assert "done" in page.locator("table").last.inner_text()
    assert SECRET not in page.content()
    _shot(page, "admin")
    assert not problems, problems

    form = page.locator('form[action="/admin/judging/judges"]')
    form.locator('input[name="name"]').fill("second")
    form.locator('input[name="base_url"]').fill("https://judge.example.org/v1")
    form.locator('input[name="model"]').fill("m2")
    form.locator('input[name="key_ref"]').fill(SECRET)  # a key pasted where its variable's name belongs
    form.locator('button[type="submit"]').click()
    alert = page.locator('p.error[role="alert"]')
    assert "Key reference" in alert.inner_text() and SECRET not in page.content()
    form = page.locator('form[action="/admin/judging/judges"]')
    form.locator('input[name="name"]').fill("second")
    form.locator('input[name="base_url"]').fill("https://judge.example.org/v1")
    form.locator('input[name="model"]').fill("m2")
    form.locator('input[name="key_ref"]').fill("SECOND_JUDGE_KEY")
    form.locator('button[type="submit"]').click()
    page.wait_for_url("**/admin/judging")
    assert "SECOND_JUDGE_KEY" in page.locator("table").first.inner_text()
    attach = page.locator('form[action="/admin/judging/attach"]')
    attach.locator('select[name="kind"]').select_option("function_metric")
    attach.locator('select[name="metric"]').select_option("length.words")
    attach.locator('button[type="submit"]').click()
    page.wait_for_url("**/admin/judging")
    assert "length.words" in page.locator("table").nth(1).inner_text()

    # the refused form answered 422 (Chromium logs the status); nothing else went wrong
    assert [p for p in problems if "status of 422" not in p] == []
    context.close()
