"""Scope: a passage whose population, age band, measurement band, staff group or
exclusions contradict the question's qualifiers is not quoted. Hand-written cases on the
sample corpus's own wording."""

from __future__ import annotations

import datetime as dt

from appliance.records import Chunk, DocumentMetadata
from appliance.understand import qualifiers_of
from appliance.verify.scope import ScopeChecker, band_fit, describe_scope, exclusions_of

VRIII = (
    "Use a VRIII for patients with diabetes who will miss more than one meal. Do not use a "
    "VRIII for diabetic ketoacidosis: use the fixed-rate DKA protocol."
)
ROTA = "No doctor is rostered for more than 13 hours in a shift or more than 72 hours in 7 days."


def _chunk(doc_id: str, title: str, text: str, *headings: str) -> Chunk:
    meta = DocumentMetadata(doc_id=doc_id, title=title, effective_from=dt.date(2024, 1, 1))
    return Chunk(
        chunk_id=f"{doc_id}@1#0", doc_id=doc_id, ordinal=0, text=text, start=0, end=len(text),
        heading_path=(title, *headings), page=None, source_sha256="0" * 64, metadata=meta,
    )  # fmt: skip


DECOLONISATION = (
    "For a positive screen give mupirocin 2% nasal ointment three times a day for 5 days."
)
FEVER = "Infants under 3 months with a fever are seen by a registrar."
TEXTS = {
    "insulin": VRIII, "rota": ROTA, "chart": "", "formulary": "", "warfarin": "",
    "mrsa": DECOLONISATION, "fever": FEVER, "haemorrhage": "",
}  # fmt: skip
checker = ScopeChecker(TEXTS.get)


def test_an_adult_formulary_does_not_answer_for_a_child() -> None:
    chunk = _chunk("formulary", "Adult Antimicrobial Dosing Formulary", "Gentamicin 5 mg/kg.")
    why = checker.passage_conflict(qualifiers_of("gentamicin dose for a 5-year-old"), chunk)
    assert why is not None and "adults only" in why
    assert checker.passage_conflict(qualifiers_of("gentamicin dose for an adult"), chunk) is None


def test_a_document_that_never_names_children_does_not_answer_for_a_child() -> None:
    """No population in its title or headings, and none in its text: written for
    adults, so an adult regimen is not quoted for a neonate, however close its topic."""
    chunk = _chunk("mrsa", "MRSA Decolonisation Procedure", DECOLONISATION, "Decolonisation")
    why = checker.passage_conflict(qualifiers_of("MRSA decolonisation for neonates?"), chunk)
    assert why == (
        "MRSA Decolonisation Procedure does not say it covers children, and the question "
        "is about a child"
    )
    assert checker.passage_conflict(qualifiers_of("MRSA decolonisation regimen?"), chunk) is None
    # a document that speaks of children somewhere may answer for one
    fever = _chunk("fever", "Fever Assessment", "Measure the temperature.", "Assessment")
    assert checker.passage_conflict(qualifiers_of("fever in a 2-year-old"), fever) is None
    # the baby of an obstetric question is not the patient asked about
    birth = _chunk("haemorrhage", "Obstetric Haemorrhage", "Oxytocin 5 units IV.")
    asked = qualifiers_of("which uterotonic once the baby is delivered in postpartum haemorrhage?")
    assert checker.passage_conflict(asked, birth) is None


def test_a_childrens_chart_does_not_answer_for_an_adult_and_shows_its_scope() -> None:
    chunk = _chunk("chart", "Paediatric Emergency Drug Chart", "Paracetamol 15 mg/kg orally.")
    assert checker.passage_conflict(qualifiers_of("IV paracetamol for an adult"), chunk)
    assert describe_scope([chunk]) == "For children"


