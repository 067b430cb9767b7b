"""The ingestion catalog: a small SQLite database in the data directory.

It records, per document, the source path and fingerprint last ingested, its state
(``pending`` while its chunks are being rewritten in the stores, ``indexed`` once
every store has committed) and its chunks. A document left ``pending`` by a crash is
simply redone on the next run: store writes are idempotent (delete by document,
upsert by chunk id), which is what makes ingestion resumable.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from appliance.records import Chunk, DocumentMetadata

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source_path TEXT NOT NULL,
    source_sha256 TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    metadata TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'indexed')),
    chunk_count INTEGER NOT NULL DEFAULT 0,
    ingested_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_by_path ON documents (source_path);
CREATE TABLE IF NOT EXISTS document_texts (
    doc_id TEXT PRIMARY KEY REFERENCES documents (doc_id) ON DELETE CASCADE,
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    page INTEGER,
    heading_path TEXT NOT NULL,
    text TEXT NOT NULL,
    context TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks (doc_id, ordinal);
CREATE TABLE IF NOT EXISTS chunk_graphs (
    chunk_id TEXT PRIMARY KEY REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    graph BLOB NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    doc_id: str
    source_path: str
    source_sha256: str
    fingerprint: str
    metadata: DocumentMetadata
    state: str
    chunk_count: int
    ingested_at: str


class Catalog:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    # -- documents -----------------------------------------------------------------------

    def document(self, doc_id: str) -> DocumentRecord | None:
        row = self._db.execute("SELECT * FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        return None if row is None else _document_record(row)

    def documents(self) -> list[DocumentRecord]:
        rows = self._db.execute("SELECT * FROM documents ORDER BY doc_id").fetchall()
        return [_document_record(row) for row in rows]

    def documents_at(self, source_path: str) -> list[DocumentRecord]:
        rows = self._db.execute(
            "SELECT * FROM documents WHERE source_path = ?", (source_path,)
        ).fetchall()
        return [_document_record(row) for row in rows]

    def pending(self) -> list[DocumentRecord]:
        rows = self._db.execute("SELECT * FROM documents WHERE state = 'pending'").fetchall()
        return [_document_record(row) for row in rows]

    def mark_pending(
        self,
        metadata: DocumentMetadata,
        source_path: str,
        source_sha256: str,
        fingerprint: str,
    ) -> None:
        """Before any store is touched: this document's store contents are in flux."""
        self._db.execute(
            """INSERT INTO documents (doc_id, source_path, source_sha256, fingerprint, metadata,
                   state, chunk_count, ingested_at)
               VALUES (?, ?, ?, ?, ?, 'pending', 0, ?)
               ON CONFLICT (doc_id) DO UPDATE SET source_path = excluded.source_path,
                   source_sha256 = excluded.source_sha256, fingerprint = excluded.fingerprint,
                   metadata = excluded.metadata, state = 'pending'""",
            (
                metadata.doc_id,
                source_path,
                source_sha256,
                fingerprint,
                metadata.model_dump_json(),
                _now(),
            ),
        )

    def mark_indexed(
        self,
        doc_id: str,
        text: str,
        chunks: Sequence[Chunk],
        graphs: Mapping[str, bytes] | None = None,
    ) -> None:
        """After every store has committed: record the chunks (and their parse graphs)
        and close the document."""
        with self._transaction():
            self._db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            self._db.executemany(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        c.chunk_id,
                        doc_id,
                        c.ordinal,
                        c.start,
                        c.end,
                        c.page,
                        json.dumps(list(c.heading_path)),
                        c.text,
                        c.context,
                    )
                    for c in chunks
                ],
            )
            if graphs:
                self._db.executemany(
                    "INSERT INTO chunk_graphs (chunk_id, graph) VALUES (?, ?)", list(graphs.items())
                )
            self._db.execute(
                "INSERT OR REPLACE INTO document_texts (doc_id, text) VALUES (?, ?)", (doc_id, text)
            )
            self._db.execute(
                "UPDATE documents SET state = 'indexed', chunk_count = ?, ingested_at = ? "
                "WHERE doc_id = ?",
                (len(chunks), _now(), doc_id),
            )

    def forget(self, doc_ids: Iterable[str]) -> None:
        with self._transaction():
            self._db.executemany("DELETE FROM documents WHERE doc_id = ?", [(d,) for d in doc_ids])

    # -- chunks --------------------------------------------------------------------------

    def document_text(self, doc_id: str) -> str | None:
        row = self._db.execute(
            "SELECT text FROM document_texts WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    def chunk_ids_of(self, doc_id: str) -> set[str]:
        rows = self._db.execute("SELECT chunk_id FROM chunks WHERE doc_id = ?", (doc_id,))
        return {row[0] for row in rows}

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by id, for ids whose document is indexed; unknown ids are absent."""
        found: dict[str, Chunk] = {}
        metadata_cache: dict[str, tuple[DocumentMetadata, str]] = {}
        for offset in range(0, len(chunk_ids), 500):
            batch = list(chunk_ids[offset : offset + 500])
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(
                f"""SELECT c.*, d.metadata, d.source_sha256 FROM chunks c
                    JOIN documents d ON d.doc_id = c.doc_id
                    WHERE d.state = 'indexed' AND c.chunk_id IN ({marks})""",
                batch,
            ).fetchall()
            for row in rows:
                (
                    chunk_id,
                    doc_id,
                    ordinal,
                    start,
                    end,
                    page,
                    headings,
                    text,
                    context,
                    meta,
                    sha,
                ) = row
                if doc_id not in metadata_cache:
                    metadata_cache[doc_id] = (DocumentMetadata.model_validate_json(meta), sha)
                metadata, source_sha = metadata_cache[doc_id]
                found[chunk_id] = Chunk(
                    chunk_id=chunk_id,
                    doc_id=doc_id,
                    ordinal=ordinal,
                    text=text,
                    start=start,
                    end=end,
                    heading_path=tuple(json.loads(headings)),
                    page=page,
                    source_sha256=source_sha,
                    metadata=metadata,
                    context=context,
                )
        return found

    def graphs(self, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        """Stored parse graphs (serialised) by chunk id; chunks without one are absent."""
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self._db.execute(
            f"SELECT chunk_id, graph FROM chunk_graphs WHERE chunk_id IN ({marks})", list(chunk_ids)
        )
        return {chunk_id: bytes(graph) for chunk_id, graph in rows}

    def chunk_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self._db.execute("ROLLBACK" if kind else "COMMIT")


def _document_record(row: tuple[object, ...]) -> DocumentRecord:
    doc_id, path, sha, fingerprint, metadata, state, count, at = row
    return DocumentRecord(
        doc_id=str(doc_id),
        source_path=str(path),
        source_sha256=str(sha),
        fingerprint=str(fingerprint),
        metadata=DocumentMetadata.model_validate_json(str(metadata)),
        state=str(state),
        chunk_count=int(count),  # type: ignore[call-overload]
        ingested_at=str(at),
    )


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
