"""Sign-in, sign-out and the two pages. The pages are static HTML and JavaScript served
from this folder (no CDN, nothing fetched from outside); they call the JSON API."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litestar import MediaType, Request, Response, get, post
from litestar.exceptions import NotAuthorizedException
from litestar.params import JSONBody
from litestar.response import Redirect

from services.auth import SESSION_USER, require_action, subject_of
from services.state import ServiceState

STATIC = Path(__file__).parent / "static"


def _state(request: Request) -> ServiceState:
    return request.app.state.service  # type: ignore[no-any-return]


def _page(name: str) -> Response[str]:
    return Response((STATIC / name).read_text("utf-8"), media_type=MediaType.HTML)


@dataclass
class Credentials:
    user_id: str
    password: str


@post("/api/login", sync_to_thread=True, status_code=200, summary="Sign in (local account)")
def login(request: Request, data: JSONBody[Credentials]) -> dict[str, Any]:
    state = _state(request)
    # One message for an unknown user, a wrong password and a user without a subject.
    if not state.accounts.verify(data.user_id, data.password):
        raise NotAuthorizedException("user name or password is wrong")
    if subject_of_user(state, data.user_id) is None:
        raise NotAuthorizedException("user name or password is wrong")
    request.clear_session()
    request.set_session({SESSION_USER: data.user_id})
    return {"user_id": data.user_id}


def subject_of_user(state: ServiceState, user_id: str) -> object | None:
    return state.appliance.subjects.subjects().get(user_id)


@post("/api/logout", sync_to_thread=False, status_code=200)
def logout(request: Request) -> dict[str, bool]:
    request.clear_session()
    return {"signed_out": True}


@get("/", sync_to_thread=False, include_in_schema=False)
def home(request: Request) -> Redirect:
    signed_in = subject_of(request, _state(request)) is not None
    return Redirect("/ask" if signed_in else "/login")


@get("/login", sync_to_thread=False, include_in_schema=False)
def login_page() -> Response[str]:
    return _page("login.html")


@get("/ask", sync_to_thread=True, include_in_schema=False)
def clinician_page(request: Request) -> Response[Any]:
    if subject_of(request, _state(request)) is None:
        return Redirect("/login")
    return _page("clinician.html")


@get("/compliance", sync_to_thread=True, include_in_schema=False)
def compliance_page(request: Request) -> Response[Any]:
    if subject_of(request, _state(request)) is None:
        return Redirect("/login")
    require_action(request, _state(request), "review-audit")
    return _page("compliance.html")


PAGE_HANDLERS = [login, logout, home, login_page, clinician_page, compliance_page]
