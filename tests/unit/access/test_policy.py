"""The shipped policy as a truth table, and the policy store's edits and reloads."""

from __future__ import annotations

import csv
import datetime as dt
import os
from dataclasses import replace
from pathlib import Path

import pytest

from appliance.access.break_glass import BreakGlassError, BreakGlassLedger
from appliance.access.events import CollectingEventSink
from appliance.access.filter_compiler import MATCH_NOTHING, compile_access_filter
from appliance.access.policy import PolicyError, PolicyStore, Rule
from appliance.access.rules import Resource, Subject
from appliance.settings import PROJECT_ROOT

MODEL = PROJECT_ROOT / "policies" / "model.conf"
SHIPPED = PROJECT_ROOT / "policies" / "policy.csv"
TRUTH_TABLE = Path(__file__).resolve().parents[2] / "data" / "access_truth_table.csv"
PATIENT_IN_TEAM, PATIENT_OUTSIDE = "P-100", "P-200"


@pytest.fixture
def store(tmp_path: Path) -> PolicyStore:
    return PolicyStore(MODEL, tmp_path / "policy.csv", SHIPPED, CollectingEventSink())


def _truth_rows() -> list[dict[str, str]]:
    with TRUTH_TABLE.open(encoding="utf-8") as file:
        return list(csv.DictReader(line for line in file if not line.startswith("#")))


def _case(row: dict[str, str]) -> tuple[Subject, Resource]:
    subject = Subject(
        "u-1",
        (row["role"],),
        departments=("cardiology",),
        care_team=(PATIENT_IN_TEAM,),
        break_glass=row["break_glass"] == "yes",
    )
    department = "cardiology" if row["same_department"] == "yes" else "oncology"
    patient = {"none": "", "in-care-team": PATIENT_IN_TEAM, "outside-care-team": PATIENT_OUTSIDE}
    resource = Resource(
        doc_id="d",
        departments=(department,),
        sensitivity=row["sensitivity"],
        owner=department,
        patient_id=patient[row["patient"]],
    )
    return subject, resource


def test_the_truth_table_covers_every_role_sensitivity_department_and_care_team_case() -> None:
    rows = _truth_rows()
    plain = {
        (r["role"], r["sensitivity"], r["same_department"], r["patient"])
        for r in rows
        if r["break_glass"] == "no"
    }
    assert len(plain) == 6 * 4 * 2 * 3


@pytest.mark.parametrize(
    "row",
    _truth_rows(),
    ids=lambda r: "-".join(v for k, v in r.items() if k not in ("read", "cite")),
)
def test_shipped_policy_truth_table(store: PolicyStore, row: dict[str, str]) -> None:
    subject, resource = _case(row)
    snapshot = store.current()
    for action in ("read", "cite"):
        allowed = snapshot.enforcer.enforce(subject, resource, action)
        assert allowed == (row[action] == "allow"), (action, row)


SYSTEM_TRUTH = {
    "clinician": {"request-break-glass"},
    "department_head": {"request-break-glass"},
    "nurse": set(),
    "pharmacist": set(),
    "compliance_officer": {"review-audit"},
    "it_admin": {"ingest", "administer"},
}


@pytest.mark.parametrize("role", sorted(SYSTEM_TRUTH))
def test_shipped_policy_system_actions(store: PolicyStore, role: str) -> None:
    enforcer = store.current().enforcer
    context = enforcer.new_enforce_context("2")
    subject = Subject("u-1", (role,))
    granted = {
        action
        for action in ("ingest", "administer", "review-audit", "request-break-glass")
        if enforcer.enforce(context, subject, action)
    }
    assert granted == SYSTEM_TRUTH[role]


def test_a_subject_with_no_known_role_gets_nothing(store: PolicyStore) -> None:
    subject = Subject("visitor", ("volunteer",), departments=("cardiology",))
    public = Resource("d", ("all",), "public", "x")
    assert not store.current().enforcer.enforce(subject, public, "read")
    assert compile_access_filter(store.current(), subject, "read") == MATCH_NOTHING


