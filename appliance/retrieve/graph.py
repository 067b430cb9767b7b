"""The knowledge graph as the third retriever of the fusion. The question's entities are
read with the same finder that filled the graph (abbreviations as the readable
documents define them); rules pick the reviewed templates that fit the question's form,
and the chunks behind the matched relations come back as one ranking.

Rules, not free text: "without" / "do not" asks for negation, "avoid" / "must not be
given" for contraindications, "supersede" / "replace" for the newer version, "after X" /
"before X" for the step a numbered procedure puts next to X, "is X for Y" / "can X be
used in Y" for the scope of passages, two entities for what one states about the other
and for the passages that name them all. A passage that merely names one entity of the
question is what BM25 finds anyway, so the graph stays silent then, unless the question
asks what a passage states of it (a contraindication, the scope of a protocol, the step
that follows). A template that matches nothing adds nothing, and the graph hands the
fusion a few chunks (``graph.candidates``), not a long tail.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from appliance.index.base import GraphEvidence, GraphIndex, ScoredChunkId
from appliance.index.filters import SearchFilter
from appliance.records import Mention

_NEGATION = re.compile(
    r"\b(without|do(?:es)?\s+not|don't|doesn't|not\s+(?:require|need|mention|include|cover))\b",
    re.I,
)
_APPLICABILITY = re.compile(
    r"^\s*(is|are|can|could|should|may|does|do)\b.*\b(for|in|with|used|given|suitable|apply)\b",
    re.I,
)
_CONTRAINDICATION = re.compile(
    r"\b(avoid\w*|contraindicat\w*|must\s+not|mustn't|should\s+not|shouldn't|"
    r"(?:not|never)\s+(?:be\s+)?(?:given|used|prescribed)|unsafe)\b",
    re.I,
)
_STEP_AFTER = re.compile(r"\b(after|next|then|follow(?:s|ed|ing)?)\b", re.I)
_STEP_BEFORE = re.compile(r"\b(before|prior\s+to|preced(?:e|es|ed|ing))\b", re.I)
_SUPERSESSION = re.compile(
    r"\b(supersed\w*|replac\w*|newer|latest|previous|old(?:er)? version|current version)\b", re.I
)


class QuestionEntities(Protocol):
    def question_keys(self, question: str, abbreviations: dict[str, str]) -> list[Mention]: ...


class GraphRetriever:
    name = "graph"

    def __init__(self, graph: GraphIndex, entities: QuestionEntities, candidates: int = 30) -> None:
        self._graph = graph
        self._entities = entities
        self._candidates = candidates

    def search(
        self, query: str, limit: int, search_filter: SearchFilter | None = None
    ) -> list[ScoredChunkId]:
        """The chunks the graph knows about the question's entities, best first."""
        limit = min(limit, self._candidates)
        found = self.evidence(query, limit, search_filter)
        return [ScoredChunkId(e.chunk_id, e.score) for e in found[:limit]]

    def evidence(
        self, query: str, limit: int, search_filter: SearchFilter | None = None
    ) -> list[GraphEvidence]:
        mentions = [  # a day in a question says when, which the access filter holds
            m
            for m in self._entities.question_keys(query, self._graph.abbreviations(search_filter))
            if m.kind != "date"
        ]
        keys = list(dict.fromkeys(m.key for m in mentions))
        if not keys:
            return []
        asked: list[tuple[str, dict[str, object]]] = []
        negation = _NEGATION.search(query)
        if negation is not None:
            present = [m.key for m in mentions if m.end <= negation.start()]
            absent = [m.key for m in mentions if m.start >= negation.end()]
            if present and absent:
                asked.append(("chunks_without", {"keys": present, "absent": absent}))
        if _CONTRAINDICATION.search(query):
            asked.append(("contraindications", {"keys": keys}))
        if _SUPERSESSION.search(query):
            asked.append(("successors", {"keys": keys}))
        for template, cue in (("steps_after", _STEP_AFTER), ("steps_before", _STEP_BEFORE)):
            step = _named_after(cue, query, mentions)
            if step:
                asked.append((template, {"keys": step}))
        if len(keys) > 1:
            asked.append(("relation_between", {"keys": keys}))
        if negation is not None or _APPLICABILITY.search(query):
            asked.append(("scope_match", {"keys": keys}))
        rankings = [
            self._graph.find(name, {**values, "limit": limit}, search_filter)
            for name, values in asked
        ]
        if len(keys) > 1:  # the neighbourhood: passages that name every entity asked about
            found = self._graph.find("entity_chunks", {"keys": keys, "limit": limit}, search_filter)
            rankings.append([e for e in found if e.score >= len(keys)])
        return _in_turn(rankings)


def _named_after(cue: re.Pattern[str], query: str, mentions: Sequence[Mention]) -> list[str]:
    """The entities the question names after its first ``cue`` ("after oxytocin", "what
    comes before the blood cultures"): the step whose neighbour in a procedure it asks
    for. Nothing when no entity follows the cue ("an hour after")."""
    found = cue.search(query)
    if found is None:
        return []
    return list(dict.fromkeys(m.key for m in mentions if m.start >= found.end()))


def _in_turn(rankings: Sequence[list[GraphEvidence]]) -> list[GraphEvidence]:
    """The more specific templates' chunks first, each chunk once, scored by its place."""
    seen: dict[str, GraphEvidence] = {}
    for ranking in rankings:
        for e in ranking:
            seen.setdefault(e.chunk_id, e)
    ordered = list(seen.values())
    return [
        GraphEvidence(e.chunk_id, 1.0 / (rank + 1), e.template, e.evidence)
        for rank, e in enumerate(ordered)
    ]
