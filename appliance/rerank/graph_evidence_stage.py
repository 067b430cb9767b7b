"""The knowledge graph's best passage is not sunk by the stages before this one.

When the graph retriever speaks, the passage it ranks first states the relation, the
scope or the negation the question asks about ("avoid in asthma", "not to prevent
febrile seizures"). The rerank stages weigh the question's cosine and the passages'
coherence, and neither reads a negation: with competition (thousands of public pages on
the same drugs) CAGE moved such a passage from first to sixth, out of the five the answer
reads, and the question was refused. So that passage keeps at least the place reciprocal
rank fusion gave it: the stages may lift it, never push it below that place. Without a
graph hit this stage changes nothing.
"""

from __future__ import annotations

from appliance.records import Candidate
from appliance.rerank.base import RerankQuery


class GraphEvidenceStage:
    name = "graph_evidence"
    needs_vector = False
    relevance_threshold = None

    def __init__(self, retriever: str = "graph") -> None:
        self._retriever = retriever

    @property
    def description(self) -> str:
        return "the knowledge graph's first passage kept at its fused place or above"

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "retriever": self._retriever, "keeps": "graph rank 1"}

    def rerank(self, query: RerankQuery, candidates: list[Candidate]) -> list[Candidate]:
        best = next((c for c in candidates if self._ranked_first(c)), None)
        if best is None:
            return candidates
        fused = sorted(candidates, key=lambda c: (-c.fused_score, c.chunk.chunk_id))
        fused_place = next(i for i, c in enumerate(fused) if c is best)
        place = next(i for i, c in enumerate(candidates) if c is best)
        best.scores[self.name] = float(min(place, fused_place) + 1)
        if place <= fused_place:
            return candidates
        others = [c for c in candidates if c is not best]
        return [*others[:fused_place], best, *others[fused_place:]]

    def _ranked_first(self, candidate: Candidate) -> bool:
        hit = candidate.hits.get(self._retriever)
        return hit is not None and hit.rank == 1
