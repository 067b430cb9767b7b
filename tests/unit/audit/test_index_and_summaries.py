"""The audit index's search (case, documents, pages, totals) on a real log, and the
plain-words line each kind of entry gets."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit.index import AuditIndex, Query
from audit.log import AuditLog
from audit.report import period_report
from audit.summaries import named_ids, summary


@pytest.fixture
def index(tmp_path: Path) -> Iterator[AuditIndex]:
    log = AuditLog(tmp_path / "audit")
    for n in range(7):
        log.append("document_view", "dr-okafor", ["clinician"],
                   {"doc_id": f"doc-{n % 3}", "version": "1", "why": "direct"})  # fmt: skip
    log.append("document_view", "nurse-li", ["nurse"],
               {"doc_id": "Sepsis-Bundle", "version": "3", "why": "citation"})  # fmt: skip
    index = AuditIndex(log)
    yield index
    index.close()
    log.close()


def test_exact_by_default_and_any_case_when_asked(index: AuditIndex) -> None:
    assert index.positions(Query(user="DR-OKAFOR")) == []
    assert index.count(Query(user="DR-OKAFOR", ignore_case=True)) == 7
    assert index.positions(Query(doc_id="sepsis-bundle", ignore_case=True)) == [7]
    assert index.positions(Query(doc_id="sepsis-bundle")) == []


def test_several_documents_pages_and_totals(index: AuditIndex) -> None:
    query = Query(doc_ids=("doc-0", "doc-2"), limit=2, newest_first=True)
    assert index.count(query) == 5  # doc-0 at 0, 3, 6; doc-2 at 2, 5
    assert index.positions(query) == [6, 5]
    assert index.positions(
        Query(doc_ids=("doc-0", "doc-2"), limit=2, offset=4, newest_first=True)
    ) == [0]
    assert index.positions(Query(limit=3, offset=6)) == [6, 7]


def test_each_kind_of_entry_reads_in_plain_words() -> None:
    names = {"sepsis-bundle": "Sepsis Bundle (sepsis-bundle)", "c1": "Care Plan v1, Allergies"}
    granted = {"type": "break_glass_granted", "details": {
        "grant_id": 4, "reason": "arrest in ED", "patient_id": "P-1", "expires_at": "T"}}  # fmt: skip
    used = {"type": "break_glass_use", "details": {"grant_id": 4, "chunk_ids": ["c1", "c9"]}}
    policy = {"type": "policy_change", "details": {
        "added": ["p, role:nurse, ward, read"], "removed": [], "version_before": "a",
        "version_after": "b"}}  # fmt: skip
    viewed = {"type": "document_view", "details": {
        "doc_id": "sepsis-bundle", "version": "3", "why": "citation"}}  # fmt: skip
    assert summary(granted) == (
        "emergency access opened (grant 4) for P-1 until T; reason: arrest in ED"
    )
    assert summary(used, names) == "emergency access (grant 4) showed: Care Plan v1, Allergies; c9"
    assert summary(policy) == "added p, role:nurse, ward, read (policy a -> b)"
    assert summary(viewed, names) == (
        "opened Sepsis Bundle (sepsis-bundle) (version 3) from an answer's citation"
    )
    assert named_ids([used, viewed]) == {"c1", "c9", "sepsis-bundle"}
    changed = {"type": "account_change", "details": {"action": "changed", "user": "nurse-ade",
               "changes": {"granted departments": ["icu", "ed"]}}}  # fmt: skip
    assert summary(changed) == "changed nurse-ade: granted departments icu, ed"
    assert summary({"type": "something_new", "details": {"reason": "x"}}) == "reason: x"


def _entry(kind: str, user: str, time: str, **details: object) -> dict[str, object]:
    return {"type": kind, "actor": {"user": user}, "time": time, "details": details}


def test_a_period_report_counts_rates_reviews_and_alerts() -> None:
    cited = {"citations": [{"doc_id": "sepsis-bundle"}]}
    entries = [
        _entry("question", "dr-a", "2026-11-02T09:00:00Z"),
        _entry("answer", "dr-a", "2026-11-02T09:00:01Z", sentences=[cited, cited]),
        _entry("question", "dr-a", "2026-11-02T09:05:00Z"),
        _entry("answer", "dr-a", "2026-11-02T09:05:01Z", refusal="not in the documents"),
        _entry("feedback", "dr-a", "2026-11-02T09:06:00Z",
               documents=[{"doc_id": "sepsis-bundle", "title": "Sepsis Bundle"}]),
        _entry("break_glass_granted", "dr-a", "2026-11-03T02:00:00Z", grant_id=1,
               reason="arrest", patient_id="P-1", expires_at="x"),
        _entry("break_glass_use", "dr-a", "2026-11-03T02:01:00Z", grant_id=1, chunk_ids=["c1"]),
        _entry("break_glass_granted", "nurse-b", "2026-11-04T02:00:00Z", grant_id=2,
               reason="fall", patient_id=None, expires_at="x"),
        *[_entry("sign_in_failed", "anonymous", "2026-11-05T00:00:00Z",
                 attempted_user="admin", method="password") for _ in range(5)],
    ]  # fmt: skip
    reviews = [_entry("break_glass_reviewed", "audit-ito", "2026-11-20T10:00:00Z",
                      grant_id=2, note="seen")]  # fmt: skip
    report = period_report(
        entries, "2026-11-01", "2026-11-30", reviews=reviews,
        departments={"dr-a": ["emergency", "cardiology"]},
        now=dt.datetime(2026, 12, 1, tzinfo=dt.UTC), review_days=3,
    )  # fmt: skip
    assert report.by_type["answer"] == 2 and report.refusal_rate == 0.5 and report.flag_rate == 0.5
    assert report.by_user["dr-a"].questions == 2 and report.by_user["dr-a"].refused == 1
    assert report.by_department["cardiology"].questions == 2
    assert report.by_department["(unknown)"].emergency_accesses == 1  # nurse-b has none listed
    assert report.by_document["sepsis-bundle"].cited == 1
    assert report.by_document["sepsis-bundle"].flagged == 1
    first, second = report.emergency_access
    assert (first.passages_shown, first.reviewed_by) == (1, None)
    assert (second.reviewed_by, second.review_note) == ("audit-ito", "seen")
    assert report.alerts == [
        "emergency access 1 by dr-a on 2026-11-03 not reviewed after 3 days (reason: arrest)",
        "5 failed sign-ins as 'admin'",
    ]
    rows = list(csv.reader(io.StringIO(report.to_csv())))
    assert ["totals", "refusal rate", "fraction", "0.5000"] in rows
    assert ["emergency access", "2", "reviewed_by", "audit-ito"] in rows
    # within its review days an access is not yet an alert
    early = period_report(entries, None, None, now=dt.datetime(2026, 11, 4, tzinfo=dt.UTC))
    assert not any("emergency access" in a for a in early.alerts)


def test_one_user_far_above_the_others_is_an_alert() -> None:
    asked = [
        _entry("question", f"dr-{n}", "2026-11-02T09:00:00Z") for n in range(4) for _ in range(5)
    ]
    asked += [_entry("question", "dr-x", "2026-11-02T10:00:00Z") for _ in range(40)]
    report = period_report(asked, None, None)
    assert report.alerts == ["dr-x asked 40 times, more than 3 times the median of 5"]
