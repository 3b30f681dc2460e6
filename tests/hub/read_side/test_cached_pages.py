"""Public pages from the read side's cache: validators and 304s, every page fresh right after a write, and private
views (owner, admin) never served from it or to anyone else."""

from __future__ import annotations

import time
from email.utils import format_datetime, parsedate_to_datetime

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from hub.models import Score, Submission, System, User
from hub.services.publishing.read_side import PAGES
from hub.web.app import create_app
from tests.hub.conftest import DATASET, auth, post, submitted_system

PUBLIC_URLS = [
    "/",
    f"/leaderboards/{DATASET}",
    f"/api/leaderboards/{DATASET}",
    "/api/overview",
    f"/irt/{DATASET}",
    f"/api/irt/{DATASET}",
    "/experiments",
    "/api/experiments",
    "/api/downloads/systems.jsonl",
    "/api/downloads/scores.csv",
]


@pytest.fixture
def hub(hub_env, baselines, people):
    PAGES.clear()
    with TestClient(create_app()) as client:
        yield client, baselines, people


def _private_system(engine, name: str = "Hidden Owl") -> int:
    """The owner's private, evaluated system with one score (so it is ranked for those who may see it)."""
    with Session(engine) as session:
        owner = session.exec(select(User).where(User.email == "owner@example.org")).one()
        system = submitted_system(session, name, owner.id, False, ["hello"] * 120)
        submission = session.exec(select(Submission).where(Submission.system_id == system.id)).one()
        session.add(
            Score(submission_id=submission.id, metric="bleu-2", version="1", signature="bleu-2|test", corpus=1.0)
        )
        session.commit()
        return system.id


@pytest.mark.parametrize("url", PUBLIC_URLS)
def test_public_pages_carry_validators_and_answer_304(hub, url):
    client, _, _ = hub
    first = client.get(url)
    assert first.status_code == 200, first.text
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    assert etag.startswith('W/"v') and parsedate_to_datetime(modified).tzinfo is not None
    assert "Cookie" in first.headers["vary"]
    again = client.get(url)
    assert again.content == first.content and again.headers["etag"] == etag
    assert again.headers["content-type"] == first.headers["content-type"]
    not_modified = client.get(url, headers={"If-None-Match": etag})
    assert not_modified.status_code == 304 and not_modified.content == b""
    assert not_modified.headers["etag"] == etag
    assert client.get(url, headers={"If-None-Match": 'W/"v0.0-0"'}).status_code == 200
    assert client.get(url, headers={"If-Modified-Since": modified}).status_code == 304
    earlier = format_datetime(parsedate_to_datetime(modified).replace(year=2000), usegmt=True)
    assert client.get(url, headers={"If-Modified-Since": earlier}).status_code == 200


def test_pagination_headers_survive_the_cache(hub):
    client, _, _ = hub
    first = client.get("/api/experiments", params={"per_page": 1})
    second = client.get("/api/experiments", params={"per_page": 1})
    assert first.headers["x-total-count"] == second.headers["x-total-count"] == "0"


def test_the_next_view_after_a_write_is_fresh_and_old_validators_stop_matching(hub, hub_env):
    client, baselines, _ = hub
    url = f"/api/leaderboards/{DATASET}"
    before = client.get(url)
    assert {row["system_name"] for row in before.json()["rows"]} == {"echo", "retrieval"}
    with Session(hub_env) as session:  # a write outside the web process, e.g. a worker
        system = session.get(System, baselines["echo"])
        system.name = "echo-2"
        session.add(system)
        session.commit()
    after = client.get(url)  # at once: no expiry to wait for
    assert {row["system_name"] for row in after.json()["rows"]} == {"echo-2", "retrieval"}
    assert after.headers["etag"] != before.headers["etag"]
    assert client.get(url, headers={"If-None-Match": before.headers["etag"]}).status_code == 200
    html = client.get(f"/systems/{baselines['echo']}")
    assert "echo-2" in html.text


def test_private_views_never_reach_anonymous_visitors_and_the_reverse(hub, hub_env):
    client, _, tokens = hub
    hidden = _private_system(hub_env)
    owner, admin = auth(tokens["owner"]), auth(tokens["admin"])
    for order in (("anonymous", "owner", "admin"), ("owner", "admin", "anonymous"), ("admin", "anonymous", "owner")):
        for url in (f"/api/leaderboards/{DATASET}", "/api/overview", f"/leaderboards/{DATASET}", "/"):
            seen = {}
            for who in order + order:  # twice each: the second may come from a cache
                headers = {"anonymous": {}, "owner": owner, "admin": admin}[who]
                response = client.get(url, headers={**headers, "Accept": "text/html"})
                assert response.status_code == 200
                seen.setdefault(who, []).append("Hidden Owl" in response.text)
            assert seen["anonymous"] == [False, False], (url, order)
            assert seen["owner"] == [True, True], (url, order)
            assert seen["admin"] == [True, True], (url, order)
    assert client.get(f"/api/systems/{hidden}").status_code == 404
    assert client.get(f"/api/systems/{hidden}", headers=owner).json()["name"] == "Hidden Owl"
    assert client.get(f"/api/systems/{hidden}").status_code == 404
    other = auth(tokens["other"])
    assert client.get(f"/api/systems/{hidden}", headers=other).status_code == 404


def test_signed_in_views_are_not_cached_or_validated(hub):
    client, _, tokens = hub
    url = f"/api/leaderboards/{DATASET}"
    anonymous = client.get(url)
    mine = client.get(url, headers={**auth(tokens["owner"]), "If-None-Match": anonymous.headers["etag"]})
    assert mine.status_code == 200 and "etag" not in mine.headers


def test_a_submission_evaluated_by_the_worker_shows_on_the_next_anonymous_view(hub_env, baselines, people):
    """The whole path: upload, approval and evaluation through the API and the embedded worker (its own
    transactions), then the cached leaderboard, overview and download show the new system at once."""
    PAGES.clear()
    with TestClient(create_app(embedded_worker=True)) as client:
        urls = (f"/api/leaderboards/{DATASET}", "/api/overview", "/api/downloads/systems.jsonl")
        for url in urls:
            assert "Fresh Heron" not in client.get(url).text
        created = post(client, people["owner"], {"name": "Fresh Heron", "is_public": "true"}).json()[0]
        approved = client.post(f"/api/admin/submissions/{created['id']}/approve", headers=auth(people["admin"]))
        assert approved.status_code == 200
        deadline = time.monotonic() + 60
        while client.get(f"/api/submissions/{created['id']}", headers=auth(people["owner"])).json()["status"] != (
            "evaluated"
        ):
            assert time.monotonic() < deadline, "not evaluated in time"
            time.sleep(0.1)
        for url in urls:
            assert "Fresh Heron" in client.get(url).text, url


def test_clients_that_accept_gzip_get_the_same_page_compressed_once(hub):
    import gzip

    client, _, _ = hub
    url = f"/leaderboards/{DATASET}"
    plain = client.get(url, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    with client.stream("GET", url, headers={"Accept-Encoding": "br, gzip;q=0.8"}) as packed:
        assert packed.headers["content-encoding"] == "gzip" and "Accept-Encoding" in packed.headers["vary"]
        raw = b"".join(packed.iter_raw())
    assert gzip.decompress(raw) == plain.content and len(raw) < len(plain.content)
    refused = client.get(url, headers={"Accept-Encoding": "gzip;q=0"})
    assert "content-encoding" not in refused.headers and refused.content == plain.content
