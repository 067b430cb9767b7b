"""The answer checks that need no engine: a dose must be given for the drug asked about,
refusals list what is missing, and a document's dates explain why it is not used."""

from __future__ import annotations

import datetime as dt

from appliance.nlp.clinical_facts import ClinicalTerms
from appliance.records import Chunk, DocumentMetadata
from appliance.verify.answerability import (
    dose_refusal,
    drug_of_paragraph,
    in_force,
    listed,
    not_in_force_reason,
)

ROW = "| Meropenem | 1 g IV every 8 hours |"


def test_a_dose_question_needs_a_dose_for_the_drug_asked_about() -> None:
    asked = "What is the IV dose of linezolid?"
    assert dose_refusal(asked, [(ROW, f"Beta-lactams: {ROW}")], ["linezolid"]) == (
        "the documents found give no dose of linezolid for this"
    )
    assert dose_refusal(asked, [(ROW, ROW)], ["meropenem"]) is None
    assert dose_refusal("What dose of meropenem?", [("Review at 48 hours.", "x")], []) == (
        "the documents found give no dose for this"
    )
    assert dose_refusal("What should we do with the dose?", [("Review.", "x")], []) is None


def test_refusals_list_what_is_missing() -> None:
    assert listed([]) == "what this question asks about"
    assert listed(["a"]) == "a" and listed(["a", "b", "c"]) == "a, b or c"


def _chunk(start: dt.date, end: dt.date | None, superseded_by: str | None = None) -> Chunk:
    meta = DocumentMetadata(doc_id="switch", title="IV to Oral Switch", version="2",
                            effective_from=start, effective_to=end, superseded_by=superseded_by)  # fmt: skip
    return Chunk("switch@2#0", "switch", 0, "x", 0, 1, ("IV to Oral Switch",), None, "0" * 64, meta)


def test_a_document_not_in_force_is_named_with_its_dates() -> None:
    today = dt.date(2026, 12, 3)
    future = _chunk(dt.date(2027, 1, 1), None)
    assert not in_force(future, today) and in_force(future, dt.date(2027, 2, 1))
    assert "comes into force on 2027-01-01" in not_in_force_reason(future, today)
    old = _chunk(dt.date(2023, 1, 1), dt.date(2025, 3, 1), "switch-v3")
    assert "was in force until 2025-03-01, replaced by switch-v3" in not_in_force_reason(old, today)


def test_a_dose_sentence_that_names_no_drug_speaks_of_its_paragraphs_drug() -> None:
    terms = ClinicalTerms.load()
    text = (
        "## Prophylaxis\n"
        "Give dalteparin 5,000 units once a day. Check platelets on day 5. "
        "For patients weighing more than 120 kg give 7,500 units once a day.\n"
        "For patients on warfarin give 7,500 units."
    )
    heavy = "For patients weighing more than 120 kg give 7,500 units once a day."
    assert drug_of_paragraph(heavy, text, terms.drugs_named) == "dalteparin"
    asked = "What dose of dalteparin for a patient of 130 kg?"
    assert dose_refusal(asked, [(heavy, heavy)], ["dalteparin"]) is not None  # before
    assert dose_refusal(asked, [(heavy, f"dalteparin: {heavy}")], ["dalteparin"]) is None
    # a sentence that names a drug itself is about that drug, whatever came before
    assert (
        drug_of_paragraph("For patients on warfarin give 7,500 units.", text, terms.drugs_named)
        is None
    )
    # a new line is a new paragraph: nothing before it in its own
    assert (
        drug_of_paragraph("Give dalteparin 5,000 units once a day.", text, terms.drugs_named)
        is None
    )
    # two drugs before it: which one is not known
    two = "Give dalteparin or enoxaparin as the ward stocks. For patients over 120 kg give more."
    assert drug_of_paragraph("For patients over 120 kg give more.", two, terms.drugs_named) is None
