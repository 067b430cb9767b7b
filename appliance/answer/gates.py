"""The answer path's refusal gates, in the order a question meets them.

Before generation: is any passage relevant enough; would a document not in force on the
day asked answer clearly better; do the passages apply to the patient asked about; do
the passages about the question (those over the relevance floor) cover what it names.
After verification: did any claim survive; does what survived answer the question; does
a dose answer name the drug asked about. Each gate refuses in a clinician's words
(``Refusal``) and writes what it measured into the answer's audit record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from appliance.generate.base import under_heading
from appliance.index.base import TermStatistics, VectorIndex
from appliance.index.filters import in_force_day, without_dates
from appliance.nlp.embedder import Embedder
from appliance.query import QueryPipeline, Question, SearchResult
from appliance.records import AnswerSentence, Candidate, Chunk, Refusal
from appliance.understand import UnderstoodQuestion
from appliance.verify.answerability import (
    NOT_IN_FORCE_MARGIN,
    dose_refusal,
    drug_of_paragraph,
    in_force,
    iso_day,
    listed,
    lost_to_scope,
    not_in_force_reason,
)
from appliance.verify.coverage import QuestionCoverage, question_coverage, words_for
from appliance.verify.scope import ScopeChecker

NOT_ANSWERED = "The hospital documents available to you do not answer this question."
NOT_RELEVANT = "no passage of the documents available to you is about this question"
NOTHING_VERIFIED = "no sentence of the documents found could be verified to say this"
NOT_AN_ANSWER = "what the documents found say does not answer this question"

AuditRecord = dict[str, object]


@dataclass(frozen=True, slots=True)
class Relevance:
    """How well each candidate answers the question, and the floor below which none does."""

    signal: str
    """``cross-encoder`` (its calibrated probability) or ``cosine``."""
    scores: list[float]
    floor: float


@dataclass(frozen=True, slots=True)
class Admitted:
    """What passed the gates before generation: the passages the generator reads."""

    candidates: list[Candidate]
    coverage: QuestionCoverage


class AnswerGates:
    def __init__(
        self,
        query: QueryPipeline,
        vectors: VectorIndex,
        terms: TermStatistics,
        embedder: Embedder,
        scope: ScopeChecker | None = None,
        *,
        relevance_floor: float = 0.42,
        min_question_coverage: float = 0.5,
        context_passages: int = 5,
        drugs_named: Callable[[str], set[str]] | None = None,
    ) -> None:
        self._query = query
        self._drugs_named = drugs_named
        self._vectors = vectors
        self.terms = terms
        self.embedder = embedder
        self._scope = scope
        self.relevance_floor = relevance_floor
        self.min_question_coverage = min_question_coverage
        self.context_passages = context_passages

    def to_dict(self) -> dict[str, object]:
        """The gates' settings, as data (for each answer's record of its pipeline)."""
        return {
            "relevance_floor": self.relevance_floor,
            "calibrated_threshold": self._query.relevance_threshold,
            "min_question_coverage": self.min_question_coverage,
            "context_passages": self.context_passages,
            "applicability": self._scope is not None,
        }

    # -- before generation ----------------------------------------------------------

    def relevance(self, question_vectors: np.ndarray, candidates: list[Candidate]) -> Relevance:
        """The installed cross-encoder's calibrated probability when there is one, else
        the cosine of the question's readings and the stored chunk vector."""
        threshold = self._query.relevance_threshold
        if threshold is not None and all("cross_encoder" in c.scores for c in candidates):
            return Relevance(
                "cross-encoder", [c.scores["cross_encoder"] for c in candidates], threshold
            )
        stored = self._vectors.vectors([c.chunk.chunk_id for c in candidates])
        cosines = [
            float(np.max(question_vectors @ stored[c.chunk.chunk_id]))
            if c.chunk.chunk_id in stored
            else 0.0
            for c in candidates
        ]
        return Relevance("cosine", cosines, self.relevance_floor)

    def before_generation(
        self,
        question: Question,
        understood: UnderstoodQuestion,
        found: SearchResult,
        question_vectors: np.ndarray,
        relevance: Relevance,
        record: AuditRecord,
    ) -> Admitted | Refusal:
        """The passages the generator may read, or why the documents do not answer."""
        candidates = found.candidates
        relevant = [
            c for c, r in zip(candidates, relevance.scores, strict=True) if r >= relevance.floor
        ]
        best = max(relevance.scores, default=0.0)
        elsewhere = self._not_in_force(question, understood, question_vectors, best)
        if elsewhere is not None:
            record["not_in_force"] = {
                "chunk_id": elsewhere.chunk_id, "doc_id": elsewhere.doc_id,
                "effective_from": elsewhere.metadata.effective_from.isoformat(),
                "effective_to": iso_day(elsewhere.metadata.effective_to),
            }  # fmt: skip
            reason = not_in_force_reason(elsewhere, in_force_day(question.search_filter))
            return Refusal("not-in-force", reason)
        if not relevant:
            return Refusal("not-relevant", NOT_RELEVANT)
        applicable, out_of_scope = self._applicable(understood, candidates)
        record["scope_conflicts"] = out_of_scope
        reasons = "; ".join(dict.fromkeys(out_of_scope.values()))
        if not any(c in applicable for c in relevant):
            return Refusal(
                "out-of-scope", f"the documents found do not apply to what is asked: {reasons}"
            )
        coverage = self._coverage(understood, applicable, found)
        # The passages the question is about must cover it themselves: a word found only
        # in a passage under the relevance floor (a stroke protocol's "time", a referral
        # to "plastic surgery") does not show that the documents answer it.
        relevant_ids = {c.chunk.chunk_id for c in relevant}
        about_it = [c for c in applicable if c.chunk.chunk_id in relevant_ids]
        covered = (
            coverage
            if len(about_it) == len(applicable)
            else self._coverage(understood, about_it, found)
        )
        record["question_coverage"] = {
            "coverage": round(coverage.coverage, 4),
            "by_relevant_passages": round(covered.coverage, 4),
            "minimum": self.min_question_coverage,
            "missing": list(coverage.missing),
            "missing_from_relevant_passages": list(covered.missing),
            "missing_names": list(coverage.missing_names),
        }
        if coverage.unknown_identifiers:
            unknown = listed(list(coverage.unknown_identifiers))
            return Refusal(
                "unknown-identifier", f"the documents available to you do not mention {unknown}"
            )
        if coverage.unknown_names:
            unknown = listed(list(coverage.unknown_names))
            return Refusal(
                "unknown-name", f"the documents available to you do not mention {unknown}"
            )
        # What the question is about, held only by passages outside its scope.
        removed = [passage_text(c.chunk) for c in candidates if c.chunk.chunk_id in out_of_scope]
        lost = lost_to_scope(understood.focus, coverage, removed, self.terms)
        if lost:
            return Refusal(
                "out-of-scope",
                f"the documents found do not cover {listed(lost)} for this patient ({reasons})",
            )
        if covered.coverage < self.min_question_coverage:
            absent = words_for(understood.topic, covered.missing, self.terms)[:4]
            return Refusal("not-covered", f"the documents found do not cover {listed(absent)}")
        return Admitted(applicable, coverage)

    def _coverage(
        self, understood: UnderstoodQuestion, passages: list[Candidate], found: SearchResult
    ) -> QuestionCoverage:
        """How much of the question the passages hold, weighed among what the asker may
        read; an abbreviation and its meaning weigh as one term, present where either is."""
        return question_coverage(
            understood.without_long_forms(understood.topic),
            [passage_text(c.chunk) for c in passages],
            self.terms,
            found.applied_filter,
            understood.without_long_forms(understood.asking),
            [(e.written, e.read_as) for e in understood.expansions],
        )

    def _not_in_force(
        self,
        question: Question,
        understood: UnderstoodQuestion,
        question_vectors: np.ndarray,
        best_in_force: float,
    ) -> Chunk | None:
        """A passage of a document not in force on the day asked (not yet, or no longer)
        that answers the question clearly better than anything in force: the reason to
        refuse is then that document's dates, not a made-up answer from another one."""
        day = in_force_day(question.search_filter)
        if day is None:
            return None
        undated = self._query.search(
            understood.search_text, question.subject, self.context_passages,
            without_dates(question.search_filter), "hybrid", rerank=False,
        ).candidates  # fmt: skip
        stored = self._vectors.vectors([c.chunk.chunk_id for c in undated])
        best: tuple[float, Chunk] | None = None
        for candidate in undated:
            chunk = candidate.chunk
            if chunk.chunk_id not in stored or in_force(chunk, day):
                continue
            score = float(np.max(question_vectors @ stored[chunk.chunk_id]))
            if best is None or score > best[0]:
                best = (score, chunk)
        if best is None or best[0] < self.relevance_floor:
            return None
        return best[1] if best[0] - best_in_force >= NOT_IN_FORCE_MARGIN else None

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

    # -- after verification -----------------------------------------------------------

    def after_verification(
        self,
        understood: UnderstoodQuestion,
        claims: list[AnswerSentence],
        in_context: dict[str, Chunk],
        checks: list[dict[str, object]],
        question_vectors: np.ndarray,
        coverage: QuestionCoverage,
    ) -> Refusal | None:
        """Why the verified claims do not make an answer, or None when they do."""
        if not claims:
            scope_reasons = [str(c["scope"]) for c in checks if "scope" in c]
            if scope_reasons:
                reasons = "; ".join(dict.fromkeys(scope_reasons))
                return Refusal(
                    "out-of-scope", f"the passages found do not apply to what is asked: {reasons}"
                )
            return Refusal("nothing-verified", NOTHING_VERIFIED)
        claim_texts = [under_heading(s.text, in_context[s.citations[0].chunk_id]) for s in claims]
        claim_vectors = self.embedder.embed(claim_texts)
        if float(np.max(claim_vectors @ question_vectors.T)) < self.relevance_floor:
            return Refusal("not-an-answer", NOT_AN_ANSWER)
        in_paragraphs = [
            (s.text, self._in_its_paragraph(s, t, in_context))
            for s, t in zip(claims, claim_texts, strict=True)
        ]
        no_dose = dose_refusal(understood.asking or understood.focus, in_paragraphs, coverage.names)
        return Refusal("no-dose", no_dose) if no_dose else None

    def _in_its_paragraph(
        self, claim: AnswerSentence, under_its_heading: str, in_context: dict[str, Chunk]
    ) -> str:
        """A claim under its heading, and after the drug its paragraph speaks of when it
        names none itself (``drug_of_paragraph``)."""
        if self._drugs_named is None:
            return under_its_heading
        citation = claim.citations[0]
        drug = drug_of_paragraph(
            citation.quote, in_context[citation.chunk_id].text, self._drugs_named
        )
        return f"{drug}: {under_its_heading}" if drug else under_its_heading


def passage_text(chunk: Chunk) -> str:
    """A chunk as a reader sees it: its text under its title and headings."""
    return under_title(chunk.text, chunk)


def under_title(text: str, chunk: Chunk) -> str:
    return " ".join((chunk.metadata.title, *chunk.heading_path, text))
