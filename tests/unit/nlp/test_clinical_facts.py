"""The knowledge graph's fact finder on real spaCy parses: entities with their spans,
abbreviations read as their long forms across a document, scope and relations."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from appliance.engines import Appliance
from appliance.nlp.clinical_facts import ClinicalFactExtractor, ClinicalTerms
from appliance.records import ChunkFacts
from tests.conftest import make_settings
from tests.contract.suites import make_chunk


@pytest.fixture(scope="module")
def extractor(tmp_path_factory: pytest.TempPathFactory) -> ClinicalFactExtractor:
    with Appliance(make_settings(Path(tmp_path_factory.mktemp("facts")))) as appliance:
        return appliance.fact_extractor


def facts(extractor: ClinicalFactExtractor, *texts: str, **meta: object) -> list[ChunkFacts]:
    chunks = [make_chunk("doc", n, text, **meta) for n, text in enumerate(texts)]
    return extractor.extract(chunks)


def test_mentions_keep_their_exact_spans(extractor: ClinicalFactExtractor) -> None:
    [found] = facts(extractor, "For a documented penicillin allergy give aztreonam 2 g IV.")
    text = found.chunk.text
    for m in found.mentions:
        assert text[m.start : m.end] == m.text
    kinds = {(m.kind, m.key) for m in found.mentions}
    assert ("condition", "penicillin allergy") in kinds  # the hedge is not part of the name
    assert ("drug", "aztreonam") in kinds
    assert ("drug", "penicillin") not in kinds  # a modifier of the allergy, not a drug given


@pytest.mark.parametrize("hedge", ["documented", "recorded", "labelled", "reported"])
def test_how_a_condition_came_to_be_known_is_not_part_of_its_name(
    extractor: ClinicalFactExtractor, hedge: str
) -> None:
    [found] = facts(extractor, f"For a {hedge} penicillin allergy give aztreonam 2 g IV.")
    assert ("condition", "penicillin allergy") in {(m.kind, m.key) for m in found.mentions}


def test_a_number_that_names_a_kind_stays_in_the_key(extractor: ClinicalFactExtractor) -> None:
    [found] = facts(extractor, "Type 1 diabetes is not type 2 diabetes; give 3 doses.")
    keys = {m.key for m in found.mentions if m.kind == "condition"}
    assert {"type 1 diabetes", "type 2 diabetes"} <= keys
    assert "type diabetes" not in keys


def test_an_abbreviation_is_its_long_form_across_the_document(
    extractor: ClinicalFactExtractor,
) -> None:
    first, second = facts(
        extractor,
        "Start a Variable Rate Intravenous Insulin Infusion (VRIII) when a meal is missed.",
        "Check capillary glucose every hour while the VRIII runs.",
    )
    key = "variable rate intravenous insulin infusion"
    assert any(m.key == key and m.text == "VRIII" for m in second.mentions)
    assert ("vriii", key) in first.abbreviations + second.abbreviations


def test_scope_tells_exclusions_from_inclusions(extractor: ClinicalFactExtractor) -> None:
    [found] = facts(
        extractor,
        "Use this protocol for adults with diabetes. Do not use it for diabetic ketoacidosis.",
    )
    scopes = {(s.kind, s.target) for s in found.scopes}
    assert ("APPLIES_TO", "adult") in scopes
    assert ("APPLIES_TO", "diabetes") in scopes
    assert ("EXCLUDES", "diabetic ketoacidosis") in scopes
    assert ("APPLIES_TO", "diabetic ketoacidosis") not in scopes


def test_a_dose_keeps_amount_unit_route_and_frequency(extractor: ClinicalFactExtractor) -> None:
    [found] = facts(
        extractor,
        "For a positive screen in adults give mupirocin 2% nasal ointment three times a day.",
    )
    [dose] = [r for r in found.relations if r.kind == "DOSE_OF"]
    assert (dose.source, dose.target) == ("mupirocin", "adult")
    assert dict(dose.details) == {
        "amount": "2", "unit": "%", "route": "nasal", "frequency": "three times a day",
    }  # fmt: skip
    assert found.chunk.text[dose.start : dose.end].startswith("mupirocin 2%")


def test_a_condition_that_only_says_when_is_not_what_the_dose_is_for(
    extractor: ClinicalFactExtractor,
) -> None:
    when, what_for, lasting = facts(
        extractor,
        "Give tranexamic acid 1 g IV within 3 hours of injury, then 1 g over 8 hours.",
        "Give tranexamic acid 1 g IV within 3 hours of birth in every postpartum haemorrhage.",
        "Give lorazepam 0.1 mg/kg IV at 5 minutes of seizure.",
    )
    assert not [r for r in when.relations if r.kind == "DOSE_OF"]
    doses = {(r.source, r.target) for r in what_for.relations if r.kind == "DOSE_OF"}
    assert doses == {("tranexamic acid", "postpartum haemorrhage")}
    # the seizure's own length: what the dose is for
    doses = {(r.source, r.target) for r in lasting.relations if r.kind == "DOSE_OF"}
    assert doses == {("lorazepam", "seizure")}


def test_a_drug_named_before_an_exclusion_is_contraindicated(
    extractor: ClinicalFactExtractor,
) -> None:
    [found] = facts(extractor, "Metformin is contraindicated in renal impairment.")
    assert ("CONTRAINDICATED_WITH", "metformin", "renal impairment") in {
        (r.kind, r.source, r.target) for r in found.relations
    }
    assert ("EXCLUDES", "renal impairment") in {(s.kind, s.target) for s in found.scopes}


def test_a_drugs_own_contraindication_is_not_the_passages_scope(
    extractor: ClinicalFactExtractor,
) -> None:
    [found] = facts(extractor, "Ibuprofen 400 mg orally three times a day; avoid in asthma.")
    stated = {(r.kind, r.source, r.target) for r in found.relations}
    assert ("CONTRAINDICATED_WITH", "ibuprofen", "asthma") in stated
    assert ("DOSE_OF", "ibuprofen", "asthma") not in stated  # the dose is not for asthma
    assert ("TREATS", "ibuprofen", "asthma") not in stated
    assert found.scopes == ()  # the rest of the passage still applies in asthma
    [unless] = facts(extractor, "Give atenolol 50 mg orally, unless the patient has asthma.")
    assert ("CONTRAINDICATED_WITH", "atenolol", "asthma") in {
        (r.kind, r.source, r.target) for r in unless.relations
    }
    [no_drug] = facts(extractor, "Avoid moving the patient between wards in delirium.")
    assert not [r for r in no_drug.relations if r.kind == "CONTRAINDICATED_WITH"]


def test_a_drug_treats_a_condition_only_when_given_for_it(
    extractor: ClinicalFactExtractor,
) -> None:
    def read(text: str) -> tuple[set[tuple[str, str]], set[str]]:
        [found] = facts(extractor, text)
        treats = {(r.source, r.target) for r in found.relations if r.kind == "TREATS"}
        return treats, {m.key for m in found.mentions}

    given = [
        ("Give gentamicin 5 mg/kg IV once daily for pyelonephritis.", "gentamicin", "pyelonephritis"),
        ("In pneumonia give clarithromycin 500 mg twice daily.", "clarithromycin", "pneumonia"),
        ("For active haemorrhage stop heparin and give protamine 50 mg IV.", "protamine", "haemorrhage"),
    ]  # fmt: skip
    for text, drug, condition in given:
        assert (drug, condition) in read(text)[0], text
    # sharing a sentence is not a treatment (both named, so each check can fail)
    not_given = [
        ("Recorded anaphylaxis to amoxicillin in 2021.", "amoxicillin", "anaphylaxis"),
        ("For active haemorrhage stop heparin and give protamine 50 mg IV.", "heparin", "haemorrhage"),
        ("Heparin is less effective in sepsis.", "heparin", "sepsis"),
        ("Ibuprofen may be used for pain, not to prevent stroke.", "ibuprofen", "stroke"),
    ]  # fmt: skip
    for text, drug, condition in not_given:
        treats, named = read(text)
        assert drug in named and any(k.endswith(condition) for k in named), text
        assert not any(d == drug and c.endswith(condition) for d, c in treats), text
    # what a passage says a drug is not for is a fact of its own
    [found] = facts(extractor, "Ibuprofen may be used for pain, not to prevent stroke.")
    stated = {(r.kind, r.source, r.target) for r in found.relations}
    assert ("NOT_INDICATED_FOR", "ibuprofen", "stroke") in stated
    assert ("TREATS", "ibuprofen", "pain") in stated
    # a population is given a dose, not treated
    treats, named = read("Paracetamol 15 mg/kg orally for children over 3 months.")
    assert "child" in named and not treats


def test_a_question_is_read_with_the_graphs_abbreviations(
    extractor: ClinicalFactExtractor,
) -> None:
    key = "variable rate intravenous insulin infusion"
    found = extractor.question_keys("Is a VRIII used in DKA?", {"vriii": key})
    assert key in {m.key for m in found}
    unknown = extractor.question_keys("Is a VRIII used in DKA?", {})
    assert key not in {m.key for m in unknown}


def test_a_parse_handed_over_gives_the_facts_of_the_chunk_own_text(
    extractor: ClinicalFactExtractor,
) -> None:
    """Ingestion hands over CAGE's parse of each chunk's index_text (a table's header row
    repeated, then the chunk): the facts are those of the chunk's own text, with spans
    counted from its first character, and the header states nothing."""
    plain = make_chunk("doc", 0, "For a documented penicillin allergy give aztreonam 2 g IV.")
    row = "| Meropenem | 1 g IV every 8 hours | adults with sepsis |"
    table = dataclasses.replace(
        make_chunk("doc", 1, row), context="| Drug (vancomycin-free) | Dose | Population |"
    )
    chunks = [plain, table]
    parsed = list(extractor.nlp.pipe([c.index_text for c in chunks]))
    handed, own = extractor.extract(chunks, parsed), extractor.extract(chunks)
    for found in handed:
        for m in found.mentions:
            assert found.chunk.text[m.start : m.end] == m.text
    assert {(m.kind, m.key) for m in handed[0].mentions} == {
        (m.kind, m.key) for m in own[0].mentions
    }
    table_keys = {m.key for m in handed[1].mentions}
    assert "meropenem" in table_keys and "vancomycin" not in table_keys


def test_numbered_steps_follow_one_another(extractor: ClinicalFactExtractor) -> None:
    [found] = facts(
        extractor,
        "1. Measure serum lactate.\n"
        "2. Take two sets of blood cultures before antibiotics.\n"
        "3. Give piperacillin-tazobactam 4.5 g IV.\n"
        "5. Start noradrenaline if the pressure stays low.",
    )
    steps = [(r.source, r.target) for r in found.relations if r.kind == "NEXT_STEP"]
    assert steps == [("lactate", "blood cultures"), ("blood cultures", "piperacillin")]
    first = next(r for r in found.relations if r.kind == "NEXT_STEP")
    assert found.chunk.text[first.start : first.end].startswith("1. Measure serum lactate.")
    [prose] = facts(extractor, "Measure serum lactate, then take two sets of blood cultures.")
    assert not [r for r in prose.relations if r.kind == "NEXT_STEP"]


def test_the_drugs_a_text_names_are_read_from_its_words() -> None:
    terms = ClinicalTerms.load()
    assert terms.drugs_named("Give tranexamic acid 1 g and aztreonam 2 g IV.") == {
        "tranexamic acid", "aztreonam",
    }  # fmt: skip
    assert terms.drugs_named("a documented penicillin allergy") == {"penicillin"}
    assert terms.drugs_named("Medicine is collected from the pharmacy at the side door.") == set()
    # cephalosporins end in nothing a class ending covers: the vocabulary names them
    assert terms.drugs_named("Ceftriaxone 2 g IV, or cefuroxime if allergic.") == {
        "ceftriaxone", "cefuroxime",
    }  # fmt: skip
    # a name inside a longer word is not that name
    assert terms.drugs_named("Start noradrenaline.") == {"noradrenaline"}
