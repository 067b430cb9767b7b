from dataclasses import dataclass

import numpy as np
import pytest

from appliance.rerank.chain import chain_selection, entity_links, named_entities, title_links
from benchmarks.rerank_bench.bridge import (
    bridge_scores,
    hybrid_first_stage,
    title_in_question,
)


@dataclass
class P:
    title: str
    text: str


def test_a_passage_named_by_a_strong_passage_gains() -> None:
    passages = [
        P("Film X", "Film X was directed by Jane Roe (director) in 1990."),
        P("Jane Roe", "Jane Roe is a Canadian director born in Toronto."),
        P("Other", "Unrelated text about Jane Austen."),
    ]
    cosine = np.array([0.8, 0.3, 0.35], np.float32)
    scores = bridge_scores(cosine, passages, weight=0.5, sources=1)
    assert scores[1] == pytest.approx(0.3 + 0.5 * 0.8)
    assert scores[0] == np.float32(0.8) and scores[2] == np.float32(0.35)
    assert np.argsort(-scores).tolist() == [0, 1, 2]


def test_titles_match_whole_words_only_and_short_titles_are_ignored() -> None:
    passages = [
        P("Art", "Martial arts and art history."),
        P("Bo", "Bo is a city."),
        P("Ann", "Annual report"),
    ]
    cosine = np.array([0.9, 0.1, 0.2], np.float32)
    scores = bridge_scores(cosine, passages)
    assert scores[1] == np.float32(0.1)  # "Bo" is too short to trust
    assert scores[2] == np.float32(0.2)  # "Ann" is not a word of "Annual"


def test_the_hybrid_first_stage_adds_bm25_rank_and_named_titles() -> None:
    passages = [
        P("Alpha Centauri", "A star system."),
        P("Beta (band)", "A band from Oslo."),
        P("Gamma", "Something else."),
    ]
    question = "Is Alpha Centauri older than Beta?"
    assert title_in_question(question, passages).tolist() == [1.0, 1.0, 0.0]
    cosine = np.array([0.5, 0.4, 0.45], np.float32)
    first = hybrid_first_stage(cosine, [2, 0, 1], question, passages, 0.2, 0.1)
    expected = [0.5 + 0.2 / 2 + 0.1, 0.4 + 0.2 / 3 + 0.1, 0.45 + 0.2 / 1]
    assert first.tolist() == pytest.approx(expected)


def test_named_entities_are_capitalised_runs_and_years_without_sentence_openers() -> None:
    text = (
        "The Mountrail County Courthouse in Stanley, North Dakota was built in 1914. "
        "It served the Duchy of Cornwall and Ernst Mach."
    )
    assert named_entities(text) == {
        "mountrail county courthouse",
        "stanley",
        "north dakota",
        "1914",
        "duchy of cornwall and ernst mach",
    }
    assert named_entities("It is. He was.") == set()


def test_a_passage_follows_from_another_by_an_entity_the_question_does_not_name() -> None:
    texts = [
        "Van Hook Township is a township in Mountrail County in North Dakota.",
        "The courthouse of Mountrail County stands in Stanley.",
        "Van Hook Township has a lake. North Dakota is cold.",
        "Liberty Township is in Ohio.",
    ]
    links = entity_links("What is the seat of the county where Van Hook Township is?", texts)
    assert links[0, 1] == 1.0  # "mountrail county": the bridge the question leaves out
    assert links[0, 2] == 1.0  # "north dakota" is shared too
    assert links[1, 0] == 1.0 and links[1, 2] == 0.0
    assert links[0, 3] == 0.0  # "Van Hook Township" is in the question: no link through it
    assert np.all(np.diag(links) == 0.0)


def test_an_entity_many_passages_name_links_weakly() -> None:
    texts = [f"Passage {n} mentions Springfield." for n in range(5)]
    links = entity_links("Where is it?", texts)
    assert links[0, 1] == pytest.approx(1 / 4)  # four other passages name Springfield
    texts = ["Springfield is here.", "Springfield again.", "Springfield too."]
    assert entity_links("Where?", texts)[0, 1] == 1.0  # two others: still a full link


def test_chain_selection_follows_links_hop_by_hop() -> None:
    scores = np.array([0.9, 0.2, 0.5, 0.3], np.float32)
    links = np.zeros((4, 4), np.float32)
    links[0, 1] = 1.0  # hop 1 leads to passage 1 ...
    links[1, 3] = 1.0  # ... which leads to passage 3
    order = np.argsort(-chain_selection(scores, links, weight=0.5), kind="stable").tolist()
    # 1 gains 0.5 * 0.9 (0.65 > 0.5); then 3 gains 0.5 * 0.2 (0.40 < 0.5): 2 comes first.
    assert order == [0, 1, 2, 3]
    links[1, 3] = 0.0
    links[0, 3] = 1.0
    order = np.argsort(-chain_selection(scores, links, weight=0.5), kind="stable").tolist()
    assert order == [0, 3, 1, 2]  # 0.3 + 0.45 = 0.75 first, then 0.2 + 0.45 = 0.65


def test_chain_selection_without_links_keeps_the_score_order_and_breaks_ties_by_index() -> None:
    scores = np.array([0.4, 0.7, 0.4, 0.1], np.float32)
    selected = chain_selection(scores, np.zeros((4, 4), np.float32))
    assert np.argsort(-selected, kind="stable").tolist() == [1, 0, 2, 3]
    assert sorted(selected.tolist()) == [1.0, 2.0, 3.0, 4.0]


def test_an_entity_links_only_where_it_stands_as_whole_words() -> None:
    texts = [
        "Ernst Mach taught in Prague.",
        "Ernst Machines and Machado.",  # "ernst mach" inside a longer word
        "A student of Ernst Mach_ and of Ernst Mach.",
        "The Ernst Mach prize.",
    ]
    links = entity_links("Who taught there?", texts)
    assert links[0].tolist() == [0.0, 0.0, 1.0, 1.0]


def test_title_links_point_from_the_passage_that_names_a_title_to_the_titled_passage() -> None:
    passages = [
        P("Film X", "Film X was directed by Jane Roe (director) in 1990."),
        P("Jane Roe", "Jane Roe is a Canadian director born in Toronto."),
        P("Toronto", "A city."),
        P("Bo", "Bo is named by Film X."),
    ]
    links = title_links(passages)
    assert links.tolist() == [
        [0.0, 1.0, 0.0, 0.0],  # Film X names Jane Roe
        [0.0, 0.0, 1.0, 0.0],  # Jane Roe names Toronto
        [0.0, 0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],  # "Bo" is too short a title to link to
    ]
