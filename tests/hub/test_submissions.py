"""Submitting response files: validated with the toolkit's messages before anything is stored."""

from __future__ import annotations

import pytest
from sqlmodel import Session, select

from evaluation.dataset import load_dataset
from hub.errors import BadRequest, Conflict, NotFound, PayloadTooLarge, UnprocessableInput
from hub.models import SubmissionStatus, System, User
from hub.services.submissions.submissions import SystemForm, UploadedFile, can_view, create_submissions, get_visible
from hub.storage import LocalStorage, get_storage


@pytest.fixture
def session(hub_env):
    with Session(hub_env) as session:
        yield session


def add_user(session, email: str, *, admin: bool = False) -> User:
    user = User(email=email, display_name=email.split("@")[0], password_hash="x", is_admin=admin)
    session.add(user)
    session.commit()
    return user


@pytest.fixture
def owner(session):
    return add_user(session, "owner@example.org")


@pytest.fixture
def good_file():
    dataset = load_dataset("hub-open-v1")
    return UploadedFile("mine.txt", ("\n".join(p.references[0] for p in dataset.prompts) + "\n").encode())


def submit(session, owner, upload, **form):
    return create_submissions(
        session,
        get_storage(),
        owner=owner,
        form=SystemForm(name=form.pop("name", "My bot"), **form),
        responses={"hub-open-v1": upload},
    )


def stored_objects() -> list:
    storage = get_storage()
    assert isinstance(storage, LocalStorage)
    return sorted(storage.root.rglob("*")) if storage.root.exists() else []


def test_valid_file_creates_a_system_and_a_submitted_submission(session, owner, good_file):
    [submission] = submit(session, owner, good_file, description="d", paper_url="https://example.org/paper")
    assert submission.status == SubmissionStatus.submitted
    assert get_storage().get(submission.responses_sha256) == good_file.data
    system = session.get(System, submission.system_id)
    assert (system.owner_id, system.paper_url) == (owner.id, "https://example.org/paper")


def test_bad_file_is_refused_with_the_toolkits_message_and_nothing_is_stored(session, owner):
    with pytest.raises(UnprocessableInput) as refused:
        submit(session, owner, UploadedFile("short.txt", b"one line\n"))
    assert (
        refused.value.message
        == "short.txt: expected 120 lines (one response per prompt of dataset hub-open-v1), found 1"
    )
    assert refused.value.field == "responses[hub-open-v1]"
    assert session.exec(select(System)).all() == [] and stored_objects() == []


def test_oversize_file_is_refused(session, owner, good_file, monkeypatch):
    from hub import settings

    monkeypatch.setenv("HUB_MAX_UPLOAD_BYTES", "100")
    settings.get_settings.cache_clear()
    with pytest.raises(PayloadTooLarge, match="the limit is 100"):
        submit(session, owner, good_file)
    assert stored_objects() == []


@pytest.mark.parametrize("url", ["javascript:alert(1)", "ftp://example.org/x", "example.org", "http://"])
def test_url_fields_must_be_http(session, owner, good_file, url):
    with pytest.raises(UnprocessableInput, match="must be an http:// or https:// address") as refused:
        submit(session, owner, good_file, code_url=url)
    assert refused.value.field == "code_url"


def test_same_file_twice_is_a_conflict_unless_the_first_was_rejected(session, owner, good_file):
    [first] = submit(session, owner, good_file)
    with pytest.raises(Conflict, match=f"already submitted for hub-open-v1 as submission #{first.id}"):
        submit(session, owner, good_file, name="again")
    first.status = SubmissionStatus.rejected
    session.commit()
    assert submit(session, owner, good_file, name="again")


def test_unknown_dataset_and_missing_files_are_bad_requests(session, owner, good_file):
    with pytest.raises(BadRequest, match="unknown dataset 'nope'"):
        create_submissions(
            session, get_storage(), owner=owner, form=SystemForm(name="x"), responses={"nope": good_file}
        )
    with pytest.raises(BadRequest, match="at least one response file"):
        create_submissions(session, get_storage(), owner=owner, form=SystemForm(name="x"), responses={})


def test_visibility_owner_admin_and_others(session, owner, good_file):
    other, admin = add_user(session, "other@example.org"), add_user(session, "admin@example.org", admin=True)
    [submission] = submit(session, owner, good_file, is_public=True)
    system = session.get(System, submission.system_id)
    # Not yet approved: owner and admin only, even though the owner chose public.
    assert [can_view(submission, system, v) for v in (None, other, owner, admin)] == [False, False, True, True]
    with pytest.raises(NotFound, match=f"no submission #{submission.id}"):
        get_visible(session, submission.id, other)
    submission.status = SubmissionStatus.evaluated
    assert [can_view(submission, system, v) for v in (None, other, owner, admin)] == [True, True, True, True]
    system.is_public = False  # approved but private: still owner and admin only
    assert [can_view(submission, system, v) for v in (None, other, owner, admin)] == [False, False, True, True]
    with pytest.raises(NotFound, match="no submission #999"):
        get_visible(session, 999, admin)
