"""A rule-based judge behind the real local endpoint server, and what it must have answered, computed on its own.

Pairwise: the response with more whitespace words wins (ties when equal), so both orders agree. Rubric: every
criterion gets grade 1 + words // 4 (at most 5) with an explanation naming the word count, so a grading-scale
rubric's score is grade / 5."""

from __future__ import annotations

import json
import random
import time
from typing import Any

from sqlmodel import Session, select

from evaluation.llm.config import EndpointConfig
from hub.models import ItemKind, User
from hub.services.human import assignments, experiments, raters
from hub.storage import get_storage

SECRET = "sk-judge-SECRET-0123456789abcdef"
KEY_ENV = "HUB_TEST_JUDGE_KEY"
HUMAN_PROMPTS = 20
HUMAN_PREFERS_A = 0.65
SUBJECTS = "Review subjects (JSON; the field names are the ones used above):\n"


def words(text: str) -> int:
    return len(text.split())


def grade_of(response: str) -> int:
    return min(5, 1 + words(response) // 4)


def explanation_of(response: str) -> str:
    return f"EXPLAINED: {words(response)} words"


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def judge_responder(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    if "[Response A]" in text:
        a = words(_between(text, "[Response A]\n", "\n[End of Response A]"))
        b = words(_between(text, "[Response B]\n", "\n[End of Response B]"))
        verdict = "[[A]]" if a > b else "[[B]]" if b > a else "[[tie]]"
        return f"Compared by length.\n{verdict}"
    subjects = json.loads(_between(text, SUBJECTS, "\n\nAfter your assessment"))
    response = subjects["response"]
    return json.dumps({"grade": str(grade_of(response)), "explanation": explanation_of(response)})


def expected_win_rate(mine: list[str], others: list[list[str]]) -> float:
    """The share of pairs the length judge gives to `mine` (ties, identical responses included, count half)."""
    values = []
    for other in others:
        for a, b in zip(mine, other, strict=True):
            if " ".join(a.split()) == " ".join(b.split()):
                values.append(0.5)
            else:
                values.append(1.0 if words(a) > words(b) else 0.0 if words(b) > words(a) else 0.5)
    return sum(values) / len(values)


def rate_experiment(session: Session, dataset: str, a_id: int, b_id: int, prompt_ids: list[str], seed: int) -> int:
    """A launched hub experiment of a vs b on `prompt_ids`, 3 raters answering every item at random (A with
    probability 0.65, seeded; attention checks as expected), each rater then included by the admin."""
    admin = session.exec(select(User).where(User.is_admin)).first()
    form = experiments.ExperimentForm(
        dataset=dataset, system_a_id=a_id, system_b_id=b_id, prompt_ids=prompt_ids, raters_per_prompt=3, seed=seed
    )
    experiment = experiments.create_experiment(session, admin, form, get_storage())
    experiment = experiments.launch(session, admin, experiment.id)
    judged, rng = 0, random.Random(seed)
    for r in range(3):
        rater = raters.rater_for(session, "hub", f"judging-{seed}-rater-{r}")
        while (assignment := assignments.claim_task(session, experiment, rater)) is not None:
            choices = {}
            for item in assignments.task_items(session, assignment.task_id):
                outcome = item.expected or ("A" if rng.random() < HUMAN_PREFERS_A else "B")
                left = "A" if item.left_is_a else "B"
                choices[item.id] = "left" if outcome == left else "right"
                judged += item.kind == ItemKind.pair
            assignments.submit(session, assignment, choices)
        raters.set_excluded(session, admin, rater.id, excluded=False)
    return judged


def wait_for(client, url: str, headers: dict, done, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    body: dict = {}
    while time.monotonic() < deadline:
        response = client.get(url, headers=headers)
        if response.status_code == 200:
            body = response.json()
            if done(body):
                return body
        time.sleep(0.2)
    raise AssertionError(f"{url} never got there: {body}")


def judged_hub(client, engine, tokens: dict[str, str], baselines: dict[str, int], base_url: str) -> dict[str, Any]:
    """Through the API: register the local judge, attach it, the helpfulness rubric and is-question to hub-open-v1;
    submit and approve a public system answering with the first references; wait for its judging run; then seed
    human ratings of it against both baselines on 20 prompts. Returns the ids and the run."""
    from evaluation.dataset import load_dataset
    from evaluation.rubrics import shipped_rubrics
    from tests.hub.conftest import DATASET, auth, post

    admin = auth(tokens["admin"])
    judge = client.post(
        "/api/admin/judges",
        headers=admin,
        json={"name": "local-length", "base_url": base_url, "model": "rule-judge", "key_ref": KEY_ENV},
    )
    assert judge.status_code == 201, judge.text
    judge_id = judge.json()["id"]
    for body in (
        {"kind": "judge", "judge_id": judge_id},
        {"kind": "rubric", "judge_id": judge_id, "rubric_yaml": shipped_rubrics()["helpfulness"].read_text()},
        {"kind": "function_metric", "metric": "is-question"},
    ):
        attached = client.post(f"/api/admin/datasets/{DATASET}/judging", headers=admin, json=body)
        assert attached.status_code == 201, attached.text
    [submission] = post(client, tokens["owner"], {"is_public": "true", "name": "Long bot"}).json()
    assert client.post(f"/api/admin/submissions/{submission['id']}/approve", headers=admin).status_code == 200
    run = wait_for(
        client,
        f"/api/admin/submissions/{submission['id']}/judging",
        admin,
        lambda body: body["status"] in ("done", "failed"),
    )
    system_id = submission["system"]["id"]
    prompts = load_dataset(DATASET).prompt_ids[:HUMAN_PROMPTS]
    with Session(engine) as session:
        rate_experiment(session, DATASET, system_id, baselines["echo"], prompts, seed=1)
        rate_experiment(session, DATASET, system_id, baselines["retrieval"], prompts, seed=2)
    return {"judge_id": judge_id, "submission_id": submission["id"], "system_id": system_id, "run": run}


def fast_retries(config: EndpointConfig) -> EndpointConfig:
    """The judge's endpoint with waits of milliseconds between its retries (every retry is still made): a test of an
    endpoint that is down otherwise waits out the full backoff, up to 30 s."""
    return config.model_copy(update={"backoff_base_s": 0.01, "backoff_max_s": 0.05})
