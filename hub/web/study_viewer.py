"""Who is asking, for the study routes: the logged-in user or API token, and the study participants this browser
session holds. A participant has no account: a state-changing call that relies on the participant cookie must carry
the session's CSRF token (X-CSRF-Token), as logged-in browser sessions must (ApiCsrfMiddleware)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from hub.errors import Forbidden
from hub.models import User
from hub.services.studies.participants import Viewer, session_participants
from hub.web.csrf import HEADER, MESSAGE, UNSAFE_METHODS, has_bearer_token, token_matches
from hub.web.deps import optional_user


def study_viewer(request: Request, user: Annotated[User | None, Depends(optional_user)]) -> Viewer:
    participants = {} if has_bearer_token(request.headers) else session_participants(request.session)
    if (
        participants
        and request.method in UNSAFE_METHODS
        and not token_matches(request.session, request.headers.get(HEADER))
    ):
        raise Forbidden(MESSAGE.replace("form", "request"), field=HEADER)
    return Viewer(user=user, participants=participants)


StudyViewerDep = Annotated[Viewer, Depends(study_viewer)]
