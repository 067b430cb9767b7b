"""Spelling correction against the documents' own vocabulary.

A word is corrected only when it is one edit (a letter added, dropped, changed or two
swapped) from a word that is far more likely: a word of the documents, or a common
English word. What is never changed: a word the documents use, a word with a digit or a
capital inside it (codes, units, ward shorthand such as "CrCl" or "E11.9"), a word of
under three letters, and a drug name the English word list knows (a word with a drug
stem from the reviewed ward language): "prednisone" is not a typo of "prednisolone".
Likelihood is wordfreq's Zipf frequency (log10 of uses per billion words); a documents'
word counts ``CORPUS_BONUS`` more, so a misspelt drug is read as the one in the documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import cache

from appliance.understand.ward_language import WardLanguage

CORPUS_BONUS = 2.0
MIN_GAIN = 2.0
"""How much more likely (in Zipf units, a factor of 100) the correction must be."""
COMMON_ENGLISH = 4.0
"""A candidate that is not a documents' word must be at least this common in English."""
KNOWN_WORD = 1.0
"""A word at least this frequent in English is a known word (for the drug-name rule)."""
ENGLISH_WORD = 2.5
"""A word at least this common is an English word: it is corrected only into a far more
common English word ("teh" to "the"), never into a documents' word ("write" is not
"white" because the documents say "white")."""
EVERYDAY_WORD = 4.0
"""A word at least this common is never corrected."""
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORD = re.compile(r"(?<![\w.-])[A-Za-z][a-z]+(?:'[a-z]+)?(?![\w-])")


@cache
def english_frequency() -> Callable[[str], float]:
    from wordfreq import zipf_frequency

    return lambda word: zipf_frequency(word, "en")


SPECIFIC = 3.0
"""A word rarer than this in English (Zipf) names a specific thing: a drug, a
condition, a code ("ceftriaxone", "ketoacidosis", "E11.9")."""


def specific_words(text: str) -> set[str]:
    """The words of a text (lower case) that name specific things."""
    zipf = english_frequency()
    words = re.findall(r"[A-Za-z][\w.-]*[A-Za-z0-9]", text)
    return {w.lower() for w in words if len(w) > 2 and zipf(w.lower()) < SPECIFIC}


def _one_edit(word: str) -> set[str]:
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = [a + b[1:] for a, b in splits if b]
    swaps = [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1]
    replaces = [a + c + b[1:] for a, b in splits if b for c in _LETTERS]
    inserts = [a + c + b for a, b in splits for c in _LETTERS]
    return set(deletes + swaps + replaces + inserts) - {word}


@dataclass(frozen=True, slots=True)
class Correction:
    written: str
    read_as: str


class SpellingCorrector:
    def __init__(self, vocabulary: Collection[str], language: WardLanguage) -> None:
        self._vocabulary = vocabulary
        self._language = language
        self._zipf = english_frequency()

    def protected(self, word: str) -> bool:
        lower = word.lower()
        return (
            len(lower) < 3
            or lower in self._vocabulary
            or self._language.expansion(word) is not None
            or (self._language.is_drug_like(lower) and self._zipf(lower) >= KNOWN_WORD)
        )

    def correct_word(self, word: str) -> str | None:
        """The word it should be read as, or None to leave it as written."""
        if self.protected(word):
            return None
        lower = word.lower()
        written = self._zipf(lower)
        if written >= EVERYDAY_WORD:
            return None
        bonus = CORPUS_BONUS if written < ENGLISH_WORD else 0.0
        best, best_score = None, float("-inf")
        for candidate in _one_edit(lower):
            english = self._zipf(candidate)
            in_documents = candidate in self._vocabulary
            if not in_documents and english < COMMON_ENGLISH:
                continue
            score = english + (bonus if in_documents else 0.0)
            if score > best_score or (
                score == best_score and best is not None and candidate < best
            ):
                best, best_score = candidate, score
        if best is None or best_score - written < MIN_GAIN:
            return None
        return best.capitalize() if word[0].isupper() else best

    def correct(self, text: str) -> tuple[str, list[Correction]]:
        """The text with each word that needs it corrected, and what was changed."""
        corrections: list[Correction] = []

        def replace(match: re.Match[str]) -> str:
            read_as = self.correct_word(match.group(0))
            if read_as is None:
                return match.group(0)
            corrections.append(Correction(match.group(0), read_as))
            return read_as

        return WORD.sub(replace, text), corrections
