"""The stores behind small interfaces: lexical (BM25) and dense vectors.

Each interface has an embedded default here (tantivy, qdrant-edge); the production
servers (OpenSearch, Qdrant) are to join them behind the same interfaces. One contract
test suite (``tests/contract``) runs against every implementation.
"""

from appliance.index.base import LexicalIndex, ScoredChunkId, TermStatistics, VectorIndex
from appliance.index.filters import ActiveOn, AllOf, AnyOf, NoneOf, OneOf, SearchFilter

__all__ = [
    "ActiveOn",
    "AllOf",
    "AnyOf",
    "LexicalIndex",
    "NoneOf",
    "OneOf",
    "ScoredChunkId",
    "SearchFilter",
    "TermStatistics",
    "VectorIndex",
]
