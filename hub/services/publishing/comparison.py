"""Responses side by side: a dataset's prompts with the chosen systems' responses (the comparison page), and one
prompt with every public system's response to it (the prompt page)."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, select

from evaluation.dataset import Dataset
from hub.errors import HubError
from hub.models import Submission, System, User
from hub.services.platform.datasets import installed_dataset
from hub.services.platform.pagination import PageRequest, paginate
from hub.services.publishing.leaderboard import dataset_json, visible_system
from hub.services.statistics import irt_views
from hub.services.submissions.results import RESULT_STATUSES, read_responses
from hub.services.submissions.submissions import can_view
from hub.storage import Storage


def _compared(
    session: Session, storage: Storage, dataset: Dataset, system_id: int, viewer: User | None
) -> tuple[dict[str, Any], list[str] | None]:
    system, submissions = visible_system(session, system_id, viewer)
    scored = [
        s
        for s in submissions
        if s.dataset_name == dataset.name
        and s.status in RESULT_STATUSES
        and s.dataset_fingerprint == dataset.fingerprint  # responses to an older release would be misaligned
    ]
    chosen = scored[-1] if scored else None
    header = {
        "id": system.id,
        "name": system.name,
        "is_baseline": system.is_baseline,
        "is_public": chosen is not None and can_view(chosen, system, None),
        "submission_id": chosen.id if chosen else None,
    }
    return header, read_responses(storage, chosen, dataset) if chosen else None


def _matches(needle: str, texts: list[str | None]) -> bool:
    return any(text is not None and needle in text.casefold() for text in texts)


def compare(
    session: Session,
    storage: Storage,
    dataset_name: str,
    system_ids: list[int],
    viewer: User | None,
    *,
    q: str | None = None,
    page: PageRequest | None = None,
) -> dict[str, Any]:
    """One page of a dataset's prompts with each chosen system's response (None where it has no scored submission);
    `q` keeps the prompts whose context or shown responses contain it, ignoring case. `matched` counts them all."""
    dataset = installed_dataset(dataset_name)
    compared = [_compared(session, storage, dataset, system_id, viewer) for system_id in system_ids]
    needle = (q or "").strip().casefold()

    def responses_to(index: int) -> list[str | None]:
        return [lines[index] if lines is not None else None for _, lines in compared]

    matched = [
        index
        for index, prompt in enumerate(dataset.prompts)
        if not needle or _matches(needle, [t.content for t in prompt.context] + responses_to(index))
    ]
    pagination = paginate(len(matched), page)
    prompts = []
    for index in matched[pagination.start : pagination.stop]:
        prompt, responses = dataset.prompts[index], responses_to(index)
        prompts.append(
            {
                "id": prompt.id,
                "context": [t.model_dump() for t in prompt.context],
                "references": list(prompt.references),
                "responses": responses,
            }
        )
    return {
        "dataset": dataset_json(dataset),
        "q": q or None,
        "systems": [header for header, _ in compared],
        "matched": len(matched),
        "prompts": prompts,
        "pagination": pagination,
    }


def prompt_responses(session: Session, storage: Storage, dataset_name: str, prompt_id: str) -> list[dict[str, Any]]:
    """Every public system's response to one prompt, from its newest public scored submission made against the
    installed release (private and withdrawn submissions never), in system-name order; [] for a prompt that is not
    in the installed release."""
    try:
        dataset = installed_dataset(dataset_name)
    except HubError:
        return []
    index = dataset.index_of.get(prompt_id)
    if index is None:
        return []
    query = (
        select(Submission, System)
        .join(System, col(System.id) == col(Submission.system_id))
        .where(
            Submission.dataset_name == dataset.name,
            Submission.dataset_fingerprint == dataset.fingerprint,
            col(Submission.status).in_(RESULT_STATUSES),
        )
        .order_by(col(Submission.id))
    )
    newest = {system.id: (s, system) for s, system in session.exec(query) if can_view(s, system, None)}
    answers = []
    for submission, system in newest.values():
        try:
            response = read_responses(storage, submission, dataset)[index]
        except HubError:  # logged by read_responses; one damaged file leaves out one answer, not the page
            continue
        answers.append(
            {
                "system_id": system.id,
                "system_name": system.name,
                "is_baseline": system.is_baseline,
                "submission_id": submission.id,
                "response": response,
            }
        )
    return sorted(answers, key=lambda answer: (answer["system_name"].casefold(), answer["system_id"]))


def prompt_page(session: Session, storage: Storage, dataset_name: str, prompt_id: str) -> dict[str, Any]:
    """A prompt's conversation, references and discrimination (irt_views.prompt_detail) with every public system's
    response to it under `responses`."""
    detail = irt_views.prompt_detail(session, dataset_name, prompt_id)
    return {**detail, "responses": prompt_responses(session, storage, dataset_name, prompt_id)}
