"""Request ids, security headers and CSRF, as ASGI middleware.

- Every request gets an id (a well-formed ``X-Request-ID`` from a proxy is kept), which
  goes into the logs, the response and the audit record of the question it carries.
- Every response carries a strict Content-Security-Policy (only this origin's scripts
  and styles, no inline script, no framing) and the usual hardening headers.

Sessions and CSRF are ``sessions.py``'s.
"""

from __future__ import annotations

import contextvars
import hmac
import json
import logging
import re
import uuid
from dataclasses import dataclass

from litestar.datastructures import MutableScopeHeaders
from litestar.openapi import ResponseSpec
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Message,
    Receive,
    ReceiveMessage,
    Scope,
    Send,
)

REQUEST_ID_HEADER = "x-request-id"
WELL_FORMED_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")

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
        request_id = offered if WELL_FORMED_ID.match(offered) else str(uuid.uuid4())
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


MAX_JSON_DEPTH = 32


def json_depth(body: bytes) -> int:
    """How deep brackets nest in a JSON text, strings skipped: checked before any parser
    recurses into it."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


async def refuse(send: Send, status: int, detail: str) -> None:
    """A JSON error answered by middleware, before any handler runs."""
    body = json.dumps({"status_code": status, "detail": detail}).encode()
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))],
    }
    end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": body, "more_body": False}
    await send(start)
    await send(end)


class JsonDepthMiddleware:
    """Refuses JSON bodies nested deeper than any request of the API needs (a 10,000-deep
    array is a way to exhaust the parser's stack, not a question)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        content_type = dict(scope.get("headers", [])).get(b"content-type", b"")
        if scope["type"] != "http" or b"json" not in content_type.lower():
            await self.app(scope, receive, send)
            return
        messages: list[ReceiveMessage] = []
        body = b""
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if len(body) > self.max_bytes or not message.get("more_body", False):
                break  # the size limit itself is the framework's to answer
        if json_depth(body) > MAX_JSON_DEPTH:
            await refuse(send, 400, f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
            return
        replay = iter(messages)

        async def receive_again() -> ReceiveMessage:
            return next(replay, None) or await receive()

        await self.app(scope, receive_again, send)


class OperationsOnlyMiddleware:
    """``/metrics`` and ``/ready`` tell route counts, memory and store sizes: only the
    configured scrape addresses, or a request with the operations token, see them;
    anyone else gets the answer for a page that does not exist."""

    PATHS = ("/metrics", "/ready")

    def __init__(self, app: ASGIApp, addresses: tuple[str, ...], token: str | None) -> None:
        self.app = app
        self.addresses = addresses
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].rstrip("/") in self.PATHS:
            client = (scope.get("client") or ("", 0))[0]
            offered = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            by_token = self.token is not None and hmac.compare_digest(
                offered.encode(), f"Bearer {self.token}".encode()
            )
            if client not in self.addresses and not by_token:
                await refuse(send, 404, "Not Found")
                return
        await self.app(scope, receive, send)


@dataclass
class ErrorBody:
    status_code: int
    detail: str


ERROR_RESPONSES = {
    status: ResponseSpec(ErrorBody, description=description, generate_examples=False)
    for status, description in {
        400: "The request is malformed or asks for something that cannot be done (see detail)",
        401: "Not signed in, or the token is not valid",
        403: "The CSRF token is missing or wrong",
        404: "No such thing, or nothing the asker may see",
        413: "The body is over the size limit",
        429: "Too many requests; wait a minute",
        500: "An internal error (logged with the request id; nothing internal is shown)",
        503: "A search store or the generator is not answering; nothing partial is given",
    }.items()
}
"""Every endpoint may answer these; the schema says so, so clients and fuzzers know."""
