"""The catalog: a document is pending while its stores change, indexed once they have
committed; chunks come back with their document's labels and exact spans."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from appliance.index.catalog import Catalog
from appliance.records import Chunk, DocumentMetadata

TEXT = "# Hand Hygiene\n\nRub hands for 20 to 30 seconds.\n\nDry them well."


def _metadata(version: str = "1") -> DocumentMetadata:
    return DocumentMetadata(
        doc_id="hand-hygiene", title="Hand Hygiene", version=version, sensitivity="internal"
    )


def _chunks(metadata: DocumentMetadata) -> list[Chunk]:
    spans = [(16, 47), (49, 62)]
    return [
        Chunk(f"hand-hygiene#{n}", "hand-hygiene", n, TEXT[start:end], start, end,
              ("Hand Hygiene",), None, "sha", metadata)
        for n, (start, end) in enumerate(spans)
    ]  # fmt: skip


def test_a_document_is_pending_until_its_chunks_are_recorded(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite3")
    metadata = _metadata()
    catalog.mark_pending(metadata, "/docs/hand.md", "sha", "fp")
    assert [r.doc_id for r in catalog.pending()] == ["hand-hygiene"]
    assert catalog.chunk_ids_of("hand-hygiene") == set()
    catalog.mark_indexed("hand-hygiene", TEXT, _chunks(metadata), {"hand-hygiene#0": b"graph"})
    record = catalog.document("hand-hygiene")
    assert record is not None and record.state == "indexed" and record.chunk_count == 2
    assert catalog.pending() == [] and catalog.chunk_count() == 2
    chunks = catalog.chunks(["hand-hygiene#1", "hand-hygiene#0", "absent#0"])
    assert set(chunks) == {"hand-hygiene#0", "hand-hygiene#1"}
    for chunk in chunks.values():
        assert TEXT[chunk.start : chunk.end] == chunk.text
        assert chunk.metadata == metadata and chunk.heading_path == ("Hand Hygiene",)
    assert catalog.graphs(["hand-hygiene#0", "hand-hygiene#1"]) == {"hand-hygiene#0": b"graph"}
    assert catalog.document_text("hand-hygiene") == TEXT
    catalog.close()


def test_a_new_version_replaces_the_chunks_and_forgetting_removes_everything(
    tmp_path: Path,
) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite3")
    catalog.mark_pending(_metadata("1"), "/docs/hand.md", "sha", "fp")
    catalog.mark_indexed("hand-hygiene", TEXT, _chunks(_metadata("1")))
    second = _metadata("2")
    catalog.mark_pending(second, "/docs/hand.md", "sha2", "fp")
    catalog.mark_indexed("hand-hygiene", TEXT, _chunks(second)[:1])
    assert catalog.chunk_ids_of("hand-hygiene") == {"hand-hygiene#0"}
    assert catalog.chunks(["hand-hygiene#0"])["hand-hygiene#0"].metadata.version == "2"
    assert [r.doc_id for r in catalog.documents_at("/docs/hand.md")] == ["hand-hygiene"]
    catalog.forget(["hand-hygiene"])
    assert catalog.documents() == [] and catalog.chunk_count() == 0
    assert catalog.document_text("hand-hygiene") is None
    catalog.close()


def test_a_failed_write_leaves_the_document_pending(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite3")
    metadata = _metadata()
    catalog.mark_pending(metadata, "/docs/hand.md", "sha", "fp")
    twice = _chunks(metadata)[:1] * 2  # the same chunk id twice: the insert fails
    with pytest.raises(sqlite3.IntegrityError):
        catalog.mark_indexed("hand-hygiene", TEXT, twice)
    assert [r.state for r in catalog.documents()] == ["pending"]
    assert catalog.chunk_ids_of("hand-hygiene") == set()
    catalog.close()
