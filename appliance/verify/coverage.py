"""Does the context talk about what the question asks about?

Embedding similarity says "same topic", which is not "answers it": a question about
pembrolizumab lands near the oncology formulary whether or not the drug is in it. So
before generation, the question's content words are weighed by how rare they are among
the chunks the asker may read (inverse document frequency; a word no readable chunk
contains weighs most), and the passages given to the generator must contain at least
``minimum`` of that weight. Clinical writing abbreviates, so a word also counts as
present when it is the initials of consecutive passage words ("GP", "general
practitioner") or the start of a longer passage word ("diff", "difficile"), and the
function of an organ ("renal impairment") is present where a passage speaks of it in
its own words ("creatinine clearance", "eGFR"). What is missing is named in the refusal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from appliance.index.base import TermStatistics
from appliance.index.filters import SearchFilter
from appliance.understand.qualifiers import organ_function_in, organ_functions_named
from appliance.understand.spelling import SPECIFIC, english_frequency

BACKGROUND_CHUNKS = 100
"""Inverse document frequency as if the readable chunks sat among this many more that
mention nothing of the question: with a handful of documents, a plain IDF gives every
word they share almost no weight and any word they lack all of it."""
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*")
EVERYDAY = 4.0
"""A word at least this common in English (Zipf), or an adverb made of one, weighs no
more than one that a tenth of the readable chunks contain: everyday words ("soon",
"need", "feet") that the documents happen not to use must not outweigh the clinical
words of a question."""
_ADVERB_ENDINGS = (("ically", "ic"), ("ily", "y"), ("bly", "ble"), ("ly", "le"), ("ly", ""))
"""How an English adverb is made from its adjective or noun: basically/basic,
happily/happy, probably/probable, gently/gentle, urgently/urgent, hourly/hour."""
_ACRONYM = re.compile(r"^[A-Z]{2,6}$")
MIN_PREFIX = 4
_PROPER_NAME = re.compile(r"^[A-Z][a-z]{3,}(?:-[A-Z][a-z]+)*(?:'s)?$")
"""A capitalised word ("Braden", "Child-Pugh", "Crohn's"); not an acronym ("MRSA"), nor
shorthand with capitals inside ("SpO2", "NGTs"), nor a short one ("Hb")."""
_PERSON = re.compile(
    r"\b(?:Mr|Mrs|Ms|Mx|Miss|Dr|Prof)\.?\s+(?:[A-Z][a-z]*\s+(?=[A-Z]))?[A-Z][\w'-]*"
)
"""A person named with a title ("Mrs Abernethy", "Mrs Jane Doe", "Dr O'Neill"): a ward
question's patient or colleague, never what the documents must be about. At most two
names, so that "Mr Shah's Warfarin" keeps its drug."""
_SENTENCE_END = re.compile(r"(?<=[.?!:;])\s+")
_QUESTION_FORM = re.compile(
    r"\bhow\s+(?:long|soon|quickly|early|late|far|frequently)\b|\b(?:need|needs|ought)\b",
    re.IGNORECASE,
)
"""The grammar of asking, which the documents answer without repeating: the adverb of
"how soon" or "how long" asks for a time, as "how often" asks for a frequency, and
"need" or "ought" asks whether something is required, as "must" and "should" do.
spaCy's stop list already leaves out "often", "much", "must" and "should"; these are
its gaps, matched only where they ask, so "long-acting" stays a topic."""


_ADJECTIVE_TO_NOUN = (("tic", "sis"), ("ic", "ia"), ("ic", "es"), ("ic", "is"))
"""Clinical adjectives and the nouns the documents use: septic/sepsis,
anaemic/anaemia, diabetic/diabetes, psychotic/psychosis."""


@dataclass(frozen=True, slots=True)
class QuestionCoverage:
    coverage: float
    """Share of the question's term weight found in the passages (1.0 if it has none)."""
    missing: tuple[str, ...]
    """The question's terms (as indexed: stemmed) that no passage contains, heaviest first."""
    weights: dict[str, float]
    missing_names: tuple[str, ...] = ()
    """The question's words that name a specific thing the readable documents contain
    somewhere, but no passage given does (as the question writes them)."""
    names: tuple[str, ...] = ()
    """Every word of the asking sentences that names a specific thing the readable
    documents contain."""
    unknown_identifiers: tuple[str, ...] = ()
    """Identifiers of the asking sentences ("COVID-19") that no readable chunk contains."""
    unknown_names: tuple[str, ...] = ()
    """Proper names of the asking sentences (an eponymous score, a disease named after a
    place) that no readable chunk contains."""


