"""The one place that decides who may read, cite and do what. Everything else asks it.

Three checks on the path of a question:

1. ``scope``: the subject's permissions compiled into a filter that every engine applies
   inside its search;
2. ``screen``: every fused candidate checked with the Casbin enforcer before reranking;
   a candidate the filter let through but the enforcer denies is a bug, logged loudly
   and dropped;
3. ``recheck_answer``: just before an answer is returned, every cited chunk is checked
   again against the policy and the catalog as they are now.

Denied and missing look the same from outside: ``readable_chunk`` raises the same
``NotFound`` for a chunk that does not exist and for one the subject may not read.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from appliance.access.break_glass import BreakGlassGrant, BreakGlassLedger
from appliance.access.events import AccessEvent, EventSink
from appliance.access.filter_compiler import compile_access_filter
from appliance.access.policy import PolicySnapshot, PolicyStore
from appliance.access.rules import (
    CHUNK_ACTIONS,
    OWN_DEPARTMENTS,
    OWNED,
    SYSTEM_ACTIONS,
    Resource,
    Subject,
    care_team_admits,
    covers_department,
    covers_sensitivity,
)
from appliance.index.catalog import Catalog, DocumentRecord
from appliance.index.filters import SearchFilter
from appliance.records import AnswerSentence, Candidate, Chunk, Citation

log = logging.getLogger(__name__)


class NotFound(LookupError):
    """No such chunk or document for this subject: it does not exist, or they may not see it."""


class AccessDenied(PermissionError):
    """A system action (ingest, administer, review-audit, ...) the subject may not take."""


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    rule: tuple[str, ...]
    """The policy row that decided (the allow row, or the deny row); empty when none did."""
    reasons: tuple[str, ...] = ()
    """Why, in words: for ``appliance policy test`` and the audit trail, never for the asker."""


@dataclass(slots=True)
class AccessScope:
    """One subject's permissions for one request, on one version of the policy."""

    subject: Subject
    action: str
    search_filter: SearchFilter
    policy: PolicySnapshot
    grant: BreakGlassGrant | None
    own_care_team: tuple[str, ...] = ()
    """The care team without the patient an emergency grant added."""
    _decisions: dict[Resource, bool] = field(default_factory=dict, repr=False)

    @property
    def policy_version(self) -> str:
        return self.policy.version

    def allows(self, resource: Resource) -> bool:
        """The enforcer's decision; candidates whose labels decide alike share one call."""
        key = self.policy.decision_key(self.subject, resource)
        known = self._decisions.get(key)
        if known is None:
            enforcer = self.policy.enforcer_for(self.subject, self.action)
            known = bool(enforcer.enforce(self.subject, resource, self.action))
            self._decisions[key] = known
        return known


@dataclass(frozen=True, slots=True)
class DroppedCitation:
    citation: Citation
    reason: str
    """``removed``, ``superseded`` or ``not permitted``: for the audit trail only."""


@dataclass(frozen=True, slots=True)
class AnswerRecheck:
    sentences: tuple[AnswerSentence, ...]
    dropped_sentences: tuple[AnswerSentence, ...]
    dropped_citations: tuple[DroppedCitation, ...]


