"""A study's dashboard in Chromium: the seeded study (tests/hub/studies/study_rows.py) served by uvicorn; an admin
sees the label charts, the edit and reversal charts and the tables drawn with no console or CSP error; an anonymous
visitor sees a published study's dashboard. Screenshots go to HUB_SCREENSHOT_DIR when it is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.conftest import log_in
from tests.hub.conftest import admin_user, hub_env, people  # noqa: F401 (fixtures)
from tests.hub.live_server import live_hub
from tests.hub.studies.study_rows import seed_study

PASSWORD = "correct horse battery"


@pytest.fixture
def dashboard_site(hub_env, admin_user):  # noqa: F811 (the imported fixtures)
    seeded = seed_study(hub_env, admin_user, status="closed", public=True)
    with live_hub() as (host, port):
        yield f"http://{host}:{port}", seeded


def _shot(page, name: str, *sections: str) -> None:
    """The whole page, and each section (a CSS selector) on its own at full size."""
    folder = os.environ.get("HUB_SCREENSHOT_DIR")
    if folder:
        page.screenshot(path=str(Path(folder) / f"study-dashboard-{name}.png"), full_page=True)
        for n, selector in enumerate(sections):
            page.locator(selector).screenshot(path=str(Path(folder) / f"study-dashboard-{name}-{n}.png"))


def test_the_dashboard_draws_its_charts_and_tables(browser, dashboard_site):
    url, seeded = dashboard_site
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    log_in(page, url, "admin@example.org", PASSWORD)
    page.goto(f"{url}/studies/{seeded.study_id}/dashboard")
    page.wait_for_load_state("networkidle")
    charts = page.locator("canvas[data-chart]")
    # helpful, safe, topic and problems have label charts; then edits and reversals.
    assert charts.count() == 6
    drawn = page.evaluate(
        "() => [...document.querySelectorAll('canvas[data-chart]')].map(c => c.width > 0 && c.height > 0"
        " && !!window.Chart && !!window.Chart.getChart(c))"
    )
    assert drawn == [True] * 6
    assert page.locator("#agreement-helpful").inner_text().startswith("Agreement between participants on 3 turns")
    assert "Bot A" in page.locator("#edit-table").inner_text() and "33.3%" in page.locator("#edit-table").inner_text()
    assert "turn 1: 1" in page.locator("#reversal-table").inner_text()
    assert page.locator("#assistance-report").is_visible()  # milo's section, included
    _shot(page, "admin", "#question-helpful", "#question-problems", "#edit-table", "#assistance-report")
    assert problems == []
    anonymous = browser.new_context(viewport={"width": 420, "height": 900}).new_page()  # a phone-sized window
    anonymous.goto(f"{url}/studies/{seeded.study_id}/dashboard")
    assert anonymous.locator("h1").inner_text().startswith(f"Study #{seeded.study_id}")
    _shot(anonymous, "phone")
    context.close()
