"""Access control on the real query path over the sample corpus: the per-candidate
defence, answer-time rechecks, break-the-glass, and side channels."""

from __future__ import annotations

import datetime as dt
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from appliance.access.guard import AccessDenied, NotFound
from appliance.access.policy import Rule
from appliance.access.rules import Resource, Subject
from appliance.engines import Appliance
from appliance.records import AnswerSentence, Citation
from appliance.retrieve.hybrid import QueryError
from appliance.settings import Settings
from tests.conftest import SAMPLE_CORPUS, SAMPLE_READER, audit_entries

TODAY = dt.date(2026, 11, 30)
CLINICIAN_ED = Subject("dr-okafor", ("clinician",), ("emergency", "icu"))
NURSE_CARDIOLOGY = Subject("nurse-lindqvist", ("nurse",), ("cardiology",), ("P-10234",))
NOBODY = Subject("visitor", ("volunteer",))


@contextmanager
def extra_rule(appliance: Appliance, *fields: str) -> Iterator[Rule]:
    """A rule added to the shared appliance's policy for one test, then removed."""
    rule = Rule.parse(fields[0], list(fields[1:]))
    appliance.policy.add(rule, "test")
    try:
        yield rule
    finally:
        appliance.policy.remove(rule, "test")


def _claims(appliance: Appliance, subject: Subject, question: str) -> list[AnswerSentence]:
    result = appliance.query.run(question, subject, 5, rerank=False)
    return [
        AnswerSentence(f"Claim from {c.chunk.doc_id}.", "claim", (Citation(c.chunk.chunk_id, "x"),))
        for c in result.candidates
    ]


def test_a_candidate_the_filter_wrongly_admits_is_dropped_and_reported(
    sample_appliance: Appliance, caplog: pytest.LogCaptureFixture
) -> None:
    scope = sample_appliance.guard.scope(CLINICIAN_ED)
    # Simulate a filter compiler bug: engines asked with no access filter at all.
    found = sample_appliance.retriever.retrieve("care plan for patient P-10234", 30)
    assert any(c.chunk.metadata.patient_id == "P-10234" for c in found)
    with caplog.at_level(logging.ERROR):
        screened = sample_appliance.guard.screen(scope, found)
    assert screened and all(c.chunk.metadata.patient_id is None for c in screened)
    assert all(c.chunk.metadata.sensitivity != "restricted" for c in screened)
    assert "ACCESS FILTER MISMATCH" in caplog.text
    mismatches = audit_entries(sample_appliance.settings.data_dir, "access_mismatch")
    assert {e["details"]["chunk_id"] for e in mismatches} >= {
        c.chunk.chunk_id for c in found if c.chunk.metadata.patient_id == "P-10234"
    }


def test_the_pipeline_never_returns_what_the_policy_denies(sample_appliance: Appliance) -> None:
    for subject in (CLINICIAN_ED, NURSE_CARDIOLOGY, NOBODY, SAMPLE_READER):
        result = sample_appliance.query.run("care plan patient medication", subject, 20)
        assert result.screened_out == []
        for candidate in result.candidates:
            decision = sample_appliance.guard.decide(subject, Resource.of(candidate.chunk), "read")
            assert decision.allowed, (subject.user_id, candidate.chunk.chunk_id)
    assert sample_appliance.query.run("care plan", NOBODY, 20).candidates == []


def test_a_user_who_may_read_few_documents_still_gets_k_results(
    sample_appliance: Appliance,
) -> None:
    solo = Subject("solo", (), ("pharmacy",))
    with extra_rule(sample_appliance, "p", "user:solo", "pharmacy", "internal", "read", "allow"):
        visible = [
            chunk_id
            for record in sample_appliance.catalog.documents()
            if "pharmacy" in record.metadata.departments
            and record.metadata.sensitivity == "internal"
            for chunk_id in sample_appliance.catalog.chunk_ids_of(record.doc_id)
        ]
        total = sample_appliance.catalog.chunk_count()
        assert 10 <= len(visible) < total / 5  # few, but more than k
        for mode in ("lexical", "dense", "hybrid"):
            result = sample_appliance.query.run(
                "antibiotic dose patient", solo, 10, mode=mode, rerank=False
            )
            assert len(result.candidates) == 10, mode
            assert {c.chunk.chunk_id for c in result.candidates} <= set(visible)


