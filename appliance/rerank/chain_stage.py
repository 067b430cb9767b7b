"""The title-and-entity chain in the query path: the top candidates reordered so that a
passage another strong passage leads to (by naming its document's title, or an entity
the question does not name) comes up behind it.

Links run between documents only: chunks of one document all carry its title and its
names, and the chain is there to bring in the other document a question needs. The
score each candidate brings is the previous stage's (CAGE, else the cross-encoder, else
the fused score), so the chain only reorders what those ranked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from appliance.records import Candidate
from appliance.rerank.base import RerankQuery
from appliance.rerank.chain import chain_selection, entity_links, title_links

_PREVIOUS = ("cage", "cross_encoder")


class ChainStage:
    name = "chain"
    needs_vector = False
    relevance_threshold = None

    def __init__(self, candidates: int = 10, weight: float = 0.55) -> None:
        self._candidates = candidates
        self._weight = weight

    @property
    def description(self) -> str:
        return f"title-and-entity chain (top {self._candidates}, weight {self._weight})"

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "candidates": self._candidates,
            "weight": self._weight,
            "links": ["document title named in another document's passage", "named entity"],
        }

    def rerank(self, query: RerankQuery, candidates: list[Candidate]) -> list[Candidate]:
        top, rest = candidates[: self._candidates], candidates[self._candidates :]
        if len(top) < 2:
            return candidates
        scores = np.array([_previous_score(c) for c in top], dtype=np.float32)
        texts = [c.chunk.index_text for c in top]
        titled = [_Titled(c.chunk.metadata.title, c.chunk.text) for c in top]
        links = np.maximum(entity_links(query.text, texts), title_links(titled))
        documents = np.array([c.chunk.doc_id for c in top])
        links[documents[:, None] == documents[None, :]] = 0.0
        order = chain_selection(scores, links, self._weight)
        for candidate, position in zip(top, order, strict=True):
            candidate.scores[self.name] = float(position)
        return sorted(top, key=lambda c: -c.scores[self.name]) + rest


def _previous_score(candidate: Candidate) -> float:
    for stage in _PREVIOUS:
        if stage in candidate.scores:
            return candidate.scores[stage]
    return candidate.fused_score


@dataclass(frozen=True, slots=True)
class _Titled:
    title: str
    text: str
