"""Reads a question as a ward writes it, before anything is searched: shorthand and the
abbreviations the documents define are expanded, misspellings are corrected against the
documents' vocabulary, a story is reduced to what it asks while the patient's facts are
kept as qualifiers, and a question that asks two things is split into its parts."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from appliance.understand.abbreviations import defined_abbreviations
from appliance.understand.follow_up import FollowUpReader
from appliance.understand.narrative import asking_of, focus_of, parts_of, says_something
from appliance.understand.qualifiers import Qualifiers, qualifiers_of
from appliance.understand.spelling import Correction, SpellingCorrector, english_frequency
from appliance.understand.ward_language import WardLanguage

_VOCABULARY_WORD = re.compile(r"[a-z]+")
_IDENTIFIER = re.compile(r"\b(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[A-Za-z0-9][\w.-]*[A-Za-z0-9]\b")
DOMAIN_WORD = 4.0
"""A story's word less common than this in English (Zipf) is kept for the search."""


@dataclass(frozen=True, slots=True)
class Expansion:
    written: str
    read_as: str


def _with_long_form(short: str, long: str) -> str:
    """How the reading writes a defined abbreviation: kept, its meaning beside it."""
    return f"{short} ({long})"


@dataclass(frozen=True, slots=True)
class UnderstoodQuestion:
    asked: str
    """The question exactly as the clinician wrote it (what the audit log records)."""
    read_as: str
    """The whole text with shorthand expanded and spelling corrected."""
    focus: str
    """What is asked: the question sentences of a story, or the whole question."""
    search_text: str
    """What the engines search for: the focus plus the story's clinical words."""
    parts: tuple[str, ...]
    qualifiers: Qualifiers
    asking: str = ""
    """The sentences that ask (the last one when none ends in "?")."""
    topic: str = ""
    """What the documents must be about: the question, or for a story the sentences that
    ask (a story's asker, ward and bed are not what it asks about); empty when they name
    nothing."""
    corrections: tuple[Correction, ...] = ()
    expansions: tuple[Expansion, ...] = ()
    follows: str = ""
    """The previous question of the conversation, as it was understood, when this one
    was read as its follow-up (``read_as`` then carries the previous subject)."""

    def without_long_forms(self, text: str) -> str:
        """``text`` without the long forms the reading put beside the abbreviations the
        documents define ("VRIII (Variable Rate ...)" -> "VRIII"): for weighing what a
        question asks about, an abbreviation and its meaning are one thing, not six."""
        for e in self.expansions:
            text = text.replace(_with_long_form(e.written, e.read_as), e.written)
        return text

    def to_record(self) -> dict[str, object]:
        """What the audit log keeps of the reading."""
        record: dict[str, object] = {"read_as": self.read_as, "search_text": self.search_text}
        if self.focus != self.read_as:
            record["focus"] = self.focus
        if len(self.parts) > 1:
            record["parts"] = list(self.parts)
        if self.corrections:
            record["corrections"] = {c.written: c.read_as for c in self.corrections}
        if self.expansions:
            record["expansions"] = {e.written: e.read_as for e in self.expansions}
        if self.follows:
            record["follows"] = self.follows
        qualifiers = self.qualifiers.to_record()
        if qualifiers:
            record["qualifiers"] = qualifiers
        return record


def _topic(read_as: str, focus: str, story: list[str]) -> str:
    """What the documents must be about: a story's asking sentences, or nothing when
    they name nothing ("What should I tell her?" cannot be checked for coverage; the
    relevance and scope of what is found still are)."""
    if not story:
        return focus
    asking = asking_of(read_as)
    return asking if says_something(asking) else ""


