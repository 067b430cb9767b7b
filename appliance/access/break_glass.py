"""Break-the-glass: emergency access a clinician grants themself with a written reason.

A grant names one patient and opens that patient's records only (besides the documents
the break-the-glass role may read); it is time-limited, one at a time per user, kept in a
small SQLite ledger in the data directory (so every process of the appliance sees it),
announced as an event when granted and when ended, and every chunk or document it opens
is reported as a use (see ``guard.py`` and the document view of the services).
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from appliance.access.events import AccessEvent, EventSink

MIN_REASON_CHARS = 15
MAX_REASON_CHARS = 500
MIN_REASON_WORDS = 3
MAX_DURATION = dt.timedelta(hours=12)
PATIENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_WORD = re.compile(r"[^\W\d_]{2,}")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS grants (
    grant_id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    ended_at TEXT,
    patient_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS grants_by_user ON grants (user_id, expires_at);
"""

Clock = Callable[[], dt.datetime]


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class BreakGlassError(ValueError):
    """A request the ledger refuses (no reason, too long, not permitted)."""


def check_reason(reason: str) -> None:
    """A reason a reviewer can read: words, not a count of characters ("xxxx...")."""
    words = _WORD.findall(reason.lower())
    if len(reason) < MIN_REASON_CHARS or len(set(words)) < MIN_REASON_WORDS:
        raise BreakGlassError(
            f"break-the-glass needs a written reason of at least {MIN_REASON_WORDS} different "
            f"words and {MIN_REASON_CHARS} characters (what emergency, why these records)"
        )
    if len(reason) > MAX_REASON_CHARS:
        raise BreakGlassError(f"a break-the-glass reason has at most {MAX_REASON_CHARS} characters")


@dataclass(frozen=True, slots=True)
class BreakGlassGrant:
    grant_id: int
    user_id: str
    reason: str
    granted_at: dt.datetime
    expires_at: dt.datetime
    patient_id: str = ""


class BreakGlassLedger:
    def __init__(self, path: Path, events: EventSink, clock: Clock = utc_now) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(grants)")}
        if "patient_id" not in columns:  # a ledger from before grants named a patient
            self._db.execute("ALTER TABLE grants ADD COLUMN patient_id TEXT NOT NULL DEFAULT ''")
        self._events = events
        self._clock = clock
        self._lock = threading.RLock()  # grant() looks for an open grant under it

    def grant(
        self,
        user_id: str,
        reason: str,
        duration: dt.timedelta,
        patient_id: str,
        *,
        roles: tuple[str, ...] = (),
        request_id: str | None = None,
    ) -> BreakGlassGrant:
        """Open emergency access for ``user_id`` to one patient's records. The caller has
        checked that the user may request it (system action ``request-break-glass``)."""
        reason = " ".join(reason.split())
        check_reason(reason)
        if not PATIENT_ID.match(patient_id):
            raise BreakGlassError(
                "break-the-glass names the patient whose records are needed (their id, "
                f"letters, digits, '.', '_' or '-'); got {patient_id[:70]!r}"
            )
        if not dt.timedelta(minutes=1) <= duration <= MAX_DURATION:
            raise BreakGlassError(
                f"break-the-glass lasts between 1 minute and {MAX_DURATION}; asked for {duration}"
            )
        now = self._now()
        expires = now + duration
        with self._lock:
            current = self.active(user_id)
            if current is not None:
                raise BreakGlassError(
                    f"emergency access for patient {current.patient_id or '(none)'} is already "
                    f"open until {current.expires_at.isoformat(timespec='minutes')}; end it first"
                )
            cursor = self._db.execute(
                """INSERT INTO grants (user_id, reason, granted_at, expires_at, patient_id)
                   VALUES (?, ?, ?, ?, ?)""",
                (user_id, reason, now.isoformat(), expires.isoformat(), patient_id),
            )
        grant = BreakGlassGrant(
            int(cursor.lastrowid or 0), user_id, reason, now, expires, patient_id
        )
        self._events.emit(
            AccessEvent.now(
                "break_glass_granted",
                user_id,
                {
                    "grant_id": grant.grant_id,
                    "reason": reason,
                    "patient_id": patient_id,
                    "expires_at": expires.isoformat(),
                },
                roles,
                request_id,
            )
        )
        return grant

    def active(self, user_id: str) -> BreakGlassGrant | None:
        """The user's grant in force now, if any."""
        now = self._now().isoformat()
        with self._lock:
            row = self._db.execute(
                """SELECT grant_id, user_id, reason, granted_at, expires_at, patient_id
                   FROM grants
                   WHERE user_id = ? AND ended_at IS NULL AND granted_at <= ? AND expires_at > ?
                   ORDER BY expires_at DESC LIMIT 1""",
                (user_id, now, now),
            ).fetchone()
        if row is None:
            return None
        grant_id, user, reason, granted_at, expires_at, patient_id = row
        return BreakGlassGrant(
            grant_id,
            user,
            reason,
            dt.datetime.fromisoformat(granted_at),
            dt.datetime.fromisoformat(expires_at),
            patient_id,
        )

    def active_count(self) -> int:
        """Grants in force now, of everyone (for monitoring)."""
        now = self._now().isoformat()
        with self._lock:
            (count,) = self._db.execute(
                "SELECT count(*) FROM grants WHERE ended_at IS NULL AND granted_at <= ? "
                "AND expires_at > ?",
                (now, now),
            ).fetchone()
        return int(count)

    def end(
        self,
        user_id: str,
        actor: str,
        *,
        roles: tuple[str, ...] = (),
        request_id: str | None = None,
    ) -> bool:
        """End every grant of the user still open; False when there was none."""
        now = self._now().isoformat()
        with self._lock:
            open_ids = [
                row[0]
                for row in self._db.execute(
                    "SELECT grant_id FROM grants WHERE user_id = ? AND ended_at IS NULL "
                    "AND expires_at > ?",
                    (user_id, now),
                )
            ]
            self._db.executemany(
                "UPDATE grants SET ended_at = ? WHERE grant_id = ?",
                [(now, grant_id) for grant_id in open_ids],
            )
        for grant_id in open_ids:
            self._events.emit(
                AccessEvent.now(
                    "break_glass_ended",
                    actor,
                    {"grant_id": grant_id, "user": user_id},
                    roles,
                    request_id,
                )
            )
        return bool(open_ids)

    def _now(self) -> dt.datetime:
        # One time zone and one format, so that stored times compare as text.
        return self._clock().astimezone(dt.UTC)

    def close(self) -> None:
        self._db.close()
