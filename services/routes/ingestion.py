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
from litestar import Request, get, post
from litestar.datastructures import UploadFile
from litestar.exceptions import ClientException, HTTPException, NotFoundException
from litestar.params import FromPath

from appliance.access.rules import Subject
from appliance.ingest.parsers import PARSERS
from appliance.ingest.pipeline import DocumentOutcome
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
    return await anyio.to_thread.run_sync(_accept_upload, service, subject, files)


def _accept_upload(
    service: ServiceState, subject: Subject, files: list[UploadFile]
) -> UploadAccepted:
    if not files:
        raise ClientException("no files in the upload (multipart field 'data')")
    job = service.new_job(subject.user_id, [])
    folder = service.uploads_dir / job.job_id
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
    """One document at a time, the engines taken for each and released between them, so
    questions are answered while a long upload is ingested (a background thread: the one
    place outside a request that takes the engine lock itself)."""
    job = service.jobs[job_id]
    folder = service.uploads_dir / job_id

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
        service.publish(job)

    job.state = "running"
    service.publish(job)
    for path in sorted(folder.iterdir()):
        if service.stopping.is_set():
            job.done += 1
            job.outcomes.append(
                {"file": path.name, "status": "not started", "doc_id": None, "chunks": 0,
                 "error": "the service stopped before this file; upload it again"}
            )  # fmt: skip
            continue
        try:
            with service.engine_lock:
                service.appliance.ingestor.ingest([path], on_outcome=advance, actor=job.user_id)
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
