"""The clinician's side of the API: ask, open a cited document, the asker's history,
break-the-glass, and who is signed in. Every route here needs a signed-in asker."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Literal, cast

import anyio.to_thread
from litestar import Request, Response, delete, get, post
from litestar.datastructures import Cookie
from litestar.exceptions import ClientException, NotFoundException
from litestar.params import FromPath, FromQuery, JSONBody

from appliance.access.break_glass import MAX_DURATION, MAX_REASON_CHARS
from appliance.access.guard import AccessDenied, NotFound
from appliance.access.rules import Subject
from appliance.audit_trail import shown_answer
from appliance.engines import Appliance
from appliance.index.filters import ActiveOn
from appliance.retrieve.hybrid import QueryError
from audit.index import AuditIndex, Query
from audit.reader import LogReader
from services import metrics
from services.auth import session_of
from services.routes.layers import Asker, Engines, Service
from services.schemas import (
    AnswerBody,
    AskedBefore,
    DocumentBody,
    EndedBody,
    FeedbackAccepted,
    GrantBody,
    MeBody,
    PastAnswerBody,
    SuccessorBody,
)
from services.security import ERROR_RESPONSES, WELL_FORMED_ID, request_id_of
from services.state import ServiceState

MAX_BREAK_GLASS_MINUTES = int(MAX_DURATION.total_seconds() // 60)


@dataclass
class AskRequest:
    question: str
    as_of: dt.date | None = None
    follow_up_of: str | None = None
    """The request id of the asker's previous question in the conversation: a question
    that does not name its own subject is read with that one's."""


@post(
    "/ask",
    sync_to_thread=True,
    status_code=200,
    summary="Ask a question; get a verified, cited answer",
    responses=ERROR_RESPONSES,
)
def ask(
    request: Request, data: JSONBody[AskRequest], subject: Asker, engines: Engines
) -> AnswerBody:
    day = data.as_of or dt.date.today()
    follows = None
    if data.follow_up_of is not None:
        earlier = _answer_record(engines, subject.user_id, data.follow_up_of)
        if earlier is None:
            raise ClientException("follow_up_of is not one of your earlier questions")
        understood = earlier[1].get("understood") or {}
        follows = understood.get("read_as") or earlier[1]["query"]
    try:
        answer = engines.answers.ask(
            data.question, subject, ActiveOn(day), in_force_on=day,
            request_id=request_id_of(request.scope), follows=follows,
        )  # fmt: skip
    except QueryError as error:
        raise ClientException(str(error)) from None
    metrics.answered(answer)
    return cast(AnswerBody, answer.to_dict())


@get(
    "/documents/{doc_id:str}",
    sync_to_thread=True,
    summary="A document to show a span in; every view is audited",
    responses=ERROR_RESPONSES,
)
def document(
    request: Request,
    doc_id: FromPath[str],
    subject: Asker,
    engines: Engines,
    cited_in: FromQuery[str | None] = None,
) -> DocumentBody:
    """The document's text and labels, for highlighting a cited span. A document the
    asker may not read answers exactly like one that does not exist. Every view is an
    audit entry saying why it was opened: from an answer's citation (``cited_in``: the
    answer's request id), directly, or only through an emergency grant."""
    if cited_in is not None and not WELL_FORMED_ID.match(cited_in):
        raise ClientException("cited_in is the request id of an answer")
    try:
        record, grant = engines.guard.document_view(subject, doc_id)
    except NotFound:
        raise NotFoundException() from None
    text = engines.catalog.document_text(doc_id) or ""
    why = "break-the-glass" if grant is not None else "citation" if cited_in else "direct"
    engines.audit_trail.document_viewed(
        subject.user_id, subject.roles, record.metadata, why, request_id_of(request.scope),
        grant_id=None if grant is None else grant.grant_id, cited_in=cited_in,
    )  # fmt: skip
    meta = record.metadata
    return {
        "superseded_by_document": _successor(engines, subject, meta.superseded_by),
        "doc_id": doc_id,
        "title": meta.title,
        "version": meta.version,
        "effective_from": meta.effective_from.isoformat(),
        "effective_to": None if meta.effective_to is None else meta.effective_to.isoformat(),
        "superseded_by": meta.superseded_by,
        "text": text,
    }