def test_a_permission_revoked_before_the_answer_drops_the_citation_and_its_sentence(
    sample_appliance: Appliance,
) -> None:
    pharmacist = Subject("pharm-haddad", ("pharmacist",), ("pharmacy",))
    claims = _claims(sample_appliance, pharmacist, "chemotherapy extravasation management")
    oncology = [s for s in claims if "chemotherapy" in s.text]
    assert oncology, [s.text for s in claims]
    framing = AnswerSentence("According to hospital documents:", "framing")
    with extra_rule(
        sample_appliance, "p", "user:pharm-haddad", "oncology", "confidential", "cite", "deny"
    ):
        recheck = sample_appliance.guard.recheck_answer(pharmacist, [framing, *claims], TODAY)
    assert recheck.sentences[0] == framing
    kept = {c.chunk_id for s in recheck.sentences for c in s.citations}
    dropped = {d.citation.chunk_id: d.reason for d in recheck.dropped_citations}
    for sentence in oncology:
        chunk_id = sentence.citations[0].chunk_id
        assert chunk_id not in kept and dropped[chunk_id] == "not permitted"
        assert sentence in recheck.dropped_sentences
    assert len(recheck.sentences) == 1 + len(claims) - len(oncology)


def test_when_every_claim_loses_its_citation_nothing_is_left(sample_appliance: Appliance) -> None:
    claims = _claims(sample_appliance, CLINICIAN_ED, "hand hygiene alcohol rub")
    framing = AnswerSentence("In summary:", "framing")
    recheck = sample_appliance.guard.recheck_answer(NOBODY, [framing, *claims], TODAY)
    assert recheck.sentences == ()
    assert len(recheck.dropped_sentences) == len(claims) + 1


def test_a_document_removed_or_superseded_before_the_answer_drops_its_citations(
    corpus_copy: Path, settings: Settings
) -> None:
    with Appliance(settings) as appliance:
        for name in ("sepsis-bundle-v3.md", "sepsis-bundle-v4.md"):
            shutil.copy(SAMPLE_CORPUS / name, corpus_copy / name)
        appliance.ingestor.ingest([corpus_copy])
        reader = replace(CLINICIAN_ED, user_id="dr-a")
        hygiene = _claims(appliance, reader, "alcohol hand rub seconds")
        appliance.ingestor.remove(["hand-hygiene-policy"])
        recheck = appliance.guard.recheck_answer(reader, hygiene, TODAY)
        reasons = {d.citation.chunk_id: d.reason for d in recheck.dropped_citations}
        removed = [s.citations[0].chunk_id for s in hygiene if "hand-hygiene-policy" in s.text]
        assert removed and all(reasons[c] == "removed" for c in removed)

        # Searched across all dates (the v3 bundle is superseded), then answered for today.
        v3 = appliance.catalog.chunk_ids_of("sepsis-bundle-v3")
        claims = [
            AnswerSentence("Old bundle.", "claim", (Citation(chunk_id, "x"),)) for chunk_id in v3
        ]
        today = appliance.guard.recheck_answer(reader, claims, TODAY)
        assert today.sentences == () and {d.reason for d in today.dropped_citations} == {
            "superseded"
        }
        historical = appliance.guard.recheck_answer(reader, claims, dt.date(2024, 6, 1))
        assert len(historical.sentences) == len(claims)


