"""What the two Qdrant stores share: the in-process engine (qdrant-edge) and the server
(qdrant-client) mirror the same models under different constructors. Points have the
same ids and payloads in both, and the filter language is compiled once, into the parts
each store supplies as a ``QdrantFilterModels`` (must / should / must_not, keyword
match, numeric range, is-empty).

Days are stored as proleptic ordinals (``filters.day_number``), integers both range over.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from appliance.index.filters import (
    ActiveOn,
    AllOf,
    AnyOf,
    NoneOf,
    OneOf,
    SearchFilter,
    day_number,
    filterable_fields,
)
from appliance.records import Chunk

VECTOR_NAME = "text"
_POINT_NAMESPACE = uuid.UUID("3f0e4c9a-2b7d-4d5e-9a61-0c8f6b1e2d47")


def point_id(chunk_id: str) -> str:
    """Qdrant wants integer or UUID ids: derive a stable UUID from the chunk id."""
    return str(uuid.uuid5(_POINT_NAMESPACE, chunk_id))


def payload_of(chunk: Chunk) -> dict[str, object]:
    """What a point carries besides its vector: the chunk id and the filterable fields."""
    return filterable_fields(chunk)


def check_vectors(chunks: Sequence[Chunk], vectors: Any, dimension: int) -> bool:
    """Whether there is anything to write; a ValueError when the vectors do not fit."""
    if len(chunks) != len(vectors):
        raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
    if len(chunks) == 0:
        return False
    if vectors.shape[1] != dimension:
        raise ValueError(f"vectors have {vectors.shape[1]} dimensions, index has {dimension}")
    return True


def chunk_id_of(payload: dict[str, Any] | None) -> str:
    """The chunk id every point carries (each request asks for it in its payload)."""
    if payload is None or "chunk_id" not in payload:
        raise RuntimeError("a vector point without its chunk_id: the store is damaged")
    return str(payload["chunk_id"])


class QdrantFilterModels(Protocol):
    """How one Qdrant client spells the parts of a filter."""

    def any_of(self, field: str, values: list[str]) -> Any:
        """A condition: the payload field holds one of ``values``."""

    def at_most(self, field: str, value: float) -> Any:
        """A condition: field <= value."""

    def above(self, field: str, value: float) -> Any:
        """A condition: field > value."""

    def is_empty(self, field: str) -> Any:
        """A condition: the field is missing or empty."""

    def group(
        self, must: Sequence[Any] = (), should: Sequence[Any] = (), must_not: Sequence[Any] = ()
    ) -> Any:
        """A filter of conditions and nested filters."""


def compile_qdrant_filter(search_filter: SearchFilter, models: QdrantFilterModels) -> Any:
    """The filter as a Qdrant filter built with ``models``."""
    match search_filter:
        case AnyOf(field=name, values=values):
            if not values:
                return match_nothing(models)
            return models.group(must=[models.any_of(name, list(values))])
        case ActiveOn(day=day):
            n = float(day_number(day))
            return models.group(
                must=[models.at_most("effective_from", n), models.above("effective_to", n)]
            )
        case AllOf(clauses=clauses):
            return models.group(must=[compile_qdrant_filter(c, models) for c in clauses])
        case OneOf(clauses=clauses):
            if not clauses:
                return match_nothing(models)
            return models.group(should=[compile_qdrant_filter(c, models) for c in clauses])
        case NoneOf(clauses=clauses):
            return models.group(must_not=[compile_qdrant_filter(c, models) for c in clauses])
    raise TypeError(f"not a search filter: {search_filter!r}")


def match_nothing(models: QdrantFilterModels) -> Any:
    """A filter no point satisfies: every chunk has a doc_id, so "doc_id is empty" fails."""
    return models.group(must=[models.is_empty("doc_id")])


def vectors_by_chunk(records: Sequence[Any]) -> dict[str, np.ndarray]:
    """Retrieved points' vectors by chunk id (either client's records: a named vector
    comes as a mapping)."""
    found: dict[str, np.ndarray] = {}
    for record in records:
        vector = record.vector[VECTOR_NAME] if isinstance(record.vector, dict) else record.vector
        found[chunk_id_of(record.payload)] = np.asarray(vector, dtype=np.float32)
    return found
