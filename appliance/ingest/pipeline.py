"""The path of one document: read, parse, chunk, embed, write to every store.

Idempotent (an unchanged file writes nothing), incremental (a changed file replaces
only its own chunks) and resumable (a document left pending by a crash is redone on
the next run). A bad file is reported and skipped; nothing of it reaches a store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from appliance.index.base import STORE_LAYOUT_VERSION, GraphIndex, LexicalIndex, VectorIndex
from appliance.index.catalog import Catalog
from appliance.ingest.chunker import CHUNKER_VERSION, Chunker
from appliance.ingest.errors import IngestError
from appliance.ingest.metadata import (
    SIDECAR_SUFFIX,
    build_metadata,
    read_sidecar,
    readers_warning,
)
from appliance.ingest.parse_limits import LimitExceeded, ParseLimits, parse_budget
from appliance.ingest.parsers import PARSERS, parser_for
from appliance.nlp.embedder import Embedder
from appliance.nlp.parse_graph import ParseGraphBuilder
from appliance.records import Chunk, ChunkFacts, DocumentMetadata

_REMOVING = "removing"
"""Fingerprint of a document whose removal was interrupted: never resumed as an ingest."""

OutcomeStatus = Literal["added", "updated", "unchanged", "removed", "failed"]


@dataclass(frozen=True, slots=True)
class DocumentOutcome:
    path: Path
    status: OutcomeStatus
    doc_id: str | None = None
    chunks: int = 0
    error: str | None = None
    warning: str | None = None
    """Ingested, but something a person should fix (``metadata.readers_warning``)."""


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


@dataclass(frozen=True, slots=True)
class _Prepared:
    path: Path
    metadata: DocumentMetadata
    source_sha256: str
    fingerprint: str
    text: str
    chunks: list[Chunk]
    is_new: bool


def discover(paths: Iterable[Path]) -> list[Path]:
    """Files to ingest: named files, and supported files below named folders."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
                and not p.name.endswith(SIDECAR_SUFFIX)
                and p.suffix.lower() in PARSERS
            )
        else:
            found.append(path)
    return found


class DocumentTrail(Protocol):
    """Where each indexed or removed document is recorded (the audit log)."""

    def ingested(
        self, metadata: DocumentMetadata, chunk_ids: Sequence[str], actor: str | None = None
    ) -> object: ...

    def removed(self, doc_id: str, actor: str | None = None) -> object: ...


class FactExtractor(Protocol):
    """What the knowledge graph keeps of chunks (``nlp.clinical_facts``)."""

    @property
    def signature(self) -> str:
        """Part of each document's fingerprint: another extractor rebuilds the graph."""

    @property
    def nlp(self) -> Any:
        """The spaCy pipeline it reads; CAGE's parse is handed over when it is the same."""

    def extract(
        self, chunks: Sequence[Chunk], parsed: Sequence[Any] | None = None
    ) -> list[ChunkFacts]: ...


@dataclass(frozen=True, slots=True)
class KnowledgeGraphWriter:
    """The knowledge graph and what fills it: both, or no graph at all."""

    store: GraphIndex
    extractor: FactExtractor