def test_a_user_rule_grants_one_person_a_restricted_department(store: PolicyStore) -> None:
    pharmacist = Subject("pharm-1", ("pharmacist",), departments=("pharmacy",))
    oncology = Resource("d", ("oncology",), "restricted", "oncology")
    assert not store.current().enforcer.enforce(pharmacist, oncology, "read")
    store.add(Rule.parse("p", ["user:pharm-1", "oncology", "restricted", "read", "allow"]), "admin")
    assert store.current().enforcer.enforce(pharmacist, oncology, "read")
    assert not store.current().enforcer.enforce(pharmacist, oncology, "cite")


def test_edits_are_validated_audited_and_hot_reloaded(store: PolicyStore) -> None:
    events = store._events  # type: ignore[attr-defined]
    nurse = Subject("n-1", ("nurse",), departments=("icu",))
    oncology = Resource("d", ("oncology",), "confidential", "oncology")
    before = store.current()
    assert not before.enforcer.enforce(nurse, oncology, "read")

    rule = Rule.parse("p", ["role:nurse", "*", "confidential", "read", "allow"])
    store.add(rule, "it-santos")
    after = store.current()
    assert after.version != before.version
    assert after.enforcer.enforce(nurse, oncology, "read")
    with pytest.raises(PolicyError, match="already has"):
        store.add(rule, "it-santos")

    store.remove(rule, "it-santos")
    assert not store.current().enforcer.enforce(nurse, oncology, "read")
    assert store.current().version == before.version
    with pytest.raises(PolicyError, match="no rule"):
        store.remove(rule, "it-santos")

    kinds = [(e.kind, e.actor, e.details["added"], e.details["removed"]) for e in events.events]
    assert kinds == [
        ("policy_change", "it-santos", [rule.line()], []),
        ("policy_change", "it-santos", [], [rule.line()]),
    ]
    assert events.events[0].details["version_before"] == before.version


def test_a_change_made_by_another_process_applies_to_the_next_decision(
    store: PolicyStore, tmp_path: Path
) -> None:
    other = PolicyStore(MODEL, store.path, SHIPPED, CollectingEventSink())
    nurse = Subject("n-1", ("nurse",), departments=("icu",))
    oncology = Resource("d", ("oncology",), "confidential", "oncology")
    assert not store.current().enforcer.enforce(nurse, oncology, "read")
    other.add(Rule.parse("p", ["role:nurse", "oncology", "confidential", "read", "allow"]), "a")
    assert store.current().enforcer.enforce(nurse, oncology, "read")


@pytest.mark.parametrize(
    ("ptype", "fields", "message"),
    [
        ("p", ["role:nurse", "*", "secret", "read", "allow"], "sensitivity 'secret'"),
        ("p", ["role:nurse", "*", "public", "delete", "allow"], "chunk action 'delete'"),
        ("p", ["nurse", "*", "public", "read", "allow"], "role:NAME or user:ID"),
        ("p", ["role:nurse", "*", "public", "read", "maybe"], "effect 'maybe'"),
        ("p", ["role:nurse", "*", "public", "read"], "has 5 fields"),
        ("p2", ["role:nurse", "read", "allow"], "system action 'read'"),
        ("g", ["role:nurse", "user:bob"], "role:NAME"),
        ("g", ["role:nurse", "role:nurse"], "cannot inherit itself"),
        ("x", ["a"], "unknown rule type"),
        ("p", ["role:nurse", "own dept", "public", "read", "allow"], "department 'own dept'"),
    ],
)
def test_malformed_rules_are_refused_with_the_reason(
    store: PolicyStore, ptype: str, fields: list[str], message: str
) -> None:
    text_before = store.path.read_text()
    with pytest.raises(ValueError, match=message):
        store.add(Rule.parse(ptype, fields), "admin")
    assert store.path.read_text() == text_before


def test_a_hand_edit_that_breaks_the_policy_fails_closed_with_the_line(store: PolicyStore) -> None:
    store.current()
    with store.path.open("a") as file:
        file.write("p, role:nurse, *, secret, read, allow\n")
    os.utime(store.path, ns=(1, 1))  # a different mtime even on a coarse clock
    with pytest.raises(PolicyError, match=r"policy line \d+: sensitivity 'secret'"):
        store.current()


def test_the_site_policy_starts_as_a_copy_of_the_shipped_one(store: PolicyStore) -> None:
    assert store.path.read_text() == SHIPPED.read_text()


