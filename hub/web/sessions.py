"""The cookie side of browser sessions. Starlette's signed cookie carries a random session id (plus the CSRF token
and the cohort raters of this browser); whether that id still logs anyone in is decided on the server
(`accounts.session_user`): logout, a password change, disabling the user and inactivity end it there, so a captured
cookie stops working even though its signature stays valid."""

from __future__ import annotations

from fastapi import Request
from sqlmodel import Session

from hub.models import User
from hub.services.accounts import accounts

SESSION_ID = "sid"


def session_id(request: Request) -> str | None:
    if "session" not in request.scope:
        return None
    value = request.session.get(SESSION_ID)
    return value if isinstance(value, str) and value else None


def logged_in_user(request: Request, session: Session) -> User | None:
    """The user of this browser's live session, else None."""
    sid = session_id(request)
    return accounts.session_user(session, sid) if sid else None


def log_in(request: Request, session: Session, user: User) -> None:
    """A fresh session: nothing from before (an old CSRF token included) survives into the new one."""
    request.session.clear()
    request.session[SESSION_ID] = accounts.start_session(session, user)


def log_out(request: Request, session: Session) -> None:
    sid = session_id(request)
    if sid:
        accounts.end_session(session, sid)
    request.session.clear()
