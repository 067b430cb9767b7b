"""The whole path of a question: search (access-checked, reranked), refuse when nothing
is relevant, generate, verify every citation, re-check access at answer time, refuse
when no claim survives, and write the whole record to the audit log before returning.
If the record cannot be written, the asker gets an error, never an unaudited answer.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import asdict, dataclass

import numpy as np

from appliance.access.guard import AccessGuard
from appliance.access.rules import Subject
from appliance.generate.base import (
    ContextPassage,
    Decision,
    Generator,
    asks_yes_or_no,
    under_heading,
)
from appliance.generate.openai_compatible import GeneratorUnavailable
from appliance.index.base import LexicalIndex, VectorIndex
from appliance.index.filters import SearchFilter
from appliance.nlp.embedder import Embedder
from appliance.query import NotRecorded, QueryPipeline
from appliance.records import AnswerSentence, Candidate, Chunk, Citation
from appliance.verify.base import Entailment, EntailmentVerifier
from appliance.verify.coverage import question_coverage, words_for
from appliance.verify.spans import LocatedQuote, locate, normalise
from audit.log import AuditLog

NOT_ANSWERED = "The hospital documents available to you do not answer this question."


@dataclass(frozen=True, slots=True)
class CitedSpan:
    """What the clinician's page shows for one citation."""

    chunk_id: str
    doc_id: str
    title: str
    version: str
    effective_from: str
    superseded_by: str | None
    heading_path: tuple[str, ...]
    page: int | None
    start: int
    end: int
    quote: str


@dataclass(frozen=True, slots=True)
class Source:
    chunk_id: str
    doc_id: str
    title: str
    heading_path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    request_id: str
    sentences: tuple[tuple[AnswerSentence, tuple[CitedSpan, ...]], ...]
    refusal: str | None
    """Why the documents do not answer (None for an answer)."""
    closest_sources: tuple[Source, ...]
    generator: str
    verifier: str
    audit_entry: int
    decision: Decision | None = None
    """The short answer to a yes/no question, as the generator read the sentences that
    survived verification; None for any other question and for a refusal."""

    @property
    def refused(self) -> bool:
        return self.refusal is not None


_Sentences = tuple[tuple[AnswerSentence, tuple[CitedSpan, ...]], ...]


