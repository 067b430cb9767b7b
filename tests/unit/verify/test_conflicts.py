"""Sources that disagree, read from real passages by the real fact finder: what counts
as a disagreement, what does not, and which source prevails."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from appliance.engines import Appliance
from appliance.nlp.clinical_facts import ClinicalFactExtractor
from appliance.records import Chunk, ChunkFacts
from appliance.verify.conflicts import ConflictFinder, ExtractedStatements
from tests.conftest import make_settings
from tests.contract.suites import make_chunk


@pytest.fixture(scope="module")
def extractor(tmp_path_factory: pytest.TempPathFactory) -> ClinicalFactExtractor:
    with Appliance(make_settings(Path(tmp_path_factory.mktemp("conflicts")))) as appliance:
        return appliance.fact_extractor


@pytest.fixture(scope="module")
def finder(extractor: ClinicalFactExtractor) -> ConflictFinder:
    return ConflictFinder(ExtractedStatements(extractor))


def passage(doc_id: str, text: str, **meta: object) -> Chunk:
    return make_chunk(doc_id, 0, text, title=doc_id.replace("-", " ").title(), **meta)


TRUST = passage(
    "antimicrobial-policy",
    "For sepsis, give meropenem 1 g IV every 8 hours.",
    departments=["all"],
    effective_from="2025-01-01",
)
ICU = passage(
    "icu-sepsis-guideline",
    "For sepsis, give meropenem 2 g IV every 8 hours by extended infusion.",
    departments=["icu"],
    effective_from="2026-02-01",
)


def test_two_doses_of_one_drug_for_one_condition_disagree(finder: ConflictFinder) -> None:
    [conflict] = finder.among([TRUST, ICU], relied_on={ICU.chunk_id})
    assert conflict.about == "the dose of meropenem for sepsis"
    first, second = conflict.sources
    # the trust's word prevails over the department's, though the department's is newer
    assert (first.source.doc_id, first.authority) == ("antimicrobial-policy", "trust")
    assert (second.source.doc_id, second.authority) == ("icu-sepsis-guideline", "department")
    assert conflict.precedence is not None and "trust" in conflict.precedence
    assert first.statement == TRUST.text and second.statement == ICU.text
    assert (first.source.start, first.source.end) == (TRUST.start, TRUST.end)


def test_at_one_level_the_later_document_prevails(finder: ConflictFinder) -> None:
    older = passage("ward-7-sepsis", TRUST.text, departments=["icu"], effective_from="2025-01-01")
    [conflict] = finder.among([older, ICU], relied_on={older.chunk_id})
    assert conflict.sources[0].source.doc_id == "icu-sepsis-guideline"
    assert conflict.precedence is not None and "2026-02-01" in conflict.precedence


def test_a_stated_authority_outranks_the_reach_of_a_document(finder: ConflictFinder) -> None:
    ward = passage("ward-note", TRUST.text, departments=["all"], authority="ward")
    [conflict] = finder.among([ward, ICU], relied_on={ICU.chunk_id})
    assert [s.source.doc_id for s in conflict.sources] == ["icu-sepsis-guideline", "ward-note"]


def test_level_sources_leave_the_decision_to_their_owners(finder: ConflictFinder) -> None:
    twin = passage("theatres-sepsis", ICU.text.replace("2 g", "1 g"), departments=["surgery"],
                   effective_from="2026-02-01")  # fmt: skip
    [conflict] = finder.among([twin, ICU], relied_on={ICU.chunk_id})
    assert conflict.precedence is None


def test_giving_a_drug_and_forbidding_it_disagree(finder: ConflictFinder) -> None:
    forbidding = passage(
        "renal-antibiotics", "Meropenem must not be given for sepsis.", departments=["renal"]
    )
    conflicts = finder.among([TRUST, forbidding], relied_on={TRUST.chunk_id})
    assert [c.about for c in conflicts] == ["whether to give meropenem for sepsis"]


NOT_FOR_SEIZURES = passage(
    "febrile-illness-children",
    "Paracetamol may be used for distress, not to prevent febrile seizures.",
    departments=["paediatrics"],
)


def test_giving_a_drug_and_saying_it_is_not_for_the_condition_disagree(
    extractor: ClinicalFactExtractor, finder: ConflictFinder
) -> None:
    giving = passage(
        "seizure-leaflet", "Give paracetamol 15 mg/kg for febrile seizures.", departments=["all"]
    )
    [stated] = extractor.extract([NOT_FOR_SEIZURES])
    assert {r.kind for r in stated.relations} == {"NOT_INDICATED_FOR"}
    conflicts = finder.among([giving, NOT_FOR_SEIZURES], relied_on={giving.chunk_id})
    assert [c.about for c in conflicts] == ["whether to give paracetamol for febrile seizure"]


def test_two_sources_that_both_withhold_a_drug_agree(finder: ConflictFinder) -> None:
    forbidding = passage(  # its own id: in the product a chunk id names its text
        "seizure-policy", "Paracetamol must not be given for febrile seizures.",
        departments=["all"],
    )  # fmt: skip
    relied_on = {forbidding.chunk_id, NOT_FOR_SEIZURES.chunk_id}
    assert finder.among([forbidding, NOT_FOR_SEIZURES], relied_on=relied_on) == []


@pytest.mark.parametrize(
    "other",
    [
        # the same dose, said in other words
        passage("icu-same", "In sepsis give meropenem 1 g IV every 8 hours.", departments=["icu"]),
        # a version replaced by the one cited
        passage(
            "adult-antimicrobial-policy-v0", ICU.text, superseded_by="adult-antimicrobial-policy"
        ),
        # written for other people
        passage(
            "paediatric-sepsis",
            "This guideline applies to children. For sepsis, give meropenem 2 g IV.",
            departments=["paediatrics"],
        ),
    ],
    ids=["same-dose", "older-version", "other-population"],
)
def test_what_is_not_a_disagreement(finder: ConflictFinder, other: Chunk) -> None:
    adults = passage(  # its own id: in the product a chunk id names its text
        "adult-antimicrobial-policy",
        "This policy applies to adults. For sepsis, give meropenem 1 g IV every 8 hours.",
        departments=["all"],
    )
    assert finder.among([adults, other], relied_on={adults.chunk_id, other.chunk_id}) == []


def test_a_disagreement_the_answer_does_not_rely_on_is_not_shown(finder: ConflictFinder) -> None:
    cited = passage("hand-hygiene", "Clean hands before touching a patient.", departments=["all"])
    assert finder.among([TRUST, ICU, cited], relied_on={cited.chunk_id}) == []


def test_what_a_passage_states_is_read_once(extractor: ClinicalFactExtractor) -> None:
    counting = _CountingFacts(extractor)
    reader = ExtractedStatements(counting)
    first = reader.statements([TRUST, ICU])
    assert reader.statements([ICU, TRUST]) == first
    assert counting.read == 2  # once per passage, never again


class _CountingFacts:
    """The real fact finder, counting the passages it is given."""

    def __init__(self, extractor: ClinicalFactExtractor) -> None:
        self.extractor = extractor
        self.read = 0

    def extract(self, chunks: Sequence[Chunk]) -> list[ChunkFacts]:
        self.read += len(chunks)
        return self.extractor.extract(chunks)
