"""The IT administrator's side of the API: the documents with their labels and chunk
counts (and removing one), every ingestion job, and the users with their roles,
departments and care teams. Uploads go through ``ingestion``; every change is audited
with the administrator as its actor."""

from __future__ import annotations

import dataclasses
from typing import cast

from litestar import Request, delete, get
from litestar.exceptions import NotFoundException
from litestar.params import FromPath

from appliance.access.rules import Resource
from services.routes.layers import Asker, Engines, Service
from services.schemas import AdminDocumentBody, JobBody, RemovedBody, UserBody
from services.security import ERROR_RESPONSES
from services.shared import recent_jobs
from services.state import IngestJob

WITHHELD_TITLE = "restricted document (title withheld)"


@get("/documents", sync_to_thread=True, summary="Every document", responses=ERROR_RESPONSES)
def documents(subject: Asker, engines: Engines) -> list[AdminDocumentBody]:
    """Labels, version, dates and chunk counts; the title of a document the
    administrator may not read is withheld (a care plan's title names its patient)."""
    catalog, guard = engines.catalog, engines.guard
    listed: list[AdminDocumentBody] = []
    for record in catalog.documents():
        meta = record.metadata
        title = meta.title
        first = sorted(catalog.chunk_ids_of(record.doc_id))[:1]
        chunk = catalog.chunks(first).get(first[0]) if first else None
        if chunk is None or not guard.decide(subject, Resource.of(chunk), "read").allowed:
            title = WITHHELD_TITLE if meta.sensitivity == "restricted" else title
        listed.append(
            {
                "doc_id": record.doc_id,
                "title": title,
                "version": meta.version,
                "doc_type": meta.doc_type,
                "effective_from": meta.effective_from.isoformat(),
                "effective_to": meta.effective_to.isoformat() if meta.effective_to else None,
                "sensitivity": meta.sensitivity,
                "departments": list(meta.departments),
                "owner": meta.owner,
                "chunks": record.chunk_count,
                "state": record.state,
                "ingested_at": record.ingested_at,
            }
        )
    return listed


@delete(
    "/documents/{doc_id:str}",
    sync_to_thread=True,
    status_code=200,
    summary="Remove a document from every store",
    responses=ERROR_RESPONSES,
)
def remove_document(
    request: Request, doc_id: FromPath[str], subject: Asker, service: Service
) -> RemovedBody:
    """Gone from the stores and the catalog; the removal is audited with the
    administrator. An id the catalog does not hold is a 404."""
    if service.appliance.catalog.document(doc_id) is None:
        raise NotFoundException(f"no document {doc_id!r}")
    with service.engine_lock:
        removed = service.appliance.ingestor.remove([doc_id], actor=subject.user_id)
    return {"removed": removed}


@get("/jobs", sync_to_thread=True, summary="Recent ingestion jobs", responses=ERROR_RESPONSES)
def jobs(service: Service) -> list[JobBody]:
    """Everyone's jobs, latest first, with their progress and each file's outcome."""
    return [
        cast(JobBody, dataclasses.asdict(job) | {"total": len(job.files)})
        for job in (IngestJob(**body) for body in recent_jobs(service.shared))  # type: ignore[arg-type]
    ]


@get("/users", sync_to_thread=True, summary="The local users", responses=ERROR_RESPONSES)
def users(service: Service, engines: Engines) -> list[UserBody]:
    """Who may sign in locally and what the directory gives them (changed with
    ``appliance users``)."""
    with_password = set(service.accounts.users())
    return [
        {
            "user": s.user_id,
            "roles": list(s.roles),
            "departments": list(s.departments),
            "care_team": list(s.care_team),
            "has_password": s.user_id in with_password,
        }
        for s in engines.subjects.subjects().values()
    ]