def is_everyday(word: str, zipf: Callable[[str], float]) -> bool:
    """An everyday English word, or an adverb made of one: "unexpectedly", "urgently"
    and "hourly" say how or when, which documents write in their own words ("unplanned",
    "at once", "every hour"), and weigh no more than "unexpected" would. An adverb of a
    clinical word ("subcutaneously") keeps its weight, and so does a word that only ends
    like an adverb ("anomaly")."""
    word = word.lower()
    if zipf(word) >= EVERYDAY:
        return True
    return any(
        word.endswith(ending)
        and len(word) > len(ending) + 2
        and zipf(word[: -len(ending)] + base) >= EVERYDAY
        for ending, base in _ADVERB_ENDINGS
    )


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
    index: TermStatistics,
    search_filter: SearchFilter | None,
    asking: str | None = None,
    meanings: Sequence[tuple[str, str]] = (),
) -> QuestionCoverage:
    """How much of the question's weight the passages hold; ``asking`` is the part of
    the question that asks (its last sentences), whose specific names must all be there.
    ``meanings``: (abbreviation, long form) pairs the documents define; an abbreviation
    is present where a passage writes its long form instead ("CrCl", "creatinine
    clearance")."""
    zipf = english_frequency()
    # Words that start with a digit are values and ages ("58-year-old", "4.5"):
    # qualifiers, not topics ("COVID-19" and "E11.9" are topics).
    question = _PERSON.sub(" ", question)
    asking = _PERSON.sub(" ", asking) if asking else asking
    spoken = " ".join(w for w in _QUESTION_FORM.sub(" ", question).split() if not w[:1].isdigit())
    terms = index.content_terms(spoken)
    if not terms:
        return QuestionCoverage(1.0, (), {})
    frequencies, total = index.document_frequencies(terms, search_filter)
    everyday = {t for w in _WORD.findall(spoken) if is_everyday(w, zipf)
                for t in index.content_terms(w)}  # fmt: skip
    cap = math.log((total + BACKGROUND_CHUNKS) / (0.1 * total + 0.5))
    weights = {
        t: min(math.log((total + BACKGROUND_CHUNKS) / (frequencies[t] + 0.5)),
               cap if t in everyday else math.inf)
        for t in terms
    }  # fmt: skip
    present = {t for passage in passages for t in index.content_terms(passage)}
    present_words = {w.lower() for passage in passages for w in _WORD.findall(passage)}
    acronyms = {w.lower() for w in _WORD.findall(question) if _ACRONYM.match(w)}
    initials = _initials(passages) if acronyms else set()
    organs_spoken = {organ for passage in passages for organ in organ_function_in(passage)}
    organ_terms = {
        term
        for phrase, organs in organ_functions_named(spoken)
        if organs & organs_spoken
        for term in index.content_terms(phrase)
    }
    stands_for = {
        term: long_terms
        for short, long in meanings
        if (long_terms := index.content_terms(long))
        for term in index.content_terms(short)
    }

    def found(term: str) -> bool:
        if term in present or any(
            term.endswith(adjective) and term[: -len(adjective)] + noun in present_words
            for adjective, noun in _ADJECTIVE_TO_NOUN
        ):
            return True
        if (term in acronyms and term in initials) or term in organ_terms:
            return True
        if term in stands_for and all(t in present for t in stands_for[term]):
            return True
        return len(term) >= MIN_PREFIX and any(
            p.startswith(term) and len(p) > len(term) for p in present
        )

    whole = sum(weights.values())
    covered = sum(w for t, w in weights.items() if found(t))
    missing = tuple(sorted((t for t in terms if not found(t)), key=lambda t: -weights[t]))
    named = {
        word: terms_of_word
        for word in dict.fromkeys(_WORD.findall(asking or question))
        if zipf(word.lower()) < SPECIFIC
        and (terms_of_word := index.content_terms(word))
        and all(frequencies.get(t, 0) > 0 for t in terms_of_word)
    }
    missing_names = tuple(w for w, ts in named.items() if not any(found(t) for t in ts))
    unknown = _unknown_identifiers(asking or question, index, frequencies)
    unnamed = _unknown_names(asking or question, index, search_filter, frequencies, zipf)
    return QuestionCoverage(
        covered / whole, missing, weights, missing_names, tuple(named), unknown, unnamed
    )


