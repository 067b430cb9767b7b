"""What a generator may quote from a passage: its sentences and its table rows, each an
exact substring of the chunk. The extractive generator chooses among them; an LLM
generator's structured output is held to them, so that every quote it writes is a span
the verifier finds character for character.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from appliance.generate.base import ContextPassage, under_heading

# A sentence ends at . ! ? (or a line break) followed by space and a capital, digit or bullet.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])|\n+")
_REFERS_BACK = re.compile(r"(?:It|This|These|They|That|Those|Its|Their)\b")
"""A sentence that opens so means nothing without the one before it."""
TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")


def sentences_of(text: str) -> list[str]:
    """The sentences of a passage, each an exact substring of it."""
    pieces = [p.strip(" -*\t") for p in _SENTENCE_END.split(text)]
    return [p for p in pieces if len(p.split()) >= 3 and p in text]


def cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


@dataclass(frozen=True, slots=True)
class QuoteCandidate:
    """A sentence or table row that may be quoted, and the text it is judged by."""

    quote: str
    """An exact substring of the chunk."""
    judged_text: str
    """The quote in its context: its section heading, and for a row its column names."""
    passage: ContextPassage
    header: str | None = None
    """For a table row, the table's header row when the chunk holds it (quoted first)."""
    columns: str = ""
    """For a table row, its table's header row, in this chunk or repeated as context."""
    refers_back: bool = False
    """A sentence that opens with "It", "This", ...: it means nothing without the one
    before it, so it is never judged alone."""

    @property
    def alone(self) -> str:
        """The text judged without its heading: the quote, or for a sentence that
        refers back, the quote after the sentence it refers to."""
        return self.judged_text if self.refers_back else self.quote

    @property
    def position(self) -> int:
        return self.passage.chunk.text.find(self.quote)

    @property
    def table(self) -> tuple[str, str] | None:
        """Which table of which chunk the row is in (None for a sentence)."""
        return (self.passage.chunk.chunk_id, self.columns) if self.columns else None


def candidates_of(passage: ContextPassage) -> Iterator[QuoteCandidate]:
    """Every sentence and table row of a passage; a table's header and separator rows
    say nothing alone and are not candidates."""
    chunk = passage.chunk
    lines = chunk.text.split("\n")
    prose: list[str] = []
    header: str | None = None
    repeated = chunk.context.strip().split("\n")[0]
    columns = repeated if repeated.startswith("|") else ""
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("|"):
            prose.append(line)
            header = None
            continue
        following = lines[number + 1].strip() if number + 1 < len(lines) else ""
        if TABLE_SEPARATOR.match(following):
            header = columns = stripped
            continue
        if TABLE_SEPARATOR.match(stripped):
            continue
        values = cells(stripped)
        names = cells(columns) if columns else [""] * len(values)
        described = "; ".join(
            f"{name} {value}" if name else value for name, value in zip(names, values, strict=False)
        )
        yield QuoteCandidate(stripped, under_heading(described, chunk), passage, header, columns)
    previous = ""
    for sentence in sentences_of("\n".join(prose)):  # never spans a line: a chunk substring
        # "It is not used when ..." says nothing alone: a reader takes "it" from the
        # sentence before, and so is it judged.
        refers_back = bool(previous and _REFERS_BACK.match(sentence))
        judged = f"{previous} {sentence}" if refers_back else sentence
        yield QuoteCandidate(
            sentence, under_heading(judged, chunk), passage, refers_back=refers_back
        )
        previous = sentence


def quotable(passage: ContextPassage) -> list[str]:
    """The distinct quotes a passage offers, in the order they are written."""
    return list(dict.fromkeys(c.quote for c in candidates_of(passage)))
