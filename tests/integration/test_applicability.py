"""Answers that apply to the patient and the day asked about, on the real path and the
sample corpus: ward phrasing read, out-of-scope passages never quoted, refusals that say
why in a clinician's words, and the audit record of the reading and every conflict."""

from __future__ import annotations

import datetime as dt

from appliance.answer import Answer
from appliance.engines import Appliance
from appliance.index.filters import ActiveOn
from tests.conftest import SAMPLE_READER, audit_entries

TODAY = dt.date(2026, 12, 1)


def _ask(appliance: Appliance, question: str, day: dt.date = TODAY) -> Answer:
    return appliance.answers.ask(question, SAMPLE_READER, ActiveOn(day), in_force_on=day)


def test_ward_shorthand_and_typos_are_answered_and_the_reading_is_audited(
    sample_appliance: Appliance,
) -> None:
    answer = _ask(sample_appliance, "hypo unconcious pt no iv acess what do i give")
    assert not answer.refused
    assert any("glucagon" in v.sentence.text for v in answer.sentences)
    assert answer.read_as and answer.read_as.startswith("hypoglycaemia unconscious patient")
    assert answer.scope == "For adults"
    record = audit_entries(sample_appliance.settings.data_dir, "answer")[-1]["details"]
    assert record["understood"]["corrections"] == {"unconcious": "unconscious", "acess": "access"}
    assert record["scope"] == "For adults"


def test_a_protocol_that_excludes_the_condition_asked_about_is_quoted_only_for_the_exclusion(
    sample_appliance: Appliance,
) -> None:
    answer = _ask(sample_appliance, "Can I use the variable rate insulin infusion for DKA?")
    quoted = [v.sentence.text for v in answer.sentences]
    assert not any("units of soluble human insulin" in q for q in quoted)
    assert not any(q.startswith("|") for q in quoted)  # no rate rows for DKA


def test_an_adult_question_is_not_answered_from_a_childrens_chart(
    sample_appliance: Appliance,
) -> None:
    answer = _ask(sample_appliance, "What is the maximum dose of IV paracetamol for an adult?")
    assert answer.refused
    assert "covers children only" in (answer.refusal_reason or "")
    record = audit_entries(sample_appliance.settings.data_dir, "answer")[-1]["details"]
    assert any("children only" in why for why in record["scope_conflicts"].values())


def test_a_value_outside_every_band_the_sections_cover_is_refused_with_the_bands(
    sample_appliance: Appliance,
) -> None:
    answer = _ask(sample_appliance, "INR 4.1 on warfarin and no bleeding. What should we do?")
    assert answer.refused and "INR 5 to 8" in (answer.refusal_reason or "")
    inside = _ask(sample_appliance, "INR 6.5 on warfarin and no bleeding. What should we do?")
    assert not inside.refused
    assert any("Withhold one or two doses" in v.sentence.text for v in inside.sentences)


def test_a_question_answered_only_by_a_document_not_yet_in_force_names_its_date(
    sample_appliance: Appliance,
) -> None:
    question = "Do we have to review every IV antibiotic prescription at 48 hours?"
    answer = _ask(sample_appliance, question)
    assert answer.refused and "comes into force on 2027-01-01" in (answer.refusal_reason or "")
    later = _ask(sample_appliance, question, dt.date(2027, 2, 1))
    assert not later.refused


def test_an_identifier_no_document_names_is_refused_by_name(sample_appliance: Appliance) -> None:
    answer = _ask(sample_appliance, "Patient with COVID-19: droplet or airborne precautions?")
    assert answer.refused and "COVID-19" in (answer.refusal_reason or "")


def test_a_technique_named_after_a_person_no_document_names_is_refused_by_name(
    sample_appliance: Appliance,
) -> None:
    """The central-line bundle covers the rest of the question (insertion, chlorhexidine,
    skin preparation) and was quoted for it, an answer about something else; only the
    name shows that the documents cannot say whether that technique is used."""
    answer = _ask(
        sample_appliance,
        "Is the Seldinger technique used when the central line is inserted with "
        "chlorhexidine skin preparation?",
    )
    assert answer.refusal is not None and answer.refusal.code == "unknown-name"
    assert "Seldinger" in answer.refusal.reason


def test_a_patient_named_in_the_question_is_not_what_it_asks_about(
    sample_appliance: Appliance,
) -> None:
    answer = _ask(sample_appliance, "Which precautions apply to Mrs Patel with C. difficile?")
    assert not answer.refused
    assert any("Contact precautions" in v.sentence.text for v in answer.sentences)


def test_a_part_the_documents_do_not_answer_is_named(sample_appliance: Appliance) -> None:
    answer = _ask(
        sample_appliance,
        "Which sites are swabbed for an MRSA screen, and how is the parking permit renewed?",
    )
    assert not answer.refused
    assert answer.unanswered_parts == ("how is the parking permit renewed",)
    both = _ask(
        sample_appliance,
        "How long should I rub my hands with alcohol gel, and what does it not kill?",
    )
    assert both.unanswered_parts == ()
