"""The fallback verifier: used only when no NLI model is installed, and labelled so.

It cannot understand paraphrase; it checks what a wrong clinical sentence most often gets
wrong: content words the evidence does not contain, numbers, units and dates that differ,
and negation that flips. It is strict on purpose (90% of a claim's content words must
be in the evidence): when in doubt, a sentence goes.
"""

from __future__ import annotations

import re

from appliance.verify.base import Entailment

_WORD = re.compile(r"[A-Za-z][A-Za-z\-]+")
_UNITS = r"mg|g|mcg|ml|mL|kg|units?|%|mmol|hours?|minutes?|days?|seconds?|h|min"
_NUMBER = re.compile(rf"\d+(?:[.,]\d+)?(?:\s?(?:{_UNITS}))?")
_NEGATION = re.compile(
    r"\b(?:not|no|never|without|avoid|do not|don't|must not|contraindicated)\b", re.I
)
_EVIDENCE_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_STOPWORD_TEXT = (
    "a an the of to in on for and or with by at as is are was were be been being this "
    "that these those it its from into than then should must may can will would could "
    "all any each per if when which who whom whose what where how"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOPWORDS and len(w) > 2}


def _numbers(text: str) -> set[str]:
    return {re.sub(r"\s", "", n.lower()) for n in _NUMBER.findall(text)}


class LexicalVerifier:
    name = "lexical-fallback"
    kind = "lexical-fallback"

    def __init__(self, threshold: float = 0.9) -> None:
        self.threshold = threshold

    def check(self, evidence: str, sentence: str) -> Entailment:
        reasons = []
        words = _content_words(sentence)
        covered = len(words & _content_words(evidence)) / len(words) if words else 1.0
        if covered < 1.0:
            reasons.append(f"{covered:.0%} of the sentence's content words are in the evidence")
        missing_numbers = _numbers(sentence) - _numbers(evidence)
        if missing_numbers:
            reasons.append(f"numbers not in the evidence: {sorted(missing_numbers)}")
        # Negation is compared with the evidence sentence that shares most words with the
        # claim: a "do not" elsewhere in the passage says nothing about this claim.
        closest = max(
            _EVIDENCE_SENTENCE.split(evidence),
            key=lambda part: len(words & _content_words(part)),
        )
        negated = bool(_NEGATION.search(sentence)), bool(_NEGATION.search(closest))
        if negated[0] != negated[1]:
            reasons.append("negation differs between sentence and evidence")
        score = (
            covered * (0.0 if missing_numbers else 1.0) * (0.0 if negated[0] != negated[1] else 1.0)
        )
        return Entailment(score, score >= self.threshold, tuple(reasons))
