"""Checks every citation of a generated answer: the quote must stand in the cited chunk
(which must be one the generator was given), entail the sentence, and apply to the
patient asked about. A sentence keeps the citations that pass; a claim with none left
is dropped, framing stays. Every check is recorded for the audit, pass or fail."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from appliance.records import AnswerSentence, Chunk, Citation
from appliance.understand import UnderstoodQuestion
from appliance.verify.base import Entailment, EntailmentVerifier
from appliance.verify.scope import ScopeChecker
from appliance.verify.spans import LocatedQuote, locate, normalise


@dataclass(slots=True)
class CheckedCitations:
    supported: list[AnswerSentence] = field(default_factory=list)
    """The sentences with the citations that passed (framing kept as it is)."""
    located: dict[Citation, LocatedQuote] = field(default_factory=dict)
    """Where each passing citation's quote stands in its chunk."""
    checks: list[dict[str, object]] = field(default_factory=list)
    """One entry per citation: the sentence, the chunk, the verdict and its score."""


class CitationChecker:
    def __init__(self, verifier: EntailmentVerifier, scope: ScopeChecker | None = None) -> None:
        self._verifier = verifier
        self._scope = scope

    def check(
        self,
        sentences: Sequence[AnswerSentence],
        in_context: dict[str, Chunk],
        understood: UnderstoodQuestion,
    ) -> CheckedCitations:
        checked = CheckedCitations()
        for sentence in sentences:
            for citation in sentence.citations:
                found = self._supported_span(citation, sentence, in_context, checked.checks)
                if found is not None and self._claim_applies(
                    understood, in_context[citation.chunk_id], sentence.text, checked.checks[-1]
                ):
                    checked.located[citation] = found
            kept = [c for c in sentence.citations if c in checked.located]
            if sentence.kind == "framing" or kept:
                checked.supported.append(AnswerSentence(sentence.text, sentence.kind, tuple(kept)))
        return checked

    def _supported_span(
        self,
        citation: Citation,
        sentence: AnswerSentence,
        in_context: dict[str, Chunk],
        checks: list[dict[str, object]],
    ) -> LocatedQuote | None:
        """Where the citation's quote stands, when it is in a context chunk and entails the
        sentence; None otherwise."""
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
        quoted = normalise(located.text) == normalise(sentence.text)
        if quoted:
            # A sentence that is its own quote, verbatim, is supported by definition.
            entailment = Entailment(1.0, True, ("the sentence is the quoted span, verbatim",))
        else:
            entailment = self._verifier.check(located.text, sentence.text)
        check.update(
            verdict="supported" if entailment.entailed else "not entailed",
            support="quoted" if quoted else "entailed" if entailment.entailed else "none",
            score=round(entailment.score, 4),
            reasons=list(entailment.reasons),
        )
        return located if entailment.entailed else None

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
