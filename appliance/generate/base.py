"""The generator interface: passages in, cited sentences out (plus the raw output,
which goes to the audit trail whatever happens to the sentences afterwards)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from appliance.records import AnswerSentence, Chunk


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


class Generator(Protocol):
    name: str

    def generate(self, question: str, passages: list[ContextPassage]) -> GeneratedAnswer: ...

    def close(self) -> None:
        """Release what the generator holds (a connection, a server it started)."""
