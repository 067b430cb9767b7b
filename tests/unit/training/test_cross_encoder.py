"""In-domain training pairs for the cross-encoder: MedQuAD sections against their own
answers, with hard negatives from the same page and from pages on a related topic; PubMedQA
questions against their own abstracts."""

from __future__ import annotations

import json
import random
from pathlib import Path

from appliance.training.cross_encoder import medquad_pairs, pubmedqa_pairs


def _page(number: int, focus: str, answers: dict[str, str]) -> dict[str, object]:
    return {
        "doc_id": f"page-{number}", "focus": focus,
        "sections": [
            {"heading": f"What are the {kind} for {focus} ?", "qtype": kind,
             "qid": f"{number}-{kind}", "text": text}
            for kind, text in answers.items()
        ],
    }  # fmt: skip


def test_medquad_pairs_hold_the_answer_and_resembling_non_answers(tmp_path: Path) -> None:
    pages = [
        _page(1, "Type 1 Diabetes", {"treatments": "Insulin every day.", "symptoms": "Thirst."}),
        _page(2, "Type 2 Diabetes", {"treatments": "Metformin first.", "symptoms": "Tiredness."}),
        _page(3, "Gout", {"treatments": "Colchicine or NSAIDs.", "symptoms": "A hot joint."}),
    ]
    corpus = tmp_path / "medquad.jsonl"
    corpus.write_text("\n".join(json.dumps(p) for p in pages) + "\n", encoding="utf-8")
    pairs = medquad_pairs(corpus, negatives=2, rng=random.Random(3))
    question = "What are the treatments for Type 1 Diabetes ?"
    asked = [p for p in pairs if p.question == question]  # pages of two sections: all asked
    assert [p.passage for p in asked if p.label == 1.0] == ["Insulin every day."]
    negatives = {p.passage for p in asked if p.label == 0.0}
    assert negatives == {"Thirst.", "Metformin first."}  # same page; related page, same kind
    positives = [p for p in pairs if p.label == 1.0]
    assert len(positives) == 6  # two sections a page
    assert all(p.group.startswith("medquad:") for p in pairs)
    assert not any("Colchicine" in p.passage for p in pairs if "Diabetes" in p.question)


def test_pubmedqa_pairs_pair_each_question_with_its_own_abstract(tmp_path: Path) -> None:
    items = [
        {"id": str(n), "question": f"Question {n}?", "contexts": [{"text": f"Abstract {n}."}]}
        for n in range(5)
    ]
    path = tmp_path / "pqa.jsonl"
    path.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    pairs = pubmedqa_pairs(path, negatives=2, rng=random.Random(1))
    for n in range(5):
        own = [p for p in pairs if p.question == f"Question {n}?"]
        assert [p.passage for p in own if p.label == 1.0] == [f"Abstract {n}."]
        assert len([p for p in own if p.label == 0.0]) == 2
        assert f"Abstract {n}." not in {p.passage for p in own if p.label == 0.0}
