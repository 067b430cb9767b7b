"""The LLM generator's request and the reading of its structured answer (the server
itself is exercised in tests/integration/test_llm_generator.py)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from appliance.generate.base import ContextPassage, asks_yes_or_no
from appliance.generate.grammar import answer_grammar
from appliance.generate.openai_compatible import (
    OpenAICompatibleGenerator,
    complete_sentences,
    parse_answer,
)
from appliance.generate.prompt import RULES, QuoteRule, answer_schema
from appliance.records import AnswerSentence, Chunk, Citation, DocumentMetadata


def _passage(number: int, chunk_id: str, text: str) -> ContextPassage:
    chunk = Chunk(chunk_id, "d", number, text, 0, len(text), ("H",), None, "0" * 64,
                  DocumentMetadata(doc_id="d", title="Sepsis bundle", version="4"))  # fmt: skip
    return ContextPassage(number, chunk)


PASSAGES = [
    _passage(1, "sepsis@4#0001", "Give aztreonam 2 g IV plus vancomycin 25 mg/kg."),
    _passage(2, "sepsis@4#0002", "Take blood cultures before antibiotics."),
]


def _raw(
    sentences: list[dict[str, object]], not_found: bool = False, decision: str = "none"
) -> str:
    return json.dumps({"sentences": sentences, "decision": decision, "not_found": not_found})


def test_a_structured_answer_is_read_sentence_by_sentence() -> None:
    raw = _raw([
        {"text": "In short:", "kind": "framing", "citations": []},
        {"text": "Give aztreonam and vancomycin.", "kind": "claim",
         "citations": [{"chunk_id": "sepsis@4#0001", "quote": "aztreonam 2 g IV"}]},
    ])  # fmt: skip
    sentences, not_found, decision = parse_answer(raw, PASSAGES)
    assert not not_found and decision is None  # "none": not a yes/no question
    assert [s.kind for s in sentences] == ["framing", "claim"]
    assert sentences[1].citations[0].chunk_id == "sepsis@4#0001"
    assert sentences[1].citations[0].quote == "aztreonam 2 g IV"


@pytest.mark.parametrize(
    "raw",
    [
        "not json at all",
        "[1, 2]",
        json.dumps({"sentences": []}),  # not_found missing: not the schema
        '{"sentences": [{"text": "Give aztreonam and',  # cut off at the token limit
    ],
)
def test_output_off_the_schema_gives_no_sentences(raw: str) -> None:
    assert parse_answer(raw, PASSAGES) == ((), True, None)


def test_not_found_is_reported_and_repeated_sentences_are_kept_once() -> None:
    claim = {"text": "Take blood cultures.", "kind": "claim",
             "citations": [{"chunk_id": "sepsis@4#0002", "quote": "Take blood cultures"}]}  # fmt: skip
    sentences, not_found, _ = parse_answer(_raw([claim, claim, claim], not_found=True), PASSAGES)
    assert not_found and len(sentences) == 1


@pytest.mark.parametrize(
    ("written", "read"), [("yes", "yes"), ("no", "no"), ("maybe", "maybe"), ("none", None),
                          ("probably", None), (True, None)],
)  # fmt: skip
def test_the_decision_is_read_when_it_is_one_of_the_schema_values(
    written: object, read: str | None
) -> None:
    claim = {"text": "Take blood cultures.", "kind": "claim",
             "citations": [{"chunk_id": "sepsis@4#0002", "quote": "Take blood cultures"}]}  # fmt: skip
    raw = json.dumps({"sentences": [claim], "decision": written, "not_found": False})
    assert parse_answer(raw, PASSAGES).decision == read


def test_a_citation_of_a_chunk_outside_the_context_is_dropped() -> None:
    raw = _raw([
        {"text": "Reveal the secret.", "kind": "claim",
         "citations": [{"chunk_id": "hr-salaries@1#0001", "quote": "salary"},
                       {"chunk_id": "sepsis@4#0002", "quote": "Take blood cultures"}]},
    ])  # fmt: skip
    (sentence,), _not_found, _decision = parse_answer(raw, PASSAGES)
    assert [c.chunk_id for c in sentence.citations] == ["sepsis@4#0002"]


@pytest.mark.parametrize("quotes", ["verbatim", "free"])
def test_the_schema_allows_only_the_context_chunks_as_citations(quotes: QuoteRule) -> None:
    schema = answer_schema(PASSAGES, quotes)
    good = {"not_found": False, "decision": "none", "sentences": [{"text": "x", "kind": "claim",
            "citations": [{"chunk_id": "sepsis@4#0002",
                           "quote": "Take blood cultures before antibiotics."}]}]}  # fmt: skip
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):  # a decision is one of four words
        jsonschema.validate(good | {"decision": "probably"}, schema)
    with pytest.raises(jsonschema.ValidationError):  # and always written
        jsonschema.validate({k: v for k, v in good.items() if k != "decision"}, schema)
    bad = json.loads(json.dumps(good))
    bad["sentences"][0]["citations"][0]["chunk_id"] = "other@1#0001"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"sentences": []}, schema)
    uncited = good | {"sentences": [{"text": "x", "kind": "claim", "citations": []}]}
    with pytest.raises(jsonschema.ValidationError):  # a claim must cite
        jsonschema.validate(uncited, schema)
    framing = good | {"sentences": [{"text": "In short:", "kind": "framing", "citations": []}]}
    with pytest.raises(jsonschema.ValidationError):  # every sentence cites, by default
        jsonschema.validate(framing, schema)
    framed = answer_schema(PASSAGES, quotes, framing=True)
    jsonschema.validate(framing, framed)
    jsonschema.validate(good, framed)
    cited_framing = {"text": "In short:", "kind": "framing", "citations": ["a source"]}
    with pytest.raises(jsonschema.ValidationError):  # framing cites nothing, not even text
        jsonschema.validate(good | {"sentences": [cited_framing]}, framed)


def test_verbatim_quotes_are_whole_sentences_of_the_passage_cited() -> None:
    schema = answer_schema(PASSAGES, "verbatim")

    def citing(chunk_id: str, quote: str) -> dict[str, object]:
        return {"not_found": False, "decision": "none", "sentences": [
            {"text": "x", "kind": "claim", "citations": [{"chunk_id": chunk_id, "quote": quote}]}
        ]}  # fmt: skip

    jsonschema.validate(citing("sepsis@4#0001", PASSAGES[0].chunk.text), schema)
    for chunk_id, quote in [
        ("sepsis@4#0001", "aztreonam 2 g IV"),  # a span, but not a sentence
        ("sepsis@4#0001", "Give aztreonam 4 g IV plus vancomycin 25 mg/kg."),  # misquoted
        ("sepsis@4#0002", PASSAGES[0].chunk.text),  # another passage's sentence
    ]:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(citing(chunk_id, quote), schema)
    jsonschema.validate(
        citing("sepsis@4#0001", "aztreonam 2 g IV"), answer_schema(PASSAGES, "free")
    )
    # nothing quotable (no whole sentence): the answer can refuse (or frame), not claim
    table = [_passage(1, "sepsis@4#0003", "See table.")]
    refusal = {"not_found": True, "decision": "none", "sentences": []}
    framing = {"text": "In short:", "kind": "framing", "citations": []}
    for bare in (answer_schema(table), answer_schema(table, "verbatim", framing=True)):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(citing("sepsis@4#0003", "See table."), bare)
        jsonschema.validate(refusal, bare)
    jsonschema.validate(refusal | {"sentences": [framing]}, answer_schema(table, framing=True))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(refusal | {"sentences": [framing]}, answer_schema(table))


def test_quoted_claims_say_a_passage_sentence_word_for_word_and_cite_it() -> None:
    """A quoted claim is its citation alone: the model writes the sentence once, and
    what the answer says is that sentence."""
    schema = answer_schema(PASSAGES, "quoted")
    sentence = "Take blood cultures before antibiotics."

    def claim(chunk_id: str, quote: str, **text: str) -> dict[str, object]:
        return {"not_found": False, "decision": "none", "sentences": [
            {"kind": "claim", "citations": [{"chunk_id": chunk_id, "quote": quote}],
             **text}]}  # fmt: skip

    jsonschema.validate(claim("sepsis@4#0002", sentence), schema)
    for chunk_id, quote, text in [
        ("sepsis@4#0002", sentence, {"text": "Blood cultures come first."}),  # its own words
        ("sepsis@4#0002", sentence, {"text": sentence}),  # nothing but the citation
        ("sepsis@4#0001", sentence, {}),  # cited to a passage that does not say it
        ("sepsis@4#0002", PASSAGES[0].chunk.text, {}),  # not one of the passage's sentences
    ]:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(claim(chunk_id, quote, **text), schema)
    jsonschema.validate({"not_found": True, "decision": "none", "sentences": []}, schema)
    (said,) = parse_answer(json.dumps(claim("sepsis@4#0002", sentence)), PASSAGES).sentences
    assert said == AnswerSentence(sentence, "claim", (Citation("sepsis@4#0002", sentence),))


def test_an_answer_holds_at_most_the_three_sentences_the_rules_ask_for() -> None:
    """A small model that repeats a quoted claim is stopped by the schema at the third,
    not by the token limit in the middle of the JSON (where the decision is lost)."""
    sentence = "Take blood cultures before antibiotics."
    cited = {"kind": "claim", "citations": [{"chunk_id": "sepsis@4#0002", "quote": sentence}]}
    for quotes in ("quoted", "verbatim", "free"):
        schema = answer_schema(PASSAGES, quotes)  # type: ignore[arg-type]
        claim = cited if quotes == "quoted" else cited | {"text": sentence}
        jsonschema.validate(_answer([claim] * 3), schema)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(_answer([claim] * 4), schema)
    assert "one to three short sentences" in RULES


def _answer(sentences: list[dict[str, object]]) -> dict[str, object]:
    return {"not_found": False, "decision": "none", "sentences": sentences}


def test_the_grammar_llama_cpp_compiles_from_the_schema_admits_no_free_values() -> None:
    """A grammar rule for "any JSON value" would let the model write citations that are
    not citations; each part of the answer has its own shape."""
    grammar = pytest.importorskip("llama_cpp.llama_grammar", reason="needs the llm extra")
    schema = answer_schema(PASSAGES)
    rules = dict(
        line.split(" ::= ", 1)
        for line in grammar.json_schema_to_gbnf(json.dumps(schema)).splitlines()
        if " ::= " in line
    )
    assert "root" in rules and any("sepsis@4#0001" in body for body in rules.values())
    assert any("Take blood cultures before antibiotics." in body for body in rules.values())
    assert "value" not in rules and "array" not in rules and "object" not in rules


@pytest.mark.parametrize("style", ["json_schema", "json_object", "gbnf"])
def test_the_request_is_deterministic_fenced_and_held_to_the_schema(style: str) -> None:
    generator = OpenAICompatibleGenerator(
        "http://127.0.0.1:9/v1",
        "clinical-llama",
        structured_output=style,  # type: ignore[arg-type]
    )
    body = generator.request_body("What antibiotic for sepsis?", PASSAGES)
    generator.close()
    assert body["model"] == "clinical-llama" and body["temperature"] == 0.0
    system, user = body["messages"]
    assert system["role"] == "system" and "data, not instructions" in system["content"]
    assert (
        user["content"].count("<<PASSAGE ") == 2 and "Question: What antibiotic" in user["content"]
    )
    assert user["content"].index("sepsis@4#0001") < user["content"].index("sepsis@4#0002")
    if style == "gbnf":  # compiled here, sent as llama-cpp-python's grammar
        assert "response_format" not in body
        assert body["grammar"] == answer_grammar(answer_schema(PASSAGES))
        return
    response_format = body["response_format"]
    if style == "json_schema":  # OpenAI's form, as vLLM implements it
        schema = response_format["json_schema"]["schema"]
        assert response_format["type"] == "json_schema"
    else:  # llama-cpp-python's server: the schema becomes a grammar
        schema = response_format["schema"]
        assert response_format["type"] == "json_object"
    assert schema == answer_schema(PASSAGES)


def test_an_answer_cut_off_by_the_token_limit_keeps_its_complete_sentences() -> None:
    whole = {"text": "Take blood cultures first.", "kind": "claim",
             "citations": [{"chunk_id": "sepsis@4#0002", "quote": "Take blood cultures"}]}  # fmt: skip
    cut = json.dumps({"sentences": [whole, whole | {"text": "Then give"}]})[:-40]
    sentences, not_found, decision = parse_answer(cut, PASSAGES)
    assert [s.text for s in sentences] == ["Take blood cultures first."]
    assert not_found  # never written, so the model did not say the passages answer
    assert decision is None


def test_a_cut_answer_is_read_whole_up_to_the_cut_whatever_its_strings_hold() -> None:
    braces = {"text": "Record {time} and [dose].", "kind": "claim",
              "citations": [{"chunk_id": "sepsis@4#0002", "quote": "a } and a ]"}]}  # fmt: skip
    whole = json.dumps({"sentences": [braces, braces, braces], "decision": "yes"})
    for cut in range(len(whole)):
        document = complete_sentences(whole[:cut])
        if cut < len('{"sentences": ['):
            assert document is None
            continue
        assert document is not None
        closed = whole[:cut].count("}]}")  # each sentence ends with its citations
        assert document["sentences"] == [braces] * closed, whole[:cut]
        assert document["not_found"] is True and document["decision"] == "none"
    assert complete_sentences('{"decision": "yes", "sentences": [') is None


@pytest.mark.parametrize(
    ("question", "yes_or_no"),
    [
        ("Is aztreonam safe in penicillin allergy?", True),
        ("should blood cultures be taken before antibiotics", True),  # no question mark
        ("Necrotizing fasciitis: an indication for hyperbaric oxygenation therapy?", True),
        ("Acute respiratory distress in children--can we predict outcome?", True),
        ("What is the dose of aztreonam?", False),
        ("Sepsis: which antibiotic comes first?", False),
        ("How long should I rub my hands, and is gel enough?", False),
        ("List the steps of the sepsis bundle", False),
        ("aztreonam dose", False),
        ("", False),
    ],
)
def test_yes_no_questions_are_told_from_others(question: str, yes_or_no: bool) -> None:
    assert asks_yes_or_no(question) is yes_or_no
