"""The shapes the JSON API answers with, so that its OpenAPI schema says what a client
gets (and the API fuzz test holds every response to it)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class SignedInBody(TypedDict):
    user_id: str


class SignedOutBody(TypedDict):
    signed_out: bool


class CitationBody(TypedDict):
    chunk_id: str
    doc_id: str
    title: str
    version: str
    effective_from: str
    superseded_by: str | None
    heading_path: list[str]
    page: int | None
    start: int
    end: int
    quote: str
    scan_confidence: NotRequired[float]
    """A page read from a scan by OCR: the recogniser's mean word confidence, 0-100."""
    scan_check: NotRequired[bool]
    """True when that confidence is low: check the quote against the original."""


class SentenceBody(TypedDict):
    text: str
    kind: Literal["claim", "framing"]
    citations: list[CitationBody]


class SourceBody(TypedDict):
    chunk_id: str
    doc_id: str
    title: str
    heading_path: list[str]
    version: str
    effective_from: str
    start: int
    end: int


class ConflictingSourceBody(SourceBody):
    authority: Literal["trust", "department", "ward"]
    statement: str


class ConflictBody(TypedDict):
    about: str
    precedence: str | None
    sources: list[ConflictingSourceBody]


class AnswerBody(TypedDict):
    request_id: str
    question: str
    refused: bool
    refusal: str | None
    refusal_code: str | None
    decision: Literal["yes", "no", "maybe"] | None
    scope: str | None
    read_as: str | None
    unanswered_parts: list[str]
    conflicts: list[ConflictBody]
    follows: str | None
    sentences: list[SentenceBody]
    closest_sources: list[SourceBody]
    generator: str
    verifier: str
    audit_entry: int


class PastAnswerBody(AnswerBody):
    asked_at: str
    withheld_sentences: int
    """Sentences not shown again: the asker may no longer read their sources."""


class ReviewAccepted(TypedDict):
    recorded: bool
    audit_entry: int


class FeedbackAccepted(TypedDict):
    recorded: bool
    audit_entry: int


class SuccessorBody(TypedDict):
    doc_id: str
    title: str
    version: str
    effective_from: str


class DocumentBody(TypedDict):
    superseded_by_document: SuccessorBody | None
    """The newer version by name, when the asker may read it."""
    doc_id: str
    title: str
    version: str
    effective_from: str
    effective_to: str | None
    superseded_by: str | None
    text: str


class AskedBefore(TypedDict):
    time: str
    question: str
    request_id: str | None


class GrantBody(TypedDict):
    grant_id: int
    patient_id: str
    expires_at: str


class EndedBody(TypedDict):
    ended: bool


class MeBody(TypedDict):
    user_id: str
    roles: list[str]
    departments: list[str]
    may: dict[str, bool]
    break_glass_until: str | None
    break_glass_patient: str | None


class UploadAccepted(TypedDict):
    job_id: str
    files: list[str]


class FileOutcome(TypedDict):
    file: str
    status: str
    doc_id: str | None
    chunks: int
    error: str | None
    warning: NotRequired[str]


class AdminDocumentBody(TypedDict):
    doc_id: str
    title: str
    """Withheld ("restricted document") where the administrator may not read it."""
    version: str
    doc_type: str
    effective_from: str
    effective_to: str | None
    sensitivity: str
    departments: list[str]
    owner: str
    chunks: int
    state: str
    ingested_at: str


class RemovedBody(TypedDict):
    removed: list[str]


class UserBody(TypedDict):
    user: str
    roles: list[str]
    departments: list[str]
    care_team: list[str]
    has_password: bool


class JobBody(TypedDict):
    job_id: str
    user_id: str
    files: list[str]
    state: Literal["queued", "running", "done", "failed"]
    done: int
    total: int
    outcomes: list[FileOutcome]
    error: str | None


class AuditRow(TypedDict):
    entry: int
    time: str
    type: str
    user: str
    request_id: str | None
    summary: str


class AuditPageBody(TypedDict):
    total: int
    offset: int
    limit: int
    rows: list[AuditRow]


class ProofBody(TypedDict):
    tree_size: int
    root: str
    path: list[str]


class PassageBody(TypedDict):
    doc_id: str
    title: str
    version: str
    section: str
    text: str


class AuditRecordBody(TypedDict):
    entry: int
    record: dict[str, Any]
    related: list[dict[str, Any]]
    passages: dict[str, PassageBody]
    proof: ProofBody


class VerificationBody(TypedDict):
    at: str
    ok: bool
    entries: int
    checkpoints: int
    problems: list[str]


class WitnessedBody(TypedDict):
    size: int
    time: str


class WitnessBody(TypedDict):
    configured: str | None
    last_witnessed: WitnessedBody | None
    error: str | None
    unwitnessed_entries: int
    checkpoint_every_entries: int
    checkpoint_every_seconds: float


class CheckpointBody(TypedDict):
    size: int
    root: str
    time: str
    signature: str


class AuditStatusBody(TypedDict):
    witness: WitnessBody
    entries: int
    latest_checkpoint: CheckpointBody | None
    last_verification: VerificationBody | None


class HealthBody(TypedDict):
    status: str


class ReadyBody(TypedDict, total=False):
    status: str
    chunks: int
    audit_entries: int
    store: str
    """The store that did not answer (``lexical``, ``vectors`` or ``audit``)."""
    error: str
