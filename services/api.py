"""The JSON API. Thin: authenticate, call ``appliance`` or ``audit``, shape the reply."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from litestar import Request, Response, delete, get, post
from litestar.datastructures import UploadFile
from litestar.exceptions import ClientException, NotFoundException
from litestar.params import FromPath, FromQuery, JSONBody, MultipartBody
from litestar.response import Stream

from appliance.access.guard import AccessDenied, NotFound
from appliance.index.filters import ActiveOn
from appliance.ingest.pipeline import DocumentOutcome
from appliance.retrieve.hybrid import QueryError
from audit.checkpoints import load_public_key
from audit.index import AuditIndex, Query
from audit.reader import LogReader, exported
from audit.store import PUBLIC_KEY_FILE
from audit.verify import verify_log
from services.auth import require_action, require_subject
from services.security import request_id_of
from services.state import ServiceState, Verification, now

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(T[0-9:.+-]+Z?)?$")


def service(request: Request) -> ServiceState:
    return request.app.state.service  # type: ignore[no-any-return]


# -- the clinician's side ---------------------------------------------------------------


@dataclass
class AskRequest:
    question: str
    as_of: dt.date | None = None


@post(
    "/api/ask",
    sync_to_thread=True,
    status_code=200,
    summary="Ask a question; get a verified, cited answer",
)
def ask(request: Request, data: JSONBody[AskRequest]) -> dict[str, Any]:
    state = service(request)
    subject = require_subject(request, state)
    day = data.as_of or dt.date.today()
    with state.engine_lock:
        try:
            answer = state.appliance.answers.ask(
                data.question, subject, ActiveOn(day), in_force_on=day,
                request_id=request_id_of(request.scope),
            )  # fmt: skip
        except QueryError as error:
            raise ClientException(str(error)) from None
    return {
        "request_id": answer.request_id,
        "question": answer.question,
        "refused": answer.refused,
        "refusal": answer.refusal,
        "decision": answer.decision,
        "scope": answer.scope,
        "read_as": answer.read_as,
        "unanswered_parts": list(answer.unanswered_parts),
        "sentences": [
            {
                "text": sentence.text,
                "kind": sentence.kind,
                "citations": [dataclasses.asdict(span) for span in spans],
            }
            for sentence, spans in answer.sentences
        ],
        "closest_sources": [dataclasses.asdict(s) for s in answer.closest_sources],
        "generator": answer.generator,
        "verifier": answer.verifier,
        "audit_entry": answer.audit_entry,
    }


@get("/api/documents/{doc_id:str}", sync_to_thread=True, summary="A document to show a span in")
def document(request: Request, doc_id: FromPath[str]) -> dict[str, Any]:
    """The document's text and labels, for highlighting a cited span. A document the
    asker may not read answers exactly like one that does not exist."""
    state = service(request)
    subject = require_subject(request, state)
    with state.engine_lock:
        try:
            record = state.appliance.guard.readable_document(subject, doc_id)
        except NotFound:
            raise NotFoundException() from None
        text = state.appliance.catalog.document_text(doc_id) or ""
    meta = record.metadata
    return {
        "doc_id": doc_id,
        "title": meta.title,
        "version": meta.version,
        "effective_from": meta.effective_from.isoformat(),
        "effective_to": None if meta.effective_to is None else meta.effective_to.isoformat(),
        "superseded_by": meta.superseded_by,
        "text": text,
    }


@get("/api/history", sync_to_thread=True, summary="The asker's own recent questions")
def history(request: Request) -> list[dict[str, Any]]:
    state = service(request)
    subject = require_subject(request, state)
    with state.engine_lock:
        index = AuditIndex(state.appliance.audit_log)
        try:
            positions = index.positions(
                Query(user=subject.user_id, event_type="question", limit=100_000)
            )[-20:]
        finally:
            index.close()
        reader = LogReader(state.appliance.settings.audit_dir)
        entries = [json.loads(reader.record(p).entry) for p in reversed(positions)]
    return [
        {"time": e["time"], "question": e["details"]["query"], "request_id": e["request_id"]}
        for e in entries
    ]


@dataclass
class BreakGlassRequest:
    reason: str
    minutes: int = 60


@post("/api/break-glass", sync_to_thread=True, status_code=200, summary="Emergency access")
def start_break_glass(request: Request, data: JSONBody[BreakGlassRequest]) -> dict[str, Any]:
    state = service(request)
    subject = require_subject(request, state)
    with state.engine_lock:
        try:
            grant = state.appliance.guard.request_break_glass(
                subject, data.reason, dt.timedelta(minutes=data.minutes)
            )
        except AccessDenied:
            raise NotFoundException() from None
        except ValueError as error:
            raise ClientException(str(error)) from None
    return {"grant_id": grant.grant_id, "expires_at": grant.expires_at.isoformat()}


@delete("/api/break-glass", sync_to_thread=True, status_code=200)
def end_break_glass(request: Request) -> dict[str, bool]:
    state = service(request)
    subject = require_subject(request, state)
    with state.engine_lock:
        return {"ended": state.appliance.guard.end_break_glass(subject)}


@get("/api/me", sync_to_thread=True, summary="Who is signed in, and what they may open")
def me(request: Request) -> dict[str, Any]:
    state = service(request)
    subject = require_subject(request, state)
    guard = state.appliance.guard
    with state.engine_lock:
        grant = state.appliance.break_glass.active(subject.user_id)
        may = {
            action: guard.decide_system(subject, action).allowed
            for action in ("ingest", "review-audit", "request-break-glass")
        }
    return {
        "user_id": subject.user_id,
        "roles": list(subject.roles),
        "departments": list(subject.departments),
        "may": may,
        "break_glass_until": None if grant is None else grant.expires_at.isoformat(),
    }


# -- ingestion (IT and administrators) ------------------------------------------------------


@post("/api/documents", sync_to_thread=True, status_code=202, summary="Upload for ingestion")
def upload(request: Request, data: MultipartBody[list[UploadFile]]) -> dict[str, Any]:
    state = service(request)
    subject = require_action(request, state, "ingest")
    if not data:
        raise ClientException("no files in the upload")
    job = state.new_job(subject.user_id, [])
    folder = state.uploads_dir / job.job_id
    folder.mkdir(parents=True)
    for upload_file in data:
        name = _SAFE_NAME.sub("_", upload_file.filename or "").strip("._") or "upload"
        (folder / name).write_bytes(upload_file.file.read())
        job.files.append(name)
    threading.Thread(target=_run_job, args=(state, job.job_id), daemon=True).start()
    return {"job_id": job.job_id, "files": job.files}


def _run_job(state: ServiceState, job_id: str) -> None:
    job = state.jobs[job_id]

    def advance(outcome: DocumentOutcome) -> None:
        job.done += 1
        job.outcomes.append(
            {"file": outcome.path.name, "status": outcome.status, "doc_id": outcome.doc_id,
             "chunks": outcome.chunks, "error": outcome.error}
        )  # fmt: skip

    with state.engine_lock:
        job.state = "running"
        try:
            state.appliance.ingestor.ingest(
                [state.uploads_dir / job_id], on_outcome=advance, actor=job.user_id
            )
            job.state = "done"
        except Exception as error:  # the job reports it; the service stays up
            job.state, job.error = "failed", repr(error)


@get("/api/jobs/{job_id:str}", sync_to_thread=False, summary="An ingestion job's progress")
def job_status(request: Request, job_id: FromPath[str]) -> dict[str, Any]:
    state = service(request)
    subject = require_action(request, state, "ingest")
    job = state.jobs.get(job_id)
    if job is None or job.user_id != subject.user_id:
        raise NotFoundException()
    return dataclasses.asdict(job) | {"total": len(job.files)}


# -- the compliance officer's side ----------------------------------------------------------


def _time(value: str | None, name: str) -> str | None:
    if value is not None and not _ISO_TIME.match(value):
        raise ClientException(f"{name} is not an ISO date or time: {value!r}")
    return value


@get("/api/audit/records", sync_to_thread=True, summary="Search the audit log")
def audit_records(
    request: Request,
    since: FromQuery[str | None] = None,
    until: FromQuery[str | None] = None,
    user: FromQuery[str | None] = None,
    event_type: FromQuery[str | None] = None,
    doc_id: FromQuery[str | None] = None,
    limit: FromQuery[int] = 200,
) -> list[dict[str, Any]]:
    state = service(request)
    require_action(request, state, "review-audit")
    query = Query(
        _time(since, "since"), _time(until, "until"), user or None, event_type or None,
        doc_id or None, None, max(1, min(limit, 1000)),
    )  # fmt: skip
    with state.engine_lock:
        index = AuditIndex(state.appliance.audit_log)
        try:
            positions = index.positions(query)
        finally:
            index.close()
        reader = LogReader(state.appliance.settings.audit_dir)
        entries = [(p, json.loads(reader.record(p).entry)) for p in positions]
    return [
        {
            "entry": position,
            "time": e["time"],
            "type": e["type"],
            "user": e["actor"]["user"],
            "request_id": e.get("request_id"),
            "summary": _summary(e),
        }
        for position, e in reversed(entries)
    ]


def _summary(entry: dict[str, Any]) -> str:
    details = entry.get("details", {})
    if entry["type"] in ("question", "answer"):
        text = str(details.get("query", ""))
        if entry["type"] == "answer":
            text += f" -> {details.get('refusal') or 'answered'}"
        return text
    for key in ("doc_id", "reason", "action", "decision"):
        if key in details:
            return f"{key}: {details[key]}"
    return ""


@get("/api/audit/records/{position:int}", sync_to_thread=True, summary="One audit record")
def audit_record(request: Request, position: FromPath[int]) -> dict[str, Any]:
    """The record, and with a question its answer's record (joined by request id), each
    with its inclusion proof."""
    state = service(request)
    require_action(request, state, "review-audit")
    with state.engine_lock:
        reader = LogReader(state.appliance.settings.audit_dir)
        try:
            entry = json.loads(reader.record(position).entry)
        except (IndexError, ValueError):
            raise NotFoundException() from None
        related = []
        if entry.get("request_id"):
            index = AuditIndex(state.appliance.audit_log)
            try:
                others = index.positions(Query(request_id=entry["request_id"], limit=1000))
            finally:
                index.close()
            related = [
                {"entry": p, **json.loads(reader.record(p).entry)} for p in others if p != position
            ]
        proof = reader.inclusion_proof(position)
    return {
        "entry": position,
        "record": entry,
        "related": related,
        "proof": {
            "tree_size": proof.size,
            "root": proof.root.hex(),
            "path": [h.hex() for h in proof.path],
        },
    }


@get("/api/audit/status", sync_to_thread=True, summary="Log integrity at a glance")
def audit_status(request: Request) -> dict[str, Any]:
    state = service(request)
    require_action(request, state, "review-audit")
    with state.engine_lock:
        reader = LogReader(state.appliance.settings.audit_dir)
        latest = reader.latest_checkpoint()
        size = reader.levels().size
    last = state.last_verification
    return {
        "entries": size,
        "latest_checkpoint": None
        if latest is None
        else {
            "size": latest.size,
            "root": latest.root,
            "time": latest.time,
            "signature": latest.signature,
        },
        "last_verification": None if last is None else dataclasses.asdict(last),
    }


@post("/api/audit/verify", sync_to_thread=True, status_code=200, summary="Verify the log now")
def audit_verify(request: Request) -> dict[str, Any]:
    state = service(request)
    require_action(request, state, "review-audit")
    directory = state.appliance.settings.audit_dir
    with state.engine_lock:
        report = verify_log(directory, load_public_key(directory / PUBLIC_KEY_FILE))
    state.last_verification = Verification(
        now(), report.ok, report.entries, report.checkpoints, [str(p) for p in report.problems]
    )
    return dataclasses.asdict(state.last_verification)


@get("/api/audit/export", sync_to_thread=True, summary="A time range's entries, with proofs")
def audit_export(
    request: Request, since: FromQuery[str | None] = None, until: FromQuery[str | None] = None
) -> Stream:
    state = service(request)
    require_action(request, state, "review-audit")
    with state.engine_lock:
        reader = LogReader(state.appliance.settings.audit_dir)
        rows = list(
            exported(
                reader, reader.latest_checkpoint(), _time(since, "since"), _time(until, "until")
            )
        )

    def lines() -> Iterator[str]:
        for row in rows:
            yield json.dumps(row, sort_keys=True) + "\n"

    return Stream(
        lines(),
        media_type="application/x-ndjson",
        headers={"content-disposition": 'attachment; filename="audit-export.jsonl"'},
    )


# -- operations -----------------------------------------------------------------------------


@get("/health", sync_to_thread=False, summary="The process is up")
def health() -> dict[str, str]:
    return {"status": "ok"}


@get("/ready", sync_to_thread=True, summary="The engines answer")
def ready(request: Request) -> Response[dict[str, Any]]:
    state = service(request)
    try:
        with state.engine_lock:
            chunks = state.appliance.lexical.count()
            entries = state.appliance.audit_log.size
    except Exception as error:  # readiness reports any failure, it does not raise
        return Response({"status": "not ready", "error": repr(error)}, status_code=503)
    return Response({"status": "ready", "chunks": chunks, "audit_entries": entries})


API_HANDLERS = [
    ask, document, history, start_break_glass, end_break_glass, me, upload, job_status,
    audit_records, audit_record, audit_status, audit_verify, audit_export, health, ready,
]  # fmt: skip
