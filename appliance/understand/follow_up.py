"""A follow-up read with the previous turn's subject. On a ward the second question of a
conversation rarely names what it is about ("and the maximum?", "what if the BP is
190/100?", "and in children?", "is it safe in pregnancy?"); searched as written, it finds
nothing and is refused. Read with the previous question (as that was understood), it is
a whole question again, and the asker is shown how it was read.

A question that names its own subject is never rewritten, whatever came before it."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from appliance.records import Mention
from appliance.understand.spelling import SPECIFIC, english_frequency

SUBJECT_KINDS = ("drug", "condition", "procedure", "lab")
"""What a question can be about; populations, departments and dates only narrow it."""
THING = "thing"
"""A specific word no vocabulary types (most often a drug it does not list)."""

_CONNECTIVE = re.compile(r"^(?:and|but|also|so|then|ok(?:ay)?|right)\b[\s,]*", re.I)
_CONDITION = re.compile(
    r"^(?:(?:(?:and\s+)?(?:what|how)\s+(?:about\s+)?)?(?:if|in case)|(?:what|how)\s+about\s+when)"
    r"\s+(?P<rest>.+)$",
    re.I,
)
_INSTEAD = re.compile(r"^(?:what|how)\s+about\s+(?P<rest>.+)$", re.I)
_PREPOSITION = re.compile(r"^(?:in|for|with|during|on|after|before|at|under|over)\b", re.I)
_REFERRING = re.compile(r"\b(?:it|its|they|them|their|this|that|these|those)\b", re.I)
_EXPLETIVE_IT = re.compile(r"\bit\b(?:\s+\w+){0,3}\s+to\b", re.I)
_ASKED_PHRASE = re.compile(
    r"^(?P<lead>(?:what|which)(?:\s+(?:is|are|was|were)|'s)\s+)"
    r"(?P<phrase>(?:the|a|an)\s+[\w\s-]+?)"
    r"(?P<tail>\s+(?:of|for|in|with|to|on|after|before)\b.*)$",
    re.I,
)
_QUESTION_WORD = re.compile(
    r"^(?:what|which|how|when|who|where|why|is|are|does|do|can|should|must|may|will)\b", re.I
)
_ASKING = re.compile(r"^(?:what|which)(?:\s+(?:is|are|was|were)|'s)\s+", re.I)
_DETERMINER = re.compile(r"^(?:the|a|an)\s+", re.I)
_WORD = re.compile(r"[A-Za-z][\w.-]*")
_IDENTIFIER = re.compile(r"\b(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[A-Za-z0-9][\w.-]*[A-Za-z0-9]\b")
_DOMAIN_WORD = 4.0
SHORT_FOLLOW_UP_WORDS = 6
"""A question this short that names nothing is read as a follow-up even without "and"."""

ELIDING_MODIFIERS = frozenset(
    """maximum max minimum min usual starting initial loading maintenance first second third
    next last total daily single oral iv intravenous subcutaneous intramuscular topical
    rectal paediatric pediatric adult neonatal renal hepatic higher lower top target
    first-line second-line alternative""".split()  # noqa: SIM905 (a word list reads as words)
)
"""Words that, alone, ask for another one of what the last question asked ("and the
maximum?" after "the starting dose": the maximum dose)."""


@dataclass(frozen=True, slots=True)
class _Entity:
    kind: str
    start: int
    end: int
    text: str


class FollowUpReader:
    """Rewrites a follow-up with the subject of the question before it. ``mentions``
    finds the typed entities a text names (drugs, conditions, populations, ...)."""

    def __init__(self, mentions: Callable[[str], Sequence[Mention]]) -> None:
        self._mentions = mentions

    def read(self, question: str, previous: str) -> str | None:
        """The follow-up as a whole question, or None when it stands on its own."""
        asked = question.strip()
        rest = _CONNECTIVE.sub("", asked).strip()
        connected = rest != asked
        rest = rest.rstrip(" ?.!")
        base = previous.strip().rstrip(" ?.!")
        if not rest or not base:
            return None
        if match := _CONDITION.match(rest):
            return _question(f"{base}, if {match.group('rest')}")
        instead = _INSTEAD.match(rest)
        if instead is not None or _PREPOSITION.match(rest):
            phrase = instead.group("rest") if instead is not None else rest
            return self._instead(phrase, base)
        mentions = self._mentions(rest)
        subjects = [e for e in self._entities(rest) if e.kind in (*SUBJECT_KINDS, THING)]
        named = bool(subjects)
        pronoun = _referring(rest)
        if pronoun is not None and all(e.start > pronoun for e in subjects):
            return self._referred(rest, base)  # nothing before it that it could stand for
        if _names_subject(rest, mentions):
            if not connected or _QUESTION_WORD.match(rest):
                return None
            # "and vancomycin?" in place of the last drug; "and the infusion rate?"
            return self._instead(rest, base) if named else self._elided(rest, base)
        if connected or len(rest.split()) <= SHORT_FOLLOW_UP_WORDS:
            return self._elided(rest, base)
        return None

    def _instead(self, phrase: str, base: str) -> str:
        """ "what about X" / "in X": X in place of the previous question's entity of its
        own kind; else the previous question narrowed by X, or X asked about what the
        previous question was about."""
        bare = _PREPOSITION.sub("", phrase).strip()
        olds = self._entities(base)
        for same in (_same_kind, _alike_kind):
            for new in self._entities(bare):
                for old in olds:
                    if same(old.kind, new.kind):
                        return _question(f"{base[: old.start]}{bare}{base[old.end :]}")
        news = self._entities(bare)
        if _PREPOSITION.match(phrase):
            return _question(f"{base} {phrase}")
        if not news or all(m.kind not in (*SUBJECT_KINDS, THING) for m in news):
            return _question(f"{base} in {phrase}")
        return _question(f"{phrase} for {self._about(base)}")

    def _referred(self, rest: str, base: str) -> str:
        """ "is it safe in pregnancy?": the pronoun read as the previous subject."""
        subject = self._subject(base)
        if subject is None:
            return _question(f"{rest} ({base})")

        def replace(match: re.Match[str]) -> str:
            word = match.group(0).lower()
            return f"{subject}'s" if word in ("its", "their") else subject

        return _question(_REFERRING.sub(replace, rest, count=1))

    def _elided(self, rest: str, base: str) -> str:
        """ "and the maximum?" after "What is the starting dose of X?": the maximum dose
        of X; "and the route?": the route of X."""
        shape = _ASKED_PHRASE.match(base)
        rest = _ASKING.sub("", rest)
        if shape is None:
            return _question(f"{rest} for {self._about(base)}")
        asked_phrase = _DETERMINER.sub("", shape.group("phrase"))
        words = _DETERMINER.sub("", rest).split()
        if all(w.lower() in ELIDING_MODIFIERS for w in words):
            words.append(asked_phrase.split()[-1])
        return f"{shape.group('lead')}the {' '.join(words)}{shape.group('tail')}?"

    def _entities(self, text: str) -> list[_Entity]:
        """The typed entities of a text, and its specific words that no type covers
        (a drug the vocabulary does not list is still what the question is about)."""
        mentions = [
            _Entity(m.kind, m.start, m.end, m.text)
            for m in self._mentions(text)
            if m.kind != "date"
        ]
        zipf = english_frequency()
        for word in _WORD.finditer(text):
            covered = any(m.start <= word.start() < m.end for m in mentions)
            if not covered and len(word.group()) > 3 and zipf(word.group().lower()) < SPECIFIC:
                mentions.append(_Entity(THING, *word.span(), word.group()))
        return sorted(mentions, key=lambda m: m.start)

    def _subject(self, text: str) -> str | None:
        """What a question is about: its first drug or specific word, else its first
        condition, procedure or lab test."""
        entities = self._entities(text)
        for kinds in (("drug", THING), SUBJECT_KINDS):
            for entity in entities:
                if entity.kind in kinds:
                    return entity.text
        return None

    def _about(self, text: str) -> str:
        """Everything a question is about, for a follow-up that only names its aspect."""
        named = [m.text for m in self._entities(text) if m.kind in (*SUBJECT_KINDS, THING)]
        return " ".join(dict.fromkeys(named)) or text


def _same_kind(old: str, new: str) -> bool:
    return old == new or {old, new} == {THING, "drug"}


def _alike_kind(old: str, new: str) -> bool:
    """Things given or measured: glucose is both a drug and a lab test."""
    alike = {THING, "drug", "lab"}
    return old in alike and new in alike


def _question(text: str) -> str:
    return f"{text[0].upper()}{text[1:]}?"


def _names_subject(text: str, mentions: Sequence[Mention]) -> bool:
    """Whether a question names something to be about: an entity, an identifier or a
    word rarer than everyday English that is not a population, department or date."""
    if any(m.kind in SUBJECT_KINDS for m in mentions) or _IDENTIFIER.search(text):
        return True
    narrowing = [(m.start, m.end) for m in mentions]
    zipf = english_frequency()
    return any(
        len(w.group()) > 3
        and w.group().lower() not in ELIDING_MODIFIERS
        and zipf(w.group().lower()) < _DOMAIN_WORD
        and not any(start <= w.start() < end for start, end in narrowing)
        for w in _WORD.finditer(text)
    )


def _referring(text: str) -> int | None:
    """Where a pronoun stands for something said before ("is it safe", "its maximum");
    not the "it" of "is it safe to give X"."""
    match = _REFERRING.search(text)
    if match is None or _EXPLETIVE_IT.search(text):
        return None
    return match.start()