class Ingestor:
    def __init__(
        self,
        catalog: Catalog,
        lexical: LexicalIndex,
        vectors: VectorIndex,
        embedder: Embedder,
        *,
        chunker: Chunker,
        max_file_bytes: int,
        parse_limits: ParseLimits | None = None,
        batch_documents: int = 32,
        embedder_name: str = "",
        graph_builder: ParseGraphBuilder | None = None,
        knowledge_graph: KnowledgeGraphWriter | None = None,
        trail: DocumentTrail | None = None,
    ) -> None:
        self._catalog = catalog
        self._knowledge_graph = knowledge_graph
        self._trail = trail
        self._lexical = lexical
        self._vectors = vectors
        self._embedder = embedder
        self._chunker = chunker
        self._max_file_bytes = max_file_bytes
        self._parse_limits = parse_limits or ParseLimits()
        self._batch_documents = batch_documents
        self._graph_builder = graph_builder
        # Part of every fingerprint: another embedding model means every vector is redone.
        self._pipeline_signature = (
            f"chunker={CHUNKER_VERSION};max={chunker.max_chars};embedder={embedder_name};"
            f"graphs={'none' if graph_builder is None else graph_builder.signature};"
            f"stores={STORE_LAYOUT_VERSION}"
            # with a graph, its extractor too: turning the graph on fills it for every document
            + ("" if knowledge_graph is None else f";{knowledge_graph.extractor.signature}")
        ).encode()

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
        defaults = dict(defaults or {})

        def record(outcome: DocumentOutcome) -> None:
            report.outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)

        files = [p.resolve() for p in discover(paths)]
        listed = {str(p) for p in files}
        files += [
            Path(r.source_path)
            for r in self._catalog.pending()
            if r.source_path not in listed
            and r.fingerprint != _REMOVING
            and Path(r.source_path).is_file()
        ]
        claimed: dict[str, Path] = {}
        batch: list[_Prepared] = []
        for path in files:
            try:
                prepared = self._prepare(path, defaults, claimed)
            except IngestError as error:
                record(DocumentOutcome(path, "failed", error=str(error)))
                continue
            if isinstance(prepared, DocumentOutcome):
                record(prepared)
                continue
            batch.append(prepared)
            if len(batch) >= self._batch_documents:
                self._write(batch, record, actor)
                batch = []
        if batch:
            self._write(batch, record, actor)
        if report.chunks_written:
            # Once a run, not per batch: building the vector search index is the costly
            # part of a bulk load, and the engine does nothing for a few new points.
            self._vectors.optimize()
        return report

    def _prepare(
        self, path: Path, defaults: Mapping[str, object], claimed: dict[str, Path]
    ) -> _Prepared | DocumentOutcome:
        if not path.is_file():
            raise IngestError(path, "no such file", "Check the path.")
        parse = parser_for(path)
        size = path.stat().st_size
        if size == 0:
            raise IngestError(path, "the file is empty")
        if size > self._max_file_bytes:
            raise IngestError(
                path,
                f"the file is {size:,} bytes, over the limit of {self._max_file_bytes:,}",
                "Split it, or raise APPLIANCE_LIMITS__MAX_FILE_BYTES.",
            )
        raw = path.read_bytes()
        sidecar, sidecar_raw = read_sidecar(path)
        source_sha256 = hashlib.sha256(raw).hexdigest()
        fingerprint = hashlib.sha256(
            b"\0".join(
                [
                    raw,
                    sidecar_raw,
                    json.dumps(defaults, sort_keys=True, default=str).encode(),
                    self._pipeline_signature,
                ]
            )
        ).hexdigest()
        for existing in self._catalog.documents_at(str(path)):
            if existing.fingerprint == fingerprint and existing.state == "indexed":
                claimed[existing.doc_id] = path
                return DocumentOutcome(path, "unchanged", existing.doc_id, existing.chunk_count)
        try:
            with parse_budget(self._parse_limits):
                parsed = parse(path, raw)
        except LimitExceeded as limit:
            raise IngestError(
                path, f"the document is too large to read: {limit.what}",
                f"Split it, or raise APPLIANCE_LIMITS__{limit.setting}.",
            ) from None  # fmt: skip
        metadata = build_metadata(path, parsed, sidecar, defaults)
        if not parsed.text.strip():
            raise IngestError(path, "the document has no text")
        owner = claimed.get(metadata.doc_id)
        previous = self._catalog.document(metadata.doc_id)
        if (
            owner is None
            and previous is not None
            and previous.source_path != str(path)
            and Path(previous.source_path).exists()
        ):
            owner = Path(previous.source_path)
        if owner is not None and owner != path:
            raise IngestError(
                path,
                f"document id {metadata.doc_id!r} is already taken by another source file",
                "Give this document another doc_id in its metadata.",
            )
        claimed[metadata.doc_id] = path
        chunks = self._chunker.chunk(parsed, metadata, source_sha256)
        if not chunks:
            raise IngestError(path, "no text could be cut into chunks")
        return _Prepared(
            path, metadata, source_sha256, fingerprint, parsed.text, chunks, previous is None
        )

    def _write(
        self,
        batch: list[_Prepared],
        record: Callable[[DocumentOutcome], None],
        actor: str | None = None,
    ) -> None:
        """Write a batch: catalog pending, stores replaced and committed, catalog indexed."""
        all_chunks = [chunk for prepared in batch for chunk in prepared.chunks]
        try:
            vectors, graphs, facts = self._read(all_chunks)
        except Exception as error:
            for prepared in batch:
                reason = f"embedding or parsing failed: {error!r}"
                record(DocumentOutcome(prepared.path, "failed", error=reason))
            return
        doc_ids = [p.metadata.doc_id for p in batch]
        stale = [
            r.doc_id
            for p in batch
            for r in self._catalog.documents_at(str(p.path))
            if r.doc_id != p.metadata.doc_id
        ]
        for p in batch:
            self._catalog.mark_pending(p.metadata, str(p.path), p.source_sha256, p.fingerprint)
        self._lexical.delete_documents(doc_ids + stale)
        self._vectors.delete_documents(doc_ids + stale)
        self._lexical.upsert(all_chunks)
        self._vectors.upsert(all_chunks, vectors)
        self._lexical.commit()
        self._vectors.commit()
        if self._knowledge_graph is not None:
            self._knowledge_graph.store.delete_documents(stale)
            self._knowledge_graph.store.replace_documents(facts)
        if stale:
            self._catalog.forget(stale)
        for p in batch:
            own_graphs = {c.chunk_id: graphs[c.chunk_id] for c in p.chunks if c.chunk_id in graphs}
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

    def _read(self, chunks: list[Chunk]) -> tuple[np.ndarray, dict[str, bytes], list[ChunkFacts]]:
        """What the stores need of a batch: vectors, CAGE's graphs and the graph's facts.
        The embedding model and spaCy's parser each leave a core idle half the time, so
        the embedding runs beside the parse (a quarter less time on two cores)."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed") as pool:
            embedding = pool.submit(self._embedder.embed_chunks, chunks)
            graphs: dict[str, bytes] = {}
            parsed: list[Any] | None = None
            if self._graph_builder is not None:
                parsed = self._graph_builder.parse_many([c.index_text for c in chunks])
                graphs = {
                    c.chunk_id: self._graph_builder.from_doc(doc).to_bytes()
                    for c, doc in zip(chunks, parsed, strict=True)
                }
            facts: list[ChunkFacts] = []
            if self._knowledge_graph is not None:
                extractor = self._knowledge_graph.extractor
                # One parse for both when both read the same pipeline: the parse is most
                # of what either costs.
                same = self._graph_builder is not None and extractor.nlp is self._graph_builder.nlp
                facts = extractor.extract(chunks, parsed if same else None)
            return embedding.result(), graphs, facts

    def remove(self, doc_ids: Sequence[str], actor: str | None = None) -> list[str]:
        """Remove documents from every store, then from the catalog. Unknown ids are
        skipped. ``actor``: who removes them (default: the operating-system account)."""
        known = [r for d in doc_ids if (r := self._catalog.document(d)) is not None]
        if not known:
            return []
        for r in known:
            self._catalog.mark_pending(r.metadata, r.source_path, r.source_sha256, _REMOVING)
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
        removals = [r.doc_id for r in pending if r.fingerprint == _REMOVING]
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
        if self._knowledge_graph is not None:
            self._knowledge_graph.store.delete_documents(doc_ids)

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
            self._vectors.upsert(chunks, self._embedder.embed_chunks(chunks))
            self._lexical.commit()
            self._vectors.commit()
            if self._knowledge_graph is not None:
                graph = self._knowledge_graph
                graph.store.replace_documents(graph.extractor.extract(chunks))
            written += len(chunks)
            if on_document is not None:
                on_document(record.doc_id)
        self._vectors.optimize()
        return written

    def prune(self) -> list[str]:
        """Remove documents whose source file no longer exists."""
        gone = [r.doc_id for r in self._catalog.documents() if not Path(r.source_path).exists()]
        return self.remove(gone)