class DocumentWords:
    """The vocabulary and defined abbreviations of the documents every reader may see,
    rebuilt when the set of documents changes. Words of documents that only some may
    read are left out, so that a correction never reveals what such a document says."""

    def __init__(self, texts: Callable[[], tuple[object, Iterable[str]]]) -> None:
        self._texts = texts  # () -> (a key that changes with the documents, their texts)
        self._lock = threading.Lock()
        self._key: object = None
        self.vocabulary: frozenset[str] = frozenset()
        self.abbreviations: dict[str, str] = {}

    def refresh(self) -> None:
        key, texts = self._texts()
        if key == self._key:
            return
        with self._lock:
            texts = list(texts)
            self.vocabulary = frozenset(
                w for text in texts for w in _VOCABULARY_WORD.findall(text.lower())
            )
            self.abbreviations = defined_abbreviations(texts)
            self._key = key


class QuestionReader:
    def __init__(
        self,
        language: WardLanguage,
        documents: DocumentWords,
        follow_ups: FollowUpReader | None = None,
    ) -> None:
        self._language = language
        self._documents = documents
        self._follow_ups = follow_ups
        self._shorthand = language.shorthand_pattern()

    def _expand(
        self, text: str, vocabulary: frozenset[str]
    ) -> tuple[str, list[Expansion], list[str]]:
        """The text with shorthand read as its meaning; the expansions; and the meanings
        of shorthand the documents also write (kept as written, searched for too)."""
        expansions: list[Expansion] = []
        also: list[str] = []
        defined = self._documents.abbreviations

        def replace(match: re.Match[str]) -> str:
            written = match.group(0)
            read_as = self._language.expansion(written)
            if read_as is None:
                return written
            if written.lower() in vocabulary and " " not in written:
                also.append(read_as)  # the documents write it this way too
                return written
            expansions.append(Expansion(written, read_as))
            return read_as

        text = self._shorthand.sub(replace, text)
        for short, long in defined.items():
            pattern = rf"(?<![\w-]){re.escape(short)}(?![\w-])"
            if re.search(pattern, text) and long.lower() not in text.lower():
                expansions.append(Expansion(short, long))
                text = re.sub(pattern, _with_long_form(short, long), text)
        return text, expansions, also

    def read(self, question: str, previous: str | None = None) -> UnderstoodQuestion:
        """``previous``: the conversation's last question as it was understood; a
        question that does not name its own subject is read with that one's."""
        self._documents.refresh()
        vocabulary = self._documents.vocabulary
        text = question.strip()
        follows = ""
        if previous and self._follow_ups is not None:
            whole = self._follow_ups.read(text, previous)
            if whole is not None:
                text, follows = whole, previous
        expanded, expansions, also = self._expand(text, vocabulary)
        corrector = SpellingCorrector(vocabulary, self._language)
        read_as, corrections = corrector.correct(expanded)
        focus, story = focus_of(read_as)
        qualifiers = qualifiers_of(read_as)
        search_text = focus
        if story:
            zipf = english_frequency()
            kept = dict.fromkeys(
                w
                for sentence in story
                for w in re.findall(r"[A-Za-z][\w.-]*", sentence)
                if _IDENTIFIER.fullmatch(w) or (len(w) > 3 and zipf(w.lower()) < DOMAIN_WORD)
            )
            focus_words = set(focus.lower().split())
            extra = [w for w in kept if w.lower() not in focus_words]
            search_text = " ".join([focus, *extra])
        measured = [f"{name} {value:g}" for name, value in qualifiers.measures.items()]
        measured = [m for m in measured if m.lower() not in search_text.lower()]
        if measured:
            search_text = f"{search_text} {' '.join(measured)}"
        meanings = [m for m in dict.fromkeys(also) if m.lower() not in search_text.lower()]
        if meanings:
            search_text = f"{search_text} ({'; '.join(meanings)})"
        return UnderstoodQuestion(
            asked=question,
            read_as=read_as,
            focus=focus,
            search_text=search_text,
            parts=tuple(parts_of(focus)),
            qualifiers=qualifiers,
            asking=asking_of(read_as),
            topic=_topic(read_as, focus, story),
            corrections=tuple(corrections),
            expansions=tuple(expansions),
            follows=follows,
        )