class AccessGuard:
    def __init__(
        self,
        policy: PolicyStore,
        ledger: BreakGlassLedger,
        catalog: Catalog,
        events: EventSink,
    ) -> None:
        self._policy = policy
        self._ledger = ledger
        self._catalog = catalog
        self._events = events

    # -- query time --------------------------------------------------------------------

    def scope(self, subject: Subject, action: str = "read") -> AccessScope:
        """Resolve break-the-glass and compile the subject's filter for one request."""
        if action not in CHUNK_ACTIONS:
            raise ValueError(f"{action!r} is not a chunk action; use one of {CHUNK_ACTIONS}")
        grant = self._ledger.active(subject.user_id)
        own_care_team = subject.care_team
        if grant is not None:  # the patient named in the grant joins the care team
            care_team = tuple(dict.fromkeys((*subject.care_team, grant.patient_id)))
            subject = replace(subject, break_glass=True, care_team=care_team)
        else:
            subject = replace(subject, break_glass=False)
        policy = self._policy.current()
        return AccessScope(
            subject, action, compile_access_filter(policy, subject, action), policy, grant,
            own_care_team,
        )  # fmt: skip

    def screen(self, scope: AccessScope, candidates: Sequence[Candidate]) -> list[Candidate]:
        """Every candidate checked again with the enforcer; break-the-glass uses flagged."""
        allowed: list[Candidate] = []
        for candidate in candidates:
            resource = Resource.of(candidate.chunk)
            if not scope.allows(resource):
                log.error(
                    "ACCESS FILTER MISMATCH: the engines returned chunk %s to %s but the "
                    "policy denies it; dropped. The filter compiler disagrees with the policy.",
                    candidate.chunk.chunk_id,
                    scope.subject.user_id,
                )
                self._events.emit(
                    AccessEvent.now(
                        "access_mismatch",
                        scope.subject.user_id,
                        {"chunk_id": candidate.chunk.chunk_id, "policy": scope.policy_version},
                    )
                )
                continue
            if scope.grant is not None:
                candidate.break_glass = not self._allowed_without_grant(scope, resource)
            allowed.append(candidate)
        return allowed

    def report_break_glass_use(
        self, scope: AccessScope, shown: Sequence[Candidate], request_id: str | None = None
    ) -> None:
        """Announce the chunks an emergency grant opened that were actually shown."""
        used = [c.chunk.chunk_id for c in shown if c.break_glass]
        if scope.grant is not None and used:
            self._events.emit(
                AccessEvent.now(
                    "break_glass_use",
                    scope.subject.user_id,
                    {"grant_id": scope.grant.grant_id, "chunk_ids": used},
                    tuple(scope.subject.roles),
                    request_id,
                )
            )

    def _allowed_without_grant(self, scope: AccessScope, resource: Resource) -> bool:
        plain = replace(scope.subject, break_glass=False, care_team=scope.own_care_team)
        enforcer = scope.policy.enforcer_for(plain, scope.action)
        return bool(enforcer.enforce(plain, resource, scope.action))

    # -- answer time -------------------------------------------------------------------

    def recheck_answer(
        self,
        subject: Subject,
        sentences: Sequence[AnswerSentence],
        in_force_on: dt.date | None,
    ) -> AnswerRecheck:
        """Keep only citations the subject may read and cite now, of chunks that still
        exist (and, for a question about ``in_force_on``, are still in force and not
        superseded); a claim left without citations goes, and framing goes with the last claim."""
        read, cite = self.scope(subject, "read"), self.scope(subject, "cite")
        cited_ids = sorted({c.chunk_id for s in sentences for c in s.citations})
        chunks = self._catalog.chunks(cited_ids)
        verdicts = {
            chunk_id: self._citation_verdict(chunks.get(chunk_id), read, cite, in_force_on)
            for chunk_id in cited_ids
        }
        kept: list[AnswerSentence] = []
        dropped: list[AnswerSentence] = []
        dropped_citations: list[DroppedCitation] = []
        for sentence in sentences:
            citations = []
            for citation in sentence.citations:
                verdict = verdicts[citation.chunk_id]
                if verdict is None:
                    citations.append(citation)
                else:
                    dropped_citations.append(DroppedCitation(citation, verdict))
            if sentence.kind == "claim" and not citations:
                dropped.append(sentence)
            else:
                kept.append(replace(sentence, citations=tuple(citations)))
        if not any(s.kind == "claim" for s in kept):
            dropped.extend(kept)
            kept = []
        return AnswerRecheck(tuple(kept), tuple(dropped), tuple(dropped_citations))

    def _citation_verdict(
        self,
        chunk: Chunk | None,
        read: AccessScope,
        cite: AccessScope,
        in_force_on: dt.date | None,
    ) -> str | None:
        """None when the citation stands; otherwise why it goes."""
        if chunk is None:
            return "removed"
        resource = Resource.of(chunk)
        if not (read.allows(resource) and cite.allows(resource)):
            return "not permitted"
        if in_force_on is not None and self._superseded(chunk, in_force_on):
            return "superseded"
        return None

    def _superseded(self, chunk: Chunk, day: dt.date) -> bool:
        meta = chunk.metadata
        if meta.effective_from > day or (
            meta.effective_to is not None and meta.effective_to <= day
        ):
            return True
        if meta.superseded_by is None:
            return False
        successor = self._catalog.document(meta.superseded_by)
        return successor is not None and successor.metadata.effective_from <= day

    # -- lookups and explanations ------------------------------------------------------

    def readable_chunk(self, subject: Subject, chunk_id: str) -> Chunk:
        """The chunk, if it exists and the subject may read it; the same NotFound otherwise."""
        chunk = self._catalog.chunks([chunk_id]).get(chunk_id)
        if chunk is None or not self.scope(subject).allows(Resource.of(chunk)):
            raise NotFound(f"no chunk {chunk_id!r}")
        return chunk

    def readable_document(self, subject: Subject, doc_id: str) -> DocumentRecord:
        """The document, if it exists and the subject may read it (its chunks share its
        labels); the same NotFound otherwise."""
        return self.document_view(subject, doc_id)[0]

    def document_view(
        self, subject: Subject, doc_id: str
    ) -> tuple[DocumentRecord, BreakGlassGrant | None]:
        """The document and, when only an emergency grant lets the subject read it, that
        grant (the view must then be reported as a use). A missing and a forbidden
        document take the same steps and raise the same NotFound: ids carry patient
        numbers, and neither the answer nor its timing may tell which documents exist."""
        record = self._catalog.document(doc_id)
        present = record is not None and record.state == "indexed"
        scope = self.scope(subject)
        resource = (
            Resource.of_document(doc_id, record.metadata)
            if present and record is not None
            else Resource(doc_id=doc_id, departments=(), sensitivity="restricted",
                          owner="", patient_id="-missing-")
        )  # fmt: skip
        allowed = scope.allows(resource)
        by_grant = scope.grant is not None and not self._allowed_without_grant(scope, resource)
        if not (present and allowed) or record is None:
            raise NotFound(f"no document {doc_id!r}")
        return record, scope.grant if by_grant else None

    def decide(self, subject: Subject, resource: Resource, action: str) -> Decision:
        """The decision on a chunk, with the deciding rule and the reasons, for people to read."""
        policy = self._policy.current()
        allowed, rule = policy.enforcer.enforce_ex(subject, resource, action)
        return Decision(bool(allowed), tuple(rule), _reasons(policy, subject, resource, action))

    def decide_system(self, subject: Subject, action: str) -> Decision:
        """The decision on an action on the system itself (ingest, review-audit, ...)."""
        if action not in SYSTEM_ACTIONS:
            raise ValueError(f"{action!r} is not a system action; use one of {SYSTEM_ACTIONS}")
        enforcer = self._policy.current().enforcer
        allowed, rule = enforcer.enforce_ex(enforcer.new_enforce_context("2"), subject, action)
        return Decision(bool(allowed), tuple(rule))

    def require(self, subject: Subject, action: str) -> None:
        """Raise AccessDenied unless the subject may take this system action."""
        if not self.decide_system(subject, action).allowed:
            raise AccessDenied(f"{subject.user_id} may not {action}")

    def request_break_glass(
        self,
        subject: Subject,
        reason: str,
        duration: dt.timedelta,
        patient_id: str,
        request_id: str | None = None,
    ) -> BreakGlassGrant:
        self.require(subject, "request-break-glass")
        return self._ledger.grant(
            subject.user_id, reason, duration, patient_id,
            roles=tuple(subject.roles), request_id=request_id,
        )  # fmt: skip

    def end_break_glass(self, subject: Subject, request_id: str | None = None) -> bool:
        return self._ledger.end(
            subject.user_id, subject.user_id, roles=tuple(subject.roles), request_id=request_id
        )


