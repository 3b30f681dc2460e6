"""MILO's QA flow in Chromium against a real uvicorn server, the real job queue and the local endpoint server as
the judge: a rater answers a block with a reason per pair (typing digits in the reason box does not trigger the
choice shortcuts), then an admin signs in, runs the milo-qa rubric from the QA page, grades reasons with the
PASSED/REDO buttons and reads the judge's agreement beside its grades; no console or CSP errors. Screenshots go to
HUB_SCREENSHOT_DIR when it is set."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from sqlmodel import Session

from evaluation.llm.server import LocalChatServer
from hub.jobs import start_embedded_consumer
from hub.services.human import raters
from hub.services.judging import registry
from tests.browser.conftest import browser  # noqa: F401 (the module-scoped Chromium fixture)
from tests.hub.conftest import new_experiment
from tests.hub.live_server import live_hub
from tests.hub.rater_qa.helpers import KEY_ENV, SECRET, expected_status, qa_responder, rate_with_reasons

PASSWORD = "correct horse battery"


@pytest.fixture
def site(hub_env, people, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    consumer = start_embedded_consumer(periodic=False)
    try:
        with LocalChatServer(responder=qa_responder, expected_key=SECRET) as judge, live_hub() as (host, port):
            yield f"http://{host}:{port}", judge.base_url
    finally:
        consumer.stop(graceful=True)


def _shot(page, name: str) -> None:
    folder = os.environ.get("HUB_SCREENSHOT_DIR")
    if folder:
        page.screenshot(path=str(Path(folder) / f"rater-qa-{name}.png"), full_page=True)


def test_reasons_and_their_qa_in_chromium(browser, site, hub_env, admin_user, baselines):  # noqa: F811
    url, judge_url = site
    experiment = new_experiment(
        hub_env, admin_user, baselines, prompt_ids=["hov1-001", "hov1-002", "hov1-003"], reasons="required"
    )
    with Session(hub_env) as session:
        _, token = raters.create_invite(session, admin_user, experiment)
        form = registry.JudgeForm(name="qa-judge", base_url=judge_url, model="rule-qa", key_ref=KEY_ENV)
        registry.register_judge(session, admin_user, form)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"{m.text} {m.location}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)

    page.goto(f"{url}/rate/{token}")
    pairs = page.locator("fieldset.pair")
    for index in range(pairs.count()):
        pair = pairs.nth(index)
        pair.locator('input[type="radio"]').first.check()
        pair.locator("textarea").fill("")
        pair.locator("textarea").type("Reply 1 wins because it answers the 2nd question")
    for index in range(pairs.count()):  # typed digits chose nothing: each block keeps its first choice
        assert pairs.nth(index).locator('input[type="radio"]').first.is_checked()
    _shot(page, "rating")
    page.locator("#submit-ratings").click()
    page.wait_for_load_state()
    assert "Thank you" in page.content() or "code" in page.content().lower()
    rate_with_reasons(hub_env, experiment.id, n_raters=2, seed=9)

    page.goto(f"{url}/login?next=/admin/experiments/{experiment.id}/qa")
    page.fill('input[name="email"]', "admin@example.org")
    page.fill('input[name="password"]', PASSWORD)
    page.locator('form button[type="submit"]').first.click()
    page.wait_for_url(f"**/admin/experiments/{experiment.id}/qa")
    run_form = page.locator(f'form[action="/admin/experiments/{experiment.id}/qa/runs"]')
    run_form.locator('button[type="submit"]').click()
    page.wait_for_url(f"**/admin/experiments/{experiment.id}/qa")
    deadline = time.monotonic() + 120
    while "done" not in page.locator("#qa-run table").inner_text():
        assert "failed" not in page.locator("#qa-run table").inner_text(), page.locator("#qa-run table").inner_text()
        assert time.monotonic() < deadline, "the QA run never finished"
        time.sleep(0.5)
        page.reload()
    rows = page.locator("#reasons tbody tr")
    graded = 0
    for index in range(min(rows.count(), 12)):
        row = rows.nth(index)
        text = row.locator("td").nth(4).inner_text()
        verdict = expected_status(text)
        if verdict is None:
            continue
        assert verdict in row.locator("td").nth(5).inner_text()
        row.locator(f'button[value="{verdict}"]').click()  # the admin agrees with the judge
        page.wait_for_load_state()
        rows = page.locator("#reasons tbody tr")
        graded += 1
    agreement = page.locator("#agreement")
    assert f"{graded}</strong> reason(s) both graded" in agreement.inner_html()
    assert page.locator("#agreement-share").inner_text() == "100.0%"
    assert SECRET not in page.content()
    page.locator("#agreement").scroll_into_view_if_needed()
    _shot(page, "admin")
    assert not problems, problems
    context.close()
