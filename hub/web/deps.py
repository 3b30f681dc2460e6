"""Request dependencies as `Annotated` aliases: the database session and who is asking."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session

from hub.db import get_session
from hub.errors import Unauthorized
from hub.models import User
from hub.services.accounts.accounts import user_for_token
from hub.services.accounts.rate_limits import client_address
from hub.web.inputs import DatabaseId  # noqa: F401 (the routes import it from here)
from hub.web.sessions import logged_in_user
from hub.web.threads import ends_transaction

SessionDep = Annotated[Session, Depends(get_session, scope="function")]
"""The request's session, closed when the route returns and before the answer is sent: a slow or stalled client never
holds a database connection (the default, request scope, would keep it open until the last byte is sent)."""


def _bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


@ends_transaction
def optional_user(request: Request, session: SessionDep) -> User | None:
    """The caller: an API token (Authorization: Bearer ...) or the logged-in browser session, else None."""
    token = _bearer_token(request)
    if token is not None:
        return user_for_token(session, token, client=client_address(request))
    return logged_in_user(request, session)


def required_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    if user is None:
        raise Unauthorized("log in or send an API token (Authorization: Bearer ceh_...)")
    return user


ViewerDep = Annotated[User | None, Depends(optional_user)]
UserDep = Annotated[User, Depends(required_user)]


def session_viewer(request: Request) -> User | None:
    """The logged-in user of a browser session, for pages rendered outside a route (the error page)."""
    from hub.db import get_engine

    with Session(get_engine()) as session:
        return logged_in_user(request, session)
