"""Sentence embeddings for dense retrieval (all-MiniLM-L6-v2 by default)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from appliance.records import Chunk


def passage_text(chunk: Chunk) -> str:
    """What is embedded for a chunk: title and heading path give the span its context."""
    path = " > ".join(chunk.heading_path)
    return (
        f"{chunk.metadata.title}\n{path}\n{chunk.index_text}"
        if path
        else f"{chunk.metadata.title}\n{chunk.index_text}"
    )


class Embedder:
    """Wraps a loaded sentence-transformer; vectors are L2-normalised float32."""

    def __init__(self, model: Any, batch_size: int = 64) -> None:
        self._model = model
        self._batch_size = batch_size
        self.dimension = int(model.get_embedding_dimension())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_chunks(self, chunks: Sequence[Chunk]) -> np.ndarray:
        return self.embed([passage_text(c) for c in chunks])

    def embed_query(self, query: str) -> np.ndarray:
        return self.embed([query])[0]
