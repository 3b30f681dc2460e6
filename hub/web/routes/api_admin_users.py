"""JSON API for admins: list users, disable a user (no login, session or token works) and enable them again."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from hub.models import User
from hub.services.accounts import accounts
from hub.web.deps import DatabaseId, SessionDep, UserDep
from hub.web.threads import RequestSessionRoute

router = APIRouter(route_class=RequestSessionRoute, prefix="/api/admin/users", tags=["admin"])


def user_json(user: User) -> dict[str, Any]:
    return {
        "id": user.id,
        "email": user.email,
        "display_name": user.display_name,
        "is_admin": user.is_admin,
        "created_at": user.created_at.isoformat(),
        "disabled": user.disabled_at is not None,
        "disabled_at": user.disabled_at.isoformat() if user.disabled_at else None,
    }


@router.get("")
def list_users(session: SessionDep, admin: UserDep) -> dict[str, Any]:
    return {"users": [user_json(u) for u in accounts.list_users(session, admin)]}


@router.post("/{user_id}/disable")
def disable(user_id: DatabaseId, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    """Disable the user: their browser sessions end, their API tokens and password stop working. Audited."""
    return user_json(accounts.set_disabled(session, admin, user_id, disabled=True))


@router.post("/{user_id}/enable")
def enable(user_id: DatabaseId, session: SessionDep, admin: UserDep) -> dict[str, Any]:
    """Let a disabled user log in again (ended sessions stay ended). Audited."""
    return user_json(accounts.set_disabled(session, admin, user_id, disabled=False))
