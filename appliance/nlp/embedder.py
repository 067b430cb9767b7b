"""Sentence embeddings for dense retrieval (all-MiniLM-L6-v2 by default).

On CPUs with native bfloat16 (AVX512-BF16 or AMX), the encoder runs under bfloat16
autocast: about 1.7 times faster here, with vectors whose cosine to the float32 ones
is above 0.9999 (measured by ``benchmarks/ingest_and_query.py``). Vectors are
L2-normalised float32 either way, so both precisions can share one index.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from appliance.records import Chunk

Precision = Literal["auto", "float32", "bfloat16"]


@cache
def cpu_has_native_bfloat16() -> bool:
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        return False
    flags = cpuinfo.read_text(errors="ignore")
    return "avx512_bf16" in flags or "amx_bf16" in flags


def passage_text(chunk: Chunk) -> str:
    """What is embedded for a chunk: title and heading path give the span its context."""
    path = " > ".join(chunk.heading_path)
    lines = (
        [chunk.metadata.title, path, chunk.index_text]
        if path
        else [chunk.metadata.title, chunk.index_text]
    )
    return "\n".join(lines)


class Embedder:
    """Wraps a loaded sentence-transformer; vectors are L2-normalised float32."""

    def __init__(self, model: Any, batch_size: int = 16, precision: Precision = "auto") -> None:
        self._model = model
        self._batch_size = batch_size
        if precision == "auto":
            precision = "bfloat16" if cpu_has_native_bfloat16() else "float32"
        self.precision: Precision = precision
        self.dimension = int(model.get_embedding_dimension())

    @contextlib.contextmanager
    def _autocast(self) -> Iterator[None]:
        if self.precision == "bfloat16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                yield
        else:
            yield

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with torch.inference_mode(), self._autocast():
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

    def shared_work(self, chunks: Sequence[Chunk]) -> SharedEmbedding:
        """The chunks' embedding as work that several threads can share (see
        ``SharedEmbedding``)."""
        return SharedEmbedding(self, [passage_text(c) for c in chunks])


class SharedEmbedding:
    """Texts embedded a block at a time by whichever thread calls ``run``: ingestion's
    embedding thread starts at once, and the thread that parses joins it when its parse is
    done, so that both cores embed what is left instead of one waiting on the other.

    Blocks are taken longest texts first (little padding in a block, and the short blocks
    at the end even out when the threads finish). Inside ``threads_split`` each thread's
    encoder uses its share of torch's threads instead of all of them: with two threads on
    two cores, 1,783 MedQuAD chunks were read and written in 66 s against 81 s before
    (docs/figures.md, "The graph at 10,000 and 100,000 chunks")."""

    def __init__(self, embedder: Embedder, texts: list[str]) -> None:
        self._embedder = embedder
        self._texts = texts
        self._order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        self._block = embedder._batch_size * 4
        self._next = 0
        self._lock = threading.Lock()
        self.vectors = np.zeros((len(texts), embedder.dimension), dtype=np.float32)

    def run(self) -> None:
        """Embed blocks until none is left; safe to call from several threads at once."""
        while True:
            with self._lock:
                start = self._next
                self._next += self._block
            if start >= len(self._order):
                return
            rows = self._order[start : start + self._block]
            self.vectors[rows] = self._embedder.embed([self._texts[i] for i in rows])


@contextlib.contextmanager
def threads_split(ways: int) -> Iterator[None]:
    """Torch's intra-op threads divided among ``ways`` threads that run at once (at least
    one each), restored after. Process-wide: for a process that does only this meanwhile,
    as ingestion's reader does."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, before // ways))
    try:
        yield
    finally:
        torch.set_num_threads(before)
