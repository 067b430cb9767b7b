"""Compiles what a subject may do into a search filter that every engine applies inside
its own search, so that a user who may read 5% of the corpus still gets a full top-k.

Each clause mirrors one predicate of ``rules.py``; the tests hold the two equal on
every chunk of generated corpora and policies.
"""

from __future__ import annotations

from appliance.access.policy import PolicySnapshot, Rule
from appliance.access.rules import (
    ANY,
    OWN_DEPARTMENTS,
    OWNED,
    Subject,
)
from appliance.index.filters import NO_PATIENT, AllOf, AnyOf, NoneOf, OneOf, SearchFilter
from appliance.records import SENSITIVITIES

MATCH_NOTHING: SearchFilter = OneOf(())
"""No clause can hold: the engines return nothing (and the retriever need not ask them)."""


def compile_access_filter(policy: PolicySnapshot, subject: Subject, action: str) -> SearchFilter:
    """The chunks ``subject`` may ``action``: some allow row matches, no deny row does,
    and a patient-specific chunk is about a patient in the care team."""
    principals = policy.inherited_principals(subject)
    rows = [r for r in policy.chunk_rules if r.fields[3] == action and r.fields[0] in principals]
    allowed = [_row_clause(r, subject) for r in rows if r.fields[4] == "allow"]
    if not allowed:
        return MATCH_NOTHING
    clauses: list[SearchFilter] = [OneOf(tuple(allowed))]
    denied = [_row_clause(r, subject) for r in rows if r.fields[4] == "deny"]
    if denied:
        clauses.append(NoneOf(tuple(denied)))
    patients = (NO_PATIENT, *sorted(set(subject.care_team)))
    clauses.append(AnyOf("patient_id", patients))
    return AllOf(tuple(clauses))


def _row_clause(rule: Rule, subject: Subject) -> SearchFilter:
    """The chunks one row covers for this subject."""
    _principal, scope, sensitivity, _action, _effect = rule.fields
    levels = (
        tuple(s for s in SENSITIVITIES if s != "restricted")
        if sensitivity == ANY
        else (sensitivity,)
    )
    clauses: list[SearchFilter] = [AnyOf("sensitivity", levels)]
    if scope == OWN_DEPARTMENTS:
        clauses.append(AnyOf("departments", subject.home_departments))
    elif scope == OWNED:
        clauses.append(AnyOf("owner", (subject.user_id, *subject.departments)))
    elif scope != ANY:
        clauses.append(AnyOf("departments", (scope,)))
    return AllOf(tuple(clauses))
