"""Long lists come in pages: a dataset's prompts, a comparison and the experiments, as pages and as their JSON
twins. `page` and `per_page` are bounded (422 naming the field beyond them), every answer says how many rows there
are, and following the next links visits every row exactly once, so a page's size is bounded by `per_page`, not
by the dataset (before: an 82 MB comparison page for a 100,000-prompt set)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from evaluation.dataset import Prompt, Turn, write_dataset
from evaluation.settings import get_settings
from hub import storage
from hub.models import Submission, SubmissionStatus, System
from hub.services.accounts.accounts import create_user
from hub.services.platform.pagination import DEFAULT_PER_PAGE, MAX_PER_PAGE
from hub.web.app import create_app
from tests.hub.conftest import DATASET, new_experiment

BIG = "big-set"
PROMPTS = 2_500
HTML = {"Accept": "text/html"}


@pytest.fixture
def big(hub_env):
    """A generated dataset of 2,500 prompts with two public systems that answered every one."""
    prompts = [
        Prompt(
            id=f"p{n:05d}", context=(Turn(role="user", content=f"question {n} " + "words " * 20),), references=("r",)
        )
        for n in range(PROMPTS)
    ]
    fields = dict(name=BIG, version="1", description="generated", source="", license="", citation="")
    dataset = write_dataset(get_settings().user_datasets / BIG, fields, prompts)
    with Session(hub_env) as session:
        owner = create_user(session, email="owner@example.org", password="correct horse battery", display_name="o")
        ids = []
        for name in ("alpha", "beta"):
            system = System(name=name, owner_id=owner.id, is_public=True)
            session.add(system)
            session.commit()
            lines = [f"{name} answers {n} " + "text " * 20 for n in range(PROMPTS)]
            session.add(
                Submission(
                    system_id=system.id,
                    dataset_name=BIG,
                    dataset_fingerprint=dataset.fingerprint,
                    responses_sha256=storage.get_storage().put(("\n".join(lines) + "\n").encode()),
                    status=SubmissionStatus.evaluated,
                )
            )
            session.commit()
            ids.append(system.id)
    with TestClient(create_app()) as client:
        yield client, ",".join(map(str, ids))


def _walk_json(client, url: str, rows: str, **params) -> tuple[list, list[dict]]:
    """Every row of a paginated JSON twin, following `pagination.next`; and each page's pagination."""
    body = client.get(url, params=params).json()
    found, seen = list(body[rows]), [body["pagination"]]
    while body["pagination"]["next"]:
        body = client.get(body["pagination"]["next"]).json()
        found += body[rows]
        seen.append(body["pagination"])
    return found, seen


def _walk_html(client, url: str) -> tuple[list[str], list[int]]:
    """Every prompt id shown on a paginated page, following its rel=next link; and each page's size in bytes."""
    ids, sizes = [], []
    while url:
        response = client.get(url, headers=HTML)
        assert response.status_code == 200
        ids += re.findall(r'<li class="prompt" id="prompt-([^"]+)"', response.text)
        sizes.append(len(response.content))
        found = re.search(r'<a rel="next" href="([^"]+)"', response.text)
        url = found.group(1).replace("&amp;", "&") if found else None
    return ids, sizes


def test_the_comparison_comes_in_pages_that_cover_every_prompt_once(big):
    client, systems = big
    expected = [f"p{n:05d}" for n in range(PROMPTS)]
    first = client.get(f"/api/compare/{BIG}", params={"systems": systems}).json()
    assert len(first["prompts"]) == DEFAULT_PER_PAGE and first["matched"] == PROMPTS
    assert first["pagination"] == {
        "page": 1,
        "per_page": DEFAULT_PER_PAGE,
        "total": PROMPTS,
        "pages": 13,
        "next": f"/api/compare/{BIG}?systems={systems.replace(',', '%2C')}&page=2",
        "prev": None,
    }
    prompts, pages = _walk_json(client, f"/api/compare/{BIG}", "prompts", systems=systems, per_page=MAX_PER_PAGE)
    assert [p["id"] for p in prompts] == expected and len(pages) == 3
    assert prompts[-1]["responses"] == [
        f"alpha answers {PROMPTS - 1} " + "text " * 20,
        f"beta answers {PROMPTS - 1} " + "text " * 20,
    ]
    filtered = client.get(f"/api/compare/{BIG}", params={"systems": systems, "q": "question 12", "per_page": 5}).json()
    assert filtered["matched"] == 111 and filtered["pagination"]["pages"] == 23  # 12, 120-129, 1200-1299

    ids, sizes = _walk_html(client, f"/compare/{BIG}?systems={systems}")
    assert ids == expected and len(sizes) == 13
    assert max(sizes) < 400_000, f"a comparison page of {max(sizes)} bytes"


def test_the_dataset_comes_in_pages_that_cover_every_prompt_once(big):
    client, _ = big
    expected = [f"p{n:05d}" for n in range(PROMPTS)]
    first = client.get(f"/api/datasets/{BIG}").json()
    assert first["prompt_count"] == PROMPTS and len(first["prompts"]) == DEFAULT_PER_PAGE
    assert first["pagination"]["total"] == PROMPTS and first["pagination"]["next"] == f"/api/datasets/{BIG}?page=2"
    prompts, _ = _walk_json(client, f"/api/datasets/{BIG}", "prompts", per_page=700)
    assert [p["id"] for p in prompts] == expected
    last = client.get(f"/api/datasets/{BIG}", params={"page": 99}).json()
    assert last["prompts"] == [] and last["pagination"]["prev"] == f"/api/datasets/{BIG}?page=13"

    ids, sizes = _walk_html(client, f"/datasets/{BIG}")
    assert ids == expected and max(sizes) < 300_000


def test_the_experiments_come_in_pages(hub_env, baselines, admin_user, people):
    for _ in range(7):
        new_experiment(hub_env, admin_user, baselines)
    with TestClient(create_app()) as client:
        first = client.get("/api/experiments", params={"per_page": 3})
        assert first.status_code == 200 and len(first.json()) == 3
        assert first.headers["x-total-count"] == "7"
        assert first.headers["link"] == '</api/experiments?per_page=3&page=2>; rel="next"'
        found, url = [], "/api/experiments?per_page=3"
        while url:
            response = client.get(url)
            found += [e["id"] for e in response.json()]
            link = re.search(r'<([^>]+)>; rel="next"', response.headers.get("link", ""))
            url = link.group(1) if link else None
        assert sorted(found) == sorted(set(found)) and len(found) == 7

        page = client.get("/experiments", params={"per_page": 3, "page": 3}, headers=HTML).text
        assert page.count('class="num exp-id"') == 1 and "Page 3 of 3" in page
        assert '<a rel="prev" href="/experiments?per_page=3&amp;page=2">' in page


@pytest.mark.parametrize(
    ("url", "field"),
    [
        (f"/api/datasets/{DATASET}?page=0", "page"),
        (f"/api/datasets/{DATASET}?per_page={MAX_PER_PAGE + 1}", "per_page"),
        (f"/api/compare/{DATASET}?page=two", "page"),
        (f"/api/compare/{DATASET}?per_page=99999999999999999999999", "per_page"),
        ("/api/experiments?per_page=0", "per_page"),
    ],
)
def test_page_parameters_out_of_bounds_are_refused_naming_them(hub_env, url, field):
    with TestClient(create_app()) as client:
        response = client.get(url)
    assert response.status_code == 422 and field in response.text
