"""The JSON API. Thin: authenticate, call ``appliance`` or ``audit``, shape the reply."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from litestar import Request, Response, delete, get, post
from litestar.datastructures import Cookie, UploadFile
from litestar.exceptions import ClientException, HTTPException, NotFoundException
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.response import Stream

from appliance.access.break_glass import MAX_DURATION, MAX_REASON_CHARS
from appliance.access.guard import AccessDenied, NotFound
from appliance.access.rules import Subject
from appliance.index.filters import ActiveOn
from appliance.ingest.parsers import PARSERS
from appliance.ingest.pipeline import DocumentOutcome
from appliance.retrieve.hybrid import QueryError
from audit.checkpoints import load_public_key
from audit.index import AuditIndex, Query
from audit.reader import LogReader, exported
from audit.store import PUBLIC_KEY_FILE
from audit.verify import verify_log
from services.auth import require_action, require_subject, session_of
from services.security import ERROR_RESPONSES, request_id_of
from services.security import WELL_FORMED_ID as _WELL_FORMED_ID
from services.state import ServiceState, Verification, now

log = logging.getLogger("services")
MAX_NAME_CHARS = 100
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
MAX_BREAK_GLASS_MINUTES = int(MAX_DURATION.total_seconds() // 60)
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(T[0-9:.+-]+Z?)?$")


def service(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


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
    responses=ERROR_RESPONSES,
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
    return answer.to_dict()


@get(
    "/api/documents/{doc_id:str}",
    sync_to_thread=True,
    summary="A document to show a span in; every view is audited",
    responses=ERROR_RESPONSES,
)
def document(
    request: Request, doc_id: FromPath[str], cited_in: FromQuery[str | None] = None
) -> dict[str, Any]:
    """The document's text and labels, for highlighting a cited span. A document the
    asker may not read answers exactly like one that does not exist. Every view is an
    audit entry saying why it was opened: from an answer's citation (``cited_in``: the
    answer's request id), directly, or only through an emergency grant."""
    state = service(request)
    subject = require_subject(request, state)
    if cited_in is not None and not _WELL_FORMED_ID.match(cited_in):
        raise ClientException("cited_in is the request id of an answer")
    with state.engine_lock:
        try:
            record, grant = state.appliance.guard.document_view(subject, doc_id)
        except NotFound:
            raise NotFoundException() from None
        text = state.appliance.catalog.document_text(doc_id) or ""
        why = "break-the-glass" if grant is not None else "citation" if cited_in else "direct"
        state.appliance.audit_trail.document_viewed(
            subject.user_id, subject.roles, record.metadata, why, request_id_of(request.scope),
            grant_id=None if grant is None else grant.grant_id, cited_in=cited_in,
        )  # fmt: skip
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


@get(
    "/api/history",
    sync_to_thread=True,
    summary="The asker's own recent questions",
    responses=ERROR_RESPONSES,
)
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
    patient_id: str
    minutes: int = 60


@post("/api/break-glass", status_code=200, summary="Emergency access", responses=ERROR_RESPONSES)
async def start_break_glass(
    request: Request, data: JSONBody[BreakGlassRequest]
) -> Response[dict[str, Any]]:
    """Open emergency access to one patient's records. Privilege changes, so the session
    gets a fresh id. The work runs in a thread; the handler itself only sets the
    rotated session's cookies on the response."""
    body = await anyio.to_thread.run_sync(_start_break_glass, request, data)
    return Response(body, cookies=_rotated(request, service(request)))


def _start_break_glass(request: Request, data: BreakGlassRequest) -> dict[str, Any]:
    state = service(request)
    subject = require_subject(request, state)
    if not 1 <= data.minutes <= MAX_BREAK_GLASS_MINUTES:
        raise ClientException(f"minutes is between 1 and {MAX_BREAK_GLASS_MINUTES}")
    if len(data.reason) > MAX_REASON_CHARS:
        raise ClientException(f"a reason has at most {MAX_REASON_CHARS} characters")
    with state.engine_lock:
        try:
            grant = state.appliance.guard.request_break_glass(
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


@delete("/api/break-glass", status_code=200, responses=ERROR_RESPONSES)
async def end_break_glass(request: Request) -> Response[dict[str, bool]]:
    """End every emergency grant of the asker; the session gets a fresh id."""
    ended = await anyio.to_thread.run_sync(_end_break_glass, request)
    return Response({"ended": ended}, cookies=_rotated(request, service(request)))


def _end_break_glass(request: Request) -> bool:
    state = service(request)
    subject = require_subject(request, state)
    with state.engine_lock:
        return state.appliance.guard.end_break_glass(subject, request_id_of(request.scope))


def _rotated(request: Request, state: ServiceState) -> list[Cookie]:
    session = session_of(request)
    if session is None:  # a bearer token: nothing to rotate
        return []
    return state.cookies.signed_in(state.sessions.rotate(session))


@get(
    "/api/me",
    sync_to_thread=True,
    summary="Who is signed in, and what they may open",
    responses=ERROR_RESPONSES,
)
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
        "break_glass_patient": None if grant is None else grant.patient_id,
    }


