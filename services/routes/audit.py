"""The compliance officer's side of the API: search the log, open a record with its
proof, the log's integrity at a glance, verify now, and export a time range. The
policy's ``review-audit`` action opens these routes, and every read is itself audited."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from litestar import Request, get, post
from litestar.exceptions import ClientException, NotFoundException
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.response import Response, Stream

from appliance.access.rules import Subject
from appliance.engines import Appliance
from audit.checkpoints import load_public_key
from audit.entries import EntryError, time_bound
from audit.index import AuditIndex, Query
from audit.reader import LogReader, exported
from audit.report import PeriodReport, period_report
from audit.store import PUBLIC_KEY_FILE
from audit.summaries import named_ids, summary
from audit.verify import verify_log
from services.routes.layers import Asker, Engines, Service
from services.schemas import (
    AuditPageBody,
    AuditRecordBody,
    AuditRow,
    AuditStatusBody,
    PassageBody,
    ReviewAccepted,
    VerificationBody,
)
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
    document: FromQuery[str | None] = None,
    offset: FromQuery[int] = 0,
    limit: FromQuery[int] = 50,
) -> AuditPageBody:
    """A page of the entries that match, newest first, with how many match in all. The
    user and the document are matched whatever their case; the document by its id or by
    words of its title."""
    named = (document or "").strip()
    query = Query(
        _time(since, "since"), _time(until, "until"), (user or "").strip() or None,
        event_type or None, named or None, None, max(1, min(limit, 500)),
        doc_ids=_documents_titled(engines, named), offset=max(0, offset), newest_first=True,
        ignore_case=True,
    )  # fmt: skip
    searched = {
        k: v for k, v in dataclasses.asdict(query).items()
        if v not in (None, (), 0, False) and k not in ("limit", "newest_first", "ignore_case")
    }  # fmt: skip
    _reviewed(request, engines, subject, "search", {"query": searched})
    index = AuditIndex(engines.audit_log)
    try:
        positions, total = index.positions(query), index.count(query)
    finally:
        index.close()
    reader = LogReader(engines.settings.audit_dir)
    found = _entries_at(reader, positions)
    entries = [(p, found[p]) for p in positions]
    names = _names(engines, named_ids([e for _, e in entries]))
    rows: list[AuditRow] = [
        {
            "entry": position,
            "time": e["time"],
            "type": e["type"],
            "user": e["actor"]["user"],
            "request_id": e.get("request_id"),
            "summary": summary(e, names),
        }
        for position, e in entries
    ]
    return {"total": total, "offset": query.offset, "limit": query.limit, "rows": rows}


def _documents_titled(engines: Appliance, words: str) -> tuple[str, ...]:
    """The catalog's documents whose title holds ``words`` (any case): a removed
    document is still found by its id, which the search matches as well."""
    wanted = words.casefold()
    if not wanted:
        return ()
    return tuple(
        record.doc_id
        for record in engines.catalog.documents()
        if wanted in record.metadata.title.casefold()
    )


def _names(engines: Appliance, ids: set[str]) -> dict[str, str]:
    """What a person calls each document and passage among ``ids``: title and version,
    and for a passage its section. Ids the catalog no longer holds are left out."""
    catalog = engines.catalog
    names: dict[str, str] = {}
    for chunk_id, chunk in catalog.chunks(sorted(ids)).items():
        section = " > ".join(chunk.heading_path)
        meta = chunk.metadata
        names[chunk_id] = f"{meta.title} v{meta.version}" + (f", {section}" if section else "")
    for doc_id in ids - names.keys():
        record = catalog.document(doc_id)
        if record is not None:
            names[doc_id] = f"{record.metadata.title} ({doc_id})"
    return names


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
            {"entry": p, **entry}
            for p, entry in _entries_at(reader, others).items()
            if p != position
        ]
    proof = reader.inclusion_proof(position)
    return {
        "entry": position,
        "record": entry,
        "related": related,
        "passages": _passages(engines, [entry, *related]),
        "proof": {
            "tree_size": proof.size,
            "root": proof.root.hex(),
            "path": [h.hex() for h in proof.path],
        },
    }


def _passages(engines: Appliance, entries: list[dict[str, Any]]) -> dict[str, PassageBody]:
    """Each passage the entries name (found, shown, cited), as the officer needs it to see
    why it was there: its document, section, version and words. A passage the catalog no
    longer holds (its document removed or replaced) is absent: the hash stays the proof."""
    ids: set[str] = set()
    for entry in entries:
        details = entry.get("details", {})
        ids.update(c["chunk_id"] for c in details.get("candidates", []))
        ids.update(c["chunk_id"] for c in details.get("checks", []) if "chunk_id" in c)
        ids.update(details.get("chunk_ids", []) if entry.get("type") != "ingestion" else [])
    return {
        chunk_id: {
            "doc_id": chunk.doc_id,
            "title": chunk.metadata.title,
            "version": chunk.metadata.version,
            "section": " > ".join(chunk.heading_path),
            "text": chunk.text,
        }
        for chunk_id, chunk in engines.catalog.chunks(sorted(ids)).items()
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


MAX_REVIEW_NOTE_CHARS = 2000


def _entries_at(reader: LogReader, positions: list[int]) -> dict[int, dict[str, Any]]:
    """The entries at ``positions``, read in one pass from the first of them (reading
    each on its own would scan the log once per entry)."""
    wanted = set(positions)
    if not wanted:
        return {}
    return {
        record.position: json.loads(record.entry)
        for record in reader.records(min(wanted))
        if record.position in wanted
    }


def _period_report(engines: Appliance, since: str | None, until: str | None) -> PeriodReport:
    index = AuditIndex(engines.audit_log)
    try:
        in_period = index.positions(Query(since, until, limit=10_000_000))
        reviews = index.positions(Query(event_type="break_glass_reviewed", limit=10_000_000))
    finally:
        index.close()
    reader = LogReader(engines.settings.audit_dir)
    subjects = engines.subjects.subjects()
    return period_report(
        list(_entries_at(reader, in_period).values()), since, until,
        reviews=list(_entries_at(reader, reviews).values()),
        departments={user: s.departments for user, s in subjects.items()},
        titles={d.doc_id: d.metadata.title for d in engines.catalog.documents()},
        review_days=engines.settings.audit.break_glass_review_days,
    )  # fmt: skip


@get("/report", sync_to_thread=True, summary="A period's report", responses=ERROR_RESPONSES)
def audit_report(
    request: Request,
    subject: Asker,
    engines: Engines,
    since: FromQuery[str | None] = None,
    until: FromQuery[str | None] = None,
) -> PeriodReport:
    """Activity by user, department, document and event type, refusal and flag rates,
    emergency accesses with their review, and alerts."""
    span = {"since": _time(since, "since"), "until": _time(until, "until")}
    _reviewed(request, engines, subject, "report", {k: v for k, v in span.items() if v})
    return _period_report(engines, span["since"], span["until"])


@get(
    "/report.csv",
    sync_to_thread=True,
    summary="A period's report as CSV",
    responses=ERROR_RESPONSES,
    media_type="text/csv",
)
def audit_report_csv(
    request: Request,
    subject: Asker,
    engines: Engines,
    since: FromQuery[str | None] = None,
    until: FromQuery[str | None] = None,
) -> Response[str]:
    """The same report, one figure a row, to hand on or open in a spreadsheet."""
    span = {"since": _time(since, "since"), "until": _time(until, "until")}
    _reviewed(request, engines, subject, "report", {**{k: v for k, v in span.items() if v},
                                                    "format": "csv"})  # fmt: skip
    report = _period_report(engines, span["since"], span["until"])
    return Response(
        report.to_csv(), media_type="text/csv",
        headers={"content-disposition": 'attachment; filename="audit-report.csv"'},
    )  # fmt: skip


@dataclass
class ReviewRequest:
    note: str = ""


@post(
    "/break-glass/{grant_id:int}/review",
    sync_to_thread=True,
    status_code=200,
    summary="Record that an emergency access was reviewed",
    responses=ERROR_RESPONSES,
)
def review_break_glass(
    request: Request,
    grant_id: FromPath[int],
    data: JSONBody[ReviewRequest],
    subject: Asker,
    engines: Engines,
) -> ReviewAccepted:
    """The officer's review of one emergency access, with a note: audited, and from then
    on the grant is shown as reviewed in every report. A grant is reviewed once."""
    if len(data.note) > MAX_REVIEW_NOTE_CHARS:
        raise ClientException(f"a note has at most {MAX_REVIEW_NOTE_CHARS} characters")
    index = AuditIndex(engines.audit_log)
    try:
        granted = index.positions(Query(event_type="break_glass_granted", limit=10_000_000))
        reviewed = index.positions(Query(event_type="break_glass_reviewed", limit=10_000_000))
    finally:
        index.close()
    reader = LogReader(engines.settings.audit_dir)
    if not any(e["details"]["grant_id"] == grant_id for e in _entries_at(reader, granted).values()):
        raise NotFoundException(f"no emergency access {grant_id}")
    for earlier in _entries_at(reader, reviewed).values():
        if earlier["details"]["grant_id"] == grant_id:
            raise ClientException(
                f"emergency access {grant_id} was reviewed by {earlier['actor']['user']} "
                f"at {earlier['time']}"
            )
    receipt = engines.audit_trail.break_glass_reviewed(
        subject, grant_id, data.note.strip(), request_id_of(request.scope)
    )
    return {"recorded": True, "audit_entry": receipt.position}
