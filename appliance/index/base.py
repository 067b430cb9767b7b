"""The store interfaces (lexical, vectors, knowledge graph) and the term statistics the
coverage gate reads. Implementations live beside this file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from appliance.index.filters import SearchFilter
from appliance.records import Chunk, ChunkFacts, Relation, Scope

STORE_LAYOUT_VERSION = "2"
"""The fields each store keeps per chunk. A change means new store folders and every
document re-indexed (it is part of each document's fingerprint); 2 added ``patient_id``."""


class StoreUnavailable(RuntimeError):
    """A store server could not be reached or failed; the message names it and says
    what was being done. Nothing partial is returned in its place."""

    def __init__(self, store: str, message: str) -> None:
        super().__init__(message)
        self.store = store
        """Which store: ``lexical``, ``vectors`` or ``graph``."""


@dataclass(frozen=True, slots=True)
class ScoredChunkId:
    chunk_id: str
    score: float


class LexicalIndex(Protocol):
    """BM25 over chunk text, title and heading path, with filters inside the query."""

    name: str

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Add or replace chunks (by chunk id); visible after ``commit``."""

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        """Remove every chunk of these documents; effective after ``commit``."""

    def commit(self) -> None:
        """Make pending writes durable and searchable."""

    def search(
        self, query: str, limit: int, search_filter: SearchFilter | None = None
    ) -> list[ScoredChunkId]: ...

    def count(self) -> int: ...

    def chunk_ids_of(self, doc_id: str) -> set[str]: ...

    def close(self) -> None: ...


class TermStatistics(Protocol):
    """What the question-coverage gate asks of the lexical engine: a text's terms as the
    index analyses them, and how many chunks under an access filter hold each one. Each
    lexical engine implements it with its own analysis, so the gate's words are the
    index's words."""

    def content_terms(self, text: str) -> list[str]:
        """A text's content words as the index analyses them (stemmed, no stop words)."""

    def document_frequencies(
        self, terms: Sequence[str], search_filter: SearchFilter | None = None
    ) -> tuple[dict[str, int], int]:
        """Per term, the chunks (among those the filter admits) that contain it; and
        how many chunks the filter admits."""


class LexicalEngine(LexicalIndex, TermStatistics, Protocol):
    """A lexical store with its term statistics: what each lexical backend provides."""


class VectorIndex(Protocol):
    """Nearest neighbours over chunk embeddings, with payload filters inside the search."""

    name: str

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None: ...

    def delete_documents(self, doc_ids: Sequence[str]) -> None: ...

    def commit(self) -> None: ...

    def optimize(self) -> None:
        """After a run of writes: build what keeps searches fast (the HNSW graph, which the
        embedded engine builds only when asked; a server builds its own)."""

    def search(
        self, vector: np.ndarray, limit: int, search_filter: SearchFilter | None = None
    ) -> list[ScoredChunkId]: ...

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by chunk id (rerankers compare them with the query's)."""

    def count(self) -> int: ...

    def chunk_ids_of(self, doc_id: str) -> set[str]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class GraphEvidence:
    """A chunk a graph template found, with what the graph knows that made it match
    (entity keys, or relations such as "EXCLUDES diabetic ketoacidosis")."""

    chunk_id: str
    score: float
    template: str
    evidence: tuple[str, ...]


class GraphIndex(Protocol):
    """The knowledge graph: documents, chunks with their access fields, the entities
    they name and what they state about them; read only through reviewed templates."""

    name: str

    def replace_documents(self, facts: Sequence[ChunkFacts]) -> None:
        """Replace everything of the documents these chunks belong to (one transaction)."""

    def delete_documents(self, doc_ids: Sequence[str]) -> None: ...

    def find(
        self,
        template: str,
        parameters: dict[str, object],
        search_filter: SearchFilter | None = None,
    ) -> list[GraphEvidence]:
        """The chunks a chunk-finding template matches, best first, inside the filter."""

    def scopes_of(
        self, chunk_ids: Sequence[str], search_filter: SearchFilter | None = None
    ) -> dict[str, list[Scope]]:
        """What each chunk applies to and excludes."""

    def relations_of(
        self, chunk_ids: Sequence[str], search_filter: SearchFilter | None = None
    ) -> dict[str, list[Relation]]:
        """What each chunk states between entities, with the details and span."""

    def abbreviations(self, search_filter: SearchFilter | None = None) -> dict[str, str]:
        """Short form -> entity key, as the readable documents define them."""

    def count(self) -> int: ...

    def chunk_ids_of(self, doc_id: str) -> set[str]: ...

    def close(self) -> None: ...
