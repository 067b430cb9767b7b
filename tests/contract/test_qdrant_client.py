"""The Qdrant server's store (qdrant-client) against the store contract, in the client's
local mode: no registry ships a Qdrant server binary, so this is the server's API
without the server (the production server comes with the compose file and the Ansible
role)."""

from __future__ import annotations

from pathlib import Path

from qdrant_client import QdrantClient

from appliance.index.qdrant_vectors import QdrantVectorIndex
from appliance.nlp.embedder import Embedder
from appliance.records import Chunk
from tests.contract.suites import StoreContract, VectorIndexContract


class TestQdrantClient(StoreContract, VectorIndexContract):
    def open_store(self, path: Path, embedder: Embedder) -> QdrantVectorIndex:
        path.mkdir(parents=True, exist_ok=True)
        return QdrantVectorIndex(
            QdrantClient(path=str(path)), embedder.dimension, payload_indexes=False
        )

    def write(self, store: QdrantVectorIndex, chunks: list[Chunk], embedder: Embedder) -> None:
        store.upsert(chunks, embedder.embed_chunks(chunks))

    def query_of(self, text: str, embedder: Embedder) -> object:
        return embedder.embed_query(text)
