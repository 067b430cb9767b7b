"""Break-the-glass: emergency access a clinician grants themself with a written reason.

A grant is time-limited, kept in a small SQLite ledger in the data directory (so every
process of the appliance sees it), announced as an event when granted and when ended
early, and every chunk it opens is flagged and reported as a use (see ``guard.py``).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from appliance.access.events import AccessEvent, EventSink

MIN_REASON_CHARS = 15
MAX_DURATION = dt.timedelta(hours=12)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS grants (
    grant_id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    ended_at TEXT
);
CREATE INDEX IF NOT EXISTS grants_by_user ON grants (user_id, expires_at);
"""

Clock = Callable[[], dt.datetime]


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class BreakGlassError(ValueError):
    """A request the ledger refuses (no reason, too long, not permitted)."""


@dataclass(frozen=True, slots=True)
class BreakGlassGrant:
    grant_id: int
    user_id: str
    reason: str
    granted_at: dt.datetime
    expires_at: dt.datetime


class BreakGlassLedger:
    def __init__(self, path: Path, events: EventSink, clock: Clock = utc_now) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._events = events
        self._clock = clock
        self._lock = threading.Lock()

    def grant(self, user_id: str, reason: str, duration: dt.timedelta) -> BreakGlassGrant:
        """Open emergency access for ``user_id``. The caller has checked that the user
        may request it (system action ``request-break-glass``)."""
        reason = " ".join(reason.split())
        if len(reason) < MIN_REASON_CHARS:
            raise BreakGlassError(
                f"break-the-glass needs a written reason of at least {MIN_REASON_CHARS} "
                "characters (what emergency, which patient)"
            )
        if not dt.timedelta(0) < duration <= MAX_DURATION:
            raise BreakGlassError(
                f"break-the-glass lasts between 1 minute and {MAX_DURATION}; asked for {duration}"
            )
        now = self._now()
        expires = now + duration
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO grants (user_id, reason, granted_at, expires_at) VALUES (?, ?, ?, ?)",
                (user_id, reason, now.isoformat(), expires.isoformat()),
            )
        grant = BreakGlassGrant(int(cursor.lastrowid or 0), user_id, reason, now, expires)
        self._events.emit(
            AccessEvent.now(
                "break_glass_granted",
                user_id,
                {"grant_id": grant.grant_id, "reason": reason, "expires_at": expires.isoformat()},
            )
        )
        return grant

    def active(self, user_id: str) -> BreakGlassGrant | None:
        """The user's grant in force now, if any."""
        now = self._now().isoformat()
        with self._lock:
            row = self._db.execute(
                """SELECT grant_id, user_id, reason, granted_at, expires_at FROM grants
                   WHERE user_id = ? AND ended_at IS NULL AND granted_at <= ? AND expires_at > ?
                   ORDER BY expires_at DESC LIMIT 1""",
                (user_id, now, now),
            ).fetchone()
        if row is None:
            return None
        grant_id, user, reason, granted_at, expires_at = row
        return BreakGlassGrant(
            grant_id,
            user,
            reason,
            dt.datetime.fromisoformat(granted_at),
            dt.datetime.fromisoformat(expires_at),
        )

    def end(self, user_id: str, actor: str) -> bool:
        """End the user's active grant before it expires; False when there was none."""
        grant = self.active(user_id)
        if grant is None:
            return False
        with self._lock:
            self._db.execute(
                "UPDATE grants SET ended_at = ? WHERE grant_id = ?",
                (self._now().isoformat(), grant.grant_id),
            )
        self._events.emit(
            AccessEvent.now(
                "break_glass_ended", actor, {"grant_id": grant.grant_id, "user": user_id}
            )
        )
        return True

    def _now(self) -> dt.datetime:
        # One time zone and one format, so that stored times compare as text.
        return self._clock().astimezone(dt.UTC)

    def close(self) -> None:
        self._db.close()
