"""The question-coverage gate on a real tantivy index: rare words weigh most, clinical
abbreviations count as present, and documents the asker may not read weigh nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from appliance.index.filters import AnyOf
from appliance.index.tantivy_lexical import TantivyLexicalIndex
from appliance.verify.coverage import question_coverage, words_for
from tests.contract.test_store_contract import make_chunk

DISCHARGE = make_chunk(
    "discharge", 0, "The discharge summary is sent to the general practitioner within 24 hours."
)
CDIFF = make_chunk(
    "cdiff", 0, "Severe Clostridioides difficile infection: white cell count above 15."
)
FORMULARY = make_chunk("formulary", 0, "Oncology drugs are prescribed by the oncology team only.")
SECRET = make_chunk(
    "trial-protocol", 0, "Pembrolizumab 200 mg every 3 weeks.", sensitivity="restricted"
)


@pytest.fixture
def index(tmp_path: Path) -> TantivyLexicalIndex:
    lexical = TantivyLexicalIndex(tmp_path / "lexical")
    lexical.upsert([DISCHARGE, CDIFF, FORMULARY, SECRET])
    lexical.commit()
    return lexical


def test_a_question_about_something_the_passages_never_name_is_not_covered(
    index: TantivyLexicalIndex,
) -> None:
    found = question_coverage(
        "What is the dose of pembrolizumab for melanoma?", [FORMULARY.text], index, None
    )
    assert found.coverage < 0.5
    assert set(found.missing) == {"pembrolizumab", "melanoma", "dose"}
    assert words_for("What is the dose of pembrolizumab?", found.missing, index) == [
        "dose",
        "pembrolizumab",
    ]


def test_rarer_words_weigh_more(index: TantivyLexicalIndex) -> None:
    readable = AnyOf("sensitivity", ("internal",))  # pembrolizumab: in no readable chunk
    found = question_coverage("oncology pembrolizumab", [FORMULARY.text], index, readable)
    assert found.weights["pembrolizumab"] > found.weights["oncolog"]
    assert found.missing == ("pembrolizumab",)


def test_abbreviations_and_truncations_count_as_present(index: TantivyLexicalIndex) -> None:
    gp = question_coverage(
        "How soon must the discharge summary reach the GP?", [DISCHARGE.text], index, None
    )
    assert "gp" not in gp.missing and gp.coverage >= 0.5
    diff = question_coverage("What defines severe C. diff infection?", [CDIFF.text], index, None)
    assert "diff" not in diff.missing
    # An acronym must be the initials of the passage's words, not of any words at all.
    other = question_coverage("When is the MRI booked?", [DISCHARGE.text], index, None)
    assert "mri" in other.missing


def test_what_the_asker_may_not_read_weighs_nothing(index: TantivyLexicalIndex) -> None:
    readable = AnyOf("sensitivity", ("internal",))
    frequencies, total = index.document_frequencies(["pembrolizumab", "oncolog"], readable)
    assert frequencies == {"pembrolizumab": 0, "oncolog": 1} and total == 3
    everyone, total_all = index.document_frequencies(["pembrolizumab"], None)
    assert everyone == {"pembrolizumab": 1} and total_all == 4
    # The weights a reader gets are the same whether or not the hidden document exists.
    with_secret = question_coverage("pembrolizumab dose", [FORMULARY.text], index, readable)
    index.delete_documents(["trial-protocol"])
    index.commit()
    without = question_coverage("pembrolizumab dose", [FORMULARY.text], index, readable)
    assert with_secret == without


def test_a_question_of_only_function_words_or_numbers_is_not_judged(
    index: TantivyLexicalIndex,
) -> None:
    assert question_coverage("what is it 24?", [], index, None).coverage == 1.0
