"""The extractive generator judges sentences in context and reads look-up tables: a row
is chosen by its column names and by the range that holds the number asked, and is
quoted after its header row."""

from __future__ import annotations

from appliance.generate.base import ContextPassage, under_heading
from appliance.generate.extractive import (
    ExtractiveGenerator,
    holds_number_asked,
    names_one_of_the_kind_asked,
)
from appliance.generate.quotable import candidates_of
from appliance.nlp.clinical_facts import ClinicalTerms
from appliance.nlp.embedder import Embedder
from appliance.records import Chunk, DocumentMetadata

RATE_SCALE = """| Capillary glucose (mmol/L) | Insulin rate (units/hour) |
|---|---|
| below 4.0 | 0, treat hypoglycaemia |
| 4.0 to 7.0 | 1 |
| 11.1 to 15.0 | 3 |
| above 20.0 | 6 and call the diabetes team |"""


def _passage(
    number: int, text: str, headings: tuple[str, ...], context: str = ""
) -> ContextPassage:
    chunk = Chunk(f"vriii@3#{number:04d}", "vriii", number, text, 0, len(text),
                  ("Variable Rate Intravenous Insulin Infusion", *headings), None, "0" * 64,
                  DocumentMetadata(doc_id="vriii", title="VRIII", version="3"), context)  # fmt: skip
    return ContextPassage(number, chunk)


def test_header_and_separator_rows_are_not_candidates_and_rows_carry_their_column_names() -> None:
    candidates = list(candidates_of(_passage(1, RATE_SCALE, ("Rate scale",))))
    assert [c.quote for c in candidates] == RATE_SCALE.split("\n")[2:]
    row = candidates[2]
    assert row.judged_text == (
        "Rate scale: Capillary glucose (mmol/L) 11.1 to 15.0; Insulin rate (units/hour) 3"
    )
    assert row.header == RATE_SCALE.split("\n")[0]


def test_a_later_part_of_a_table_takes_its_column_names_from_the_repeated_header() -> None:
    header = "\n".join(RATE_SCALE.split("\n")[:2])
    rows = "| 15.1 to 20.0 | 4 |"
    (row,) = candidates_of(_passage(2, rows, ("Rate scale",), context=header))
    assert row.judged_text.endswith("Capillary glucose (mmol/L) 15.1 to 20.0; Insulin rate (units/hour) 4")  # fmt: skip
    assert row.header is None  # not in this chunk, so it cannot be quoted from it


def test_sentences_are_judged_under_their_heading() -> None:
    passage = _passage(3, "Check capillary glucose every hour. Then stop.", ("Monitoring",))
    (sentence,) = candidates_of(passage)  # "Then stop." is too short to quote
    assert sentence.judged_text == "Monitoring: Check capillary glucose every hour."
    assert under_heading("x", _passage(4, "x", ()).chunk) == "x"  # a title alone adds nothing


def test_a_range_or_bound_holds_the_number_asked() -> None:
    asked = "What insulin rate for a capillary glucose of 12 mmol/L?"
    assert holds_number_asked(asked, "| 11.1 to 15.0 | 3 |")
    assert not holds_number_asked(asked, "| 4.0 to 7.0 | 1 |")
    assert holds_number_asked("INR of 9 and no bleeding", "INR above 8 without bleeding")
    assert not holds_number_asked("INR of 9 and no bleeding", "INR 5 to 8 without bleeding")
    # A bound in the question is matched as a bound, not as a value to look up.
    assert holds_number_asked("APTT ratio is below 1.2", "| below 1.2 | 80 units/kg |")
    assert not holds_number_asked("APTT ratio is below 1.2", "| 1.2 to 1.5 | none |")
    assert not holds_number_asked("Which screening test, the 4AT?", "| 1 to 9 | x |")
    assert not holds_number_asked("no number here", "| 1 to 3 | x |")


def test_a_looked_up_row_is_quoted_alone_after_its_header(embedder: Embedder) -> None:
    passages = [
        _passage(1, RATE_SCALE, ("Rate scale",)),
        _passage(2, "Check capillary glucose every hour while the infusion runs.", ("Monitoring",)),
    ]
    answer = ExtractiveGenerator(embedder).generate(
        "What insulin rate for a capillary glucose of 12 mmol/L on the VRIII?", passages
    )
    quotes = [s.text for s in answer.sentences]
    assert quotes == [RATE_SCALE.split("\n")[0], "| 11.1 to 15.0 | 3 |"]
    for sentence in answer.sentences:
        (citation,) = sentence.citations
        assert citation.chunk_id == "vriii@3#0001" and citation.quote in RATE_SCALE


SEIZURE_STEPS = """| Step | Drug and dose | When |
|---|---|---|
| 1 | Buccal midazolam 0.3 mg/kg or IV lorazepam 0.1 mg/kg | At 5 minutes of seizure |
| 2 | Repeat IV lorazepam 0.1 mg/kg | 10 minutes after step 1 |
| 3 | Levetiracetam 40 mg/kg IV over 5 minutes | If seizure continues after step 2 |"""


def test_the_step_after_those_already_taken_is_the_answer(embedder: Embedder) -> None:
    question = "Child still seizing after two doses of lorazepam, what is the next drug?"
    answer = ExtractiveGenerator(embedder).generate(
        question, [_passage(1, SEIZURE_STEPS, ("Seizures",))]
    )
    quoted = [s.text for s in answer.sentences]
    assert any(q.startswith("| 3 | Levetiracetam") for q in quoted)
    assert not any(q.startswith(("| 1 |", "| 2 |")) for q in quoted)


