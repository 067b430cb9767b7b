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
        self.catch_up()
        clauses, values = [], []
        for column, value in (
            ("e.user", query.user),
            ("e.type", query.event_type),
            ("e.request_id", query.request_id),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                values.append(value)
        if query.since is not None:
            clauses.append("e.time >= ?")
            values.append(time_bound(query.since))
        if query.until is not None:
            clauses.append("e.time < ?")
            values.append(time_bound(query.until, end=True))
        for kind, value in (("doc", query.doc_id), ("chunk", query.chunk_id)):
            if value is not None:
                clauses.append(
                    "e.position IN (SELECT position FROM refs WHERE kind = ? AND ref = ?)"
                )
                values += [kind, value]
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._db.execute(
            f"SELECT e.position FROM entries e {where} ORDER BY e.position LIMIT ?",
            [*values, query.limit],
        )
        return [row[0] for row in rows]

    def close(self) -> None:
        self._db.close()
