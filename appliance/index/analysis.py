"""The text analysis every lexical engine must agree on, in one place: an engine builds
its analysers and its mapping from these, so that a question finds the same chunks, and
the coverage gate counts the same terms, whichever engine holds them.

- Text fields, each with its default weight: ``title``, ``headings``, ``body``.
- Words: split on anything not a letter or digit, dropped when longer than
  ``MAX_TOKEN_CHARS``, lowercased, folded to ASCII and stemmed with the English (Porter 2,
  Snowball) stemmer. Content terms also drop ``stop_words()`` (spaCy's English list).
- Identifiers (ICD codes, clause numbers, drug codes) are one token each, whole and
  lowercased, so that E11.9 never matches E11.65: ``IDENTIFIER_PATTERN``; a token counts
  as an identifier when it holds a digit.
- Query syntax is data: ``QUERY_SYNTAX`` characters become spaces, and AND/OR/NOT are
  lowercased into ordinary words.
"""

from __future__ import annotations

import re

TEXT_FIELDS = ("title", "headings", "body")
MAX_TOKEN_CHARS = 40
STEMMER_LANGUAGE = "english"
IDENTIFIER_PATTERN = r"[A-Za-z0-9]+(?:[.\-/][A-Za-z0-9]+)*(?:\([A-Za-z0-9]{1,3}\))*"
QUERY_SYNTAX = re.compile(r"[+\-^`:{}\"\[\]()~!\\*<>=']")
HAS_DIGIT = re.compile(r"\d")


def stop_words() -> list[str]:
    """The function words content terms leave out (spaCy's English list, sorted)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return sorted(STOP_WORDS)


def query_words(query: str) -> list[str]:
    """The words of a question with its query syntax read as data."""
    return QUERY_SYNTAX.sub(" ", query).lower().split()
