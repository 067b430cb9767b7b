"""A question as a ward writes it: often a story that ends in a question. The story's
sentences hold the patient's facts (kept as qualifiers); the question sentence says what
is asked. A question can also ask two things at once ("..., and what is the maximum?"):
each part must be answered, or the answer says which is not."""

from __future__ import annotations

import re

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


def focus_of(text: str) -> tuple[str, list[str]]:
    """The sentences that ask (those ending in "?", else the last), and the rest. A
    short question is its own focus."""
    found = sentences(text)
    if len(found) < 2 or len(text.split()) <= NARRATIVE_WORDS:
        return text.strip(), []
    asking = [s for s in found if s.endswith("?")] or found[-1:]
    return " ".join(asking), [s for s in found if s not in asking]


def asking_of(text: str) -> str:
    """The sentences that ask, in any question long or short: those ending in "?",
    else the last one ("Patient had a rash with X. Can she have Y?" asks about Y)."""
    found = sentences(text)
    return " ".join([s for s in found if s.endswith("?")] or found[-1:])


def parts_of(question: str) -> list[str]:
    """The questions a question asks: one, or several joined by "and what ...", "?"."""
    pieces = [p.strip(" ,;?-") for p in _PART_BREAK.split(question.strip())]
    pieces = [p for p in pieces if len(p.split()) >= 2]
    return pieces if len(pieces) > 1 else [question.strip()]