def test_an_age_band_leaves_out_a_younger_infant() -> None:
    chunk = _chunk("chart", "Paediatric Emergency Drug Chart", "")
    claim = "Ibuprofen 10 mg/kg orally every 8 hours for children older than 3 months."
    asked = qualifiers_of("ibuprofen for a 6-week-old baby")
    assert "over 3 months" in (checker.claim_conflict(asked, "", chunk, claim) or "")
    older = qualifiers_of("ibuprofen for a 2-year-old")
    assert checker.claim_conflict(older, "", chunk, claim) is None


def test_a_renal_bound_without_an_age_word_is_not_an_age_band() -> None:
    chunk = _chunk("vte", "Venous Thromboembolism Prophylaxis", "")
    claim = "Reduce to 20 mg once a day if creatinine clearance is below 30 mL/min."
    asked = qualifiers_of("72-year-old, creatinine clearance is about 24 mL/min")
    assert checker.claim_conflict(asked, "", chunk, claim) is None
    higher = qualifiers_of("72-year-old, creatinine clearance is 45 mL/min")
    assert "clearance below 30" in (checker.claim_conflict(higher, "", chunk, claim) or "")


def test_a_section_for_another_measurement_band_does_not_apply() -> None:
    section = _chunk("warfarin", "Reversal of Warfarin", "Withhold one or two doses.",
                     "INR 5 to 8 without bleeding")  # fmt: skip
    assert checker.passage_conflict(qualifiers_of("INR 6.5, no bleeding"), section) is None
    assert "INR 5 to 8" in (checker.passage_conflict(qualifiers_of("INR 4.1"), section) or "")
    assert band_fit({"inr": 9.0}, "INR above 8 without bleeding") is True
    assert band_fit({"inr": 9.0}, "Major bleeding") is None


def test_a_section_for_a_condition_the_question_rules_out_does_not_apply() -> None:
    section = _chunk("warfarin", "Reversal of Warfarin", "Give vitamin K.", "Major bleeding")
    assert checker.passage_conflict(qualifiers_of("INR 9 and no bleeding"), section)
    assert checker.passage_conflict(qualifiers_of("INR 9 and major bleeding"), section) is None


def test_a_documents_exclusion_leaves_only_the_sentence_that_states_it() -> None:
    assert exclusions_of(VRIII) == ["diabetic ketoacidosis"]
    chunk = _chunk("insulin", "Variable Rate Intravenous Insulin Infusion", VRIII)
    question = "Insulin infusion rate for diabetic ketoacidosis?"
    asked = qualifiers_of(question)
    rate = "Add 50 units of soluble human insulin to 49.5 mL sodium chloride 0.9%."
    assert "not to be used for diabetic ketoacidosis" in (
        checker.claim_conflict(asked, question, chunk, rate) or ""
    )
    exclusion = "Do not use a VRIII for diabetic ketoacidosis: use the fixed-rate DKA protocol."
    assert checker.claim_conflict(asked, question, chunk, exclusion) is None
    assert checker.claim_conflict(asked, "VRIII for a missed meal?", chunk, rate) is None


def test_a_workforce_rule_for_doctors_does_not_answer_for_nurses() -> None:
    chunk = _chunk("rota", "Medical On-Call Rota and Rest Policy", "Shift swaps are agreed.")
    asked = qualifiers_of("What is the longest shift for nurses on the rota?")
    assert "binds doctors" in (checker.passage_conflict(asked, chunk) or "")
    doctors = qualifiers_of("What is the longest shift for doctors on the rota?")
    assert checker.passage_conflict(doctors, chunk) is None


def test_a_route_the_question_does_not_ask_about_is_not_quoted() -> None:
    chunk = _chunk("chart", "Emergency Drug Chart", "")
    claim = "Paracetamol 15 mg/kg orally every 4 to 6 hours."
    assert checker.claim_conflict(qualifiers_of("IV paracetamol dose"), "", chunk, claim)
    assert checker.claim_conflict(qualifiers_of("paracetamol dose"), "", chunk, claim) is None
