"""The IT administrator's side of the API: the documents with their labels and chunk
counts (and removing one), every ingestion job, and the users with their roles,
departments and care teams. Uploads go through ``ingestion``; every change is audited
with the administrator as its actor."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import cast

from litestar import Request, delete, get, patch, post
from litestar.exceptions import ClientException, NotFoundException
from litestar.params import FromPath, JSONBody

from appliance.access.rules import Resource, Subject
from appliance.access.subjects import Attributes, UnknownSubject
from appliance.engines import Appliance
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
    return [_user_body(with_password, s) for s in engines.subjects.subjects().values()]


@dataclass
class Names:
    """Roles, departments and care-team patients, as a change names them."""

    roles: list[str] = field(default_factory=list)
    departments: list[str] = field(default_factory=list)
    care_team: list[str] = field(default_factory=list)

    def attributes(self) -> Attributes:
        return Attributes(
            tuple(r.strip() for r in self.roles if r.strip()),
            tuple(d.strip().lower() for d in self.departments if d.strip()),
            tuple(p.strip() for p in self.care_team if p.strip()),
        )


@dataclass
class NewUser(Names):
    user: str = ""
    new: bool = False
    """The roles or departments named are new to the site (not a typo)."""


@dataclass
class UserChange:
    grant: Names = field(default_factory=Names)
    revoke: Names = field(default_factory=Names)
    new: bool = False


def _user_body(with_password: set[str], subject: Subject) -> UserBody:
    return {
        "user": subject.user_id, "roles": list(subject.roles),
        "departments": list(subject.departments), "care_team": list(subject.care_team),
        "has_password": subject.user_id in with_password,
    }  # fmt: skip


def _known(engines: Appliance, attributes: Attributes, new: bool) -> None:
    """A name the site does not have is a typo unless the administrator says it is new."""
    if new:
        return
    known = engines.vocabulary()
    problem = known.unknown_roles(attributes.roles) or known.unknown_departments(
        attributes.departments
    )
    if problem:
        raise ClientException(f"{problem} (tick 'new' if it is meant)")


@post("/users", sync_to_thread=True, status_code=200, summary="Add a user",
      responses=ERROR_RESPONSES)  # fmt: skip
def add_user(
    data: JSONBody[NewUser], subject: Asker, service: Service, engines: Engines
) -> UserBody:
    """Audited as account_change with the administrator as actor; a password is set
    with ``appliance-web accounts set-password``."""
    attributes = data.attributes()
    _known(engines, attributes, data.new)
    try:
        added = engines.subjects.add(data.user.strip(), attributes, subject.user_id)
    except ValueError as error:
        raise ClientException(str(error)) from None
    return _user_body(set(service.accounts.users()), added)


@patch("/users/{user_id:str}", sync_to_thread=True, summary="Grant and revoke",
       responses=ERROR_RESPONSES)  # fmt: skip
def change_user(
    user_id: FromPath[str], data: JSONBody[UserChange], subject: Asker, service: Service,
    engines: Engines,
) -> UserBody:  # fmt: skip
    """Roles, departments and care-team patients granted and revoked at once; in force
    from the user's next request."""
    grant = data.grant.attributes()
    _known(engines, grant, data.new)
    try:
        changed = engines.subjects.change(
            user_id, subject.user_id, grant=grant, revoke=data.revoke.attributes()
        )
    except UnknownSubject:
        raise NotFoundException(f"no user {user_id!r}") from None
    except ValueError as error:
        raise ClientException(str(error)) from None
    return _user_body(set(service.accounts.users()), changed)


@delete("/users/{user_id:str}", sync_to_thread=True, status_code=200,
        summary="Remove a user", responses=ERROR_RESPONSES)  # fmt: skip
def remove_user(
    user_id: FromPath[str], subject: Asker, service: Service, engines: Engines
) -> RemovedBody:
    """Out of the directory and without a password: their sessions end at once."""
    if user_id == subject.user_id:
        raise ClientException("you cannot remove yourself")
    try:
        engines.subjects.remove(user_id, subject.user_id)
    except UnknownSubject:
        raise NotFoundException(f"no user {user_id!r}") from None
    service.accounts.remove(user_id)
    return {"removed": [user_id]}
