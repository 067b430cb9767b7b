"""The first half of the path of one question: filters pushed into every engine, all
searched in parallel (BM25, vectors, and the knowledge graph when there is one), their
rankings fused, chunks hydrated from the catalog."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from appliance.index.base import ScoredChunkId, VectorIndex
from appliance.index.catalog import Catalog
from appliance.index.filters import SearchFilter
from appliance.nlp.embedder import Embedder
from appliance.records import Candidate
from appliance.retrieve.fusion import reciprocal_rank_fusion

RetrievalMode = Literal["hybrid", "lexical", "dense"]


class TextRetriever(Protocol):
    """A retriever that searches by the question's words (BM25, the knowledge graph)."""

    name: str

    def search(
        self, query: str, limit: int, search_filter: SearchFilter | None = None
    ) -> list[ScoredChunkId]: ...


class QueryError(ValueError):
    """The question cannot be searched as given (empty, too long)."""


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    rrf_k: int = 60
    candidates_per_retriever: int = 50
    max_query_chars: int = 2000


class HybridRetriever:
    """Text retrievers (BM25 first, then any others) and the vector store, fused."""

    def __init__(
        self,
        catalog: Catalog,
        text_retrievers: Sequence[TextRetriever],
        vectors: VectorIndex,
        embedder: Embedder,
        config: RetrievalConfig | None = None,
    ) -> None:
        if not text_retrievers:
            raise ValueError("retrieval needs the lexical retriever at least")
        self._catalog = catalog
        self._lexical, *self._others = text_retrievers
        self._vectors = vectors
        self._embedder = embedder
        self._config = config or RetrievalConfig()
        self._pool = ThreadPoolExecutor(
            max_workers=len(text_retrievers), thread_name_prefix="retrieve"
        )

    def retrieve(
        self,
        query: str,
        top_k: int = 10,
        search_filter: SearchFilter | None = None,
        mode: RetrievalMode = "hybrid",
        query_vector: np.ndarray | None = None,
    ) -> list[Candidate]:
        """Fused candidates, best first; ``query_vector`` saves re-embedding the query."""
        query = self.validate_query(query)
        depth = max(self._config.candidates_per_retriever, top_k)
        rankings: dict[str, list[ScoredChunkId]] = {}
        asked = [self._lexical] if mode in ("hybrid", "lexical") else []
        if mode == "hybrid":
            asked += self._others
        futures = {r.name: self._pool.submit(r.search, query, depth, search_filter) for r in asked}
        if mode in ("hybrid", "dense"):
            vector = query_vector if query_vector is not None else self._embedder.embed_query(query)
            rankings[self._vectors.name] = self._vectors.search(vector, depth, search_filter)
        for name, future in futures.items():
            rankings[name] = future.result()
        fused = reciprocal_rank_fusion(rankings, k=self._config.rrf_k)
        chunks = self._catalog.chunks([chunk_id for chunk_id, _score, _hits in fused])
        # A chunk id the catalog does not know (a document mid-removal) is never returned.
        candidates = [
            Candidate(chunks[chunk_id], score, hits)
            for chunk_id, score, hits in fused
            if chunk_id in chunks
        ]
        return candidates[:top_k]

    def to_dict(self) -> dict[str, object]:
        """The retrievers and how their rankings are fused, as data."""
        return {
            "retrievers": {
                self._lexical.name: type(self._lexical).__name__,
                self._vectors.name: type(self._vectors).__name__,
                **{r.name: type(r).__name__ for r in self._others},
            },
            "candidates_per_retriever": self._config.candidates_per_retriever,
            "fusion": {"method": "reciprocal rank fusion", "k": self._config.rrf_k},
        }

    def validate_query(self, query: str) -> str:
        """The question, stripped; QueryError when it cannot be searched as given."""
        query = query.strip()
        if not query:
            raise QueryError("the question is empty")
        if len(query) > self._config.max_query_chars:
            raise QueryError(
                f"the question is {len(query)} characters long; the limit is "
                f"{self._config.max_query_chars}"
            )
        return query

    def embed_query(self, query: str) -> np.ndarray:
        return self._embedder.embed_query(query)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
