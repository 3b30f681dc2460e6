"""Column helpers shared by the tables."""

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Timezone-aware UTC now (SQLModel's UTCDateTime columns refuse naive datetimes)."""
    return datetime.now(UTC)
