"""Public system names are unique up to look-alikes (hub.system_names.name_key): the lookup and the 409.

Only public systems and baselines hold a name (System.public_name_key, unique in the database); a private system
holds none, so refusing a name never reveals that some user's private system carries it, and a private system may
take any name. A system becoming public (created public) must not look like a public one; the unique index decides
when two requests race, and the loser gets the same 409 as a sequential clash.
"""

from __future__ import annotations

from sqlmodel import Session, select

from hub.errors import Conflict
from hub.models import System
from hub.system_names import name_key


def public_namesake(session: Session, name: str) -> System | None:
    """The public system or baseline whose name looks like `name` (same key), if any."""
    return session.exec(select(System).where(System.public_name_key == name_key(name))).first()


def refuse_public_clash(session: Session, name: str) -> None:
    """409 naming the public system whose name looks like `name`."""
    existing = public_namesake(session, name)
    if existing is not None:
        same = "is named" if existing.name == name else "has a name that looks the same:"
        kind = "baseline" if existing.is_baseline else "public system"
        raise Conflict(
            f"the {kind} #{existing.id} {same} {existing.name!r}; public system names must be unique "
            "(compared ignoring case, width and look-alike letters): choose another name",
            field="name",
        )
