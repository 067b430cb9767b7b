"""The search half of a question's path: access scope, retrieve, fuse, check every
candidate, rerank through the configured stages (the answer half is ``appliance.answer``)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from appliance.access.filter_compiler import MATCH_NOTHING
from appliance.access.guard import AccessGuard, AccessScope
from appliance.access.rules import Subject
from appliance.index.filters import AllOf, SearchFilter, describe
from appliance.records import Candidate
from appliance.rerank.base import RerankQuery, RerankStage
from appliance.retrieve.hybrid import HybridRetriever, RetrievalMode


@dataclass(frozen=True, slots=True)
class Question:
    """A question as it enters the question path: its words, who asks, the filter they
    asked for, the day the documents must be in force, and the request id that ties its
    audit entries (question, answer, documents opened from it) together."""

    text: str
    subject: Subject
    search_filter: SearchFilter | None = None
    in_force_on: dt.date | None = None
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass(slots=True)
class SearchResult:
    """Ranked candidates and the access scope they were found under (for the audit)."""

    candidates: list[Candidate]
    scope: AccessScope
    applied_filter: SearchFilter
    screened_out: list[str] = field(default_factory=list)
    """Chunk ids the engines returned but the enforcer denied: each one is a bug, logged."""
    question_vector: np.ndarray | None = None
    """The question's embedding, when a stage computed it (later stages reuse it)."""
    searched_as: str | None = None
    """What the engines searched for, when the question was read into other words."""

    def report(self, question: str, user: str, requested: SearchFilter | None) -> dict[str, Any]:
        """The ranking as data (``appliance search --json``, and what the web service
        sends back when it runs a search for the command): every candidate with its
        document, place, ranks and stage scores."""
        return {
            "question": question,
            "user": user,
            "filter": describe(requested),
            "policy_version": self.scope.policy_version,
            "break_glass": self.scope.grant is not None,
            "results": [
                {
                    "chunk_id": c.chunk.chunk_id,
                    "doc_id": c.chunk.doc_id,
                    "version": c.chunk.metadata.version,
                    "title": c.chunk.metadata.title,
                    "effective_from": c.chunk.metadata.effective_from.isoformat(),
                    "heading_path": list(c.chunk.heading_path),
                    "page": c.chunk.page,
                    "start": c.chunk.start,
                    "end": c.chunk.end,
                    "fused_score": c.fused_score,
                    "retrievers": {
                        n: {"rank": h.rank, "score": h.score} for n, h in c.hits.items()
                    },
                    "stage_scores": c.scores,
                    "break_glass": c.break_glass,
                    "text": c.chunk.text,
                }
                for c in self.candidates
            ],
        }


class NotRecorded(RuntimeError):
    """The audit log refused the record: no result or answer is given without one."""


class QuestionRecorder(Protocol):
    """Where every question's record goes before its result is returned (the audit log)."""

    def question(self, question: Question, result: SearchResult, mode: str) -> object: ...


class QueryPipeline:
    def __init__(
        self,
        retriever: HybridRetriever,
        guard: AccessGuard,
        stages: Sequence[RerankStage] = (),
        recorder: QuestionRecorder | None = None,
    ) -> None:
        self._retriever = retriever
        self._guard = guard
        self.stages = tuple(stages)
        """The rerank stages after fusion, in the order they run."""
        self._recorder = recorder

    @property
    def calibrated_stage(self) -> RerankStage | None:
        """The last stage whose scores are calibrated: its threshold says "not relevant"."""
        calibrated = [s for s in self.stages if s.relevance_threshold is not None]
        return calibrated[-1] if calibrated else None

    @property
    def relevance_threshold(self) -> float | None:
        """Below this calibrated score a candidate does not answer the question."""
        stage = self.calibrated_stage
        return None if stage is None else stage.relevance_threshold

    @property
    def rerank_stages(self) -> list[str]:
        """The stages after fusion, in the order they run (empty: fusion order stands)."""
        return [s.description for s in self.stages]

    def to_dict(self) -> dict[str, object]:
        """The search as data: retrievers, fusion and every stage with its settings."""
        return {**self._retriever.to_dict(), "stages": [s.to_dict() for s in self.stages]}

    def run(
        self,
        question: str,
        subject: Subject,
        top_k: int = 10,
        search_filter: SearchFilter | None = None,
        mode: RetrievalMode = "hybrid",
        rerank: bool = True,
    ) -> SearchResult:
        """``run_question`` for a question given as words and an asker (``appliance
        search``); the record gets a fresh request id."""
        return self.run_question(Question(question, subject, search_filter), top_k, mode, rerank)

    def run_question(
        self,
        question: Question,
        top_k: int = 10,
        mode: RetrievalMode = "hybrid",
        rerank: bool = True,
        search_text: str | None = None,
        shown: bool = True,
    ) -> SearchResult:
        """Candidates the asker may read, best first, each with every stage's score;
        recorded (question, filters, every candidate's scores and access) before returning.
        ``search_text`` is the question as the reader understood it (the question as
        asked is what the record names, with the searched words beside it). ``shown``:
        every candidate goes to the asker (a search); an answer shows only what it cites,
        and reports its own emergency-access use."""
        searched = search_text if search_text and search_text != question.text else None
        result = self.search(
            searched or question.text, question.subject, top_k, question.search_filter, mode,
            rerank,
        )  # fmt: skip
        result.searched_as = searched
        if shown:
            self._guard.report_break_glass_use(result.scope, result.candidates, question.request_id)
        if self._recorder is not None:
            try:
                self._recorder.question(question, result, mode)
            except Exception as error:
                raise NotRecorded(
                    f"the question could not be audited, so no result is given: {error}"
                ) from error
        return result

    def search(
        self,
        question: str,
        subject: Subject,
        top_k: int,
        search_filter: SearchFilter | None,
        mode: RetrievalMode,
        rerank: bool,
    ) -> SearchResult:
        """The search alone, unrecorded: for a caller that records what it shows itself
        (``run`` records every search it makes)."""
        self._retriever.validate_query(question)
        scope = self._guard.scope(subject, "read")
        applied = (
            scope.search_filter
            if search_filter is None
            else AllOf((scope.search_filter, search_filter))
        )
        if scope.search_filter == MATCH_NOTHING:
            return SearchResult([], scope, applied)
        stages = self.stages if rerank else ()
        # Embed once, and only when a stage uses the vector (dense search or CAGE).
        needs_vector = mode != "lexical" or any(s.needs_vector for s in stages)
        vector = self._retriever.embed_query(question.strip()) if needs_vector else None
        depth = max(top_k, 20) if stages else top_k
        found = self._retriever.retrieve(question, depth, applied, mode, vector)
        candidates = self._guard.screen(scope, found)
        screened_out = sorted(
            {c.chunk.chunk_id for c in found} - {c.chunk.chunk_id for c in candidates}
        )
        query = RerankQuery(question, vector)
        for stage in stages:
            candidates = stage.rerank(query, candidates)
        return SearchResult(candidates[:top_k], scope, applied, screened_out, vector)


def pipeline_hash(description: dict[str, object]) -> str:
    """A short fingerprint of a pipeline description: two records with the same hash
    were ranked and gated by the same settings."""
    canonical = json.dumps(description, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
