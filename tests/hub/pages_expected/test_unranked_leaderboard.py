"""A dataset with only automatic scores is not ranked: the unigram baseline (six identical words for every prompt)
must not be "#1" by BLEU-2. Its board lists systems by name with no rank numbers and says why; a column still sorts."""

from __future__ import annotations

import re

from tests.hub.conftest import DATASET, auth
from tests.hub.test_pages_public import _row_system_ids, _tbody, site  # noqa: F401  (the module's seeded hub)


def _board(site, **params):  # noqa: F811
    return site.client.get(f"/api/leaderboards/{DATASET}", params=params, headers=auth(site.tokens["admin"])).json()


def test_automatic_scores_alone_rank_nothing(site):  # noqa: F811
    board = _board(site)
    assert (board["sort"], board["order"], board["ranked"]) == (None, None, False)
    assert board["unranked_note"] == "not ranked: no human or IRT results yet; sort by any column"
    names = [row["system_name"] for row in board["rows"]]
    assert len(names) == 3 and names == sorted(names, key=str.casefold)
    assert site.systems["baseline"] in {row["system_id"] for row in board["rows"]}  # listed, just not ranked

    text = site.page("admin", f"/leaderboards/{DATASET}")
    assert "<strong>Not ranked</strong>: no human or IRT results yet; sort by any column." in text
    assert '<th scope="col" class="num">#</th>' not in text
    assert not re.search(r'<tr class="[^"]*">\s*<td class="num">\d*</td>', _tbody(text))  # no rank cells at all
    assert _row_system_ids(text) == [row["system_id"] for row in board["rows"]]  # the page shows the JSON's order
    assert 'href="/api/leaderboards/' + DATASET + '"' in text  # the JSON twin of the unsorted view
    assert "Sorted by" not in text


def test_a_column_still_sorts_an_unranked_board(site):  # noqa: F811
    board = _board(site, sort="bleu-2")
    assert (board["sort"], board["order"], board["ranked"]) == ("bleu-2", "desc", False)
    values = [row["scores"]["bleu-2"]["corpus"] for row in board["rows"]]
    assert values == sorted(values, reverse=True)
    text = site.page("admin", f"/leaderboards/{DATASET}", sort="bleu-2")
    assert "now sorted by <strong>bleu-2</strong> as asked, which is not a ranking" in text
    assert _row_system_ids(text) == [row["system_id"] for row in board["rows"]]
