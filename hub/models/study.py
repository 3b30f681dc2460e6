"""Interactive studies (ChatHF, MILO): a study's systems and versioned annotation schema, its invite links and
participants, the conversations they hold with the systems as a tree of messages (post-edits, reversals, branches),
their per-turn annotations, and the judge's suggestions and drafts that assist them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Text, UniqueConstraint, false
from sqlmodel import Field, SQLModel

from hub.models.common import utcnow

STUDY_STATUSES = ("draft", "open", "closed")
CHAT_STATUSES = ("active", "finished")
MESSAGE_ROLES = ("user", "assistant")
MESSAGE_STATUSES = ("ok", "error", "streaming")
BRANCH_CLOSERS = ("edit", "revert")
DRAFT_PURPOSES = ("free_text", "post_edit")


class Study(SQLModel, table=True):
    """An interactive study: participants chat with its systems and annotate the turns with its current schema.

    `assistance`: {"mode": "none"|"pre_annotation", "judge_id": int|None, "randomise": "participant"|"conversation",
    "arms": ["unassisted", "assisted", "realtime"], "seed": int}."""

    id: int | None = Field(default=None, primary_key=True)
    title: str = Field(max_length=200)
    instructions: str = Field(default="", sa_column=Column(Text, nullable=False))
    status: str = Field(default="draft", max_length=10, index=True, description="draft, open or closed")
    created_by_id: int | None = Field(default=None, foreign_key="user.id", index=True)
    schema_version: int = Field(default=1, description="The current version of the annotation schema.")
    assistance: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    max_participants: int = Field(default=50, description="Cap on participants over all the study's invites.")
    participant_count: int = 0
    public: bool = Field(
        default=False,
        sa_column_kwargs={"server_default": false()},
        description="The admin publishes the conversations and annotations (only once the study is closed).",
    )
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class StudySchema(SQLModel, table=True):
    """One version of a study's annotation schema, validated and normalised (see hub/services/studies/schema.py)."""

    __table_args__ = (UniqueConstraint("study_id", "version", name="uq_studyschema_study_version"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    version: int
    definition: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False), description="The normalised schema."
    )
    source_format: str = Field(default="json", max_length=4, description="yaml or json: how it was uploaded")
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = Field(default_factory=utcnow)


class StudySystem(SQLModel, table=True):
    """A system participants chat with, behind an OpenAI-compatible endpoint. The key is never stored: `key_ref`
    names the environment variable that holds it."""

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    label: str = Field(max_length=120)
    base_url: str = Field(max_length=2_000)
    model: str = Field(max_length=200)
    key_ref: str | None = Field(default=None, max_length=100, description="Environment variable holding the key.")
    system_prompt: str = Field(default="", sa_column=Column(Text, nullable=False))
    temperature: float = 0.0
    max_tokens: int = 512
    timeout_s: float = 60.0
    history_turns: int = Field(default=20, description="How many previous messages are sent with each turn.")
    vision: bool = Field(default=False, description="Accepts images in user turns.")
    created_at: datetime = Field(default_factory=utcnow)


class StudyInvite(SQLModel, table=True):
    """An invite link to a study: personal (one participant) or cohort (each browser a participant, capped)."""

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    token_sha256: str = Field(max_length=64, unique=True)
    label: str = Field(default="", max_length=200)
    cohort: bool = False
    max_participants: int = Field(default=50, description="Cohort invites: how many participants the link may make.")
    participant_count: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None


