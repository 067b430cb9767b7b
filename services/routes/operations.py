"""For the load balancer and the monitoring: is the process up, do the engines answer.
``/ready`` (and ``/metrics``) answer only the operations addresses or token
(``OperationsOnlyMiddleware``)."""

from __future__ import annotations

from litestar import Response, get

from services.routes.layers import Engines
from services.schemas import HealthBody, ReadyBody
from services.security import ERROR_RESPONSES


@get("/health", sync_to_thread=False, summary="The process is up", responses=ERROR_RESPONSES)
def health() -> HealthBody:
    return {"status": "ok"}


@get("/ready", sync_to_thread=True, summary="The engines answer", responses=ERROR_RESPONSES)
def ready(engines: Engines) -> Response[ReadyBody]:
    """A failure to open or read the engines is the answer here (503), not an error."""
    try:
        chunks = engines.lexical.count()
        entries = engines.audit_log.size
    except Exception as error:  # readiness reports any failure, it does not raise
        return Response({"status": "not ready", "error": repr(error)}, status_code=503)
    return Response({"status": "ready", "chunks": chunks, "audit_entries": entries})
