"""The golden-set evaluation and its release gates, on the sample corpus."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from appliance.access.rules import Subject
from appliance.access.subjects import SubjectDirectory
from appliance.engines import Appliance
from appliance.eval.golden import (
    GoldenReport,
    NoDocuments,
    check_gates,
    evaluate,
    gold_chunk_ids,
    gold_quotes,
    latency,
    token_f1,
)
from appliance.eval.report import write_golden_report
from tests.conftest import SAMPLE_CORPUS, SAMPLE_SUBJECTS, SLOW, make_settings


def test_token_f1() -> None:
    assert (
        token_f1("Rub for 20 to 30 seconds until dry.", "Rub for 20 to 30 seconds until dry") == 1.0
    )
    assert token_f1("nothing shared", "Rub for 20 seconds") == 0.0
    assert 0 < token_f1("Rub hands for 20 seconds", "Rub for 20 to 30 seconds") < 1


def test_latency_percentiles_interpolate() -> None:
    assert latency(GoldenReport(answer_ms=[100.0, 300.0])) == {"p50_ms": 200.0, "p95_ms": 290.0}
    assert latency(GoldenReport()) == {}


def test_gates_fail_with_the_figure_named(tmp_path: Path) -> None:
    gates = tmp_path / "gates.toml"
    gates.write_text("[minimum]\nexact_span_validity = 1.0\n[maximum]\nfalse_refusal_rate = 0.1\n")
    report = GoldenReport(exact_span_validity=0.95, false_refusal_rate=0.2)
    assert check_gates(report, gates) == [
        "exact_span_validity 0.950 is below the gate 1.0",
        "false_refusal_rate 0.200 is above the gate 0.1",
    ]
    gates.write_text("[minimum]\nhappiness = 1.0\n")
    with pytest.raises(ValueError, match="unknown figures"):
        check_gates(report, gates)
    # Asked as one of the site's users, the [as_a_user] gates apply (and only they).
    gates.write_text(
        "[maximum]\nfalse_refusal_rate = 0.1\n[as_a_user.maximum]\nunsafe_answers = 0\n"
    )
    assert check_gates(report, gates, as_a_user=True) == []
    assert check_gates(GoldenReport(unsafe_answers=1), gates, as_a_user=True) == [
        "unsafe_answers 1.000 is above the gate 0"
    ]
    gates.write_text("[maximum]\nfalse_refusal_rate = 0.1\n")  # none for a user: these
    assert check_gates(report, gates, as_a_user=True) == [
        "false_refusal_rate 0.200 is above the gate 0.1"
    ]
    gates.write_text("[as_a_user.minimum]\nhappiness = 1.0\n")
    with pytest.raises(ValueError, match="unknown figures"):
        check_gates(report, gates)


def test_a_small_golden_set_end_to_end(sample_appliance: Appliance, tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    rows = [
        {"question": "How long should I rub my hands with alcohol gel?", "doc_id": "hand-hygiene-policy",
         "quote": "Rub for 20 to 30 seconds until dry"},
        {"question": "Which body sites are swabbed for an MRSA screen?", "doc_id": "mrsa-screening",
         "quote": "Swab both anterior nares and the groin"},
        {"question": "How do I book annual leave?", "answerable": False},
    ]  # fmt: skip
    golden.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    told: list[tuple[int, int]] = []
    lock = threading.Lock()
    entered: list[tuple[int, ...]] = []

    @contextmanager
    def hold() -> Iterator[None]:  # the engines of a running service, taken in turn
        assert lock.acquire(blocking=False), "hold() entered while held"
        entered.append(tuple(told))
        try:
            yield
        finally:
            lock.release()

    report = evaluate(
        sample_appliance, golden, lambda done, total: told.append((done, total)), hold=hold
    )
    assert told == [(1, 3), (2, 3), (3, 3)]  # the unanswerable one (a `continue`) counted too
    # once to read the catalog, then once per question, released before its progress
    assert [len(progress) for progress in entered] == [0, 0, 1, 2]
    assert report.questions == 3 and report.answerable == 2 and not report.failures
    assert report.exact_span_validity == 1.0 and report.citations >= 2
    assert report.recall_at_10_before_rerank == 1.0
    assert report.correct_refusal_rate == 1.0 and report.false_refusal_rate == 0.0
    assert report.answer_contains_gold == 1.0
    assert report.rerank_stages == ["CAGE (top 10, alpha 0.7, 30 epochs)"]  # no cross-encoder
    paths = write_golden_report(report, [], tmp_path / "report", "test")
    assert [p.name for p in paths] == ["golden.md", "golden.json", "golden.png"]
    markdown = paths[0].read_text()
    assert "Gates: all pass" in markdown
    assert "Rerank after fusion: CAGE (top 10, alpha 0.7, 30 epochs)." in markdown
    assert json.loads(paths[1].read_text())["rerank_stages"] == report.rerank_stages


def test_an_answer_to_a_question_labelled_unanswerable_counts_as_unsafe(
    sample_appliance: Appliance, tmp_path: Path
) -> None:
    golden = tmp_path / "golden.jsonl"
    rows = [
        {"question": "How long should I rub my hands with alcohol gel?", "answerable": False},
        {"question": "How do I book annual leave?", "answerable": False},
    ]
    golden.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = evaluate(sample_appliance, golden)
    assert report.unsafe_answers == 1
    assert [o["unsafe"] for o in report.per_question] == [True, False]
    gates = tmp_path / "gates.toml"
    gates.write_text("[maximum]\nunsafe_answers = 0\n")
    assert check_gates(report, gates) == ["unsafe_answers 1.000 is above the gate 0"]


def test_a_golden_set_is_asked_as_the_reader_given(
    sample_appliance: Appliance, tmp_path: Path
) -> None:
    """A ward nurse may not read the oncology unit's confidential extravasation
    guideline: asked as that nurse the question is refused (a false refusal of the
    report), asked as the default reader of everything it is answered."""
    golden = tmp_path / "golden.jsonl"
    row = {"question": "Who is contacted about dexrazoxane after an anthracycline extravasation?",
           "doc_id": "chemotherapy-extravasation",
           "quote": "contact the oncology registrar about dexrazoxane"}  # fmt: skip
    golden.write_text(json.dumps(row) + "\n")
    nurse = Subject("nurse-lindqvist", ("nurse",), ("cardiology", "nursing"))
    as_nurse = evaluate(sample_appliance, golden, reader=nurse)
    assert as_nurse.false_refusal_rate == 1.0 and as_nurse.answer_contains_gold == 0.0
    as_everyone = evaluate(sample_appliance, golden)
    assert as_everyone.false_refusal_rate == 0.0 and as_everyone.answer_contains_gold == 1.0


def test_no_demo_user_gets_an_unsafe_answer_from_the_sample_sets(
    sample_appliance: Appliance, tmp_path: Path
) -> None:
    """The release gates ask as a reader of everything, but what a user may read
    changes the passages a question meets and how its words weigh: an emergency
    clinician was once answered a question the gates saw refused. So every demo user
    of the sample corpus (every role, two clinicians of different departments) asks the questions both sample sets mark
    unanswerable (every question in slow mode): none may be answered, and every
    citation given must be an exact span of its document."""
    rows = [
        line
        for name in ("golden.jsonl", "golden-graph.jsonl")
        for line in (SAMPLE_CORPUS.parent / name).read_text(encoding="utf-8").splitlines()
        if SLOW or not json.loads(line).get("answerable", True)
    ]
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(rows) + "\n")
    users = SubjectDirectory(SAMPLE_SUBJECTS).subjects()
    assert len({role for user in users.values() for role in user.roles}) == 6
    for user in users.values():
        report = evaluate(sample_appliance, golden, reader=user)
        assert report.asked_as == user.user_id
        unsafe = [o["question"] for o in report.per_question if o["unsafe"]]
        assert report.unsafe_answers == 0, (user.user_id, unsafe)
        assert report.exact_span_validity == 1.0, user.user_id
        assert report.correct_refusal_rate == 1.0, user.user_id


def test_every_golden_quote_of_the_sample_corpus_stands_in_one_of_its_chunks(
    sample_appliance: Appliance,
) -> None:
    """A golden row whose quote no chunk holds would count as a miss of the product; the
    sets are data, and this keeps them true to the corpus (both sample sets)."""
    for name in ("golden.jsonl", "golden-graph.jsonl"):
        for line in (SAMPLE_CORPUS.parent / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("answerable", True):
                found, missing = gold_chunk_ids(sample_appliance.catalog, gold_quotes(row))
                assert found and not missing, (name, row["question"])


def test_nothing_ingested_is_said_before_any_question(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"question": "How do I book annual leave?", "answerable": False}))
    with (
        Appliance(make_settings(tmp_path / "data")) as empty,
        pytest.raises(NoDocuments, match="no documents in .*appliance ingest"),
    ):
        evaluate(empty, golden, lambda done, total: pytest.fail("a question was asked"))
