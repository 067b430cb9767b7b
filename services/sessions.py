"""Sign-in sessions and CSRF, kept by the server.

- A session exists only after a successful sign-in, under an id the server drew
  (``secrets``, 256 bits); an id the client makes up is never adopted. Sign-in and a
  change of privilege (break-the-glass) issue a fresh id and end the old one.
- A session is tied to the credential it was opened with: removing the account or
  changing its password ends it on the next request, even when another process (the
  ``appliance-web accounts`` command) made the change.
- CSRF: a session has its own token, which unsafe requests must echo in ``X-CSRFToken``.
  Before sign-in (the sign-in form itself) a signed double-submit cookie stands in.
  Requests with a bearer token carry no cookie-borne authority and need no token.
- Failed sign-ins are counted per account as well as per address, so rotating addresses
  does not buy more guesses.

Sessions and failed sign-ins live in the file every worker process shares
(``services.shared``), so a session holds in every worker and survives a restart of the
service (an upgrade does not sign a ward out); it still ends at its own time, on sign-out,
when its account changes, or for everyone at once by the administrator's command.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from http.cookies import SimpleCookie

from litestar.datastructures import Cookie, MutableScopeHeaders
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from services.security import refuse
from services.shared import SharedDatabase

CSRF_COOKIE = "csrftoken"
CSRF_HEADER = b"x-csrftoken"
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}

Stamp = Callable[[str], str | None]
"""The current fingerprint of a user's credential; None when the account is gone."""


def session_cookie_name(secure: bool) -> str:
    """``__Host-`` binds the cookie to this exact origin over HTTPS (no Domain, Path /,
    Secure); plain-HTTP test set-ups cannot carry that prefix."""
    return "__Host-session" if secure else "session"


@dataclass(frozen=True, slots=True)
class Session:
    session_id: str
    user_id: str
    csrf_token: str
    account_stamp: str
    expires_at: float


def _key(session_id: str) -> str:
    """What the shared file keeps of a session id: its hash, useless to a browser."""
    return hashlib.sha256(session_id.encode()).hexdigest()


class SessionStore:
    """The sessions of every worker process, in the shared file."""

    def __init__(
        self,
        database: SharedDatabase,
        lifetime_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._database = database
        self._lifetime = lifetime_seconds
        self._clock = clock

    def clear(self) -> int:
        """Everybody signed out (``appliance-web accounts sign-out-everyone``); how many
        sessions ended."""
        with self._database.writing() as db:
            return int(db.execute("DELETE FROM sessions").rowcount)

    def start(self, user_id: str, account_stamp: str) -> Session:
        session = Session(
            secrets.token_urlsafe(32),
            user_id,
            secrets.token_urlsafe(32),
            account_stamp,
            self._clock() + self._lifetime,
        )
        self._put(session)
        return session

    def _put(self, session: Session, replacing: str | None = None) -> None:
        with self._database.writing() as db:
            db.execute("DELETE FROM sessions WHERE expires_at <= ?", (self._clock(),))
            if replacing is not None:
                db.execute("DELETE FROM sessions WHERE id_hash = ?", (_key(replacing),))
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?)",
                (
                    _key(session.session_id), session.user_id, session.csrf_token,
                    session.account_stamp, session.expires_at,
                ),
            )  # fmt: skip

    def get(self, session_id: str, stamp: Stamp) -> Session | None:
        """The live session under an id this store issued, while its credential stands."""
        rows = self._database.read(
            "SELECT user_id, csrf_token, account_stamp, expires_at FROM sessions WHERE id_hash = ?",
            (_key(session_id),),
        )
        if not rows:
            return None
        user_id, csrf_token, account_stamp, expires_at = rows[0]
        session = Session(
            session_id,
            str(user_id),
            str(csrf_token),
            str(account_stamp),
            float(expires_at),
        )
        if session.expires_at <= self._clock() or stamp(session.user_id) != session.account_stamp:
            self.end(session_id)
            return None
        return session

    def rotate(self, session: Session) -> Session:
        """The same sign-in under a new id and token (privilege changed)."""
        fresh = replace(
            session, session_id=secrets.token_urlsafe(32), csrf_token=secrets.token_urlsafe(32)
        )
        self._put(fresh, replacing=session.session_id)
        return fresh

    def end(self, session_id: str) -> None:
        with self._database.writing() as db:
            db.execute("DELETE FROM sessions WHERE id_hash = ?", (_key(session_id),))

    def end_user(self, user_id: str) -> int:
        with self._database.writing() as db:
            return db.execute("DELETE FROM sessions WHERE user_id = ?", (user_id,)).rowcount

    def __len__(self) -> int:
        rows = self._database.read(
            "SELECT count(*) FROM sessions WHERE expires_at > ?", (self._clock(),)
        )
        return int(rows[0][0])


