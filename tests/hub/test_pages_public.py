"""The public HTML pages: each shows its view-model, escapes what users wrote, hides what the viewer may not see,
and draws its charts from a vendored Chart.js without any CDN."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from sqlmodel import Session

from evaluation.dataset import load_dataset
from hub import db
from hub.migrate import upgrade
from hub.services.accounts.accounts import create_token, create_user
from hub.services.publishing import exports
from hub.services.submissions.demo import seed_baselines
from hub.storage import get_storage
from hub.web.app import create_app
from tests.hub.conftest import DATASET, _clear_caches, auth, post, responses_file

ROLES = ("anonymous", "other", "owner", "admin")
XSS_NAME = "<script>alert(1)</script>"
XSS_RESPONSE = "<img src=x onerror=alert(1)>"
SECRET = "A secret Zebra answer\nthat spans two lines"
PAPER = "https://example.org/paper?a=1&b=2"
HTML = {"Accept": "text/html"}


def esc(text: str) -> str:
    """As the templates escape: Jinja's autoescape (markupsafe)."""
    return str(escape(text))


@dataclass
class Site:
    client: TestClient
    tokens: dict[str, str]
    systems: dict[str, int]  # public / private / unapproved / baseline -> system id

    def get(self, role: str, url: str, **params):
        headers = {**HTML, **(auth(self.tokens[role]) if role != "anonymous" else {})}
        return self.client.get(url, headers=headers, params=params or None)

    def page(self, role: str, url: str, **params) -> str:
        response = self.get(role, url, **params)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/html")
        return response.text


def _submit(client, token, data, content, filename="mine.txt") -> dict:
    response = post(client, token, data, content, filename)
    assert response.status_code == 201, response.text
    return response.json()[0]