class _Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now


def test_break_glass_needs_a_reason_is_time_limited_and_announced(tmp_path: Path) -> None:
    events = CollectingEventSink()
    clock = _Clock()
    ledger = BreakGlassLedger(tmp_path / "bg.sqlite3", events, clock)
    with pytest.raises(BreakGlassError, match="written reason"):
        ledger.grant("dr-a", "urgent", dt.timedelta(minutes=30), "P-1")
    with pytest.raises(BreakGlassError, match="different words"):
        ledger.grant("dr-a", "x" * 40, dt.timedelta(minutes=30), "P-1")
    with pytest.raises(BreakGlassError, match="at most"):
        ledger.grant("dr-a", "cardiac arrest in resus bay " * 30, dt.timedelta(minutes=30), "P-1")
    with pytest.raises(BreakGlassError, match="lasts between"):
        ledger.grant("dr-a", "cardiac arrest, patient unconscious", dt.timedelta(days=2), "P-1")
    with pytest.raises(BreakGlassError, match="names the patient"):
        ledger.grant("dr-a", "cardiac arrest, patient unconscious", dt.timedelta(minutes=5), "")
    assert ledger.active("dr-a") is None and events.events == []

    grant = ledger.grant(
        "dr-a", "cardiac arrest, patient P-1 unconscious", dt.timedelta(minutes=30), "P-1"
    )
    assert grant.patient_id == "P-1"
    with pytest.raises(BreakGlassError, match="already open"):  # grants do not stack
        ledger.grant("dr-a", "another emergency, patient in resus", dt.timedelta(minutes=5), "P-2")
    assert ledger.active("dr-a") == grant and ledger.active("dr-b") is None
    clock.now += dt.timedelta(minutes=29)
    assert ledger.active("dr-a") is not None
    clock.now += dt.timedelta(minutes=1)
    assert ledger.active("dr-a") is None  # expired
    assert not ledger.end("dr-a", "dr-a")

    ledger.grant("dr-a", "second emergency, patient P-2 in resus", dt.timedelta(minutes=10), "P-2")
    assert ledger.end("dr-a", "dr-a") and ledger.active("dr-a") is None
    assert [e.kind for e in events.events] == [
        "break_glass_granted",
        "break_glass_granted",
        "break_glass_ended",
    ]
    assert events.events[0].details["reason"] == "cardiac arrest, patient P-1 unconscious"


def test_subjects_cannot_claim_break_glass_as_a_role() -> None:
    with pytest.raises(ValueError, match="granted only by the ledger"):
        Subject("u", ("clinician", "break-glass"))
    with pytest.raises(ValueError, match="not a valid role"):
        Subject("u", ("clinician, nurse",))


def test_candidates_sharing_a_decision_key_are_decided_as_the_full_enforcer_would(
    store: PolicyStore, tmp_path: Path
) -> None:
    """The per-query memo and the narrowed enforcer, against the full enforcer, on a grid
    of labels for every demo user (with and without break-the-glass)."""
    from appliance.access.guard import AccessScope
    from appliance.access.subjects import SubjectDirectory

    store.add(Rule.parse("p", ["role:nurse", "oncology", "restricted", "read", "allow"]), "a")
    snapshot = store.current()
    users = SubjectDirectory(PROJECT_ROOT / "appliance/sample_corpus/subjects.toml").subjects()
    for base in users.values():
        for subject in (base, replace(base, break_glass=True)):
            own = subject.departments[0]
            grid = [
                Resource(f"d{n}", departments, sensitivity, owner, patient)
                for n, (departments, sensitivity, owner, patient) in enumerate(
                    (d, s, o, p)
                    for d in ((), (own,), ("oncology",), ("all",), (own, "oncology"))
                    for s in ("public", "internal", "confidential", "restricted")
                    for o in (subject.user_id, own, "someone-else", "another-team")
                    for p in ("", *subject.care_team[:1], "P-998", "P-999")
                )
            ]
            scope = AccessScope(subject, "read", MATCH_NOTHING, snapshot, None)
            for resource in grid:
                expected = snapshot.enforcer.enforce(subject, resource, "read")
                assert scope.allows(resource) == expected, (subject, resource)
            assert len(scope._decisions) < len(grid)  # the memo did share decisions
