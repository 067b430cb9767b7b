"""The path of a question, as DESIGN.md draws it: understand -> search -> gates ->
generate -> verify -> recheck access -> gates -> record.

Each step may refuse, and every refusal says why in a clinician's words. The whole
record goes to the audit log before the answer is returned; if it cannot be written,
the asker gets an error, never an unaudited answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np

from appliance.access.guard import AccessGuard
from appliance.access.rules import Subject
from appliance.answer.gates import Admitted, AnswerGates, Relevance, under_title
from appliance.answer.records import Answer
from appliance.generate.base import (
    ContextPassage,
    GeneratedAnswer,
    Generator,
    GeneratorUnavailable,
    ShortAnswer,
    asks_yes_or_no,
)
from appliance.index.base import StoreUnavailable
from appliance.index.filters import SearchFilter
from appliance.query import NotRecorded, QueryPipeline, Question, SearchResult
from appliance.records import (
    AnswerSentence,
    Chunk,
    Citation,
    CitedSpan,
    Conflict,
    Refusal,
    Source,
    VerifiedSentence,
)
from appliance.understand import QuestionReader, UnderstoodQuestion, qualifiers_of
from appliance.verify.answerability import unanswered_parts
from appliance.verify.base import EntailmentVerifier
from appliance.verify.citations import CitationChecker
from appliance.verify.conflicts import ConflictFinder
from appliance.verify.scope import describe_scope
from appliance.verify.spans import LocatedQuote
from audit.log import Receipt


class AnswerRecorder(Protocol):
    """Writes the answer's audit record (``AuditTrail.answer``)."""

    def answer(self, subject: Subject, answer: Answer, trace: dict[str, object]) -> Receipt: ...


