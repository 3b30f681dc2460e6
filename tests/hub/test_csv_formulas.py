"""CSV downloads are opened in spreadsheets: a text cell that starts like a formula (=, +, -, @, tab, carriage
return; OWASP's list) is written with a leading single quote, so the spreadsheet shows it as text and never runs it.
JSONL keeps every value as it is, numbers stay numbers, and the readers of the downloads (`chateval irt fit`,
scripts/analyze_ratings.py) drop the quote again: the same file in either format gives the same results."""

from __future__ import annotations

import csv
import io
import json

import analyze_ratings
import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from evaluation.csv_cells import neutralise, restore
from evaluation.ratings_files import read_ratings
from hub.models import Score, Submission
from hub.services.accounts.accounts import create_user
from hub.services.publishing import exports
from hub.web.app import create_app
from tests.hub.conftest import submitted_system

FORMULAS = ['=HYPERLINK("http://evil.example","click")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]
NAME = FORMULAS[0]
LINES = ["=cmd|' /C calc'!A0", "+A1", "-A1", "@A1", "'quoted already"]


@pytest.mark.parametrize("text", [*FORMULAS, "'=x", "'", "plain", "", "a=b", "1-2"])
def test_neutralise_then_restore_gives_the_text_back(text):
    written = neutralise(text)
    assert restore(written) == text
    starts_like_formula = text[:1] in ("=", "+", "-", "@", "\t", "\r", "'") and text != ""
    assert written == ("'" + text if starts_like_formula else text)


def _csv(response) -> list[dict[str, str]]:
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.text)))


def _jsonl(response) -> list[dict]:
    assert response.status_code == 200
    return [json.loads(line) for line in response.text.splitlines()[1:]]


@pytest.fixture
def formula_system(hub_env):
    with Session(hub_env) as session:
        owner = create_user(session, email="owner@example.org", password="correct horse battery", display_name="o")
        system = submitted_system(session, NAME, owner.id, True, LINES + ["fine"] * 115)
        system.description = "@SUM(A1:A9)"
        session.add(system)
        submission = session.query(Submission).filter(Submission.system_id == system.id).one()
        session.add(
            Score(
                submission_id=submission.id,
                metric="loss",
                version="1",
                signature="-loss|v1",
                corpus=-0.5,
                per_prompt=[-0.5, 1.0],
            )
        )
        session.commit()
        return system.id


def test_csv_cells_that_start_like_formulas_are_quoted_and_jsonl_is_not(formula_system):
    with TestClient(create_app()) as client:
        systems = _csv(client.get("/api/downloads/systems.csv"))
        assert [(s["name"], s["description"]) for s in systems] == [("'" + NAME, "'@SUM(A1:A9)")]
        raw = _jsonl(client.get("/api/downloads/systems.jsonl"))
        assert [(s["name"], s["description"]) for s in raw] == [(NAME, "@SUM(A1:A9)")]

        responses = _csv(client.get("/api/downloads/responses.csv"))
        assert [r["response"] for r in responses[:6]] == ["'" + line for line in LINES] + ["fine"]
        assert [r["response"] for r in _jsonl(client.get("/api/downloads/responses.jsonl"))][:5] == LINES

        (score,) = _csv(client.get("/api/downloads/scores.csv"))
        assert score["corpus"] == "-0.5" and score["signature"] == "'-loss|v1"  # a number stays a number
        assert json.loads(score["per_prompt"]) == [-0.5, 1.0]


def _ratings_rows() -> list[dict]:
    """Ratings rows whose names, prompt ids and reasons start like formulas, with every field of the download."""
    from test_analyze_ratings_script import make_ratings

    rows = []
    for rating in (r for r in make_ratings() if r["experiment_id"] == 7):  # one comparison, as the script wants
        row = {name: rating.get(name) for name in exports.FIELDS["ratings"]}
        row.update(
            system_a="=" + rating["system_a"],
            system_b="-" + rating["system_b"],
            system_a_id=rating["experiment_id"] * 10 + 1,
            system_b_id=rating["experiment_id"] * 10 + 2,
            prompt_id=f"-{rating['prompt_id']}",
            exclusion_reason="@" + rating["exclusion_reason"] if rating["exclusion_reason"] else None,
        )
        rows.append(row)
    return rows


def _write(tmp_path, fmt: str, rows: list[dict]):
    writer = exports.jsonl_chunks if fmt == "jsonl" else exports.csv_chunks
    path = tmp_path / f"ratings.{fmt}"
    path.write_text("".join(writer("ratings", iter(rows))), encoding="utf-8", newline="")
    return path


def test_the_readers_get_the_same_values_from_csv_and_jsonl(tmp_path):
    rows = _ratings_rows()
    as_csv, as_jsonl = _write(tmp_path, "csv", rows), _write(tmp_path, "jsonl", rows)
    assert "'=Cakechat" in as_csv.read_text() and "'-NCM" in as_csv.read_text()  # quoted in the file

    from_csv, from_jsonl = read_ratings(as_csv), read_ratings(as_jsonl)
    assert from_csv.prompts == from_jsonl.prompts and "-3" in from_csv.prompts
    assert from_csv.system_names == from_jsonl.system_names and "=Cakechat" in from_csv.system_names
    for column in ("system_a", "system_b", "prompt", "rater", "outcome", "excluded"):
        assert np.array_equal(getattr(from_csv, column), getattr(from_jsonl, column)), column

    csv_report = analyze_ratings.analyze(analyze_ratings.read_ratings(as_csv))
    jsonl_report = analyze_ratings.analyze(analyze_ratings.read_ratings(as_jsonl))
    assert analyze_ratings.render(csv_report) == analyze_ratings.render(jsonl_report)
    assert "=Cakechat" in analyze_ratings.render(csv_report)
    reasons = {r.fields["exclusion_reason"] for r in analyze_ratings.read_ratings(as_csv)}
    assert reasons == {None, "@flagged: too fast"}
