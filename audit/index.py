"""A secondary index for finding entries (time range, actor, event type, document,
chunk): SQLite beside the log, rebuilt from the log at any time, and never trusted for
verification. Each lookup re-reads the entries themselves from the log."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from audit.entries import references, time_bound
from audit.log import AuditLog

INDEX_FILE = "index.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    position INTEGER PRIMARY KEY,
    time TEXT NOT NULL,
    type TEXT NOT NULL,
    user TEXT NOT NULL,
    request_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_by_time ON entries (time);
CREATE INDEX IF NOT EXISTS entries_by_user ON entries (user, time);
CREATE INDEX IF NOT EXISTS entries_by_type ON entries (type, time);
CREATE TABLE IF NOT EXISTS refs (
    position INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ref TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS refs_by_ref ON refs (kind, ref);
"""


@dataclass(frozen=True, slots=True)
class Query:
    since: str | None = None
    until: str | None = None
    user: str | None = None
    event_type: str | None = None
    doc_id: str | None = None
    chunk_id: str | None = None
    limit: int = 100
    request_id: str | None = None
    doc_ids: tuple[str, ...] = ()
    """More documents, any of which an entry may name (a search by title finds several)."""
    offset: int = 0
    newest_first: bool = False
    ignore_case: bool = False
    """User and document matched whatever their case (the compliance search); a person's
    own history matches exactly."""


class AuditIndex:
    def __init__(self, log: AuditLog) -> None:
        self._log = log
        self._db = sqlite3.connect(log.directory / INDEX_FILE, check_same_thread=False)
        self._db.executescript(_SCHEMA)

    def catch_up(self) -> int:
        """Index entries appended since the last call; returns how many."""
        (done,) = self._db.execute("SELECT COALESCE(MAX(position) + 1, 0) FROM entries").fetchone()
        added = 0
        with self._db:
            for record in self._log.records(done):
                entry = json.loads(record.entry)
                self._db.execute(
                    "INSERT INTO entries VALUES (?, ?, ?, ?, ?)",
                    (
                        record.position,
                        entry["time"],
                        entry["type"],
                        entry["actor"]["user"],
                        entry.get("request_id") or "",
                    ),
                )
                self._db.executemany(
                    "INSERT INTO refs VALUES (?, ?, ?)",
                    [(record.position, kind, ref) for kind, ref in sorted(references(entry))],
                )
                added += 1
        return added

    def rebuild(self) -> int:
        with self._db:
            self._db.execute("DELETE FROM entries")
            self._db.execute("DELETE FROM refs")
        return self.catch_up()

    def positions(self, query: Query) -> list[int]:
        """The entries that match, oldest first (or newest first), from ``query.offset``."""
        self.catch_up()
        where, values = _where(query)
        order = "DESC" if query.newest_first else "ASC"
        rows = self._db.execute(
            f"SELECT e.position FROM entries e {where} ORDER BY e.position {order} "
            "LIMIT ? OFFSET ?",
            [*values, query.limit, max(0, query.offset)],
        )
        return [row[0] for row in rows]

    def count(self, query: Query) -> int:
        """How many entries match, whatever the limit: the total a page of them is from."""
        self.catch_up()
        where, values = _where(query)
        (total,) = self._db.execute(f"SELECT COUNT(*) FROM entries e {where}", values).fetchone()
        return int(total)

    def close(self) -> None:
        self._db.close()


def _where(query: Query) -> tuple[str, list[object]]:
    """The query as one SQL ``WHERE`` clause and its parameters (never its text)."""
    collate = " COLLATE NOCASE" if query.ignore_case else ""
    clauses: list[str] = []
    values: list[object] = []
    for column, value, folds in (
        ("e.user", query.user, True),
        ("e.type", query.event_type, False),
        ("e.request_id", query.request_id, False),
    ):
        if value is not None:
            clauses.append(f"{column} = ?{collate if folds else ''}")
            values.append(value)
    if query.since is not None:
        clauses.append("e.time >= ?")
        values.append(time_bound(query.since))
    if query.until is not None:
        clauses.append("e.time < ?")
        values.append(time_bound(query.until, end=True))
    documents = [d for d in (query.doc_id, *query.doc_ids) if d is not None]
    if documents:
        marks = ", ".join("?" * len(documents))
        clauses.append(
            "e.position IN (SELECT position FROM refs "
            f"WHERE kind = 'doc' AND ref{collate} IN ({marks}))"
        )
        values += documents
    if query.chunk_id is not None:
        clauses.append("e.position IN (SELECT position FROM refs WHERE kind = 'chunk' AND ref = ?)")
        values.append(query.chunk_id)
    return (f"WHERE {' AND '.join(clauses)}" if clauses else ""), values
