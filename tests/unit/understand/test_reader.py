"""The question reader: ward shorthand, spelling against the documents' vocabulary (drug
names and codes protected), stories reduced to what they ask, and the qualifiers kept."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from appliance.settings import PROJECT_ROOT
from appliance.understand import DocumentWords, QuestionReader, WardLanguage, qualifiers_of
from appliance.understand.abbreviations import defined_abbreviations
from appliance.understand.narrative import asking_of, focus_of, parts_of, unframed
from appliance.understand.spelling import SpellingCorrector

CORPUS = PROJECT_ROOT / "appliance" / "sample_corpus" / "documents"
LANGUAGE = WardLanguage.load(PROJECT_ROOT / "policies" / "ward-language.toml")


def _corpus_texts() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.md"))]


@pytest.fixture(scope="module")
def reader() -> QuestionReader:
    texts = _corpus_texts()
    return QuestionReader(LANGUAGE, DocumentWords(lambda: ("sample", iter(texts))))


@pytest.fixture(scope="module")
def corrector() -> SpellingCorrector:
    vocabulary = {w for t in _corpus_texts() for w in re.findall(r"[a-z]+", t.lower())}
    return SpellingCorrector(frozenset(vocabulary), LANGUAGE)


def test_misspelt_ward_words_are_read_as_the_documents_words(corrector: SpellingCorrector) -> None:
    text, corrections = corrector.correct("shoud we put bed rails up for a pt at risk of faling")
    assert "should" in text and "falling" in text
    assert {c.written for c in corrections} == {"shoud", "faling"}


def test_every_word_of_the_documents_is_left_as_written(corrector: SpellingCorrector) -> None:
    words = sorted({w for t in _corpus_texts() for w in re.findall(r"[a-z]{3,}", t.lower())})
    assert len(words) > 500
    changed = [w for w in words if corrector.correct_word(w) is not None]
    assert changed == []


@pytest.mark.parametrize(
    "drug",
    # Known drugs absent from the sample corpus, each one edit or two from words near it.
    [
        "prednisone",
        "cefuroxime",
        "rivaroxaban",
        "dabigatran",
        "clarithromycin",
        "hydralazine",
        "lorazepam",
        "ondansetron",
        "furosemide",
        "amlodipine",
        "sertraline",
        "nifedipine",
    ],
)
def test_a_drug_name_is_never_turned_into_another_word(
    corrector: SpellingCorrector, drug: str
) -> None:
    assert corrector.correct_word(drug) is None
    assert corrector.correct_word(drug.capitalize()) is None


@pytest.mark.parametrize(
    "code", ["E11.9", "P-20871", "CrCl", "HbA1c", "NEWS2", "14.2(b)", "4AT", "COVID-19"]
)
def test_codes_units_and_identifiers_are_never_corrected(
    corrector: SpellingCorrector, code: str
) -> None:
    text, corrections = corrector.correct(f"what does {code} mean for 5 mg/kg")
    assert code in text and corrections == []


def test_everyday_english_is_not_corrected_into_a_documents_word(
    corrector: SpellingCorrector,
) -> None:
    question = "She weighs 58 kg and the assessment says she needs it. What should I write up?"
    assert corrector.correct(question) == (question, [])


def test_shorthand_is_read_as_its_meaning(reader: QuestionReader) -> None:
    understood = reader.read("hypo unconcious pt no iv acess what do i give")
    assert understood.read_as.startswith("hypoglycaemia unconscious patient")
    assert {e.written for e in understood.expansions} >= {"hypo", "pt"}
    assert {c.written: c.read_as for c in understood.corrections}["acess"] == "access"


def test_shorthand_the_documents_also_write_is_kept_and_searched_by_its_meaning(
    reader: QuestionReader,
) -> None:
    understood = reader.read("Can I use a fixed-rate insulin infusion for DKA?")
    assert "DKA" in understood.read_as
    assert "diabetic ketoacidosis" in understood.search_text


def test_a_brand_name_is_read_as_the_medicine_the_documents_name(reader: QuestionReader) -> None:
    understood = reader.read("Can Augmentin be given with a Clexane injection?")
    assert "co-amoxiclav" in understood.read_as and "enoxaparin" in understood.read_as
    assert {e.written for e in understood.expansions} >= {"Augmentin", "Clexane"}


def test_a_defined_abbreviation_weighs_once_without_the_meaning_beside_it(
    reader: QuestionReader,
) -> None:
    understood = reader.read("How often is glucose checked on a VRIII?")
    assert "VRIII (Variable Rate Intravenous Insulin Infusion)" in understood.topic
    assert understood.without_long_forms(understood.topic) == (
        "How often is glucose checked on a VRIII?"
    )


def test_abbreviations_the_documents_define_are_learnt() -> None:
    found = defined_abbreviations(_corpus_texts())
    assert found["VRIII"] == "Variable Rate Intravenous Insulin Infusion"


def test_a_story_is_reduced_to_its_question_and_keeps_the_patients_facts(
    reader: QuestionReader,
) -> None:
    story = (
        "Night shift on a medical ward and the bay is busy. Mr T, 81, came in with a chest "
        "infection and his creatinine clearance is about 25 mL/min on the admission bloods. "
        "He has no bleeding and the risk assessment is done. What enoxaparin dose should he get?"
    )
    understood = reader.read(story)
    assert understood.focus == "What enoxaparin dose should he get?"
    assert "clearance 25" in understood.search_text
    assert "bay" not in understood.search_text.split()
    qualifiers = understood.qualifiers
    assert qualifiers.population == "adult" and qualifiers.age_years == 81
    assert qualifiers.measures["clearance"] == 25 and "bleeding" in qualifiers.absent


def test_a_short_question_is_its_own_focus_and_asks_in_its_last_sentence() -> None:
    question = "Patient allergic to penicillin with a rash. Can she have a cephalosporin?"
    assert focus_of(question) == (question, [])
    assert asking_of(question) == "Can she have a cephalosporin?"


def test_a_question_that_asks_two_things_has_two_parts() -> None:
    assert parts_of("What dose do I give a child in anaphylaxis, and what is the maximum?") == [
        "What dose do I give a child in anaphylaxis",
        "what is the maximum",
    ]
    assert parts_of("What is the maximum dose?") == ["What is the maximum dose?"]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Dose for a 6-week-old baby?", {"population": "child", "age_years": 6 / 52}),
        ("Usual adult IV dose?", {"population": "adult", "routes": ["intravenous"]}),
        ("INR 6.5 on warfarin, no bleeding", {"measures": {"inr": 6.5}, "absent": ["bleeding"]}),
        ("Pregnant woman at 30 weeks", {"population": "adult", "pregnant": True}),
        ("Longest shift for nurses on the rota?", {"staff": ["nurse"]}),
        ("stroke, last known well 5 hours ago", {}),
        ("Can the source patient be tested without their consent?", {}),
        ("Gentamicin dose in renal impairment?", {"organ_function": ["renal"]}),
        (
            "Does Tazocin need adjusting for a CrCl of 35?",
            {"measures": {"crcl": 35.0}, "organ_function": ["renal"]},
        ),
        ("Paracetamol in liver disease", {"organ_function": ["hepatic"]}),
    ],
)
def test_qualifiers_of_a_question(question: str, expected: dict[str, object]) -> None:
    assert qualifiers_of(question).to_record() == expected


def test_a_ward_language_file_with_an_empty_expansion_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "ward-language.toml"
    bad.write_text('[shorthand]\nabx = ""\n', encoding="utf-8")
    with pytest.raises(ValueError, match="non-empty"):
        WardLanguage.load(bad)


def test_a_closing_question_that_says_nothing_brings_the_sentence_before_it() -> None:
    story = (
        "Busy night on the surgical ward and every bed in the bay is full tonight. "
        "My student asks how often a high-risk patient on an air mattress is repositioned. "
        "What should I tell her?"
    )
    focus, rest = focus_of(story)
    assert focus.startswith("My student asks how often") and focus.endswith("tell her?")
    assert rest == ["Busy night on the surgical ward and every bed in the bay is full tonight."]


def test_a_reported_question_is_read_without_who_asks_it() -> None:
    assert unframed("The registrar wants to know what the care plan says") == (
        "what the care plan says"
    )
    assert unframed("What does the care plan say?") == "What does the care plan say?"
    assert parts_of("My student asks how often she is turned, and what mattress she needs?") == [
        "how often she is turned",
        "what mattress she needs",
    ]
