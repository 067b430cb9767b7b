"""The cross-encoder in the query path: rescored and reordered top candidates."""

from __future__ import annotations

from appliance.records import Candidate
from appliance.rerank.cross_encoder import CrossEncoderReranker


class CrossEncoderStage:
    name = "cross_encoder"

    def __init__(self, reranker: CrossEncoderReranker, candidates: int = 20) -> None:
        self._reranker = reranker
        self._candidates = candidates

    @property
    def threshold(self) -> float | None:
        """The calibrated probability under which a candidate is not relevant."""
        return self._reranker.threshold

    @property
    def description(self) -> str:
        """What this stage does, for reports that must say how their figures were made."""
        threshold = "" if self.threshold is None else f", threshold {self.threshold:.2f}"
        return f"cross-encoder (top {self._candidates}{threshold})"

    def rerank(self, question: str, candidates: list[Candidate]) -> list[Candidate]:
        top, rest = candidates[: self._candidates], candidates[self._candidates :]
        if not top:
            return candidates
        logits = self._reranker.scores(question, [c.chunk.index_text for c in top])
        for candidate, probability in zip(top, self._reranker.probability(logits), strict=True):
            candidate.scores[self.name] = float(probability)
        return sorted(top, key=lambda c: -c.scores[self.name]) + rest