class AnswerPipeline:
    def __init__(
        self,
        query: QueryPipeline,
        guard: AccessGuard,
        generator: Generator,
        verifier: EntailmentVerifier,
        embedder: Embedder,
        vectors: VectorIndex,
        lexical: LexicalIndex,
        audit: AuditLog,
        *,
        relevance_floor: float = 0.45,
        min_question_coverage: float = 0.5,
        context_passages: int = 5,
    ) -> None:
        self._query = query
        self._guard = guard
        self._generator = generator
        self._verifier = verifier
        self._embedder = embedder
        self._vectors = vectors
        self._lexical = lexical
        self._audit = audit
        self.relevance_floor = relevance_floor
        self.min_question_coverage = min_question_coverage
        self._context_passages = context_passages

    def ask(
        self,
        question: str,
        subject: Subject,
        search_filter: SearchFilter | None = None,
        in_force_on: dt.date | None = None,
        request_id: str | None = None,
    ) -> Answer:
        request_id = request_id or str(uuid.uuid4())
        result = self._query.run(
            question, subject, self._context_passages, search_filter, request_id=request_id
        )
        candidates = result.candidates
        question_vector = result.question_vector
        if question_vector is None:  # a lexical-only search computed none
            question_vector = self._embedder.embed_query(question.strip())
        signal, relevance, floor = self._relevance(question_vector, candidates)
        record: dict[str, object] = {
            "query": question,
            "question_request": request_id,
            "relevance": {
                c.chunk.chunk_id: round(relevance[i], 4) for i, c in enumerate(candidates)
            },
            "relevance_signal": signal,
            "relevance_floor": floor,
            "generator": self._generator.name,
            "verifier": {"name": self._verifier.name, "kind": self._verifier.kind},
            "policy_version": result.scope.policy_version,
        }
        closest = tuple(
            Source(c.chunk.chunk_id, c.chunk.doc_id, c.chunk.metadata.title, c.chunk.heading_path)
            for c in candidates[:3]
        )

        def finish(
            sentences: _Sentences, refusal: str | None, decision: Decision | None = None
        ) -> Answer:
            return self._finish(
                question, request_id, subject, record, sentences, refusal, closest, decision
            )

        if not candidates or max(relevance) < floor:
            return finish((), "no relevant passage")
        coverage = question_coverage(
            question,
            [_passage_text(c.chunk) for c in candidates],
            self._lexical,
            result.applied_filter,
        )
        record["question_coverage"] = {
            "coverage": round(coverage.coverage, 4),
            "minimum": self.min_question_coverage,
            "missing": list(coverage.missing),
        }
        if coverage.coverage < self.min_question_coverage:
            absent = ", ".join(words_for(question, coverage.missing, self._lexical)[:4])
            return finish((), f"the documents you may read do not mention: {absent}")

        context = [ContextPassage(n, c.chunk) for n, c in enumerate(candidates, start=1)]
        try:
            generated = self._generator.generate(question, context)
        except GeneratorUnavailable as error:
            # Not a refusal (the documents may well answer): an error the user sees, and
            # a record that says so.
            record["error"] = str(error)
            self._finish(question, request_id, subject, record, (), "generator unavailable", ())
            raise
        record["raw_output"] = generated.raw
        record["generator_not_found"] = generated.not_found
        record["generator_decision"] = generated.decision
        in_context = {p.chunk.chunk_id: p.chunk for p in context}
        checks: list[dict[str, object]] = []
        located: dict[Citation, LocatedQuote] = {}  # each supported citation, found once
        supported: list[AnswerSentence] = []
        for sentence in generated.sentences:
            for citation in sentence.citations:
                found = self._supported_span(citation, sentence, in_context, checks)
                if found is not None:
                    located[citation] = found
            kept = [c for c in sentence.citations if c in located]
            if sentence.kind == "framing" or kept:
                supported.append(AnswerSentence(sentence.text, sentence.kind, tuple(kept)))
        record["checks"] = checks
        recheck = self._guard.recheck_answer(subject, supported, in_force_on)
        record["answer_time_drops"] = [
            {"chunk_id": d.citation.chunk_id, "reason": d.reason} for d in recheck.dropped_citations
        ]
        claims = [s for s in recheck.sentences if s.kind == "claim"]
        if not claims:
            return finish((), "no claim survived verification")
        claim_vectors = self._embedder.embed(
            [under_heading(s.text, in_context[s.citations[0].chunk_id]) for s in claims]
        )
        if float(np.max(claim_vectors @ question_vector)) < self.relevance_floor:
            return finish((), "what is left does not answer the question")
        final = tuple(
            (s, tuple(_cited_span(in_context[c.chunk_id], located[c]) for c in s.citations))
            for s in recheck.sentences
        )
        return finish(final, None, generated.decision if asks_yes_or_no(question) else None)

    def _relevance(
        self, question_vector: np.ndarray, candidates: list[Candidate]
    ) -> tuple[str, list[float], float]:
        """How well each candidate answers the question, and the floor below which none
        does: the installed cross-encoder's calibrated probability when there is one,
        else the cosine of the question and the stored chunk vector."""
        threshold = self._query.relevance_threshold
        if threshold is not None and all("cross_encoder" in c.scores for c in candidates):
            return "cross-encoder", [c.scores["cross_encoder"] for c in candidates], threshold
        stored = self._vectors.vectors([c.chunk.chunk_id for c in candidates])
        cosines = [
            float(stored[c.chunk.chunk_id] @ question_vector) if c.chunk.chunk_id in stored else 0.0
            for c in candidates
        ]
        return "cosine", cosines, self.relevance_floor

    def _supported_span(
        self,
        citation: Citation,
        sentence: AnswerSentence,
        in_context: dict[str, Chunk],
        checks: list[dict[str, object]],
    ) -> LocatedQuote | None:
        """Where the citation's quote stands, when it is in a context chunk and entails the
        sentence; None otherwise. Every check is recorded for the audit."""
        chunk = in_context.get(citation.chunk_id)
        check: dict[str, object] = {"sentence": sentence.text, "chunk_id": citation.chunk_id}
        checks.append(check)
        if chunk is None:
            check["verdict"] = "cited chunk was not in the context"
            return None
        located = locate(citation.quote, chunk)
        if located is None:
            check["verdict"] = "quote not found in the cited chunk"
            return None
        if normalise(located.text) == normalise(sentence.text):
            # A sentence that is its own quote, verbatim, is supported by definition.
            entailment = Entailment(1.0, True, ("the sentence is the quoted span, verbatim",))
        else:
            entailment = self._verifier.check(located.text, sentence.text)
        check.update(
            verdict="supported" if entailment.entailed else "not entailed",
            score=round(entailment.score, 4),
            reasons=list(entailment.reasons),
        )
        return located if entailment.entailed else None

    def _finish(
        self,
        question: str,
        request_id: str,
        subject: Subject,
        record: dict[str, object],
        sentences: _Sentences,
        refusal: str | None,
        closest: tuple[Source, ...],
        decision: Decision | None = None,
    ) -> Answer:
        record["decision"] = decision
        record["sentences"] = [
            {"text": s.text, "kind": s.kind, "citations": [asdict(c) for c in spans]}
            for s, spans in sentences
        ]
        record["refusal"] = refusal
        record["closest_sources"] = [asdict(s) for s in closest] if refusal else []
        try:
            receipt = self._audit.append(
                "answer", subject.user_id, list(subject.roles), record, request_id
            )
        except Exception as error:
            raise NotRecorded(
                f"the answer could not be written to the audit log: {error}"
            ) from error
        return Answer(
            question, request_id, sentences, refusal, closest if refusal else (),
            self._generator.name, self._verifier.name, receipt.position,
            decision,
        )  # fmt: skip


def _passage_text(chunk: Chunk) -> str:
    """A chunk as a reader sees it: its text under its title and headings."""
    return " ".join((chunk.metadata.title, *chunk.heading_path, chunk.text))


def _cited_span(chunk: Chunk, located: LocatedQuote) -> CitedSpan:
    meta = chunk.metadata
    return CitedSpan(
        chunk.chunk_id, chunk.doc_id, meta.title, meta.version, meta.effective_from.isoformat(),
        meta.superseded_by, chunk.heading_path, chunk.page, located.start, located.end,
        located.text,
    )  # fmt: skip
