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
from appliance.index.filters import SearchFilter, in_force_day, without_dates
from appliance.nlp.embedder import Embedder
from appliance.query import NotRecorded, QueryPipeline
from appliance.records import AnswerSentence, Candidate, Chunk, Citation
from appliance.understand import QuestionReader, UnderstoodQuestion, qualifiers_of
from appliance.verify.answerability import (
    NOT_IN_FORCE_MARGIN,
    dose_refusal,
    in_force,
    iso_day,
    listed,
    lost_to_scope,
    not_in_force_reason,
    unanswered_parts,
)
from appliance.verify.base import Entailment, EntailmentVerifier
from appliance.verify.coverage import question_coverage, words_for
from appliance.verify.scope import ScopeChecker, describe_scope
from appliance.verify.spans import LocatedQuote, locate, normalise
from audit.log import AuditLog

NOT_ANSWERED = "The hospital documents available to you do not answer this question."
NOT_RELEVANT = "no passage of the documents available to you is about this question"
NOTHING_VERIFIED = "no sentence of the documents found could be verified to say this"
NOT_AN_ANSWER = "what the documents found say does not answer this question"


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
    """A passage the page offers with a refusal: where it is, so that it can be opened."""

    chunk_id: str
    doc_id: str
    title: str
    heading_path: tuple[str, ...]
    version: str
    effective_from: str
    start: int
    end: int


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
    scope: str | None = None
    """Whom the cited passages cover, shown above the answer ("For adults")."""
    read_as: str | None = None
    """The question as the appliance read it, when that differs from what was asked."""
    unanswered_parts: tuple[str, ...] = ()
    """Parts of a question that asks several things which no kept sentence answers."""

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
        reader: QuestionReader | None = None,
        scope: ScopeChecker | None = None,
        relevance_floor: float = 0.42,
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
        self._reader = reader
        self._scope = scope
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
        """The path of DESIGN.md from "understand the question" to "audit": each step
        may refuse, and every refusal says why in a clinician's words."""
        request_id = request_id or str(uuid.uuid4())
        understood = self._understand(question)
        result = self._query.run(
            question, subject, self._context_passages, search_filter,
            request_id=request_id, search_text=understood.search_text,
        )  # fmt: skip
        candidates = result.candidates
        # The question's readings: what it asks, what is searched, and each part; a
        # passage is as relevant as it is to the reading it answers best.
        question_vectors = self._reading_vectors(understood, result.question_vector)
        signal, relevance, floor = self._relevance(question_vectors, candidates)
        record: dict[str, object] = {
            "query": question,
            "question_request": request_id,
            "understood": understood.to_record(),
            "relevance": {
                c.chunk.chunk_id: round(relevance[i], 4) for i, c in enumerate(candidates)
            },
            "relevance_signal": signal,
            "relevance_floor": floor,
            "generator": self._generator.name,
            "verifier": {"name": self._verifier.name, "kind": self._verifier.kind},
            "policy_version": result.scope.policy_version,
        }
        closest = tuple(_source(c.chunk) for c in candidates[:3])

        def finish(
            sentences: _Sentences,
            refusal: str | None,
            decision: Decision | None = None,
            unanswered: tuple[str, ...] = (),
            scope: str | None = None,
        ) -> Answer:
            return self._finish(
                understood, request_id, subject, record, sentences, refusal, closest,
                decision, unanswered, scope,
            )  # fmt: skip

        relevant = [c for c, r in zip(candidates, relevance, strict=True) if r >= floor]
        elsewhere = self._not_in_force(
            understood, subject, search_filter, question_vectors, max(relevance, default=0.0)
        )
        if elsewhere is not None:
            record["not_in_force"] = {
                "chunk_id": elsewhere.chunk_id, "doc_id": elsewhere.doc_id,
                "effective_from": elsewhere.metadata.effective_from.isoformat(),
                "effective_to": iso_day(elsewhere.metadata.effective_to),
            }  # fmt: skip
            return finish((), not_in_force_reason(elsewhere, in_force_day(search_filter)))
        if not relevant:
            return finish((), NOT_RELEVANT)
        applicable, out_of_scope = self._applicable(understood, candidates)
        record["scope_conflicts"] = out_of_scope
        if not any(c in applicable for c in relevant):
            reasons = "; ".join(dict.fromkeys(out_of_scope.values()))
            return finish((), f"the documents found do not apply to what is asked: {reasons}")
        candidates = applicable
        coverage = question_coverage(
            understood.topic,
            [_passage_text(c.chunk) for c in candidates],
            self._lexical,
            result.applied_filter,
            understood.asking,
        )
        record["question_coverage"] = {
            "coverage": round(coverage.coverage, 4),
            "minimum": self.min_question_coverage,
            "missing": list(coverage.missing),
            "missing_names": list(coverage.missing_names),
        }
        if coverage.unknown_identifiers:
            unknown = list(coverage.unknown_identifiers)
            return finish((), f"the documents available to you do not mention {listed(unknown)}")
        # What the question is about, held only by passages outside its scope.
        removed = [
            _passage_text(c.chunk) for c in result.candidates if c.chunk.chunk_id in out_of_scope
        ]
        lost = lost_to_scope(understood.focus, coverage, removed, self._lexical)
        if lost:
            reasons = "; ".join(dict.fromkeys(out_of_scope.values()))
            return finish(
                (), f"the documents found do not cover {listed(lost)} for this patient "
                f"({reasons})",
            )  # fmt: skip
        if coverage.coverage < self.min_question_coverage:
            absent = words_for(understood.topic, coverage.missing, self._lexical)[:4]
            return finish((), f"the documents found do not cover {listed(absent)}")

        context = [ContextPassage(n, c.chunk) for n, c in enumerate(candidates, start=1)]
        try:
            generated = self._generator.generate(understood.search_text, context)
        except GeneratorUnavailable as error:
            # Not a refusal (the documents may well answer): an error the user sees, and
            # a record that says so.
            record["error"] = str(error)
            self._finish(understood, request_id, subject, record, (), "generator unavailable", ())
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
                if found is not None and self._claim_applies(
                    understood, in_context[citation.chunk_id], sentence.text, checks[-1]
                ):
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
            scope_reasons = [str(c["scope"]) for c in checks if "scope" in c]
            if scope_reasons:
                reasons = "; ".join(dict.fromkeys(scope_reasons))
                return finish((), f"the passages found do not apply to what is asked: {reasons}")
            return finish((), NOTHING_VERIFIED)
        claim_texts = [under_heading(s.text, in_context[s.citations[0].chunk_id]) for s in claims]
        claim_vectors = self._embedder.embed(claim_texts)
        if float(np.max(claim_vectors @ question_vectors.T)) < self.relevance_floor:
            return finish((), NOT_AN_ANSWER)
        no_dose = dose_refusal(
            understood.asking or understood.focus,
            [(s.text, t) for s, t in zip(claims, claim_texts, strict=True)],
            coverage.names,
        )
        if no_dose:
            return finish((), no_dose)
        unanswered = unanswered_parts(
            understood.parts,
            # each claim as a reader meets it: under its document's title and headings
            [_under_title(s.text, in_context[s.citations[0].chunk_id]) for s in claims],
            self._embedder, self._lexical, self.relevance_floor,
        )  # fmt: skip
        final = tuple(
            (s, tuple(_cited_span(in_context[c.chunk_id], located[c]) for c in s.citations))
            for s in recheck.sentences
        )
        decision = generated.decision if asks_yes_or_no(question) else None
        scope = describe_scope([in_context[s.citations[0].chunk_id] for s in claims])
        return finish(final, None, decision, unanswered, scope)

    def _not_in_force(
        self,
        understood: UnderstoodQuestion,
        subject: Subject,
        search_filter: SearchFilter | None,
        question_vectors: np.ndarray,
        best_in_force: float,
    ) -> Chunk | None:
        """A passage of a document not in force on the day asked (not yet, or no longer)
        that answers the question clearly better than anything in force: the reason to
        refuse is then that document's dates, not a made-up answer from another one."""
        if in_force_day(search_filter) is None:
            return None
        undated = self._query.search(
            understood.search_text, subject, self._context_passages,
            without_dates(search_filter), "hybrid", rerank=False,
        ).candidates  # fmt: skip
        stored = self._vectors.vectors([c.chunk.chunk_id for c in undated])
        best: tuple[float, Chunk] | None = None
        for candidate in undated:
            chunk = candidate.chunk
            if chunk.chunk_id not in stored or in_force(chunk, in_force_day(search_filter)):
                continue
            score = float(np.max(question_vectors @ stored[chunk.chunk_id]))
            if best is None or score > best[0]:
                best = (score, chunk)
        if best is None or best[0] < self.relevance_floor:
            return None
        return best[1] if best[0] - best_in_force >= NOT_IN_FORCE_MARGIN else None

    def _reading_vectors(
        self, understood: UnderstoodQuestion, searched: np.ndarray | None
    ) -> np.ndarray:
        """One vector per reading of the question (what it asks, what was searched, each
        part); the search's own vector is reused when the search computed one."""
        readings = list(
            dict.fromkeys([understood.search_text, understood.focus, *understood.parts])
        )
        if searched is None:
            return self._embedder.embed(readings)
        rest = self._embedder.embed(readings[1:])
        return np.vstack([searched[None, :], rest]) if len(rest) else searched[None, :]

    def _understand(self, question: str) -> UnderstoodQuestion:
        if self._reader is not None:
            return self._reader.read(question)
        text = question.strip()
        return UnderstoodQuestion(
            question, text, text, text, (text,), qualifiers_of(text), asking=text, topic=text
        )

    def _applicable(
        self, understood: UnderstoodQuestion, candidates: list[Candidate]
    ) -> tuple[list[Candidate], dict[str, str]]:
        """The candidates whose document and section fit the question's qualifiers, and
        why each other one does not."""
        if self._scope is None:
            return candidates, {}
        kept, conflicts = self._scope.screen(understood.qualifiers, [c.chunk for c in candidates])
        kept_ids = {chunk.chunk_id for chunk in kept}
        return [c for c in candidates if c.chunk.chunk_id in kept_ids], conflicts

    def _claim_applies(
        self, understood: UnderstoodQuestion, chunk: Chunk, claim: str, check: dict[str, object]
    ) -> bool:
        if self._scope is None:
            return True
        why = self._scope.claim_conflict(
            understood.qualifiers, understood.search_text, chunk, claim
        )
        if why is not None:
            check.update(verdict="out of scope", scope=why)
        return why is None

    def _relevance(
        self, question_vectors: np.ndarray, candidates: list[Candidate]
    ) -> tuple[str, list[float], float]:
        """How well each candidate answers the question, and the floor below which none
        does: the installed cross-encoder's calibrated probability when there is one,
        else the cosine of the question and the stored chunk vector."""
        threshold = self._query.relevance_threshold
        if threshold is not None and all("cross_encoder" in c.scores for c in candidates):
            return "cross-encoder", [c.scores["cross_encoder"] for c in candidates], threshold
        stored = self._vectors.vectors([c.chunk.chunk_id for c in candidates])
        cosines = [
            float(np.max(question_vectors @ stored[c.chunk.chunk_id]))
            if c.chunk.chunk_id in stored
            else 0.0
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
        understood: UnderstoodQuestion,
        request_id: str,
        subject: Subject,
        record: dict[str, object],
        sentences: _Sentences,
        refusal: str | None,
        closest: tuple[Source, ...],
        decision: Decision | None = None,
        unanswered: tuple[str, ...] = (),
        scope: str | None = None,
    ) -> Answer:
        record["decision"] = decision
        record["scope"] = scope
        record["unanswered_parts"] = list(unanswered)
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
        read_as = understood.read_as if understood.read_as != understood.asked.strip() else None
        return Answer(
            understood.asked, request_id, sentences, refusal, closest if refusal else (),
            self._generator.name, self._verifier.name, receipt.position,
            decision, scope, read_as, unanswered,
        )  # fmt: skip


def _passage_text(chunk: Chunk) -> str:
    """A chunk as a reader sees it: its text under its title and headings."""
    return _under_title(chunk.text, chunk)


def _under_title(text: str, chunk: Chunk) -> str:
    return " ".join((chunk.metadata.title, *chunk.heading_path, text))


def _source(chunk: Chunk) -> Source:
    meta = chunk.metadata
    return Source(
        chunk.chunk_id, chunk.doc_id, meta.title, chunk.heading_path, meta.version,
        meta.effective_from.isoformat(), chunk.start, chunk.end,
    )  # fmt: skip


def _cited_span(chunk: Chunk, located: LocatedQuote) -> CitedSpan:
    meta = chunk.metadata
    return CitedSpan(
        chunk.chunk_id, chunk.doc_id, meta.title, meta.version, meta.effective_from.isoformat(),
        meta.superseded_by, chunk.heading_path, chunk.page, located.start, located.end,
        located.text,
    )  # fmt: skip