# -- ingestion (IT and administrators) ------------------------------------------------------


@post(
    "/api/documents",
    status_code=202,
    summary="Upload for ingestion (multipart field 'data')",
    responses=ERROR_RESPONSES,
)
async def upload(request: Request) -> dict[str, Any]:
    """Files are kept under safe, distinct names (two files called alike both stay); a
    file of a format the appliance cannot read is reported, not dropped. The form is read
    here, so that a malformed or empty multipart body is a 400, not a parser's crash."""
    state = service(request)
    subject = await anyio.to_thread.run_sync(require_action, request, state, "ingest")
    try:
        form = await request.form()
    except HTTPException:  # over the size limit: the framework's 413
        raise
    except Exception as error:  # whatever the multipart parser makes of a bad body
        raise ClientException(f"not a readable multipart upload: {type(error).__name__}") from None
    files = [f for f in form.getall("data", []) if isinstance(f, UploadFile)]
    return await anyio.to_thread.run_sync(_accept_upload, state, subject, files)


def _accept_upload(
    state: ServiceState, subject: Subject, files: list[UploadFile]
) -> dict[str, Any]:
    if not files:
        raise ClientException("no files in the upload (multipart field 'data')")
    job = state.new_job(subject.user_id, [])
    folder = state.uploads_dir / job.job_id
    folder.mkdir(parents=True, mode=0o700)
    for upload_file in files:
        name = _stored_name(upload_file.filename or "", set(job.files))
        job.files.append(name)
        if Path(name).suffix.lower() not in PARSERS:
            job.outcomes.append(
                {"file": name, "status": "skipped", "doc_id": None, "chunks": 0,
                 "error": f"not a format the appliance reads ({', '.join(sorted(PARSERS))})"}
            )  # fmt: skip
            job.done += 1
            continue
        (folder / name).write_bytes(upload_file.file.read())
    threading.Thread(target=_run_job, args=(state, job.job_id), daemon=True).start()
    return {"job_id": job.job_id, "files": job.files}


def _stored_name(offered: str, taken: set[str]) -> str:
    """A name safe on disk, short, and not one already in the job."""
    stem, suffix = os.path.splitext(_SAFE_NAME.sub("_", Path(offered).name).strip("._"))
    stem, suffix = (stem or "upload")[:MAX_NAME_CHARS], suffix[:16]
    name, copy = f"{stem}{suffix}", 1
    while name in taken:
        copy += 1
        name = f"{stem}-{copy}{suffix}"
    return name


def _run_job(state: ServiceState, job_id: str) -> None:
    """One document at a time, the engines taken for each and released between them, so
    questions are answered while a long upload is ingested."""
    job = state.jobs[job_id]
    folder = state.uploads_dir / job_id

    def advance(outcome: DocumentOutcome) -> None:
        if outcome.path.parent != folder.resolve():  # an interrupted document redone alongside
            log.info("ingestion job %s also completed %s", job_id, outcome.doc_id)
            return
        job.done += 1
        error = outcome.error and outcome.error.replace(f"{outcome.path}: ", "")
        job.outcomes.append(
            {"file": outcome.path.name, "status": outcome.status, "doc_id": outcome.doc_id,
             "chunks": outcome.chunks, "error": error and error.replace(str(folder), "")}
        )  # fmt: skip

    job.state = "running"
    for path in sorted(folder.iterdir()):
        if state.stopping.is_set():
            job.done += 1
            job.outcomes.append(
                {"file": path.name, "status": "not started", "doc_id": None, "chunks": 0,
                 "error": "the service stopped before this file; upload it again"}
            )  # fmt: skip
            continue
        try:
            with state.engine_lock:
                state.appliance.ingestor.ingest([path], on_outcome=advance, actor=job.user_id)
        except Exception:  # the job reports it without internals; the log has the details
            log.exception("ingestion job %s failed on %s", job_id, path.name)
            job.done += 1
            job.outcomes.append(
                {"file": path.name, "status": "failed", "doc_id": None, "chunks": 0,
                 "error": "ingestion failed; the server log has the details"}
            )  # fmt: skip
    failed = [o for o in job.outcomes if o["status"] == "failed"]
    job.state = "failed" if failed and len(failed) == len(job.files) else "done"


