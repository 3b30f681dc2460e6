"""The public pages of human evaluations (the experiment list and page) and the human results on profiles and
leaderboards: the numbers match the judgements the test designed, private experiments stay hidden exactly like
missing ones, and no rater identity reaches a public page."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from scipy.stats import binomtest
from sqlmodel import Session, select
from statsmodels.stats.proportion import proportion_confint

from evaluation.dataset import load_dataset
from hub import db
from hub.migrate import upgrade
from hub.models import Experiment, ItemKind, Rater, Submission, System, User
from hub.services.accounts.accounts import create_token, create_user
from hub.services.human import assignments, experiments, raters
from hub.services.submissions.demo import seed_baselines
from hub.storage import get_storage
from hub.web.app import create_app
from tests.hub.conftest import DATASET, _clear_caches, auth, human_paced, submitted_system

HTML = {"Accept": "text/html"}
ROLES = ("anonymous", "other", "owner", "admin")
COPYCAT = "Copy<cat> & co"  # a public system whose name needs escaping
PRIVATE = "Private bot"
SHOWN, SAME = 25, 5  # prompts of the public experiment where Copycat differs from echo / answers as echo does
SIDE = {"A": ("left", "right"), "B": ("right", "left")}  # outcome -> choice when A is on the left / on the right


def esc(text: str) -> str:
    return str(escape(text))


def _wanted(rater: str, prompt_id: str) -> str:
    """The designed judgement: good raters mostly prefer A, with some ties and losses, and disagree a little;
    the bad rater (excluded later) always says B."""
    if rater == "bad":
        return "B"
    index = int(prompt_id.rsplit("-", 1)[1])
    if rater == "r2" and index % 4 == 1:
        return "tie"
    return ("A", "A", "tie", "B")[index % 4]


def _choice(outcome: str, left_is_a: bool) -> str:
    return "tie" if outcome == "tie" else SIDE[outcome][0 if left_is_a else 1]


def _rate(session: Session, experiment: Experiment, rater_name: str, tasks: int = 99) -> list[tuple[str, str]]:
    """Let a hub rater take up to `tasks` tasks and answer them as designed; returns (rater, outcome) per real pair."""
    rater = raters.rater_for(session, "hub", f"worker-{rater_name}-4711")  # distinctive, to search pages for
    judged = []
    for _ in range(tasks):
        assignment = assignments.claim_task(session, experiment, rater)
        if assignment is None:
            break
        items = assignments.task_items(session, assignment.task_id)
        wanted = {item.id: _wanted(rater_name, item.prompt_id) for item in items}
        choices = {item.id: _choice(wanted[item.id], bool(item.left_is_a)) for item in items}
        human_paced(assignment)
        assignments.submit(session, assignment, choices)
        judged += [(rater_name, wanted[item.id]) for item in items if item.kind == ItemKind.pair]
    return judged


@dataclass
class Site:
    client: TestClient
    tokens: dict[str, str]
    systems: dict[str, int]  # echo / copycat / private -> system id
    experiments: dict[str, int]  # public / private / draft -> experiment id
    counts: dict[str, int]  # the public experiment's designed outcomes (kept raters, automatic ties included)
    counts_all: dict[str, int]  # the same with the excluded rater
    rater_ids: list[str]  # every rater's hash and external id

    def get(self, role: str, url: str, **params):
        headers = {**HTML, **(auth(self.tokens[role]) if role != "anonymous" else {})}
        return self.client.get(url, headers=headers, params=params or None)

    def page(self, role: str, url: str, **params) -> str:
        response = self.get(role, url, **params)
        assert response.status_code == 200, response.text
        return response.text

    def api(self, role: str, url: str) -> dict:
        headers = auth(self.tokens[role]) if role != "anonymous" else {}
        response = self.client.get(url, headers=headers)
        assert response.status_code == 200, response.text
        return response.json()


def _counts(judged: list[tuple[str, str]], auto_ties: int) -> dict[str, int]:
    counts = {"A": 0, "tie": auto_ties, "B": 0}
    for _, outcome in judged:
        counts[outcome] += 1
    return counts


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HUB_DATA_DIR", str(tmp_path_factory.mktemp("experiment-pages") / "hub-data"))
        for name in ("HUB_DATABASE_URL", "HUB_STORAGE_URL", "HUB_QUEUE_URL"):
            patch.delenv(name, raising=False)
        _clear_caches()
        upgrade()
        engine = db.get_engine()
        tokens, users = {}, {}
        with Session(engine) as session:
            for role in ("owner", "other", "admin"):
                user = create_user(
                    session,
                    email=f"{role}@example.org",
                    password="correct horse battery",
                    display_name=role,
                    is_admin=role == "admin",
                )
                users[role] = user.id
                tokens[role] = create_token(session, user, name="cli")[1]
        seed_baselines(engine, get_storage(), names=["echo"])
        dataset = load_dataset(DATASET)
        with Session(engine) as session:
            echo = session.exec(select(System).where(System.name == "echo")).one()
            echo_lines = get_storage().get(
                session.exec(select(Submission).where(Submission.system_id == echo.id)).one().responses_sha256
            )
            echo_lines = echo_lines.decode().splitlines()
            copy = [f"copycat answer {i}" if i < SHOWN else line for i, line in enumerate(echo_lines)]
            systems = {
                "echo": echo.id,
                "copycat": submitted_system(session, COPYCAT, users["owner"], True, copy).id,
                "private": submitted_system(
                    session, PRIVATE, users["owner"], False, [p.references[1] for p in dataset.prompts]
                ).id,
            }
            admin = session.get(User, users["admin"])

            def create(a: str, b: str, prompts: int, launch: bool = True, **options) -> Experiment:
                form = experiments.ExperimentForm(
                    dataset=DATASET,
                    system_a_id=systems[a],
                    system_b_id=systems[b],
                    prompt_ids=dataset.prompt_ids[:prompts],
                    seed=11,
                    **options,
                )
                experiment = experiments.create_experiment(session, admin, form, get_storage())
                return experiments.launch(session, admin, experiment.id) if launch else experiment

            public = create("copycat", "echo", SHOWN + SAME)
            judged = _rate(session, public, "bad", tasks=1)
            for name in ("r0", "r1", "r2"):
                judged += _rate(session, public, name)
            bad = session.exec(select(Rater).where(Rater.external_id == "worker-bad-4711")).one()
            raters.set_excluded(session, admin, bad.id, excluded=True, reason="always says B")
            private = create("private", "echo", 10, raters_per_prompt=1)
            _rate(session, private, "p0")
            draft = create("echo", "copycat", 10, launch=False)
            rater_ids = [i for r in session.exec(select(Rater)) for i in (r.public_hash, r.external_id)]
            site = Site(
                client=None,  # type: ignore[arg-type]
                tokens=tokens,
                systems=systems,
                experiments={"public": public.id, "private": private.id, "draft": draft.id},
                counts=_counts([j for j in judged if j[0] != "bad"], SAME),
                counts_all=_counts(judged, SAME),
                rater_ids=rater_ids,
            )
        with TestClient(create_app()) as client:
            site.client = client
            yield site
        engine.dispose()
        _clear_caches()


def _summary(site: Site, role: str = "anonymous") -> dict:
    return site.api(role, f"/api/experiments/{site.experiments['public']}")["summary"]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


# --- the experiment page ----------------------------------------------------------------------------------------


def _golden(counts: dict[str, int]) -> dict:
    """Win rate (ties dropped), its Wilson interval and the sign test, by statsmodels and scipy from the counts."""
    wins, decided = counts["A"], counts["A"] + counts["B"]
    return {
        "win_rate": wins / decided,
        "win_rate_ci": list(proportion_confint(wins, decided, alpha=0.05, method="wilson")),
        "p_value": binomtest(wins, decided).pvalue,
    }


def test_the_summary_counts_the_designed_judgements_with_golden_interval_and_p_value(site):
    summary, counts = _summary(site), site.counts
    assert (summary["wins"], summary["ties"], summary["losses"]) == (counts["A"], counts["tie"], counts["B"])
    assert summary["n"] == sum(counts.values())
    golden = _golden(counts)
    assert summary["win_rate"] == pytest.approx(golden["win_rate"])
    assert summary["win_rate_ci"] == pytest.approx(golden["win_rate_ci"])
    assert summary["p_value"] == pytest.approx(golden["p_value"])


def test_experiment_page_shows_results_chart_agreement_and_links(site):
    experiment_id = site.experiments["public"]
    text = site.page("anonymous", f"/experiments/{experiment_id}")
    view = site.api("anonymous", f"/api/experiments/{experiment_id}")
    summary, counts = view["summary"], site.counts
    assert f'<h1 class="exp-heading">{esc(view["experiment"]["title"])}</h1>' in text
    assert f'href="/systems/{site.systems["copycat"]}">{esc(COPYCAT)}</a>' in text
    assert f'href="/systems/{site.systems["echo"]}">echo</a>' in text
    stats = text.split('id="stat-outcomes"', 1)[1].split("</div>\n    <div", 1)[0]
    assert f"{counts['A']} / {counts['tie']} / {counts['B']}" in stats
    win_rate = text.split('id="stat-win-rate"', 1)[1].split('id="stat-outcomes"', 1)[0]
    golden = _golden(counts)
    assert f"{_pct(golden['win_rate'])}</div>" in win_rate
    assert f"{_pct(golden['win_rate_ci'][0])} to {_pct(golden['win_rate_ci'][1])}" in win_rate
    sign_test = text.split('id="stat-sign-test"', 1)[1].split("</div>\n  </div>", 1)[0]
    assert f"p = {golden['p_value']:.2g}" in sign_test
    assert esc(summary["signature"]) in text and esc(view["agreement"]["signature"]) in text
    assert f"{SAME} automatic ties" in text
    # The excluded rater: counted in the "all raters" line only.
    everyone = text.split('id="all-raters"', 1)[1].split("</p>", 1)[0]
    all_counts = site.counts_all
    assert "1 rater excluded" in everyone and f"{all_counts['A']} / {all_counts['tie']} / {all_counts['B']}" in everyone
    # The chart: A better, tie, B better, as counted.
    block = re.search(r'<script type="application/json" id="chart-outcomes">(.*?)</script>', text, re.S)
    chart = json.loads(block.group(1))
    assert chart["values"] == [counts["A"], counts["tie"], counts["B"]]
    assert chart["labels"][0].endswith(f"{COPYCAT} better") and chart["labels"][2] == "B: echo better"
    assert '<canvas data-chart="chart-outcomes"' in text and "/static/charts.js" in text
    # Agreement: both measures, without and with the excluded rater.
    agreement = view["agreement"]
    for measure, key in (("cohen", "cohen_kappa"), ("fleiss", "fleiss_kappa")):
        row = text.split(f'id="agreement-{measure}"', 1)[1].split("</tr>", 1)[0]
        shown = re.findall(r'<td class="num">([^<]*) <span', row)
        assert shown == [f"{agreement[part][key]:.4g}" for part in ("without_excluded", "with_excluded")]
    pairs = text.split('id="agreement-cohen"', 1)[1].split("</tr>", 1)[0]
    assert f"{agreement['without_excluded']['rater_pairs']} rater pairs" in pairs
    assert agreement["with_excluded"]["n_raters"] == agreement["without_excluded"]["n_raters"] + 1
    assert f'href="/api/experiments/{experiment_id}"' in text
    assert 'href="/api/downloads/ratings.csv"' in text and 'href="/api/downloads/ratings.jsonl"' in text


def test_experiment_list_filters_by_dataset_and_links_each_experiment(site):
    text = site.page("anonymous", "/experiments")
    listed = re.findall(r'<td class="num exp-id"><a href="/experiments/(\d+)">', text)
    assert listed == [str(site.experiments["public"])]
    assert f'<option value="{DATASET}">{DATASET}</option>' in text
    assert f"{site.counts['A']} / {site.counts['tie']} / {site.counts['B']}" in text
    assert _pct(_golden(site.counts)["win_rate"]) in text
    assert 'href="/api/experiments"' in text
    filtered = site.page("anonymous", "/experiments", dataset=DATASET)
    assert f'<option value="{DATASET}" selected>' in filtered
    assert f'href="/api/experiments?dataset={DATASET}"' in filtered
    other = site.page("anonymous", "/experiments", dataset="ncm")
    assert "No human evaluation on ncm yet." in other and 'href="/experiments/' not in other
    admin = site.page("admin", "/experiments")
    listed = re.findall(r'<td class="num exp-id"><a href="/experiments/(\d+)">', admin)
    assert listed == [str(site.experiments[k]) for k in ("draft", "private", "public")]  # newest first


# --- privacy ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_a_private_or_draft_experiment_answers_404_like_a_missing_one(site, role):
    missing = site.get(role, "/experiments/999999")
    assert missing.status_code == 404 and '<p class="error">no experiment #999999</p>' in missing.text
    for kind in ("private", "draft"):
        experiment_id = site.experiments[kind]
        response = site.get(role, f"/experiments/{experiment_id}")
        allowed = role == "admin" or (role == "owner" and kind == "private")
        if allowed:
            marker = "badge-private" if kind == "private" else "is a draft: nothing is shown to raters"
            assert response.status_code == 200 and marker in response.text
            continue
        assert response.status_code == 404
        assert response.text == missing.text.replace("999999", str(experiment_id))
    listing = site.page(role, "/experiments")
    assert (PRIVATE in listing) is (role in ("owner", "admin"))


@pytest.mark.parametrize("url", ["/experiments/abc", "/experiments/" + "9" * 30, "/experiments/-1"])
def test_a_malformed_id_is_the_404_page(site, url):
    response = site.get("anonymous", url)
    assert response.status_code == 404 and "<h1>404</h1>" in response.text


def test_no_rater_identity_reaches_any_page(site):
    urls = [
        "/experiments",
        f"/experiments/{site.experiments['public']}",
        f"/systems/{site.systems['echo']}",
        f"/systems/{site.systems['copycat']}",
        f"/leaderboards/{DATASET}",
    ]
    for role in ROLES:
        for url in urls:
            text = site.page(role, url)
            for identity in site.rater_ids:
                assert identity not in text, (role, url, identity)
    admin = site.page("admin", f"/experiments/{site.experiments['private']}")
    assert not any(identity in admin for identity in site.rater_ids)


# --- profiles and leaderboards ----------------------------------------------------------------------------------


def test_profiles_show_each_experiment_from_the_systems_side(site):
    counts = site.counts
    copycat = site.api("anonymous", f"/api/systems/{site.systems['copycat']}")["human"]
    echo = site.api("anonymous", f"/api/systems/{site.systems['echo']}")["human"]
    assert [r["experiment_id"] for r in copycat] == [r["experiment_id"] for r in echo] == [site.experiments["public"]]
    mine, theirs = copycat[0]["summary"], echo[0]["summary"]
    assert (mine["wins"], mine["ties"], mine["losses"]) == (counts["A"], counts["tie"], counts["B"])
    assert (theirs["wins"], theirs["ties"], theirs["losses"]) == (counts["B"], counts["tie"], counts["A"])
    assert copycat[0]["opponent"]["name"] == "echo" and echo[0]["opponent"]["name"] == COPYCAT
    text = site.page("anonymous", f"/systems/{site.systems['echo']}")
    row = text.split(f'id="human-{site.experiments["public"]}"', 1)[1].split("</tr>", 1)[0]
    assert f"{counts['B']} / {counts['tie']} / {counts['A']}" in row and esc(COPYCAT) in row
    assert _pct(theirs["win_rate"]) in row and f'href="/experiments/{site.experiments["public"]}"' in row
    flipped = _golden({"A": counts["B"], "tie": counts["tie"], "B": counts["A"]})
    assert theirs["win_rate"] == pytest.approx(flipped["win_rate"])
    assert theirs["win_rate_ci"] == pytest.approx(flipped["win_rate_ci"])
    block = re.search(r'<script type="application/json" id="chart-human">(.*?)</script>', text, re.S)
    chart = json.loads(block.group(1))
    assert chart["values"] == [theirs["win_rate"]] and chart["errors"] == [theirs["win_rate_ci"]]
    assert chart["labels"] == [f"vs {COPYCAT} (#{site.experiments['public']})"]


@pytest.mark.parametrize("role", ROLES)
def test_profiles_hide_experiments_with_a_private_system(site, role):
    echo = site.api(role, f"/api/systems/{site.systems['echo']}")["human"]
    shown = {r["experiment_id"] for r in echo}
    assert (site.experiments["private"] in shown) is (role in ("owner", "admin"))
    assert site.experiments["draft"] not in shown  # nothing judged yet
    assert (PRIVATE in site.page(role, f"/systems/{site.systems['echo']}")) is (role in ("owner", "admin"))


@pytest.mark.parametrize("role", ROLES)
def test_leaderboard_has_a_human_win_rate_column_per_baseline(site, role):
    board = site.api(role, f"/api/leaderboards/{DATASET}")
    key = f"human:{site.systems['echo']}"
    # the pooled column (every comparison a system was in) comes first, then one per baseline
    assert [c["key"] for c in board["human_columns"]] == ["human:all", key]
    cells = {row["system_id"]: row["human"].get(key) for row in board["rows"]}
    mine = cells[site.systems["copycat"]]
    assert (mine["wins"], mine["ties"], mine["losses"]) == (site.counts["A"], site.counts["tie"], site.counts["B"])
    assert mine["url"] == f"/experiments/{site.experiments['public']}"
    pooled = next(row["human"]["human:all"] for row in board["rows"] if row["system_id"] == site.systems["copycat"])
    assert (pooled["wins"], pooled["ties"], pooled["losses"]) == (mine["wins"], mine["ties"], mine["losses"])
    assert pooled["url"] == mine["url"]  # copycat met echo in the public experiment only
    assert cells[site.systems["echo"]] is None
    assert (site.systems["private"] in cells) is (role in ("owner", "admin"))
    text = site.page(role, f"/leaderboards/{DATASET}")
    assert "human win rate vs echo" in text and "human win rate (all comparisons)" in text
    row = next(r for r in text.split("</tr>") if f'href="/systems/{site.systems["copycat"]}"' in r)
    assert f'<a href="/experiments/{site.experiments["public"]}">' in row and _pct(mine["win_rate"]) in row
    assert text.count("<summary>signature</summary>") == len(board["columns"])


def test_leaderboard_sorts_by_a_human_column(site):
    key = f"human:{site.systems['echo']}"
    for order in ("desc", "asc"):
        rows = site.api("admin", f"/api/leaderboards/{DATASET}?sort={key}&order={order}")["rows"]
        rates = [row["human"][key]["win_rate"] for row in rows if key in row["human"]]
        assert len(rates) == 2 and rates == sorted(rates, reverse=order == "desc")
        assert all(key not in row["human"] for row in rows[len(rates) :])  # rows without one last
    default = site.api("admin", f"/api/leaderboards/{DATASET}?sort={key}")
    assert default["order"] == "desc"  # a higher win rate is better
    text = site.page("admin", f"/leaderboards/{DATASET}", sort=key)
    assert f'href="/leaderboards/{DATASET}?sort=human%3A{site.systems["echo"]}&amp;order=asc"' in text
    assert "Sorted by <strong>human win rate vs echo</strong>" in text
    tbody = text.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    ranks = re.findall(r'<tr class="[^"]*">\s*<td class="num">(\d*)</td>', tbody)
    assert ranks == ["1", "2", ""]
    block = re.search(r'<script type="application/json" id="chart-leaderboard">(.*?)</script>', text, re.S)
    chart = json.loads(block.group(1))
    rows = site.api("admin", f"/api/leaderboards/{DATASET}?sort={key}")["rows"][:2]
    assert chart["labels"] == [row["system_name"] for row in rows]
    assert chart["values"] == [row["human"][key]["win_rate"] for row in rows]
    assert chart["errors"] == [row["human"][key]["win_rate_ci"] for row in rows]


@pytest.mark.parametrize("role", ("anonymous", "owner"))
def test_leaderboard_win_rate_matrix_pools_each_pair_by_id(site, role):
    board = site.api(role, f"/api/leaderboards/{DATASET}")
    matrix = board["win_matrix"]
    ids = [s["id"] for s in matrix["systems"]]
    expected = {site.systems["copycat"], site.systems["echo"]} | (
        {site.systems["private"]} if role == "owner" else set()
    )
    assert set(ids) == expected and matrix["left_out"] == 0
    cell = {(a, b): matrix["cells"][i][j] for i, a in enumerate(ids) for j, b in enumerate(ids)}
    copycat, echo = site.systems["copycat"], site.systems["echo"]
    won, tied, lost = site.counts["A"], site.counts["tie"], site.counts["B"]  # as designed, the bad rater left out
    assert cell[(copycat, echo)] == {
        "win_rate": won / (won + lost),
        "n": won + tied + lost,
        "wins": won,
        "ties": tied,
        "losses": lost,
    }
    assert (cell[(echo, copycat)]["wins"], cell[(echo, copycat)]["losses"]) == (lost, won)  # the other side
    assert all(cell[(i, i)] is None for i in ids)
    if role == "owner":
        private = site.systems["private"]
        column = next(row for row in board["rows"] if row["system_id"] == private)["human"][f"human:{echo}"]
        mine = cell[(private, echo)]
        assert (mine["wins"], mine["ties"], mine["losses"]) == (column["wins"], column["ties"], column["losses"])
        assert cell[(private, copycat)] is None  # never compared
    text = site.page(role, f"/leaderboards/{DATASET}")
    matrix_html = text.split('<table class="win-matrix">', 1)[1].split("</table>", 1)[0]
    row = next(r for r in matrix_html.split("</tr>") if f'<th scope="row"><a href="/systems/{copycat}">' in r)
    shade = f"heat-{min(9, int(10 * won / (won + lost)))}"
    assert f'class="num {shade}"' in row and _pct(won / (won + lost)) in row and f"n={won + tied + lost}" in row
    assert (PRIVATE in matrix_html) is (role == "owner")


def test_the_cached_matrix_follows_the_judgements(site):
    """Served from the read side's cache, the matrix changes with the data version: counting the excluded rater's
    judgements again (a public write) gives a new ETag and the new counts; excluding it again restores both."""
    url = f"/api/leaderboards/{DATASET}"
    copycat, echo = site.systems["copycat"], site.systems["echo"]

    def cell() -> tuple[str, dict]:
        reply = site.client.get(url)
        matrix = reply.json()["win_matrix"]
        ids = [s["id"] for s in matrix["systems"]]
        return reply.headers["etag"], matrix["cells"][ids.index(copycat)][ids.index(echo)]

    before_tag, before = cell()
    assert site.client.get(url, headers={"If-None-Match": before_tag}).status_code == 304  # cached
    bad = site.counts_all["B"] - site.counts["B"]  # the excluded rater's judgements (always B)
    with Session(db.get_engine()) as session:
        admin = session.exec(select(User).where(User.is_admin)).first()
        rater = session.exec(select(Rater).where(Rater.external_id == "worker-bad-4711")).one()
        raters.set_excluded(session, admin, rater.id, excluded=False)
        try:
            after_tag, after = cell()
            assert (
                after_tag != before_tag
                and after["losses"] == before["losses"] + bad
                and after["n"] == before["n"] + bad
            )
        finally:
            raters.set_excluded(session, admin, rater.id, excluded=True, reason="always says B")
    assert cell()[1] == before


def test_leaderboard_column_chooser_keeps_the_choice_in_every_link(site):
    chosen = site.api("admin", f"/api/leaderboards/{DATASET}?columns=human:all&columns=nonexistent")
    assert chosen["chosen"] == ["human:all"] and [c["key"] for c in chosen["human_columns"]] == ["human:all"]
    assert chosen["columns"] == [] and chosen["irt_column"] is None
    assert all(set(row["human"]) <= {"human:all"} and row["scores"] == {} for row in chosen["rows"])
    assert [c["key"] for c in chosen["choosable"] if c["shown"]] == ["human:all"]
    assert len(chosen["choosable"]) > 1
    both = site.api("admin", f"/api/leaderboards/{DATASET}?columns=human:all,bleu-2")  # comma-separated too
    assert both["chosen"] == ["bleu-2", "human:all"]  # in the table's order
    text = site.page("admin", f"/leaderboards/{DATASET}", columns="human:all")
    assert 'name="columns" value="human:all" checked' in text
    assert '<input type="hidden" name="columns" value="human:all">' in text  # the name filter keeps the choice
    assert "&amp;columns=human%3Aall" in text  # and so does every sort link
    assert "human win rate vs echo" not in text.split("<tbody>", 1)[0].split('<table class="leaderboard">', 1)[1]
    hidden_sort = site.page("admin", f"/leaderboards/{DATASET}", columns="bleu-2", sort="human:all")
    assert "Sorted by <strong>human win rate (all comparisons)</strong>" in hidden_sort  # by its label, though hidden
    too_long = site.client.get(f"/api/leaderboards/{DATASET}", params={"columns": "x" * 121})
    assert too_long.status_code == 400 and "columns" in too_long.text


def test_navigation_links_the_experiments(site):
    assert '<a href="/experiments">Experiments</a>' in site.page("anonymous", "/")
