"""Researcher pages: sign up, log in and out, the account (API tokens, own submissions), submit, submission status."""

from __future__ import annotations

import urllib.parse
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from sqlmodel import Session, col, select
from starlette.concurrency import run_in_threadpool

from hub.errors import HubError
from hub.models import Score, Submission, SubmissionStatus, System, User
from hub.services.accounts import accounts, rate_limits
from hub.services.publishing.leaderboard import list_datasets
from hub.services.submissions import quotas
from hub.services.submissions.results import finite
from hub.services.submissions.submissions import create_submissions, get_visible
from hub.storage import get_storage
from hub.web.csrf import CsrfDep
from hub.web.deps import SessionDep, ViewerDep
from hub.web.inputs import DatabaseId
from hub.web.sessions import log_in, log_out, session_id
from hub.web.submission_form import system_form, uploads
from hub.web.templating import render
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, tags=["pages"], include_in_schema=False)
TextField = Annotated[str, Form()]
# While the worker is busy the status page reloads itself; other states change only on a person's action.
ACTIVE = {SubmissionStatus.approved, SubmissionStatus.evaluating}
TEXT_FIELDS = ("name", "description", "paper_url", "code_url", "weights_url")


# ---- helpers shared with pages_admin ----


def page(request: Request, name: str, viewer: User | None, context: dict[str, Any] | None = None, status_code=200):
    """Render one of our pages; `viewer` is always in the context, for the navigation."""
    return render(request, name, {"viewer": viewer, **(context or {})}, status_code=status_code)


def error_page(request: Request, viewer: User | None, exc: HubError):
    context = {"status_code": exc.status_code, "message": exc.message, "field": exc.field}
    response = page(request, "error.html", viewer, context, exc.status_code)
    response.headers.update(exc.response_headers)
    return response


