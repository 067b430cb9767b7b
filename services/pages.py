"""Sign-in, sign-out and the two pages. The pages are static HTML and JavaScript served
from this folder (no CDN, nothing fetched from outside); they call the JSON API."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litestar import MediaType, Request, Response, get, post
from litestar.exceptions import (
    NotAuthorizedException,
    NotFoundException,
    TooManyRequestsException,
)
from litestar.params import JSONBody
from litestar.response import Redirect

from services.auth import session_of, subject_of
from services.routes.layers import service_state
from services.schemas import SignedInBody, SignedOutBody
from services.security import ERROR_RESPONSES, request_id_of

STATIC = Path(__file__).parent / "static"


def _page(name: str) -> Response[str]:
    return Response((STATIC / name).read_text("utf-8"), media_type=MediaType.HTML)


@dataclass
class Credentials:
    user_id: str
    password: str


@post(
    "/api/login",
    sync_to_thread=True,
    status_code=200,
    summary="Sign in (local account)",
    responses=ERROR_RESPONSES,
)
def login(request: Request, data: JSONBody[Credentials]) -> Response[SignedInBody]:
    """A fresh session under a new id, whatever session id the client sent; the old
    session, if any, ends."""
    state = service_state(request)
    trail = state.appliance.audit_trail
    request_id = request_id_of(request.scope)
    if state.sign_in_throttle.blocked(data.user_id):
        trail.sign_in_failed(data.user_id, "password (throttled)", request_id)
        raise TooManyRequestsException("too many failed sign-ins for this account; wait a minute")
    # One message for an unknown user, a wrong password and a user without a subject.
    subject = state.appliance.subjects.subjects().get(data.user_id)
    if not state.accounts.verify(data.user_id, data.password) or subject is None:
        state.sign_in_throttle.failed(data.user_id)
        trail.sign_in_failed(data.user_id, "password", request_id)
        raise NotAuthorizedException("user name or password is wrong")
    stamp = state.accounts.stamp(data.user_id)
    if stamp is None:  # removed between the check and now
        raise NotAuthorizedException("user name or password is wrong")
    previous = session_of(request)
    if previous is not None:
        state.sessions.end(previous.session_id)
    session = state.sessions.start(data.user_id, stamp)
    trail.signed_in(data.user_id, subject.roles, "password", request_id)
    return Response({"user_id": data.user_id}, cookies=state.cookies.signed_in(session))


@post(
    "/api/logout",
    sync_to_thread=True,
    status_code=200,
    summary="Sign out",
    responses=ERROR_RESPONSES,
)
def logout(request: Request) -> Response[SignedOutBody]:
    state = service_state(request)
    session = session_of(request)
    if session is not None:
        state.sessions.end(session.session_id)
        subject = state.appliance.subjects.subjects().get(session.user_id)
        state.appliance.audit_trail.signed_out(
            session.user_id, subject.roles if subject else (), "password",
            request_id_of(request.scope),
        )  # fmt: skip
    return Response({"signed_out": True}, cookies=state.cookies.signed_out())


@get("/", sync_to_thread=False, include_in_schema=False)
def home(request: Request) -> Redirect:
    signed_in = subject_of(request, service_state(request)) is not None
    return Redirect("/ask" if signed_in else "/login")


@get("/login", sync_to_thread=False, include_in_schema=False)
def login_page() -> Response[str]:
    return _page("login.html")


@get("/ask", sync_to_thread=True, include_in_schema=False)
def clinician_page(request: Request) -> Response[Any]:
    if subject_of(request, service_state(request)) is None:
        return Redirect("/login")
    return _page("clinician.html")


def _guarded_page(request: Request, name: str, action: str) -> Response[Any]:
    """Signed out: to the sign-in page. Signed in without the right: as if there were no
    such page (a page one may not see is not advertised)."""
    state = service_state(request)
    subject = subject_of(request, state)
    if subject is None:
        return Redirect("/login")
    if not state.appliance.guard.decide_system(subject, action).allowed:
        raise NotFoundException()
    return _page(name)


@get("/compliance", sync_to_thread=True, include_in_schema=False)
def compliance_page(request: Request) -> Response[Any]:
    return _guarded_page(request, "compliance.html", "review-audit")


@get("/compliance/report", sync_to_thread=True, include_in_schema=False)
def report_page(request: Request) -> Response[Any]:
    """A period's report, printable, with charts."""
    return _guarded_page(request, "report.html", "review-audit")


@get("/admin", sync_to_thread=True, include_in_schema=False)
def admin_page(request: Request) -> Response[Any]:
    """Documents, uploads, jobs and users, for those the policy lets ingest."""
    return _guarded_page(request, "admin.html", "ingest")


PAGE_HANDLERS = [
    login,
    logout,
    home,
    login_page,
    clinician_page,
    compliance_page,
    report_page,
    admin_page,
]