def _identifiers(text: str) -> list[str]:
    """Words with letters and digits that do not start with a digit ("COVID-19", "E11.9",
    "P-20871"; not "58-year-old")."""
    words = (w.strip(".,;:?!()'\"") for w in text.split())
    return [
        w for w in dict.fromkeys(words)
        if w[:1].isalpha() and any(c.isdigit() for c in w)
    ]  # fmt: skip


def _unknown_identifiers(
    asking: str, index: TermStatistics, frequencies: dict[str, int]
) -> tuple[str, ...]:
    """The identifiers a question asks about when no readable chunk holds any of them: a
    question about "COVID-19" cannot be answered from documents that never name it (one
    about "ICD-10 code E11.9" can, when they name E11.9)."""
    found = {
        w: [frequencies.get(t, 0) for t in index.content_terms(w)] for w in _identifiers(asking)
    }
    found = {w: counts for w, counts in found.items() if counts}
    if not found or any(any(counts) for counts in found.values()):
        return ()
    return tuple(found)


def _proper_names(text: str) -> list[tuple[str, str]]:
    """Capitalised words inside a sentence (never its first word), each with the
    initials of the run of capitalised words it stands in ("Glasgow Coma Scale" gives
    "GCS")."""
    names = []
    for sentence in _SENTENCE_END.split(text):
        words = _WORD.findall(sentence)
        for i, word in enumerate(words):
            if i == 0 or not _PROPER_NAME.match(word):
                continue
            start, end = i, i + 1
            while start > 0 and words[start - 1][:1].isupper():
                start -= 1
            while end < len(words) and words[end][:1].isupper():
                end += 1
            initials = "".join(w[0] for w in words[start:end]) if end - start > 1 else ""
            names.append((word, initials))
    return names


def _unknown_names(
    asking: str,
    index: TermStatistics,
    search_filter: SearchFilter | None,
    frequencies: dict[str, int],
    zipf: Callable[[str], float],
) -> tuple[str, ...]:
    """The proper names a question asks about that no readable chunk contains, nor the
    initials of the name they are part of: what a "Norton score" or "Lassa fever" means
    cannot come from documents that never name it, however well their other words cover
    the question. A name that is also an everyday word ("March", "Purpose") is not one;
    surnames and places often are rarer than that ("Norton", "Rankin", "Lassa")."""
    unknown = []
    for word, initials in _proper_names(asking):
        terms = index.content_terms(word)
        if not terms or zipf(word.lower()) >= EVERYDAY or any(frequencies.get(t) for t in terms):
            continue
        if initials:
            known, _ = index.document_frequencies(index.content_terms(initials), search_filter)
            if any(known.values()):
                continue
        unknown.append(word)
    return tuple(dict.fromkeys(unknown))


def words_for(question: str, terms: Sequence[str], index: TermStatistics) -> list[str]:
    """The question's own words behind indexed terms (for a message a person reads)."""
    wanted = set(terms)
    words = []
    for word in question.split():
        word = word.strip(".,;:!?()[]\"'")
        if word and wanted & set(index.content_terms(word)) and word not in words:
            words.append(word)
    return words