def safe_next(target: str | None) -> str | None:
    """Only paths on this site: `//evil.example` and `https://...` would send the user elsewhere after login."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return None
    return target


def login_redirect(request: Request) -> RedirectResponse:
    if request.method != "GET":  # a POST cannot be replayed after logging in
        return RedirectResponse("/login", status_code=303)
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse("/login?" + urllib.parse.urlencode({"next": here}), status_code=303)


def _limits_note() -> dict[str, str]:
    """What the login and sign-up pages say about their rate limits."""
    return {
        "login_limits": (
            f"Failed logins are limited to {rate_limits.describe(rate_limits.LOGIN_ACCOUNT)} for one account and "
            f"{rate_limits.describe(rate_limits.LOGIN_CLIENT)} from one address; past that, logging in is refused "
            "(even with the right password) until that period is over."
        ),
        "signup_limits": f"Sign-ups are limited to {rate_limits.describe(rate_limits.SIGNUP_CLIENT)} from one address.",
    }


# ---- signing up, logging in and out ----


@router.get("/signup")
def signup_form(request: Request, viewer: ViewerDep):
    if viewer is not None:
        return RedirectResponse("/account", status_code=303)
    return page(request, "signup.html", viewer, {"email": "", "display_name": "", "error": None, **_limits_note()})


@router.post("/signup")
def signup(
    request: Request,
    _csrf: CsrfDep,
    session: SessionDep,
    email: TextField = "",
    display_name: TextField = "",
    password: TextField = "",
):
    try:
        rate_limits.take(rate_limits.SIGNUP_CLIENT, rate_limits.client_address(request))
        user = accounts.create_user(session, email=email, password=password, display_name=display_name)
    except HubError as exc:
        context = {"email": email, "display_name": display_name, "error": exc.message, "field": exc.field}
        context |= _limits_note()
        response = page(request, "signup.html", None, context, exc.status_code)
        response.headers.update(exc.response_headers)  # Retry-After of a 429 or a 503
        return response
    log_in(request, session, user)
    return RedirectResponse("/account", status_code=303)


@router.get("/login")
def login_form(request: Request, viewer: ViewerDep, next: str | None = None):
    if viewer is not None:
        return RedirectResponse(safe_next(next) or "/account", status_code=303)
    context = {"email": "", "next": safe_next(next), "error": None, **_limits_note()}
    return page(request, "login.html", viewer, context)


@router.post("/login")
def login(
    request: Request,
    _csrf: CsrfDep,
    session: SessionDep,
    email: TextField = "",
    password: TextField = "",
    next: TextField = "",
):
    next_page = safe_next(next)
    client = rate_limits.client_address(request)
    try:
        user = accounts.authenticate(session, email=email, password=password, client=client)
    except HubError as exc:  # one message for unknown email and wrong password alike; 429 once locked out
        context = {"email": email, "next": next_page, "error": exc.message, **_limits_note()}
        response = page(request, "login.html", None, context, exc.status_code)
        response.headers.update(exc.response_headers)  # Retry-After of a 429 or a 503
        return response
    log_in(request, session, user)
    return RedirectResponse(next_page or "/account", status_code=303)


@router.post("/logout")
def logout(request: Request, _csrf: CsrfDep, session: SessionDep):
    log_out(request, session)
    return RedirectResponse("/", status_code=303)


# ---- the account: API tokens and own submissions ----


def _own_submissions(session: Session, user: User) -> list[tuple[Submission, System]]:
    query = (
        select(Submission, System)
        .join(System, col(System.id) == col(Submission.system_id))
        .where(System.owner_id == user.id)
        .order_by(col(Submission.id).desc())
    )
    return list(session.exec(query))


def _account_page(request: Request, session: Session, viewer: User, status_code=200, **extra):
    context = {
        "tokens": accounts.list_tokens(session, viewer),
        "submissions": _own_submissions(session, viewer),
        "new_token": None,
        "token_name": "",
        "error": None,
        **extra,
    }
    response = page(request, "account.html", viewer, context, status_code)
    response.headers["Cache-Control"] = "no-store"  # the page may show a new token's plaintext
    return response


@router.get("/account")
def account(request: Request, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    return _account_page(request, session, viewer)


@router.post("/account/tokens")
def create_token(request: Request, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep, name: TextField = ""):
    if viewer is None:
        return login_redirect(request)
    try:
        api_token, plaintext = accounts.create_token(session, viewer, name=name)
    except HubError as exc:
        return _account_page(request, session, viewer, exc.status_code, error=exc.message, token_name=name)
    # Shown on this response only: the hub keeps just its hash, so a reload cannot show it again.
    return _account_page(request, session, viewer, new_token={"name": api_token.name, "plaintext": plaintext})


@router.post("/account/tokens/{token_id}/revoke")
def revoke_token(request: Request, token_id: DatabaseId, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    try:
        accounts.revoke_token(session, viewer, token_id)
    except HubError as exc:
        return error_page(request, viewer, exc)
    return RedirectResponse("/account", status_code=303)


@router.post("/account/password")
def change_password(
    request: Request,
    _csrf: CsrfDep,
    session: SessionDep,
    viewer: ViewerDep,
    current_password: TextField = "",
    new_password: TextField = "",
):
    """A new password; every other browser session of this account ends (this one stays logged in)."""
    if viewer is None:
        return login_redirect(request)
    try:
        accounts.change_password(
            session, viewer, current=current_password, new=new_password, keep_session=session_id(request)
        )
    except HubError as exc:
        return _account_page(request, session, viewer, exc.status_code, password_error=exc.message)
    return RedirectResponse("/account?password=changed", status_code=303)


# ---- submitting ----


def _submit_page(request: Request, session: Session, viewer: User, status_code=200, **extra) -> Response:
    baselines = session.exec(select(System).where(col(System.is_baseline)).order_by(col(System.name))).all()
    context = {
        "datasets": list_datasets(),
        "baselines": baselines,
        "values": dict.fromkeys(TEXT_FIELDS, ""),
        "is_public": False,
        "allow_empty": False,
        "chosen_baselines": [],
        "error": None,
        "field": None,
        "quota": quotas.quota(session, viewer),
        **extra,
    }
    return page(request, "submit.html", viewer, context, status_code)


@router.get("/submit")
def submit_form(request: Request, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    return _submit_page(request, session, viewer)


@router.post("/submit")
async def submit(request: Request, _csrf: CsrfDep, session: SessionDep, viewer: ViewerDep):
    if viewer is None:
        return login_redirect(request)
    form = await request.form()
    try:
        quotas.take_attempt(viewer)  # every upload counts toward the daily attempts, valid or not
        system = system_form(form)
        responses, logliks = await run_in_threadpool(uploads, form)
        # Validating a large file takes a while: off the event loop, so other requests are served meanwhile.
        created = await run_in_threadpool(
            create_submissions,
            session,
            get_storage(),
            owner=viewer,
            form=system,
            responses=responses,
            logliks=logliks,
        )
    except HubError as exc:  # the form comes back as it was sent (files cannot be), with the precise message
        values = {key: str(form.get(key, "")) for key in TEXT_FIELDS}
        extra = {
            "values": values,
            "is_public": form.get("is_public") is not None,
            "allow_empty": form.get("allow_empty") is not None,
            "chosen_baselines": [str(v) for v in form.getlist("baselines")],
            "error": exc.message,
            "field": exc.field,
        }
        refused = await run_in_threadpool(_submit_page, request, session, viewer, exc.status_code, **extra)
        refused.headers.update(exc.response_headers)  # Retry-After on a quota's 429
        return refused
    return RedirectResponse(f"/submissions/{created[0].id}", status_code=303)


# ---- following a submission ----


def _scores(session: Session, submission: Submission) -> list[dict[str, Any]]:
    query = select(Score).where(Score.submission_id == submission.id).order_by(col(Score.metric), col(Score.id))
    return [
        {
            "metric": s.metric,
            "version": s.version,
            "signature": s.signature,
            "corpus": finite(s.corpus),
            "higher_is_better": s.higher_is_better,
        }
        for s in session.exec(query)
    ]


@router.get("/submissions/{submission_id}")
def submission_status(request: Request, submission_id: DatabaseId, session: SessionDep, viewer: ViewerDep):
    try:
        submission, system = get_visible(session, submission_id, viewer)
    except HubError as exc:
        return error_page(request, viewer, exc)
    private = viewer is not None and (viewer.is_admin or viewer.id == system.owner_id)
    context = {
        "submission": submission,
        "system": system,
        "scores": _scores(session, submission),
        "refresh": submission.status in ACTIVE,
        "percent": round(max(0.0, min(1.0, submission.progress)) * 100),
        "show_error": private and submission.status == SubmissionStatus.failed,
        "api_url": f"/api/submissions/{submission.id}",
    }
    return page(request, "submission.html", viewer, context)
