"""The cross-encoder in the query path: rescored and reordered top candidates."""

from __future__ import annotations

from appliance.records import Candidate
from appliance.rerank.base import RerankQuery
from appliance.rerank.cross_encoder import CrossEncoderReranker


class CrossEncoderStage:
    """The top ``candidates`` rescored by the cross-encoder's calibrated probability."""

    name = "cross_encoder"
    needs_vector = False

    def __init__(
        self, reranker: CrossEncoderReranker, candidates: int = 20, model_name: str = ""
    ) -> None:
        self._reranker = reranker
        self._candidates = candidates
        self._model_name = model_name

    @property
    def relevance_threshold(self) -> float | None:
        """The calibrated probability under which a candidate is not relevant."""
        return self._reranker.threshold

    @property
    def description(self) -> str:
        """What this stage does, for reports that must say how their figures were made."""
        threshold = self.relevance_threshold
        shown = "" if threshold is None else f", threshold {threshold:.2f}"
        return f"cross-encoder (top {self._candidates}{shown})"

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "model": self._model_name,
            "candidates": self._candidates,
            "threshold": self.relevance_threshold,
        }

    def rerank(self, query: RerankQuery, candidates: list[Candidate]) -> list[Candidate]:
        top, rest = candidates[: self._candidates], candidates[self._candidates :]
        if not top:
            return candidates
        logits = self._reranker.scores(query.text, [c.chunk.index_text for c in top])
        for candidate, probability in zip(top, self._reranker.probability(logits), strict=True):
            candidate.scores[self.name] = float(probability)
        return sorted(top, key=lambda c: -c.scores[self.name]) + rest