def _successor(engines: Appliance, subject: Subject, doc_id: str | None) -> SuccessorBody | None:
    """The version that replaced a document, named by title so that the reader can open
    it; None when there is none or the asker may not read it (it then stays unnamed)."""
    if doc_id is None:
        return None
    try:
        newer = engines.guard.readable_document(subject, doc_id).metadata
    except NotFound:
        return None
    return {
        "doc_id": doc_id,
        "title": newer.title,
        "version": newer.version,
        "effective_from": newer.effective_from.isoformat(),
    }


@get(
    "/history",
    sync_to_thread=True,
    summary="The asker's own recent questions",
    responses=ERROR_RESPONSES,
)
def history(subject: Asker, engines: Engines) -> list[AskedBefore]:
    index = AuditIndex(engines.audit_log)
    try:
        positions = index.positions(
            Query(user=subject.user_id, event_type="question", limit=100_000)
        )[-20:]
    finally:
        index.close()
    reader = LogReader(engines.settings.audit_dir)
    entries = [json.loads(reader.record(p).entry) for p in reversed(positions)]
    return [
        {"time": e["time"], "question": e["details"]["query"], "request_id": e["request_id"]}
        for e in entries
    ]


@get(
    "/history/{request_id:str}",
    sync_to_thread=True,
    summary="A past answer of the asker's, as it was shown, without asking again",
    responses=ERROR_RESPONSES,
)
def past_answer(request_id: FromPath[str], subject: Asker, engines: Engines) -> PastAnswerBody:
    """The answer from its audit record. Its sources are checked again now: a passage
    the asker may no longer read (access revoked, an emergency grant ended, the document
    removed) is not shown again, and the answer says so."""
    found = _answer_record(engines, subject.user_id, request_id)
    if found is None:
        raise NotFoundException()
    position, record, time = found
    shown = shown_answer(record, position)

    def readable(source: dict[str, Any]) -> bool:
        try:
            engines.guard.readable_chunk(subject, source["chunk_id"])
        except NotFound:
            return False
        return True

    sentences = []
    for sentence in shown["sentences"]:
        kept = [c for c in sentence["citations"] if readable(c)]
        if kept or not sentence["citations"]:
            sentences.append({**sentence, "citations": kept})
    withheld = len(shown["sentences"]) - len(sentences)
    conflicts = [c for c in shown["conflicts"] if all(readable(side) for side in c["sources"])]
    closest = [c for c in shown["closest_sources"] if readable(c)]
    return cast(
        PastAnswerBody,
        {**shown, "sentences": sentences, "conflicts": conflicts, "closest_sources": closest,
         "asked_at": time, "withheld_sentences": withheld},
    )  # fmt: skip


def _answer_record(
    engines: Appliance, user_id: str, request_id: str
) -> tuple[int, dict[str, Any], str] | None:
    """The audit record of one of the user's answers: its position, details and time;
    None when that request is not an answer to this user."""
    if not WELL_FORMED_ID.match(request_id):
        return None
    index = AuditIndex(engines.audit_log)
    try:
        positions = index.positions(
            Query(user=user_id, event_type="answer", request_id=request_id, limit=1)
        )
    finally:
        index.close()
    if not positions:
        return None
    entry = json.loads(LogReader(engines.settings.audit_dir).record(positions[0]).entry)
    return positions[0], entry["details"], entry["time"]


FEEDBACK_KINDS = ("wrong", "unsafe", "unhelpful")
MAX_FEEDBACK_CHARS = 2000


@dataclass
class FeedbackRequest:
    request_id: str
    """The answer flagged: one of the asker's own."""
    kind: Literal["wrong", "unsafe", "unhelpful"]
    comment: str = ""


