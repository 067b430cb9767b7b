from dataclasses import dataclass

import numpy as np
import pytest

from appliance.rerank.bridge import bridge_scores, hybrid_first_stage, title_in_question


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