def test_break_the_glass_opens_patient_records_flags_every_use_and_ends(
    sample_appliance: Appliance,
) -> None:
    question = "care plan for patient P-10234"
    assert not any(
        c.chunk.metadata.patient_id
        for c in sample_appliance.query.run(question, CLINICIAN_ED, 10).candidates
    )
    with pytest.raises(AccessDenied):
        sample_appliance.guard.request_break_glass(
            NURSE_CARDIOLOGY, "patient collapsed on the ward", dt.timedelta(minutes=5), "P-10234"
        )
    grant = sample_appliance.guard.request_break_glass(
        CLINICIAN_ED,
        "cardiac arrest in ED, P-10234 unconscious",
        dt.timedelta(minutes=5),
        "P-10234",
    )
    try:
        result = sample_appliance.query.run(question, CLINICIAN_ED, 10)
        assert result.scope.grant == grant
        flagged = [c for c in result.candidates if c.break_glass]
        assert flagged and all(c.chunk.metadata.sensitivity == "restricted" for c in flagged)
        assert not any(c.break_glass for c in result.candidates if c not in flagged)
        uses = audit_entries(sample_appliance.settings.data_dir, "break_glass_use")
        assert uses[-1]["details"]["chunk_ids"] == [c.chunk.chunk_id for c in flagged]
        assert uses[-1]["details"]["grant_id"] == grant.grant_id
        assert uses[-1]["actor"]["user"] == "dr-okafor"
        asked = audit_entries(sample_appliance.settings.data_dir, "question")[-1]["details"]
        assert asked["break_glass_grant"] == grant.grant_id
        assert {c["chunk_id"] for c in asked["candidates"] if "break-the-glass" in c["access"]} == {
            c.chunk.chunk_id for c in flagged
        }
        # An answer reports what it showed (cited, or offered with a refusal), not every
        # passage its search found.
        answer = sample_appliance.answers.ask(
            "What allergies does patient P-10234 have?", CLINICIAN_ED
        )
        shown = {span.chunk_id for s in answer.sentences for span in s.spans}
        shown |= {source.chunk_id for source in answer.closest_sources}
        last_use = audit_entries(sample_appliance.settings.data_dir, "break_glass_use")[-1]
        assert last_use["request_id"] == answer.request_id
        opened = set(last_use["details"]["chunk_ids"])
        assert opened and opened <= shown & {c.chunk.chunk_id for c in flagged}
        assert len(opened) < len(flagged)  # the care plan's other sections were not shown
    finally:
        assert sample_appliance.guard.end_break_glass(CLINICIAN_ED)
    after = sample_appliance.query.run(question, CLINICIAN_ED, 10).candidates
    assert not any(c.chunk.metadata.patient_id for c in after)


def test_a_forbidden_chunk_answers_exactly_like_a_missing_one(sample_appliance: Appliance) -> None:
    care_plan = sorted(sample_appliance.catalog.chunk_ids_of("care-plan-p10234"))[0]
    assert sample_appliance.guard.readable_chunk(NURSE_CARDIOLOGY, care_plan).chunk_id == care_plan
    missing = "care-plan-p99999@1#000000000000"
    with pytest.raises(NotFound) as denied:
        sample_appliance.guard.readable_chunk(CLINICIAN_ED, care_plan)
    with pytest.raises(NotFound) as absent:
        sample_appliance.guard.readable_chunk(CLINICIAN_ED, missing)
    assert type(denied.value) is type(absent.value)
    assert str(denied.value).replace(care_plan, "ID") == str(absent.value).replace(missing, "ID")

    guard = sample_appliance.guard
    assert (
        guard.readable_document(NURSE_CARDIOLOGY, "care-plan-p10234").doc_id == "care-plan-p10234"
    )
    with pytest.raises(NotFound) as denied_document:
        guard.readable_document(CLINICIAN_ED, "care-plan-p10234")
    with pytest.raises(NotFound) as absent_document:
        guard.readable_document(CLINICIAN_ED, "care-plan-p99999")
    assert str(denied_document.value).replace("p10234", "N") == str(absent_document.value).replace(
        "p99999", "N"
    )


def test_errors_and_empty_results_do_not_depend_on_what_exists(
    sample_appliance: Appliance,
) -> None:
    # A question that matches only forbidden chunks looks like one that matches nothing.
    assert sample_appliance.query.run("P-10234", NURSE_CARDIOLOGY, 10, mode="lexical").candidates
    forbidden = sample_appliance.query.run("P-10234", CLINICIAN_ED, 10, mode="lexical")
    nothing = sample_appliance.query.run("zzzqqq", CLINICIAN_ED, 10, mode="lexical")
    assert forbidden.candidates == nothing.candidates == []
    messages = set()
    for subject in (NOBODY, SAMPLE_READER):
        with pytest.raises(QueryError) as error:
            sample_appliance.query.run("x" * 5000, subject, 10)
        messages.add(str(error.value))
    assert len(messages) == 1
