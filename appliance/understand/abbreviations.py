"""Abbreviations the documents define themselves: "Variable Rate Intravenous Insulin
Infusion (VRIII)" teaches the reader that VRIII means the long form.

The long form is found with the Schwartz-Hearst algorithm (Schwartz and Hearst, "A
simple algorithm for identifying abbreviation definitions in biomedical text", PSB
2003): walking both strings from the end, every letter of the short form must appear in
order in the words before the parenthesis, the first one at the start of a word. It is
the rule behind scispaCy's AbbreviationDetector, applied here to the documents' text
without a biomedical spaCy model (none is shipped by a package).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_DEFINITION = re.compile(r"((?:[^\s()]+\s+){1,12}?)\(([A-Za-z][A-Za-z0-9&/-]{1,9})\)")


def _best_long_form(short: str, long: str) -> str | None:
    s, position = len(short) - 1, len(long) - 1
    while s >= 0:
        letter = short[s].lower()
        if not letter.isalnum():
            s -= 1
            continue
        while position >= 0 and (
            long[position].lower() != letter
            or (s == 0 and position > 0 and long[position - 1].isalnum())
        ):
            position -= 1
        if position < 0:
            return None
        position -= 1
        s -= 1
    start = long.rfind(" ", 0, position + 1) + 1
    return long[start:].strip()


def defined_abbreviations(texts: Iterable[str]) -> dict[str, str]:
    """Short form to long form, for every "long form (SF)" in the texts whose short form
    has a capital letter and whose long form has at least as many words as it needs."""
    found: dict[str, str] = {}
    for text in texts:
        for match in _DEFINITION.finditer(text):
            words, short = match.group(1).split(), match.group(2)
            if not any(c.isupper() for c in short):
                continue
            window = " ".join(words[-min(len(words), len(short) + 5) :])
            long = _best_long_form(short, window)
            if long and len(long.split()) >= 2 and long.lower() != short.lower():
                found.setdefault(short, long.strip(" ,;:"))
    return found
