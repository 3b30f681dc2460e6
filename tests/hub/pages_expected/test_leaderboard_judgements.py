"""A leaderboard shows how many human judgements stand behind each system's results (every comparison pooled)."""

from __future__ import annotations

from tests.hub.conftest import DATASET
from tests.hub.test_pages_experiments import site  # noqa: F401  (the module's hub with designed human judgements)


def test_judgement_counts_per_system(site):  # noqa: F811
    board = site.api("anonymous", f"/api/leaderboards/{DATASET}")
    judgements = {row["system_id"]: row["judgements"] for row in board["rows"]}
    designed = sum(site.counts.values())  # the public experiment's kept judgements, as the fixture designed them
    assert judgements[site.systems["copycat"]] == designed  # copycat meets only echo, in the public experiment
    assert judgements[site.systems["echo"]] == designed  # the private experiment is not the visitor's to count
    text = site.page("anonymous", f"/leaderboards/{DATASET}")
    assert ">judgements</th>" in text
    row = next(r for r in text.split("</tr>") if f'href="/systems/{site.systems["copycat"]}"' in r)
    assert f'<td class="num">{designed:,}</td>' in row
