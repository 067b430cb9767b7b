"""The path of one document: read, parse, chunk, embed (``preparation``), write to
every store (here).

Idempotent (an unchanged file writes nothing), incremental (a changed file replaces
only its own chunks) and resumable (a document left pending by a crash is redone on
the next run). A bad file is reported and skipped; nothing of it reaches a store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from appliance.index.base import GraphIndex, LexicalIndex, VectorIndex
from appliance.index.catalog import Catalog
from appliance.ingest.metadata import readers_warning
from appliance.ingest.preparation import (
    REMOVING,
    DocumentOutcome,
    DocumentPreparer,
    OutcomeStatus,
    ReadyBatch,
)
from appliance.records import DocumentMetadata


@dataclass(slots=True)
class IngestReport:
    outcomes: list[DocumentOutcome] = field(default_factory=list)

    def count(self, status: OutcomeStatus) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> list[DocumentOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def chunks_written(self) -> int:
        return sum(o.chunks for o in self.outcomes if o.status in ("added", "updated"))


class DocumentTrail(Protocol):
    """Where each indexed or removed document is recorded (the audit log)."""

    def ingested(
        self, metadata: DocumentMetadata, chunk_ids: Sequence[str], actor: str | None = None
    ) -> object: ...

    def removed(self, doc_id: str, actor: str | None = None) -> object: ...


class Ingestor:
    """The writes of ingestion, in every store, with the catalog saying at each moment
    what the stores can be trusted to hold. What is written comes from a
    ``DocumentPreparer``: here, in ``ingest``, or from another process (``write``)."""

    def __init__(
        self,
        catalog: Catalog,
        lexical: LexicalIndex,
        vectors: VectorIndex,
        preparer: DocumentPreparer,
        *,
        graph: GraphIndex | None = None,
        trail: DocumentTrail | None = None,
    ) -> None:
        if (graph is None) != (preparer.fact_extractor is None):
            raise ValueError("a knowledge graph needs a preparer that extracts its facts")
        self._catalog = catalog
        self._lexical = lexical
        self._vectors = vectors
        self._preparer = preparer
        self._graph = graph
        self._trail = trail

    def ingest(
        self,
        paths: Sequence[Path],
        *,
        defaults: Mapping[str, object] | None = None,
        on_outcome: Callable[[DocumentOutcome], None] | None = None,
        actor: str | None = None,
    ) -> IngestReport:
        """Ingest files and folders; documents an interrupted run left pending are redone.
        ``actor`` (a signed-in user) is who the audit trail says ingested them."""
        report = IngestReport()

        def record(outcome: DocumentOutcome) -> None:
            report.outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)

        for batch in self._preparer.batches(paths, dict(defaults or {}), record):
            self._write(batch, record, actor)
        self._finish(report)
        return report

    def write(
        self,
        prepared: Sequence[ReadyBatch | DocumentOutcome],
        *,
        on_outcome: Callable[[DocumentOutcome], None] | None = None,
        actor: str | None = None,
    ) -> IngestReport:
        """Write what a preparer made elsewhere (``DocumentPreparer.batches`` with its
        outcomes, in order): the same writes and report as ``ingest`` of the same files."""
        report = IngestReport()

        def record(outcome: DocumentOutcome) -> None:
            report.outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)

        for item in prepared:
            if isinstance(item, DocumentOutcome):
                record(item)
            else:
                self._write(item, record, actor)
        self._finish(report)
        return report

    def _finish(self, report: IngestReport) -> None:
        if report.chunks_written:
            # Once a run, not per batch: building the vector search index is the costly
            # part of a bulk load, and the engine does nothing for a few new points.
            self._vectors.optimize()

    def _write(
        self,
        batch: ReadyBatch,
        record: Callable[[DocumentOutcome], None],
        actor: str | None = None,
    ) -> None:
        """Write a batch: catalog pending, stores replaced and committed, catalog indexed."""
        all_chunks = batch.chunks
        doc_ids = [p.metadata.doc_id for p in batch.documents]
        stale = [
            r.doc_id
            for p in batch.documents
            for r in self._catalog.documents_at(str(p.path))
            if r.doc_id != p.metadata.doc_id
        ]
        for p in batch.documents:
            self._catalog.mark_pending(p.metadata, str(p.path), p.source_sha256, p.fingerprint)
        self._lexical.delete_documents(doc_ids + stale)
        self._vectors.delete_documents(doc_ids + stale)
        self._lexical.upsert(all_chunks)
        self._vectors.upsert(all_chunks, batch.vectors)
        self._lexical.commit()
        self._vectors.commit()
        if self._graph is not None:
            self._graph.delete_documents(stale)
            self._graph.replace_documents(batch.facts)
        if stale:
            self._catalog.forget(stale)
        for p in batch.documents:
            own_graphs = {
                c.chunk_id: batch.graphs[c.chunk_id] for c in p.chunks if c.chunk_id in batch.graphs
            }
            self._catalog.mark_indexed(p.metadata.doc_id, p.text, p.chunks, own_graphs)
            if self._trail is not None:
                self._trail.ingested(p.metadata, [c.chunk_id for c in p.chunks], actor)
            record(
                DocumentOutcome(
                    p.path,
                    "added" if p.is_new else "updated",
                    p.metadata.doc_id,
                    len(p.chunks),
                    warning=readers_warning(p.metadata),
                )
            )

    def remove(self, doc_ids: Sequence[str], actor: str | None = None) -> list[str]:
        """Remove documents from every store, then from the catalog. Unknown ids are
        skipped. ``actor``: who removes them (default: the operating-system account)."""
        known = [r for d in doc_ids if (r := self._catalog.document(d)) is not None]
        if not known:
            return []
        for r in known:
            self._catalog.mark_pending(r.metadata, r.source_path, r.source_sha256, REMOVING)
        ids = [r.doc_id for r in known]
        self._delete_everywhere(ids)
        self._catalog.forget(ids)
        if self._trail is not None:
            for doc_id in ids:
                self._trail.removed(doc_id, actor)
        return ids

    def reconcile(self) -> list[str]:
        """At startup: the documents an interrupted run left pending lose whatever chunks
        reached the stores (they would otherwise be searchable while the catalog does not
        vouch for them). A pending removal is finished; a pending ingestion is redone by
        the next ingestion run, which finds it pending. Returns the doc ids cleaned."""
        pending = self._catalog.pending()
        if not pending:
            return []
        ids = [r.doc_id for r in pending]
        self._delete_everywhere(ids)
        removals = [r.doc_id for r in pending if r.fingerprint == REMOVING]
        if removals:
            self._catalog.forget(removals)
            if self._trail is not None:
                for doc_id in removals:
                    self._trail.removed(doc_id)
        return ids

    def _delete_everywhere(self, doc_ids: list[str]) -> None:
        self._lexical.delete_documents(doc_ids)
        self._vectors.delete_documents(doc_ids)
        self._lexical.commit()
        self._vectors.commit()
        if self._graph is not None:
            self._graph.delete_documents(doc_ids)

    def rebuild_stores(self, on_document: Callable[[str], None] | None = None) -> int:
        """Writes every chunk the catalog vouches for into every store again, replacing
        what they hold: for a store server that lost its index, or a new cluster. The
        documents are not read again (the catalog keeps each chunk whole), only embedded
        (and their facts extracted, with a knowledge graph). Returns the chunks written."""
        written = 0
        for record in self._catalog.documents():
            if record.state != "indexed":
                continue
            found = self._catalog.chunks(sorted(self._catalog.chunk_ids_of(record.doc_id)))
            chunks = sorted(found.values(), key=lambda c: c.ordinal)
            self._lexical.delete_documents([record.doc_id])
            self._vectors.delete_documents([record.doc_id])
            self._lexical.upsert(chunks)
            self._vectors.upsert(chunks, self._preparer.embedder.embed_chunks(chunks))
            self._lexical.commit()
            self._vectors.commit()
            if self._graph is not None and self._preparer.fact_extractor is not None:
                self._graph.replace_documents(self._preparer.fact_extractor.extract(chunks))
            written += len(chunks)
            if on_document is not None:
                on_document(record.doc_id)
        self._vectors.optimize()
        return written

    def prune(self) -> list[str]:
        """Remove documents whose source file no longer exists."""
        gone = [r.doc_id for r in self._catalog.documents() if not Path(r.source_path).exists()]
        return self.remove(gone)