def _wait_evaluated(client, token, submission_id, timeout=60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get(f"/api/submissions/{submission_id}", headers=auth(token)).json()["status"]
        if status == "evaluated":
            return
        assert status != "failed"
        time.sleep(0.1)
    raise AssertionError(f"submission {submission_id} was not evaluated in time")


def _submissions(client, token) -> dict[str, dict]:
    """From one owner: a public system with an XSS-looking name, description and first response; a private one
    with a multi-line response (JSONL); one never approved."""
    prompts = load_dataset(DATASET).prompts
    public = [XSS_RESPONSE] + [p.references[0] for p in prompts[1:]]
    private = [SECRET] + [p.references[1] for p in prompts[1:]]
    private_jsonl = "".join(
        json.dumps({"prompt_id": p.id, "response": r}) + "\n" for p, r in zip(prompts, private, strict=True)
    )
    pending = [f"pending reply number {i}" for i in range(len(prompts))]
    public_form = {"name": XSS_NAME, "description": XSS_RESPONSE, "paper_url": PAPER, "is_public": "true"}
    return {
        "public": _submit(client, token, public_form, responses_file(public)),
        "private": _submit(client, token, {"name": "Private bot"}, private_jsonl.encode(), "mine.jsonl"),
        "unapproved": _submit(client, token, {"name": "Pending bot", "is_public": "true"}, responses_file(pending)),
    }


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HUB_DATA_DIR", str(tmp_path_factory.mktemp("public-pages") / "hub-data"))
        for name in ("HUB_DATABASE_URL", "HUB_STORAGE_URL", "HUB_QUEUE_URL"):
            patch.delenv(name, raising=False)
        _clear_caches()
        upgrade()
        engine = db.get_engine()
        tokens = {}
        with Session(engine) as session:
            for role in ("owner", "other", "admin"):
                user = create_user(
                    session,
                    email=f"{role}@example.org",
                    password="correct horse battery",
                    display_name=role,
                    is_admin=role == "admin",
                )
                tokens[role] = create_token(session, user, name="cli")[1]
        [baseline] = seed_baselines(engine, get_storage(), names=["unigram"])
        with TestClient(create_app(embedded_worker=True)) as client:
            created = _submissions(client, tokens["owner"])
            for kind in ("public", "private"):
                url = f"/api/admin/submissions/{created[kind]['id']}/approve"
                assert client.post(url, headers=auth(tokens["admin"])).status_code == 200
                _wait_evaluated(client, tokens["owner"], created[kind]["id"])
            baseline_system = client.get(f"/api/submissions/{baseline}").json()["system"]["id"]
            systems = {kind: body["system"]["id"] for kind, body in created.items()} | {"baseline": baseline_system}
            yield Site(client=client, tokens=tokens, systems=systems)
        engine.dispose()
        _clear_caches()


class Assets(HTMLParser):
    """Collects the scripts and stylesheets a page loads, and the type of every inline script."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.inline_types: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if tag == "script" and found.get("src"):
            self.urls.append(found["src"])
        elif tag == "script":
            self.inline_types.append(found.get("type"))
        elif tag == "link" and "stylesheet" in (found.get("rel") or ""):
            self.urls.append(found["href"])


def _assets(text: str) -> Assets:
    parser = Assets()
    parser.feed(text)
    return parser


def _tbody(text: str) -> str:
    return text.split("<tbody>", 1)[1].split("</tbody>", 1)[0]


def _row_system_ids(text: str) -> list[int]:
    return [int(i) for i in re.findall(r'href="/systems/(\d+)"', _tbody(text))]


def _all_urls(site: Site) -> list[str]:
    ids = ",".join(str(site.systems[k]) for k in ("baseline", "public"))
    return [
        "/",
        "/datasets",
        f"/datasets/{DATASET}",
        f"/leaderboards/{DATASET}",
        f"/systems/{site.systems['public']}",
        f"/systems/{site.systems['baseline']}",
        f"/compare/{DATASET}?systems={ids}",
        "/downloads",
    ]


# --- each page and its key content ------------------------------------------------------------------------------


def test_overview(site):
    text = site.page("anonymous", "/")
    assert "<h1>ChatEval Hub</h1>" in text and "open leaderboard" in text
    assert f'<a href="/leaderboards/{DATASET}">{DATASET}</a>' in text
    assert (
        "<strong>2</strong> systems evaluated" in text
    )  # the unigram baseline and the public system; never the private one
    latest = _row_system_ids(text)
    assert latest == [site.systems["public"], site.systems["baseline"]]  # newest first
    assert 'href="/api/overview"' in text and 'href="/downloads"' in text


def test_datasets_list_and_detail(site):
    dataset = load_dataset(DATASET)
    listing = site.page("anonymous", "/datasets")
    assert f'href="/datasets/{DATASET}"' in listing and dataset.manifest.license in listing
    detail = site.page("anonymous", f"/datasets/{DATASET}")
    for text in (dataset.manifest.license, dataset.manifest.citation, dataset.manifest.source):
        assert esc(text) in detail
    for prompt in dataset.prompts:
        assert f'id="prompt-{prompt.id}"' in detail
        for reference in prompt.references:
            assert esc(reference) in detail
    multi_turn = next(p for p in dataset.prompts if len(p.context) > 2)
    item = detail.split(f'id="prompt-{multi_turn.id}"', 1)[1].split("</li>\n    \n    <li", 1)[0]
    turns = re.findall(
        r'<li class="turn turn-(\w+)"><span class="role">\w+</span> <span class="content">(.*?)</span>', item
    )
    assert turns == [(t.role, esc(t.content)) for t in multi_turn.context]
    assert f'href="/api/datasets/{DATASET}"' in detail


def test_downloads_page_links_every_file_and_its_schema(site):
    text = site.page("anonymous", "/downloads")
    for kind, fields in exports.FIELDS.items():
        for fmt in exports.MEDIA_TYPES:
            assert f'href="/api/downloads/{kind}.{fmt}"' in text
            assert site.client.get(f"/api/downloads/{kind}.{fmt}").status_code == 200
        row = text.split(f'id="download-{kind}"', 1)[1].split("</tr>", 1)[0]
        assert re.findall(r"<code>(\w+)</code>", row) == list(fields)
    assert f"X-Schema-Version: {exports.SCHEMA_VERSION}" in text
    assert "An empty cell means null" in text and "<h2" in text  # the user guide to the files
    assert "csv_cells.py" not in text and "checked with the same `can_view`" not in text  # not the code's docstring


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("/datasets/nope", "no dataset &#39;nope&#39;"),
        ("/leaderboards/nope", "no dataset &#39;nope&#39;"),
        ("/compare/nope", "no dataset &#39;nope&#39;"),
        ("/systems/999999", "no system #999999"),
        ("/systems/abc", "no system #abc"),
        ("/systems/²", "no system #²"),
        ("/systems/" + "9" * 30, "no system #" + "9" * 30),
    ],
)
def test_unknown_dataset_or_system_is_the_404_page(site, url, message):
    response = site.get("anonymous", url)
    assert response.status_code == 404 and response.headers["content-type"].startswith("text/html")
    assert "<h1>404</h1>" in response.text and f'<p class="error">{message}</p>' in response.text


def test_bad_parameters_are_the_400_page(site):
    response = site.get("anonymous", f"/leaderboards/{DATASET}", order="sideways")
    assert response.status_code == 400 and "order must be asc or desc" in response.text
    response = site.get("anonymous", f"/compare/{DATASET}", systems="1,two")
    assert response.status_code == 422 and "<code>systems</code>" in response.text


# --- leaderboard ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "metric", "descending"),
    [
        ({"sort": "bleu-2"}, "bleu-2", True),  # no default order: automatic scores alone rank nothing
        ({"sort": "bleu-2", "order": "asc"}, "bleu-2", False),
        ({"sort": "distinct-1"}, "distinct-1", True),
        ({"sort": "avg-length", "order": "desc"}, "avg-length", True),
        ({"sort": "perplexity"}, "perplexity", False),  # only the baseline has it; the others follow, unranked
    ],
)
def test_leaderboard_rows_follow_the_sort(site, params, metric, descending):
    text = site.page("admin", f"/leaderboards/{DATASET}", **params)
    rows = site.client.get(f"/api/leaderboards/{DATASET}", headers=auth(site.tokens["admin"])).json()["rows"]
    value = {row["system_id"]: row["scores"].get(metric, {}).get("corpus") for row in rows}
    ids = _row_system_ids(text)
    assert sorted(ids) == sorted(value) and len(ids) == 3
    present = [value[i] for i in ids if value[i] is not None]
    assert present and present == sorted(present, reverse=descending)
    assert [value[i] for i in ids[len(present) :]] == [None] * (len(ids) - len(present))  # missing values last
    ranks = re.findall(r'<tr class="[^"]*">\s*<td class="num">(\d*)</td>', _tbody(text))
    assert ranks == [str(n) for n in range(1, len(present) + 1)] + [""] * (len(ids) - len(present))
    flipped = "asc" if descending else "desc"
    assert f'<a href="/leaderboards/{DATASET}?sort={metric}&amp;order={flipped}">{metric} <span' in text
    assert f'href="/api/leaderboards/{DATASET}?sort={metric}&amp;order={"desc" if descending else "asc"}"' in text


def test_leaderboard_columns_show_their_signatures(site):
    text = site.page("anonymous", f"/leaderboards/{DATASET}")
    columns = site.client.get(f"/api/leaderboards/{DATASET}").json()["columns"]
    assert {c["metric"] for c in columns} >= {"bleu-2", "distinct-1", "distinct-2", "perplexity"}
    for column in columns:
        title = esc("\n".join(column["signatures"]))
        assert re.search(rf'<th scope="col" class="num[^"]*" aria-sort="\w+" title="{re.escape(title)}">', text)
        assert f'href="/leaderboards/{DATASET}?sort={column["metric"]}' in text
        for signature in column["signatures"]:
            assert f'<code class="wrap">{esc(signature)}</code>' in text  # the details row
    assert text.count("<summary>signature</summary>") == len(columns)


def test_leaderboard_marks_baselines_and_private_rows(site):
    def row_of(text, system_id):
        return next(r for r in _tbody(text).split("</tr>") if f'href="/systems/{system_id}"' in r)

    for role in ROLES:
        text = site.page(role, f"/leaderboards/{DATASET}")
        baseline = row_of(text, site.systems["baseline"])
        assert 'class="row-baseline"' in baseline and 'class="badge badge-baseline"' in baseline
        public = row_of(text, site.systems["public"])
        assert "badge-baseline" not in public and "badge-private" not in public
        if role in ("owner", "admin"):
            private = row_of(text, site.systems["private"])
            assert "row-private" in private and 'class="badge badge-private"' in private
            assert "Private bot" in private


def test_leaderboard_chart_data_is_a_json_block(site):
    text = site.page("admin", f"/leaderboards/{DATASET}", sort="distinct-2")
    block = re.search(r'<script type="application/json" id="chart-leaderboard">(.*?)</script>', text, re.S)
    chart = json.loads(block.group(1))
    rows = site.client.get(f"/api/leaderboards/{DATASET}?sort=distinct-2", headers=auth(site.tokens["admin"]))
    rows = rows.json()["rows"]
    assert chart["label"] == "distinct-2" and chart["labels"] == [r["system_name"] for r in rows]
    assert chart["values"] == [r["scores"]["distinct-2"]["corpus"] for r in rows]
    assert chart["kinds"] == [
        "baseline" if r["is_baseline"] else "public" if r["is_public"] else "private" for r in rows
    ]
    assert '<canvas data-chart="chart-leaderboard"' in text


# --- system profile ---------------------------------------------------------------------------------------------


def test_system_profile(site):
    system_id = site.systems["public"]
    text = site.page("anonymous", f"/systems/{system_id}")
    profile = site.client.get(f"/api/systems/{system_id}").json()
    assert f'<a href="{esc(PAPER)}" rel="nofollow noopener" target="_blank">' in text
    [submission] = profile["submissions"]
    for score in submission["scores"]:
        assert f'<code class="wrap">{esc(score["signature"])}</code>' in text
    assert f'href="/compare/{DATASET}?systems={system_id}"' in text
    blocks = re.findall(
        rf'<script type="application/json" id="chart-submission-{submission["id"]}-\d+">(.*?)</script>', text
    )
    charts = [json.loads(block) for block in blocks]
    drawn = {
        label.rstrip(" ↑↓"): value
        for chart in charts
        for label, value in zip(chart["labels"], chart["values"], strict=True)
    }
    assert drawn == {s["metric"]: s["corpus"] for s in submission["scores"] if s["corpus"] is not None}
    for chart in charts:  # never two scales on one axis: a shared chart holds 0-1 metrics only, on a 0-1 axis
        assert chart["value_labels"] and "scale" not in chart
        assert len(chart["values"]) == 1 or (chart["min"], chart["max"]) == (0, 1)
        assert len(chart["values"]) == 1 or all(0 <= v <= 1 for v in chart["values"])
    assert any(v > 1 for v in drawn.values()) and any(0 <= v <= 1 for v in drawn.values())  # both kinds were there
    assert f'href="/api/systems/{system_id}"' in text
    baseline = site.page("anonymous", f"/systems/{site.systems['baseline']}")
    assert 'class="badge badge-baseline"' in baseline and "Add-one unigram language model" in baseline


# --- comparison -------------------------------------------------------------------------------------------------


def test_compare_shows_responses_side_by_side(site):
    dataset = load_dataset(DATASET)
    ids = [site.systems["baseline"], site.systems["public"]]
    text = site.page("anonymous", f"/compare/{DATASET}", systems=",".join(map(str, ids)))
    assert text.count('<li class="prompt"') == len(dataset)
    first = text.split(f'id="prompt-{dataset.prompt_ids[0]}"', 1)[1].split('<li class="prompt"', 1)[0]
    answers = re.findall(r'<div class="answer">\s*<p class="answer-system"><a href="/systems/(\d+)">', first)
    assert [int(a) for a in answers] == ids
    assert f'<p class="text">{esc(XSS_RESPONSE)}</p>' in first
    for system_id in ids:  # the form: a checked box for each, and the same page from repeated parameters
        assert f'<input type="checkbox" name="systems" value="{system_id}" checked>' in text
    repeated = site.client.get(f"/compare/{DATASET}?systems={ids[0]}&systems={ids[1]}", headers=HTML).text
    assert repeated == text
    assert f'href="/api/compare/{DATASET}?systems={ids[0]}%2C{ids[1]}"' in text


def test_compare_filter_and_empty_choice(site):
    dataset = load_dataset(DATASET)
    lisbon = [p.id for p in dataset.prompts if any("lisbon" in t.content.lower() for t in p.context)]
    text = site.page("anonymous", f"/compare/{DATASET}", q="LISBON")
    assert re.findall(r'<li class="prompt" id="prompt-([\w-]+)">', text) == lisbon and lisbon
    assert 'name="q" value="LISBON"' in text
    unchosen = site.page("anonymous", f"/compare/{DATASET}")
    assert f'<input type="checkbox" name="systems" value="{site.systems["public"]}">' in unchosen
    assert '<div class="answers">' not in unchosen and unchosen.count('<li class="prompt"') == len(dataset)
    none = site.page("anonymous", f"/compare/{DATASET}", q="no such words anywhere")
    assert "No prompt matches." in none


# --- escaping and visibility ------------------------------------------------------------------------------------


def test_user_text_is_escaped_everywhere(site):
    for role in ROLES:
        for url in _all_urls(site):
            text = site.page(role, url)
            assert XSS_NAME not in text and XSS_RESPONSE not in text, url
            assert "<script>alert" not in text and "onerror=alert(1)>" not in text, url
    escaped_name = esc(XSS_NAME)
    for url in ("/", f"/leaderboards/{DATASET}", f"/systems/{site.systems['public']}", _all_urls(site)[6]):
        assert escaped_name in site.page("anonymous", url), url
    profile = site.page("anonymous", f"/systems/{site.systems['public']}")
    assert '<p class="text">&lt;img src=x onerror=alert(1)&gt;</p>' in profile  # the description


@pytest.mark.parametrize("role", ("anonymous", "owner", "admin"))
def test_a_prompt_page_shows_every_public_systems_response_and_never_a_private_one(site, role):
    first = load_dataset(DATASET).prompts[0]
    prompt = site.client.get(f"/api/datasets/{DATASET}/prompts/{first.id}").json()
    shown = {answer["system_id"]: answer["response"] for answer in prompt["responses"]}
    assert set(shown) == {site.systems["public"], site.systems["baseline"]}
    assert shown[site.systems["public"]] == XSS_RESPONSE
    text = site.page(role, f"/datasets/{DATASET}/prompts/{first.id}")
    assert f'<a href="/systems/{site.systems["public"]}">{esc(XSS_NAME)}</a>' in text
    assert f'<p class="text">{esc(XSS_RESPONSE)}</p>' in text and XSS_RESPONSE not in text
    assert "secret Zebra" not in text and "Private bot" not in text and "pending reply" not in text  # even for owners


@pytest.mark.parametrize("role", ROLES)
def test_private_and_unapproved_show_only_to_owner_and_admin(site, role):
    privileged = role in ("owner", "admin")
    board = site.page(role, f"/leaderboards/{DATASET}")
    overview = site.page(role, "/")
    compare_all = site.page(role, f"/compare/{DATASET}")
    for text in (board, overview, compare_all):
        assert ("Private bot" in text) is privileged
        assert "Pending bot" not in text  # never scored, so never ranked or offered for comparison
    private = site.get(role, f"/systems/{site.systems['private']}")
    unapproved = site.get(role, f"/systems/{site.systems['unapproved']}")
    compared = site.get(role, f"/compare/{DATASET}", systems=f"{site.systems['public']},{site.systems['private']}")
    if not privileged:
        for response, system_id in ((private, "private"), (unapproved, "unapproved"), (compared, "private")):
            assert response.status_code == 404
            assert f"no system #{site.systems[system_id]}" in response.text
        return
    assert private.status_code == unapproved.status_code == compared.status_code == 200
    assert "Private bot" in private.text and 'class="badge badge-private"' in private.text
    assert "Pending bot" in unapproved.text and "submitted" in unapproved.text
    assert f'<p class="text">{SECRET}</p>' in compared.text  # multi-line response kept whole
    pending = site.page(role, f"/compare/{DATASET}", systems=str(site.systems["unapproved"]))
    assert "pending reply" not in pending and "No scored responses on this dataset." in pending


# --- assets -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/static/charts.js", "/static/vendor/chartjs/chart.umd.min.js"])
def test_chart_assets_are_served_as_javascript(site, path):
    response = site.client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] in ("text/javascript", "application/javascript")
    assert len(response.content) > 1000 or "data-chart" in response.text


def test_no_page_loads_anything_from_another_site(site):
    for url in _all_urls(site):
        assets = _assets(site.page("anonymous", url))
        for asset in assets.urls:
            assert urlsplit(asset).netloc in ("", "testserver"), (url, asset)
            assert site.client.get(asset).status_code == 200, asset
        assert set(assets.inline_types) <= {"application/json"}, url  # data blocks only, no inline code
    # Automatic scores alone leave a board unranked: the chart is drawn for a chosen column.
    scripts = _assets(site.page("anonymous", f"/leaderboards/{DATASET}?sort=bleu-2")).urls
    assert "/static/vendor/chartjs/chart.umd.min.js" in scripts and "/static/charts.js" in scripts
