"""The answer generator's training examples, built from the real public training data:
every answer follows the product's schema, every quote is an exact span of the passage
it cites, refusals and yes/no decisions are there, and no evaluation question leaks in."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import jsonschema
import pytest

from appliance.generate.base import ContextPassage
from appliance.generate.prompt import RULES, answer_schema
from appliance.records import Chunk, DocumentMetadata
from appliance.training.generator_examples import (
    Example,
    Source,
    build_examples,
    clip,
    excluded_questions,
    medquad_sources,
    normalised,
    pool_sources,
    pubmedqa_sources,
)
from appliance.training.generator_examples import example as make_example

DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
GOLDEN = Path(__file__).resolve().parents[3] / "appliance" / "sample_corpus"
EVALUATION = [
    GOLDEN / "golden.jsonl",
    GOLDEN / "golden-graph.jsonl",
    *sorted((DATA / "clinical").glob("*.jsonl")),
]
_PASSAGE = re.compile(
    r"<<PASSAGE (\w+) number=\d+ chunk_id=(\S+) [^>]*>>\n(.*?)\n<<END PASSAGE \1>>", re.S
)

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data")


@pytest.fixture(scope="module")
def examples() -> list[Example]:
    rng = random.Random(5)
    sources = rng.sample(
        list(medquad_sources(DATA / "corpus" / "medquad_nih_patient_info.jsonl", rng)), 300
    )
    sources += list(pubmedqa_sources(DATA / "pubmedqa" / "pqa_l.jsonl", rng, skip=350))[:150]
    for pool in sorted((DATA / "rerank_train").glob("*.jsonl")):
        sources += list(pool_sources(pool, rng))[:100]
    return build_examples(
        sources, exclude=excluded_questions(EVALUATION), refusal_share=0.2, rng=rng
    )


def passages_of(example: Example) -> dict[str, str]:
    return {
        chunk_id: text
        for _nonce, chunk_id, text in _PASSAGE.findall(example.messages[1]["content"])
    }


def context_of(example: Example) -> list[ContextPassage]:
    """The passages of an example's prompt, as the product gives them to a model."""
    return [
        ContextPassage(number, Chunk(chunk_id, "d", number, text, 0, len(text), ("T",), None,
                                     "0" * 64, DocumentMetadata(doc_id="d", title="T")))
        for number, (chunk_id, text) in enumerate(passages_of(example).items(), start=1)
    ]  # fmt: skip


def test_every_answer_follows_the_schema_and_quotes_its_passage_exactly(
    examples: list[Example],
) -> None:
    assert len(examples) > 500
    for example in examples:
        assert example.messages[0] == {"role": "system", "content": RULES}
        passages = passages_of(example)
        assert 2 <= len(passages) <= 4
        answer = json.loads(example.completion)
        # what decoding would allow: each quote a whole sentence or row of its passage
        jsonschema.validate(answer, answer_schema(context_of(example)))
        for sentence in answer["sentences"]:
            for citation in sentence["citations"]:
                assert citation["quote"] in passages[citation["chunk_id"]]


def test_refusals_and_decisions_are_taught(examples: list[Example]) -> None:
    answers = [json.loads(e.completion) for e in examples]
    refusals = [a for a in answers if a["not_found"]]
    assert 0.1 < len(refusals) / len(answers) < 0.3
    assert all(a["sentences"] == [] and a["decision"] == "none" for a in refusals)
    decisions = {a["decision"] for a in answers if not a["not_found"]}
    assert {"yes", "no", "none"} <= decisions
    # a refusal's passages are other questions': its own answer is not among them
    origins = {e.origin for e in examples}
    assert {"medquad", "pubmedqa"} <= origins


def test_a_medquad_answer_is_chosen_beside_another_section_of_its_own_page(
    examples: list[Example],
) -> None:
    """The hard distractor: same disease, another question, so the topic alone does not
    pick the passage that answers."""
    answered = [e for e in examples if e.origin == "medquad" and e.kind == "answer"]
    titles = [re.findall(r"document='([^']*)'", e.messages[1]["content"]) for e in answered]
    same_page = [t for t in titles if len(t) != len(set(t))]
    assert answered and len(same_page) / len(answered) > 0.8


def test_no_evaluation_question_is_trained_on(examples: list[Example]) -> None:
    evaluation = excluded_questions(EVALUATION)
    assert len(evaluation) > 100
    asked = {normalised(e.messages[1]["content"].rsplit("Question: ", 1)[1]) for e in examples}
    assert not asked & evaluation
    # and the exclusion is what keeps them out: an evaluation question offered is dropped
    golden = json.loads((GOLDEN / "golden.jsonl").read_text().splitlines()[0])["question"]
    offered = Source(
        "test", golden, (("A", "Some text here."), ("B", "Other text.")), ((0, "Some text here."),)
    )
    kept = build_examples([offered], exclude=evaluation, refusal_share=0.0, rng=random.Random(1))
    assert kept == []
    assert build_examples([offered], exclude=set(), refusal_share=0.0, rng=random.Random(1))


def test_clipping_keeps_whole_sentences_as_a_prefix() -> None:
    text = "First sentence here. Second one is longer than the first. Third. " * 20
    clipped = clip(text, 120)
    assert text.startswith(clipped) and clipped.endswith(".") and len(clipped) <= 120
    assert clip("One enormous sentence without an end " * 30, 100)  # never empty


def test_the_prompt_is_the_products_own() -> None:
    made = make_example(
        Source(
            "test", "Is it safe?", (("Doc", "It is safe. Really."),), ((0, "It is safe."),), "yes"
        )
    )
    assert made is not None
    # a quote the product would not let a model write (not a whole sentence) teaches nothing
    assert make_example(Source("test", "Is it?", (("Doc", "It is safe."),), ((0, "safe"),))) is None
    assert made.messages[1]["content"].endswith("Question: Is it safe?")
    assert json.loads(made.completion)["decision"] == "yes"


def test_examples_can_carry_as_many_passages_as_serving_gives() -> None:
    rng = random.Random(3)
    medquad = DATA / "corpus" / "medquad_nih_patient_info.jsonl"
    five = [s for _, s in zip(range(40), medquad_sources(medquad, rng, passages=5), strict=False)]
    assert {len(s.passages) for s in five} == {5}
    pubmedqa = DATA / "pubmedqa" / "pqa_l.jsonl"
    papers = [s for _, s in zip(range(40), pubmedqa_sources(pubmedqa, rng, 350, 5), strict=False)]
    assert max(len(s.passages) for s in papers) > 3  # the contexts that three would cut
    pool = sorted((DATA / "rerank_train").glob("*.jsonl"))[0]
    pooled = [s for _, s in zip(range(40), pool_sources(pool, rng, passages=5), strict=False)]
    assert {len(s.passages) for s in pooled} == {5}
    made = build_examples(five, exclude=set(), refusal_share=0.5, rng=rng)
    refusals = [e for e in made if e.kind == "refusal"]
    assert refusals and all(len(passages_of(e)) == 5 for e in refusals)


def test_a_medquad_answer_does_not_always_open_its_passage(examples: list[Example]) -> None:
    """Served chunks seldom open with the answer; about half the answer passages begin
    with the end of the section before them, and the claims still quote the answer."""
    answered = [e for e in examples if e.origin == "medquad" and e.kind == "answer"]
    opening = []
    for example in answered:
        (first, *_) = json.loads(example.completion)["sentences"]
        (citation,) = first["citations"]
        opening.append(passages_of(example)[citation["chunk_id"]].startswith(citation["quote"]))
    assert 0.3 < opening.count(False) / len(opening) < 0.7