def _reasons(
    policy: PolicySnapshot, subject: Subject, resource: Resource, action: str
) -> tuple[str, ...]:
    principals = policy.inherited_principals(subject)
    reasons = [f"{subject.user_id} acts as {', '.join(sorted(principals))}"]
    if not care_team_admits(subject, resource):
        reasons.append(
            f"the chunk is about patient {resource.patient_id}, who is not in the care team"
        )
    for rule in policy.chunk_rules:
        principal, scope, sensitivity, rule_action, effect = rule.fields
        if rule_action != action or principal not in principals:
            continue
        sensitivity_ok = covers_sensitivity(sensitivity, resource.sensitivity)
        department_ok = covers_department(scope, subject, resource)
        verdict = "matches" if sensitivity_ok and department_ok else "does not match"
        why = []
        if not sensitivity_ok:
            why.append(f"sensitivity {resource.sensitivity} not covered by {sensitivity}")
        if not department_ok:
            why.append(f"departments {list(resource.departments)} not covered by {scope}")
            if scope == OWN_DEPARTMENTS:
                why[-1] += f" (the asker's: {', '.join(subject.home_departments)})"
            elif scope == OWNED:
                why[-1] = f"owner {resource.owner} is neither the asker nor their department"
        reasons.append(
            f"{effect} rule [{rule.line()}] {verdict}" + (f" ({'; '.join(why)})" if why else "")
        )
    if len(reasons) == 1:
        reasons.append(f"no rule grants {action} to these roles: denied by default")
    return tuple(reasons)
