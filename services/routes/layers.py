"""What the routers declare instead of each handler doing it by hand: who may call
(guards: signed in, or allowed a system action by the access policy), and what the
handlers are given (dependencies: the service state, the asker, the engines).

``engines`` takes the engine lock for the handler's whole run and releases it once the
response is built: the embedded stores admit one process and the models are shared, so
one question or ingestion step at a time goes through them (granted in turn).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import anyio.to_thread
from litestar.connection import ASGIConnection
from litestar.di import NamedDependency, Provide
from litestar.exceptions import NotAuthorizedException, NotFoundException
from litestar.handlers import BaseRouteHandler

from appliance.access.guard import AccessDenied
from appliance.access.rules import Subject
from appliance.engines import Appliance
from services.auth import subject_of
from services.state import ServiceState

Asker = NamedDependency[Subject]
"""The signed-in subject asking (a handler parameter named ``subject``)."""
Engines = NamedDependency[Appliance]
"""The appliance, with the engine lock held (a parameter named ``engines``)."""
Service = NamedDependency[ServiceState]
"""The service's state: sessions, jobs, the last verification (``service``)."""
Guard = Callable[[ASGIConnection, BaseRouteHandler], Awaitable[None]]


def service_state(connection: ASGIConnection) -> ServiceState:
    state: ServiceState = connection.app.state.service
    return state


async def _subject(connection: ASGIConnection) -> Subject | None:
    """The asker, looked up once per request (the subjects file is read in a thread)."""
    if "subject" not in connection.state:
        state = service_state(connection)
        connection.state.subject = await anyio.to_thread.run_sync(subject_of, connection, state)
    found: Subject | None = connection.state.subject
    return found


async def signed_in(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    if await _subject(connection) is None:
        raise NotAuthorizedException("sign in first")


def may(action: str) -> Guard:
    """Signed in and allowed ``action`` by the policy. Otherwise the answer is the one for
    a page that does not exist: a page one may not see is not advertised."""

    async def guard(connection: ASGIConnection, handler: BaseRouteHandler) -> None:
        await signed_in(connection, handler)
        subject = await _subject(connection)
        assert subject is not None
        try:
            service_state(connection).appliance.guard.require(subject, action)
        except AccessDenied:
            raise NotFoundException() from None

    guard.__name__ = f"may_{action.replace('-', '_')}"
    return guard


async def _asker(request: ASGIConnection) -> Subject:
    subject = await _subject(request)
    if subject is None:  # a handler that asks for the subject sits behind signed_in
        raise NotAuthorizedException("sign in first")
    return subject


async def _engines(service: Service) -> AsyncIterator[Appliance]:
    # Shielded: once the lock is ours, a cancelled request still reaches ``finally``.
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(service.engine_lock.acquire)
    try:
        yield service.appliance
    finally:
        service.engine_lock.release()


def _service(request: ASGIConnection) -> ServiceState:
    return service_state(request)


DEPENDENCIES = {
    "service": Provide(_service, sync_to_thread=False),
    "subject": Provide(_asker),
    "engines": Provide(_engines),
}
"""Provided on every API router: ``service`` (the service state), ``subject`` (the
signed-in asker) and ``engines`` (the appliance, with the engine lock held)."""
