"""Database tables, one module per noun. Importing this package registers every table on SQLModel.metadata."""

from hub.models.audit import AuditEntry
from hub.models.conversation import ConversationAggregate, ConversationScore, ConversationSet
from hub.models.data_version import DataVersion
from hub.models.experiment import Backend, Experiment, ExperimentItem, ExperimentStatus, ItemKind, Task, TieMode
from hub.models.irt_fit import IrtFit
from hub.models.judging import DatasetJudging, Judge, JudgeJudgement, JudgingRun, RubricGrade
from hub.models.notification import Notification, OutgoingMail, PasswordReset
from hub.models.outbox import OutboxJob
from hub.models.rater_qa import RaterQaAdminGrade, RaterQaGrade, RaterQaRun, RatingReason
from hub.models.rating import Assignment, AssignmentStatus, Rater, RaterInvite, Rating
from hub.models.score import Score
from hub.models.study import (
    AnnotationSuggestion,
    Chat,
    ChatAnnotation,
    ChatBranch,
    ChatMessage,
    ChatRevert,
    DraftRequest,
    Study,
    StudyInvite,
    StudyParticipant,
    StudySchema,
    StudySystem,
)
from hub.models.submission import Submission, SubmissionStatus
from hub.models.system import System
from hub.models.user import ApiToken, BrowserSession, User

__all__ = [
    "AnnotationSuggestion",
    "ApiToken",
    "Assignment",
    "AssignmentStatus",
    "AuditEntry",
    "Backend",
    "BrowserSession",
    "Chat",
    "ChatAnnotation",
    "ChatBranch",
    "ChatMessage",
    "ChatRevert",
    "ConversationAggregate",
    "ConversationScore",
    "ConversationSet",
    "DataVersion",
    "DatasetJudging",
    "DraftRequest",
    "Experiment",
    "ExperimentItem",
    "ExperimentStatus",
    "IrtFit",
    "ItemKind",
    "Judge",
    "JudgeJudgement",
    "JudgingRun",
    "Notification",
    "OutboxJob",
    "OutgoingMail",
    "PasswordReset",
    "Rater",
    "RaterInvite",
    "RaterQaAdminGrade",
    "RaterQaGrade",
    "RaterQaRun",
    "Rating",
    "RatingReason",
    "RubricGrade",
    "Score",
    "Study",
    "StudyInvite",
    "StudyParticipant",
    "StudySchema",
    "StudySystem",
    "Submission",
    "SubmissionStatus",
    "System",
    "Task",
    "TieMode",
    "User",
]
