"""What ingestion reads and computes before any store is touched.

Reading a document (parse, chunk, embed, CAGE's parses, the knowledge graph's facts) is
nearly all of ingestion's time and needs no store: the preparer only reads files and the
catalog. Kept apart from the writes (``pipeline.Ingestor``) so that it can run where the
stores are not, in a process of its own (``appliance.document_reader``), while the process that
owns the stores goes on answering questions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from appliance.index.base import STORE_LAYOUT_VERSION
from appliance.index.catalog import Catalog
from appliance.ingest.chunker import CHUNKER_VERSION, Chunker
from appliance.ingest.errors import IngestError
from appliance.ingest.metadata import SIDECAR_SUFFIX, build_metadata, read_sidecar
from appliance.ingest.parse_limits import LimitExceeded, ParseLimits, parse_budget
from appliance.ingest.parsers import PARSERS, parser_for
from appliance.nlp.embedder import Embedder, threads_split
from appliance.nlp.parse_graph import ParseGraphBuilder
from appliance.records import Chunk, ChunkFacts, DocumentMetadata

REMOVING = "removing"
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


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    path: Path
    metadata: DocumentMetadata
    source_sha256: str
    fingerprint: str
    text: str
    chunks: list[Chunk]
    is_new: bool


@dataclass(frozen=True, slots=True)
class ReadyBatch:
    """Documents with everything the stores need of their chunks."""

    documents: list[PreparedDocument]
    vectors: np.ndarray
    """One row per chunk, in the documents' order."""
    graphs: dict[str, bytes]
    """CAGE's parse graph of each chunk (empty when CAGE is off)."""
    facts: list[ChunkFacts]
    """The knowledge graph's facts of each chunk (empty when there is no graph)."""

    @property
    def chunks(self) -> list[Chunk]:
        return [chunk for document in self.documents for chunk in document.chunks]


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


class DocumentPreparer:
    def __init__(
        self,
        catalog: Catalog,
        embedder: Embedder,
        *,
        chunker: Chunker,
        max_file_bytes: int,
        parse_limits: ParseLimits | None = None,
        batch_documents: int = 32,
        embedder_name: str = "",
        graph_builder: ParseGraphBuilder | None = None,
        fact_extractor: FactExtractor | None = None,
    ) -> None:
        self._catalog = catalog
        self.embedder = embedder
        self.fact_extractor = fact_extractor
        """None when there is no knowledge graph to fill."""
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
            + ("" if fact_extractor is None else f";{fact_extractor.signature}")
        ).encode()

    def batches(
        self,
        paths: Sequence[Path],
        defaults: Mapping[str, object],
        record: Callable[[DocumentOutcome], None],
    ) -> Iterator[ReadyBatch]:
        """The files under ``paths``, and the documents an interrupted run left pending,
        read in batches. A file that needs no writing (unchanged) or cannot be read goes to
        ``record`` at once, and never into a batch."""
        files = [p.resolve() for p in discover(paths)]
        listed = {str(p) for p in files}
        files += [
            Path(r.source_path)
            for r in self._catalog.pending()
            if r.source_path not in listed
            and r.fingerprint != REMOVING
            and Path(r.source_path).is_file()
        ]
        claimed: dict[str, Path] = {}
        batch: list[PreparedDocument] = []
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
                yield from self._read(batch, record)
                batch = []
        if batch:
            yield from self._read(batch, record)

    def _prepare(
        self, path: Path, defaults: Mapping[str, object], claimed: dict[str, Path]
    ) -> PreparedDocument | DocumentOutcome:
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
        return PreparedDocument(
            path, metadata, source_sha256, fingerprint, parsed.text, chunks, previous is None
        )

    def _read(
        self, documents: list[PreparedDocument], record: Callable[[DocumentOutcome], None]
    ) -> Iterator[ReadyBatch]:
        """What the stores need of a batch: vectors, CAGE's graphs and the graph's facts.
        The embedding runs beside the parse, and the parsing thread joins the embedding
        when its parse is done (``SharedEmbedding``): no core waits on the other."""
        chunks = [chunk for document in documents for chunk in document.chunks]
        try:
            with (
                threads_split(2),
                ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed") as pool,
            ):
                embedding = self.embedder.shared_work(chunks)
                helper = pool.submit(embedding.run)
                graphs: dict[str, bytes] = {}
                parsed: list[Any] | None = None
                if self._graph_builder is not None:
                    parsed = self._graph_builder.parse_many([c.index_text for c in chunks])
                    graphs = {
                        c.chunk_id: self._graph_builder.from_doc(doc).to_bytes()
                        for c, doc in zip(chunks, parsed, strict=True)
                    }
                facts: list[ChunkFacts] = []
                if self.fact_extractor is not None:
                    # One parse for both when both read the same pipeline: the parse is
                    # most of what either costs.
                    builder = self._graph_builder
                    same = builder is not None and self.fact_extractor.nlp is builder.nlp
                    facts = self.fact_extractor.extract(chunks, parsed if same else None)
                embedding.run()
                helper.result()
                vectors = embedding.vectors
        except Exception as error:
            for document in documents:
                reason = f"embedding or parsing failed: {error!r}"
                record(DocumentOutcome(document.path, "failed", error=reason))
            return
        yield ReadyBatch(documents, vectors, graphs, facts)
