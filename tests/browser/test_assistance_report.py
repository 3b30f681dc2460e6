"""The dashboard's assistance section in Chromium: a seeded randomised study (tests/hub/studies/assistance_rows.py)
served by uvicorn; an admin sees each arm's effects with intervals and p-values, the counts per arm and the drafts'
kept share, with no console or CSP error. Screenshots go to HUB_SCREENSHOT_DIR when it is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.conftest import log_in
from tests.hub.conftest import admin_user, hub_env, people  # noqa: F401 (fixtures)
from tests.hub.live_server import live_hub
from tests.hub.studies.assistance_rows import seed_assistance_study


@pytest.fixture
def assistance_site(hub_env, admin_user):  # noqa: F811 (the imported fixtures)
    study_id = seed_assistance_study(hub_env, admin_user, per_arm=4)
    with live_hub() as (host, port):
        yield f"http://{host}:{port}", study_id


def test_the_assistance_report_reads_in_the_dashboard(browser, assistance_site):
    url, study_id = assistance_site
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    log_in(page, url, "admin@example.org", "correct horse battery")
    page.goto(f"{url}/studies/{study_id}/dashboard#assistance")
    section = page.locator("#assistance-report")
    time_row = page.locator("#assistance-effects-assisted tr[data-outcome='log_time']").inner_text()
    assert time_row.startswith("Handling time per annotation") and "(H1: shorter)" in time_row and "4 vs 4" in time_row
    copied = page.locator("#assistance-effects-assisted tr[data-outcome='equals_suggestion']").inner_text()
    assert "pts" in copied and "(H1: higher)" in copied
    agreement = page.locator("#assistance-effects-assisted tr[data-outcome='agreement']").inner_text()
    assert "no turn has categorical answers" in agreement
    assert "8 draft requests" in page.locator("#assistance-drafts-summary").inner_text()
    assert "assisted\t4\t4\t48" in page.locator("#assistance-counts").inner_text()
    folder = os.environ.get("HUB_SCREENSHOT_DIR")
    if folder:
        section.screenshot(path=str(Path(folder) / "study-dashboard-assistance.png"))
    assert problems == []
    context.close()
