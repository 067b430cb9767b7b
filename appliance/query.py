"""The path of one question, as far as it is built: retrieve, fuse, rerank."""

from __future__ import annotations

from appliance.index.filters import SearchFilter
from appliance.records import Candidate
from appliance.rerank.cage_stage import CageStage
from appliance.rerank.cross_encoder_stage import CrossEncoderStage
from appliance.retrieve.hybrid import HybridRetriever, RetrievalMode


class QueryPipeline:
    def __init__(
        self,
        retriever: HybridRetriever,
        cage: CageStage | None = None,
        cross_encoder: CrossEncoderStage | None = None,
    ) -> None:
        self._retriever = retriever
        self._cage = cage
        self._cross_encoder = cross_encoder

    @property
    def relevance_threshold(self) -> float | None:
        """Below this cross-encoder probability a candidate does not answer the question."""
        return None if self._cross_encoder is None else self._cross_encoder.threshold

    def run(
        self,
        question: str,
        top_k: int = 10,
        search_filter: SearchFilter | None = None,
        mode: RetrievalMode = "hybrid",
        rerank: bool = True,
    ) -> list[Candidate]:
        """Candidates for a question, best first, each with every stage's score."""
        cage = self._cage if rerank else None
        cross_encoder = self._cross_encoder if rerank else None
        # Embed once, and only when a stage uses the vector (dense search or CAGE).
        needs_vector = bool(question.strip()) and (mode != "lexical" or cage is not None)
        vector = self._retriever.embed_query(question.strip()) if needs_vector else None
        reranking = cage is not None or cross_encoder is not None
        depth = max(top_k, 20) if reranking else top_k
        candidates = self._retriever.retrieve(question, depth, search_filter, mode, vector)
        if cross_encoder is not None:
            candidates = cross_encoder.rerank(question, candidates)
        if cage is not None and vector is not None:
            candidates = cage.rerank(vector, candidates)
        return candidates[:top_k]
