"""The public read API: leaderboards, profiles, comparisons and downloads show each viewer exactly what they may see."""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from evaluation.dataset import load_dataset
from evaluation.evaluate import evaluate
from hub import db
from hub.migrate import upgrade
from hub.models import Score
from hub.services.accounts.accounts import create_token, create_user
from hub.services.submissions.demo import seed_baselines
from hub.storage import get_storage
from hub.web.app import create_app
from tests.hub.conftest import DATASET, _clear_caches, auth, post, responses_file

ROLES = ("anonymous", "other", "owner", "admin")
KINDS = ("public", "private", "unapproved")
XSS = "<script>alert(1)</script>"
DOWNLOAD_KINDS = ("systems", "submissions", "scores", "responses")


@dataclass
class World:
    client: TestClient
    tokens: dict[str, str]
    submissions: dict[str, int]  # public / private / unapproved / baseline -> submission id
    systems: dict[str, int]
    lines: dict[str, list[str]]  # the responses submitted, in dataset prompt order

    def get(self, role: str, url: str, **params):
        headers = auth(self.tokens[role]) if role != "anonymous" else {}
        return self.client.get(url, headers=headers, params=params or None)


def _lines() -> dict[str, list[str]]:
    prompts = load_dataset(DATASET).prompts
    private = [p.references[1] for p in prompts]
    private[0] = "A secret Zebra answer\nthat spans two lines"
    return {
        "public": [p.references[0] for p in prompts],
        "private": private,
        "unapproved": [f"pending reply number {i}" for i in range(len(prompts))],
    }


def _submit(client, token, name, is_public, lines, *, jsonl=False) -> dict:
    if jsonl:  # order-free JSONL, the only format that carries multi-line responses
        ids = load_dataset(DATASET).prompt_ids
        content = "".join(json.dumps({"prompt_id": i, "response": r}) + "\n" for i, r in zip(ids, lines, strict=True))
        response = post(client, token, {"name": name, "is_public": is_public}, content.encode(), "mine.jsonl")
    else:
        response = post(client, token, {"name": name, "is_public": is_public}, responses_file(lines))
    assert response.status_code == 201, response.text
    return response.json()[0]


def _wait_evaluated(client, token, submission_id, timeout=60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(f"/api/submissions/{submission_id}", headers=auth(token)).json()
        if body["status"] == "evaluated":
            return
        assert body["status"] != "failed", body
        time.sleep(0.1)
    raise AssertionError(f"submission {submission_id} was not evaluated in time")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One hub for the module: the unigram baseline, and from one owner a public evaluated submission (with an
    XSS-looking name), a private evaluated one (JSONL, multi-line response) and one not yet approved."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HUB_DATA_DIR", str(tmp_path_factory.mktemp("public-api") / "hub-data"))
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
        lines = _lines()
        with TestClient(create_app(embedded_worker=True)) as client:
            created = {
                "public": _submit(client, tokens["owner"], XSS, "true", lines["public"]),
                "private": _submit(client, tokens["owner"], "Private bot", "false", lines["private"], jsonl=True),
                "unapproved": _submit(client, tokens["owner"], "Pending bot", "true", lines["unapproved"]),
            }
            for kind in ("public", "private"):
                approved = client.post(
                    f"/api/admin/submissions/{created[kind]['id']}/approve", headers=auth(tokens["admin"])
                )
                assert approved.status_code == 200
            for kind in ("public", "private"):
                _wait_evaluated(client, tokens["owner"], created[kind]["id"])
            baseline_system = client.get(f"/api/submissions/{baseline}").json()["system"]["id"]
            yield World(
                client=client,
                tokens=tokens,
                submissions={**{k: v["id"] for k, v in created.items()}, "baseline": baseline},
                systems={**{k: v["system"]["id"] for k, v in created.items()}, "baseline": baseline_system},
                lines=lines,
            )
        engine.dispose()
        _clear_caches()


def _may_see(role: str, kind: str) -> bool:
    return kind == "public" or role in ("owner", "admin")


# --- datasets ---------------------------------------------------------------------------------------------------


