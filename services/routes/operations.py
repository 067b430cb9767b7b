"""For the load balancer and the monitoring: is the process up, do the engines answer.
``/ready`` (and ``/metrics``) answer only the operations addresses or token
(``OperationsOnlyMiddleware``)."""

from __future__ import annotations

from collections.abc import Callable

from litestar import Response, get

from services.routes.layers import Engines, Service
from services.schemas import HealthBody, ReadyBody
from services.security import ERROR_RESPONSES


@get("/health", sync_to_thread=False, summary="The process is up", responses=ERROR_RESPONSES)
def health() -> HealthBody:
    return {"status": "ok"}


@get("/ready", sync_to_thread=True, summary="The engines answer", responses=ERROR_RESPONSES)
def ready(service: Service, engines: Engines) -> Response[ReadyBody]:
    """Each store asked in turn; a failure to open or read one, or a store that does not
    hold what the catalog vouches for (a server that lost its index), is the answer here
    (503, naming the store), not an error. Until the models have warmed up, 503 too:
    a load balancer sends no clinician to a process that would make them wait."""
    if not service.warmed.is_set():
        return Response({"status": "warming up", "error": "loading the models"}, status_code=503)
    counts: dict[str, int] = {}
    probes: dict[str, Callable[[], int]] = {
        "lexical": lambda: engines.lexical.count(),
        "vectors": lambda: engines.vectors.count(),
        "audit": lambda: engines.audit_log.size,
    }
    if (graph := engines.knowledge_graph) is not None:
        probes["graph"] = graph.count
    for store, probe in probes.items():
        try:
            counts[store] = probe()
        except Exception as error:  # readiness reports any failure, it does not raise
            return _not_ready(store, str(error))
    vouched = engines.catalog.chunk_count()
    for store in ("lexical", "vectors", "graph"):
        if store in counts and counts[store] != vouched:
            return _not_ready(
                store,
                f"holds {counts[store]} chunks where the catalog vouches for {vouched}; "
                "run 'appliance docs rebuild-stores'",
            )
    return Response(
        {"status": "ready", "chunks": counts["lexical"], "audit_entries": counts["audit"]}
    )


def _not_ready(store: str, error: str) -> Response[ReadyBody]:
    return Response({"status": "not ready", "store": store, "error": error}, status_code=503)
