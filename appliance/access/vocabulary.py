"""The roles and departments a site has: what its policy names, what its users hold and
what its documents are labelled with. A command that names anything else is taken for a
typo ("role:nruse", "cardiolgy": a rule or a grant that would quietly match nobody) and
refused with the nearest names, unless the administrator says it is new."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from appliance.access.policy import PolicySnapshot, Rule
from appliance.access.rules import ANY, OWN_DEPARTMENTS, OWNED, Subject

ROLE = "role:"


@dataclass(frozen=True, slots=True)
class Vocabulary:
    roles: frozenset[str]
    departments: frozenset[str]

    @classmethod
    def of(
        cls,
        policy: PolicySnapshot,
        subjects: Iterable[Subject],
        document_departments: Iterable[str],
    ) -> Vocabulary:
        users = list(subjects)
        roles = {role for s in users for role in s.roles} | set(_roles_named(policy))
        departments = {d for s in users for d in s.departments} | set(policy.named_departments)
        departments |= {d.lower() for d in document_departments}
        return cls(frozenset(roles), frozenset(departments))

    def unknown_roles(self, roles: Iterable[str]) -> str | None:
        return _unknown("role", roles, self.roles)

    def unknown_departments(self, departments: Iterable[str]) -> str | None:
        named = [d for d in departments if d not in (ANY, OWN_DEPARTMENTS, OWNED)]
        return _unknown("department", named, self.departments)

    def unknown_in(self, rule: Rule) -> str | None:
        """What a policy rule names that the site does not have, said as a reason."""
        roles = [f[len(ROLE) :] for f in _principals(rule) if f.startswith(ROLE)]
        departments = [rule.fields[1]] if rule.ptype == "p" else []
        return self.unknown_roles(roles) or self.unknown_departments(departments)


def read_without_cite(policy: PolicySnapshot, rule: Rule) -> str | None:
    """A warning when ``rule`` lets someone read documents they may not cite: answers
    then never quote them, which is rarely what was meant."""
    if rule.ptype != "p" or rule.fields[3] != "read" or rule.fields[4] != "allow":
        return None
    subject, department, sensitivity = rule.fields[:3]
    cites = any(
        r.fields[:3] == (subject, department, sensitivity) and r.fields[3:] == ("cite", "allow")
        for r in policy.chunk_rules
    )
    if cites:
        return None
    return (
        f"{subject} may read {sensitivity} documents of {department} but not cite them: "
        f"answers will not quote them (add 'p, {subject}, {department}, {sensitivity}, cite, "
        "allow' if they should)"
    )


def _principals(rule: Rule) -> list[str]:
    return list(rule.fields[:2]) if rule.ptype == "g" else [rule.fields[0]]


def _roles_named(policy: PolicySnapshot) -> list[str]:
    rules = policy.chunk_rules + policy.system_rules + policy.inheritance
    return [f[len(ROLE) :] for r in rules for f in _principals(r) if f.startswith(ROLE)]


def _unknown(kind: str, names: Iterable[str], known: frozenset[str]) -> str | None:
    for name in names:
        if name not in known:
            near = difflib.get_close_matches(name, sorted(known), n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            return f"no {kind} {name!r} in the policy, the users or the documents{hint}"
    return None
