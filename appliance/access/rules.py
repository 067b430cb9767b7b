"""What the policy's words mean: the predicates Casbin's matcher calls, and the
vocabulary a policy row may use.

The query-time filter compiler (``filter_compiler.py``) turns the same meanings into
engine filters; the two are kept equal by tests, and a disagreement at query time is
logged as a bug and the chunk dropped (``guard.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from appliance.records import SENSITIVITIES, Chunk, DocumentMetadata

CHUNK_ACTIONS = ("read", "cite")
SYSTEM_ACTIONS = ("ingest", "administer", "review-audit", "request-break-glass")
EFFECTS = ("allow", "deny")
ANY = "*"
"""In a row's department column: every department. In its sensitivity column: every level
except ``restricted``, which only a row naming it grants."""
OWN_DEPARTMENTS = "own"
"""The chunk is labelled with one of the subject's departments (or hospital-wide)."""
OWNED = "owner"
"""The chunk's owner is the subject or one of the subject's departments."""
HOSPITAL_WIDE = "all"
"""A chunk labelled with department ``all`` belongs to every department."""
BREAK_GLASS_ROLE = "break-glass"
"""The role a subject holds while an emergency access grant is active."""

IDENTIFIER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$")
"""User ids, role names, department names and patient ids."""


@dataclass(frozen=True, slots=True)
class Subject:
    """Who is asking: identity and the attributes the policy decides on.

    ``break_glass`` is never taken from the caller: the guard sets it from the ledger
    of active emergency access grants.
    """

    user_id: str
    roles: tuple[str, ...]
    departments: tuple[str, ...] = ()
    care_team: tuple[str, ...] = ()
    break_glass: bool = False

    def __post_init__(self) -> None:
        for kind, values in (
            ("user id", (self.user_id,)),
            ("role", self.roles),
            ("department", self.departments),
            ("patient id", self.care_team),
        ):
            for value in values:
                if not IDENTIFIER.match(value):
                    raise ValueError(
                        f"{value!r} is not a valid {kind}: letters, digits, '.', '_', '@' "
                        "or '-', starting with a letter or digit"
                    )
        if BREAK_GLASS_ROLE in self.roles:
            raise ValueError(f"the {BREAK_GLASS_ROLE!r} role is granted only by the ledger")

    @property
    def principals(self) -> tuple[str, ...]:
        """The policy subjects this subject is directly: ``user:ID`` and ``role:NAME``."""
        roles = (*self.roles, BREAK_GLASS_ROLE) if self.break_glass else self.roles
        return (f"user:{self.user_id}", *(f"role:{r}" for r in roles))

    @property
    def home_departments(self) -> tuple[str, ...]:
        """The department labels that count as the subject's own."""
        return (*self.departments, HOSPITAL_WIDE)


@dataclass(frozen=True, slots=True)
class Resource:
    """What the policy sees of a chunk: its ACL labels, nothing of its text."""

    doc_id: str
    departments: tuple[str, ...]
    sensitivity: str
    owner: str
    patient_id: str = ""

    @classmethod
    def of(cls, chunk: Chunk) -> Resource:
        return cls.of_document(chunk.doc_id, chunk.metadata)

    @classmethod
    def of_document(cls, doc_id: str, meta: DocumentMetadata) -> Resource:
        """A document's labels: every chunk of it carries the same."""
        return cls(
            doc_id=doc_id,
            departments=meta.departments,
            sensitivity=meta.sensitivity,
            owner=meta.owner,
            patient_id=meta.patient_id or "",
        )


def covers_sensitivity(granted: str, sensitivity: str) -> bool:
    return granted == sensitivity or (granted == ANY and sensitivity != "restricted")


def covers_department(scope: str, subject: Subject, resource: Resource) -> bool:
    if scope == ANY:
        return True
    if scope == OWN_DEPARTMENTS:
        return not set(subject.home_departments).isdisjoint(resource.departments)
    if scope == OWNED:
        return resource.owner in (subject.user_id, *subject.departments)
    return scope in resource.departments


def care_team_admits(subject: Subject, resource: Resource) -> bool:
    """A patient-specific chunk needs the patient in the subject's care team (an active
    break-the-glass grant adds the one patient it names)."""
    return not resource.patient_id or resource.patient_id in subject.care_team


def validate_row(ptype: str, fields: list[str]) -> None:
    """Refuse a policy row the model would misread, with the reason and the expected shape."""
    shapes = {
        "p": "p, SUBJECT, DEPARTMENT, SENSITIVITY, ACTION, EFFECT",
        "p2": "p2, SUBJECT, ACTION, EFFECT",
        "g": "g, role:CHILD, role:PARENT",
    }
    if ptype not in shapes:
        raise ValueError(f"unknown rule type {ptype!r}; use p, p2 or g")
    expected = len(shapes[ptype].split(",")) - 1
    if len(fields) != expected:
        raise ValueError(f"a {ptype} rule has {expected} fields: {shapes[ptype]}")
    if ptype == "g":
        for field in fields:
            _check_principal(field, roles_only=True)
        if fields[0] == fields[1]:
            raise ValueError("a role cannot inherit itself")
        return
    _check_principal(fields[0], roles_only=False)
    if fields[-1] not in EFFECTS:
        raise ValueError(f"effect {fields[-1]!r}: use allow or deny")
    action = fields[-2]
    if ptype == "p2":
        if action not in SYSTEM_ACTIONS:
            raise ValueError(f"system action {action!r}: use one of {', '.join(SYSTEM_ACTIONS)}")
        return
    department, sensitivity = fields[1], fields[2]
    if action not in CHUNK_ACTIONS:
        raise ValueError(f"chunk action {action!r}: use one of {', '.join(CHUNK_ACTIONS)}")
    if sensitivity != ANY and sensitivity not in SENSITIVITIES:
        raise ValueError(f"sensitivity {sensitivity!r}: use {', '.join(SENSITIVITIES)} or *")
    if department not in (ANY, OWN_DEPARTMENTS, OWNED) and not IDENTIFIER.match(department):
        raise ValueError(f"department {department!r}: use a department name, own, owner or *")


def _check_principal(value: str, *, roles_only: bool) -> None:
    kind, _, name = value.partition(":")
    allowed = ("role",) if roles_only else ("role", "user")
    if kind not in allowed or not IDENTIFIER.match(name):
        expected = "role:NAME" if roles_only else "role:NAME or user:ID"
        raise ValueError(f"subject {value!r}: use {expected}")
