"""The overview counts what the leaderboards list, though it no longer builds them: per dataset its entries are the
leaderboard's rows, its system count the systems of all of them, its latest entries the newest scored rows as the
leaderboard shows them, and its statistics the published fits' (each fit read once per build)."""

from __future__ import annotations

from hub.services.publishing.leaderboard import LATEST_ON_OVERVIEW
from tests.hub.read_side.test_cached_bytes import seeded_hub  # noqa: F401  (the fixture)

SCORED_ROW_KEYS = (
    "submission_id",
    "system_id",
    "system_name",
    "is_baseline",
    "is_public",
    "status",
    "dataset_fingerprint",
    "scores",
)


def test_overview_is_what_the_leaderboards_and_fits_show(seeded_hub):  # noqa: F811
    client, datasets, _ = seeded_hub
    overview = client.get("/api/overview").json()
    names = [d["name"] for d in overview["datasets"]]
    assert set(datasets) <= set(names)  # the seeded ones and the hub's own
    boards = {name: client.get(f"/api/leaderboards/{name}").json() for name in names}
    for dataset in overview["datasets"]:
        assert dataset["entries"] == len(boards[dataset["name"]]["rows"])
        assert dataset["entries"] > 0 or dataset["name"] not in datasets
    assert overview["system_count"] == len({row["system_id"] for board in boards.values() for row in board["rows"]})
    scored = [
        {**{key: row[key] for key in SCORED_ROW_KEYS}, "dataset": name}
        for name, board in boards.items()
        for row in board["rows"]
        if row["submission_id"] is not None
    ]
    scored.sort(key=lambda row: -row["submission_id"])
    assert len(scored) > LATEST_ON_OVERVIEW
    assert overview["latest"] == scored[:LATEST_ON_OVERVIEW]
    assert overview["statistics"]
    for entry in overview["statistics"]:
        fit = client.get(f"/api/irt/{entry['dataset']}").json()["fit"]
        assert (entry["n_judgements"], entry["systems"]) == (fit["n_judgements"], len(fit["systems"]))
        assert (entry["top_system_id"], entry["fitted_at"]) == (fit["systems"][0]["system_id"], fit["fitted_at"])
