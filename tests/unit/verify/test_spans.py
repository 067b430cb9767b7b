"""Citation checks: locating quotes in chunks, and the lexical fallback verifier."""

from __future__ import annotations

import pytest

from appliance.records import Chunk, DocumentMetadata
from appliance.verify.lexical import LexicalVerifier
from appliance.verify.spans import locate

EVIDENCE = (
    "Give aztreonam 2 g IV plus vancomycin 25 mg/kg within one hour. Do not give ceftriaxone."
)


def _chunk(text: str, start: int = 100) -> Chunk:
    return Chunk("d@1#x", "d", 0, text, start, start + len(text), ("H",), None, "0" * 64,
                 DocumentMetadata(doc_id="d", title="T"))  # fmt: skip


def test_a_quote_is_found_across_whitespace_and_mapped_to_document_offsets() -> None:
    chunk = _chunk("Rub for 20 to\n30 seconds   until dry.")
    found = locate("Rub for 20 to 30 seconds until dry.", chunk)
    assert found is not None and found.start == 100 and found.end == 100 + len(chunk.text)
    assert found.text == chunk.text
    assert locate("Rub for 20 to 40 seconds", chunk) is None
    assert locate("   ", chunk) is None


@pytest.mark.parametrize(
    ("sentence", "entailed"),
    [
        ("Give aztreonam 2 g IV plus vancomycin 25 mg/kg within one hour.", True),
        ("Give aztreonam 4 g IV plus vancomycin 25 mg/kg within one hour.", False),  # number
        ("Give aztreonam 2 g IV plus vancomycin 25 mg/kg within one hour and meropenem.", False),
        ("Give ceftriaxone.", False),  # negation flipped
        ("Do not give ceftriaxone.", True),
    ],
)
def test_the_lexical_fallback_catches_numbers_words_and_negation(
    sentence: str, entailed: bool
) -> None:
    verdict = LexicalVerifier().check(EVIDENCE, sentence)
    assert verdict.entailed is entailed, verdict.reasons
    assert LexicalVerifier().kind == "lexical-fallback"
