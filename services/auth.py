"""Who is asking: a signed-in session (local account) or a bearer token (the hospital's
identity provider). Either way the answer is a subject of the subjects directory, and
what the subject may do is the access module's decision, not this one's."""

from __future__ import annotations

from litestar.connection import ASGIConnection

from appliance.access.rules import Subject
from appliance.access.subjects import UnknownSubject
from services.identity import InvalidToken
from services.sessions import Session
from services.state import ServiceState


def subject_of(request: ASGIConnection, state: ServiceState) -> Subject | None:
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


def session_of(request: ASGIConnection) -> Session | None:
    """The sign-in session the session middleware found for this request, if any."""
    found = request.scope.get("state", {}).get("session")
    return found if isinstance(found, Session) else None
