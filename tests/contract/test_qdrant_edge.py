"""qdrant-edge, the embedded vector engine, against the store contract."""

from __future__ import annotations

from pathlib import Path

from appliance.index.qdrant_edge_vectors import QdrantEdgeVectorIndex
from appliance.nlp.embedder import Embedder
from appliance.records import Chunk
from tests.contract.suites import StoreContract, VectorIndexContract


class TestQdrantEdge(StoreContract, VectorIndexContract):
    def open_store(self, path: Path, embedder: Embedder) -> QdrantEdgeVectorIndex:
        return QdrantEdgeVectorIndex(path, embedder.dimension)

    def write(self, store: QdrantEdgeVectorIndex, chunks: list[Chunk], embedder: Embedder) -> None:
        store.upsert(chunks, embedder.embed_chunks(chunks))

    def query_of(self, text: str, embedder: Embedder) -> object:
        return embedder.embed_query(text)
