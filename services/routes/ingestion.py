"""Uploading documents for ingestion, and following the job. The policy's ``ingest``
action opens these routes (IT and administrators under the shipped policy)."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
from pathlib import Path
from typing import cast

import anyio.to_thread
import yaml
from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.exceptions import ClientException, HTTPException, NotFoundException
from litestar.params import FromPath
from pydantic import ValidationError

from appliance.access.rules import Subject
from appliance.document_reader import PreparationStopped
from appliance.ingest.metadata import SIDECAR_SUFFIX, sidecar_path
from appliance.ingest.parsers import PARSERS
from appliance.ingest.preparation import DocumentOutcome
from appliance.records import DocumentMetadata
from services import metrics
from services.routes.layers import Asker, Service
from services.schemas import JobBody, UploadAccepted
from services.security import ERROR_RESPONSES
from services.state import ServiceState

log = logging.getLogger("services")
MAX_NAME_CHARS = 100
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@post(
    "/documents",
    status_code=202,
    summary="Upload for ingestion (multipart field 'data')",
    responses=ERROR_RESPONSES,
)
async def upload(request: Request, subject: Asker, service: Service) -> UploadAccepted:
    """Files are kept under safe, distinct names (two files called alike both stay); a
    file of a format the appliance cannot read is reported, not dropped. The form is read
    here, so that a malformed or empty multipart body is a 400, not a parser's crash."""
    try:
        form = await request.form()
    except HTTPException:  # over the size limit: the framework's 413
        raise
    except Exception as error:  # whatever the multipart parser makes of a bad body
        raise ClientException(f"not a readable multipart upload: {type(error).__name__}") from None
    files = [f for f in form.getall("data", []) if isinstance(f, UploadFile)]
    fields = {
        k: v.strip() for k in METADATA_FIELDS if isinstance(v := form.get(k), str) and v.strip()
    }
    return await anyio.to_thread.run_sync(_accept_upload, service, subject, files, fields)


METADATA_FIELDS = (
    "doc_id", "title", "version", "doc_type", "effective_from", "effective_to",
    "departments", "sensitivity", "owner", "patient_id",
)  # fmt: skip
"""Form fields that describe the one document uploaded with them (instead of a sidecar)."""


def _sidecar_of(fields: dict[str, str]) -> bytes:
    """The form's metadata as a sidecar, checked as ingestion will check it, so that a bad
    date or an unknown sensitivity is refused here with the field named."""
    values: dict[str, object] = dict(fields)
    if "departments" in fields:
        values["departments"] = [d.strip() for d in fields["departments"].split(",") if d.strip()]
    try:
        DocumentMetadata.model_validate(
            {"doc_id": "upload", "title": "upload", "version": "1", "doc_type": "policy",
             "effective_from": "2000-01-01", **values}
        )  # fmt: skip
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ClientException(f"the document's details are not valid: {problems}") from None
    return yaml.safe_dump(values, sort_keys=True, allow_unicode=True).encode("utf-8")


def _accept_upload(
    service: ServiceState, subject: Subject, files: list[UploadFile], fields: dict[str, str]
) -> UploadAccepted:
    documents = [f for f in files if not (f.filename or "").endswith(SIDECAR_SUFFIX)]
    sidecars = [f for f in files if (f.filename or "").endswith(SIDECAR_SUFFIX)]
    if not documents:
        raise ClientException("no documents in the upload (multipart field 'data')")
    if fields and len(documents) > 1:
        raise ClientException("the document's details describe one file: upload it alone")
    sidecar = _sidecar_of(fields) if fields else None
    job = service.new_job(subject.user_id, [])
    folder = service.uploads_dir / job.job_id
    folder.mkdir(parents=True, mode=0o700)
    stored: dict[str, str] = {}  # the name offered -> the name kept
    for upload_file in documents:
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
        stored[Path(upload_file.filename or "").name] = name
        if sidecar is not None:
            sidecar_path(folder / name).write_bytes(sidecar)
    for upload_file in sidecars:  # details of a document beside it: not a document
        offered = Path(upload_file.filename or "").name
        described = stored.get(offered.removesuffix(SIDECAR_SUFFIX))
        if described is None:
            raise ClientException(f"{offered} describes a file that is not in this upload")
        if sidecar is None:
            sidecar_path(folder / described).write_bytes(upload_file.file.read())
    service.publish(job)
    threading.Thread(target=_run_job, args=(service, job.job_id), daemon=True).start()
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


def _run_job(service: ServiceState, job_id: str) -> None:
    """One document at a time, each read in the document reader and written holding
    the engines, so that questions are answered while a long upload is ingested (a
    background thread: the one place outside a request that takes the engine lock)."""
    job = service.jobs[job_id]
    folder = service.uploads_dir / job_id

    def advance(outcome: DocumentOutcome) -> None:
        if outcome.path.parent != folder.resolve():  # an interrupted document redone alongside
            log.info("ingestion job %s also completed %s", job_id, outcome.doc_id)
            return
        job.done += 1
        error = outcome.error and outcome.error.replace(f"{outcome.path}: ", "")
        reported: dict[str, object] = {
            "file": outcome.path.name, "status": outcome.status, "doc_id": outcome.doc_id,
            "chunks": outcome.chunks, "error": error and error.replace(str(folder), ""),
        }  # fmt: skip
        metrics.ingested("upload", outcome.status)
        if outcome.warning:
            reported["warning"] = outcome.warning
        job.outcomes.append(reported)
        service.publish(job)

    job.state = "running"
    service.publish(job)
    for path in sorted(p for p in folder.iterdir() if not p.name.endswith(SIDECAR_SUFFIX)):
        if service.stopping.is_set():
            job.done += 1
            job.outcomes.append(
                {"file": path.name, "status": "not started", "doc_id": None, "chunks": 0,
                 "error": "the service stopped before this file; upload it again"}
            )  # fmt: skip
            continue
        try:
            service.ingest(path, {}, job.user_id, on_outcome=advance)
        except PreparationStopped:
            job.done += 1
            job.outcomes.append(
                {"file": path.name, "status": "not started", "doc_id": None, "chunks": 0,
                 "error": "the service stopped while reading this file; upload it again"}
            )  # fmt: skip
        except Exception:  # the job reports it without internals; the log has the details
            log.exception("ingestion job %s failed on %s", job_id, path.name)
            job.done += 1
            job.outcomes.append(
                {"file": path.name, "status": "failed", "doc_id": None, "chunks": 0,
                 "error": "ingestion failed; the server log has the details"}
            )  # fmt: skip
        service.publish(job)
    failed = [o for o in job.outcomes if o["status"] == "failed"]
    job.state = "failed" if failed and len(failed) == len(job.files) else "done"
    service.publish(job)


@get(
    "/jobs/{job_id:str}",
    sync_to_thread=False,
    summary="An ingestion job's progress",
    responses=ERROR_RESPONSES,
)
def job_status(job_id: FromPath[str], subject: Asker, service: Service) -> JobBody:
    job = service.job(job_id)
    if job is None or job.user_id != subject.user_id:
        raise NotFoundException()
    return cast(JobBody, dataclasses.asdict(job) | {"total": len(job.files)})
