"""Locating a cited quote in its chunk, and from there in its document."""

from __future__ import annotations

import re
from dataclasses import dataclass

from appliance.records import Chunk

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class LocatedQuote:
    start: int
    end: int
    """Offsets in the document's normalised text: what the UI highlights."""
    text: str
    """The document's own characters at those offsets."""


def locate(quote: str, chunk: Chunk) -> LocatedQuote | None:
    """Where ``quote`` occurs in ``chunk`` (whitespace runs compare equal), or None."""
    words = quote.split()
    if not words:
        return None
    pattern = r"\s+".join(re.escape(word) for word in words)
    match = re.search(pattern, chunk.text)
    if match is None:
        return None
    return LocatedQuote(chunk.start + match.start(), chunk.start + match.end(), match.group(0))


def normalise(text: str) -> str:
    return _SPACE.sub(" ", text).strip()
