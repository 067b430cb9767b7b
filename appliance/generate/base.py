"""The generator interface: passages in, cited sentences out (plus the raw output,
which goes to the audit trail whatever happens to the sentences afterwards)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from appliance.records import AnswerSentence, Chunk

ShortAnswer = Literal["yes", "no", "maybe"]
"""The short answer to a yes/no question, as the generator read its cited sentences."""
SHORT_ANSWERS: tuple[ShortAnswer, ...] = get_args(ShortAnswer)


class GeneratorUnavailable(RuntimeError):
    """The generator cannot answer now (an LLM server unreachable or in error): an
    error the asker sees, never a refusal, since the documents may well answer."""


_CLAUSE = re.compile(r"\s*(?:[:;,.]|--|[\u2013\u2014])\s*")
_WH = frozenset(
    ["what", "which", "who", "whom", "whose", "when", "where", "why", "how", "list", "name"]
)
_AUXILIARY = frozenset([
    "is", "are", "was", "were", "am", "do", "does", "did", "can", "could", "should", "would",
    "will", "shall", "may", "might", "must", "has", "have", "had",
])  # fmt: skip


def asks_yes_or_no(question: str) -> bool:
    """Whether a question wants a yes or a no: no clause opens with a wh-word, and it
    ends with a question mark or a clause opens with an auxiliary ("Is aztreonam safe
    ...", "Necrotizing fasciitis: an indication for hyperbaric oxygen?"). A decision a
    generator writes for any other question is not shown."""
    clauses = [c.split() for c in _CLAUSE.split(question.strip().lower()) if c.split()]
    openers = {c[0].strip("\"'(") for c in clauses}
    if not clauses or openers & _WH:
        return False
    return question.rstrip().endswith("?") or bool(openers & _AUXILIARY)


def under_heading(text: str, chunk: Chunk) -> str:
    """A sentence as a reader meets it: after its section's heading ("Treatment of a
    first episode: Give oral vancomycin ..."). A sentence alone often leaves out what
    its section is about; the question usually names it."""
    heading = chunk.heading_path[-1] if len(chunk.heading_path) > 1 else ""
    return f"{heading}: {text}" if heading else text


@dataclass(frozen=True, slots=True)
class ContextPassage:
    """A chunk as given to a generator: numbered in the order it was presented."""

    number: int
    chunk: Chunk


@dataclass(frozen=True, slots=True)
class GeneratedAnswer:
    sentences: tuple[AnswerSentence, ...]
    raw: str
    """What the generator produced, before any verification (kept for the audit)."""
    generator: str
    not_found: bool = False
    """The generator's own view that the passages do not answer. Recorded; the claims it
    wrote anyway are verified like any others, and a refusal follows if none survive."""
    decision: ShortAnswer | None = None
    """For a yes/no question, the generator's short answer (None when it gave none)."""


class Generator(Protocol):
    name: str

    def generate(
        self, question: str, passages: list[ContextPassage], *, search_text: str | None = None
    ) -> GeneratedAnswer:
        """``question``: as the reader understood it, in the asker's words (spelling
        corrected, abbreviations spelled out, a follow-up made whole): what an LLM is
        trained to read. ``search_text``: the same with the words the search added (a
        story's rare words, measured values, meanings), for a generator that scores
        passages against it."""
        ...

    def close(self) -> None:
        """Release what the generator holds (a connection, a server it started)."""