class AnswerPipeline:
    def __init__(
        self,
        query: QueryPipeline,
        guard: AccessGuard,
        generator: Generator,
        verifier: EntailmentVerifier,
        gates: AnswerGates,
        recorder: AnswerRecorder,
        *,
        reader: QuestionReader | None = None,
        citations: CitationChecker | None = None,
        conflicts: ConflictFinder | None = None,
    ) -> None:
        self._query = query
        self._guard = guard
        self._generator = generator
        self._verifier = verifier
        self._gates = gates
        self._recorder = recorder
        self._reader = reader
        self._citations = citations or CitationChecker(verifier)
        self._conflicts = conflicts

    def ask(
        self,
        question: str,
        subject: Subject,
        search_filter: SearchFilter | None = None,
        in_force_on: dt.date | None = None,
        request_id: str | None = None,
        follows: str | None = None,
    ) -> Answer:
        """``follows``: the conversation's previous question as it was understood, for
        a follow-up that does not name its own subject."""
        asked = Question(
            question, subject, search_filter, in_force_on, request_id or str(uuid.uuid4())
        )
        laps = Laps()
        with laps("understand"):
            understood = self._understand(question, follows)
        try:
            with laps("search"):
                found, question_vectors, relevance = self._search(asked, understood)
        except StoreUnavailable as error:
            self._record_store_failure(asked, understood, error)
            raise
        trace = self._trace(asked, understood, found, relevance)
        trace["timings"] = laps.seconds
        answer = _Answering(
            self._recorder, self._generator.name, self._verifier.name, asked, understood,
            trace, closest=tuple(_source(c.chunk) for c in found.candidates[:3]),
            shown=lambda shown: self._report_break_glass_use(found, shown),
        )  # fmt: skip

        with laps("gates"):
            admitted = self._gates.before_generation(
                asked, understood, found, question_vectors, relevance, trace
            )
        if isinstance(admitted, Refusal):
            return answer.refused(admitted)
        context = [ContextPassage(n, c.chunk) for n, c in enumerate(admitted.candidates, 1)]
        in_context = {p.chunk.chunk_id: p.chunk for p in context}
        with laps("generate"):
            generated = self._generate(understood, context, answer)
        with laps("verify"):
            checked = self._citations.check(generated.sentences, in_context, understood)
        trace["checks"] = checked.checks
        recheck = self._guard.recheck_answer(subject, checked.supported, asked.in_force_on)
        trace["answer_time_drops"] = [
            {"chunk_id": d.citation.chunk_id, "reason": d.reason} for d in recheck.dropped_citations
        ]
        claims = [s for s in recheck.sentences if s.kind == "claim"]
        refusal = self._gates.after_verification(
            understood, claims, in_context, checked.checks, question_vectors, admitted.coverage
        )
        if refusal is not None:
            return answer.refused(refusal)
        conflicts = self._disagreements(in_context, claims)
        trace["conflicts"] = [c.to_dict() for c in conflicts]
        return answer.answered(
            _verified(recheck.sentences, in_context, checked.located),
            decision=generated.decision if asks_yes_or_no(question) else None,
            unanswered=self._unanswered(understood, claims, in_context, admitted),
            scope=describe_scope([in_context[s.citations[0].chunk_id] for s in claims]),
            conflicts=conflicts,
        )

    # -- the steps --------------------------------------------------------------------

    def _understand(self, question: str, follows: str | None) -> UnderstoodQuestion:
        if self._reader is not None:
            return self._reader.read(question, follows)
        text = question.strip()
        return UnderstoodQuestion(
            question, text, text, text, (text,), qualifiers_of(text), asking=text, topic=text
        )

    def _search(
        self, question: Question, understood: UnderstoodQuestion
    ) -> tuple[SearchResult, np.ndarray, Relevance]:
        """The access-checked, reranked candidates; the question's readings as vectors
        (what it asks, what is searched, each part: a passage is as relevant as it is to
        the reading it answers best); and each candidate's relevance."""
        found = self._query.run_question(
            question, self._gates.context_passages, search_text=understood.search_text,
            shown=False,
        )  # fmt: skip
        vectors = self._reading_vectors(understood, found.question_vector)
        return found, vectors, self._gates.relevance(vectors, found.candidates)

    def _report_break_glass_use(self, found: SearchResult, answer: Answer) -> None:
        """Emergency access opened what the asker was shown (the passages cited, or the
        closest sources offered with a refusal), not every passage the search found."""
        shown = {span.chunk_id for s in answer.sentences for span in s.spans}
        shown |= {source.chunk_id for source in answer.closest_sources}
        self._guard.report_break_glass_use(
            found.scope, [c for c in found.candidates if c.chunk.chunk_id in shown],
            answer.request_id,
        )  # fmt: skip

    def _reading_vectors(
        self, understood: UnderstoodQuestion, searched: np.ndarray | None
    ) -> np.ndarray:
        """One vector per reading; the search's own vector is reused when it made one."""
        readings = list(
            dict.fromkeys([understood.search_text, understood.focus, *understood.parts])
        )
        embedder = self._gates.embedder
        if searched is None:
            return embedder.embed(readings)
        rest = embedder.embed(readings[1:])
        return np.vstack([searched[None, :], rest]) if len(rest) else searched[None, :]

    def _trace(
        self,
        question: Question,
        understood: UnderstoodQuestion,
        found: SearchResult,
        relevance: Relevance,
    ) -> dict[str, object]:
        """The answer's audit record as it starts; each later step adds what it saw."""
        return {
            "query": question.text,
            "question_request": question.request_id,
            "understood": understood.to_record(),
            "relevance": {
                c.chunk.chunk_id: round(relevance.scores[i], 4)
                for i, c in enumerate(found.candidates)
            },
            "relevance_signal": relevance.signal,
            "relevance_floor": relevance.floor,
            "generator": self._generator.name,
            "verifier": {"name": self._verifier.name, "kind": self._verifier.kind},
            "policy_version": found.scope.policy_version,
        }

    def _record_store_failure(
        self, question: Question, understood: UnderstoodQuestion, error: StoreUnavailable
    ) -> None:
        """A store that cannot be searched is an error the asker sees, never an answer
        from the stores that did reply; the record says which store and why."""
        trace: dict[str, object] = {
            "query": question.text,
            "question_request": question.request_id,
            "understood": understood.to_record(),
            "generator": self._generator.name,
            "verifier": {"name": self._verifier.name, "kind": self._verifier.kind},
            "error": str(error),
            "store": error.store,
        }
        answering = _Answering(
            self._recorder, self._generator.name, self._verifier.name, question, understood,
            trace, closest=(),
        )  # fmt: skip
        answering.refused(Refusal("store-unavailable", f"the {error.store} store is unavailable"))

    def _generate(
        self, understood: UnderstoodQuestion, context: list[ContextPassage], answer: _Answering
    ) -> GeneratedAnswer:
        try:
            generated = self._generator.generate(
                understood.read_as, context, search_text=understood.search_text
            )
        except GeneratorUnavailable as error:
            # Not a refusal (the documents may well answer): an error the user sees, and
            # a record that says so.
            answer.trace["error"] = str(error)
            answer.closest = ()
            answer.refused(Refusal("generator-unavailable", "generator unavailable"))
            raise
        answer.trace["raw_output"] = generated.raw
        answer.trace["generator_not_found"] = generated.not_found
        answer.trace["generator_decision"] = generated.decision
        return generated

    def _disagreements(
        self, in_context: dict[str, Chunk], claims: Sequence[AnswerSentence]
    ) -> tuple[Conflict, ...]:
        """Sources among the passages that disagree about what the answer cites. Every
        passage here passed both access checks, and only these passages are read."""
        if self._conflicts is None:
            return ()
        cited = {c.chunk_id for s in claims for c in s.citations}
        return tuple(self._conflicts.among(list(in_context.values()), cited))

    def _unanswered(
        self,
        understood: UnderstoodQuestion,
        claims: list[AnswerSentence],
        in_context: dict[str, Chunk],
        admitted: Admitted,
    ) -> tuple[str, ...]:
        """The parts of the question no kept claim answers, each claim read as a reader
        meets it: under its document's title and headings."""
        return unanswered_parts(
            understood.parts,
            [under_title(s.text, in_context[s.citations[0].chunk_id]) for s in claims],
            self._gates.embedder, self._gates.terms, self._gates.relevance_floor,
        )  # fmt: skip


