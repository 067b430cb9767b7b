"""The site's policy: a Casbin enforcer over ``policies/model.conf`` and the site's copy
of ``policy.csv``, reloaded whenever the file changes (no restart), edited only through
``add``/``remove`` so that every change is validated, written atomically and audited.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path

import casbin

from appliance.access.events import AccessEvent, EventSink
from appliance.access.files import write_atomically
from appliance.access.rules import (
    ANY,
    OWN_DEPARTMENTS,
    OWNED,
    Resource,
    Subject,
    care_team_admits,
    covers_department,
    covers_sensitivity,
    validate_row,
)


class PolicyError(ValueError):
    """A policy edit that would leave the policy wrong (malformed, duplicate, absent)."""


@dataclass(frozen=True, slots=True)
class Rule:
    ptype: str
    fields: tuple[str, ...]

    @classmethod
    def parse(cls, ptype: str, fields: list[str] | tuple[str, ...]) -> Rule:
        cleaned = [f.strip() for f in fields]
        validate_row(ptype, cleaned)
        return cls(ptype, tuple(cleaned))

    def line(self) -> str:
        return ", ".join((self.ptype, *self.fields))


@dataclass(frozen=True, slots=True)
class PolicySnapshot:
    """One loaded version of the policy: the enforcer and the rows it was built from."""

    model_path: Path
    version: str
    """sha256 of the policy file: recorded with every decision for the audit trail."""
    chunk_rules: tuple[Rule, ...]
    system_rules: tuple[Rule, ...]
    inheritance: tuple[Rule, ...]
    enforcer: casbin.Enforcer = field(init=False)
    _narrowed: dict[tuple[frozenset[str], str], casbin.Enforcer] = field(
        init=False, default_factory=dict
    )

    named_departments: frozenset[str] = field(init=False)
    """Departments the policy's rows name: the only labels besides the asker's own that
    can change a decision."""

    def __post_init__(self) -> None:
        rules = self.chunk_rules + self.system_rules + self.inheritance
        object.__setattr__(self, "enforcer", _enforcer(self.model_path, rules))
        named = {r.fields[1] for r in self.chunk_rules} - {ANY, OWN_DEPARTMENTS, OWNED}
        object.__setattr__(self, "named_departments", frozenset(named))

    def decision_key(self, subject: Subject, resource: Resource) -> Resource:
        """The resource with every label the policy cannot see for this subject blanked.

        Two chunks with the same key get the same decision (the predicates of ``rules.py``
        read nothing else), so a query checks each key once: candidates from one
        document, or from documents labelled alike, share a single enforcer call."""
        relevant = self.named_departments.union(subject.home_departments)
        patient = resource.patient_id
        if patient and patient not in subject.care_team:
            patient = "-outside-care-team"
        return Resource(
            doc_id="",
            departments=tuple(d for d in resource.departments if d in relevant),
            sensitivity=resource.sensitivity,
            owner=resource.owner
            if resource.owner in (subject.user_id, *subject.departments)
            else "",
            patient_id=patient,
        )

    def inherited_principals(self, subject: Subject) -> frozenset[str]:
        """The subject's principals and every role they inherit."""
        manager = self.enforcer.get_role_manager()
        found = set(subject.principals)
        frontier = list(found)
        while frontier:
            for parent in manager.get_roles(frontier.pop()):
                if parent not in found:
                    found.add(parent)
                    frontier.append(parent)
        return frozenset(found)

    def enforcer_for(self, subject: Subject, action: str) -> casbin.Enforcer:
        """An enforcer over only the rows that can apply to this subject and chunk action.

        It decides exactly as the full one: a row whose subject the asker neither is nor
        inherits, or whose action differs, never matches. Casbin evaluates its matcher
        row by row, so fewer rows make each check several times faster."""
        principals = self.inherited_principals(subject)
        key = (principals, action)
        narrowed = self._narrowed.get(key)
        if narrowed is None:
            rows = tuple(
                r for r in self.chunk_rules if r.fields[0] in principals and r.fields[3] == action
            )
            narrowed = _enforcer(self.model_path, rows + self.inheritance)
            self._narrowed[key] = narrowed
        return narrowed


