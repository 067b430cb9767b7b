"""The operator's commands, sent by ``appliance`` while this service holds the embedded
stores (``appliance.owner``): ingest, remove documents, search, ask, and the golden-set
evaluation (each question holding the engines in turn, so that clinicians' questions go
on between the evaluation's). Only a command of the
data directory's own account can call them: it presents the token the service drew when
it started, which only that account can read. Not part of the public API's schema.

Ingestion reads each document in the document reader and takes the engines only to
write it, as an upload's job does, so that questions are answered meanwhile.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import getpass
import hmac
import json
import logging
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from litestar import post
from litestar.connection import ASGIConnection
from litestar.exceptions import ClientException, NotAuthorizedException
from litestar.handlers import BaseRouteHandler
from litestar.params import JSONBody
from litestar.response import Stream
from pydantic import BaseModel, Field

from appliance.access.subjects import UnknownSubject
from appliance.document_reader import PreparationStopped
from appliance.eval.golden import NoDocuments, evaluate
from appliance.index.filters import ActiveOn, requested_filter
from appliance.ingest.preparation import discover
from appliance.retrieve.hybrid import QueryError
from services import metrics
from services.routes.layers import Service, service_state

log = logging.getLogger(__name__)


async def operator(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    owner = service_state(connection).store_owner
    offered = connection.headers.get("authorization", "")
    expected = f"Bearer {owner.token}" if owner is not None else ""
    if not expected or not hmac.compare_digest(offered.encode(), expected.encode()):
        raise NotAuthorizedException("an operator command of this data directory's account")


class IngestOrder(BaseModel):
    paths: list[str] = Field(min_length=1)
    defaults: dict[str, Any] = {}
    prune: bool = False


class RemoveOrder(BaseModel):
    doc_ids: list[str] = Field(min_length=1)


class SearchOrder(BaseModel):
    question: str
    user: str
    top_k: int = Field(10, ge=1, le=100)
    mode: Literal["hybrid", "lexical", "dense"] = "hybrid"
    departments: list[str] = []
    sensitivities: list[str] = []
    doc_types: list[str] = []
    as_of: dt.date | None = None
    all_dates: bool = False
    rerank: bool = True


class AskOrder(BaseModel):
    question: str
    user: str
    as_of: dt.date | None = None
    generator: str | None = None
    """The generator the command asked for: refused unless it is the service's own."""


class EvalOrder(BaseModel):
    golden: str
    generator: str | None = None
    user: str | None = None


@post("/ingest", sync_to_thread=True, include_in_schema=False, status_code=200)
def ingest(data: JSONBody[IngestOrder], service: Service) -> dict[str, Any]:
    files = discover([Path(p) for p in data.paths])
    actor = f"operator:{getpass.getuser()}"
    outcomes = []
    for path in files:
        if service.stopping.is_set():
            break
        try:
            report = service.ingest(path, data.defaults, actor)
        except PreparationStopped:
            break
        for outcome in report.outcomes:
            metrics.ingested("command", outcome.status)
        outcomes += [
            {
                "path": str(o.path),
                "outcome": {"status": o.status, "doc_id": o.doc_id, "chunks": o.chunks,
                            "error": o.error, "warning": o.warning},
            }
            for o in report.outcomes
        ]  # fmt: skip
    pruned: list[str] = []
    if data.prune:
        with service.engine_lock:
            pruned = service.appliance.ingestor.prune()
    return {"outcomes": outcomes, "pruned": pruned}


@post("/remove", sync_to_thread=True, include_in_schema=False, status_code=200)
def remove(data: JSONBody[RemoveOrder], service: Service) -> dict[str, Any]:
    with service.engine_lock:
        return {"removed": service.appliance.ingestor.remove(data.doc_ids)}


