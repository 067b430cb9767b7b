"""Dense vectors in the Qdrant engine, in-process through qdrant-edge (the default).

Why qdrant-edge: the same engine and payload filtering as the Qdrant server that
large sites run, with no server: filters are applied inside the HNSW search, so a
user allowed to see few chunks still gets a full top-k.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeVectorParams,
    FieldCondition,
    Filter,
    MatchAny,
    MatchValue,
    PayloadSchemaType,
    Point,
    Query,
    QueryRequest,
    RangeFloat,
    ScrollRequest,
    UpdateOperation,
)

from appliance.index.base import ScoredChunkId
from appliance.index.filters import (
    FILTER_FIELDS,
    NO_PATIENT,
    ActiveOn,
    AllOf,
    AnyOf,
    NoneOf,
    OneOf,
    SearchFilter,
    day_number,
)
from appliance.records import OPEN_ENDED, Chunk

VECTOR_NAME = "text"
_POINT_NAMESPACE = uuid.UUID("3f0e4c9a-2b7d-4d5e-9a61-0c8f6b1e2d47")


def point_id(chunk_id: str) -> str:
    """Qdrant wants integer or UUID ids: derive a stable UUID from the chunk id."""
    return str(uuid.uuid5(_POINT_NAMESPACE, chunk_id))


class QdrantEdgeVectorIndex:
    """Cosine nearest neighbours over chunk embeddings, payload filters inside."""

    name = "dense"

    def __init__(self, path: Path, dimension: int) -> None:
        self._dimension = dimension
        config = EdgeConfig(
            vectors={VECTOR_NAME: EdgeVectorParams(size=dimension, distance=Distance.Cosine)}
        )
        if (path / "segments").exists():
            self._shard = EdgeShard.load(str(path), config)
        else:
            path.mkdir(parents=True, exist_ok=True)
            self._shard = EdgeShard.create(str(path), config)
            for name in FILTER_FIELDS:
                self._shard.update(
                    UpdateOperation.create_field_index(name, PayloadSchemaType.Keyword)
                )
            for day_field in ("effective_from", "effective_to"):
                self._shard.update(
                    UpdateOperation.create_field_index(day_field, PayloadSchemaType.Integer)
                )

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if len(chunks) == 0:
            return
        if vectors.shape[1] != self._dimension:
            raise ValueError(
                f"vectors have {vectors.shape[1]} dimensions, index has {self._dimension}"
            )
        points = [
            Point(point_id(chunk.chunk_id), {VECTOR_NAME: vector.tolist()}, self._payload(chunk))
            for chunk, vector in zip(chunks, vectors, strict=True)
        ]
        self._shard.update(UpdateOperation.upsert_points(points))

    @staticmethod
    def _payload(chunk: Chunk) -> dict[str, object]:
        meta = chunk.metadata
        return {
            "chunk_id": chunk.chunk_id,
            "doc_id": chunk.doc_id,
            "doc_type": meta.doc_type,
            "departments": list(meta.departments),
            "sensitivity": meta.sensitivity,
            "owner": meta.owner,
            "patient_id": meta.patient_id or NO_PATIENT,
            "effective_from": day_number(meta.effective_from),
            "effective_to": day_number(meta.effective_to or OPEN_ENDED),
        }

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        if doc_ids:
            condition = FieldCondition("doc_id", match=MatchAny(list(doc_ids)))
            self._shard.update(UpdateOperation.delete_points_by_filter(Filter(must=[condition])))

    def commit(self) -> None:
        self._shard.flush()

    def search(
        self, vector: np.ndarray, limit: int, search_filter: SearchFilter | None = None
    ) -> list[ScoredChunkId]:
        if limit <= 0:
            return []
        request = QueryRequest(
            limit=limit,
            query=Query.Nearest([float(x) for x in vector], using=VECTOR_NAME),
            filter=None if search_filter is None else self._compile(search_filter),
            with_payload=["chunk_id"],
        )
        return [
            ScoredChunkId(_chunk_id(point.payload), float(point.score))
            for point in self._shard.query(request)
        ]

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not chunk_ids:
            return {}
        records = self._shard.retrieve(
            [point_id(c) for c in chunk_ids], with_payload=["chunk_id"], with_vector=[VECTOR_NAME]
        )
        found: dict[str, np.ndarray] = {}
        for record in records:
            vector = (
                record.vector[VECTOR_NAME] if isinstance(record.vector, dict) else record.vector
            )
            found[_chunk_id(record.payload)] = np.asarray(vector, dtype=np.float32)
        return found

    def _compile(self, search_filter: SearchFilter) -> Filter:
        match search_filter:
            case AnyOf(field=name, values=values):
                if not values:
                    return _MATCH_NOTHING
                return Filter(must=[FieldCondition(name, match=MatchAny(list(values)))])
            case ActiveOn(day=day):
                n = float(day_number(day))
                return Filter(
                    must=[
                        FieldCondition("effective_from", range=RangeFloat(lte=n)),
                        FieldCondition("effective_to", range=RangeFloat(gt=n)),
                    ]
                )
            case AllOf(clauses=clauses):
                return Filter(must=[self._compile(c) for c in clauses])
            case OneOf(clauses=clauses):
                if not clauses:
                    return _MATCH_NOTHING
                return Filter(should=[self._compile(c) for c in clauses])
            case NoneOf(clauses=clauses):
                return Filter(must_not=[self._compile(c) for c in clauses])
        raise TypeError(f"not a search filter: {search_filter!r}")

    def count(self) -> int:
        return int(self._shard.count(CountRequest(exact=True)))

    def chunk_ids_of(self, doc_id: str) -> set[str]:
        condition = Filter(must=[FieldCondition("doc_id", match=MatchValue(doc_id))])
        found: set[str] = set()
        offset = None
        while True:
            records, offset = self._shard.scroll(
                ScrollRequest(filter=condition, limit=256, offset=offset, with_payload=["chunk_id"])
            )
            found.update(_chunk_id(r.payload) for r in records)
            if offset is None:
                return found

    def close(self) -> None:
        self._shard.flush()
        self._shard.close()


# A condition no point satisfies: every chunk has a doc_id, so "doc_id must be empty" fails.
_MATCH_NOTHING = Filter(must=[FieldCondition("doc_id", is_empty=True)])


def _chunk_id(payload: dict[str, Any] | None) -> str:
    """The chunk id every point carries (each request asks for it in its payload)."""
    if payload is None or "chunk_id" not in payload:
        raise RuntimeError("a vector point without its chunk_id: the store is damaged")
    return str(payload["chunk_id"])
