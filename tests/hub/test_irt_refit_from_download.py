"""The README's promise, tried as a new user would on the real ChatEval votes: import them with the CLI, refit with
the CLI, download `ratings.jsonl` over HTTP, and fit it offline with `chateval irt fit` (the published anchor and
seed): every published number comes back exactly (abilities, bootstrap and rank intervals, tiers, every pairwise test,
the experiments' tests, the tie threshold and the signature), not only the abilities."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from sqlmodel import Session

from hub.services.statistics import irt_fits
from hub.web.app import create_app

BOOTSTRAP = 60  # the same on both sides; the published default is 200, the order effect shows with any count
DATASET = "ncm"


def _without_run_facts(report: dict) -> dict:
    """The report less what describes one run rather than the method (when it ran and how long it took)."""
    from evaluation.irt.result import UNSIGNED

    return {
        **report,
        "signature": {key: value for key, value in report["signature"].items() if key not in UNSIGNED},
    }


def test_the_offline_refit_of_the_ratings_download_reproduces_every_published_number(
    hub_env, shared_data, tmp_path, run_cli
):
    imported = run_cli(
        "ratings", "import-chateval", "--votes", shared_data / "votes.csv", "--prompts-dir", shared_data / "prompts"
    )
    assert imported.exit_code == 0, imported.stderr
    refitted = run_cli("ratings", "refit-irt", "--dataset", DATASET, "--bootstrap", BOOTSTRAP)
    assert refitted.exit_code == 0 and "published" in refitted.stdout, refitted.stderr
    with TestClient(create_app()) as client:
        published = client.get(f"/api/irt/{DATASET}").json()["fit"]
        download = client.get("/api/downloads/ratings.jsonl")
        assert download.status_code == 200
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text(download.text, encoding="utf-8")
    out = tmp_path / "offline.json"
    offline_run = run_cli(
        "irt", "fit", "--ratings", ratings, "--dataset", DATASET, "--anchor", published["anchor_id"],
        "--seed", published["signature"]["bootstrap_seed"], "--bootstrap", published["signature"]["bootstrap"],
        "--out", out, "--no-progress",
    )  # fmt: skip
    assert offline_run.exit_code == 0, offline_run.stderr
    offline = json.loads(out.read_text())
    with Session(hub_env) as session:
        stored = irt_fits.latest_fit(session, DATASET).report

    assert offline["signature_text"] == stored["signature_text"] == published["signature_text"]
    assert _without_run_facts(offline) == _without_run_facts(stored)  # every number, every pair, every experiment
    # What the page shows is that report, row for row.
    assert [
        (row["system_id"], row["ability"], row["interval"], row["rank_interval"], row["tier"])
        for row in published["systems"]
    ] == [
        (row["system_id"], row["ability"], row["interval"], row["rank_interval"], row["tier"])
        for row in offline["systems"]
    ]
    page_only = ("better", "better_id", "better_label", "system_a_label", "system_b_label")  # added by the page
    assert [{k: v for k, v in p.items() if k not in page_only} for p in published["pairs"]] == offline["pairs"]
    assert len(offline["systems"]) == 10 and len(offline["pairs"]) == 45 and offline["n_auto_ties"] > 0
