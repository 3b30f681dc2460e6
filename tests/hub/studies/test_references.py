"""A study's accepted post-edits become a reference dataset (context: the conversation so far; reference: the edited
reply) that the toolkit loads and scores: downloaded over the API (prompts + manifest make a dataset folder) or
written by `chateval study references` into the datasets folder, where the hub finds it by name. BLEU-2 over it
gives the hand-computed value."""

from __future__ import annotations

import math

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from evaluation.dataset import load_dataset, load_dataset_dir
from evaluation.evaluate import evaluate
from hub.models import ChatMessage
from hub.services.platform.datasets import installed_dataset
from hub.web.app import create_app
from tests.hub.conftest import auth
from tests.hub.studies.study_rows import seed_study

SEINE = "The capital of France is Paris, on the Seine."


@pytest.fixture
def seeded(hub_env, admin_user):
    """The seeded study plus two more accepted edits: of a8 (deeper in conversation 1, so its context runs through
    the accepted edit a4) and of a10 (conversation 2)."""
    seeded = seed_study(hub_env, admin_user)
    with Session(hub_env) as session:
        m = seeded.m
        for original, parent, text in [("a8", "u7", "You are very welcome."), ("a10", "u9", "Hello! How can I help?")]:
            chat_id = session.get(ChatMessage, m[original]).chat_id
            session.add(
                ChatMessage(
                    chat_id=chat_id,
                    parent_id=m[parent],
                    role="assistant",
                    content=text,
                    edit_of_id=m[original],
                    depth=3,
                )
            )
        session.commit()
    return seeded


def _expected_prompts(seeded):
    m, study = seeded.m, seeded.study_id
    return [
        (f"study-{study}-message-{m['a4']}", [("user", "What is the capital of France?")], SEINE),
        (
            f"study-{study}-message-{m['a12'] + 1}",
            [("user", "What is the capital of France?"), ("assistant", SEINE), ("user", "Thanks!")],
            "You are very welcome.",
        ),
        (f"study-{study}-message-{m['a12'] + 2}", [("user", "Hi")], "Hello! How can I help?"),
    ]


def _as_tuples(dataset):
    return [(p.id, [(t.role, t.content) for t in p.context], p.references[0]) for p in dataset.prompts]


def test_the_api_download_is_a_dataset_folder_the_toolkit_loads(seeded, people, tmp_path):
    folder = tmp_path / "references"
    folder.mkdir()
    with TestClient(create_app()) as client:
        prompts = client.get(f"/api/studies/{seeded.study_id}/references", headers=auth(people["admin"]))
        manifest = client.get(f"/api/studies/{seeded.study_id}/references/manifest.json", headers=auth(people["admin"]))
    assert prompts.status_code == manifest.status_code == 200
    (folder / "prompts.jsonl").write_bytes(prompts.content)
    (folder / "manifest.json").write_bytes(manifest.content)
    dataset = load_dataset_dir(folder)  # checks the manifest's sha256 of the prompts
    # Only the last edit of a chain counts (a4, not a2 or a3); the admin's test chat and error replies are left out.
    assert _as_tuples(dataset) == _expected_prompts(seeded)
    assert dataset.manifest.name == f"study-{seeded.study_id}-post-edits"


def test_a_study_without_accepted_edits_has_no_reference_dataset(hub_env, admin_user, people):
    seeded = seed_study(hub_env, admin_user)
    with Session(hub_env) as session:  # drop the edits
        for name in ("a3", "a4"):
            message = session.get(ChatMessage, seeded.m[name])
            message.edit_of_id = None
            session.add(message)
        session.commit()
    with TestClient(create_app()) as client:
        response = client.get(f"/api/studies/{seeded.study_id}/references", headers=auth(people["admin"]))
    assert response.status_code == 404 and "no accepted post-edits" in response.json()["error"]


def test_the_cli_installs_the_dataset_and_bleu_2_scores_it(seeded, run_cli):
    result = run_cli("study", "references", str(seeded.study_id))
    assert result.exit_code == 0, result.stderr
    name = f"study-{seeded.study_id}-post-edits"
    assert "3 prompt(s) written" in result.stdout
    dataset = load_dataset(name)  # installed in the datasets folder: the toolkit and the hub find it by name
    assert installed_dataset(name).fingerprint == dataset.fingerprint
    assert _as_tuples(dataset) == _expected_prompts(seeded)
    # The system's original reply against the edit, then two exact matches. 13a tokens of the first:
    # hypothesis "The capital of France is Paris ." (7), reference "The capital of France is Paris , on the Seine ."
    # (11): unigram precision 7/7, bigram 5/6 ("Paris ." is not in the reference), brevity penalty exp(1 - 11/7).
    first = 100 * math.exp(1 - 11 / 7) * math.sqrt(1.0 * 5 / 6)
    responses = ["The capital of France is Paris.", "You are very welcome.", "Hello! How can I help?"]
    report = evaluate(dataset, responses, metrics=["bleu-2"])
    [outcome] = report.outcomes
    assert outcome.result.per_prompt == pytest.approx([first, 100.0, 100.0], abs=1e-6)
    assert outcome.result.corpus == pytest.approx((first + 200.0) / 3, abs=1e-6)
    assert run_cli("study", "references", str(seeded.study_id)).exit_code != 0  # never overwrites a dataset