def test_datasets_list_and_detail(world):
    dataset = load_dataset(DATASET)
    for role in ("anonymous", "other"):
        listed = {d["name"]: d for d in world.get(role, "/api/datasets").json()}
        assert listed[DATASET] | {"prompts_sha256": None} == {
            "name": DATASET,
            "version": dataset.manifest.version,
            "fingerprint": dataset.fingerprint,
            "prompt_count": len(dataset),
            "description": dataset.manifest.description,
            "license": dataset.manifest.license,
            "citation": dataset.manifest.citation,
            "source": dataset.manifest.source,
            "prompts_sha256": None,
        }
    detail = world.get("anonymous", f"/api/datasets/{DATASET}").json()
    assert detail["fingerprint"] == dataset.fingerprint and len(detail["prompts"]) == len(dataset)
    first = dataset.prompts[0]
    assert detail["prompts"][0] == {
        "id": first.id,
        "context": [{"role": t.role, "content": t.content} for t in first.context],
        "references": list(first.references),
    }


@pytest.mark.parametrize("url", ["/api/datasets/nope", "/api/leaderboards/nope", "/api/compare/nope"])
def test_unknown_dataset_is_404(world, url):
    for role in ("anonymous", "admin"):
        response = world.get(role, url)
        assert response.status_code == 404
        assert response.json() == {"error": "no dataset 'nope'", "field": None}


# --- leaderboards -----------------------------------------------------------------------------------------------


def test_leaderboard_values_are_the_toolkit_scores(world):
    dataset = load_dataset(DATASET)
    board = world.get("admin", f"/api/leaderboards/{DATASET}").json()
    rows = {row["submission_id"]: row for row in board["rows"]}
    columns = {c["metric"]: c for c in board["columns"]}
    for kind in ("public", "private"):
        expected = {o.metric: o.result for o in evaluate(dataset, world.lines[kind]).outcomes if o.result}
        row = rows[world.submissions[kind]]
        assert row["system_id"] == world.systems[kind] and row["is_baseline"] is False
        assert row["scores"] == {
            metric: {"corpus": result.corpus, "signature": result.signature, "version": result.version}
            for metric, result in expected.items()
        }
        for metric, result in expected.items():
            assert result.signature in columns[metric]["signatures"]
            assert columns[metric]["higher_is_better"] == result.higher_is_better
    assert rows[world.submissions["public"]]["system_name"] == XSS  # verbatim: escaping is the templates' job
    assert rows[world.submissions["baseline"]]["is_baseline"] is True
    assert "perplexity" in rows[world.submissions["baseline"]]["scores"]  # the baseline ships log-likelihoods


@pytest.mark.parametrize(
    ("params", "metric", "descending"),
    [
        ({"sort": "bleu-2"}, "bleu-2", True),  # no default order: automatic scores alone rank nothing
        ({"sort": "bleu-2", "order": "asc"}, "bleu-2", False),
        ({"sort": "distinct-2"}, "distinct-2", True),
        ({"sort": "avg-length"}, "avg-length", False),  # no direction: ascending by default
        ({"sort": "avg-length", "order": "desc"}, "avg-length", True),
        ({"sort": "perplexity"}, "perplexity", False),  # lower is better; rows without it come last
        ({"sort": "perplexity", "order": "desc"}, "perplexity", True),
    ],
)
def test_leaderboard_sorting(world, params, metric, descending):
    board = world.get("admin", f"/api/leaderboards/{DATASET}", **params).json()
    assert (board["sort"], board["order"]) == (metric, "desc" if descending else "asc")
    values = [row["scores"].get(metric, {}).get("corpus") for row in board["rows"]]
    present = [v for v in values if v is not None]
    assert len(values) == 3 and present
    assert values[: len(present)] == sorted(present, reverse=descending)
    assert all(v is None for v in values[len(present) :])


def test_leaderboard_refuses_an_unknown_order(world):
    response = world.get("anonymous", f"/api/leaderboards/{DATASET}", order="sideways")
    assert response.status_code == 400 and response.json() == {"error": "order must be asc or desc", "field": "order"}


@pytest.mark.parametrize("role", ROLES)
def test_leaderboard_visibility(world, role):
    rows = world.get(role, f"/api/leaderboards/{DATASET}").json()["rows"]
    expected = {world.submissions["baseline"], world.submissions["public"]}
    if role in ("owner", "admin"):
        expected.add(world.submissions["private"])
    assert {r["submission_id"] for r in rows} == expected  # never the unapproved one: it has no scores yet
    public = {r["submission_id"]: r["is_public"] for r in rows}
    assert public[world.submissions["public"]] is True
    if role in ("owner", "admin"):
        assert public[world.submissions["private"]] is False


