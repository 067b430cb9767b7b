"""The first half of the path of one question: filters pushed into both engines,
both searched in parallel, their rankings fused, chunks hydrated from the catalog."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np

from appliance.index.base import LexicalIndex, ScoredChunkId, VectorIndex
from appliance.index.catalog import Catalog
from appliance.index.filters import SearchFilter
from appliance.nlp.embedder import Embedder
from appliance.records import Candidate
from appliance.retrieve.fusion import reciprocal_rank_fusion

RetrievalMode = Literal["hybrid", "lexical", "dense"]


class QueryError(ValueError):
    """The question cannot be searched as given (empty, too long)."""


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    rrf_k: int = 60
    candidates_per_retriever: int = 50
    max_query_chars: int = 2000


class HybridRetriever:
    def __init__(
        self,
        catalog: Catalog,
        lexical: LexicalIndex,
        vectors: VectorIndex,
        embedder: Embedder,
        config: RetrievalConfig | None = None,
    ) -> None:
        self._catalog = catalog
        self._lexical = lexical
        self._vectors = vectors
        self._embedder = embedder
        self._config = config or RetrievalConfig()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="retrieve")

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
        lexical_future = (
            self._pool.submit(self._lexical.search, query, depth, search_filter)
            if mode in ("hybrid", "lexical")
            else None
        )
        if mode in ("hybrid", "dense"):
            vector = query_vector if query_vector is not None else self._embedder.embed_query(query)
            rankings[self._vectors.name] = self._vectors.search(vector, depth, search_filter)
        if lexical_future is not None:
            rankings[self._lexical.name] = lexical_future.result()
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
