"""Request ids, security headers and CSRF, as ASGI middleware.

- Every request gets an id (a well-formed ``X-Request-ID`` from a proxy is kept), which
  goes into the logs, the response and the audit record of the question it carries.
- Every response carries a strict Content-Security-Policy (only this origin's scripts
  and styles, no inline script, no framing) and the usual hardening headers.
- CSRF: Litestar's double-submit check, except for requests that carry a bearer token:
  those authenticate by the token alone (a session cookie beside it is ignored), and a
  forged cross-site request cannot add an Authorization header.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid

from litestar.datastructures import MutableScopeHeaders
from litestar.middleware.csrf import CSRFMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

REQUEST_ID_HEADER = "x-request-id"
SESSION_COOKIE = "session"
_WELL_FORMED_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}

current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar(
    "current_request_id", default="-"
)


class RequestIdFilter(logging.Filter):
    """Puts the current request id on every log record (``%(request_id)s``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True


def request_id_of(scope: Scope) -> str:
    return str(scope.get("state", {}).get("request_id", "-"))


class HardeningMiddleware:
    """Request id in, request id and security headers out."""

    def __init__(self, app: ASGIApp, secure: bool) -> None:
        self.app = app
        self.secure = secure

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        offered = dict(scope["headers"]).get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1")
        request_id = offered if _WELL_FORMED_ID.match(offered) else str(uuid.uuid4())
        scope.setdefault("state", {})["request_id"] = request_id
        token = current_request_id.set(request_id)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableScopeHeaders.from_message(message)
                headers[REQUEST_ID_HEADER] = request_id
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                if self.secure:
                    headers["strict-transport-security"] = "max-age=31536000"
                if scope["path"].startswith("/api/"):
                    headers["cache-control"] = "no-store"
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            current_request_id.reset(token)


class CSRFUnlessBearerMiddleware(CSRFMiddleware):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            authorization = dict(scope["headers"]).get(b"authorization", b"")
            if authorization.lower().startswith(b"bearer "):
                await self.app(scope, receive, send)
                return
        await super().__call__(scope, receive, send)