class SignInThrottle:
    """At most ``per_minute`` failed sign-ins per account in any minute, counted across
    every worker process."""

    def __init__(
        self, database: SharedDatabase, per_minute: int, clock: Callable[[], float] = time.time
    ) -> None:
        self._database = database
        self._per_minute = per_minute
        self._clock = clock

    def blocked(self, user_id: str) -> bool:
        rows = self._database.read(
            "SELECT count(*) FROM sign_in_failures WHERE user_id = ? AND at > ?",
            (user_id, self._clock() - 60.0),
        )
        return int(rows[0][0]) >= self._per_minute

    def failed(self, user_id: str) -> None:
        now = self._clock()
        with self._database.writing() as db:
            db.execute("DELETE FROM sign_in_failures WHERE at <= ?", (now - 60.0,))
            db.execute("INSERT INTO sign_in_failures VALUES (?, ?)", (user_id, now))


class PreLoginToken:
    """The double-submit token of a visitor not signed in: ``nonce.mac``, so that only
    this installation can mint one."""

    def __init__(self, secret: str) -> None:
        self._key = secret.encode()

    def mint(self) -> str:
        nonce = secrets.token_urlsafe(24)
        return f"{nonce}.{self._mac(nonce)}"

    def valid(self, token: str) -> bool:
        nonce, _, mac = token.partition(".")
        return bool(nonce) and hmac.compare_digest(mac.encode(), self._mac(nonce).encode())

    def _mac(self, nonce: str) -> str:
        return hmac.new(self._key, nonce.encode(), hashlib.sha256).hexdigest()[:32]


def _cookies(scope: Scope) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for name, value in scope["headers"]:
        if name == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header is no cookie
                continue
    return {key: morsel.value for key, morsel in jar.items()}


class SessionCookies:
    """The cookies of a session and of CSRF, made one way for the middleware and the
    sign-in, sign-out and break-the-glass handlers."""

    def __init__(self, secure: bool, lifetime_seconds: int) -> None:
        self.secure = secure
        self.name = session_cookie_name(secure)
        self._lifetime = lifetime_seconds

    def signed_in(self, session: Session) -> list[Cookie]:
        """The session's id (script cannot read it) and its CSRF token (script echoes it)."""
        return [
            Cookie(
                key=self.name, value=session.session_id, path="/", max_age=self._lifetime,
                secure=self.secure, httponly=True, samesite="strict",
            ),
            self.csrf(session.csrf_token),
        ]  # fmt: skip

    def signed_out(self) -> list[Cookie]:
        return [
            Cookie(
                key=self.name, value="", path="/", max_age=0, secure=self.secure,
                httponly=True, samesite="strict",
            ),
            Cookie(key=CSRF_COOKIE, value="", path="/", max_age=0, secure=self.secure,
                   samesite="strict"),
        ]  # fmt: skip

    def csrf(self, token: str) -> Cookie:
        return Cookie(
            key=CSRF_COOKIE, value=token, path="/", secure=self.secure, httponly=False,
            samesite="strict",
        )  # fmt: skip


class SessionMiddleware:
    """Finds the request's session (``scope["state"]["session"]``) and checks CSRF."""

    def __init__(
        self,
        app: ASGIApp,
        sessions: SessionStore,
        stamp: Stamp,
        pre_login: PreLoginToken,
        cookies: SessionCookies,
    ) -> None:
        self.app = app
        self.sessions = sessions
        self.stamp = stamp
        self.pre_login = pre_login
        self.cookies = cookies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        authorizations = [v for k, v in scope["headers"] if k == b"authorization"]
        if len(authorizations) > 1:
            await refuse(send, 400, "one Authorization header at most")
            return
        cookies = _cookies(scope)
        offered = cookies.get(self.cookies.name, "")
        session = self.sessions.get(offered, self.stamp) if offered else None
        bearer = bool(authorizations) and authorizations[0].lower().startswith(b"bearer ")
        scope.setdefault("state", {})["session"] = None if bearer else session
        if scope.get("method") in UNSAFE_METHODS and not bearer:
            sent = dict(scope["headers"]).get(CSRF_HEADER, b"").decode("latin-1")
            if session is not None:
                expected = session.csrf_token
            else:
                cookie = cookies.get(CSRF_COOKIE, "")
                expected = cookie if self.pre_login.valid(cookie) else ""
            if not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
                await refuse(send, 403, "CSRF token missing or incorrect")
                return
        needs_token = session is None and not self.pre_login.valid(cookies.get(CSRF_COOKIE, ""))
        stale = bool(offered) and session is None

        async def send_with_cookies(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableScopeHeaders.from_message(message)
                # The handler set the cookies itself (sign-in, sign-out, break-the-glass).
                set_cookies = headers.getall("set-cookie", [])
                handled = any(value.startswith(f"{CSRF_COOKIE}=") for value in set_cookies)
                if not handled and stale:  # an id this server does not know (any more)
                    expired = self.cookies.signed_out()[0]
                    headers.add("set-cookie", expired.to_header(header=""))
                if not handled and needs_token:
                    csrf = self.cookies.csrf(self.pre_login.mint())
                    headers.add("set-cookie", csrf.to_header(header=""))
            await send(message)

        await self.app(scope, receive, send_with_cookies)
