"""The Litestar application: the JSON API, the clinician's and the compliance officer's
pages, health, readiness and Prometheus metrics, behind sessions, CSRF, security headers,
body-size limits and rate limits.

    appliance-web serve        # http://127.0.0.1:8080
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
from litestar import Litestar, Request, Response, Router, get
from litestar.exceptions import HTTPException
from litestar.middleware import DefineMiddleware
from litestar.middleware.rate_limit import RateLimitConfig, get_remote_address
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.plugins.prometheus import PrometheusConfig, PrometheusController
from litestar.static_files import create_static_files_router

from appliance.engines import Appliance
from appliance.generate.base import GeneratorUnavailable
from appliance.index.base import StoreUnavailable
from appliance.index.stores import single_process_reason
from appliance.owner import claim, release
from appliance.settings import ServiceSettings, Settings
from services import metrics
from services.auth import session_of
from services.pages import PAGE_HANDLERS, STATIC, login
from services.routes import api_routers
from services.routes.layers import service_state
from services.security import (
    HardeningMiddleware,
    JsonDepthMiddleware,
    OperationsOnlyMiddleware,
    RequestIdFilter,
)
from services.sessions import PreLoginToken, SessionMiddleware
from services.shared import SharedStore
from services.state import ServiceState

log = logging.getLogger("services")


def _secret(path: Path) -> str:
    """A per-installation secret (pre-sign-in CSRF tokens), created once, readable by the
    owner only."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(32))
    return path.read_text().strip()


def _asker(request: Request) -> str:
    """Questions are limited per person, not per address: a ward's workstations often
    reach the appliance through one proxy."""
    session = session_of(request)
    if session is not None:
        return f"user:{session.user_id}"
    authorization = request.headers.get("authorization", "")
    if authorization:
        return "token:" + hashlib.sha256(authorization.encode()).hexdigest()[:32]
    return f"address:{get_remote_address(request)}"


def _log_errors(request: Request, error: Exception) -> Response[dict[str, object]]:
    """Unexpected errors: logged with the request id, answered without internals."""
    if isinstance(error, HTTPException):
        body: dict[str, object] = {"status_code": error.status_code, "detail": error.detail}
        if error.extra:  # which field failed validation, and why
            body["extra"] = error.extra
        return Response(body, status_code=error.status_code, headers=error.headers)
    if isinstance(error, StoreUnavailable | GeneratorUnavailable):
        # A part the answer needs is down: say so, and when to try again; the log (and
        # the audit record the answer path wrote) holds which server and why.
        log.error("unavailable on %s %s: %s", request.method, request.url.path, error)
        part = "generator" if isinstance(error, GeneratorUnavailable) else f"{error.store} store"
        detail = f"The {part} is not answering, so no answer was given. Try again shortly."
        return Response(
            {"status_code": 503, "detail": detail}, status_code=503, headers={"Retry-After": "30"}
        )
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return Response({"status_code": 500, "detail": "internal error"}, status_code=500)


class MetricsController(PrometheusController):
    """Prometheus text for the scraper (``OperationsOnlyMiddleware`` guards it); not part
    of the JSON API's schema. The gauges are read from the data directory first."""

    include_in_schema = False

    @get()
    async def get(self, request: Request) -> Response:
        await anyio.to_thread.run_sync(metrics.refresh, service_state(request))
        return await PrometheusController.get.fn(self)


def uvicorn_options(settings: Settings) -> dict[str, object]:
    """How uvicorn must run the app: forwarded addresses believed only from the proxies
    the site configured (uvicorn's own default trusts loopback)."""
    proxies = settings.services.trusted_proxies
    return {
        "proxy_headers": bool(proxies),
        "forwarded_allow_ips": ",".join(proxies) if proxies else "",
        "server_header": False,
    }


def local_url(services: ServiceSettings) -> str:
    """Where a command on this machine reaches the service."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(services.host, services.host)
    return f"http://[{host}]:{services.port}" if ":" in host else f"http://{host}:{services.port}"


def create_app(settings: Settings | None = None, appliance: Appliance | None = None) -> Litestar:
    """The application. ``appliance``: engines already open (they stay open when the
    application stops); otherwise the application opens its own and closes them."""
    settings = settings or (appliance.settings if appliance else Settings())
    owned = appliance is None
    appliance = appliance or Appliance(settings)
    service_settings = settings.services
    state = ServiceState(appliance, service_settings)
    logging.getLogger().addFilter(RequestIdFilter())

    @asynccontextmanager
    async def lifespan(_app: Litestar) -> AsyncIterator[None]:
        state.stopping.clear()
        with state.engine_lock:  # what a crash left half-written is not searchable
            cleaned = appliance.ingestor.reconcile()
        if cleaned:
            log.warning(
                "startup: %d interrupted document(s) taken out of the stores: %s",
                len(cleaned),
                ", ".join(cleaned),
            )
        if single_process_reason(settings) is not None:  # the operator's commands come here
            state.store_owner = claim(settings.data_dir, local_url(service_settings))
        if service_settings.warm_up:
            threading.Thread(target=state.warm_up, name="warm-up", daemon=True).start()
        else:
            state.warmed.set()
        try:
            yield
        finally:
            if state.store_owner is not None:
                release(settings.data_dir, state.store_owner)
            # Ingestion stops before its next document; the one being written finishes
            # (it holds the engines), then the engines close.
            state.stopping.set()
            state.preparation.close()  # a document being read is dropped, never half-written
            if owned:
                with state.engine_lock:
                    appliance.close()

    operations_token = (
        service_settings.operations_token_file.read_text("utf-8").strip()
        if service_settings.operations_token_file
        else None
    )
    pre_login = PreLoginToken(_secret(settings.data_dir / "services" / "csrf-secret"))
    login_limit = RateLimitConfig(
        rate_limit=("minute", service_settings.login_per_minute), store="login-rate"
    )
    ask_limit = RateLimitConfig(
        rate_limit=("minute", service_settings.ask_per_minute),
        store="ask-rate",
        identifier_for_request=_asker,
    )
    others = [h for h in PAGE_HANDLERS if h is not login]
    app = Litestar(
        route_handlers=[
            *api_routers(service_settings, ask_limit),
            *others,
            Router("/", route_handlers=[login], middleware=[login_limit.middleware]),
            MetricsController,
            create_static_files_router(path="/static", directories=[STATIC]),
        ],
        middleware=[
            DefineMiddleware(HardeningMiddleware, secure=service_settings.secure_cookies),
            DefineMiddleware(
                OperationsOnlyMiddleware,
                addresses=tuple(service_settings.operations_addresses),
                token=operations_token,
            ),
            DefineMiddleware(JsonDepthMiddleware, max_bytes=service_settings.max_request_bytes),
            PrometheusConfig(app_name="clinical_appliance", group_path=True).middleware,
            DefineMiddleware(
                SessionMiddleware,
                sessions=state.sessions,
                stamp=state.accounts.stamp,
                pre_login=pre_login,
                cookies=state.cookies,
            ),
        ],
        stores={
            "login-rate": SharedStore(state.shared, "login-rate"),
            "ask-rate": SharedStore(state.shared, "ask-rate"),
        },
        request_max_body_size=service_settings.max_request_bytes,
        # The schema as JSON only: the HTML viewers load scripts from CDNs.
        openapi_config=OpenAPIConfig(
            title="Clinical question-answering appliance",
            version="1",
            path="/api/schema",
            render_plugins=[JsonRenderPlugin()],
        ),
        exception_handlers={Exception: _log_errors},
        lifespan=[lifespan],
    )
    app.state.service = state
    return app
