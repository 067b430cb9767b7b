"""What the knowledge graph says a document excludes, as the question names it.

The graph reads a document's exclusions once, at ingestion ("Do not use a VRIII for
diabetic ketoacidosis" -> EXCLUDES diabetic ketoacidosis), and reads a question with the
same entity finder and the documents' own abbreviations, so "in DKA" names the excluded
condition where the words of the exclusion are not in the question at all. The scope
checker asks it for every claim it admits.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from appliance.index.base import GraphIndex
from appliance.records import Chunk
from appliance.retrieve.graph import QuestionEntities


class GraphExclusions:
    def __init__(
        self,
        graph: GraphIndex,
        entities: QuestionEntities,
        chunk_ids_of: Callable[[str], set[str]],
    ) -> None:
        self._graph = graph
        self._entities = entities
        self._chunk_ids_of = chunk_ids_of
        self._question_keys = lru_cache(maxsize=256)(self._read_question)
        self._excluded = lru_cache(maxsize=1024)(self._read_exclusions)

    def named_by(self, question: str, chunk: Chunk) -> list[str]:
        """The entities the question names that the chunk's document excludes."""
        chunk_ids = frozenset(self._chunk_ids_of(chunk.doc_id))  # new text, new ids
        return sorted(self._question_keys(question) & self._excluded(chunk_ids))

    def _read_question(self, question: str) -> frozenset[str]:
        mentions = self._entities.question_keys(question, self._graph.abbreviations())
        return frozenset(m.key for m in mentions)

    def _read_exclusions(self, chunk_ids: frozenset[str]) -> frozenset[str]:
        scopes = self._graph.scopes_of(sorted(chunk_ids))
        return frozenset(
            s.target for found in scopes.values() for s in found if s.kind == "EXCLUDES"
        )
