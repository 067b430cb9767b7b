"""Records that cross stages, defined once with names from the domain."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

Sensitivity = Literal["public", "internal", "confidential", "restricted"]
SENSITIVITIES: tuple[Sensitivity, ...] = ("public", "internal", "confidential", "restricted")
DOC_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
Authority = Literal["trust", "department", "ward"]
"""How far a document's word reaches: where two disagree, the wider one prevails."""
AUTHORITY_RANK: dict[Authority, int] = {"trust": 3, "department": 2, "ward": 1}
OPEN_ENDED = dt.date.max
"""Stored as ``effective_to`` when a document has no end date, so range filters stay simple."""


class DocumentMetadata(BaseModel):
    """What a document says about itself: identity, validity and access labels.

    Comes from Markdown/text front matter or from a sidecar ``<file>.meta.yaml``;
    see ``appliance/ingest/metadata.py`` for the rules.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    doc_id: str
    title: str
    version: str = "1"
    doc_type: str = "document"
    effective_from: dt.date = dt.date(1970, 1, 1)
    effective_to: dt.date | None = None
    superseded_by: str | None = None
    departments: tuple[str, ...] = ()
    sensitivity: Sensitivity = "restricted"
    owner: str = "unassigned"
    patient_id: str | None = None
    authority: Authority | None = None
    """Which document prevails where two disagree; see ``standing``."""
    ocr_confidence: dict[int, float] = {}
    """Pages of a scan read by OCR, each with the recogniser's mean word confidence
    (0-100); set by ingestion, never by a document's own metadata."""

    @field_validator("doc_id", "superseded_by", "patient_id")
    @classmethod
    def _safe_identifier(cls, value: str | None) -> str | None:
        if value is not None and not DOC_ID_PATTERN.match(value):
            raise ValueError(
                f"{value!r} is not a valid document id: use letters, digits, '.', '_' or '-' "
                "(at most 128 characters, starting with a letter or digit)"
            )
        return value

    @field_validator("departments", mode="before")
    @classmethod
    def _departments_as_tuple(cls, value: object) -> object:
        if isinstance(value, str):
            return (value,)
        return value

    @field_validator("departments")
    @classmethod
    def _normalise_departments(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted({d.strip().lower() for d in value if d.strip()}))

    @field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int | float) else value

    @property
    def standing(self) -> Authority:
        """The stated authority, else a hospital-wide document (``departments: [all]``)
        is the trust's word and any other a department's."""
        if self.authority is not None:
            return self.authority
        return "trust" if "all" in self.departments else "department"

    @model_validator(mode="after")
    def _dates_in_order(self) -> DocumentMetadata:
        if self.effective_to is not None and self.effective_to <= self.effective_from:
            raise ValueError(
                f"effective_to ({self.effective_to}) must be after "
                f"effective_from ({self.effective_from})"
            )
        return self


BlockKind = Literal["heading", "paragraph", "list_item", "table", "code"]


@dataclass(frozen=True, slots=True)
class Block:
    """One structural unit of a parsed document, located in its normalised text.

    ``text[start:end]`` of the document is the block's text; for a table the first
    line is the header row (``header_end`` marks where the header and its rule end).
    """

    kind: BlockKind
    start: int
    end: int
    page: int | None = None
    level: int = 0
    header_end: int | None = None


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A parser's output: normalised text plus the blocks that structure it."""

    text: str
    blocks: tuple[Block, ...]
    title: str | None = None
    front_matter: dict[str, object] = field(default_factory=dict)
    ocr_confidence: dict[int, float] = field(default_factory=dict)
    """Pages read by OCR, with the recogniser's mean word confidence (0-100)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A citable passage: an exact span of a document's normalised text.

    ``text == document_text[start:end]`` always holds. ``context`` is what is repeated
    for retrieval but is not part of the span (a table's header row).
    """

    chunk_id: str
    doc_id: str
    ordinal: int
    text: str
    start: int
    end: int
    heading_path: tuple[str, ...]
    page: int | None
    source_sha256: str
    metadata: DocumentMetadata
    context: str = ""

    @property
    def index_text(self) -> str:
        """What the engines index: the repeated context, then the span itself."""
        return f"{self.context}\n{self.text}" if self.context else self.text


@dataclass(frozen=True, slots=True)
class RetrieverHit:
    """One retriever's view of a chunk: its rank (1-based) and raw score."""

    rank: int
    score: float


@dataclass(slots=True)
class Candidate:
    """A chunk proposed for a question, with every retriever's rank and score kept,
    and every later stage's score (``scores``: stage name -> score) for the audit trail.

    ``break_glass`` marks a chunk the asker may read only under an active emergency grant."""

    chunk: Chunk
    fused_score: float
    hits: dict[str, RetrieverHit] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    break_glass: bool = False


@dataclass(frozen=True, slots=True)
class Citation:
    """A quote from a chunk that supports a sentence of an answer."""

    chunk_id: str
    quote: str


@dataclass(frozen=True, slots=True)
class AnswerSentence:
    """One sentence of an answer: a ``claim`` must cite; ``framing`` (such as "In
    summary:") carries no fact of its own."""

    text: str
    kind: Literal["claim", "framing"]
    citations: tuple[Citation, ...] = ()


LOW_SCAN_CONFIDENCE = 80.0
"""Below this mean word confidence a page read by OCR is flagged: check the original."""


