"""The product's own ranking on a candidate pool: the question path's fusion and rerank
stages, built by ``appliance.rerank.stages.open_stages`` from the settings, so that the
figure the README reports for the product is the product's.

A pool stands in for the stores: BM25 over the pool (the product's analyzer) and the
cosine ranking are fused by the product's reciprocal rank fusion, every passage becomes
the one chunk of a document titled as the passage's page, and the stages read the pool's
parse graphs and passage vectors as they read the catalog and the vector store.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from appliance.index.base import ScoredChunkId
from appliance.model_registry import ModelRegistry
from appliance.nlp.parse_graph import PassageGraph
from appliance.records import Candidate, Chunk, DocumentMetadata
from appliance.rerank.base import RerankQuery
from appliance.rerank.stages import open_stages
from appliance.retrieve.fusion import reciprocal_rank_fusion
from appliance.settings import Settings
from appliance.training.pools import Passage

from .harness import QuestionInputs, Ranking, bm25_ranking, by_score

PRODUCT = "Product pipeline as configured"


@dataclass(frozen=True, slots=True)
class PoolStores:
    """One pool's passages where the stages look for stored graphs and vectors."""

    passage_graphs: list[PassageGraph]
    passage_vectors: np.ndarray

    def graphs(self, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        return {i: self.passage_graphs[int(i)].to_bytes() for i in chunk_ids}

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        return {i: self.passage_vectors[int(i)] for i in chunk_ids}


class ProductPipeline:
    def __init__(self, settings: Settings, registry: ModelRegistry) -> None:
        self._settings = settings
        self._registry = registry

    def describe(self) -> list[str]:
        """The stages as the settings configure them (for the report)."""
        empty = PoolStores([], np.zeros((0, 1), np.float32))
        stages = open_stages(self._settings.rerank, self._registry, empty, empty)
        return [s.description for s in stages]

    def rank(self, inputs: QuestionInputs) -> Ranking:
        assert inputs.query_vector is not None and inputs.passage_vectors is not None
        question = inputs.question
        stores = PoolStores(inputs.graphs, inputs.passage_vectors)
        rankings = {
            "lexical": [ScoredChunkId(str(i), 0.0) for i in bm25_ranking(question)],
            "dense": [
                ScoredChunkId(str(i), float(inputs.cosine[i])) for i in by_score(inputs.cosine)
            ],
        }
        fused = reciprocal_rank_fusion(rankings, k=self._settings.retrieval.rrf_k)
        candidates = [
            Candidate(_chunk(int(chunk_id), question.passages[int(chunk_id)]), score, hits)
            for chunk_id, score, hits in fused
        ]
        stages = open_stages(self._settings.rerank, self._registry, stores, stores)
        query = RerankQuery(question.question, inputs.query_vector)
        for stage in stages:
            candidates = stage.rerank(query, candidates)
        return [int(c.chunk.chunk_id) for c in candidates]


def _chunk(position: int, passage: Passage) -> Chunk:
    doc_id = f"passage-{position}"
    metadata = DocumentMetadata(
        doc_id=doc_id, title=passage.title or doc_id, effective_from=dt.date(2000, 1, 1)
    )
    text = passage.full_text
    return Chunk(str(position), doc_id, 0, text, 0, len(text), (), None, "", metadata)
