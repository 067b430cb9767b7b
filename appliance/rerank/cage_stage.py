"""CAGE in the query path: reorders the top candidates using their stored graphs.

The graphs were built at ingestion and the chunk vectors are read back from the
vector store: a query neither parses nor embeds a passage.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from appliance.nlp.parse_graph import PassageGraph
from appliance.records import Candidate
from appliance.rerank.base import RerankQuery
from appliance.rerank.cage import CageReranker

log = logging.getLogger(__name__)


class StoredGraphs(Protocol):
    """Where the parse graphs built at ingestion are kept (the catalog)."""

    def graphs(self, chunk_ids: Sequence[str]) -> dict[str, bytes]: ...


class StoredVectors(Protocol):
    """Where the chunk vectors are kept (the vector store)."""

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]: ...


class CageStage:
    """CAGE over the top ``candidates``: f = alpha * similarity + (1 - alpha) * coherence,
    where the similarity is the previous stage's relevance (``CageReranker.combine``)."""

    name = "cage"
    needs_vector = True
    relevance_threshold = None

    def __init__(
        self,
        catalog: StoredGraphs,
        vectors: StoredVectors,
        reranker: CageReranker,
        candidates: int = 10,
    ) -> None:
        self._catalog = catalog
        self._vectors = vectors
        self._reranker = reranker
        self._candidates = candidates

    @property
    def description(self) -> str:
        """What this stage does, for reports that must say how their figures were made."""
        config = self._reranker.config
        return f"CAGE (top {self._candidates}, alpha {config.alpha}, {config.epochs} epochs)"

    def to_dict(self) -> dict[str, object]:
        config = self._reranker.config
        return {
            "name": self.name,
            "candidates": self._candidates,
            "alpha": config.alpha,
            "epochs": config.epochs,
            "learning_rate": config.learning_rate,
            "hidden": config.hidden,
            "beta": config.beta,
            "seed": config.seed,
            "relational": config.relational,
            "reweight": config.reweight,
        }

    def rerank(self, query: RerankQuery, candidates: list[Candidate]) -> list[Candidate]:
        """The top ``candidates`` reordered by CAGE score; the rest keep their places."""
        top, rest = candidates[: self._candidates], candidates[self._candidates :]
        if len(top) < 2 or query.vector is None:
            return candidates
        query_vector = query.vector
        ids = [c.chunk.chunk_id for c in top]
        stored = self._catalog.graphs(ids)
        vectors = self._vectors.vectors(ids)
        missing = [i for i in ids if i not in stored or i not in vectors]
        if missing:
            log.warning("CAGE skipped: %d candidates have no stored graph or vector", len(missing))
            return candidates
        graphs = [PassageGraph.from_bytes(stored[i]) for i in ids]
        cosine = [float(vectors[i] @ query_vector) for i in ids]
        # The similarity term is the previous stage's relevance: the cross-encoder's
        # probability when one ran, else the first-stage cosine (as in the paper).
        similarity = np.array(
            [c.scores.get("cross_encoder", cos) for c, cos in zip(top, cosine, strict=True)],
            dtype=np.float32,
        )
        coherence = self._reranker.coherence(graphs)
        scores = self._reranker.combine(similarity, coherence)
        for candidate, cos, coh, score in zip(top, cosine, coherence, scores, strict=True):
            candidate.scores["cosine"] = cos
            candidate.scores["cage_coherence"] = float(coh)
            candidate.scores[self.name] = float(score)
        reordered = sorted(top, key=lambda c: -c.scores[self.name])
        return reordered + rest