@dataclass(frozen=True, slots=True)
class CitedSpan:
    """What the clinician's page shows for one citation: where the quoted span stands
    in which version of which document, and the span itself."""

    chunk_id: str
    doc_id: str
    title: str
    version: str
    effective_from: str
    superseded_by: str | None
    heading_path: tuple[str, ...]
    page: int | None
    start: int
    end: int
    quote: str
    scan_confidence: float | None = None
    """For a page read from a scan by OCR: the recogniser's confidence (0-100)."""

    def to_dict(self) -> dict[str, object]:
        scan: dict[str, object] = {}
        if self.scan_confidence is not None:
            scan = {
                "scan_confidence": self.scan_confidence,
                "scan_check": self.scan_confidence < LOW_SCAN_CONFIDENCE,
            }
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "title": self.title,
            "version": self.version,
            "effective_from": self.effective_from,
            "superseded_by": self.superseded_by,
            "heading_path": list(self.heading_path),
            "page": self.page,
            "start": self.start,
            "end": self.end,
            "quote": self.quote,
            **scan,
        }


@dataclass(frozen=True, slots=True)
class Source:
    """A passage the page offers with a refusal: where it is, so that it can be opened."""

    chunk_id: str
    doc_id: str
    title: str
    heading_path: tuple[str, ...]
    version: str
    effective_from: str
    start: int
    end: int

    def to_dict(self) -> dict[str, object]:
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "title": self.title,
            "heading_path": list(self.heading_path),
            "version": self.version,
            "effective_from": self.effective_from,
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True, slots=True)
class VerifiedSentence:
    """A sentence of an answer that survived verification, with the spans it cites
    (none for framing). Every span was found in its chunk and entails the sentence."""

    sentence: AnswerSentence
    spans: tuple[CitedSpan, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "text": self.sentence.text,
            "kind": self.sentence.kind,
            "citations": [span.to_dict() for span in self.spans],
        }


RefusalCode = Literal[
    "not-in-force",
    "not-relevant",
    "out-of-scope",
    "unknown-identifier",
    "unknown-name",
    "not-covered",
    "nothing-verified",
    "not-an-answer",
    "no-dose",
    "generator-unavailable",
    "store-unavailable",
]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the documents do not answer: a code that reports and queries can count, and
    the reason in a clinician's words, as the page shows it."""

    code: RefusalCode
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "reason": self.reason}


EntityKind = Literal[
    "drug", "condition", "procedure", "lab", "population", "department", "date", "clause"
]  # fmt: skip
RelationKind = Literal[
    "TREATS", "NOT_INDICATED_FOR", "DOSE_OF", "CONTRAINDICATED_WITH", "REQUIRES", "NEXT_STEP"
]  # fmt: skip
"""Relations between two entities that a passage states."""
RELATION_KINDS: tuple[RelationKind, ...] = (
    "TREATS", "NOT_INDICATED_FOR", "DOSE_OF", "CONTRAINDICATED_WITH", "REQUIRES", "NEXT_STEP"
)  # fmt: skip
RELATION_DETAILS = ("amount", "unit", "route", "frequency")
"""What a relation may carry beyond its two entities (a dose's, so far), in this order."""
ScopeKind = Literal["APPLIES_TO", "EXCLUDES"]
"""What a passage says about whom or what it is for."""
SCOPE_KINDS: tuple[ScopeKind, ...] = ("APPLIES_TO", "EXCLUDES")


@dataclass(frozen=True, slots=True)
class ConflictingSource:
    """One side of a disagreement: the passage, its document's standing, and the words
    that state it."""

    source: Source
    authority: Authority
    statement: str

    def to_dict(self) -> dict[str, object]:
        return {**self.source.to_dict(), "authority": self.authority, "statement": self.statement}


@dataclass(frozen=True, slots=True)
class Conflict:
    """Documents that disagree about one thing the answer relies on (the dose of a drug
    for a condition, or whether to give it at all): shown together, never merged.
    ``sources`` come in order of precedence; ``precedence`` says why the first one
    prevails, or is None when no rule decides and the owners must."""

    about: str
    sources: tuple[ConflictingSource, ...]
    precedence: str | None

    def to_dict(self) -> dict[str, object]:
        return {
            "about": self.about,
            "precedence": self.precedence,
            "sources": [s.to_dict() for s in self.sources],
        }


@dataclass(frozen=True, slots=True)
class Mention:
    """An entity named in a chunk: ``key`` is its canonical name (an abbreviation's long
    form), ``start``/``end`` the span in the chunk's text where it stands."""

    key: str
    kind: EntityKind
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class Relation:
    """``source`` -kind-> ``target`` (entity keys, both mentioned in the chunk), stated
    by the chunk's text between ``start`` and ``end``; ``details`` such as a dose's
    amount, unit, route and frequency."""

    kind: RelationKind
    source: str
    target: str
    start: int
    end: int
    details: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Scope:
    """The chunk applies to, or excludes, the entity ``target`` (a population or a
    condition), as its text says between ``start`` and ``end``."""

    kind: ScopeKind
    target: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ChunkFacts:
    """What the knowledge graph keeps of one chunk: the entities it names, what it says
    about them, and the abbreviations it defines (short form -> entity key)."""

    chunk: Chunk
    mentions: tuple[Mention, ...] = ()
    relations: tuple[Relation, ...] = ()
    scopes: tuple[Scope, ...] = ()
    abbreviations: tuple[tuple[str, str], ...] = ()
