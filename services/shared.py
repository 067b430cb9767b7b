"""What every process of the web service shares: one SQLite file in the data directory
(``services/shared.sqlite3``, WAL) holding sign-in sessions, failed sign-ins, the
request-rate windows and ingestion jobs. With store servers the service runs several
worker processes; a session opened by one must hold in another, and a job started by one
must be readable from all.

Session ids are stored as their SHA-256, so the file holds nothing a browser could
present. Sessions outlive a restart; each still ends at its own time.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from litestar.stores.base import Store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, csrf_token TEXT NOT NULL,
    account_stamp TEXT NOT NULL, expires_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS sessions_by_user ON sessions (user_id);
CREATE TABLE IF NOT EXISTS sign_in_failures (user_id TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS failures_by_user ON sign_in_failures (user_id, at);
CREATE TABLE IF NOT EXISTS rate_windows (
    namespace TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, expires_at REAL,
    PRIMARY KEY (namespace, key));
CREATE TABLE IF NOT EXISTS jobs (job_id TEXT PRIMARY KEY, body TEXT NOT NULL);
"""


class SharedDatabase:
    """One connection per thread to the shared file; every write is its own transaction."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._local = threading.local()
        self._connection().executescript(_SCHEMA)  # its own transactions

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            self._local.connection = connection
        return connection

    def read(self, sql: str, parameters: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        return self._connection().execute(sql, parameters).fetchall()

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (taken at once, so two processes never deadlock)."""
        connection = self._connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")


def shared_database(data_dir: Path) -> SharedDatabase:
    """The data directory's shared file, where every worker and command finds it."""
    return SharedDatabase(data_dir / "services" / "shared.sqlite3")


class SharedStore(Store):
    """Litestar's store (what the rate limiter keeps its windows in) on the shared file."""

    def __init__(self, database: SharedDatabase, namespace: str) -> None:
        self._database = database
        self._namespace = namespace

    async def set(
        self, key: str, value: str | bytes, expires_in: int | dt.timedelta | None = None
    ) -> None:
        data = value.encode() if isinstance(value, str) else value
        seconds = expires_in.total_seconds() if isinstance(expires_in, dt.timedelta) else expires_in
        expires_at = time.time() + seconds if seconds is not None else None

        def write() -> None:
            with self._database.writing() as db:
                db.execute(
                    "INSERT OR REPLACE INTO rate_windows VALUES (?, ?, ?, ?)",
                    (self._namespace, key, data, expires_at),
                )

        await anyio.to_thread.run_sync(write)

    async def get(self, key: str, renew_for: int | dt.timedelta | None = None) -> bytes | None:
        def read() -> bytes | None:
            rows = self._database.read(
                "SELECT value, expires_at FROM rate_windows WHERE namespace = ? AND key = ?",
                (self._namespace, key),
            )
            if not rows:
                return None
            value, expires_at = rows[0]
            if expires_at is not None and float(expires_at) <= time.time():
                return None
            return bytes(value)

        found = await anyio.to_thread.run_sync(read)
        if found is not None and renew_for is not None:
            await self.set(key, found, renew_for)
        return found

    async def delete(self, key: str) -> None:
        def write() -> None:
            with self._database.writing() as db:
                db.execute(
                    "DELETE FROM rate_windows WHERE namespace = ? AND key = ?",
                    (self._namespace, key),
                )

        await anyio.to_thread.run_sync(write)

    async def delete_all(self) -> None:
        def write() -> None:
            with self._database.writing() as db:
                db.execute("DELETE FROM rate_windows WHERE namespace = ?", (self._namespace,))

        await anyio.to_thread.run_sync(write)

    async def exists(self, key: str) -> bool:
        return await self.get(key) is not None

    async def expires_in(self, key: str) -> int | None:
        rows = await anyio.to_thread.run_sync(
            self._database.read,
            "SELECT expires_at FROM rate_windows WHERE namespace = ? AND key = ?",
            (self._namespace, key),
        )
        if not rows or rows[0][0] is None:
            return None
        return max(0, int(float(rows[0][0]) - time.time()))


def save_job(database: SharedDatabase, job_id: str, body: dict[str, object]) -> None:
    with database.writing() as db:
        db.execute("INSERT OR REPLACE INTO jobs VALUES (?, ?)", (job_id, json.dumps(body)))


def load_job(database: SharedDatabase, job_id: str) -> dict[str, object] | None:
    rows = database.read("SELECT body FROM jobs WHERE job_id = ?", (job_id,))
    return json.loads(str(rows[0][0])) if rows else None


def recent_jobs(database: SharedDatabase, limit: int = 50) -> list[dict[str, object]]:
    """The jobs last changed, latest first (a job is rewritten on every step)."""
    rows = database.read("SELECT body FROM jobs ORDER BY rowid DESC LIMIT ?", (limit,))
    return [json.loads(str(row[0])) for row in rows]