def test_leaderboard_shows_the_latest_score_and_the_profile_keeps_every_version(world):
    """A metric version bump adds a score; the leaderboard shows the newest, the profile and downloads all."""
    with Session(db.get_engine()) as session:
        newer = Score(
            submission_id=world.submissions["public"],
            metric="bleu-2",
            version="9",
            signature="bleu-2|v9|test",
            corpus=0.125,
            higher_is_better=True,
            per_prompt=[],
        )
        session.add(newer)
        session.commit()
        session.refresh(newer)
    try:
        board = world.get("anonymous", f"/api/leaderboards/{DATASET}").json()
        [row] = [r for r in board["rows"] if r["submission_id"] == world.submissions["public"]]
        assert row["scores"]["bleu-2"] == {"corpus": 0.125, "signature": "bleu-2|v9|test", "version": "9"}
        [column] = [c for c in board["columns"] if c["metric"] == "bleu-2"]
        assert "bleu-2|v9|test" in column["signatures"] and len(column["signatures"]) == 2  # baseline keeps v1
        profile = world.get("anonymous", f"/api/systems/{world.systems['public']}").json()
        versions = [s["version"] for s in profile["submissions"][0]["scores"] if s["metric"] == "bleu-2"]
        assert versions == ["1", "9"]
        scores = _parse(world.get("anonymous", "/api/downloads/scores.jsonl"), "jsonl")
        assert newer.id in {r["id"] for r in scores}
    finally:
        with Session(db.get_engine()) as session:
            session.delete(session.get(Score, newer.id))
            session.commit()


# --- system profiles --------------------------------------------------------------------------------------------


def _not_found_like_missing(world, role, url_template, hidden_id):
    hidden = world.get(role, url_template.format(hidden_id))
    missing = world.get(role, url_template.format(999_999))
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == {"error": f"no system #{hidden_id}", "field": None}
    assert missing.json() == {"error": "no system #999999", "field": None}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("kind", KINDS)
def test_system_profile_visibility(world, role, kind):
    system_id = world.systems[kind]
    if not _may_see(role, kind):
        _not_found_like_missing(world, role, "/api/systems/{}", system_id)
        return
    response = world.get(role, f"/api/systems/{system_id}")
    assert response.status_code == 200
    profile = response.json()
    assert [s["id"] for s in profile["submissions"]] == [world.submissions[kind]]
    assert "@example.org" not in response.text and "owner" not in profile


def test_system_profile_lists_metadata_and_every_score(world):
    profile = world.get("anonymous", f"/api/systems/{world.systems['public']}").json()
    assert profile["name"] == XSS and profile["is_baseline"] is False and profile["is_public"] is True
    assert {"description", "paper_url", "code_url", "weights_url"} <= set(profile)
    [submission] = profile["submissions"]
    assert submission["status"] == "evaluated" and submission["dataset"] == DATASET
    board = world.get("anonymous", f"/api/leaderboards/{DATASET}").json()
    [row] = [r for r in board["rows"] if r["submission_id"] == submission["id"]]
    assert {s["metric"]: (s["corpus"], s["signature"]) for s in submission["scores"]} == {
        m: (v["corpus"], v["signature"]) for m, v in row["scores"].items()
    }
    pending = world.get("owner", f"/api/systems/{world.systems['unapproved']}").json()
    assert [(s["status"], s["is_public"], s["scores"]) for s in pending["submissions"]] == [("submitted", False, [])]


# --- comparison -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("kind", KINDS)
def test_compare_visibility(world, role, kind):
    system_id = world.systems[kind]
    url = f"/api/compare/{DATASET}?systems={world.systems['baseline']},{{}}"
    if not _may_see(role, kind):
        _not_found_like_missing(world, role, url, system_id)
        return
    body = world.get(role, url.format(system_id)).json()
    header = body["systems"][1]
    if kind == "unapproved":  # visible to its owner, but nothing scored to compare yet
        assert header["submission_id"] is None
        assert all(p["responses"][1] is None for p in body["prompts"])
    else:
        assert header["submission_id"] == world.submissions[kind]
        assert [p["responses"][1] for p in body["prompts"]] == world.lines[kind]


def test_compare_returns_the_submitted_lines_per_prompt(world):
    dataset = load_dataset(DATASET)
    ids = f"{world.systems['public']},{world.systems['private']}"
    body = world.get("owner", f"/api/compare/{DATASET}", systems=ids).json()
    assert [s["id"] for s in body["systems"]] == [world.systems["public"], world.systems["private"]]
    assert body["systems"][0]["name"] == XSS
    assert [s["is_public"] for s in body["systems"]] == [True, False]
    assert [p["id"] for p in body["prompts"]] == list(dataset.prompt_ids) and body["matched"] == len(dataset)
    by_id = {p["id"]: p["responses"] for p in body["prompts"]}
    for index, prompt_id in enumerate(dataset.prompt_ids):
        assert by_id[prompt_id] == [world.lines["public"][index], world.lines["private"][index]]
    assert body["prompts"][0]["references"] == list(dataset.prompts[0].references)