@post("/search", sync_to_thread=True, include_in_schema=False, status_code=200)
def search(data: JSONBody[SearchOrder], service: Service) -> dict[str, Any]:
    search_filter = requested_filter(
        data.departments, data.sensitivities, data.doc_types, data.as_of, data.all_dates
    )
    with service.engine_lock, _refused_as_bad_requests():
        appliance = service.appliance
        subject = appliance.subjects.get(data.user)
        result = appliance.query.run(
            data.question, subject, data.top_k, search_filter, data.mode, data.rerank
        )
    return result.report(data.question, data.user, search_filter)


@post("/ask", sync_to_thread=True, include_in_schema=False, status_code=200)
def ask(data: JSONBody[AskOrder], service: Service) -> dict[str, Any]:
    """As ``appliance ask`` answers, and audited alike (the asker is the user named)."""
    _same_generator(service, data.generator)
    day = data.as_of or dt.date.today()
    with service.engine_lock, _refused_as_bad_requests():
        appliance = service.appliance
        subject = appliance.subjects.get(data.user)
        answer = appliance.answers.ask(data.question, subject, ActiveOn(day), in_force_on=day)
    metrics.answered(answer)
    return answer.to_dict()


class EvaluationStopped(Exception):
    """The command went away, or the service is stopping: the evaluation ends."""


@post("/eval", include_in_schema=False, status_code=200, media_type="application/x-ndjson")
async def golden_eval(data: JSONBody[EvalOrder], service: Service) -> Stream:
    """The golden-set evaluation, as lines of JSON: ``{"done", "total"}`` after each
    question, then ``{"report"}`` (a ``GoldenReport``), or ``{"error", "code"}``."""
    _same_generator(service, data.generator)
    golden = Path(data.golden)
    if not golden.is_file():
        raise ClientException(f"{golden} is not a file this service can read")
    lines: queue.Queue[dict[str, Any]] = queue.Queue()
    gone = threading.Event()

    def told(done: int, total: int) -> None:
        if gone.is_set() or service.stopping.is_set():
            raise EvaluationStopped
        lines.put({"done": done, "total": total})

    def run() -> None:
        appliance = service.appliance
        try:
            reader = appliance.subjects.get(data.user) if data.user else None
            report = evaluate(
                appliance, golden, told, hold=lambda: service.engine_lock, reader=reader
            )
            lines.put({"report": dataclasses.asdict(report)})
        except UnknownSubject as error:
            lines.put({"error": f"{error}; see 'appliance users list'", "code": 2})
        except EvaluationStopped:
            lines.put({"error": "the evaluation stopped: the service is stopping", "code": 3})
        except NoDocuments as error:
            lines.put({"error": str(error), "code": 2})
        except (ValueError, KeyError) as error:  # a malformed golden file
            lines.put({"error": f"{golden}: {error!r}", "code": 2})
        except Exception as error:  # said to the command and logged, not swallowed
            log.exception("golden evaluation of %s failed", golden)
            lines.put({"error": f"the evaluation failed: {error}", "code": 3})

    threading.Thread(target=run, name="golden-eval", daemon=True).start()

    def stream() -> Iterator[str]:
        try:
            while True:
                line = lines.get()
                yield json.dumps(line) + "\n"
                if "done" not in line:
                    return
        finally:
            gone.set()  # the command left early: stop after the question being asked

    return Stream(stream(), media_type="application/x-ndjson")


@contextmanager
def _refused_as_bad_requests() -> Iterator[None]:
    """An unknown user or a question the engines refuse, as the command's error (400)."""
    try:
        yield
    except UnknownSubject as error:
        raise ClientException(f"{error}; see 'appliance users list'") from None
    except (QueryError, ValueError) as error:
        raise ClientException(str(error)) from None


def _same_generator(service: Service, asked: str | None) -> None:
    own = service.appliance.settings.generator.kind
    if asked is not None and asked != own:
        raise ClientException(
            f"the running service answers with the {own} generator; stop it to use {asked}, "
            "or leave out --generator"
        )
