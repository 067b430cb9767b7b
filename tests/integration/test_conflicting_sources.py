"""Documents that disagree, on the real answer path: a trust-wide policy and the sample
sepsis bundle (a departmental guideline) dose one antibiotic differently for one
condition. The answer shows both, the trust's first, with why it prevails; the audit
record keeps the disagreement. With the knowledge graph and without it."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from appliance.engines import Appliance
from appliance.index.filters import ActiveOn
from tests.conftest import SAMPLE_CORPUS, SAMPLE_READER, audit_entries, make_settings

TRUST_POLICY = Path(__file__).parents[1] / "data" / "antimicrobial-prescribing-policy.md"

TODAY = dt.date(2026, 12, 1)
QUESTION = "What is the first aztreonam dose for a patient with a documented penicillin allergy?"


@pytest.fixture(scope="module", params=["none", "arcadedb"])
def appliance(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Appliance]:
    corpus = tmp_path_factory.mktemp("conflicting")
    shutil.copy(SAMPLE_CORPUS / "sepsis-bundle-v4.md", corpus)
    shutil.copy(TRUST_POLICY, corpus)
    data = tmp_path_factory.mktemp("conflicting-data")
    with Appliance(make_settings(data, graph={"engine": request.param})) as appliance:
        assert not appliance.ingestor.ingest([corpus]).failed
        yield appliance


def test_an_answer_shows_both_sources_and_which_prevails(appliance: Appliance) -> None:
    answer = appliance.answers.ask(QUESTION, SAMPLE_READER, ActiveOn(TODAY), in_force_on=TODAY)
    assert not answer.refused, answer.refusal_reason
    [conflict] = answer.conflicts
    assert conflict.about == "the dose of aztreonam for penicillin allergy"
    policy, bundle = conflict.sources
    assert (policy.source.doc_id, policy.authority) == ("antimicrobial-prescribing-policy", "trust")
    assert (bundle.source.doc_id, bundle.authority) == ("sepsis-bundle-v4", "department")
    assert "aztreonam 1 g IV" in policy.statement and "aztreonam 2 g IV" in bundle.statement
    assert bundle.source.version == "4" and bundle.source.effective_from == "2025-03-01"
    assert conflict.precedence is not None and conflict.precedence.startswith(
        "Antimicrobial Prescribing Policy prevails"
    )
    # the statement is where the source says it stands
    document = appliance.catalog.document_text(bundle.source.doc_id) or ""
    assert document[bundle.source.start : bundle.source.end] == bundle.statement
    shown = answer.to_dict()["conflicts"]
    assert shown[0]["sources"][0]["authority"] == "trust"  # type: ignore[index]
    record = audit_entries(appliance.settings.data_dir, "answer")[-1]["details"]
    assert record["conflicts"] == shown


def test_a_question_the_sources_agree_on_has_no_conflict(appliance: Appliance) -> None:
    question = "Within how many minutes must the critical care outreach team be informed?"
    answer = appliance.answers.ask(question, SAMPLE_READER, ActiveOn(TODAY), in_force_on=TODAY)
    assert not answer.refused and answer.conflicts == ()