@post(
    "/feedback",
    sync_to_thread=True,
    status_code=200,
    summary="Flag an answer as wrong, unsafe or unhelpful",
    responses=ERROR_RESPONSES,
)
def feedback(
    request: Request, data: JSONBody[FeedbackRequest], subject: Asker, engines: Engines
) -> FeedbackAccepted:
    """Recorded in the audit log with the question and the documents the answer cited
    (with their owners), and counted in the metrics."""
    if data.kind not in FEEDBACK_KINDS:
        raise ClientException(f"kind is one of {', '.join(FEEDBACK_KINDS)}")
    if len(data.comment) > MAX_FEEDBACK_CHARS:
        raise ClientException(f"a comment has at most {MAX_FEEDBACK_CHARS} characters")
    found = _answer_record(engines, subject.user_id, data.request_id)
    if found is None:
        raise ClientException("request_id is not one of your answers")
    record = found[1]
    cited = {
        c["doc_id"]: c for s in record.get("sentences") or [] for c in s.get("citations") or []
    } or {c["doc_id"]: c for c in record.get("closest_sources") or []}
    documents = []
    for doc_id, span in cited.items():
        document = engines.catalog.document(doc_id)
        owner = document.metadata.owner if document is not None else ""
        documents.append(
            {"doc_id": doc_id, "title": span["title"], "version": span["version"], "owner": owner}
        )
    read_as = (record.get("understood") or {}).get("read_as") or record["query"]
    question = record["query"] if read_as == record["query"] else f"{record['query']} ({read_as})"
    receipt = engines.audit_trail.feedback(
        subject, data.request_id, data.kind, data.comment.strip(), question, documents,
        request_id_of(request.scope),
    )  # fmt: skip
    metrics.FEEDBACK.labels(kind=data.kind).inc()
    return {"recorded": True, "audit_entry": receipt.position}


@dataclass
class BreakGlassRequest:
    reason: str
    patient_id: str
    minutes: int = 60


# Privilege changes, so the session gets a fresh id. The break-the-glass handlers are
# async (their work runs in a thread) because they set the rotated session's cookies.


@post("/break-glass", status_code=200, summary="Emergency access", responses=ERROR_RESPONSES)
async def start_break_glass(
    request: Request,
    data: JSONBody[BreakGlassRequest],
    subject: Asker,
    service: Service,
    engines: Engines,
) -> Response[GrantBody]:
    """Open emergency access to one patient's records."""
    if not 1 <= data.minutes <= MAX_BREAK_GLASS_MINUTES:
        raise ClientException(f"minutes is between 1 and {MAX_BREAK_GLASS_MINUTES}")
    if len(data.reason) > MAX_REASON_CHARS:
        raise ClientException(f"a reason has at most {MAX_REASON_CHARS} characters")

    def start() -> GrantBody:
        try:
            grant = engines.guard.request_break_glass(
                subject, data.reason, dt.timedelta(minutes=data.minutes), data.patient_id,
                request_id_of(request.scope),
            )  # fmt: skip
        except AccessDenied:
            raise NotFoundException() from None
        except ValueError as error:
            raise ClientException(str(error)) from None
        return {
            "grant_id": grant.grant_id,
            "patient_id": grant.patient_id,
            "expires_at": grant.expires_at.isoformat(),
        }

    body = await anyio.to_thread.run_sync(start)
    return Response(body, cookies=_rotated(request, service))


@delete("/break-glass", status_code=200, responses=ERROR_RESPONSES)
async def end_break_glass(
    request: Request, subject: Asker, service: Service, engines: Engines
) -> Response[EndedBody]:
    """End every emergency grant of the asker."""
    ended = await anyio.to_thread.run_sync(
        engines.guard.end_break_glass, subject, request_id_of(request.scope)
    )
    return Response({"ended": ended}, cookies=_rotated(request, service))


def _rotated(request: Request, service: ServiceState) -> list[Cookie]:
    session = session_of(request)
    if session is None:  # a bearer token: nothing to rotate
        return []
    return service.cookies.signed_in(service.sessions.rotate(session))


@get(
    "/me",
    sync_to_thread=True,
    summary="Who is signed in, and what they may open",
    responses=ERROR_RESPONSES,
)
def me(subject: Asker, engines: Engines) -> MeBody:
    grant = engines.break_glass.active(subject.user_id)
    may = {
        action: engines.guard.decide_system(subject, action).allowed
        for action in ("ingest", "administer", "review-audit", "request-break-glass")
    }
    return {
        "user_id": subject.user_id,
        "roles": list(subject.roles),
        "departments": list(subject.departments),
        "may": may,
        "break_glass_until": None if grant is None else grant.expires_at.isoformat(),
        "break_glass_patient": None if grant is None else grant.patient_id,
    }