class PolicyStore:
    def __init__(
        self, model_path: Path, policy_path: Path, shipped_policy: Path, events: EventSink
    ) -> None:
        self._model_path = model_path
        self._policy_path = policy_path
        self._events = events
        self._lock = threading.Lock()
        self._signature: tuple[int, int, int] | None = None
        self._snapshot: PolicySnapshot | None = None
        if not policy_path.exists():
            policy_path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(policy_path, shipped_policy.read_text(encoding="utf-8"))

    @property
    def path(self) -> Path:
        return self._policy_path

    def current(self) -> PolicySnapshot:
        """The policy as the file says now: reloaded when the file changed since last read,
        so a change made by another process applies to the next decision."""
        stat = self._policy_path.stat()
        signature = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        with self._lock:
            if self._snapshot is None or signature != self._signature:
                self._snapshot = self._load(self._policy_path.read_text(encoding="utf-8"))
                self._signature = signature
            return self._snapshot

    def add(self, rule: Rule, actor: str) -> None:
        with self._lock:
            text = self._policy_path.read_text(encoding="utf-8")
            if rule in _rules_of(text):
                raise PolicyError(f"the policy already has: {rule.line()}")
            updated = text if text.endswith("\n") or not text else text + "\n"
            self._replace(text, updated + rule.line() + "\n", actor, added=rule)

    def remove(self, rule: Rule, actor: str) -> None:
        with self._lock:
            text = self._policy_path.read_text(encoding="utf-8")
            kept = [line for line in text.splitlines() if _rule_of_line(line) != rule]
            if len(kept) == len(text.splitlines()):
                raise PolicyError(f"the policy has no rule: {rule.line()}")
            self._replace(text, "\n".join(kept) + "\n", actor, removed=rule)

    def _replace(
        self,
        before: str,
        after: str,
        actor: str,
        added: Rule | None = None,
        removed: Rule | None = None,
    ) -> None:
        # Loading first proves the new text is a policy before it replaces the old.
        self._load(after)
        write_atomically(self._policy_path, after)
        self._snapshot = None
        self._events.emit(
            AccessEvent.now(
                "policy_change",
                actor,
                {
                    "added": [added.line()] if added else [],
                    "removed": [removed.line()] if removed else [],
                    "version_before": _version(before),
                    "version_after": _version(after),
                },
            )
        )

    def _load(self, text: str) -> PolicySnapshot:
        rules = _rules_of(text)
        return PolicySnapshot(
            model_path=self._model_path,
            version=_version(text),
            chunk_rules=tuple(r for r in rules if r.ptype == "p"),
            system_rules=tuple(r for r in rules if r.ptype == "p2"),
            inheritance=tuple(r for r in rules if r.ptype == "g"),
        )


def _enforcer(model_path: Path, rules: tuple[Rule, ...]) -> casbin.Enforcer:
    """A Casbin enforcer over the model and these rows, with the model's functions."""
    enforcer = casbin.Enforcer(str(model_path))
    for ptype in ("p", "p2"):
        rows = [list(r.fields) for r in rules if r.ptype == ptype]
        if rows:
            enforcer.add_named_policies(ptype, rows)
    links = [list(r.fields) for r in rules if r.ptype == "g"]
    if links:
        enforcer.add_named_grouping_policies("g", links)
    manager = enforcer.get_role_manager()

    def holds(subject: Subject, principal: str) -> bool:
        return any(p == principal or manager.has_link(p, principal) for p in subject.principals)

    enforcer.add_function("holds", holds)
    enforcer.add_function("covers_sensitivity", covers_sensitivity)
    enforcer.add_function("covers_department", covers_department)
    enforcer.add_function("care_team_admits", care_team_admits)
    return enforcer


def _rules_of(text: str) -> list[Rule]:
    rules = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            rule = _rule_of_line(line)
        except ValueError as error:
            raise PolicyError(f"policy line {number}: {error}") from None
        if rule is not None:
            rules.append(rule)
    return rules


def _rule_of_line(line: str) -> Rule | None:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    ptype, *fields = [part.strip() for part in stripped.split(",")]
    return Rule.parse(ptype, fields)


def _version(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