@get(
    "/api/jobs/{job_id:str}",
    sync_to_thread=False,
    summary="An ingestion job's progress",
    responses=ERROR_RESPONSES,
)
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


@get(
    "/api/audit/records",
    sync_to_thread=True,
    summary="Search the audit log",
    responses=ERROR_RESPONSES,
)
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
    officer = require_action(request, state, "review-audit")
    query = Query(
        _time(since, "since"), _time(until, "until"), user or None, event_type or None,
        doc_id or None, None, max(1, min(limit, 1000)),
    )  # fmt: skip
    searched = {k: v for k, v in dataclasses.asdict(query).items() if v is not None}
    _reviewed(request, state, officer, "search", {"query": searched})
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


def _reviewed(
    request: Request, state: ServiceState, officer: Subject, action: str,
    details: dict[str, object],
) -> None:  # fmt: skip
    """Reading the log is itself logged: who searched, opened or exported what."""
    state.appliance.audit_trail.audit_reviewed(
        officer.user_id, officer.roles, action, details, request_id_of(request.scope)
    )


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


@get(
    "/api/audit/records/{position:int}",
    sync_to_thread=True,
    summary="One audit record",
    responses=ERROR_RESPONSES,
)
def audit_record(request: Request, position: FromPath[int]) -> dict[str, Any]:
    """The record, and with a question its answer's record (joined by request id), each
    with its inclusion proof."""
    state = service(request)
    officer = require_action(request, state, "review-audit")
    if position < 0:
        raise NotFoundException()
    _reviewed(request, state, officer, "view record", {"entry": position})
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


@get(
    "/api/audit/status",
    sync_to_thread=True,
    summary="Log integrity at a glance",
    responses=ERROR_RESPONSES,
)
def audit_status(request: Request) -> dict[str, Any]:
    state = service(request)
    require_action(request, state, "review-audit")
    with state.engine_lock:
        reader = LogReader(state.appliance.settings.audit_dir)
        latest = reader.latest_checkpoint()
        size = reader.levels().size
    audit_log, audit_settings = state.appliance.audit_log, state.appliance.settings.audit
    witnessed = audit_log.last_witnessed
    last = state.last_verification
    return {
        "witness": {
            "configured": audit_log.witness_name,
            "last_witnessed": None
            if witnessed is None
            else {"size": witnessed.size, "time": witnessed.time},
            "error": audit_log.witness_error,
            # The entries a cut could remove unseen, and the most there can be.
            "unwitnessed_entries": size - (witnessed.size if witnessed else 0),
            "checkpoint_every_entries": audit_settings.checkpoint_every,
            "checkpoint_every_seconds": audit_settings.checkpoint_seconds,
        },
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


@post(
    "/api/audit/verify",
    sync_to_thread=True,
    status_code=200,
    summary="Verify the log now",
    responses=ERROR_RESPONSES,
)
def audit_verify(request: Request) -> dict[str, Any]:
    state = service(request)
    officer = require_action(request, state, "review-audit")
    _reviewed(request, state, officer, "verify", {})
    directory = state.appliance.settings.audit_dir
    with state.engine_lock:
        witnessed = state.appliance.audit_log.witnessed()
        report = verify_log(
            directory, load_public_key(directory / PUBLIC_KEY_FILE), witnessed=witnessed
        )
    state.last_verification = Verification(
        now(), report.ok, report.entries, report.checkpoints, [str(p) for p in report.problems]
    )
    return dataclasses.asdict(state.last_verification)


@get(
    "/api/audit/export",
    sync_to_thread=True,
    summary="A time range's entries, with proofs",
    responses=ERROR_RESPONSES,
    media_type="application/x-ndjson",
)
def audit_export(
    request: Request, since: FromQuery[str | None] = None, until: FromQuery[str | None] = None
) -> Stream:
    state = service(request)
    officer = require_action(request, state, "review-audit")
    span = {"since": _time(since, "since"), "until": _time(until, "until")}
    _reviewed(request, state, officer, "export", {k: v for k, v in span.items() if v})
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


@get("/health", sync_to_thread=False, summary="The process is up", responses=ERROR_RESPONSES)
def health() -> dict[str, str]:
    return {"status": "ok"}


@get("/ready", sync_to_thread=True, summary="The engines answer", responses=ERROR_RESPONSES)
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
