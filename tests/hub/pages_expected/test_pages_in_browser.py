"""The changed public pages in Debian's Chromium on a real `chateval serve --demo`: what a visitor sees, with a
screenshot kept under HUB_SCREENSHOTS (when set) to be looked at."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

from tests.browser.conftest import browser, hub  # noqa: F401  (Chromium and the demo hub)


def _shot(page, name: str) -> None:
    folder = os.environ.get("HUB_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def test_demo_leaderboard_does_not_rank_the_unigram_baseline_first(browser, hub):  # noqa: F811
    with urllib.request.urlopen(f"{hub}/api/leaderboards/hub-open-v1") as response:
        board = json.load(response)
    page = browser.new_page()
    page.goto(f"{hub}/leaderboards/hub-open-v1")
    _shot(page, "leaderboard-hub-open-v1")
    names = page.locator("table.leaderboard tbody tr td a[href^='/systems/']").all_inner_texts()
    assert "unigram" in names and names == [row["system_name"] for row in board["rows"]]
    if board["ranked"]:
        assert page.locator("table.leaderboard thead th", has_text="#").count() == 1
    else:  # the demo's automatic scores alone: listed by name, no rank column, the note says why
        assert board["sort"] is None and names == sorted(names, key=str.casefold)
        assert page.locator("table.leaderboard thead th", has_text="#").count() == 0
        assert page.get_by_text("Not ranked").first.is_visible()
    page.close()
