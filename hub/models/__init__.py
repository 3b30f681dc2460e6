"""Database tables, one module per noun. Importing this package registers every table on SQLModel.metadata."""

from hub.models.audit import AuditEntry
from hub.models.score import Score
from hub.models.submission import Submission, SubmissionStatus
from hub.models.system import System
from hub.models.user import ApiToken, User

__all__ = ["ApiToken", "AuditEntry", "Score", "Submission", "SubmissionStatus", "System", "User"]
