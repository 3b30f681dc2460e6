"""Leaderboards filter by name (`q`, no JavaScript needed; the JSON twin honours it), say when they were last
updated, and refuse a filter that is too long or not printable with a 400 naming `q`."""

from __future__ import annotations

from datetime import datetime

from tests.hub.conftest import DATASET, auth
from tests.hub.test_pages_public import _row_system_ids, site  # noqa: F401  (the module's seeded hub)


def _board(site, **params):  # noqa: F811
    return site.client.get(f"/api/leaderboards/{DATASET}", params=params, headers=auth(site.tokens["admin"])).json()


def test_name_filter_in_the_page_and_its_json_twin(site):  # noqa: F811
    everyone = _board(site)
    assert len(everyone["rows"]) == 3 and everyone["q"] is None
    for needle in ("UNIGRAM", "uni", "gra"):
        board = _board(site, q=needle)
        expected = [r["system_id"] for r in everyone["rows"] if needle.casefold() in r["system_name"].casefold()]
        assert [r["system_id"] for r in board["rows"]] == expected and expected
        assert board["q"] == needle.casefold()
        text = site.page("admin", f"/leaderboards/{DATASET}", q=needle)
        assert _row_system_ids(text) == expected
        assert f'name="q" value="{needle.casefold()}"' in text
        assert f'href="/api/leaderboards/{DATASET}?q={needle.casefold()}"' in text
    sorted_board = _board(site, q="a", sort="bleu-2")
    assert all("a" in r["system_name"].casefold() for r in sorted_board["rows"])
    text = site.page("admin", f"/leaderboards/{DATASET}", q="a")
    assert f'href="/leaderboards/{DATASET}?sort=bleu-2&amp;q=a"' in text  # sorting keeps the filter
    nothing = site.page("anonymous", f"/leaderboards/{DATASET}", q="no such system")
    assert "No system&#39;s name contains" in nothing or "No system's name contains" in nothing


def test_last_updated_is_the_newest_score(site):  # noqa: F811
    board = _board(site)
    newest = datetime.fromisoformat(board["updated_at"])
    created = [
        datetime.fromisoformat(score["created_at"])
        for row in board["rows"]
        for submission in site.client.get(
            f"/api/systems/{row['system_id']}", headers=auth(site.tokens["admin"])
        ).json()["submissions"]
        if submission["dataset"] == DATASET
        for score in submission["scores"]
    ]
    assert created and newest == max(created)  # the profiles' score times, read independently
    text = site.page("admin", f"/leaderboards/{DATASET}")  # the admin's board (the private entry included)
    assert f'Last updated <time datetime="{board["updated_at"]}">' in text


def test_bad_filters_are_refused_naming_q(site):  # noqa: F811
    for bad in ("x" * 101, "a\x00b", "tab\there"):
        response = site.client.get(f"/api/leaderboards/{DATASET}", params={"q": bad})
        # a NUL is refused (422) by the hub's guard on every query string before the view; the rest by the view
        assert response.status_code in (400, 422) and "q" in str(response.json()), (bad, response.text)
        assert site.client.get(f"/leaderboards/{DATASET}", params={"q": bad}).status_code in (400, 422)
