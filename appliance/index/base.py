"""The store interfaces (lexical, vectors) and the term statistics the coverage gate
reads. Implementations live beside this file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from appliance.index.filters import SearchFilter
from appliance.records import Chunk

STORE_LAYOUT_VERSION = "2"
"""The fields each store keeps per chunk. A change means new store folders and every
document re-indexed (it is part of each document's fingerprint); 2 added ``patient_id``."""


class StoreUnavailable(RuntimeError):
    """A store server could not be reached or failed; the message names it and says
    what was being done. Nothing partial is returned in its place."""

    def __init__(self, store: str, message: str) -> None:
        super().__init__(message)
        self.store = store
        """Which store: ``lexical`` or ``vectors``."""


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