def test_compare_filters_with_q(world):
    dataset = load_dataset(DATASET)
    ids = f"{world.systems['public']},{world.systems['private']}"
    zebra = world.get("owner", f"/api/compare/{DATASET}", systems=ids, q="zEBRA").json()
    assert [p["id"] for p in zebra["prompts"]] == [dataset.prompt_ids[0]] and zebra["matched"] == 1
    assert zebra["prompts"][0]["responses"][1] == "A secret Zebra answer\nthat spans two lines"
    in_context = [p.id for p in dataset.prompts if any("lisbon" in t.content.lower() for t in p.context)]
    lisbon = world.get("anonymous", f"/api/compare/{DATASET}", q="LISBON").json()
    assert in_context and [p["id"] for p in lisbon["prompts"]] == in_context
    assert world.get("anonymous", f"/api/compare/{DATASET}", q="zebra").json()["prompts"] == []


def test_compare_refuses_bad_system_lists(world):
    response = world.get("anonymous", f"/api/compare/{DATASET}", systems="1,two")
    assert response.status_code == 422 and response.json()["field"] == "systems"


# --- downloads --------------------------------------------------------------------------------------------------


def _parse(response, fmt):
    assert response.status_code == 200 and response.headers["x-schema-version"] == "1"
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(response.text)))
    header, *rows = [json.loads(line) for line in response.text.splitlines()]
    assert header["schema_version"] == 1 and all(list(row) == header["fields"] for row in rows)
    return rows


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("kind", DOWNLOAD_KINDS)
def test_downloads_hold_public_rows_only_whoever_asks(world, kind, fmt):
    bodies = {role: world.get(role, f"/api/downloads/{kind}.{fmt}") for role in ROLES}
    assert len({r.content for r in bodies.values()}) == 1  # a download is a publication: same for everyone
    rows = _parse(bodies["admin"], fmt)
    public_subs = {world.submissions["public"], world.submissions["baseline"]}
    public_systems = {world.systems["public"], world.systems["baseline"]}
    if kind == "systems":
        assert {int(r["id"]) for r in rows} == public_systems
        assert XSS in {r["name"] for r in rows}
    elif kind == "submissions":
        assert {int(r["id"]) for r in rows} == public_subs
    else:
        assert {int(r["submission_id"]) for r in rows} == public_subs
        assert {int(r["system_id"]) for r in rows} == public_systems
    text = bodies["admin"].text
    assert "Private bot" not in text and "Pending bot" not in text and "@example.org" not in text
    assert "secret Zebra" not in text and "pending reply" not in text


def test_download_contents_parse_back(world):
    scores = _parse(world.get("anonymous", "/api/downloads/scores.csv"), "csv")
    board = world.get("anonymous", f"/api/leaderboards/{DATASET}").json()
    [row] = [r for r in board["rows"] if r["submission_id"] == world.submissions["public"]]
    mine = {s["metric"]: s for s in scores if int(s["submission_id"]) == world.submissions["public"]}
    assert {m: (float(s["corpus"]), s["signature"]) for m, s in mine.items()} == {
        m: (v["corpus"], v["signature"]) for m, v in row["scores"].items()
    }
    assert len(json.loads(mine["bleu-2"]["per_prompt"])) == len(load_dataset(DATASET))
    for fmt in ("jsonl", "csv"):
        responses = _parse(world.get("anonymous", f"/api/downloads/responses.{fmt}"), fmt)
        public = [r for r in responses if int(r["submission_id"]) == world.submissions["public"]]
        assert [r["prompt_id"] for r in public] == list(load_dataset(DATASET).prompt_ids)
        assert [r["response"] for r in public] == world.lines["public"]


@pytest.mark.parametrize("name", ["votes.jsonl", "scores.xml", "scores", "scores.csv.gz"])
def test_unknown_download_is_404(world, name):
    response = world.get("anonymous", f"/api/downloads/{name}")
    assert response.status_code == 404 and response.json()["error"].startswith(f"no download {name!r}")


def test_overview_json_twin_counts_only_what_the_viewer_may_see(world):
    anonymous = world.get("anonymous", "/api/overview").json()
    owner = world.get("owner", "/api/overview").json()
    assert {d["name"] for d in anonymous["datasets"]} >= {"hub-open-v1"}
    assert owner["system_count"] > anonymous["system_count"]  # the owner's private evaluated system
