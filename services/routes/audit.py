"""The compliance officer's side of the API: search the log, open a record with its
proof, the log's integrity at a glance, verify now, and export a time range. The
policy's ``review-audit`` action opens these routes, and every read is itself audited."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Any, cast

from litestar import Request, get, post
from litestar.exceptions import ClientException, NotFoundException
from litestar.params import FromPath, FromQuery
from litestar.response import Stream

from appliance.access.rules import Subject
from appliance.engines import Appliance
from audit.checkpoints import load_public_key
from audit.entries import EntryError, time_bound
from audit.index import AuditIndex, Query
from audit.reader import LogReader, exported
from audit.store import PUBLIC_KEY_FILE
from audit.verify import verify_log
from services.routes.layers import Asker, Engines, Service
from services.schemas import AuditRecordBody, AuditRow, AuditStatusBody, VerificationBody
from services.security import ERROR_RESPONSES, request_id_of
from services.state import Verification, now

_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(T[0-9:.+-]+Z?)?$")


def _time(value: str | None, name: str) -> str | None:
    """A range bound as given (the reader compares it as ``audit.entries.time_bound``
    says: a bare date as ``until`` includes that whole day), refused if it is no time."""
    if value is None:
        return None
    try:
        if not _ISO_TIME.match(value):
            raise EntryError(value)
        time_bound(value)
    except EntryError:
        raise ClientException(f"{name} is not an ISO date or time: {value!r}") from None
    return value


def _reviewed(
    request: Request, engines: Appliance, officer: Subject, action: str,
    details: dict[str, object],
) -> None:  # fmt: skip
    """Reading the log is itself logged: who searched, opened or exported what."""
    engines.audit_trail.audit_reviewed(
        officer.user_id, officer.roles, action, details, request_id_of(request.scope)
    )


@get("/records", sync_to_thread=True, summary="Search the audit log", responses=ERROR_RESPONSES)
def audit_records(
    request: Request,
    subject: Asker,
    engines: Engines,
    since: FromQuery[str | None] = None,
    until: FromQuery[str | None] = None,
    user: FromQuery[str | None] = None,
    event_type: FromQuery[str | None] = None,
    doc_id: FromQuery[str | None] = None,
    limit: FromQuery[int] = 200,
) -> list[AuditRow]:
    query = Query(
        _time(since, "since"), _time(until, "until"), user or None, event_type or None,
        doc_id or None, None, max(1, min(limit, 1000)),
    )  # fmt: skip
    searched = {k: v for k, v in dataclasses.asdict(query).items() if v is not None}
    _reviewed(request, engines, subject, "search", {"query": searched})
    index = AuditIndex(engines.audit_log)
    try:
        positions = index.positions(query)
    finally:
        index.close()
    reader = LogReader(engines.settings.audit_dir)
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
    if entry["type"] == "feedback":
        documents = ", ".join(
            f"{d['title']} (owner {d['owner'] or 'none'})" for d in details.get("documents", [])
        )
        comment = f": {details['comment']}" if details.get("comment") else ""
        return f"{details['kind']}{comment} | on: {details['query']} | cited: {documents or 'none'}"
    for key in ("doc_id", "reason", "action", "decision"):
        if key in details:
            return f"{key}: {details[key]}"
    return ""


@get(
    "/records/{position:int}",
    sync_to_thread=True,
    summary="One audit record",
    responses=ERROR_RESPONSES,
)
def audit_record(
    request: Request, position: FromPath[int], subject: Asker, engines: Engines
) -> AuditRecordBody:
    """The record, and with a question its answer's record (joined by request id), each
    with its inclusion proof."""
    if position < 0:
        raise NotFoundException()
    _reviewed(request, engines, subject, "view record", {"entry": position})
    reader = LogReader(engines.settings.audit_dir)
    try:
        entry = json.loads(reader.record(position).entry)
    except (IndexError, ValueError):
        raise NotFoundException() from None
    related = []
    if entry.get("request_id"):
        index = AuditIndex(engines.audit_log)
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


@get("/status", sync_to_thread=True, summary="Log integrity at a glance", responses=ERROR_RESPONSES)
def audit_status(service: Service, engines: Engines) -> AuditStatusBody:
    reader = LogReader(engines.settings.audit_dir)
    latest = reader.latest_checkpoint()
    size = reader.levels().size
    audit_log, audit_settings = engines.audit_log, engines.settings.audit
    witnessed = audit_log.last_witnessed
    last = service.last_verification
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
        "last_verification": None
        if last is None
        else cast(VerificationBody, dataclasses.asdict(last)),
    }


@post(
    "/verify",
    sync_to_thread=True,
    status_code=200,
    summary="Verify the log now",
    responses=ERROR_RESPONSES,
)
def audit_verify(
    request: Request, subject: Asker, service: Service, engines: Engines
) -> VerificationBody:
    _reviewed(request, engines, subject, "verify", {})
    directory = engines.settings.audit_dir
    report = verify_log(
        directory,
        load_public_key(directory / PUBLIC_KEY_FILE),
        witnessed=engines.audit_log.witnessed(),
    )
    service.last_verification = Verification(
        now(), report.ok, report.entries, report.checkpoints, [str(p) for p in report.problems]
    )
    return cast(VerificationBody, dataclasses.asdict(service.last_verification))


@get(
    "/export",
    sync_to_thread=True,
    summary="A time range's entries, with proofs",
    responses=ERROR_RESPONSES,
    media_type="application/x-ndjson",
)
def audit_export(
    request: Request,
    subject: Asker,
    engines: Engines,
    since: FromQuery[str | None] = None,
    until: FromQuery[str | None] = None,
) -> Stream:
    span = {"since": _time(since, "since"), "until": _time(until, "until")}
    _reviewed(request, engines, subject, "export", {k: v for k, v in span.items() if v})
    reader = LogReader(engines.settings.audit_dir)
    rows = list(exported(reader, reader.latest_checkpoint(), span["since"], span["until"]))

    def lines() -> Iterator[str]:
        for row in rows:
            yield json.dumps(row, sort_keys=True) + "\n"

    return Stream(
        lines(),
        media_type="application/x-ndjson",
        headers={"content-disposition": 'attachment; filename="audit-export.jsonl"'},
    )