@dataclasses.dataclass(slots=True)
class _Answering:
    """One question on its way out: how it ends (refused or answered), recorded first."""

    recorder: AnswerRecorder
    generator: str
    verifier: str
    question: Question
    understood: UnderstoodQuestion
    trace: dict[str, object]
    closest: tuple[Source, ...]
    shown: Callable[[Answer], None] | None = None
    """Told what the asker was shown, once it is recorded."""

    def refused(self, refusal: Refusal) -> Answer:
        return self._record((), refusal, self.closest)

    def answered(
        self,
        sentences: tuple[VerifiedSentence, ...],
        *,
        decision: ShortAnswer | None,
        unanswered: tuple[str, ...],
        scope: str | None,
        conflicts: tuple[Conflict, ...] = (),
    ) -> Answer:
        return self._record(sentences, None, (), decision, unanswered, scope, conflicts)

    def _record(
        self,
        sentences: tuple[VerifiedSentence, ...],
        refusal: Refusal | None,
        closest: tuple[Source, ...],
        decision: ShortAnswer | None = None,
        unanswered: tuple[str, ...] = (),
        scope: str | None = None,
        conflicts: tuple[Conflict, ...] = (),
    ) -> Answer:
        understood = self.understood
        read_as = understood.read_as if understood.read_as != understood.asked.strip() else None
        timings = self.trace.get("timings")
        answer = Answer(
            understood.asked, self.question.request_id, sentences, refusal, closest,
            self.generator, self.verifier, -1,
            decision, scope, read_as, unanswered, conflicts, understood.follows or None,
            dict(timings) if isinstance(timings, dict) else {},
        )  # fmt: skip
        try:
            receipt = self.recorder.answer(self.question.subject, answer, self.trace)
        except Exception as error:
            raise NotRecorded(
                f"the answer could not be written to the audit log: {error}"
            ) from error
        answer = dataclasses.replace(answer, audit_entry=receipt.position)
        if self.shown is not None:
            self.shown(answer)
        return answer


class Laps:
    """Seconds each named step took, kept in the order they ran."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[step] = round(time.perf_counter() - started, 4)


def _source(chunk: Chunk) -> Source:
    meta = chunk.metadata
    return Source(
        chunk.chunk_id, chunk.doc_id, meta.title, chunk.heading_path, meta.version,
        meta.effective_from.isoformat(), chunk.start, chunk.end,
    )  # fmt: skip


def _verified(
    sentences: Sequence[AnswerSentence],
    in_context: dict[str, Chunk],
    located: dict[Citation, LocatedQuote],
) -> tuple[VerifiedSentence, ...]:
    return tuple(
        VerifiedSentence(
            s, tuple(_cited_span(in_context[c.chunk_id], located[c]) for c in s.citations)
        )
        for s in sentences
    )


def _cited_span(chunk: Chunk, located: LocatedQuote) -> CitedSpan:
    meta = chunk.metadata
    return CitedSpan(
        chunk.chunk_id, chunk.doc_id, meta.title, meta.version, meta.effective_from.isoformat(),
        meta.superseded_by, chunk.heading_path, chunk.page, located.start, located.end,
        located.text, meta.ocr_confidence.get(chunk.page) if chunk.page is not None else None,
    )  # fmt: skip