FORMULARY = """| Drug | Usual dose | CrCl 10-50 mL/min |
|---|---|---|
| Meropenem | 1 g IV every 8 hours | 1 g IV every 12 hours |
| Ceftriaxone | 2 g IV every 24 hours | no change |
| Aztreonam | 2 g IV every 8 hours | 1 g IV every 8 hours |"""


def test_the_row_that_names_the_drug_asked_about_wins(embedder: Embedder) -> None:
    answer = ExtractiveGenerator(embedder, max_sentences=1).generate(
        "What is the usual adult dose of ceftriaxone?", [_passage(1, FORMULARY, ("Beta-lactams",))]
    )
    assert [s.text for s in answer.sentences][-1].startswith("| Ceftriaxone |")


def test_a_sentence_that_refers_back_is_judged_with_the_one_before_it(
    embedder: Embedder,
) -> None:
    text = (
        "Code E11.9 is used for type 2 diabetes mellitus without complications. "
        "It is not used when a complication is documented anywhere in the episode."
    )
    passage = _passage(1, text, ("Type 2 diabetes",))
    first, second = candidates_of(passage)
    assert not first.refers_back and first.alone == first.quote
    assert second.refers_back and second.alone.startswith("Type 2 diabetes: Code E11.9")
    answer = ExtractiveGenerator(embedder).generate("When can't I use E11.9?", [passage])
    assert "It is not used when a complication is documented" in " ".join(
        s.text for s in answer.sentences
    )


def test_a_question_about_when_not_is_answered_by_the_exception_that_names_it(
    embedder: Embedder,
) -> None:
    """A sentence embedding puts "metformin is the first drug" nearer to "in whom is
    metformin not given?" than the sentence with the exception; the exception that
    names the drug asked about is what answers it."""
    first = (
        "Metformin is the first drug for type 2 diabetes in adults. Start metformin 500 mg "
        "once a day with breakfast, unless the eGFR is below 30 mL/min."
    )
    review = "Review metformin in type 2 diabetes every year."
    answer = ExtractiveGenerator(embedder).generate(
        "In whom is metformin not given?",
        [_passage(1, first, ("Metformin",)), _passage(2, review, ("Review",))],
    )
    quoted = [s.text for s in answer.sentences]
    assert any("unless the eGFR is below 30" in q for q in quoted)
    assert review not in quoted


def test_a_question_asking_which_drug_is_answered_by_a_sentence_naming_one(
    embedder: Embedder,
) -> None:
    """A sentence that repeats the question's words ("the first antibiotic for
    meningitis") says nothing; the one that names a drug the question does not answers."""
    changes = (
        "The changes in this version are the first antibiotic for meningitis and the fluid volume."
    )
    dose = "For bacterial meningitis the first dose is now meropenem 2 g IV."
    passages = [_passage(1, changes, ("Changes",)), _passage(2, dose, ("Antibiotics",))]
    question = "What is the first antibiotic for meningitis?"
    plain = ExtractiveGenerator(embedder, max_sentences=1)
    assert [s.text for s in plain.generate(question, passages).sentences] == [changes]
    reading_drugs = ExtractiveGenerator(
        embedder, drugs_named=ClinicalTerms.load().drugs_named, max_sentences=1
    )
    assert [s.text for s in reading_drugs.generate(question, passages).sentences] == [dose]


def test_a_question_asking_which_kind_of_thing_is_answered_by_a_sentence_naming_one(
    embedder: Embedder,
) -> None:
    """A question asking which scale is used asks for one: the sentence that names one
    ("the Rockwood scale") is quoted beside the one an embedding prefers, which repeats
    the question's words next to a threshold."""
    names_it = "Assess every patient over 65 on admission with the Rockwood scale."
    threshold = "A frailty score of 5 or more means the patient is moderately frail."
    other = "Falls are recorded on the incident form."
    passages = [
        _passage(1, f"{threshold} {names_it}", ("Frailty",)),
        _passage(2, other, ("Falls",)),
    ]
    assert names_one_of_the_kind_asked("Which assessment scale is used for frailty?", names_it)
    assert not names_one_of_the_kind_asked("Which assessment scale is used?", threshold)
    assert not names_one_of_the_kind_asked("How is frailty assessed?", names_it)
    generator = ExtractiveGenerator(embedder, max_sentences=1)
    answer = generator.generate("Which assessment scale is used for frailty?", passages)
    assert [s.text for s in answer.sentences] == [threshold, names_it]
    # Asked another way, nothing is added: the best sentence alone.
    answer = generator.generate("What frailty score means moderate frailty?", passages)
    assert [s.text for s in answer.sentences] == [threshold]


def test_a_question_about_kidney_function_gets_the_sentence_that_states_it(
    embedder: Embedder,
) -> None:
    """A sentence embedding puts the usual dose, which repeats the question's words,
    nearest to "the dose in renal impairment"; the passage's sentence on creatinine
    clearance is the answer, and is quoted beside it. A passage not quoted adds none."""
    dose = (
        "Give dalteparin 5000 units subcutaneously once a day for thromboprophylaxis. "
        "Use 2500 units once a day when the creatinine clearance is below 30 mL/min."
    )
    other = "Gentamicin levels are taken before the second dose if the eGFR is below 40."
    passages = [_passage(1, dose, ("Dalteparin",)), _passage(2, other, ("Gentamicin",))]
    generator = ExtractiveGenerator(embedder, max_sentences=1)
    usual = [s.text for s in generator.generate("Dalteparin prophylaxis dose?", passages).sentences]
    assert usual == [dose.split(". ")[0] + "."]
    renal = "Dalteparin prophylaxis dose in renal impairment?"
    quoted = [s.text for s in generator.generate(renal, passages).sentences]
    assert quoted == [dose.split(". ")[0] + ".", dose.split(". ")[1]]
    assert other not in quoted
