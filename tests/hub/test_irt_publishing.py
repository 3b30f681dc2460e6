"""Published IRT fits: the refit job stores a fit only when the public judgements changed; the statistics page, the
leaderboard column, the profile's significant results, prompt pages and the IRT downloads show it; a private system
never appears; and the published abilities are refitted exactly from the public ratings download by the CLI.

Judgements are drawn from the model itself with known abilities (strong > retrieval > echo), so the significant
differences the pages must report are known in advance."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, func, select

from evaluation.dataset import load_dataset
from hub import db
from hub.migrate import upgrade
from hub.models import Experiment, ExperimentItem, IrtFit, ItemKind, System, User
from hub.services.accounts.accounts import create_token, create_user
from hub.services.human import assignments, experiments, human_pipeline, raters
from hub.services.statistics import irt_fits, irt_views
from hub.services.submissions.demo import seed_baselines
from hub.storage import get_storage
from hub.web.app import create_app
from tests.hub.conftest import DATASET, _clear_caches, auth, submitted_system

HTML = {"Accept": "text/html"}
TRUTH = {"Strong bot": 1.6, "retrieval": 0.0, "echo": -1.2, "Hidden bot": 3.0}
TAU = 0.6
PROMPTS = 40
RATERS = 3
BOOTSTRAP = 60
PRIVATE = "Hidden bot"
SIDE = {"A": ("left", "right"), "B": ("right", "left")}


def _sigmoid(x: float) -> float:
    return 1 / (1 + np.exp(-x))


def _draw(rng: np.random.Generator, ability_a: float, ability_b: float) -> str:
    gap = ability_a - ability_b
    p_a, p_b = _sigmoid(gap - TAU), _sigmoid(-gap - TAU)
    return str(rng.choice(["A", "B", "tie"], p=[p_a, p_b, 1 - p_a - p_b]))


def _rate_all(session: Session, experiment: Experiment, names: tuple[str, str], rng, prefix: str) -> int:
    """Three hub raters take every task and answer from the model; attention checks get their expected answer. An
    admin then reviews each rater and counts them (the screening may flag raters who answer in no time, and a flagged
    rater's judgements wait for that decision)."""
    admin = session.exec(select(User).where(User.is_admin)).first()
    judged = 0
    for r in range(RATERS):
        rater = raters.rater_for(session, "hub", f"{prefix}-rater-{r}")
        while (assignment := assignments.claim_task(session, experiment, rater)) is not None:
            choices = {}
            for item in assignments.task_items(session, assignment.task_id):
                outcome = item.expected or _draw(rng, TRUTH[names[0]], TRUTH[names[1]])
                choices[item.id] = "tie" if outcome == "tie" else SIDE[outcome][0 if item.left_is_a else 1]
                judged += item.kind == ItemKind.pair
            assignments.submit(session, assignment, choices)
        raters.set_excluded(session, admin, rater.id, excluded=False)
    return judged


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HUB_DATA_DIR", str(tmp_path_factory.mktemp("irt-pages") / "hub-data"))
        for name in ("HUB_DATABASE_URL", "HUB_STORAGE_URL", "HUB_QUEUE_URL"):
            patch.delenv(name, raising=False)
        _clear_caches()
        upgrade()
        engine = db.get_engine()
        seed_baselines(engine, get_storage(), names=["echo", "retrieval"])
        dataset = load_dataset(DATASET)
        rng = np.random.default_rng(2019)
        with Session(engine) as session:
            admin = create_user(session, email="admin@example.org", password="x" * 12, display_name="a", is_admin=True)
            owner = create_user(session, email="owner@example.org", password="x" * 12, display_name="o")
            tokens = {
                "admin": create_token(session, admin, name="cli")[1],
                "owner": create_token(session, owner, name="cli")[1],
            }
            systems = {s.name: s for s in session.exec(select(System))}
            references = [p.references[0] for p in dataset.prompts]
            systems["Strong bot"] = submitted_system(session, "Strong bot", owner.id, True, references)
            systems[PRIVATE] = submitted_system(
                session, PRIVATE, owner.id, False, [p.references[1] for p in dataset.prompts]
            )
            admin = session.get(User, admin.id)
            pairs = [("Strong bot", "echo"), ("Strong bot", "retrieval"), ("retrieval", "echo"), (PRIVATE, "echo")]
            judged = 0
            for index, (a, b) in enumerate(pairs):
                form = experiments.ExperimentForm(
                    dataset=DATASET,
                    system_a_id=systems[a].id,
                    system_b_id=systems[b].id,
                    prompt_ids=dataset.prompt_ids[:PROMPTS],
                    raters_per_prompt=RATERS,
                    seed=index,
                )
                experiment = experiments.create_experiment(session, admin, form, get_storage())
                experiment = experiments.launch(session, admin, experiment.id)
                count = _rate_all(session, experiment, (a, b), rng, f"e{index}")
                judged += count if PRIVATE not in (a, b) else 0
            ids = {name: s.id for name, s in systems.items()}
        fit_id = irt_fits.refit(engine, DATASET, bootstrap=BOOTSTRAP)
        with TestClient(create_app()) as client:
            yield {"client": client, "engine": engine, "ids": ids, "fit_id": fit_id, "judged": judged, "tokens": tokens}
        engine.dispose()
        _clear_caches()


def _api(site, url: str) -> dict:
    response = site["client"].get(url)
    assert response.status_code == 200, response.text
    return response.json()


def _page(site, url: str) -> str:
    response = site["client"].get(url, headers=HTML)
    assert response.status_code == 200, response.text
    return response.text


def test_the_fit_is_stored_once_and_refitted_only_when_judgements_change(site):
    engine = site["engine"]
    assert site["fit_id"] is not None
    assert irt_fits.refit(engine, DATASET, bootstrap=BOOTSTRAP) is None  # nothing changed: no new fit
    with Session(engine) as session:
        fit = session.get(IrtFit, site["fit_id"])
        assert fit.n_judgements == site["judged"]  # the private system's experiment is not public: not fitted
        assert fit.signature["bootstrap"] == BOOTSTRAP and fit.signature["bootstrap_seed"] == irt_fits.SEED
        assert session.exec(select(func.count()).select_from(IrtFit)).one() == 1


def test_the_statistics_page_ranks_the_systems_as_simulated_and_names_the_real_differences(site):
    fit = _api(site, f"/api/irt/{DATASET}")["fit"]
    ranked = [row["system"] for row in fit["systems"]]
    assert ranked == ["Strong bot", "retrieval", "echo"]
    assert fit["anchor"] == "echo" and next(r for r in fit["systems"] if r["anchor"])["ability"] == 0
    better = {(p["system_a"], p["system_b"]): p["better"] for p in fit["pairs"]}
    assert better[("Strong bot", "echo")] == "Strong bot" or better[("echo", "Strong bot")] == "Strong bot"
    for row in fit["systems"]:
        low, high = row["interval"]
        assert low <= row["ability"] <= high
    assert len(fit["prompts"]) == PROMPTS and fit["signature_text"].count("bootstrap=") == 1
    page = _page(site, f"/irt/{DATASET}")
    for name in ranked:
        assert name in page
    assert "Which prompts discriminate" in page and 'data-chart="chart-irt"' in page
    assert "Strong bot better" in page


def test_the_overview_lists_the_published_statistics(site):
    (entry,) = _api(site, "/api/overview")["statistics"]
    assert entry["dataset"] == DATASET and entry["systems"] == 3 and entry["top_system"] == "Strong bot"
    assert entry["n_judgements"] == site["judged"]
    assert f'href="/irt/{DATASET}"' in _page(site, "/")


def test_a_private_system_appears_nowhere_in_the_published_fit(site):
    texts = [
        site["client"].get("/api/overview").text,
        site["client"].get(f"/api/irt/{DATASET}").text,
        _page(site, f"/irt/{DATASET}"),
        _page(site, f"/leaderboards/{DATASET}"),
        *(site["client"].get(f"/api/downloads/{kind}.csv").text for kind in ("irt_systems", "irt_pairs")),
    ]
    for text in texts:
        assert PRIVATE not in text


def test_the_leaderboard_has_an_irt_column_that_sorts_by_ability(site):
    board = _api(site, f"/api/leaderboards/{DATASET}?sort=irt")
    assert board["irt_column"]["key"] == "irt" and board["order"] == "desc"
    fitted = [row for row in board["rows"] if row["irt"]]
    assert [row["system_name"] for row in fitted] == ["Strong bot", "retrieval", "echo"]
    abilities = {row["system"]: row["ability"] for row in _api(site, f"/api/irt/{DATASET}")["fit"]["systems"]}
    assert all(row["irt"]["ability"] == abilities[row["system_name"]] for row in fitted)
    page = _page(site, f"/leaderboards/{DATASET}?sort=irt")
    assert "IRT ability" in page and f'href="/irt/{DATASET}#irt-system-{site["ids"]["Strong bot"]}"' in page


def test_the_profile_says_which_baselines_the_system_beats_significantly(site):
    profile = _api(site, f"/api/systems/{site['ids']['Strong bot']}")
    (result,) = profile["irt"]
    assert result["dataset"] == DATASET and result["system"]["rank"] == 1
    assert "echo" in result["beats_baselines"]
    verdicts = {c["other"]["system"]: c["verdict"] for c in result["comparisons"]}
    assert verdicts["echo"] == "better"
    page = _page(site, f"/systems/{site['ids']['Strong bot']}")
    assert "Significantly better than the baseline" in page and "Significant differences (IRT)" in page
    echo = _api(site, f"/api/systems/{site['ids']['echo']}")["irt"][0]
    assert {c["other"]["system"]: c["verdict"] for c in echo["comparisons"]}["Strong bot"] == "worse"


def test_prompt_pages_show_the_discrimination_and_its_rank(site):
    fit = _api(site, f"/api/irt/{DATASET}")["fit"]
    top = fit["most_discriminating"][0]["prompt"]
    detail = _api(site, f"/api/datasets/{DATASET}/prompts/{top}")
    assert detail["irt"]["rank"] == 1 and detail["irt"]["of"] == PROMPTS and detail["irt"]["band"] == "high"
    assert detail["context"] and detail["references"]
    page = _page(site, f"/datasets/{DATASET}/prompts/{top}")
    assert f"number 1 of {PROMPTS} prompts" in page
    unrated = load_dataset(DATASET).prompt_ids[-1]  # beyond the rated prompts: shown, with no discrimination
    assert _api(site, f"/api/datasets/{DATASET}/prompts/{unrated}")["irt"] is None
    missing = site["client"].get(f"/api/datasets/{DATASET}/prompts/no-such-prompt")
    assert missing.status_code == 404 and "no prompt 'no-such-prompt'" in missing.json()["error"]
    dataset_page = _page(site, f"/datasets/{DATASET}")
    assert "discrimination " in dataset_page and f"/datasets/{DATASET}/prompts/{top}" in dataset_page


def test_a_dataset_with_no_fit_says_so_and_an_unknown_one_is_404(site):
    assert site["client"].get("/api/irt/no-such-set").status_code == 404
    assert site["client"].get("/irt/no-such-set", headers=HTML).status_code == 404


def test_the_irt_downloads_match_the_published_fit(site):
    fit = _api(site, f"/api/irt/{DATASET}")["fit"]
    systems = list(csv.DictReader(io.StringIO(site["client"].get("/api/downloads/irt_systems.csv").text)))
    assert [(r["system"], float(r["ability"])) for r in systems] == [
        (s["system"], s["ability"]) for s in fit["systems"]
    ]
    assert {r["signature"] for r in systems} == {fit["signature_text"]}
    lines = site["client"].get("/api/downloads/irt_prompts.jsonl").text.splitlines()
    header, rows = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert header["kind"] == "irt_prompts" and len(rows) == PROMPTS
    assert [r["prompt_id"] for r in rows] == [p["prompt"] for p in fit["prompts"]]
    pairs = list(csv.DictReader(io.StringIO(site["client"].get("/api/downloads/irt_pairs.csv").text)))
    assert len(pairs) == 3  # strong, retrieval, echo: every pair once


def test_the_cli_refits_the_published_numbers_from_the_ratings_download(site, tmp_path, run_cli):
    fit = _api(site, f"/api/irt/{DATASET}")["fit"]
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text(site["client"].get("/api/downloads/ratings.jsonl").text, encoding="utf-8")
    out = tmp_path / "refit.json"
    result = run_cli(
        "irt", "fit", "--ratings", ratings, "--dataset", DATASET, "--anchor", fit["anchor"],
        "--bootstrap", BOOTSTRAP, "--out", out, "--no-progress",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    refit = json.loads(out.read_text())
    published = {row["system"]: row for row in fit["systems"]}
    for row in refit["systems"]:
        assert row["ability"] == pytest.approx(published[row["system"]]["ability"], abs=1e-6)
        assert row["interval"] == pytest.approx(published[row["system"]]["interval"], abs=1e-6)
    assert [p["prompt"] for p in refit["prompts"]] == [p["prompt"] for p in fit["prompts"]]


def _fisher_information(discrimination: float, gap: float, tau: float, step: float = 1e-5) -> float:
    """sum over outcomes of (dP/dgap)^2 / P, by central differences: independent of the closed form under test."""

    def probabilities(d: float) -> np.ndarray:
        p_a, p_b = _sigmoid(discrimination * d - tau), _sigmoid(-discrimination * d - tau)
        return np.array([p_a, p_b, 1 - p_a - p_b])

    slope = (probabilities(gap + step) - probabilities(gap - step)) / (2 * step)
    return float(np.sum(slope**2 / probabilities(gap)))


def test_admins_plan_an_experiment_on_the_most_informative_prompts(site):
    client, ids = site["client"], site["ids"]
    url = f"/api/experiments/plan?dataset={DATASET}&system_a={ids['Strong bot']}&system_b={ids['retrieval']}"
    assert client.get(url).status_code == 401
    assert client.get(url, headers=auth(site["tokens"]["owner"])).status_code == 403
    plan = client.get(url, headers=auth(site["tokens"]["admin"])).json()
    fit = _api(site, f"/api/irt/{DATASET}")["fit"]
    abilities = {row["system"]: row["ability"] for row in fit["systems"]}
    assert (
        plan["gap"] == pytest.approx(abilities["Strong bot"] - abilities["retrieval"])
        and plan["fit_id"] == site["fit_id"]
    )
    rows = plan["prompts"]
    assert len(rows) == len(load_dataset(DATASET)) and sum(row["fitted"] for row in rows) == PROMPTS
    assert [row["information"] for row in rows] == sorted((row["information"] for row in rows), reverse=True)
    for row in rows[:3] + rows[-3:]:
        expected = _fisher_information(row["discrimination"], plan["gap"], plan["tau"])
        assert row["information"] == pytest.approx(expected, rel=1e-5)
    assert all(row["discrimination"] == 1.0 for row in rows if not row["fitted"])

    form = {"dataset": DATASET, "system_a_id": ids["Strong bot"], "system_b_id": ids["retrieval"], "seed": 3}
    created = client.post(
        "/api/experiments", json={**form, "most_informative": 5}, headers=auth(site["tokens"]["admin"])
    )
    assert created.status_code == 201, created.text
    with Session(site["engine"]) as session:
        experiment = session.get(Experiment, created.json()["experiment"]["id"])
        assert experiment.prompt_ids == [row["prompt_id"] for row in rows[:5]]
        assert experiment.settings["prompt_selection"]["method"] == "expected-information"
        assert experiment.settings["prompt_selection"]["fit_id"] == site["fit_id"]
    both = client.post(
        "/api/experiments",
        json={**form, "most_informative": 5, "prompt_ids": ["hov1-001"]},
        headers=auth(site["tokens"]["admin"]),
    )
    assert both.status_code == 422 and "not both" in both.text


def test_closing_an_experiment_refits_the_dataset_in_the_job_queue(hub_env, admin_user, baselines):
    import time

    from hub.jobs import start_embedded_consumer
    from tests.hub.conftest import new_experiment

    experiment = new_experiment(hub_env, admin_user, baselines, prompt_ids=load_dataset(DATASET).prompt_ids[:20])
    with Session(hub_env) as session:
        experiment = session.get(Experiment, experiment.id)
        judged = _rate_all(session, experiment, ("echo", "retrieval"), np.random.default_rng(5), "job")
        assert judged >= irt_fits.MIN_JUDGEMENTS
        human_pipeline.close(session, session.get(User, admin_user.id), experiment.id)
    consumer = start_embedded_consumer(periodic=False)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with Session(hub_env) as session:
                fit = irt_fits.latest_fit(session, DATASET)
            if fit is not None:
                break
            time.sleep(0.2)
    finally:
        consumer.stop(graceful=True)
    assert fit is not None and fit.n_judgements == judged
    assert {row["system"] for row in fit.report["systems"]} == {"echo", "retrieval"}


def test_an_adaptive_experiment_releases_the_most_informative_prompts_first(site):
    client, ids, admin = site["client"], site["ids"], auth(site["tokens"]["admin"])
    plan = client.get(
        f"/api/experiments/plan?dataset={DATASET}&system_a={ids['Strong bot']}&system_b={ids['echo']}", headers=admin
    ).json()
    form = {
        "dataset": DATASET,
        "system_a_id": ids["Strong bot"],
        "system_b_id": ids["echo"],
        "prompt_ids": load_dataset(DATASET).prompt_ids[:30],
        "prompts_per_task": 5,
        "adaptive": {"round_tasks": 1},
        "seed": 9,
    }
    created = client.post("/api/experiments", json=form, headers=admin)
    assert created.status_code == 201, created.text
    with Session(site["engine"]) as session:
        experiment = session.get(Experiment, created.json()["experiment"]["id"])
        assert experiment.settings["adaptive"]["order"] == f"expected information first (IRT fit #{site['fit_id']})"
        shown = {
            i.prompt_id: i.task_id
            for i in session.exec(select(ExperimentItem))
            if i.experiment_id == experiment.id and i.kind == ItemKind.pair
        }
        first_task = min(shown.values())
    ranked = [row["prompt_id"] for row in plan["prompts"] if row["prompt_id"] in shown]
    assert {pid for pid, task in shown.items() if task == first_task} == set(ranked[:5])


def test_a_fit_is_withdrawn_when_too_few_public_judgements_are_left(hub_env, admin_user, baselines, run_cli):
    from tests.hub.conftest import new_experiment

    experiment = new_experiment(hub_env, admin_user, baselines, prompt_ids=load_dataset(DATASET).prompt_ids[:20])
    with Session(hub_env) as session:
        experiment = session.get(Experiment, experiment.id)
        _rate_all(session, experiment, ("echo", "retrieval"), np.random.default_rng(7), "w")
    assert irt_fits.refit(hub_env, DATASET, bootstrap=20) is not None
    with Session(hub_env) as session:
        assert irt_views.published_fit(session, DATASET) is not None
        echo = session.get(System, baselines["echo"])
        echo.is_baseline = echo.is_public = False  # withdrawn: its experiment is no longer public
        session.add(echo)
        session.commit()
    superseding = irt_fits.refit(hub_env, DATASET, bootstrap=20)
    with Session(hub_env) as session:
        assert session.get(IrtFit, superseding).report == {}
        assert irt_views.published_fit(session, DATASET) is None
    assert irt_fits.refit(hub_env, DATASET, bootstrap=20) is None  # nothing changed since
    unknown = run_cli("ratings", "refit-irt", "--dataset", "no-such-set")
    assert unknown.exit_code == 3 and "no experiment on dataset 'no-such-set'" in unknown.stderr


def test_most_informative_needs_a_fit_and_two_different_systems(hub_env, admin_user, baselines):
    from hub.errors import UnprocessableInput
    from hub.services.statistics import irt_plan

    form = {"dataset": DATASET, "system_a_id": baselines["echo"], "system_b_id": baselines["retrieval"]}
    with Session(hub_env) as session:
        admin = session.get(User, admin_user.id)
        with pytest.raises(UnprocessableInput, match="has no IRT fit yet"):
            experiments.create_experiment(
                session, admin, experiments.ExperimentForm(**form, most_informative=5), get_storage()
            )
        with pytest.raises(UnprocessableInput, match="system A and system B must differ"):
            irt_plan.plan(session, DATASET, baselines["echo"], baselines["echo"])
