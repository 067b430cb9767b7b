"""Clinical identifiers must match exactly in the lexical store."""

from pathlib import Path

import pytest

from appliance.index.tantivy_lexical import TantivyLexicalIndex
from tests.contract.test_store_contract import CORPUS, make_chunk


@pytest.fixture
def lexical(tmp_path: Path) -> TantivyLexicalIndex:
    index = TantivyLexicalIndex(tmp_path / "lexical")
    index.upsert(CORPUS)
    index.commit()
    return index


def ids(index: TantivyLexicalIndex, query: str) -> list[str]:
    return [hit.chunk_id for hit in index.search(query, 10)]


def test_icd_code_matches_itself_and_not_its_sibling(lexical: TantivyLexicalIndex) -> None:
    assert ids(lexical, "E11.9") == ["coding@1#0000"]
    assert ids(lexical, "e11.65") == ["coding@1#0001"]


def test_mixed_case_lab_name_matches(lexical: TantivyLexicalIndex) -> None:
    assert ids(lexical, "HbA1c")[0] == "labs@1#0000"


def test_clause_number_with_letter_matches(lexical: TantivyLexicalIndex) -> None:
    assert ids(lexical, "what does 14.2(b) require")[0] == "isolation@1#0000"


@pytest.mark.parametrize(
    ("query", "as_words"),
    [
        ('"penicillin allergy', "penicillin allergy"),
        ("lactate ( [ { cultures", "lactate cultures"),
        ("title:meropenem^3 ~2 sepsis", "title meropenem 3 2 sepsis"),
        ("piperacillin* \\ oral", "piperacillin oral"),
        ("LACTATE AND NOT MEROPENEM", "lactate and not meropenem"),
    ],
)
def test_query_syntax_is_data_never_an_operator(
    lexical: TantivyLexicalIndex, query: str, as_words: str
) -> None:
    """Quotes, brackets, field prefixes, boosts, wildcards and AND/OR/NOT are read as the
    words around them: the same hits as the words alone, and never an error."""
    found = ids(lexical, query)
    assert found and found == ids(lexical, as_words)


@pytest.mark.parametrize("query", ["*", "\\", "( ) [ ]", '"'])
def test_a_query_of_syntax_alone_finds_nothing(lexical: TantivyLexicalIndex, query: str) -> None:
    assert ids(lexical, query) == []


def test_title_matches_are_boosted(tmp_path: Path) -> None:
    index = TantivyLexicalIndex(tmp_path / "boost")
    in_title = make_chunk("warfarin-guide", 0, "Check the INR daily.", title="Warfarin reversal")
    in_body = make_chunk(
        "other",
        0,
        "Warfarin reversal is covered elsewhere; check the INR daily.",
        title="Ward notes",
    )
    index.upsert([in_body, in_title])
    index.commit()
    assert ids(index, "warfarin reversal")[0] == in_title.chunk_id
