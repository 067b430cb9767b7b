"""A question as a ward writes it: often a story that ends in a question. The story's
sentences hold the patient's facts (kept as qualifiers); the question sentence says what
is asked. A question can also ask two things at once ("..., and what is the maximum?"):
each part must be answered, or the answer says which is not."""

from __future__ import annotations

import re

from appliance.understand.spelling import english_frequency

_SENTENCE = re.compile(r"(?<=[.?!])\s+(?=[A-Za-z\"'(])")
_PART_BREAK = re.compile(
    r"\?\s+|[,;]?\s+(?:and|or|also|plus)\s+(?=(?:what|which|who|when|where|how|is|are|do|does|"
    r"did|can|could|should|must|will|would)\b)|\s+-\s+(?=(?:what|which|who|when|where|how|is|"
    r"are|do|does|can|should|warm|cold)\b)",
    re.IGNORECASE,
)
NARRATIVE_WORDS = 25
"""A text of more sentences than one and more words than this is read as a story."""


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


CONTENT_WORD = 5.0
"""A word rarer than this in English (Zipf) says what a sentence is about; "What
should I tell her?" has none."""


def says_something(sentence: str) -> bool:
    zipf = english_frequency()
    return any(len(w) > 3 and zipf(w.lower()) < CONTENT_WORD for w in sentence.split())


_REPORTED = re.compile(
    r"^.{0,60}?\b(?:wants? to know|would like to know|needs? to know|asks?|is asking|asked|"
    r"wonders?|is wondering)\s+(?=(?:what|how|when|whether|if|which|who|why|where)\b)",
    re.IGNORECASE,
)


def unframed(sentence: str) -> str:
    """A reported question without who asks it: "The F1 wants to know what the care plan
    says" asks "what the care plan says"."""
    return _REPORTED.sub("", sentence)


def _asking(found: list[str]) -> list[str]:
    return [s for s in found if s.endswith("?")] or found[-1:]


def focus_of(text: str) -> tuple[str, list[str]]:
    """The sentences that ask (those ending in "?", else the last), each with the
    sentence before it when it alone says nothing ("... how often she needs turning.
    What should I tell her?"); and the rest. A short question is its own focus."""
    found = sentences(text)
    if len(found) < 2 or len(text.split()) <= NARRATIVE_WORDS:
        return text.strip(), []
    chosen = {i for i, s in enumerate(found) if s.endswith("?")} or {len(found) - 1}
    for i in sorted(chosen):
        if i > 0 and not says_something(found[i]):
            chosen.add(i - 1)
    focus = [found[i] for i in sorted(chosen)]
    return " ".join(focus), [found[i] for i in range(len(found)) if i not in chosen]


def asking_of(text: str) -> str:
    """The sentences that ask, in any question long or short: those ending in "?",
    else the last one ("Patient had a rash with X. Can she have Y?" asks about Y)."""
    found = sentences(text)
    return " ".join(_asking(found)) if found else text.strip()


def parts_of(question: str) -> list[str]:
    """The questions a question asks: one, or several joined by "and what ...", "?"."""
    pieces = [unframed(p.strip(" ,;?-")) for p in _PART_BREAK.split(question.strip())]
    pieces = [p for p in pieces if len(p.split()) >= 2]
    return pieces if len(pieces) > 1 else [question.strip()]
