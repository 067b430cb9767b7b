"""Who is asking: a signed-in session (local account) or a bearer token (the hospital's
identity provider). Either way the answer is a subject of the subjects directory, and
what the subject may do is the access module's decision, not this one's."""

from __future__ import annotations

from litestar import Request
from litestar.exceptions import NotAuthorizedException, NotFoundException

from appliance.access.guard import AccessDenied
from appliance.access.rules import Subject
from appliance.access.subjects import UnknownSubject
from services.identity import InvalidToken
from services.sessions import Session
from services.state import ServiceState


def subject_of(request: Request, state: ServiceState) -> Subject | None:
    """The subject of a request, or None when it is not authenticated."""
    authorization = request.headers.get("authorization", "")
    user_id: str | None
    if authorization.lower().startswith("bearer "):
        if state.tokens is None:
            return None
        try:
            user_id = state.tokens.user_id(authorization[7:].strip())
        except InvalidToken:
            return None
    else:
        session = session_of(request)
        user_id = None if session is None else session.user_id
    if not user_id:
        return None
    try:
        return state.appliance.subjects.get(str(user_id))
    except UnknownSubject:
        return None


def session_of(request: Request) -> Session | None:
    """The sign-in session the session middleware found for this request, if any."""
    found = request.scope.get("state", {}).get("session")
    return found if isinstance(found, Session) else None


def require_subject(request: Request, state: ServiceState) -> Subject:
    subject = subject_of(request, state)
    if subject is None:
        raise NotAuthorizedException("sign in first")
    return subject


def require_action(request: Request, state: ServiceState, action: str) -> Subject:
    """The subject, if the policy lets it take a system action. Otherwise the answer is
    the one for a page that does not exist: a page one may not see is not advertised."""
    subject = require_subject(request, state)
    try:
        state.appliance.guard.require(subject, action)
    except AccessDenied:
        raise NotFoundException() from None
    return subject
