"""Public pages made fast are the same bytes as before: JSON twins written with json.dumps (at C speed, handing only
dates, enums and models to jsonable_encoder as FastAPI would), experiments' publicness decided for a whole list in
two queries, summaries' tests kept per counts. Checked on a hub seeded as scripts/bench_web.py seeds its database, at
a small scale (public systems with scores, closed crowd experiments, IRT fits), against the same pages built the
way they were before."""

from __future__ import annotations

import argparse
import datetime
import enum
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient
from pydantic import BaseModel

from hub.services.human import experiment_access, human_summaries
from hub.services.publishing.read_side import PAGES
from hub.services.statistics import irt_views
from hub.web import read_cache
from hub.web.app import create_app
from hub.web.read_cache import _json_body

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"


class Colour(enum.Enum):
    RED = "red"


class Model(BaseModel):
    when: datetime.datetime
    name: str


@dataclass
class Page:
    number: int
    colour: Colour


def test_json_body_equals_fastapis_encoding_for_every_kind_of_value():
    value = {
        "text": 'naïve ☃ \u2028 "quoted"',
        "numbers": [0, -1, 2**70, 0.1, 1e-300, 1.5e300, True, None],
        "tuple": (1, "a"),
        "set": {3},
        1: "int key",
        "when": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
        "day": datetime.date(2026, 1, 2),
        "enum": Colour.RED,
        "model": Model(when=datetime.datetime(2026, 1, 2), name="m"),
        "dataclass": Page(number=3, colour=Colour.RED),
        "nested": [{"a": [{"b": Colour.RED}]}],
    }
    assert _json_body(value) == JSONResponse(jsonable_encoder(value)).body
    enum_keys = {Colour.RED: 1}  # json.dumps refuses such keys: the slow path writes them as FastAPI does
    assert _json_body(enum_keys) == JSONResponse(jsonable_encoder(enum_keys)).body
    with pytest.raises(ValueError):
        _json_body({"nan": float("nan")})  # refused as JSONResponse refuses it


@pytest.fixture
def seeded_hub(hub_env, tmp_path, monkeypatch):
    if str(SCRIPTS) not in sys.path:
        monkeypatch.syspath_prepend(str(SCRIPTS))
    from bench_web_seed import seed, write_datasets

    from evaluation.settings import get_settings

    datasets = write_datasets(tmp_path / "datasets", 2, 10)
    monkeypatch.setenv("CHATEVAL_DATASET_DIRS", json.dumps([str(tmp_path / "datasets")]))
    get_settings.cache_clear()
    seeded = seed(argparse.Namespace(systems=8, datasets=2, prompts=10, ratings=300, bootstrap=2), datasets)
    PAGES.clear()
    with TestClient(create_app()) as client:
        yield client, datasets, seeded
    get_settings.cache_clear()


def _as_before(monkeypatch) -> None:
    """The read side as it was before it was made fast: JSON through jsonable_encoder, each experiment's
    publicness decided on its own, every summary's tests computed afresh."""
    monkeypatch.setattr(read_cache, "_json_body", lambda result: JSONResponse(jsonable_encoder(result)).body)

    def one_at_a_time(session, experiments):
        return {e.id for e in experiments if experiment_access.experiment_is_public(session, e)}

    monkeypatch.setattr(experiment_access, "public_experiment_ids", one_at_a_time)
    monkeypatch.setattr(irt_views, "public_experiment_ids", one_at_a_time)
    monkeypatch.setattr(human_summaries, "_summarized", human_summaries._summarized.__wrapped__)
    PAGES.clear()


def test_public_pages_are_the_bytes_they_were_before_they_were_made_fast(seeded_hub, monkeypatch):
    client, datasets, seeded = seeded_hub
    first, experiment = datasets[0], seeded["experiment_id"]
    urls = [
        "/",
        "/api/overview",
        f"/leaderboards/{first}",
        f"/api/leaderboards/{first}",
        f"/api/leaderboards/{first}?sort=bleu-2&order=asc",
        f"/irt/{first}",
        f"/api/irt/{first}",
        "/experiments",
        "/api/experiments",
        f"/experiments/{experiment}",
        f"/api/experiments/{experiment}",
        "/systems/1",
        "/api/systems/1",
        f"/compare/{first}?systems=1,2,3",
        f"/api/compare/{first}?systems=1,2,3",
        "/api/downloads/systems.csv",
    ]
    fast = {url: client.get(url) for url in urls}
    _as_before(monkeypatch)
    for url in urls:
        assert fast[url].status_code == 200, (url, fast[url].text)
        before = client.get(url)
        assert fast[url].content == before.content, url
        assert fast[url].headers["content-type"] == before.headers["content-type"]
    assert len(json.loads(fast["/api/experiments"].content)) == 10  # the seeded experiments are listed
