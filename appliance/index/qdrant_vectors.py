"""Dense vectors on a Qdrant server through qdrant-client (``vectors.engine = "qdrant"``).

Why a server: a site whose chunks outgrow one process (millions of vectors, replicas,
quantisation) runs Qdrant beside the appliance; the filters stay inside the HNSW search,
compiled by the same code as the embedded engine's (``qdrant_filters``). Without a URL
the same client runs its local mode in the data directory: the server's API with no
server, which is how the test suite exercises this store (no registry ships a Qdrant
server binary).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from appliance.index.base import STORE_LAYOUT_VERSION, ScoredChunkId, StoreUnavailable
from appliance.index.filters import FILTER_FIELDS, SearchFilter
from appliance.index.qdrant_common import (
    VECTOR_NAME,
    check_vectors,
    chunk_id_of,
    compile_qdrant_filter,
    payload_of,
    point_id,
    vectors_by_chunk,
)
from appliance.records import Chunk

_PAGE = 256


def collection_name(prefix: str) -> str:
    """Versioned with the store layout: a layout change means a new, empty collection."""
    return f"{prefix}-chunks-v{STORE_LAYOUT_VERSION}"


class _ClientFilterModels:
    """Qdrant's filter models as qdrant-client spells them."""

    def any_of(self, field: str, values: list[str]) -> qm.FieldCondition:
        return qm.FieldCondition(key=field, match=qm.MatchAny(any=values))

    def at_most(self, field: str, value: float) -> qm.FieldCondition:
        return qm.FieldCondition(key=field, range=qm.Range(lte=value))

    def above(self, field: str, value: float) -> qm.FieldCondition:
        return qm.FieldCondition(key=field, range=qm.Range(gt=value))

    def is_empty(self, field: str) -> qm.IsEmptyCondition:
        return qm.IsEmptyCondition(is_empty=qm.PayloadField(key=field))

    def group(
        self, must: Sequence[Any] = (), should: Sequence[Any] = (), must_not: Sequence[Any] = ()
    ) -> qm.Filter:
        return qm.Filter(
            must=list(must) or None, should=list(should) or None, must_not=list(must_not) or None
        )


_CLIENT_MODELS = _ClientFilterModels()


class QdrantVectorIndex:
    """Cosine nearest neighbours over chunk embeddings in a Qdrant collection, payload
    filters inside the search."""

    name = "dense"

    def __init__(
        self,
        client: QdrantClient,
        dimension: int,
        *,
        collection_prefix: str = "appliance",
        where: str = "Qdrant",
        payload_indexes: bool = True,
    ) -> None:
        self._client = client
        self._dimension = dimension
        self._where = where
        self.collection = collection_name(collection_prefix)
        self._payload_indexes = payload_indexes
        self._opened = False

    def _ensure_collection(self) -> None:
        """Creates (or checks) the collection on first use, not when the store is opened:
        an appliance whose server is down still starts, and says so on first use."""
        if self._opened:
            return
        if not self._client.collection_exists(self.collection):
            self._create()
        else:
            self._check_dimension()
        self._opened = True

    def _create(self) -> None:
        self._client.create_collection(
            self.collection,
            vectors_config={
                VECTOR_NAME: qm.VectorParams(size=self._dimension, distance=qm.Distance.COSINE)
            },
        )
        if not self._payload_indexes:
            return
        for name in FILTER_FIELDS:
            self._client.create_payload_index(
                self.collection, name, field_schema=qm.PayloadSchemaType.KEYWORD
            )
        for day_field in ("effective_from", "effective_to"):
            self._client.create_payload_index(
                self.collection, day_field, field_schema=qm.PayloadSchemaType.INTEGER
            )

    def _check_dimension(self) -> None:
        vectors = self._client.get_collection(self.collection).config.params.vectors
        size = vectors[VECTOR_NAME].size if isinstance(vectors, dict) else None
        if size != self._dimension:
            raise ValueError(
                f"the Qdrant collection {self.collection} holds {size}-dimensional vectors "
                f"but the embedder makes {self._dimension}: re-index into a new "
                "collection_prefix, or use the embedder that filled it"
            )

    @contextmanager
    def _reaching(self, doing: str) -> Iterator[None]:
        """Turns a server that cannot be reached into one clear error (and makes the
        collection first, if this is the first use)."""
        try:
            self._ensure_collection()
            yield
        except (ResponseHandlingException, ConnectionError, TimeoutError) as error:
            raise StoreUnavailable(
                "vectors", f"{self._where} did not answer when asked to {doing} ({error})"
            ) from error
        except UnexpectedResponse as error:
            if error.status_code is not None and error.status_code >= 500:
                raise StoreUnavailable(
                    "vectors", f"{self._where} failed when asked to {doing} ({error})"
                ) from error
            raise

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if not check_vectors(chunks, vectors, self._dimension):
            return
        points = [
            qm.PointStruct(
                id=point_id(chunk.chunk_id),
                vector={VECTOR_NAME: vector.tolist()},
                payload=payload_of(chunk),
            )
            for chunk, vector in zip(chunks, vectors, strict=True)
        ]
        with self._reaching(f"store {len(points)} vector(s)"):
            for start in range(0, len(points), _PAGE):
                self._client.upsert(self.collection, points[start : start + _PAGE], wait=True)

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        if not doc_ids:
            return
        selector = qm.FilterSelector(
            filter=_CLIENT_MODELS.group(must=[_CLIENT_MODELS.any_of("doc_id", list(doc_ids))])
        )
        with self._reaching(f"delete {len(doc_ids)} document(s)"):
            self._client.delete(self.collection, points_selector=selector, wait=True)

    def commit(self) -> None:
        """Every write already waited for the server to apply it."""

    def optimize(self) -> None:
        """The server's optimizers build its index in the background."""

    def search(
        self, vector: np.ndarray, limit: int, search_filter: SearchFilter | None = None
    ) -> list[ScoredChunkId]:
        if limit <= 0:
            return []
        query_filter = (
            None if search_filter is None else compile_qdrant_filter(search_filter, _CLIENT_MODELS)
        )
        with self._reaching("search"):
            found = self._client.query_points(
                self.collection,
                query=[float(x) for x in vector],
                using=VECTOR_NAME,
                query_filter=query_filter,
                limit=limit,
                with_payload=["chunk_id"],
            )
        return [ScoredChunkId(chunk_id_of(p.payload), float(p.score)) for p in found.points]

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not chunk_ids:
            return {}
        with self._reaching("read stored vectors"):
            records = self._client.retrieve(
                self.collection,
                [point_id(c) for c in chunk_ids],
                with_payload=["chunk_id"],
                with_vectors=[VECTOR_NAME],
            )
        return vectors_by_chunk(records)

    def count(self) -> int:
        with self._reaching("count vectors"):
            return int(self._client.count(self.collection, exact=True).count)

    def chunk_ids_of(self, doc_id: str) -> set[str]:
        condition = _CLIENT_MODELS.group(must=[_CLIENT_MODELS.any_of("doc_id", [doc_id])])
        found: set[str] = set()
        offset: Any = None
        with self._reaching("list a document's chunks"):
            while True:
                records, offset = self._client.scroll(
                    self.collection,
                    scroll_filter=condition,
                    limit=_PAGE,
                    offset=offset,
                    with_payload=["chunk_id"],
                )
                found.update(chunk_id_of(r.payload) for r in records)
                if offset is None:
                    return found

    def close(self) -> None:
        self._client.close()