class StudyParticipant(SQLModel, table=True):
    """A rater (backend "study") taking part in a study; `arm` when the study randomises per participant."""

    __table_args__ = (UniqueConstraint("study_id", "rater_id", name="uq_studyparticipant_study_rater"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    rater_id: int = Field(foreign_key="rater.id", index=True)
    invite_id: int | None = Field(default=None, foreign_key="studyinvite.id", index=True)
    arm: str | None = Field(default=None, max_length=20)
    joined_at: datetime = Field(default_factory=utcnow)


class Chat(SQLModel, table=True):
    """One conversation of a participant with a system. `current_leaf_id` is the last message of the active branch
    (a chatmessage id; no foreign key, since messages point back at their chat)."""

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    system_id: int = Field(foreign_key="studysystem.id", index=True)
    participant_id: int | None = Field(default=None, foreign_key="studyparticipant.id", index=True)
    created_by_id: int | None = Field(default=None, foreign_key="user.id", description="An admin's own chat.")
    arm: str | None = Field(default=None, max_length=20)
    current_leaf_id: int | None = None
    status: str = Field(default="active", max_length=10, description="active or finished")
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class ChatMessage(SQLModel, table=True):
    """One turn in a conversation tree. A post-edit is a new assistant message with the same parent as the
    original and `edit_of_id` = the original. `edit_spans`: [{"op", "original", "edited", "start", "end"}]."""

    id: int | None = Field(default=None, primary_key=True)
    chat_id: int = Field(foreign_key="chat.id", index=True)
    parent_id: int | None = Field(default=None, foreign_key="chatmessage.id", index=True)
    depth: int = Field(default=0, description="Turn index from the start of the conversation (0 = first).")
    role: str = Field(max_length=10, description="user or assistant")
    content: str = Field(default="", sa_column=Column(Text, nullable=False))
    images: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    status: str = Field(default="ok", max_length=10, description="ok, error or streaming")
    error: str | None = Field(default=None, max_length=2_000)
    edit_of_id: int | None = Field(default=None, foreign_key="chatmessage.id", index=True)
    edit_reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    edit_spans: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    latency_ms: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    created_at: datetime = Field(default_factory=utcnow)


class ChatBranch(SQLModel, table=True):
    """A branch of a conversation, named by its leaf: open (the active one) or closed by an edit or a reversal."""

    id: int | None = Field(default=None, primary_key=True)
    chat_id: int = Field(foreign_key="chat.id", index=True)
    leaf_id: int = Field(foreign_key="chatmessage.id", index=True)
    closed_by: str | None = Field(default=None, max_length=10, description="edit, revert, or None while open")
    reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    successful: bool = Field(default=True, description="The current branch is successful by default (ChatHF).")
    created_at: datetime = Field(default_factory=utcnow)


class ChatRevert(SQLModel, table=True):
    """A reversal: the active leaf went back from `from_leaf_id` to `to_message_id` (at turn `depth`)."""

    id: int | None = Field(default=None, primary_key=True)
    chat_id: int = Field(foreign_key="chat.id", index=True)
    from_leaf_id: int = Field(foreign_key="chatmessage.id")
    to_message_id: int = Field(foreign_key="chatmessage.id")
    depth: int = 0
    reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)


class AnnotationSuggestion(SQLModel, table=True):
    """A judge's suggested answer to one question on one turn, with its confidence and explanation (MILO)."""

    __table_args__ = (
        UniqueConstraint("message_id", "question_id", "judge_id", name="uq_annotationsuggestion_message_q_judge"),
    )

    id: int | None = Field(default=None, primary_key=True)
    message_id: int = Field(foreign_key="chatmessage.id", index=True)
    question_id: str = Field(max_length=60)
    judge_id: int = Field(foreign_key="judge.id", index=True)
    value: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    confidence: float | None = None
    explanation: str = Field(default="", sa_column=Column(Text, nullable=False))
    error: str | None = Field(default=None, max_length=2_000)
    created_at: datetime = Field(default_factory=utcnow)


class ChatAnnotation(SQLModel, table=True):
    """A participant's answer to one schema question on one turn. `handling_ms`: from the form opening to the
    answer; `suggestion_id`: the suggestion shown, if any."""

    __table_args__ = (
        UniqueConstraint("message_id", "participant_id", "question_id", name="uq_chatannotation_message_p_q"),
    )

    id: int | None = Field(default=None, primary_key=True)
    message_id: int = Field(foreign_key="chatmessage.id", index=True)
    participant_id: int | None = Field(default=None, foreign_key="studyparticipant.id", index=True)
    question_id: str = Field(max_length=60)
    schema_version: int
    value: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    explanation: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    handling_ms: int | None = None
    suggestion_id: int | None = Field(default=None, foreign_key="annotationsuggestion.id", index=True)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class DraftRequest(SQLModel, table=True):
    """MILO's real-time assistant: a participant asked the judge for a draft of a free-text answer or a post-edit;
    `kept_fraction` is how much of the draft the final text kept."""

    id: int | None = Field(default=None, primary_key=True)
    chat_id: int = Field(foreign_key="chat.id", index=True)
    message_id: int | None = Field(default=None, foreign_key="chatmessage.id", index=True)
    participant_id: int | None = Field(default=None, foreign_key="studyparticipant.id", index=True)
    purpose: str = Field(max_length=10, description="free_text or post_edit")
    question_id: str | None = Field(default=None, max_length=60)
    judge_id: int | None = Field(default=None, foreign_key="judge.id")
    draft: str = Field(default="", sa_column=Column(Text, nullable=False))
    final_text: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    kept_fraction: float | None = None
    latency_ms: int | None = None
    error: str | None = Field(default=None, max_length=2_000)
    created_at: datetime = Field(default_factory=utcnow)
