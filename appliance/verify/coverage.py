"""Does the context talk about what the question asks about?

Embedding similarity says "same topic", which is not "answers it": a question about
pembrolizumab lands near the oncology formulary whether or not the drug is in it. So
before generation, the question's content words are weighed by how rare they are among
the chunks the asker may read (inverse document frequency; a word no readable chunk
contains weighs most), and the passages given to the generator must contain at least
``minimum`` of that weight. Clinical writing abbreviates, so a word also counts as
present when it is the initials of consecutive passage words ("GP", "general
practitioner") or the start of a longer passage word ("diff", "difficile"). What is
missing is named in the refusal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from appliance.index.base import LexicalIndex
from appliance.index.filters import SearchFilter

BACKGROUND_CHUNKS = 100
"""Inverse document frequency as if the readable chunks sat among this many more that
mention nothing of the question: with a handful of documents, a plain IDF gives every
word they share almost no weight and any word they lack all of it."""
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*")
_ACRONYM = re.compile(r"^[A-Z]{2,6}$")
MIN_PREFIX = 4


@dataclass(frozen=True, slots=True)
class QuestionCoverage:
    coverage: float
    """Share of the question's term weight found in the passages (1.0 if it has none)."""
    missing: tuple[str, ...]
    """The question's terms (as indexed: stemmed) that no passage contains, heaviest first."""
    weights: dict[str, float]


def _initials(passages: Sequence[str]) -> set[str]:
    """Every run of 2-6 consecutive words' initials, lowercased ("general practitioner"
    gives "gp")."""
    found: set[str] = set()
    for passage in passages:
        letters = [w[0].lower() for w in _WORD.findall(passage)]
        for size in range(2, 7):
            found.update("".join(letters[i : i + size]) for i in range(len(letters) - size + 1))
    return found


def question_coverage(
    question: str,
    passages: Sequence[str],
    index: LexicalIndex,
    search_filter: SearchFilter | None,
) -> QuestionCoverage:
    terms = index.content_terms(question)
    if not terms:
        return QuestionCoverage(1.0, (), {})
    frequencies, total = index.document_frequencies(terms, search_filter)
    weights = {t: math.log((total + BACKGROUND_CHUNKS) / (frequencies[t] + 0.5)) for t in terms}
    present = {t for passage in passages for t in index.content_terms(passage)}
    acronyms = {w.lower() for w in _WORD.findall(question) if _ACRONYM.match(w)}
    initials = _initials(passages) if acronyms else set()

    def found(term: str) -> bool:
        if term in present:
            return True
        if term in acronyms and term in initials:
            return True
        return len(term) >= MIN_PREFIX and any(
            p.startswith(term) and len(p) > len(term) for p in present
        )

    whole = sum(weights.values())
    covered = sum(w for t, w in weights.items() if found(t))
    missing = tuple(sorted((t for t in terms if not found(t)), key=lambda t: -weights[t]))
    return QuestionCoverage(covered / whole, missing, weights)


def words_for(question: str, terms: Sequence[str], index: LexicalIndex) -> list[str]:
    """The question's own words behind indexed terms (for a message a person reads)."""
    wanted = set(terms)
    words = []
    for word in question.split():
        word = word.strip(".,;:!?()[]\"'")
        if word and wanted & set(index.content_terms(word)) and word not in words:
            words.append(word)
    return words
